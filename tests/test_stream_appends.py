"""What an append builds (coordinator.stream._stream, coordinator.stream._entries).

Every entry an append makes is built by :class:`EventEntry`'s constructor, its
timestamp by :class:`Timestamp`'s: an entry that would not pass their
validators cannot be appended, and a refused append leaves the stream as it was.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from conftest import CountingIds, FixedClock
from hypothesis import given
from strategies import events

from coordinator import ConversationStream, EventEntry
from coordinator.stream import Timestamp
from machines import Answered, ChatRequest, Event, RecordError, TurnStart

STAMP = Timestamp("2026-03-05 19:31:45.7")


class LoudRequest(ChatRequest):
    """A subclass of a record: valid as a payload, though not of a record's exact type."""


@given(events())
def test_an_appended_entry_is_the_one_the_constructor_builds(payload: Event) -> None:
    """The entry appended is EventEntry(...) of its id, its clock's stamp and its payload."""
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    entry = stream.append(payload)
    stamp = Timestamp.from_datetime(datetime(2026, 11, 22, 9, 30, 0, tzinfo=UTC))
    assert entry == EventEntry(event_id="e000001", timestamp=stamp, payload=payload)
    attrs.validate(entry)
    assert entry.metadata == {}
    assert stream[-1] is entry


@pytest.mark.parametrize(
    ("payload", "options", "error"),
    [
        (
            {"type": "turn_start"},
            {},
            "EventEntry.payload must be TurnStart or ChatRequest or ChatResponse",
        ),
        (
            TurnStart(),
            {"timestamp": "2026-03-05 19:31:45.7"},
            "EventEntry.timestamp must be Timestamp, not a string",
        ),
        (TurnStart(), {"metadata": {"n": float("nan")}}, "EventEntry.metadata must be a JSON"),
        (TurnStart(), {"new_id": lambda: 7}, "EventEntry.event_id must be a non-empty string"),
        (TurnStart(), {"new_id": str}, "EventEntry.event_id must not be empty"),
    ],
)
def test_an_invalid_entry_cannot_be_appended(
    payload: Any, options: dict[str, Any], error: str
) -> None:
    """A payload, timestamp, metadata or id the entry's validators refuse: nothing appended."""
    stream = ConversationStream(new_id=options.pop("new_id", CountingIds()))
    with pytest.raises(RecordError, match=f"^{re.escape(error)}"):
        stream.append(payload, **options)
    assert (len(stream), stream.revision, stream.current_turn()) == (0, 0, None)


def test_a_subclass_of_a_record_is_appended_through_the_constructor() -> None:
    """A payload the validators accept but not of a record's exact type is kept as given."""
    stream = ConversationStream()
    entry = stream.append(LoudRequest(content="hi"))
    assert type(entry.payload) is LoudRequest
    assert entry.kind == "chat_request"


def test_an_append_with_metadata_keeps_a_copy_of_it() -> None:
    """Metadata given to an append is copied into the entry; none gives an empty object."""
    stream = ConversationStream()
    metadata = {"source": "test"}
    with_metadata = stream.append(Answered(id="c.q.1", answer=True), metadata=metadata)
    metadata["source"] = "changed"
    assert with_metadata.metadata == {"source": "test"}
    assert stream.append(TurnStart()).metadata == {}
