"""Tool definitions, and the built-in ``answer_inquiry`` tool of RFD 033.

``answer_inquiry`` is how the model answers a question a tool asked. It is in
**every** request of a turn that has tools (not only in inquiry requests), so
the tool definitions, which head the provider's prompt-cache prefix, never
change when an inquiry starts. Its schema is generic (two strings) for the same
reason: a schema typed per question would change the definitions per inquiry.
The answer's form is stated in the question message and checked afterwards.

The model may call ``answer_inquiry`` when no inquiry is pending; the tool then
fails with :data:`ANSWER_INQUIRY_OUTSIDE_INQUIRY`. Running it as a built-in
executor is the coordinator's job, not this module's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from machines import JsonValue, RecordError
from machines.validators import json_value, non_empty_string, of_type, string

__all__ = [
    "ANSWER_INQUIRY",
    "ANSWER_INQUIRY_OUTSIDE_INQUIRY",
    "ANSWER_INQUIRY_TOOL",
    "ToolDefinition",
    "turn_tools",
]


def _schema_object(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not dict:
        raise RecordError(
            f"{type(instance).__name__}.{attribute.name} must be a JSON schema object, "
            f"not {type(value).__name__}"
        )
    json_value(instance, attribute, value)


def _private_copy(value: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    # A definition is serialized afresh for every request: a caller mutating the
    # dict it passed in must not be able to change what later requests carry.
    return copy.deepcopy(value) if isinstance(value, dict) else value


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """A tool the model may call: its name, description and JSON schema.

    ``parameters`` is the JSON schema of the arguments (an object schema).
    ``strict`` asks the provider to hold the model to that schema exactly.
    """

    name: str = attrs.field(validator=non_empty_string)
    description: str = attrs.field(default="", validator=string)
    parameters: Mapping[str, JsonValue] = attrs.field(
        converter=_private_copy, validator=_schema_object
    )
    strict: bool = attrs.field(default=False, validator=of_type(bool))


#: The name of the built-in tool the model answers inquiries with.
ANSWER_INQUIRY = "answer_inquiry"

#: The ``answer_inquiry`` definition, exactly as RFD 033 gives it.
ANSWER_INQUIRY_TOOL = ToolDefinition(
    name=ANSWER_INQUIRY,
    description=(
        "Answer a question from a tool that needs additional input. Call this tool "
        "when the system indicates a tool requires your input. Use the inquiry_id "
        "from the question and provide your answer as a JSON string."
    ),
    strict=True,
    parameters={
        "type": "object",
        "properties": {
            "inquiry_id": {
                "type": "string",
                "description": "The inquiry ID from the question prompt.",
            },
            "answer": {
                "type": "string",
                "description": "Your answer, formatted as instructed in the question prompt.",
            },
        },
        "required": ["inquiry_id", "answer"],
        "additionalProperties": False,
    },
)

#: The error result of an ``answer_inquiry`` call made when no inquiry is pending.
ANSWER_INQUIRY_OUTSIDE_INQUIRY = (
    "answer_inquiry answers a question a tool asked you, and no question is pending: "
    "this call did nothing. Continue with your task; call answer_inquiry only when "
    "a message asks you to answer an inquiry."
)


def turn_tools(tools: Iterable[ToolDefinition]) -> tuple[ToolDefinition, ...]:
    """The tool definitions every request of a turn carries.

    The embedder's ``tools`` in their order, then ``answer_inquiry``; nothing
    when no tool is enabled (a turn without tools cannot ask a question). An
    embedder tool of the same name must be the built-in definition itself.
    """
    enabled = tuple(tools)
    if not enabled:
        return ()
    for tool in enabled:
        if tool.name == ANSWER_INQUIRY and tool != ANSWER_INQUIRY_TOOL:
            raise ValueError(
                f"tool name {ANSWER_INQUIRY!r} is reserved for the built-in inquiry tool"
            )
    if ANSWER_INQUIRY_TOOL in enabled:
        return enabled
    return (*enabled, ANSWER_INQUIRY_TOOL)
