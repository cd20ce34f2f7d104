"""Provider visibility: only chat and tool-call events ever reach a model provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from conftest import CountingIds, FixedClock, jp_params
from hypothesis import given
from strategies import conversation_streams, events

from coordinator import ConversationStream, EventEntry, load_conversation
from coordinator.stream import ProviderView
from machines import (
    Answered,
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    is_provider_visible,
)

if TYPE_CHECKING:
    from pathlib import Path

VISIBLE: list[Event] = [
    ChatRequest(content="hi"),
    ChatResponse.message("hello"),
    ChatResponse.reasoning("thinking"),
    ChatResponse.data({"a": 1}),
    ToolCallRequest(id="c1", name="fs_read_file", arguments={"path": "a"}),
    ToolCallResponse(id="c1", content="contents", is_error=False),
]
INVISIBLE: list[Event] = [
    TurnStart(),
    InquiryRequest(
        id="c1.q.1",
        source=InquirySource.tool("fs_modify_file"),
        question=InquiryQuestion(text="Apply?", answer_type=AnswerType.boolean()),
    ),
    Answered(id="c1.q.1", answer=True),
    Cancelled(id="c1.q.1", reason=CancellationReason.USER),
    Redacted(id="c1.pw.1"),
]


@pytest.mark.parametrize("event", VISIBLE)
def test_chat_and_tool_call_events_are_provider_visible(event: Event) -> None:
    """The allowlist: chat requests/responses and tool-call requests/responses."""
    assert is_provider_visible(event)


@pytest.mark.parametrize("event", INVISIBLE)
def test_turn_markers_and_inquiry_records_are_never_provider_visible(event: Event) -> None:
    """Turn starts and every inquiry record are the engine's own bookkeeping."""
    assert not is_provider_visible(event)


@given(events())
def test_visibility_is_exactly_the_allowlist(event: Event) -> None:
    """Any event is visible if and only if it is one of the four allowed kinds."""
    allowed = (ChatRequest, ChatResponse, ToolCallRequest, ToolCallResponse)
    assert is_provider_visible(event) is isinstance(event, allowed)


def test_a_kind_not_on_the_allowlist_is_invisible() -> None:
    """Something the allowlist does not name (a newer kind, say) is not shown."""
    assert not is_provider_visible(object())  # type: ignore[arg-type]


def _mixed_stream() -> ConversationStream:
    stream = ConversationStream(clock=FixedClock(), new_id=CountingIds())
    stream.append_config_delta({"model": "m"})
    for event in [INVISIBLE[0], VISIBLE[0], VISIBLE[4], *INVISIBLE[1:3], VISIBLE[5], VISIBLE[1]]:
        stream.append(event)
    stream.append(INVISIBLE[0])
    stream.append(ChatRequest(content="second turn"))
    stream.append(INVISIBLE[4])
    return stream


def test_the_provider_view_holds_only_visible_events_in_order() -> None:
    """provider_view keeps visible events in stream order and drops everything else."""
    view = _mixed_stream().provider_view(["You are helpful.", "Be brief."])
    assert isinstance(view, ProviderView)
    assert view.system_parts == ("You are helpful.", "Be brief.")
    assert [entry.payload for entry in view.events] == [
        VISIBLE[0],
        VISIBLE[4],
        VISIBLE[5],
        VISIBLE[1],
        ChatRequest(content="second turn"),
    ]


def test_the_provider_view_keeps_the_entries_themselves() -> None:
    """Visible entries are handed over whole (id, timestamp, metadata)."""
    stream = _mixed_stream()
    view = stream.provider_view()
    assert view.system_parts == ()
    assert all(any(entry is kept for kept in stream) for entry in view.events)


@given(conversation_streams())
def test_no_invisible_or_global_entry_ever_reaches_the_provider_view(
    stream: ConversationStream,
) -> None:
    """For any stream, the view is its visible events, in order, less what a link excludes."""
    view = stream.provider_view(["system"])
    left_out = {exclusion.index for exclusion in view.excluded}
    expected = [
        entry.event_id
        for index, entry in enumerate(stream)
        if isinstance(entry, EventEntry)
        and is_provider_visible(entry.payload)
        and index not in left_out
    ]
    assert [entry.event_id for entry in view.events] == expected
    assert all(is_provider_visible(entry.payload) for entry in view.events)
    # Only an unresolved link, or the other half of a tool call it excluded, leaves an event out.
    unresolved = {link.index for link in stream.request_links().unresolved}
    assert all(
        exclusion.index in unresolved or exclusion.closed_over for exclusion in view.excluded
    )


@pytest.mark.parametrize("source", jp_params())
def test_a_real_conversation_shows_no_inquiry_or_turn_marker_to_the_provider(
    source: Path,
) -> None:
    """On real files the view drops every turn_start, inquiry and global entry."""
    stream = load_conversation(source).stream
    kinds = {entry.kind for entry in stream.provider_view().events}
    assert kinds <= {"chat_request", "chat_response", "tool_call_request", "tool_call_response"}
    visible = {"chat_request", "chat_response", "tool_call_request", "tool_call_response"}
    assert len(stream.provider_view().events) == sum(entry.kind in visible for entry in stream)
