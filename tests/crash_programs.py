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
- ``append <directory> <pause> <saves>``: as ``go``, but the writer loads
  once and keeps its conversation, so that every save after its first
  appends (``saved <version> appended``); ``<pause>`` is one of
  ``APPEND_PAUSES``, in the append after ``<saves>`` saves.
- ``create <directory> <step>``: fork a writer that saves a new conversation
  into ``<directory>``, stopping before its ``<step>``-th call that changes
  the disk (``at <step>``), or ``done``.
- ``reap <pid>``: wait for that writer to be gone; answers ``reaped <pid>``.

Forking from a process that has already imported everything makes a kill
cost milliseconds instead of an interpreter start. Every version is a pure
function of its number (:func:`version_entries`), so the test knows exactly
what each must look like.

``python crash_programs.py blocked <directory> <prompter|backend>`` runs a
coordinator whose question never gets an answer, printing ``waiting <id>``
once it waits.

``python crash_programs.py hold <directory>`` saves the conversation there
and keeps it (its writer lock held), printing ``holding <pid>``, until it is
killed; ``python crash_programs.py save <directory>`` tries one save,
printing ``saved`` or ``refused <error>``.
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
from coordinator.store._lock import LOCK_FILE
from coordinator.store._store import dump_json
from machines import (
    ChatRequest,
    ChatResponse,
    JsonValue,
    Question,
    ShowPermissionPrompt,
    ShowQuestion,
    TurnStart,
)

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
    """The events of version ``version``: the base plus one message per version.

    Each message answers the base's request (``r0``): a save links it (RFD 098).
    """
    added = [
        {
            "event_id": f"v{number:05d}",
            "request_id": "r0",
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


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")  # noqa: PTH115 - an fd, not a path


def _fsync(fd: int) -> None:
    # The writer's lock file is synced too (when it is taken): not the step paused at.
    if not _fd_path(fd).endswith(LOCK_FILE):
        is_directory = os.path.isdir(f"/proc/self/fd/{fd}")  # noqa: PTH112 - an fd, not a path
        if not is_directory:
            _stop("fsync")
        elif _PAUSE.get("replaced"):
            _stop("dirsync")
    _REAL_FSYNC(fd)


def _replace(source: Any, target: Any) -> None:
    _stop("replace")
    _REAL_REPLACE(source, target)
    _PAUSE["replaced"] = True


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


# ------------------------------------------------------------------ appends

#: Where an append is stopped: the undo record written, not synced; synced, no
#: byte of the file written; half the bytes written; all written, not synced;
#: synced, the record not yet cleared.
APPEND_PAUSES = ("record", "recorded", "half", "written", "synced")
_REAL_PWRITE, _REAL_FTRUNCATE = os.pwrite, os.ftruncate


def _append_fsync(fd: int) -> None:
    path = _fd_path(fd)
    if path.endswith(LOCK_FILE):
        _stop("record")
    elif path.endswith("events.json"):
        _stop("written")
    _REAL_FSYNC(fd)


def _append_pwrite(fd: int, data: Any, offset: int) -> int:
    if _fd_path(fd).endswith("events.json"):
        _stop("recorded")
        if _PAUSE["point"] == "half":
            _REAL_PWRITE(fd, bytes(data[: len(data) // 2]), offset)
            _stop("half")
    return _REAL_PWRITE(fd, data, offset)


def _append_ftruncate(fd: int, length: int) -> None:
    if _fd_path(fd).endswith(LOCK_FILE):
        # The first truncation ends the record's writing; the second clears it.
        _PAUSE["truncations"] = _PAUSE.get("truncations", 0) + 1
        if _PAUSE["truncations"] == 2:
            _stop("synced")
    _REAL_FTRUNCATE(fd, length)


def _appender(directory: Path, pause: str, saves: int) -> None:
    """Load once, then add a version and save, again and again: every save after the first appends.

    With a ``pause`` (one of APPEND_PAUSES), stop there in save number
    ``saves + 1`` (``saves`` is at least 1, so that the save stopped is an append).
    """
    version = 0

    def next_id() -> str:
        return f"v{version:05d}"

    conversation = load_conversation(directory, clock=lambda: MOMENT, new_id=next_id)
    version = len(conversation.stream) - len(base_entries())
    _say(f"ready {version}")
    while True:
        if pause != "none" and saves == 0:
            _PAUSE.update(point=pause, version=version + 1)
            os.fsync, os.pwrite, os.ftruncate = _append_fsync, _append_pwrite, _append_ftruncate  # type: ignore[assignment]
        version += 1
        conversation.stream.append(ChatResponse.message(version_message(version)))
        result = save_conversation(conversation)
        if pause != "none" and saves == 0:
            raise AssertionError("the pause point was never reached")
        saves -= 1
        _say(f"saved {version} {'appended' if result.appended else 'rewritten'}")


# ---------------------------------------------------------------- creation


def created_entries() -> list[dict[str, Any]]:
    """The entries a new conversation is created with."""
    return [
        {"event_id": "n0", "timestamp": STAMP, "type": "turn_start"},
        {"event_id": "n1", "timestamp": STAMP, "type": "chat_request", "content": "new"},
    ]


def _creator(directory: Path, step: int) -> None:
    """Save a new conversation into ``directory``, stopping before the ``step``-th OS call.

    The calls counted are those that change the disk or make it durable:
    ``open`` creating a file, ``mkdir``, ``rename``, ``replace``, ``fsync``.
    Prints ``at <step>`` there, or ``done`` if the save needed fewer.
    """
    from coordinator import Conversation  # noqa: PLC0415 - this program's own

    count = 0

    def counted(real: Any, creates: bool = False) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            if not creates or args[1] & os.O_CREAT:
                count += 1
                if count == step:
                    _say(f"at {step}")
                    time.sleep(60)
                    os._exit(3)
            return real(*args, **kwargs)

        return call

    reals = (os.open, os.mkdir, os.rename, os.replace, os.fsync)
    ids = iter(f"n{number}" for number in range(1_000))
    conversation = Conversation.new(
        metadata={"title": "created"},
        base_config={},
        clock=lambda: MOMENT,
        new_id=lambda: next(ids),
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="new"))
    os.open = counted(reals[0], creates=True)
    os.mkdir, os.rename, os.replace, os.fsync = (counted(real) for real in reals[1:])
    save_conversation(conversation, directory)
    os.open, os.mkdir, os.rename, os.replace, os.fsync = reals
    _say(f"done {step}")


def zygote() -> None:
    """Serve ``go``, ``append``, ``create`` and ``reap`` commands until stdin closes."""
    for line in sys.stdin:
        command, *rest = line.split()
        if command in ("go", "append", "create"):
            pid = os.fork()
            if pid == 0:
                try:
                    if command == "create":
                        _creator(Path(rest[0]), int(rest[1]))
                    else:
                        work = _writer if command == "go" else _appender
                        work(Path(rest[0]), rest[1], int(rest[2]))
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


# ------------------------------------------------------------- two writers


def hold(directory: Path) -> None:
    """Load the conversation, add a message, save (taking its lock), then hold it until killed."""
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("held"))
    save_conversation(conversation)
    _say(f"holding {os.getpid()}")
    time.sleep(PATIENCE)
    os._exit(3)  # never killed: the test has failed already


def save_once(directory: Path) -> None:
    """Load the conversation, add a message and save: ``saved``, or ``refused <error>``."""
    from coordinator.store import ConversationLockedError  # noqa: PLC0415 - this program's own

    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message(f"from {os.getpid()}"))
    try:
        save_conversation(conversation)
    except ConversationLockedError as error:
        _say(f"refused {error}")
    else:
        _say("saved")


#: How long a holding program waits to be killed before giving up.
PATIENCE = 60


if __name__ == "__main__":
    programs = {"hold": hold, "save": save_once}
    if sys.argv[1] == "zygote":
        zygote()
    elif sys.argv[1] in programs:
        programs[sys.argv[1]](Path(sys.argv[2]))
    else:
        blocked(Path(sys.argv[2]), sys.argv[3])
