"""Programs the crash-safety tests run in processes of their own, and then kill.

``python crash_programs.py zygote`` imports the library once, then serves
commands on stdin, one per line, answering on stdout:

- ``go <directory> <pause> <saves>``: fork a writer that loads the conversation
  in ``<directory>`` and saves a new version of it again and again, printing
  ``ready <version>`` and then ``saved <version>`` after each save. With a
  ``<pause>`` other than ``none`` it stops, after ``<saves>`` saves, at that
  point of the next one (``write``: half the temp file written; ``fsync``:
  written, not yet synced; ``replace``: synced, not yet renamed; ``dirsync``:
  renamed, directory not yet synced), printing ``at <pause> <version>``, and
  waits to be killed. Answers ``pid <pid>``.
- ``reap <pid>``: wait for that writer to be gone; answers ``reaped <pid>``.

Forking from a process that has already imported everything makes a kill
cost milliseconds instead of an interpreter start. Every version is a pure
function of its number (:func:`version_entries`), so the test knows exactly
what each must look like.

``python crash_programs.py blocked <directory> <prompter|backend>`` runs a
coordinator whose question never gets an answer, printing ``waiting <id>``
once it waits.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from coordinator import load_conversation, save_conversation
from coordinator.driver._prompting import PermissionAnswer, QuestionAnswer
from coordinator.store._store import dump_json
from machines import ChatResponse, JsonValue, Question, ShowPermissionPrompt, ShowQuestion

if TYPE_CHECKING:
    from coordinator.driver._backend import InquiryTask

STAMP = "2026-11-22 09:30:00.0"
MOMENT = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)
#: The base conversation: large enough that a save takes a while.
BASE_ENTRIES = 300
ENTRY_TEXT = 6_000
PAUSES = ("write", "fsync", "replace", "dirsync")


def base_entries() -> list[dict[str, Any]]:
    """The events of version 0 (about 2.5 MB once base64 and indentation are added)."""
    entries: list[dict[str, Any]] = [
        {"event_id": "t0", "timestamp": STAMP, "type": "turn_start"},
        {"event_id": "r0", "timestamp": STAMP, "type": "chat_request", "content": "go"},
    ]
    for number in range(BASE_ENTRIES):
        text = f"base {number} " + "lorem ipsum " * (ENTRY_TEXT // 12)
        entries.append(
            {
                "event_id": f"b{number}",
                "timestamp": STAMP,
                "type": "chat_response",
                "message": text,
            }
        )
    return entries


def version_message(version: int) -> str:
    """The message version ``version`` adds."""
    return f"version {version} " + "dolor sit amet " * 1000


def version_entries(version: int) -> list[dict[str, Any]]:
    """The events of version ``version``: the base plus one message per version."""
    added = [
        {
            "event_id": f"v{number:05d}",
            "timestamp": STAMP,
            "type": "chat_response",
            "message": version_message(number),
        }
        for number in range(1, version + 1)
    ]
    return base_entries() + added


def version_bytes(version: int) -> bytes:
    """``events.json`` of version ``version``, byte for byte."""
    return dump_json(version_entries(version))


def save_next(directory: Path) -> int:
    """Load the conversation, add the next version's message, save; return the version."""
    version = 0

    def next_id() -> str:
        return f"v{version:05d}"

    conversation = load_conversation(directory, clock=lambda: MOMENT, new_id=next_id)
    version = len(conversation.stream) - len(base_entries()) + 1
    conversation.stream.append(ChatResponse.message(version_message(version)))
    save_conversation(conversation)
    return version


def _say(line: str) -> None:
    os.write(1, f"{line}\n".encode())


_REAL_FSYNC, _REAL_REPLACE, _REAL_FDOPEN = os.fsync, os.replace, os.fdopen
#: Where the writer stops (one of PAUSES, or "none"), and the version it is saving.
_PAUSE: dict[str, Any] = {"point": "none", "version": 0}


def _stop(point: str) -> None:
    """If the writer is to stop at ``point``: announce it, then wait to be killed."""
    if _PAUSE["point"] != point:
        return
    _say(f"at {point} {_PAUSE['version']}")
    time.sleep(60)
    os._exit(3)  # never killed: the test has failed already


def _fsync(fd: int) -> None:
    is_directory = os.path.isdir(f"/proc/self/fd/{fd}")  # noqa: PTH112 - an fd, not a path
    _stop("dirsync" if is_directory else "fsync")
    _REAL_FSYNC(fd)


def _replace(source: Any, target: Any) -> None:
    _stop("replace")
    _REAL_REPLACE(source, target)


class _HalfWriter:
    """A file that writes half of what it is given, then stops the writer."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, data: bytes) -> None:
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        _stop("write")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def _fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
    handle = _REAL_FDOPEN(fd, *args, **kwargs)
    return _HalfWriter(handle) if _PAUSE["point"] == "write" else handle


def _pause_at(point: str, version: int) -> None:
    """Stop at ``point`` of the next save (of ``version``)."""
    _PAUSE.update(point=point, version=version)
    os.fsync, os.replace = _fsync, _replace  # type: ignore[assignment]
    os.fdopen = _fdopen


def _writer(directory: Path, pause: str, saves: int) -> None:
    loaded = load_conversation(directory)
    version = len(loaded.stream) - len(base_entries())
    _say(f"ready {version}")
    while True:
        if pause != "none" and saves == 0:
            _pause_at(pause, version + 1)
            save_next(directory)
            raise AssertionError("the pause point was never reached")
        version = save_next(directory)
        saves -= 1
        _say(f"saved {version}")


def zygote() -> None:
    """Serve ``go`` and ``reap`` commands until stdin closes."""
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "go":
            directory, pause, saves = rest
            pid = os.fork()
            if pid == 0:
                try:
                    _writer(Path(directory), pause, int(saves))
                except BaseException as error:  # noqa: BLE001 - reported, then the child ends
                    _say(f"error {type(error).__name__}: {error}")
                os._exit(1)
            _say(f"pid {pid}")
        elif command == "reap":
            os.waitpid(int(rest[0]), 0)
            _say(f"reaped {rest[0]}")


# ----------------------------------------------------------- a blocked question


class _NeverAnswers:
    """Answers the first question; waits forever on the next (the person walked away)."""

    def __init__(self) -> None:
        self.asked = 0

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        self.asked += 1
        if self.asked == 1:
            return QuestionAnswer(value=True)
        _say(f"waiting {prompt.inquiry_id}")
        await asyncio.Event().wait()
        raise AssertionError

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        del prompt
        raise AssertionError  # unattended: never asked


class _BackendNeverAnswers:
    async def answer(self, task: InquiryTask) -> JsonValue:
        _say(f"waiting {task.inquiry_id}")
        await asyncio.Event().wait()
        raise AssertionError


def blocked(directory: Path, who: str) -> None:
    """Run one tool call whose second question (or first, for the model) is never answered."""
    from coordinator_harness import (  # noqa: PLC0415 - only this program needs them
        UNATTENDED,
        AskingTool,
        assistant_calls,
        conversation_on_disk,
        executor,
    )

    from coordinator import ToolCoordinator  # noqa: PLC0415

    conversation = conversation_on_disk(directory)
    questions = [
        Question.boolean("apply", "Apply the patch?"),
        Question.secret("passphrase", "SSH passphrase?"),
    ]
    tool = executor(AskingTool(questions))
    if who == "prompter":
        coordinator = ToolCoordinator(
            conversation, tools={"fs": tool}, config=UNATTENDED, prompter=_NeverAnswers()
        )
    else:
        coordinator = ToolCoordinator(
            conversation, tools={"fs": tool}, config=UNATTENDED, backend=_BackendNeverAnswers()
        )
    asyncio.run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote()
    else:
        blocked(Path(sys.argv[2]), sys.argv[3])
