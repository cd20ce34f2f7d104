"""The store's append path: a save that only added entries writes just those.

The file after an append is byte for byte what a full rewrite would have
written; anything but an append (a replaced stream, a file changed on disk,
the first save after a load) is a full atomic rewrite. An append is
announced by an undo record in the lock file before the file changes: a
reader of a torn append reads the version before it, the next writer puts
that version back on disk, and a file no append could have left is refused.
The crashes themselves, in real processes, are in test_reliability_crash.py.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import events

from coordinator import (
    Conversation,
    ConversationChangedError,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.store import _append, _store
from coordinator.store._lock import LOCK_FILE
from coordinator.store._store import dump_json
from coordinator.wire import _json_read, encode_stream
from machines import (
    AnswerType,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
)

if TYPE_CHECKING:
    from pathlib import Path

    from machines import Event


def _rewrite_bytes(conversation: Conversation) -> bytes:
    """What a full rewrite of the stream writes."""
    return dump_json(encode_stream(conversation.stream))


def _saved(directory: Path, count: int = 3) -> Conversation:
    """A new conversation of ``count`` messages, saved to ``directory`` (by this very object)."""
    conversation = Conversation.new(
        metadata={"title": "t"}, base_config={}, clock=FixedClock(), new_id=CountingIds()
    )
    for number in range(count):
        conversation.stream.append(ChatRequest(content=f"message {number}"))
    save_conversation(conversation, directory)
    return conversation


def _question(number: int) -> InquiryRequest:
    return InquiryRequest(
        id=f"call_{number}.apply.1",
        source=InquirySource.tool("fs"),
        question=InquiryQuestion(text="Apply the patch?", answer_type=AnswerType.boolean()),
    )


def _record(directory: Path) -> bytes:
    """The lock file's lines after the pid: an undo record, or nothing."""
    return (directory / LOCK_FILE).read_bytes().partition(b"\n")[2]


class _Crash(BaseException):
    """Stands for the process dying: nothing after it runs, nothing is cleaned up."""


# --------------------------------------------------------------- the bytes


@settings(max_examples=examples(25))
@given(st.lists(st.lists(events(), min_size=1, max_size=3), min_size=1, max_size=6))
def test_appended_saves_write_exactly_what_a_rewrite_would(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[Event]]
) -> None:
    """After each save of appended entries, events.json is the full rewrite's bytes, in place."""
    directory = tmp_path_factory.mktemp("conv") / "c"
    conversation = _saved(directory)
    inode = (directory / "events.json").stat().st_ino
    for batch in batches:
        for payload in batch:
            conversation.stream.append(payload)
        result = save_conversation(conversation)
        assert result.appended == (directory / "events.json",)
        assert (directory / "events.json").read_bytes() == _rewrite_bytes(conversation)
        assert (directory / "events.json").stat().st_ino == inode
    assert _record(directory) == b""
    loaded = load_conversation(directory)
    assert encode_stream(loaded.stream) == encode_stream(conversation.stream)
    conversation.close()


def test_an_append_writes_only_the_new_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question's save on a long stream writes a few hundred bytes, not the stream."""
    directory = tmp_path / "conv"
    conversation = _saved(directory, count=2000)
    size = (directory / "events.json").stat().st_size
    written: list[int] = []
    real_pwrite, real_write = os.pwrite, os.write

    def pwrite(fd: int, data: Any, offset: int) -> int:
        written.append(len(data))
        return real_pwrite(fd, data, offset)

    def write(fd: int, data: Any) -> int:
        written.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "pwrite", pwrite)
    monkeypatch.setattr(os, "write", write)
    conversation.stream.append(_question(1))
    assert save_conversation(conversation).appended == (directory / "events.json",)
    assert size > 100_000
    assert 0 < sum(written) < 2_000  # the entry, and its undo record in the lock file
    monkeypatch.undo()
    assert (directory / "events.json").read_bytes() == _rewrite_bytes(conversation)


def test_a_change_that_is_not_an_append_rewrites_the_file(tmp_path: Path) -> None:
    """A replaced stream (sanitize, an edit) is written whole, atomically: a new file."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    inode = (directory / "events.json").stat().st_ino
    entries = list(conversation.stream)
    conversation.stream.replace([*entries[:1], *entries[2:]])
    conversation.stream.append(ChatResponse.message("after the edit"))
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert result.appended == ()
    assert (directory / "events.json").stat().st_ino != inode
    assert (directory / "events.json").read_bytes() == _rewrite_bytes(conversation)


def test_a_replaced_stream_longer_than_the_file_is_rewritten_not_appended_to(
    tmp_path: Path,
) -> None:
    """A stream replaced since its save is rewritten, though it grew past what the file holds."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    entries = list(conversation.stream)
    conversation.stream.replace(entries[1:])
    conversation.stream.append(_question(1))
    conversation.stream.append(_question(2))
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert result.appended == ()
    assert (directory / "events.json").read_bytes() == _rewrite_bytes(conversation)
    loaded = load_conversation(directory)
    assert encode_stream(loaded.stream) == encode_stream(conversation.stream)
    loaded.close()
    conversation.close()


def test_the_first_save_after_a_load_rewrites_then_the_next_appends(tmp_path: Path) -> None:
    """A loaded file is not known to be laid out as the store writes it until it wrote it."""
    directory = tmp_path / "conv"
    _saved(directory).close()
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(_question(1))
    assert save_conversation(conversation).appended == ()
    conversation.stream.append(_question(2))
    assert save_conversation(conversation).appended == (directory / "events.json",)
    assert (directory / "events.json").read_bytes() == _rewrite_bytes(conversation)


def _syncs_and_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Each ``os.fsync`` and ``os.pwrite`` from now on, by the inode it went to."""
    log: list[tuple[str, int]] = []
    real_fsync, real_pwrite = os.fsync, os.pwrite

    def fsync(fd: int) -> None:
        log.append(("fsync", os.fstat(fd).st_ino))
        real_fsync(fd)

    def pwrite(fd: int, data: Any, offset: int) -> int:
        log.append(("pwrite", os.fstat(fd).st_ino))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "pwrite", pwrite)
    return log


def test_a_new_conversations_save_syncs_no_lock_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock's pid line is for the living: only the files and the directories are synced."""
    log = _syncs_and_writes(monkeypatch)
    directory = tmp_path / "conv"
    _saved(directory).close()
    synced = {inode for call, inode in log if call == "fsync"}
    assert (directory / LOCK_FILE).stat().st_ino not in synced
    assert {(directory / name).stat().st_ino for name in ("events.json", "metadata.json")} <= (
        synced
    )
    assert {directory.stat().st_ino, tmp_path.stat().st_ino} <= synced


def test_a_lock_file_is_synced_into_its_directory_before_its_record_is_relied_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file created in a conversation JP wrote: its name is durable before an append.

    A power loss could otherwise take the lock file's name, and with it the
    undo record, while the append it describes stayed half on disk.
    """
    directory = tmp_path / "conv"
    _saved(directory).close()
    (directory / LOCK_FILE).unlink()  # as JP leaves a conversation: no lock file
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(_question(1))
    assert save_conversation(conversation).appended == ()  # the first save after a load rewrites
    lock, events = (directory / LOCK_FILE).stat().st_ino, (directory / "events.json").stat().st_ino
    log = _syncs_and_writes(monkeypatch)
    conversation.stream.append(_question(2))
    assert save_conversation(conversation).appended == (directory / "events.json",)
    first_change = log.index(("pwrite", events))
    assert log[:first_change] == [
        ("pwrite", lock),  # the undo record
        ("fsync", lock),
        ("fsync", directory.stat().st_ino),
    ]
    log.clear()
    conversation.stream.append(_question(3))
    save_conversation(conversation)
    assert log[: log.index(("pwrite", events))] == [("pwrite", lock), ("fsync", lock)]
    conversation.close()


def test_metadata_changed_with_an_append_is_replaced_beside_it(tmp_path: Path) -> None:
    """The stream is appended to, metadata.json replaced: each file by its own path."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    conversation.stream.append(_question(1))
    assert conversation.metadata is not None
    conversation.metadata["title"] = "renamed"
    result = save_conversation(conversation)
    assert result.appended == (directory / "events.json",)
    assert set(result.written) == {directory / "events.json", directory / "metadata.json"}
    assert orjson.loads((directory / "metadata.json").read_bytes()) == {"title": "renamed"}


# ------------------------------------------------- the file changed on disk


@pytest.mark.parametrize("change", ["rewritten", "touched", "replaced by a copy"])
def test_an_append_to_a_file_changed_on_disk_is_refused(tmp_path: Path, change: str) -> None:
    """Size, mtime or inode differing from what the store left: refused, the file kept."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    events_json = directory / "events.json"
    if change == "rewritten":
        events_json.write_bytes(events_json.read_bytes().replace(b"message 0", b"theirs 00"))
    elif change == "touched":
        stamp = events_json.stat().st_mtime_ns + 1_000_000
        os.utime(events_json, ns=(stamp, stamp))
    else:
        copy = directory / "copy"
        copy.write_bytes(events_json.read_bytes())
        copy.replace(events_json)
    before = events_json.read_bytes()
    conversation.stream.append(_question(1))
    with pytest.raises(ConversationChangedError, match=r"events\.json: changed on disk"):
        save_conversation(conversation)
    assert events_json.read_bytes() == before
    assert _record(directory) == b""


def test_a_file_changed_between_plan_and_append_is_not_appended_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state is checked again on the open file: a change in between is refused, not lost."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    events_json = directory / "events.json"
    real_append = _append.append

    def meddling_append(*args: Any) -> os.stat_result | None:
        with events_json.open("ab") as handle:  # another program, which takes no lock
            handle.write(b" ")
        return real_append(*args)

    monkeypatch.setattr(_store, "append", meddling_append)
    conversation.stream.append(_question(1))
    with pytest.raises(ConversationChangedError):
        save_conversation(conversation)
    assert events_json.read_bytes().endswith(b"\n]\n ")


# ------------------------------------------------------ a torn append


def _crash_during_append(
    directory: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> tuple[Conversation, bytes]:
    """Save a conversation, crash its next append at ``where``; it and the version then read.

    ``half``: half the new bytes written (the old version is read);
    ``unsynced``: all written, not synced (still in the page cache, whole: the
    new version); ``uncleared``: synced, the record not yet cleared (the new
    version). The lock is then let go, as a dead process's is.
    """
    conversation = _saved(directory)
    old = (directory / "events.json").read_bytes()
    conversation.stream.append(_question(1))
    conversation.stream.append(ChatResponse.message("and more"))
    new = _rewrite_bytes(conversation)
    real_pwrite, real_fsync, real_ftruncate = os.pwrite, os.fsync, os.ftruncate
    events_inode = (directory / "events.json").stat().st_ino

    def is_events(fd: int) -> bool:
        return os.fstat(fd).st_ino == events_inode

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if where == "half" and is_events(fd):
            real_pwrite(fd, bytes(data[: len(data) // 2]), offset)
            raise _Crash
        return real_pwrite(fd, data, offset)

    def fsync(fd: int) -> None:
        if where == "unsynced" and is_events(fd):
            raise _Crash
        real_fsync(fd)

    def ftruncate(fd: int, length: int) -> None:
        if os.fstat(fd).st_ino == lock_inode:
            lock_truncations.append(length)
            # The first truncation ends writing the record; the second clears it.
            if where == "uncleared" and len(lock_truncations) == 2:
                raise _Crash
        real_ftruncate(fd, length)

    lock_inode = (directory / LOCK_FILE).stat().st_ino
    lock_truncations: list[int] = []
    monkeypatch.setattr(os, "pwrite", pwrite)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "ftruncate", ftruncate)
    with pytest.raises(_Crash):
        save_conversation(conversation)
    monkeypatch.undo()
    conversation.close()
    # Let go of, the lock names no pid, and the record it must keep is whole where it was.
    pid_line, _, record = (directory / LOCK_FILE).read_bytes().partition(b"\n")
    assert pid_line.strip() == b""
    assert record.startswith(b'{"append":')
    return conversation, old if where == "half" else new


@pytest.mark.parametrize("where", ["half", "unsynced", "uncleared"])
def test_a_torn_append_reads_as_a_whole_version_and_the_next_save_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Killed mid-append: loads give the old (or whole new) version; the next writer fixes it."""
    directory = tmp_path / "conv"
    _, version = _crash_during_append(directory, monkeypatch, where)
    expected = orjson.loads(version)
    assert encode_stream(load_conversation(directory).stream) == expected
    reader = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    assert save_conversation(reader).written == ()  # the repair is no change of its own
    assert (directory / "events.json").read_bytes() == version
    assert _record(directory) == b""
    reader.stream.append(ChatResponse.message("next"))
    save_conversation(reader)
    assert encode_stream(load_conversation(directory).stream)[:-1] == expected


def test_a_torn_append_is_said_to_readers_once_its_writer_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader of a dead writer's torn append is warned which version it reads."""
    directory = tmp_path / "conv"
    _crash_during_append(directory, monkeypatch, "half")
    record = orjson.loads(_record(directory))
    record["append"]["pid"] = _dead_pid()
    lock = directory / LOCK_FILE
    lock.write_bytes(lock.read_bytes().partition(b"\n")[0] + b"\n" + orjson.dumps(record) + b"\n")
    load_conversation(directory)
    assert "was interrupted; reading the version before it" in caplog.text


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_a_file_no_append_could_have_left_is_refused_naming_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut shorter than before the append: neither version can be read; load and save refuse."""
    directory = tmp_path / "conv"
    _crash_during_append(directory, monkeypatch, "half")
    loaded_before = load_conversation(directory)
    events_json = directory / "events.json"
    with events_json.open("r+b") as handle:
        handle.truncate(100)
    before = events_json.read_bytes()
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(directory)
    message = str(caught.value)
    assert message.startswith(f"{events_json}: an append to it (by process {os.getpid()})")
    assert "was interrupted, and it is not as that append could have left it" in message
    assert LOCK_FILE in message
    with pytest.raises(StreamFormatError, match="was interrupted"):
        save_conversation(loaded_before)  # the writer taking the lock meets the record
    assert events_json.read_bytes() == before
    assert _record(directory).startswith(b'{"append":')


def test_a_record_about_a_file_since_replaced_is_ignored_and_cleared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """events.json replaced whole after the crash: the record names another file; it is dropped."""
    directory = tmp_path / "conv"
    _crash_during_append(directory, monkeypatch, "half")
    replacement = directory / "replacement"
    replacement.write_bytes(dump_json([]))
    replacement.replace(directory / "events.json")
    assert len(load_conversation(directory).stream) == 0
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatRequest(content="hi"))
    save_conversation(conversation)
    assert _record(directory) == b""
    assert len(load_conversation(directory).stream) == 1


def test_a_failed_append_puts_the_file_back_and_says_nothing_was_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk full mid-append: the file is as before, no record stays, the error is true."""
    directory = tmp_path / "conv"
    conversation = _saved(directory)
    events_json = directory / "events.json"
    before = events_json.read_bytes()
    real_fsync = os.fsync
    inode = events_json.stat().st_ino
    calls: list[int] = []

    def fsync(fd: int) -> None:
        if os.fstat(fd).st_ino == inode and not calls:
            calls.append(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    conversation.stream.append(_question(1))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value) == (
        f"{events_json}: cannot be written: No space left on device; nothing was saved"
    )
    assert events_json.read_bytes() == before
    assert _record(directory) == b""
    assert save_conversation(conversation).appended == (events_json,)  # the next one goes through
    assert events_json.read_bytes() == _rewrite_bytes(conversation)


def test_a_load_during_an_append_reads_a_whole_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file appended to while it is read is read again, whole, rather than refused."""
    directory = tmp_path / "conv"
    writer = _saved(directory)
    writer.stream.append(_question(1))
    real_read_file = _json_read.read_file
    appended: list[bool] = []

    def read_file_while_appending(handle: Any) -> Any:
        if not appended:
            appended.append(True)
            save_conversation(writer)  # the tail read next is no longer there
        return real_read_file(handle)

    monkeypatch.setattr(_store, "read_file", read_file_while_appending)
    reader = load_conversation(directory)
    assert appended
    assert encode_stream(reader.stream) == encode_stream(writer.stream)
