"""The inquiry backend: how a question gets an answer from the model.

The coordinator hands a backend an :class:`InquiryTask` for every question
routed to the assistant (targeted at it, or asked with no terminal present).
A secret question never becomes a task: the machines refuse to route it first.

A backend either returns the answer (a JSON value that fits the question's
answer type) or raises :class:`InquiryBackendError` with a
:class:`BackendErrorKind`. The coordinator maps the kinds to the recorded
cancellation reason as RFD 082's table says: ``CANCELLED`` (and an
``asyncio.CancelledError``) is the user's doing, everything else is a backend
error.

The task's view comes from :func:`inquiry_view`: the conversation sanitized
(on a copy) as before every provider request, except for the calls still
running, which the backend closes itself.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

import attrs

from coordinator._errors import CoordinatorError
from coordinator.stream import (
    ConversationStream,
    InsertionReason,
    ProviderView,
    plan_sanitize,
)
from machines import (
    CancellationReason,
    ChatResponse,
    Question,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from machines import JsonValue

__all__ = [
    "BackendErrorKind",
    "InquiryBackend",
    "InquiryBackendError",
    "InquiryTask",
    "inquiry_view",
    "latest_response_start",
]


class BackendErrorKind(enum.Enum):
    """Why a backend could not answer."""

    #: The request was cancelled (user restart, tool cancel, hard quit).
    CANCELLED = "cancelled"
    #: The provider failed: transport error, HTTP error status, refusal.
    PROVIDER = "provider"
    #: The model replied without the data asked for (no ``answer_inquiry`` call).
    MISSING_STRUCTURED_DATA = "missing_structured_data"
    #: The reply could not be turned into a valid answer (after retries).
    ANSWER_EXTRACTION = "answer_extraction"
    #: Anything else (a scripted backend's catch-all).
    OTHER = "other"

    @property
    def reason(self) -> CancellationReason:
        """The cancellation reason recorded for an inquiry that failed so."""
        if self is BackendErrorKind.CANCELLED:
            return CancellationReason.USER
        return CancellationReason.BACKEND_ERROR


class InquiryBackendError(CoordinatorError):
    """A backend could not answer; ``kind`` says why, the message says how."""

    def __init__(self, kind: BackendErrorKind, message: str) -> None:
        """Describe the failure (never include a secret: none reaches a backend)."""
        self.kind = kind
        super().__init__(message)


@attrs.frozen(kw_only=True)
class InquiryTask:
    """One question for the model.

    ``view`` is the conversation as a provider may see it at the moment of
    asking (inquiry records never appear in it), as :func:`inquiry_view`
    builds it. The tool call ``tool_call_id`` is still open in it, in the
    latest assistant response; the backend closes it on its own copy with a
    ``Tool paused: <question text>`` response before asking.
    """

    inquiry_id: str
    tool_call_id: str
    tool_name: str
    question: Question
    view: ProviderView


class InquiryBackend(Protocol):
    """Something that can answer a question the way the model would."""

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Return the answer to ``task.question`` or raise :class:`InquiryBackendError`."""
        ...


def latest_response_start(events: Sequence[object]) -> int:
    """Where the latest assistant response begins in provider-visible ``events``.

    The response is the last run of chat responses and tool calls, followed
    by nothing but tool results; its calls still without a result are the
    ones running now. ``len(events)`` when the events end otherwise (with a
    chat request, say): then no call is running.
    """
    index = len(events)
    while index and isinstance(events[index - 1], ToolCallResponse):
        index -= 1
    if not index or not isinstance(events[index - 1], ChatResponse | ToolCallRequest):
        return len(events)
    while index and isinstance(events[index - 1], ChatResponse | ToolCallRequest):
        index -= 1
    return index


def inquiry_view(stream: ConversationStream, system_parts: Iterable[str] = ()) -> ProviderView:
    """What a provider may see of ``stream`` when a question is put to the model.

    ``sanitize()`` runs before every provider request: a call an earlier,
    crashed turn left open, or a result whose call is gone, would otherwise
    make the provider refuse every later inquiry. It runs on a copy, so the
    conversation itself is not changed. The calls of the latest assistant
    response that have no result yet are not interrupted but running (the
    asking call is one of them): they are left open, and the backend closes
    them on its copy with ``Tool paused`` or ``Tool still running`` results.
    Events whose request link binds nothing are left out, as the provider
    view leaves them (RFD 098). One linear pass over the stream, per inquiry.
    """
    copy = ConversationStream(stream, duplicated_ids=stream.duplicated_ids)
    plan = plan_sanitize(copy)
    closings = {
        plan.entries[insertion.index].event_id
        for insertion in plan.report.inserted
        if insertion.reason is InsertionReason.INTERRUPTED_TOOL_CALL
    }
    plan.apply()
    # The copy's own projection: what a request link leaves out (RFD 098)
    # and what an overlay patches are the provider view's rules, not this one's.
    view = copy.provider_view(system_parts)
    # The response is found as it stands without sanitize's closings, which
    # would split it; a closing comes right after the call it closes.
    unclosed = [entry for entry in view.events if entry.event_id not in closings]
    start = latest_response_start([entry.payload for entry in unclosed])
    running_from = len(view.events)
    if start < len(unclosed):
        running_from = view.events.index(unclosed[start])
    events = tuple(
        entry
        for position, entry in enumerate(view.events)
        if entry.event_id not in closings or position < running_from
    )
    return ProviderView(view.system_parts, events, view.excluded)
