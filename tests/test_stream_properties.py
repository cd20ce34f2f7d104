"""Whole-stream properties: save, load, save again changes nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import conversation_streams, json_objects, stream_entries

from coordinator import (
    Conversation,
    ConversationStream,
    EventEntry,
    load_conversation,
    save_conversation,
)
from coordinator.store import Layout
from coordinator.stream import Compaction, ConfigDelta, EventOverlay, StreamEntry, UnknownEntry
from coordinator.wire import decode_stream, encode_stream

if TYPE_CHECKING:
    from machines import JsonValue

IO_SETTINGS = settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])


def envelope(entry: StreamEntry) -> tuple[object, ...]:
    """What a reader sees of an entry: kind, id, timestamp, payload, metadata (or raw)."""
    if isinstance(entry, UnknownEntry):
        return ("unknown", dict(entry.raw))
    if isinstance(entry, EventEntry):
        return (entry.kind, entry.event_id, entry.request_id, entry.timestamp, entry.payload,
                dict(entry.metadata))  # fmt: skip
    if isinstance(entry, ConfigDelta):
        return (entry.kind, entry.event_id, entry.timestamp, dict(entry.delta), entry.flattened,
                entry.reset, entry.unsets)  # fmt: skip
    if isinstance(entry, EventOverlay):
        return (entry.kind, entry.event_id, entry.timestamp, entry.patches)
    assert isinstance(entry, Compaction)
    return (entry.kind, entry.event_id, entry.timestamp, entry.from_turn, entry.to_turn,
            entry.summary, entry.reasoning, entry.tool_calls)  # fmt: skip


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and modification time."""
    return {
        path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in directory.iterdir()
    }


@IO_SETTINGS
@given(
    conversation_streams(),
    st.none() | json_objects(),
    st.none() | json_objects(),
)
def test_a_saved_stream_loads_back_equal_and_resaves_byte_identical(
    stream: ConversationStream,
    metadata: dict[str, JsonValue] | None,
    base_config: dict[str, JsonValue] | None,
) -> None:
    """Save -> load gives equal entries; a second save writes nothing; a copy is identical."""
    conversation = Conversation(stream, metadata=metadata, base_config=base_config)
    with tempfile.TemporaryDirectory() as temp:
        first = Path(temp) / "first"
        save_conversation(conversation, first)
        first_bytes = (first / "events.json").read_bytes()
        assert (
            first_bytes == orjson.dumps(encode_stream(stream), option=orjson.OPT_INDENT_2) + b"\n"
        )

        loaded = load_conversation(first)
        assert [envelope(entry) for entry in loaded.stream] == [
            envelope(entry) for entry in stream
        ]
        assert list(loaded.stream) == list(stream)
        assert loaded.id_repairs.total == 0
        assert loaded.metadata == metadata
        # Without a base configuration an empty one is written: the file marks the layout.
        expected = {} if base_config is None else base_config
        assert (loaded.layout, loaded.base_config) == (Layout.CURRENT, expected)

        before = snapshot(first)
        result = save_conversation(loaded)
        assert result.written == ()
        assert snapshot(first) == before

        second = Path(temp) / "second"
        save_conversation(loaded, second)
        assert (second / "events.json").read_bytes() == first_bytes


@IO_SETTINGS
@given(stream_entries())
def test_a_changed_stream_rewrites_only_the_new_entries(entries: list[StreamEntry]) -> None:
    """After appending to a loaded stream, earlier entries are written exactly as before."""
    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        save_conversation(Conversation(ConversationStream(entries)), directory)
        before = orjson.loads((directory / "events.json").read_bytes())
        loaded = load_conversation(directory)
        loaded.stream.append_config_delta({"model": "m"})
        result = save_conversation(loaded)
        assert result.written == (directory / "events.json",)
        after = orjson.loads((directory / "events.json").read_bytes())
        assert after[:-1] == before
        assert after[-1]["type"] == "config_delta"
        assert after[-1]["delta"] == {"model": "m"}


@given(stream_entries())
def test_the_wire_form_reads_back_without_any_repair(entries: list[StreamEntry]) -> None:
    """A stream's own wire form has usable, unique ids: reading it repairs nothing."""
    wire = orjson.loads(orjson.dumps(encode_stream(ConversationStream(entries))))
    stream, repairs = decode_stream(wire)
    assert repairs.total == 0
    assert list(stream) == entries
