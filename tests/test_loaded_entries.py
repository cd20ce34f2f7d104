"""What a load builds (coordinator.wire._stream_codec, coordinator.stream._entries).

Every entry a load makes is built by its constructor, its timestamp by
:class:`Timestamp`'s, every validator on: what they refuse cannot be loaded,
and the error names the entry. A loaded entry is then given the object it was
read from, to be written back as read; an entry made from it has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import orjson
import pytest
from conftest import CountingIds, jp_params
from hypothesis import given
from reliability_inputs import own_events
from strategies import timestamp_texts

from coordinator.stream import EventEntry, Timestamp, UnknownEntry
from coordinator.stream._entries import with_loaded_form
from coordinator.wire import EntryDecodeError, decode_stream, encode_stream
from machines import ChatRequest, RecordError, TurnStart
from machines._json import WRITE_DEPTH

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-03-05 19:31:45.7"


def _deep(depth: int) -> Any:
    """An object ``depth`` containers deep."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def _entry(**fields: Any) -> dict[str, Any]:
    return {"timestamp": STAMP, **fields}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(
            _entry(type="turn_start", timestamp="2026-02-30 10:00:00.0"),
            "turn_start: timestamp '2026-02-30 10:00:00.0' is not 'YYYY-MM-DD HH:MM:SS[.f]'"
            " or RFC 3339",
            id="no-such-day",
        ),
        pytest.param(
            _entry(type="config_delta", timestamp=17, delta={}),
            "config_delta: timestamp must be a string, not an integer",
            id="timestamp-not-text",
        ),
        pytest.param(
            _entry(type="chat_response", message="ok", metadata={"n": float("nan")}),
            "chat_response: EventEntry.metadata must be a JSON value (str, number, bool, null,"
            " list, dict): the value at 'n' is a float that is not finite",
            id="metadata-not-json",
        ),
        pytest.param(
            _entry(type="turn_start", metadata={"deep": _deep(WRITE_DEPTH)}),
            "turn_start: EventEntry.metadata must be a JSON value (str, number, bool, null,"
            " list, dict): the value at 'deep.k.k.k.k.k.k.k...' (254 levels down) is nested"
            " too deeply",
            id="metadata-too-deep",
        ),
        pytest.param(
            _entry(type="tool_call_request", id="c", name="n", arguments=_deep(10_000)),
            "tool_call_request: ToolCallRequest.arguments must be a JSON value (str, number,"
            " bool, null, list, dict): the value at 'k.k.k.k.k.k.k.k...' (254 levels down) is"
            " nested too deeply",
            id="arguments-far-too-deep",
        ),
        pytest.param(
            _entry(type="compaction", from_turn="0", to_turn=1),
            "compaction: Compaction.from_turn must be int, not a string",
            id="compaction-range-not-int",
        ),
    ],
)
def test_what_a_constructor_refuses_cannot_be_loaded(raw: dict[str, Any], problem: str) -> None:
    """The entry's, timestamp's or record's validator refuses it; the error names the entry."""
    entries = [_entry(type="turn_start"), raw]
    with pytest.raises(EntryDecodeError) as caught:
        decode_stream(entries, new_id=CountingIds())
    assert caught.value.index == 1
    assert caught.value.problem.startswith(problem)


@given(timestamp_texts())
def test_a_loaded_timestamp_is_the_one_its_constructor_builds(text: str) -> None:
    """Whatever form it is stored in, the timestamp loaded equals Timestamp(text)."""
    stream, _ = decode_stream([_entry(type="turn_start", timestamp=text)], new_id=CountingIds())
    entry = stream[0]
    assert isinstance(entry, EventEntry)
    assert entry.timestamp == Timestamp(text)


@pytest.mark.parametrize("path", jp_params())
def test_every_entry_of_a_real_conversation_passes_its_validators(path: Path) -> None:
    """Loaded, every entry of JP's own files is one its constructor accepts, as read."""
    raw = orjson.loads((path / "events.json").read_bytes())
    stream, _ = decode_stream(raw, new_id=CountingIds())
    for entry in stream:
        attrs.validate(entry)
        if not isinstance(entry, UnknownEntry):
            assert entry.timestamp == Timestamp(entry.timestamp.text)


def test_an_entry_made_from_a_loaded_one_is_written_from_its_record() -> None:
    """attrs.evolve or a new record: the object read stays with the entry it was read for."""
    stream, _ = decode_stream(own_events(), new_id=CountingIds())
    index, loaded = next(
        (index, entry)
        for index, entry in enumerate(stream)
        if isinstance(entry, EventEntry) and isinstance(entry.payload, ChatRequest)
    )
    changed = attrs.evolve(loaded, payload=ChatRequest(content="changed"))
    stream.replace([*stream[:index], changed, *stream[index + 1 :]])
    assert encode_stream(stream)[index] == {
        "event_id": loaded.event_id,
        "timestamp": loaded.timestamp.text,
        "type": "chat_request",
        "content": "changed",
    }


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        (["event_id", "e1"], "a loaded form must be an object, not an array"),
        ({"type": "turn_start", "event_id": "e1"}, "must lead with its entry's event_id"),
        ({"event_id": "e2", "type": "turn_start"}, "must lead with its entry's event_id"),
        ({"event_id": "e1", "type": "chat_request"}, "must be a 'turn_start' entry"),
    ],
)
def test_an_entry_is_given_only_the_object_it_was_read_from(stored: Any, problem: str) -> None:
    """A loaded form that is not an object of the entry's id and kind is refused, and not kept."""
    entry = EventEntry(event_id="e1", timestamp=Timestamp(STAMP), payload=TurnStart())
    with pytest.raises(RecordError, match=problem):
        with_loaded_form(entry, stored)
    assert entry._stored is None


def test_an_entry_is_given_its_loaded_form_once() -> None:
    """A loaded entry is a value others hold: a second loaded form is refused, the first kept."""
    stream, _ = decode_stream([_entry(type="turn_start")], new_id=CountingIds())
    loaded = stream[0]
    assert isinstance(loaded, EventEntry)
    before = encode_stream(stream)
    with pytest.raises(RecordError, match="an entry is given its loaded form once"):
        with_loaded_form(loaded, {"event_id": loaded.event_id, "type": "turn_start"})
    assert encode_stream(stream) == before
