"""The store: layouts, the public load/save API, and how files are replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
import orjson
import pytest
from conftest import CountingIds, FixedClock
from os_refusals import refuse_creating_files, refuse_searching

import coordinator
from coordinator import (
    Conversation,
    ConversationChangedError,
    ConversationStream,
    EventEntry,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.store import Layout, SaveResult
from coordinator.store._lock import LOCK_FILE
from coordinator.stream import ConfigDelta, UnknownEntry
from coordinator.wire import encode_stream
from machines import (
    Answered,
    AnswerType,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    ToolCallRequest,
    TurnStart,
)
from machines._json import WRITE_DEPTH

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue

STAMP = "2026-03-05 19:31:45.7"
BASE: dict[str, JsonValue] = {
    "assistant": {"model": {"id": "anthropic/claude"}},
    "style": {"color": True},
}


def dump(value: Any) -> bytes:
    """JP's on-disk JSON."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def _current(directory: Path) -> Path:
    """A current-layout conversation: base_config.json, events.json, metadata.json."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "base_config.json").write_bytes(dump(BASE))
    (directory / "metadata.json").write_bytes(dump({"title": "Current"}))
    (directory / "events.json").write_bytes(
        dump(
            [
                {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
                {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
                {"event_id": "d1", "type": "config_delta", "timestamp": STAMP, "delta": {"x": 1}},
            ]
        )
    )
    return directory


def _legacy(directory: Path, *, flattened: bool = False) -> Path:
    """A legacy conversation: the first config_delta holds the base configuration."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metadata.json").write_bytes(dump({"title": "Legacy"}))
    first: dict[str, Any] = {"event_id": "d0", "type": "config_delta", "timestamp": STAMP}
    first |= BASE if flattened else {"delta": BASE}
    (directory / "events.json").write_bytes(
        dump(
            [
                first,
                {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
            ]
        )
    )
    return directory


def _snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """The conversation's files (not the writer's lock file, which a save may create)."""
    return {
        path.name: (path.read_bytes(), path.stat().st_mtime_ns)
        for path in directory.iterdir()
        if path.is_file() and path.name != LOCK_FILE
    }


def labels_of(directory: Path) -> list[str]:
    """The kinds of the entries ``directory``'s events.json holds, in order."""
    return [entry["type"] for entry in orjson.loads((directory / "events.json").read_bytes())]


# ------------------------------------------------------------------ layouts


def test_the_current_layout_loads_base_config_from_its_file(tmp_path: Path) -> None:
    """With base_config.json present the layout is current and base_config is that file."""
    conversation = load_conversation(_current(tmp_path / "conv"))
    assert conversation.layout is Layout.CURRENT
    assert conversation.base_config == BASE
    assert conversation.metadata == {"title": "Current"}
    assert len(conversation.stream) == 3


@pytest.mark.parametrize("flattened", [False, True])
def test_the_legacy_layout_takes_base_config_from_the_first_config_delta(
    tmp_path: Path, flattened: bool
) -> None:
    """Without base_config.json the first config_delta is the base config (nested or flat)."""
    conversation = load_conversation(_legacy(tmp_path / "conv", flattened=flattened))
    assert conversation.layout is Layout.LEGACY
    assert conversation.base_config == BASE
    first = conversation.stream[0]
    assert isinstance(first, ConfigDelta)
    assert first.flattened is flattened
    assert first.delta == BASE


def test_a_legacy_stream_without_a_leading_config_delta_has_no_base_config(
    tmp_path: Path,
) -> None:
    """No base_config.json and no leading config_delta: there is no base config."""
    (tmp_path / "events.json").write_bytes(
        dump([{"timestamp": STAMP, "type": "chat_request", "content": "hi"}])
    )
    conversation = load_conversation(tmp_path)
    assert conversation.layout is Layout.LEGACY
    assert conversation.base_config is None
    assert conversation.metadata is None


@pytest.mark.parametrize("flattened", [False, True])
def test_saving_a_legacy_conversation_keeps_the_legacy_layout(
    tmp_path: Path, flattened: bool
) -> None:
    """No base_config.json appears, and the first config_delta keeps its shape."""
    directory = _legacy(tmp_path / "conv", flattened=flattened)
    first_before = orjson.loads((directory / "events.json").read_bytes())[0]
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    save_conversation(conversation)
    assert not (directory / "base_config.json").exists()
    written = orjson.loads((directory / "events.json").read_bytes())
    assert written[0] == first_before
    assert ("delta" in written[0]) is not flattened
    assert load_conversation(directory).layout is Layout.LEGACY


def test_saving_a_current_conversation_keeps_the_current_layout(tmp_path: Path) -> None:
    """base_config.json stays, unchanged, and the events do not take the base config."""
    directory = _current(tmp_path / "conv")
    base_before = (directory / "base_config.json").read_bytes()
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert (directory / "base_config.json").read_bytes() == base_before
    reloaded = load_conversation(directory)
    assert reloaded.layout is Layout.CURRENT
    assert reloaded.base_config == BASE


def test_a_new_conversation_saves_in_the_current_layout(tmp_path: Path) -> None:
    """Conversation.new writes all three files, and loads back the same."""
    conversation = Conversation.new(
        metadata={"title": "New"}, base_config=BASE, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    result = save_conversation(conversation, tmp_path / "conv")
    directory = tmp_path / "conv"
    assert set(result.written) == {
        directory / "events.json",
        directory / "metadata.json",
        directory / "base_config.json",
    }
    assert (directory / "base_config.json").read_bytes() == dump(BASE)
    assert (directory / "metadata.json").read_bytes() == dump({"title": "New"})
    assert (directory / "events.json").read_bytes() == dump(
        [{"event_id": "e000001", "timestamp": "2026-11-22 09:30:00.0", "type": "turn_start"}]
    )
    reloaded = load_conversation(directory)
    assert (reloaded.layout, reloaded.base_config, reloaded.metadata) == (
        Layout.CURRENT,
        BASE,
        {"title": "New"},
    )
    assert conversation.path == directory


@attrs.frozen(kw_only=True)
class _TracedCall(ToolCallRequest):
    """An embedder's own tool-call record, with a field the format does not have."""

    trace: str = "trace-1"


@attrs.frozen(kw_only=True)
class _TracedAnswer(Answered):
    """An embedder's own inquiry answer."""


def test_a_subclass_of_a_record_is_saved_and_loads_back_as_its_record(tmp_path: Path) -> None:
    """A payload whose type subclasses a record has that record's kind and saves as it."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="hi"))
    call = stream.append(_TracedCall(id="c", name="fs_modify_file", arguments={"path": "a.py"}))
    question = InquiryQuestion(text="Apply?", answer_type=AnswerType.boolean())
    source = InquirySource.tool("fs_modify_file")
    stream.append(InquiryRequest(id="c.q.1", source=source, question=question))
    answer = stream.append(_TracedAnswer(id="c.q.1", answer=True))
    assert (call.kind, answer.kind) == ("tool_call_request", "inquiry_response")

    save_conversation(conversation, tmp_path)
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    assert [entry["type"] for entry in saved] == [
        "turn_start", "chat_request", "tool_call_request", "inquiry_request", "inquiry_response",
    ]  # fmt: skip
    assert "trace" not in saved[2]
    reloaded = load_conversation(tmp_path).stream
    assert [entry.payload for entry in reloaded if isinstance(entry, EventEntry)][2:] == [
        ToolCallRequest(id="c", name="fs_modify_file", arguments={"path": "a.py"}),
        InquiryRequest(id="c.q.1", source=source, question=question),
        Answered(id="c.q.1", answer=True),
    ]


def test_files_the_store_does_not_know_are_left_alone(tmp_path: Path) -> None:
    """Other files and folders in the directory are neither modified nor deleted."""
    directory = _current(tmp_path / "conv")
    (directory / "notes.md").write_bytes(b"# my notes\n")
    (directory / "events.json.bak").write_bytes(b"[]")
    (directory / ".hidden").write_bytes(b"x")
    (directory / "attachments").mkdir()
    (directory / "attachments" / "a.txt").write_bytes(b"a")
    others = {
        name: value
        for name, value in _snapshot(directory).items()
        if name not in {"events.json", "metadata.json", "base_config.json"}
    }
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    conversation.metadata = {"title": "Renamed"}
    save_conversation(conversation)
    after = _snapshot(directory)
    assert {name: after[name] for name in others} == others
    assert (directory / "attachments" / "a.txt").read_bytes() == b"a"


def test_metadata_and_base_config_keep_their_own_formatting_when_unchanged(
    tmp_path: Path,
) -> None:
    """A save that does not change them leaves them byte for byte, however they are written."""
    directory = _current(tmp_path / "conv")
    (directory / "metadata.json").write_bytes(b'{"title":"compact"}')
    (directory / "base_config.json").write_bytes(b'{ "a" : 1 }\n\n')
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert (directory / "metadata.json").read_bytes() == b'{"title":"compact"}'
    assert (directory / "base_config.json").read_bytes() == b'{ "a" : 1 }\n\n'


def test_changed_metadata_is_written(tmp_path: Path) -> None:
    """Changing the metadata in memory writes metadata.json (and only it)."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory)
    assert conversation.metadata is not None
    conversation.metadata["title"] = "Renamed"
    result = save_conversation(conversation)
    assert result.written == (directory / "metadata.json",)
    assert orjson.loads((directory / "metadata.json").read_bytes()) == {"title": "Renamed"}


# ------------------------------------------------------------- public API


def test_the_public_api_is_exported() -> None:
    """load_conversation and save_conversation are part of coordinator's public names."""
    assert {"load_conversation", "save_conversation"} <= set(coordinator.__all__)
    assert coordinator.load_conversation is load_conversation


def test_a_conversation_loads_from_its_directory_or_its_events_file(tmp_path: Path) -> None:
    """Both paths give the same conversation, rooted at the directory."""
    directory = _current(tmp_path / "conv")
    by_directory = load_conversation(directory)
    by_file = load_conversation(directory / "events.json")
    by_text = load_conversation(str(directory))
    assert list(by_directory.stream) == list(by_file.stream) == list(by_text.stream)
    assert by_directory.path == by_file.path == directory
    assert by_file.base_config == BASE


def test_loading_a_missing_conversation_names_the_file(tmp_path: Path) -> None:
    """A path that does not exist is a StreamFormatError naming it."""
    with pytest.raises(StreamFormatError, match=r"nowhere: does not exist"):
        load_conversation(tmp_path / "nowhere")


def test_saving_a_conversation_never_loaded_needs_a_path() -> None:
    """Without a path and without a home, save refuses."""
    with pytest.raises(ValueError, match="give a path"):
        save_conversation(Conversation.new())


def test_saving_to_another_directory_copies_the_conversation(tmp_path: Path) -> None:
    """save_conversation(conv, other) writes a copy there and leaves the original alone."""
    directory = _current(tmp_path / "conv")
    before = _snapshot(directory)
    conversation = load_conversation(directory)
    result = save_conversation(conversation, tmp_path / "copy")
    assert {path.name for path in result.written} == {
        "events.json",
        "metadata.json",
        "base_config.json",
    }
    assert _snapshot(directory) == before
    copy = load_conversation(tmp_path / "copy")
    assert list(copy.stream) == list(conversation.stream)
    assert (copy.metadata, copy.base_config) == (conversation.metadata, conversation.base_config)


# ------------------------------------------------------------ saving bytes


def test_a_save_with_nothing_changed_writes_nothing(tmp_path: Path) -> None:
    """Every file is reported unchanged, and no file is touched (mtime included)."""
    directory = _current(tmp_path / "conv")
    before = _snapshot(directory)
    result = save_conversation(load_conversation(directory))
    assert isinstance(result, SaveResult)
    assert result.written == ()
    assert set(result.unchanged) == {
        directory / "events.json",
        directory / "base_config.json",
        directory / "metadata.json",
    }
    assert _snapshot(directory) == before


def test_a_change_then_save_writes_then_a_second_save_writes_nothing(tmp_path: Path) -> None:
    """After a write, saving again is a no-op reported as unchanged."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    assert save_conversation(conversation).written == (directory / "events.json",)
    after_first = _snapshot(directory)
    second = save_conversation(conversation)
    assert second.written == ()
    assert directory / "events.json" in second.unchanged
    assert _snapshot(directory) == after_first


def test_an_existing_files_permission_bits_are_kept(tmp_path: Path) -> None:
    """Replacing events.json keeps its mode (the new file is not made world-readable)."""
    directory = _current(tmp_path / "conv")
    events = directory / "events.json"
    events.chmod(0o600)
    (directory / "metadata.json").chmod(0o640)
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    assert conversation.metadata is not None
    conversation.metadata["title"] = "Renamed"
    inode_before = events.stat().st_ino
    save_conversation(conversation)
    assert stat.S_IMODE(events.stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "metadata.json").stat().st_mode) == 0o640
    assert events.stat().st_ino != inode_before  # replaced, not rewritten in place


def test_a_new_file_gets_the_mode_the_umask_allows(tmp_path: Path) -> None:
    """New files are 0o666 narrowed by the umask, never world-writable by force."""
    old = os.umask(0o027)
    try:
        save_conversation(Conversation.new(metadata={"title": "t"}), tmp_path / "conv")
    finally:
        os.umask(old)
    for name in ("events.json", "metadata.json"):
        assert stat.S_IMODE((tmp_path / "conv" / name).stat().st_mode) == 0o640


def test_a_conversation_saves_to_its_events_file_path_too(tmp_path: Path) -> None:
    """As for loading, the events.json path names the conversation directory."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    result = save_conversation(conversation, directory / "events.json")
    assert result.written == (directory / "events.json",)
    assert (directory / "events.json").is_file()
    fresh = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    save_conversation(fresh, tmp_path / "new" / "events.json")
    assert (tmp_path / "new" / "events.json").is_file()
    assert fresh.path == tmp_path / "new"


# ------------------------------------------------------------- atomic write


@pytest.fixture
def io_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record fsync and replace calls (what was synced, what was renamed to what)."""
    log: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        log.append(("fsync", kind))
        real_fsync(fd)

    def replace(source: Any, target: Any, **kwargs: Any) -> None:
        log.append(("replace", f"{os.fspath(source)} -> {os.fspath(target)}"))
        real_replace(source, target, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return log


def test_a_save_writes_a_temp_file_fsyncs_it_renames_it_and_fsyncs_the_directory(
    tmp_path: Path, io_log: list[tuple[str, str]]
) -> None:
    """Atomic replace: temp in the same directory, fsync, os.replace, fsync of the directory."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    with conversation:  # the writer lock, taken first: its own syncs are not this test's
        io_log.clear()
        conversation.stream.append(ChatResponse.message("hello"))
        save_conversation(conversation)
    assert [entry[0] for entry in io_log] == ["fsync", "replace", "fsync"]
    assert io_log[0] == ("fsync", "file")
    assert io_log[2] == ("fsync", "dir")
    source, target = io_log[1][1].split(" -> ")
    assert target == str(directory / "events.json")
    assert os.path.dirname(source) == str(directory)  # noqa: PTH120 - comparing plain strings
    assert os.path.basename(source).startswith(".events.json.")  # noqa: PTH119
    assert sorted(path.name for path in directory.iterdir()) == [
        LOCK_FILE,
        "base_config.json",
        "events.json",
        "metadata.json",
    ]


def test_a_failed_replace_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed rename leaves the file as it was, cleans up, and is said naming the file."""
    directory = _current(tmp_path / "conv")
    before = _snapshot(directory)
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))

    def broken_replace(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value) == (
        f"{directory / 'events.json'}: cannot be written: No space left on device; "
        "nothing was saved"
    )
    assert isinstance(caught.value.__cause__, OSError)
    assert _snapshot(directory) == before


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_stale_temp_files_of_dead_writers_are_removed_by_the_next_save(tmp_path: Path) -> None:
    """A temp file left by a process that died is removed; live writers' and others stay."""
    directory = _current(tmp_path / "conv")
    dead = directory / f".events.json.{_dead_pid()}.0123456789abcdef.tmp"
    dead.write_bytes(b"[half")
    live_writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = directory / f".events.json.{live_writer.pid}.fedcba9876543210.tmp"
        live.write_bytes(b"[in progress")
        unrelated = directory / ".events.json.notes.tmp"
        unrelated.write_bytes(b"mine")
        conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
        conversation.stream.append(ChatResponse.message("hello"))
        save_conversation(conversation)
        assert not dead.exists()
        assert live.read_bytes() == b"[in progress"
        assert unrelated.read_bytes() == b"mine"
    finally:
        live_writer.kill()
        live_writer.wait()


# ---------------------------------------------------- refusing to overwrite


def test_a_file_changed_on_disk_since_load_is_not_overwritten(tmp_path: Path) -> None:
    """Another writer's change makes save raise ConversationChangedError and keep their file."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    theirs = dump([{"event_id": "zz", "timestamp": STAMP, "type": "turn_start"}])
    (directory / "events.json").write_bytes(theirs)
    conversation.stream.append(ChatResponse.message("mine"))
    with pytest.raises(ConversationChangedError, match=r"events\.json: changed on disk") as caught:
        save_conversation(conversation)
    assert caught.value.path == directory / "events.json"
    assert (directory / "events.json").read_bytes() == theirs


def test_a_file_changed_on_disk_but_not_in_memory_is_left_alone_and_does_not_block(
    tmp_path: Path,
) -> None:
    """Another program's metadata.json is kept; the save writes what changed, and only that."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    theirs = b'{"title": "their title, longer than before"}\n'
    (directory / "metadata.json").write_bytes(theirs)
    conversation.stream.append(ChatResponse.message("mine"))
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert directory / "metadata.json" in result.unchanged
    assert (directory / "metadata.json").read_bytes() == theirs
    assert labels_of(directory)[-1] == "chat_response"
    assert save_conversation(conversation).written == ()  # and every later save too
    # Changing it in memory now would lose their change: refused, nothing written.
    before = _snapshot(directory)
    assert conversation.metadata is not None
    conversation.metadata["title"] = "mine"
    conversation.stream.append(ChatResponse.message("more"))
    with pytest.raises(ConversationChangedError, match=r"metadata\.json: changed on disk"):
        save_conversation(conversation)
    assert _snapshot(directory) == before


def test_a_save_refused_for_one_file_writes_no_other(tmp_path: Path) -> None:
    """The change check covers every file before the first is written: events.json is kept."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="a new turn"))
    assert conversation.metadata is not None
    conversation.metadata["title"] = "mine"
    (directory / "metadata.json").write_bytes(b'{"title": "theirs"}\n')
    before = _snapshot(directory)
    with pytest.raises(ConversationChangedError) as caught:
        save_conversation(conversation)
    assert caught.value.path == directory / "metadata.json"
    assert _snapshot(directory) == before  # events.json too: repeating the change adds no turn


def test_a_file_changed_on_disk_to_what_we_would_write_is_accepted(tmp_path: Path) -> None:
    """If the other writer wrote exactly our bytes, there is nothing to lose."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("same"))
    ours = dump(encode_stream(conversation.stream))
    (directory / "events.json").write_bytes(ours)
    result = save_conversation(conversation)
    assert directory / "events.json" in result.unchanged


@pytest.mark.parametrize(
    "tail", [b"", b"\n\n", b"\r\n", b" "], ids=["no newline", "two", "crlf", "space"]
)
def test_a_file_that_differs_from_ours_only_after_the_json_is_rewritten(
    tmp_path: Path, tail: bytes
) -> None:
    """Our bytes are the JSON and one newline: a file ending otherwise is not already ours."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatRequest(content="hi"))
    ours = dump(encode_stream(conversation.stream))
    target = tmp_path / "events.json"
    target.write_bytes(ours[:-1] + tail)
    result = save_conversation(conversation, tmp_path)
    assert target in result.written
    assert target.read_bytes() == ours


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("events.json", b"[{not json", "is not valid JSON"),
        ("events.json", b'{"entries": []}', "holds an object, not an array"),
        ("events.json", b'[{"timestamp": "2026-03-05 19:31:45.7"}]', "entry 0: entry has no"),
        ("metadata.json", b"title: yaml?", "is not valid JSON"),
        ("metadata.json", b"[1, 2]", "holds an array, not an object"),
        ("base_config.json", b"", "is not valid JSON"),
    ],
)
def test_a_foreign_file_that_cannot_be_read_is_not_overwritten(
    tmp_path: Path, name: str, content: bytes, problem: str
) -> None:
    """Saving over a file the store cannot read raises StreamFormatError and leaves it."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / name).write_bytes(content)
    conversation = Conversation.new(
        metadata={"title": "t"}, base_config=BASE, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(ChatRequest(content="hi"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, directory)
    assert str(directory / name) in str(caught.value)
    assert problem in str(caught.value)
    assert "not overwriting it" in str(caught.value)
    assert (directory / name).read_bytes() == content


@pytest.mark.parametrize("name", ["events.json", "metadata.json", "base_config.json"])
def test_a_conversation_that_was_not_loaded_is_never_overwritten(
    tmp_path: Path, name: str
) -> None:
    """A new conversation saved where another is: refused naming the file, nothing written."""
    directory = _current(tmp_path / "conv")
    for other in {"events.json", "metadata.json", "base_config.json"} - {name}:
        (directory / other).unlink()
    before = _snapshot(directory)
    conversation = Conversation.new(
        metadata={"title": "new"}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(ChatRequest(content="replacement"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, directory)
    assert str(caught.value) == (
        f"{directory / name}: holds what this conversation was not loaded from; not "
        "overwriting it (load that conversation to change it, or save this one to another "
        "directory)"
    )
    assert _snapshot(directory) == before


def test_a_file_holding_our_very_value_laid_out_otherwise_is_replaced(tmp_path: Path) -> None:
    """Compact JSON of exactly the value to be written: nothing is lost by laying it out."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatRequest(content="hi"))
    ours = dump(encode_stream(conversation.stream))
    (tmp_path / "events.json").write_bytes(orjson.dumps(encode_stream(conversation.stream)))
    assert save_conversation(conversation, tmp_path).written[0] == tmp_path / "events.json"
    assert (tmp_path / "events.json").read_bytes() == ours


def test_a_new_conversation_without_a_base_config_loads_again_in_the_current_layout(
    tmp_path: Path,
) -> None:
    """An empty base_config.json is written.

    Without it, a first config delta would be read as the base configuration
    of a legacy conversation.
    """
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append_config_delta({"assistant": {"model": "x"}})
    conversation.stream.append(ChatRequest(content="hi"))
    save_conversation(conversation, tmp_path)
    assert (tmp_path / "base_config.json").read_bytes() == b"{}\n"
    loaded = load_conversation(tmp_path)
    assert loaded.layout is Layout.CURRENT
    assert loaded.base_config == {}
    assert [entry.kind for entry in loaded.stream] == ["config_delta", "chat_request"]


# -------------------------------------------------------------- global entries


def test_global_and_unknown_entries_are_kept_verbatim_in_place(tmp_path: Path) -> None:
    """config_delta, compaction and unknown entries load in place and save unchanged."""
    entries = [
        {"event_id": "d0", "type": "config_delta", "timestamp": STAMP, "delta": {"a": 1}},
        {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
        {
            "event_id": "k1",
            "type": "compaction",
            "timestamp": STAMP,
            "from_turn": 0,
            "to_turn": 1,
            "summary": "we talked",
            "extra_from_newer_writer": [1],
        },
        {"type": "future_kind", "timestamp": "not even a timestamp", "blob": {"z": [None]}},
        {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
    ]
    path = tmp_path / "events.json"
    path.write_bytes(dump(entries))
    conversation = load_conversation(tmp_path, clock=FixedClock(), new_id=CountingIds())
    kinds = [entry.kind for entry in conversation.stream]
    assert kinds == ["config_delta", "turn_start", "compaction", "future_kind", "chat_request"]
    unknown = conversation.stream[3]
    assert isinstance(unknown, UnknownEntry)
    assert unknown.raw == entries[3]
    assert unknown.event_id is None
    assert conversation.id_repairs.total == 0
    conversation.stream.append(ChatResponse.message("hello"))
    save_conversation(conversation)
    assert orjson.loads(path.read_bytes())[:5] == entries


def test_unknown_entries_that_share_an_id_survive_sanitize_and_save(tmp_path: Path) -> None:
    """A newer writer's repeated ids are its own: kept, and the stream stays editable."""
    future = [
        {"event_id": "f1", "type": "future_kind", "timestamp": STAMP, "n": 1},
        {"event_id": "f1", "type": "future_kind", "timestamp": STAMP, "n": 2},
    ]
    entries = [
        {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
        {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
        *future,
        {"event_id": "t2", "timestamp": STAMP, "type": "turn_start"},
    ]
    path = tmp_path / "events.json"
    path.write_bytes(dump(entries))
    conversation = load_conversation(tmp_path, clock=FixedClock(), new_id=CountingIds())
    report = coordinator.sanitize(conversation.stream)
    assert report.changed  # the trailing empty turn goes
    save_conversation(conversation)
    assert orjson.loads(path.read_bytes()) == entries[:4]


def _greeting() -> Conversation:
    """A new conversation with metadata, a base configuration and one chat request."""
    conversation = Conversation.new(
        metadata={"title": "t"}, base_config=BASE, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(ChatRequest(content="hi"))
    return conversation


def _nested(depth: int) -> dict[str, JsonValue]:
    value: dict[str, JsonValue] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("fresh", [True, False], ids=["new directory", "over a saved one"])
def test_a_value_too_deep_to_write_is_refused_naming_the_entry_and_nothing_is_written(
    tmp_path: Path, fresh: bool
) -> None:
    """A record holds 254 levels, as orjson writes; in the file's entry it is deeper: named."""
    conversation = _greeting()
    if not fresh:
        save_conversation(conversation, tmp_path)
    before = _snapshot(tmp_path)
    arguments = _nested(WRITE_DEPTH - 1)  # and the innermost object: 254 levels
    conversation.stream.append(ToolCallRequest(id="c", name="n", arguments=arguments))
    conversation.metadata = {"title": "changed"}
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, tmp_path)
    assert caught.value.index == 1
    assert str(caught.value).startswith(f"{tmp_path / 'events.json'}: entry 1: cannot be written")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["metadata.json", "base_config.json"])
def test_metadata_json_cannot_hold_is_refused_before_any_file_is_written(
    tmp_path: Path, name: str
) -> None:
    """A caller's metadata or base configuration that JSON cannot hold fails the whole save."""
    conversation = _greeting()
    save_conversation(conversation, tmp_path)
    before = _snapshot(tmp_path)
    conversation.stream.append(ChatResponse.message("more"))
    broken: Any = {"tags": {"a", "b"}} if name == "metadata.json" else _nested(300)
    if name == "metadata.json":
        conversation.metadata = broken
    else:
        conversation._base_config = broken
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / name}: cannot be written")
    assert caught.value.index is None
    assert _snapshot(tmp_path) == before


# ------------------------------------------------------ where a stream goes


def _with_backup(directory: Path) -> Path:
    """A current-layout conversation with a backup.json holding another stream beside it."""
    _current(directory)
    backup = directory / "backup.json"
    backup.write_bytes(
        dump([{"event_id": "b1", "timestamp": STAMP, "type": "chat_request", "content": "old"}])
    )
    return backup


@pytest.mark.parametrize("where", ["default", "directory", "events.json"])
def test_a_stream_read_from_another_file_is_never_saved_over_events_json(
    tmp_path: Path, where: str
) -> None:
    """Loaded from backup.json, it cannot replace events.json: refused naming both, no write."""
    directory = tmp_path / "conv"
    backup = _with_backup(directory)
    conversation = load_conversation(backup, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    before = _snapshot(directory)
    path = {"default": None, "directory": directory, "events.json": directory / "events.json"}
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, path[where])
    assert str(caught.value).startswith(
        f"{directory / 'events.json'}: is not the file this conversation's stream was read "
        f"from ({backup}); not overwriting it"
    )
    assert _snapshot(directory) == before


def test_a_stream_read_from_another_file_may_be_saved_as_a_copy(tmp_path: Path) -> None:
    """Saved to another directory, it is that directory's stream from then on."""
    directory = tmp_path / "conv"
    backup = _with_backup(directory)
    before = _snapshot(directory)
    conversation = load_conversation(backup, clock=FixedClock(), new_id=CountingIds())
    copy = tmp_path / "restored"
    save_conversation(conversation, copy)
    assert labels_of(copy) == ["chat_request"]
    conversation.stream.append(ChatResponse.message("hello"))
    assert save_conversation(conversation).written == (copy / "events.json",)
    assert _snapshot(directory) == before


def test_a_stream_read_from_another_file_is_not_saved_back_over_events_json_later(
    tmp_path: Path,
) -> None:
    """Saved as a copy first, it still cannot replace the directory's own stream."""
    directory = tmp_path / "conv"
    backup = _with_backup(directory)
    before = _snapshot(directory)
    conversation = load_conversation(backup, clock=FixedClock(), new_id=CountingIds())
    save_conversation(conversation, tmp_path / "elsewhere")
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation, directory)
    assert "holds what this conversation was not loaded from" in str(caught.value)
    assert _snapshot(directory) == before


def test_a_save_elsewhere_moves_the_conversation_there(tmp_path: Path) -> None:
    """As "save as" does: the next save without a path writes the new directory."""
    directory = _current(tmp_path / "conv")
    before = _snapshot(directory)
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    save_conversation(conversation, tmp_path / "moved")
    conversation.stream.append(ChatResponse.message("after the move"))
    assert save_conversation(conversation).written == (tmp_path / "moved" / "events.json",)
    assert conversation.path == tmp_path / "moved"
    assert _snapshot(directory) == before


def test_a_stream_put_in_place_of_the_loaded_one_is_saved(tmp_path: Path) -> None:
    """A new stream object is a change, whatever its revision count says."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory)
    conversation.stream = ConversationStream()
    result = save_conversation(conversation)
    assert result.written == (directory / "events.json",)
    assert orjson.loads((directory / "events.json").read_bytes()) == []


# ------------------------------------------------------ values JSON cannot hold


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        (
            {"score": float("nan")},
            "the value at 'score' is a float that is not finite, which JSON cannot hold",
        ),
        (
            {"n": 1, "best": float("-inf")},
            "the value at 'best' is a float that is not finite, which JSON cannot hold",
        ),
        (
            {"stats": {"runs": [1, datetime(2026, 1, 1, tzinfo=UTC)]}},
            "the value at 'stats.runs[1]' is of type datetime, which JSON cannot hold",
        ),
        ({"id": uuid.UUID(int=1)}, "the value at 'id' is of type UUID, which JSON cannot hold"),
        ({"tags": {"a": 1, 2: "b"}}, "the value at 'tags' has a key of type int, not a string"),
    ],
    ids=["nan", "infinity", "datetime", "uuid", "int key"],
)
def test_metadata_that_json_cannot_hold_exactly_is_refused_naming_the_key(
    tmp_path: Path, metadata: dict[Any, Any], problem: str
) -> None:
    """NaN (which orjson writes as null) or a datetime in metadata: refused, nothing written."""
    conversation = _greeting()
    save_conversation(conversation, tmp_path)
    before = _snapshot(tmp_path)
    conversation.stream.append(ChatResponse.message("more"))
    conversation.metadata = metadata
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value) == (
        f"{tmp_path / 'metadata.json'}: cannot be written: {problem}; nothing was saved"
    )
    assert _snapshot(tmp_path) == before


# ------------------------------------------------------ the OS says no


def test_a_directory_that_cannot_be_written_is_said_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OS's refusal is a StreamFormatError naming the file and the reason, OSError as cause."""
    directory = _current(tmp_path / "conv")
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("hello"))
    before = _snapshot(directory)
    refuse_creating_files(monkeypatch, directory)
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value) == (
        f"{directory / 'events.json'}: cannot be written: Permission denied; nothing was saved"
    )
    assert isinstance(caught.value.__cause__, PermissionError)
    assert _snapshot(directory) == before


@pytest.mark.parametrize("by_file", [False, True], ids=["directory", "events.json"])
def test_a_directory_that_cannot_be_searched_is_said_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_file: bool
) -> None:
    """A load that may not look inside the directory raises StreamFormatError, not OSError."""
    directory = _current(tmp_path / "conv")
    refuse_searching(monkeypatch, directory)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(directory / "events.json" if by_file else directory)
    assert str(caught.value) == f"{directory / 'events.json'}: cannot be read: Permission denied"


# ------------------------------------------------------ links


def test_a_linked_events_json_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    """The file the link leads to gets the change; the link is kept, no temp file is left."""
    directory = _current(tmp_path / "conv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = elsewhere / "real-events.json"
    (directory / "events.json").replace(real)
    (directory / "events.json").symlink_to(real)
    conversation = load_conversation(directory, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatResponse.message("through the link"))
    assert save_conversation(conversation).written == (directory / "events.json",)
    assert (directory / "events.json").is_symlink()
    assert (directory / "events.json").readlink() == real
    assert labels_of(directory)[-1] == "chat_response"
    assert orjson.loads(real.read_bytes())[-1]["message"] == "through the link"
    assert sorted(path.name for path in elsewhere.iterdir()) == ["real-events.json"]
    assert save_conversation(conversation).written == ()  # the link's file is known as ours
