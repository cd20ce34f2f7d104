"""Crash safety: a process killed (SIGKILL) while it saves, or while a question waits.

A writer saving a large conversation over and over is killed many times, at
random moments and at each step of the atomic replace (half the temp file
written; written but not synced; synced but not renamed; renamed but the
directory not synced). After every kill ``events.json`` is exactly the old or
the new version, byte for byte, and loads; the next successful save (even one
with nothing to write) leaves no temp file behind.

A writer that keeps its conversation and appends to it is killed likewise, at
random moments and at each step of an append (undo record written, synced;
half the bytes written; all written, synced). After every kill the next load
reads the old or the new version, and the next save puts it on disk byte for
byte and clears the undo record.

A writer creating a conversation is killed before each of its calls that
changes the disk: the directory is then as it was (absent, or the empty
directory it was created in) or whole; never stuck, never without its
title, never in the legacy layout. A process killed while a question waits
for its answer leaves the request on disk, so the turn is seen as blocked on
it.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from crash_programs import (
    APPEND_PAUSES,
    PAUSES,
    created_entries,
    save_next,
    version_bytes,
    version_entries,
)
from process_helpers import PATIENCE

from coordinator import (
    Conversation,
    load_conversation,
    pair_events,
    sanitize,
    save_conversation,
)
from coordinator.store import Layout
from coordinator.store._lock import LOCK_FILE
from coordinator.wire import encode_stream
from machines import Answered, ChatResponse, InquiryRequest

if TYPE_CHECKING:
    from collections.abc import Iterator

PROGRAMS = Path(__file__).with_name("crash_programs.py")


class Lines:
    """Lines a child process prints, read with a time limit (a hung child fails the test)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        """Read ``process``'s stdout."""
        assert process.stdout is not None
        self.process = process
        self.fd = process.stdout.fileno()
        self.buffer = b""
        self.lines: list[str] = []

    def _fill(self) -> None:
        ready, _, _ = select.select([self.fd], [], [], PATIENCE)
        assert ready, "a child process stopped answering"
        chunk = os.read(self.fd, 65536)
        assert chunk, "a child process exited early"
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        self.lines += [line.decode() for line in complete]

    def expect(self, prefix: str) -> str:
        """The first unread line starting with ``prefix`` (its remainder); others stay unread."""
        while True:
            for line in self.lines:
                assert not line.startswith("error"), line
                if line.startswith(f"{prefix} "):
                    self.lines.remove(line)
                    return line.removeprefix(f"{prefix} ")
            self._fill()

    def either(self, *prefixes: str) -> tuple[str, str]:
        """The first unread line starting with one of ``prefixes``: which, and its remainder."""
        while True:
            for line in self.lines:
                assert not line.startswith("error"), line
                for prefix in prefixes:
                    if line.startswith(f"{prefix} "):
                        self.lines.remove(line)
                        return prefix, line.removeprefix(f"{prefix} ")
            self._fill()

    def take(self, prefix: str) -> list[str]:
        """Every unread line starting with ``prefix`` (remainders), now taken."""
        taken = [line for line in self.lines if line.startswith(f"{prefix} ")]
        self.lines = [line for line in self.lines if line not in taken]
        return [line.removeprefix(f"{prefix} ") for line in taken]


@pytest.fixture
def zygote() -> Iterator[tuple[subprocess.Popen[bytes], Lines]]:
    """The forking server of ``crash_programs.py``, stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, str(PROGRAMS), "zygote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    with process:
        try:
            yield process, Lines(process)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=PATIENCE)


def _send(process: subprocess.Popen[bytes], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(f"{line}\n".encode())
    process.stdin.flush()


def _leftovers(directory: Path) -> list[str]:
    """What the directory holds beside events.json and the writer's lock file."""
    return sorted(
        path.name for path in directory.iterdir() if path.name not in ("events.json", LOCK_FILE)
    )


def _kill(
    process: subprocess.Popen[bytes], lines: Lines, pid: int, pause: str, *, wait: float
) -> list[str]:
    """Kill writer ``pid`` at ``pause`` (when random, after ``wait`` seconds); what it saved."""
    if pause == "random":
        time.sleep(wait)
    else:
        lines.expect(f"at {pause}")
    os.kill(pid, signal.SIGKILL)
    _send(process, f"reap {pid}")
    lines.expect("reaped")
    return lines.take("saved")


def _at_version_zero(tmp_path: Path) -> Path:
    """A conversation directory holding version 0 (as JP would have written it)."""
    directory = tmp_path / "conversation"
    directory.mkdir()
    (directory / "events.json").write_bytes(version_bytes(0))
    return directory


def test_a_writer_killed_at_any_moment_leaves_the_old_or_the_new_version(
    tmp_path: Path, zygote: tuple[subprocess.Popen[bytes], Lines]
) -> None:
    """SIGKILL mid-save, many times: events.json is the old or new version; no temp survives."""
    process, lines = zygote
    directory = _at_version_zero(tmp_path)
    rng = random.Random(82)  # noqa: S311 - a reproducible schedule, not a secret
    schedule = [*PAUSES, *PAUSES, *["random"] * 50]
    rng.shuffle(schedule)
    on_disk = 0
    for number, pause in enumerate(schedule):
        _send(
            process, f"go {directory} {'none' if pause == 'random' else pause} {rng.randint(0, 2)}"
        )
        pid = int(lines.expect("pid"))
        assert int(lines.expect("ready")) == on_disk
        saved = [
            int(version)
            for version in _kill(process, lines, pid, pause, wait=rng.uniform(0, 0.15))
        ]
        old = max(saved, default=on_disk)
        candidates = {"random": (old, old + 1), "dirsync": (old + 1,)}.get(pause, (old,))
        data = (directory / "events.json").read_bytes()
        matches = [version for version in candidates if data == version_bytes(version)]
        assert matches, f"kill {number} ({pause}) left neither version {candidates} on disk"
        on_disk = matches[0]
        assert len(load_conversation(directory).stream) == len(orjson_entries(data))
        if pause in ("write", "fsync", "replace"):
            # Killed with its temp file written: the case the next save must clean up.
            assert _leftovers(directory), "the kill came before the temp file existed"
        if number % 2:
            # A save with nothing to write still clears what a dead writer left.
            result = save_conversation(load_conversation(directory))
            assert result.written == ()
        else:
            on_disk = save_next(directory)
            assert (directory / "events.json").read_bytes() == version_bytes(on_disk)
        assert _leftovers(directory) == []


def _record(directory: Path) -> bytes:
    """The lock file's undo record (its lines after the pid), or nothing."""
    return (directory / LOCK_FILE).read_bytes().partition(b"\n")[2]


def test_an_appender_killed_at_any_moment_leaves_the_old_or_the_new_version(
    tmp_path: Path, zygote: tuple[subprocess.Popen[bytes], Lines]
) -> None:
    """SIGKILL mid-append, many times: loads give the old or new version; a save restores it."""
    process, lines = zygote
    directory = _at_version_zero(tmp_path)
    rng = random.Random(25)  # noqa: S311 - a reproducible schedule, not a secret
    schedule = [*APPEND_PAUSES, *APPEND_PAUSES, *["random"] * 40]
    rng.shuffle(schedule)
    on_disk = 0
    appended = 0
    for number, pause in enumerate(schedule):
        command = "none" if pause == "random" else pause
        _send(process, f"append {directory} {command} {rng.randint(1, 3)}")
        pid = int(lines.expect("pid"))
        assert int(lines.expect("ready")) == on_disk
        saved = [
            line.split() for line in _kill(process, lines, pid, pause, wait=rng.uniform(0, 0.25))
        ]
        appended += sum(how == "appended" for _, how in saved)
        old = max((int(version) for version, _ in saved), default=on_disk)
        # Written whole (synced or not), an append is the new version: its bytes are there.
        candidates = {"random": (old, old + 1), "written": (old + 1,), "synced": (old + 1,)}
        expected = candidates.get(pause, (old,))
        loaded = encode_stream(load_conversation(directory).stream)
        matches = [version for version in expected if loaded == version_entries(version)]
        assert matches, f"kill {number} ({pause}) loads as neither version {expected}"
        on_disk = matches[0]
        if number % 3 == 0:
            # A save with nothing to write takes the lock, and so undoes a torn append.
            assert save_conversation(load_conversation(directory)).written == ()
            assert (directory / "events.json").read_bytes() == version_bytes(on_disk)
            assert _record(directory) == b""
            assert _leftovers(directory) == []
    assert appended > len(schedule), "the writers hardly appended: the test tests little"
    save_conversation(load_conversation(directory))
    assert (directory / "events.json").read_bytes() == version_bytes(on_disk)
    assert _record(directory) == b""


def _reopen(directory: Path) -> Conversation:
    """What `inquiry run` does with its --conversation: a new one if absent or empty, else load."""
    if not directory.exists() or not any(directory.iterdir()):
        conversation = Conversation.new(metadata={"title": "again"}, base_config={})
        save_conversation(conversation, directory)
        return conversation
    return load_conversation(directory)


@pytest.mark.parametrize("where", ["new", "empty"])
def test_a_first_save_killed_at_each_step_is_never_stuck_nor_legacy(
    tmp_path: Path, zygote: tuple[subprocess.Popen[bytes], Lines], where: str
) -> None:
    """Killed at each step of a creation: the directory is as it was, or whole; never untitled.

    ``new``: the directory did not exist; ``empty``: it existed, empty. Either
    way the conversation appears whole or not at all, so the next run starts
    it afresh (its own title) or goes on with it (the title it was made with).
    """
    process, lines = zygote
    whole = False
    step = 0
    while not whole:
        step += 1
        directory = tmp_path / f"step{step}" / "conversation"
        directory.parent.mkdir()
        if where == "empty":
            directory.mkdir()
        _send(process, f"create {directory} {step}")
        pid = int(lines.expect("pid"))
        stopped, _ = lines.either("at", "done")
        whole = stopped == "done"
        os.kill(pid, signal.SIGKILL)
        _send(process, f"reap {pid}")
        lines.expect("reaped")
        # Nothing at the target until the whole directory is renamed into place:
        # no directory, or the empty one that was there, or the whole conversation.
        fresh = not directory.exists() or not any(directory.iterdir())
        if fresh:
            assert directory.is_dir() == (where == "empty"), f"killed at step {step}"
        else:
            created = load_conversation(directory)
            assert encode_stream(created.stream) == created_entries(), (
                f"killed at step {step}: a partial directory is in place"
            )
            assert created.metadata == {"title": "created"}, f"killed at step {step}"
        conversation = _reopen(directory)
        assert conversation.layout is Layout.CURRENT, f"killed at step {step}: legacy layout"
        entries = encode_stream(conversation.stream)
        assert entries == ([] if fresh else created_entries()), f"killed at step {step}"
        title = (conversation.metadata or {}).get("title")
        assert title == ("again" if fresh else "created"), f"killed at step {step}"
        conversation.stream.append(ChatResponse.message("the next run"))
        save_conversation(conversation)
        again = load_conversation(directory)
        assert again.layout is Layout.CURRENT
        assert (again.metadata or {}).get("title") == title
        assert encode_stream(again.stream)[:-1] == entries
        assert "base_config.json" in _leftovers(directory)
        assert set(_leftovers(directory)) <= {"base_config.json", "metadata.json"}
        assert sorted(path.name for path in directory.parent.iterdir()) == ["conversation"]
    assert step > 5  # every step of a real creation was tried


def orjson_entries(data: bytes) -> list[object]:
    """The entries of an events.json (a parse that is not the loader's own)."""
    import orjson  # noqa: PLC0415 - kept beside its only use

    entries = orjson.loads(data)
    assert isinstance(entries, list)
    return entries


@pytest.mark.parametrize("who", ["prompter", "backend"])
def test_a_process_killed_while_a_question_waits_leaves_the_request_on_disk(
    tmp_path: Path, who: str
) -> None:
    """Killed while a question waits: its request is on disk and the turn is blocked on it."""
    with subprocess.Popen(
        [sys.executable, str(PROGRAMS), "blocked", str(tmp_path), who], stdout=subprocess.PIPE
    ) as process:
        try:
            waiting = Lines(process).expect("waiting")
        finally:
            process.kill()
    conversation = load_conversation(tmp_path)
    pairing = pair_events(conversation.stream)
    (pending,) = pairing.inquiries.pending
    assert pending.id == waiting
    assert isinstance(pending.entry.payload, InquiryRequest)
    (call,) = pairing.tool_calls.pending
    assert call.id == "call_1"
    if who == "prompter":
        # The first question was answered and saved; the secret one is what it waits for.
        assert [type(p.response.entry.payload) for p in pairing.inquiries.pairs] == [Answered]
        assert pending.entry.payload.question.answer_type.is_secret
    assert not pairing.complete
    # Before the next provider request, sanitize closes what the crash left open.
    sanitize(conversation.stream)
    assert pair_events(conversation.stream).complete
