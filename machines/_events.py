"""The seven conversation events a turn is made of.

Chat requests and responses come from the user and the model, tool-call
requests from the model; tool-call responses and the two inquiry records come
from the machines in this package and nowhere else. ``is_provider_visible`` is
the allowlist of what a model provider may ever see.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from machines._inquiry_records import Answered, Cancelled, InquiryRequest, Redacted
from machines._json import JsonValue
from machines.validators import (
    json_object,
    json_value,
    non_empty_string,
    of_type,
    optional_of_type,
    string,
)

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "ChatResponseKind",
    "Event",
    "ToolCallRequest",
    "ToolCallResponse",
    "TurnStart",
    "is_provider_visible",
]


@attrs.frozen
class TurnStart:
    """Marks where a turn begins."""


def _optional_json_object(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        json_object(instance, attribute, value)


@attrs.frozen(kw_only=True)
class ChatRequest:
    """A message from the user; ``schema`` asks for structured output."""

    content: str = attrs.field(validator=string)
    schema: Mapping[str, JsonValue] | None = attrs.field(
        default=None, validator=_optional_json_object
    )
    author: str | None = attrs.field(default=None, validator=optional_of_type(str))


class ChatResponseKind(enum.Enum):
    """The three things a model response can be; values are the wire keys."""

    MESSAGE = "message"
    REASONING = "reasoning"
    DATA = "data"


def _chat_content(instance: ChatResponse, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.kind is ChatResponseKind.DATA:
        json_value(instance, attribute, value)
    else:
        string(instance, attribute, value)


@attrs.frozen(kw_only=True)
class ChatResponse:
    """A piece of a model response: a message, reasoning, or structured data."""

    kind: ChatResponseKind = attrs.field(validator=of_type(ChatResponseKind))
    content: JsonValue = attrs.field(validator=_chat_content)

    @classmethod
    def message(cls, text: str) -> ChatResponse:
        """Text the model said."""
        return cls(kind=ChatResponseKind.MESSAGE, content=text)

    @classmethod
    def reasoning(cls, text: str) -> ChatResponse:
        """Reasoning the model showed."""
        return cls(kind=ChatResponseKind.REASONING, content=text)

    @classmethod
    def data(cls, value: JsonValue) -> ChatResponse:
        """Structured output."""
        return cls(kind=ChatResponseKind.DATA, content=value)


@attrs.frozen(kw_only=True)
class ToolCallRequest:
    """The model asks to run tool ``name`` with ``arguments``.

    ``id`` may repeat within a turn and across turns (some providers reuse
    synthetic ids); readers pair by id, then by order.
    """

    id: str = attrs.field(validator=non_empty_string)
    name: str = attrs.field(validator=non_empty_string)
    arguments: Mapping[str, JsonValue] = attrs.field(validator=json_object)


@attrs.frozen(kw_only=True)
class ToolCallResponse:
    """What the model is told a tool call produced."""

    id: str = attrs.field(validator=non_empty_string)
    content: str = attrs.field(validator=string)
    is_error: bool = attrs.field(validator=of_type(bool))


#: A conversation event: what a turn is made of.
Event: TypeAlias = (
    TurnStart
    | ChatRequest
    | ChatResponse
    | ToolCallRequest
    | ToolCallResponse
    | InquiryRequest
    | Answered
    | Cancelled
    | Redacted
)

_PROVIDER_VISIBLE = (ChatRequest, ChatResponse, ToolCallRequest, ToolCallResponse)


def is_provider_visible(event: Event) -> bool:
    """Whether a model provider may see ``event``.

    An allowlist: a kind added later is invisible until it is listed here.
    Turn markers and inquiry records are the engine's own bookkeeping.
    """
    return isinstance(event, _PROVIDER_VISIBLE)
