"""What an append builds (coordinator.stream._stream, coordinator.stream._entries).

An append builds its entry by setting its slots when every value is of the
exact type the entry's validators ask for; anything else goes through the
constructor. Either way the entry, and any error, are the constructor's.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from strategies import event_ids, events, timestamps

from coordinator import ConversationStream, EventEntry
from coordinator.stream import Timestamp
from coordinator.stream._entries import new_event_entry
from machines import Answered, ChatRequest, Event, RecordError, TurnStart

STAMP = Timestamp("2026-03-05 19:31:45.7")


class LoudRequest(ChatRequest):
    """A subclass of a record: valid as a payload, though not of a record's exact type."""


@given(event_ids(), timestamps(), events())
def test_an_appended_entry_is_the_one_the_constructor_builds(
    event_id: str, timestamp: Timestamp, payload: Event
) -> None:
    """Built by its slots, an entry equals and validates as the constructor's, metadata empty."""
    entry = new_event_entry(event_id, timestamp, payload)
    assert entry == EventEntry(event_id=event_id, timestamp=timestamp, payload=payload)
    attrs.validate(entry)
    assert entry.metadata == {}


@pytest.mark.parametrize(
    ("event_id", "timestamp", "payload"),
    [
        ("", STAMP, TurnStart()),
        (7, STAMP, TurnStart()),
        ("e1", "2026-03-05 19:31:45.7", TurnStart()),
        ("e1", STAMP, {"type": "turn_start"}),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_as_the_constructor_refuses_it(
    event_id: Any, timestamp: Any, payload: Any
) -> None:
    """Each field's error is the constructor's own, message included."""
    with pytest.raises(RecordError) as built:
        EventEntry(event_id=event_id, timestamp=timestamp, payload=payload)
    with pytest.raises(RecordError, match=f"^{re.escape(str(built.value))}$"):
        new_event_entry(event_id, timestamp, payload)


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
