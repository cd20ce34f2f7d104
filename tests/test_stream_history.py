"""What a batch needs from history is kept as the stream grows, and set by a load (issue 37).

The stream keeps where its last turn starts and that turn's latest
``chat_request``; these tests hold what it keeps to what reading every entry
gives, on every stream. (That keeping them costs a turn the same at turn
10,000 as at turn 1 is a benchmark's to show: ``tests/benchmarks/bench_history.py``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conftest import CountingIds, FixedClock, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import events, stream_entries

from coordinator import ConversationStream, EventEntry
from coordinator.wire import decode_stream, encode_stream
from machines import ChatRequest, TurnStart

if TYPE_CHECKING:
    from coordinator.stream import StreamEntry
    from machines import Event


def latest_request(stream: ConversationStream) -> str | None:
    """The last turn's latest chat_request id, read from every entry."""
    latest = None
    for entry in stream:
        if isinstance(entry, EventEntry):
            if isinstance(entry.payload, TurnStart):
                latest = None
            elif isinstance(entry.payload, ChatRequest):
                latest = entry.event_id
    return latest


def assert_kept_as_read(stream: ConversationStream) -> None:
    """The current turn, the turn count and the active request agree with the whole stream."""
    turns = stream.turns()
    assert stream.current_turn() == (turns[-1] if turns else None)
    assert stream.turn_count == len(turns)
    assert stream.active_request_id == latest_request(stream)


@settings(max_examples=examples(150))
@given(stream_entries(), st.lists(events(), max_size=8))
def test_what_the_stream_keeps_is_what_reading_it_gives(
    entries: list[StreamEntry], appended: list[Event]
) -> None:
    """Built, appended to, replaced or loaded, the kept turn and request are the read ones."""
    stream = ConversationStream(entries, clock=FixedClock(), new_id=CountingIds())
    assert_kept_as_read(stream)
    for payload in appended:
        stream.append(payload)
        assert_kept_as_read(stream)
    stream.replace(list(stream)[: len(stream) // 2])
    assert_kept_as_read(stream)
    loaded, _ = decode_stream(encode_stream(stream))
    assert_kept_as_read(loaded)


def test_a_stream_without_turns_has_no_current_turn_until_an_event() -> None:
    """No event, no turn; an event before any turn_start opens the implicit leading turn."""
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    stream.append_config_delta({"model": "m"})
    assert stream.current_turn() is None
    assert stream.turn_count == 0
    stream.append(ChatRequest(content="hi"))
    turn = stream.current_turn()
    assert turn is not None
    assert (turn.index, turn.start, turn.marked) == (0, 0, False)
    stream.append(TurnStart())
    turn = stream.current_turn()
    assert turn is not None
    assert (turn.index, turn.start, turn.marked, stream.turn_count) == (1, 2, True, 2)
