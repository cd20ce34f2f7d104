"""Turns: delimited by turn_start, with an implicit leading turn for older files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import jp_params

from coordinator import ConversationStream, load_conversation
from coordinator.wire import decode_stream
from machines import TurnStart

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-03-05 19:31:45.7"
WIRE: dict[str, dict[str, Any]] = {
    "ts": {"type": "turn_start"},
    "chat": {"type": "chat_request", "content": "hi"},
    "msg": {"type": "chat_response", "message": "hello"},
    "cfg": {"type": "config_delta", "delta": {}},
    "new": {"type": "future_kind"},
}


def _stream(*labels: str) -> ConversationStream:
    raw = [{"timestamp": STAMP, **WIRE[label]} for label in labels]
    stream, _ = decode_stream(raw)
    return stream


def _shape(stream: ConversationStream) -> list[tuple[int, int, bool]]:
    return [(turn.start, turn.stop, turn.marked) for turn in stream.turns()]


@pytest.mark.parametrize(
    ("labels", "turns"),
    [
        pytest.param((), [], id="empty"),
        pytest.param(("cfg",), [], id="only-global"),
        pytest.param(("chat", "msg"), [(0, 2, False)], id="no-turn-start"),
        pytest.param(("cfg", "chat", "msg"), [(0, 3, False)], id="config-then-events"),
        pytest.param(("ts", "chat", "msg"), [(0, 3, True)], id="one-marked"),
        pytest.param(("cfg", "ts", "chat"), [(1, 3, True)], id="global-before-first-marker"),
        pytest.param(
            ("chat", "msg", "ts", "chat"), [(0, 2, False), (2, 4, True)], id="implicit-then-marked"
        ),
        pytest.param(
            ("ts", "chat", "ts", "ts", "chat"),
            [(0, 2, True), (2, 3, True), (3, 5, True)],
            id="empty-turn-mid-stream",
        ),
        pytest.param(
            ("ts", "chat", "cfg", "new", "msg", "ts"),
            [(0, 5, True), (5, 6, True)],
            id="globals-stay-inside-their-turn",
        ),
    ],
)
def test_turns_start_at_each_turn_start(
    labels: tuple[str, ...], turns: list[tuple[int, int, bool]]
) -> None:
    """Each turn_start opens a turn; events before the first form an unmarked turn."""
    assert _shape(_stream(*labels)) == turns


def test_a_turn_holds_its_entries_and_yields_only_events() -> None:
    """Turn.entries is the slice of the stream; Turn.events skips global entries."""
    stream = _stream("ts", "chat", "cfg", "new", "msg")
    (turn,) = stream.turns()
    assert turn.entries == tuple(stream)
    assert [entry.kind for entry in turn.events] == ["turn_start", "chat_request", "chat_response"]


def test_the_current_turn_is_the_last_one() -> None:
    """New events go to the last turn; there is none before the first."""
    assert _stream().current_turn() is None
    current = _stream("chat", "ts", "msg").current_turn()
    assert current is not None
    assert (current.index, current.start, current.marked) == (1, 1, True)


def test_appending_a_turn_start_opens_a_new_turn() -> None:
    """The turn index follows appends, marked and implicit alike."""
    stream = _stream("chat")
    assert _shape(stream) == [(0, 1, False)]
    stream.append(TurnStart())
    assert _shape(stream) == [(0, 1, False), (1, 2, True)]


@pytest.mark.parametrize("source", jp_params())
def test_real_conversations_have_one_turn_per_turn_start_plus_any_leading_one(
    source: Path,
) -> None:
    """The turn count is the turn_starts, plus one when events precede the first."""
    raw = orjson.loads((source / "events.json").read_bytes())
    events = {"chat_request", "chat_response", "tool_call_request", "tool_call_response"}
    events |= {"inquiry_request", "inquiry_response"}
    markers = [index for index, entry in enumerate(raw) if entry["type"] == "turn_start"]
    first = markers[0] if markers else len(raw)
    leading = any(entry["type"] in events for entry in raw[:first])
    assert len(load_conversation(source).stream.turns()) == len(markers) + leading
