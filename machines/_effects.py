"""What a machine step asks its driver to do.

A machine never performs an effect itself: it returns these, and the driver
(``coordinator.ToolCoordinator``) carries them out in order and feeds the
outcome back as the next trigger. None of them holds a secret in a form that
prints: answers to secret questions travel as :class:`SecretValue`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import attrs

from machines._events import ToolCallResponse
from machines._json import JsonValue
from machines._questions import InquirySource, Question
from machines._secret import SecretValue

__all__ = [
    "AskAssistant",
    "CompleteTool",
    "Effect",
    "QueueDeliveryPrompt",
    "QueuePermissionPrompt",
    "QueueQuestion",
    "RunTool",
    "ShowDeliveryPrompt",
    "ShowPermissionPrompt",
    "ShowQuestion",
    "ToolAnswer",
]

#: An answer on its way to a tool: a JSON value, or a secret.
ToolAnswer: TypeAlias = JsonValue | SecretValue


@attrs.frozen(kw_only=True)
class RunTool:
    """Run the tool (again), with ``answers`` keyed by bare question id."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, JsonValue]
    answers: Mapping[str, ToolAnswer]


@attrs.frozen(kw_only=True)
class QueuePermissionPrompt:
    """Wait for the terminal, then fire ``terminal_ready`` on this tool call."""

    tool_call_id: str
    tool_name: str


@attrs.frozen(kw_only=True)
class ShowPermissionPrompt:
    """Ask the person at the terminal whether to run the tool now."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, JsonValue]


@attrs.frozen(kw_only=True)
class QueueQuestion:
    """Wait for the terminal, then fire ``terminal_ready`` with the turn cache's answer."""

    tool_call_id: str
    inquiry_id: str
    tool_name: str
    question: Question


@attrs.frozen(kw_only=True)
class ShowQuestion:
    """Ask the person at the terminal this question now."""

    tool_call_id: str
    inquiry_id: str
    tool_name: str
    source: InquirySource
    question: Question


@attrs.frozen(kw_only=True)
class AskAssistant:
    """Ask the inquiry backend (the model) this question."""

    tool_call_id: str
    inquiry_id: str
    tool_name: str
    question: Question


@attrs.frozen(kw_only=True)
class QueueDeliveryPrompt:
    """Wait for the terminal, then fire ``terminal_ready`` on this tool call."""

    tool_call_id: str
    tool_name: str


@attrs.frozen(kw_only=True)
class ShowDeliveryPrompt:
    """Ask the person at the terminal whether the tool's result may reach the model.

    ``content`` is the result as the model would be told it (masked: a
    secret the tool echoed is not in it); ``is_error`` says the tool failed.
    """

    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool


@attrs.frozen(kw_only=True)
class CompleteTool:
    """The tool call is over; ``response`` is what the model is told."""

    response: ToolCallResponse


#: Anything a step may ask of the driver.
Effect: TypeAlias = (
    RunTool
    | QueuePermissionPrompt
    | ShowPermissionPrompt
    | QueueQuestion
    | ShowQuestion
    | AskAssistant
    | QueueDeliveryPrompt
    | ShowDeliveryPrompt
    | CompleteTool
)
