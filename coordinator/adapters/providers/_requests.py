"""Provider-neutral requests and replies, and how an inquiry request is built.

A :class:`ModelRequest` is everything an adapter turns into one API call:
system parts, conversation events, tool definitions and the tool choice. A
normal request of a turn and an inquiry request are built by the same code
(:func:`turn_request`; :func:`inquiry_request` starts from it), so their system
parts and tool definitions are the same values, and an adapter serializes
those with code that never looks at the events or the tool choice. That is
RFD 033's cache invariant: during an inquiry only the messages grow and the
tool choice changes.

The inquiry's conversation is a copy of the provider view, which
:func:`~coordinator.driver._backend.inquiry_view` has sanitized: the only calls open
in it are those of the latest assistant response, still running. On the copy,
the asking tool's call is closed with ``Tool paused: <question text>`` and
every other of those calls with ``Tool still running`` (providers refuse an
unanswered call), then the question is appended as a user message. A rejected
answer extends the same copy: the model's reply, a result for each call it
made, and the feedback. Nothing of this reaches the stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

import attrs

from coordinator.adapters.providers._messages import (
    OTHER_CALL_NOT_RUN,
    STILL_RUNNING,
    paused_result,
    question_message,
    rejected_result,
    rejection_feedback,
)
from coordinator.adapters.providers._tools import ANSWER_INQUIRY_TOOL, ToolDefinition, turn_tools
from coordinator.driver import latest_response_start
from machines import ChatRequest, ChatResponse, JsonValue, ToolCallRequest, ToolCallResponse
from machines.validators import non_empty_string, optional_of_type, string

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coordinator.driver import InquiryTask
    from coordinator.stream import ProviderView

__all__ = [
    "CallNotOpenError",
    "ModelReply",
    "ModelRequest",
    "ProviderEvent",
    "ReplyToolCall",
    "ToolChoice",
    "after_rejection",
    "inquiry_request",
    "open_tool_calls",
    "turn_request",
]

#: The events a provider may see (the allowlist of ``is_provider_visible``).
ProviderEvent: TypeAlias = ChatRequest | ChatResponse | ToolCallRequest | ToolCallResponse
_VISIBLE = (ChatRequest, ChatResponse, ToolCallRequest, ToolCallResponse)


class CallNotOpenError(ValueError):
    """The view holds no open tool call with the task's ``tool_call_id``."""


@attrs.frozen
class ToolChoice:
    """Whether the model picks a tool itself (``forced`` is ``None``) or must call one."""

    forced: str | None = attrs.field(default=None, validator=optional_of_type(str))

    @classmethod
    def auto(cls) -> ToolChoice:
        """The model decides (every normal request of a turn)."""
        return cls()

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        """The model must call ``name`` (an inquiry request)."""
        return cls(name)


@attrs.frozen(kw_only=True)
class ModelRequest:
    """One call to a model, in no provider's terms."""

    system_parts: tuple[str, ...]
    events: tuple[ProviderEvent, ...]
    tools: tuple[ToolDefinition, ...]
    tool_choice: ToolChoice = attrs.field(factory=ToolChoice.auto)


@attrs.frozen(kw_only=True)
class ReplyToolCall:
    """A tool call in a model's reply.

    ``arguments`` is ``None`` when what the model sent was not a JSON object.
    """

    id: str = attrs.field(validator=non_empty_string)
    name: str = attrs.field(validator=string)
    arguments: Mapping[str, JsonValue] | None = None


@attrs.frozen(kw_only=True)
class ModelReply:
    """What a model answered: its text (maybe empty) and its tool calls, in order."""

    text: str = attrs.field(default="", validator=string)
    tool_calls: tuple[ReplyToolCall, ...] = ()

    def events(self) -> tuple[ChatResponse | ToolCallRequest, ...]:
        """The reply as conversation events (arguments that were not an object become ``{}``)."""
        events: list[ChatResponse | ToolCallRequest] = []
        if self.text:
            events.append(ChatResponse.message(self.text))
        events.extend(
            ToolCallRequest(id=call.id, name=call.name, arguments=dict(call.arguments or {}))
            for call in self.tool_calls
        )
        return tuple(events)


def _provider_events(view: ProviderView) -> tuple[ProviderEvent, ...]:
    # The view is already filtered; narrowing again keeps anything else out
    # even if a view was put together by hand.
    return tuple(entry.payload for entry in view.events if isinstance(entry.payload, _VISIBLE))


def turn_request(view: ProviderView, tools: Iterable[ToolDefinition]) -> ModelRequest:
    """A normal request of the turn: the view, the turn's tools, tool choice auto."""
    return ModelRequest(
        system_parts=view.system_parts,
        events=_provider_events(view),
        tools=turn_tools(tools),
        tool_choice=ToolChoice.auto(),
    )


def _open_calls(events: Iterable[ProviderEvent]) -> list[tuple[int, ToolCallRequest]]:
    """The tool calls no result has answered yet, with their positions, oldest first.

    Ids may repeat (some providers reuse them): a result answers the oldest
    open call with its id.
    """
    open_by_id: dict[str, deque[tuple[int, ToolCallRequest]]] = {}
    for position, event in enumerate(events):
        if isinstance(event, ToolCallRequest):
            open_by_id.setdefault(event.id, deque()).append((position, event))
        elif isinstance(event, ToolCallResponse) and open_by_id.get(event.id):
            open_by_id[event.id].popleft()
    return sorted(
        (located for waiting in open_by_id.values() for located in waiting),
        key=lambda located: located[0],
    )


def open_tool_calls(events: Iterable[ProviderEvent]) -> list[ToolCallRequest]:
    """The tool calls no result has answered yet, oldest first.

    Ids may repeat (some providers reuse them): a result answers the oldest
    open call with its id.
    """
    return [call for _, call in _open_calls(events)]


def inquiry_request(task: InquiryTask, tools: Iterable[ToolDefinition]) -> ModelRequest:
    """The request that puts ``task``'s question to the model, forcing ``answer_inquiry``.

    Only the open calls of the latest assistant response are closed: they are
    the ones running. A call left open in an earlier response was
    interrupted, and sanitizing the view has closed it where it stands.

    Raises :class:`CallNotOpenError` when the asking tool's call is not open
    in the view's latest response.
    """
    base = turn_request(task.view, tools)
    start = latest_response_start(base.events)
    running = [call for position, call in _open_calls(base.events) if position >= start]
    if not any(call.id == task.tool_call_id for call in running):
        raise CallNotOpenError(
            f"tool call {task.tool_call_id!r} is not open in the latest response "
            "of the provider view"
        )
    closing: list[ProviderEvent] = []
    paused = False
    for call in running:
        if call.id == task.tool_call_id and not paused:
            closing.append(
                ToolCallResponse(
                    id=call.id, content=paused_result(task.question.text), is_error=False
                )
            )
            paused = True
        else:
            closing.append(ToolCallResponse(id=call.id, content=STILL_RUNNING, is_error=False))
    closing.append(ChatRequest(content=question_message(task)))
    return attrs.evolve(
        base,
        events=(*base.events, *closing),
        # A turn with tools always carries answer_inquiry; one without cannot ask.
        tools=base.tools or (ANSWER_INQUIRY_TOOL,),
        tool_choice=ToolChoice.tool(ANSWER_INQUIRY_TOOL.name),
    )


def after_rejection(
    request: ModelRequest,
    reply: ModelReply,
    rejected: ReplyToolCall,
    task: InquiryTask,
    reason: str,
) -> ModelRequest:
    """``request`` grown by the rejected ``reply``, a result for each of its calls, and feedback.

    The prefix is unchanged, so a retry reads the cache the first attempt wrote.
    """
    results = [
        ToolCallResponse(
            id=call.id,
            content=rejected_result(reason) if call is rejected else OTHER_CALL_NOT_RUN,
            is_error=True,
        )
        for call in reply.tool_calls
    ]
    feedback = ChatRequest(content=rejection_feedback(task, reason))
    return attrs.evolve(request, events=(*request.events, *reply.events(), *results, feedback))
