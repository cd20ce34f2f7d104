"""Properties of ``sanitize()`` over generated streams of every shape it must handle.

The streams mix turn starts, chat requests and responses, tool calls and
inquiries whose ids collide within and across turns (a small id pool, legacy
two-segment ids beside three-segment ones), and global entries anywhere; some
have no chat request at all.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from reader_streams import (
    Item,
    answer,
    ask,
    call,
    cancel,
    chat,
    compaction,
    config,
    make_stream,
    redact,
    reply,
    result,
    turn,
    unknown,
)

from coordinator import EventEntry, pair_events, sanitize
from coordinator.stream import plan_sanitize
from machines import ChatRequest, TurnStart

_INQUIRY_IDS = ("call_1.confirm", "call_1.confirm.1", "call_2.confirm.1")
_TOOL_IDS = ("call_1", "fs_modify_file_0")


def _conversation_items(*, with_chat: bool) -> st.SearchStrategy[Item]:
    inquiry_ids = st.sampled_from(_INQUIRY_IDS)
    tool_ids = st.sampled_from(_TOOL_IDS)
    items: list[st.SearchStrategy[Item]] = [
        st.just(turn()),
        st.just(reply()),
        inquiry_ids.map(ask),
        inquiry_ids.map(answer),
        inquiry_ids.map(cancel),
        inquiry_ids.map(redact),
        tool_ids.map(call),
        tool_ids.map(result),
        # Global entries are makers: each call builds a new entry object.
        st.sampled_from([config(), compaction(), unknown()]),
    ]
    if with_chat:
        items.append(st.just(chat()))
    return st.one_of(items)


def _streams() -> st.SearchStrategy[list[Item]]:
    return st.booleans().flatmap(
        lambda with_chat: st.lists(_conversation_items(with_chat=with_chat), max_size=40)
    )


@given(_streams())
def test_sanitize_is_idempotent(items: list[Item]) -> None:
    """A sanitized stream is a fixed point: sanitizing it again changes nothing."""
    stream = make_stream(*items)
    sanitize(stream)
    once = list(stream)
    revision = stream.revision
    again = plan_sanitize(stream)
    assert not again.report.changed
    assert list(again.entries) == once
    assert not sanitize(stream).changed
    assert stream.revision == revision


@given(_streams())
def test_global_entries_are_never_touched(items: list[Item]) -> None:
    """Every global entry stays, as the same object, in the same order relative to the others."""
    stream = make_stream(*items)
    before = [entry for entry in stream if not isinstance(entry, EventEntry)]
    sanitize(stream)
    after = [entry for entry in stream if not isinstance(entry, EventEntry)]
    assert len(after) == len(before)
    assert all(a is b for a, b in zip(after, before, strict=True))


@given(_streams())
def test_kept_entries_are_a_subsequence_and_the_report_is_exact(items: list[Item]) -> None:
    """The result is the input minus the reported removals plus the reported insertions."""
    stream = make_stream(*items)
    before = list(stream)
    plan = plan_sanitize(stream)
    report = plan.report
    removed = {removal.index for removal in report.removed}
    inserted = {insertion.index for insertion in report.inserted}
    for removal in report.removed:
        assert before[removal.index].event_id == removal.event_id
    for insertion in report.inserted:
        assert plan.entries[insertion.index] is insertion.entry
    kept = [entry for index, entry in enumerate(plan.entries) if index not in inserted]
    expected = [entry for index, entry in enumerate(before) if index not in removed]
    assert len(kept) == len(expected)
    assert all(a is b for a, b in zip(kept, expected, strict=True))


@given(_streams())
def test_every_turn_ends_fully_paired(items: list[Item]) -> None:
    """After sanitize every inquiry and tool call of every turn has its response."""
    stream = make_stream(*items)
    sanitize(stream)
    pairing = pair_events(stream)
    for turn_pairing in (*pairing.inquiries.turns, *pairing.tool_calls.turns):
        assert turn_pairing.pending == ()
        assert turn_pairing.orphaned == ()


@given(_streams())
def test_chat_requests_are_kept_and_lead_their_turn(items: list[Item]) -> None:
    """No chat request is lost; when there is one, the events start turn start, chat request."""
    stream = make_stream(*items)
    chats = [e for e in stream if isinstance(e, EventEntry) and isinstance(e.payload, ChatRequest)]
    sanitize(stream)
    events = [entry for entry in stream if isinstance(entry, EventEntry)]
    assert [e for e in events if isinstance(e.payload, ChatRequest)] == chats
    if chats:
        assert isinstance(events[0].payload, TurnStart)
        assert events[1] is chats[0]
    if events:
        assert not isinstance(events[-1].payload, TurnStart)
