"""What an embedder may do with a stream's entries and its wire form (coordinator.stream._stream).

The wire form a stream hands out is the caller's to change; the stream's own
entries are values, and its ids stay unique whoever supplies them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import pytest
from conftest import CountingIds, FixedClock

from coordinator import Conversation, ConversationStream, load_conversation, save_conversation
from coordinator.stream import UnknownEntry
from coordinator.wire import encode_stream
from machines import ChatRequest, ToolCallRequest, TurnStart
from machines._json import WRITE_DEPTH

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.stream import StreamEntry
    from machines import JsonValue

STAMP = "2026-03-05 19:31:45.7"


def _saved(tmp_path: Path) -> Path:
    conversation = Conversation.new(
        metadata={"title": "t"}, base_config={"a": 1}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ToolCallRequest(id="c1", name="fs", arguments={"path": "a"}))
    save_conversation(conversation, tmp_path)
    return tmp_path


def test_the_wire_form_is_a_copy_the_caller_may_change(tmp_path: Path) -> None:
    """Changing what encode_stream gave changes neither the stream nor what a save writes."""
    directory = _saved(tmp_path)
    before = (directory / "events.json").read_bytes()
    conversation = load_conversation(directory)
    wire = encode_stream(conversation.stream)
    wire[1]["arguments"]["path"] = "TAMPERED"
    wire[0]["type"] = "chat_request"
    assert encode_stream(conversation.stream) == orjson.loads(before)
    conversation.stream.append(ChatRequest(content="more"))
    save_conversation(conversation)
    saved = orjson.loads((directory / "events.json").read_bytes())
    assert saved[:2] == orjson.loads(before)


def test_the_wire_form_of_a_value_nested_past_what_orjson_writes_is_still_a_copy() -> None:
    """A record's value as deep as orjson writes is deeper in its entry: copied all the same."""
    deep: list[JsonValue] = []
    for _ in range(WRITE_DEPTH - 2):  # within the arguments object: 254 levels
        deep = [deep]
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    stream.append(ToolCallRequest(id="c1", name="fs", arguments={"deep": deep}))
    wire = encode_stream(stream)
    wire[0]["arguments"]["deep"] = []
    assert encode_stream(stream)[0]["arguments"]["deep"] == deep


def _unknown(event_id: str) -> UnknownEntry:
    return UnknownEntry({"type": "summary", "event_id": event_id, "timestamp": STAMP})


def test_a_known_entry_shares_its_id_with_no_unknown_one_in_either_order() -> None:
    """A load would give the known entry a new id: the stream refuses it up front."""
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    known = stream.append(TurnStart())
    orders: list[list[StreamEntry]] = [
        [known, _unknown(known.event_id)],
        [_unknown(known.event_id), known],
    ]
    for entries in orders:
        with pytest.raises(ValueError, match="entry 1 repeats event id"):
            stream.replace(entries)
    assert list(stream) == [known]


def test_unknown_entries_may_share_an_id_among_themselves() -> None:
    """Kept verbatim: a newer writer's repeated id is its own."""
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    stream.replace([_unknown("x1"), _unknown("x1")])
    assert len(stream) == 2


@pytest.mark.parametrize("bad", [TurnStart(), "an entry", None], ids=["payload", "str", "none"])
def test_something_that_is_not_an_entry_is_refused_naming_its_position(bad: object) -> None:
    """A payload given where an entry belongs, say: a TypeError naming the index."""
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    first = stream.append(TurnStart())
    with pytest.raises(TypeError, match=f"entry 1 is a {type(bad).__name__}, not a stream entry"):
        stream.replace([first, bad])  # type: ignore[list-item]
    assert list(stream) == [first]


def test_an_id_source_that_repeats_itself_is_told_so_rather_than_asked_for_ever(
    tmp_path: Path,
) -> None:
    """A constant new_id: the second fresh id cannot be found, at append as at load."""
    asked: list[str] = []

    def fixed() -> str:
        asked.append("fixed")
        return "fixed"

    stream = ConversationStream(new_id=fixed)
    stream.append(TurnStart())
    with pytest.raises(ValueError, match=r"new_id gave 1000 event ids in a row .* 'fixed'"):
        stream.append(TurnStart())
    assert len(asked) == 1 + 1000  # the first append's id, then a thousand tries
    assert len(stream) == 1
    (tmp_path / "events.json").write_bytes(
        orjson.dumps([{"timestamp": STAMP, "type": "turn_start"}] * 2)
    )
    with pytest.raises(ValueError, match="new_id gave 1000 event ids in a row"):
        load_conversation(tmp_path, new_id=lambda: "fixed")


def test_an_id_the_stream_holds_is_passed_over_for_the_next_fresh_one() -> None:
    """An id source that gives taken ids a few times: the entry gets the first fresh one."""
    ids = iter(["a", "a", "a", "b", "b", "c"])
    stream = ConversationStream(new_id=lambda: next(ids))
    first, second, third = (stream.append(TurnStart()) for _ in range(3))
    assert [first.event_id, second.event_id, third.event_id] == ["a", "b", "c"]
