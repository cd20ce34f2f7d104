"""Saves that keep entries with one sync: the log in the lock file (``Durability``).

A ``LOGGED`` save of appended entries syncs one line of the lock file's log
and writes the entries into events.json unsynced, so that the file is always
the whole new version as every process sees it; a ``WRITTEN`` save syncs
nothing once the log has its first line. A full save, or letting go of the
lock, syncs events.json once and clears the log. After a crash, readers read
the version the log gives (the file's bytes before its base, then each
line's data), whatever the file's tail holds; the next save puts it on disk.
A line that does not fit (torn, another file's, its data not its digest's)
ends the log; a file shorter than the log's base is refused.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from coordinator_harness import conversation_on_disk

from coordinator import Conversation, StreamFormatError, load_conversation, save_conversation
from coordinator.store import Durability
from coordinator.store._lock import LOCK_FILE
from coordinator.store._store import dump_json
from coordinator.wire import encode_stream
from machines import ChatResponse

if TYPE_CHECKING:
    from pathlib import Path


def _saved(directory: Path) -> Conversation:
    """A conversation saved to ``directory`` by this very object (its file is the store's own)."""
    return conversation_on_disk(directory)


def _bytes(conversation: Conversation) -> bytes:
    """What a full rewrite of the stream writes."""
    return dump_json(encode_stream(conversation.stream))


def _log(directory: Path) -> list[dict[str, Any]]:
    """The log lines of the lock file, decoded."""
    rest = (directory / LOCK_FILE).read_bytes().partition(b"\n")[2]
    return [orjson.loads(line)["logged"] for line in rest.splitlines()]


def _syncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The inode of each file ``os.fsync`` syncs from now on."""
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def _watched(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Conversation, int, int, list[int]]:
    """A saved conversation, the inodes of its lock file and events.json, and each sync after."""
    conversation = _saved(directory)
    lock, events = (directory / LOCK_FILE).stat().st_ino, (directory / "events.json").stat().st_ino
    return conversation, lock, events, _syncs(monkeypatch)


def test_a_logged_save_syncs_the_lock_file_once_and_writes_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sync a save, of the log; events.json is a full rewrite's bytes; a full save syncs it."""
    directory = tmp_path / "conv"
    conversation, lock, events, synced = _watched(directory, monkeypatch)
    for number in range(3):
        conversation.stream.append(ChatResponse.message(f"logged {number}"))
        result = save_conversation(conversation, durability=Durability.LOGGED)
        assert result.appended == (directory / "events.json",)
        assert (directory / "events.json").read_bytes() == _bytes(conversation)
    assert synced == [lock, lock, lock]
    assert [line["size"] < line["new_size"] for line in _log(directory)] == [True] * 3
    assert encode_stream(load_conversation(directory).stream) == encode_stream(conversation.stream)
    conversation.stream.append(ChatResponse.message("in full"))
    save_conversation(conversation)
    assert synced[3:] == [events]
    assert _log(directory) == []
    assert (directory / "events.json").read_bytes() == _bytes(conversation)
    assert (directory / "events.json").stat().st_ino == events


def test_a_written_save_syncs_nothing_once_the_log_has_begun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's first line is synced (its base), later WRITTEN ones not; close syncs the file."""
    directory = tmp_path / "conv"
    conversation, lock, events, synced = _watched(directory, monkeypatch)
    for number in range(3):
        conversation.stream.append(ChatResponse.message(f"written {number}"))
        save_conversation(conversation, durability=Durability.WRITTEN)
    assert synced == [lock]
    assert len(_log(directory)) == 3
    conversation.close()
    assert synced == [lock, events]
    assert _log(directory) == []
    assert (directory / "events.json").read_bytes() == _bytes(conversation)


def test_a_change_that_is_not_an_append_is_saved_in_full(tmp_path: Path) -> None:
    """A replaced stream under a log: events.json rewritten whole, the log gone first."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    conversation.stream.append(ChatResponse.message("logged"))
    save_conversation(conversation, durability=Durability.LOGGED)
    inode = (directory / "events.json").stat().st_ino
    conversation.stream.replace(list(conversation.stream)[:2])
    assert save_conversation(conversation, durability=Durability.LOGGED).appended == ()
    assert (directory / "events.json").stat().st_ino != inode
    assert _log(directory) == []
    assert len(load_conversation(directory).stream) == 2


# ------------------------------------------------------ after a crash


def _crashed(directory: Path, where: str) -> list[object]:
    """A writer that dies in its second logged save, at ``where``; the version it then left.

    ``data``: the save's line written, its data not (the new version, from
    the log); ``line``: half its line written, nothing else (the version
    before). The writer is a forked process, and dies as a killed one does.
    """
    _saved(directory).close()
    versions = directory.parent / "versions.json"
    pid = os.fork()
    if pid == 0:  # the writer
        try:
            conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
            conversation.stream.append(ChatResponse.message("saved in full"))
            save_conversation(conversation)
            conversation.stream.append(ChatResponse.message("logged"))
            save_conversation(conversation, durability=Durability.LOGGED)
            old = encode_stream(conversation.stream)
            conversation.stream.append(ChatResponse.message("cut short"))
            versions.write_bytes(orjson.dumps([old, encode_stream(conversation.stream)]))
            real_pwrite = os.pwrite
            events, lock = directory / "events.json", directory / LOCK_FILE

            def dies(fd: int, data: Any, offset: int) -> int:
                if where == "data" and os.path.samestat(os.fstat(fd), events.stat()):
                    os._exit(0)
                if where == "line" and os.path.samestat(os.fstat(fd), lock.stat()):
                    real_pwrite(fd, bytes(data[: len(data) // 2]), offset)
                    os._exit(0)
                return real_pwrite(fd, data, offset)

            os.pwrite = dies
            save_conversation(conversation, durability=Durability.LOGGED)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    old, new = orjson.loads(versions.read_bytes())
    return list(new if where == "data" else old)


@pytest.mark.parametrize("where", ["data", "line"])
def test_a_logged_save_cut_short_reads_as_a_whole_version_and_is_put_on_disk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    """A line without its data: the new version, from the log; a torn line: the old. Repaired."""
    directory = tmp_path / "conv"
    version = _crashed(directory, where)
    assert encode_stream(load_conversation(directory).stream) == version
    reader = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    assert save_conversation(reader).written == ()  # the repair is no change of its own
    assert orjson.loads((directory / "events.json").read_bytes()) == version
    assert _log(directory) == []
    assert ("were put back from its log" in caplog.text) == (where == "data")


def test_a_torn_tail_under_a_log_is_read_as_the_log_says(tmp_path: Path) -> None:
    """As a power loss may leave it: the file's tail is garbage past the base; the log decides."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    base = (directory / "events.json").stat().st_size
    for number in range(2):
        conversation.stream.append(ChatResponse.message(f"logged {number}"))
        save_conversation(conversation, durability=Durability.LOGGED)
    whole = (directory / "events.json").read_bytes()
    lock = (directory / LOCK_FILE).read_bytes()
    conversation.close()
    (directory / LOCK_FILE).write_bytes(lock.replace(lock.partition(b"\n")[0], b"", 1))
    with (directory / "events.json").open("r+b") as handle:
        handle.seek(base)
        handle.write(b"\0" * 40)
        handle.truncate(base + 10)
    assert encode_stream(load_conversation(directory).stream) == orjson.loads(whole)
    save_conversation(load_conversation(directory))
    assert (directory / "events.json").read_bytes() == whole


def test_a_log_line_that_does_not_fit_ends_the_log_there(tmp_path: Path) -> None:
    """A line whose data is not its digest's (or names another file) is not read, nor after it."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    for number in range(3):
        conversation.stream.append(ChatResponse.message(f"logged {number}"))
        save_conversation(conversation, durability=Durability.LOGGED)
    lock = (directory / LOCK_FILE).read_bytes()
    conversation.close()
    _, _, lines = lock.partition(b"\n")
    first, second, third = lines.splitlines(keepends=True)
    forged = orjson.loads(second)
    forged["logged"]["data"] = forged["logged"]["data"].replace("logged 1", "forged 1")
    (directory / LOCK_FILE).write_bytes(b"\n" + first + orjson.dumps(forged) + b"\n" + third)
    with (directory / "events.json").open("r+b") as handle:
        handle.truncate(orjson.loads(first)["logged"]["new_size"])
    messages = [e.get("message") for e in encode_stream(load_conversation(directory).stream)]
    assert messages[-1] == "logged 0"


def test_a_file_shorter_than_its_logs_base_is_refused(tmp_path: Path) -> None:
    """Cut before where the log goes on from: no save could have left it; load and save refuse."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    conversation.stream.append(ChatResponse.message("logged"))
    save_conversation(conversation, durability=Durability.LOGGED)
    lock = (directory / LOCK_FILE).read_bytes()
    conversation.close()
    (directory / LOCK_FILE).write_bytes(b"\n" + lock.partition(b"\n")[2])
    with (directory / "events.json").open("r+b") as handle:
        handle.truncate(20)
    before = (directory / "events.json").read_bytes()
    with pytest.raises(
        StreamFormatError, match=r"fewer than the \d+ its log \(by process \d+\) goes on from"
    ):
        load_conversation(directory)
    assert (directory / "events.json").read_bytes() == before
