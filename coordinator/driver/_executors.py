"""The executor boundary: where a tool runs, and where provenance is decided.

An :class:`Executor` runs one tool call with the answers gathered so far and
returns :class:`Completed` or :class:`NeedsInput`. ``NeedsInput`` carries the
:class:`~machines.InquirySource` resolved *here*, by code:

- a built-in tool (:class:`BuiltinTool`) may override
  :meth:`BuiltinTool.inquiry_source` (``ask_user`` says ``assistant``);
- a local tool (a command) is always ``tool`` with its own name: nothing it
  prints can change that.

Nothing in configuration reaches this decision. Answers to secret questions
arrive as :class:`~machines.SecretValue` and are revealed only here, on their
way into the tool.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, TypeAlias

import attrs

from machines import InquirySource, Question, SecretValue, ToolAnswer, ToolCallRequest

if TYPE_CHECKING:
    from machines import JsonValue

__all__ = [
    "Ask",
    "BuiltinExecutor",
    "BuiltinOutcome",
    "BuiltinTool",
    "Completed",
    "Executor",
    "ExecutorResult",
    "Failure",
    "NeedsInput",
    "Success",
    "reveal_answers",
]


@attrs.frozen(kw_only=True)
class Completed:
    """The tool finished: ``content`` is what the model is told."""

    content: str
    is_error: bool = False


@attrs.frozen(kw_only=True)
class NeedsInput:
    """The tool stopped to ask ``question``.

    ``source`` is who asked, decided at this boundary; ``accumulated_answers``
    are the answers the tool ran with, keyed by bare question id.
    """

    question: Question
    source: InquirySource
    accumulated_answers: Mapping[str, ToolAnswer]


#: What running a tool once can produce.
ExecutorResult: TypeAlias = Completed | NeedsInput


class Executor(Protocol):
    """Runs one kind of tool."""

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Run ``call`` with ``answers`` (keyed by bare question id)."""
        ...


def reveal_answers(answers: Mapping[str, ToolAnswer]) -> dict[str, JsonValue]:
    """The answers as the tool must see them: secrets revealed, here and nowhere else."""
    return {
        key: value.reveal() if isinstance(value, SecretValue) else value
        for key, value in answers.items()
    }


@attrs.frozen
class Success:
    """A built-in tool finished."""

    content: str


@attrs.frozen
class Failure:
    """A built-in tool failed; ``message`` is what the model is told."""

    message: str


@attrs.frozen
class Ask:
    """A built-in tool needs an answer to ``question`` before it can go on."""

    question: Question


#: What a built-in tool's run can produce.
BuiltinOutcome: TypeAlias = Success | Failure | Ask


class BuiltinTool(abc.ABC):
    """A tool implemented in Python, inside the engine."""

    def inquiry_source(self, name: str) -> InquirySource:
        """Who its questions are recorded as asked by; override for ``ask_user``-like tools."""
        return _tool_source(name)

    @abc.abstractmethod
    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Run once with the model's ``arguments`` and the ``answers`` so far."""


@functools.lru_cache(maxsize=256)
def _tool_source(name: str) -> InquirySource:
    # One per tool name, shared (a source is a value): a tool asks question
    # after question. An invalid name raises, and is not kept.
    return InquirySource.tool(name)


class BuiltinExecutor:
    """The executor boundary for a built-in tool."""

    def __init__(self, tool: BuiltinTool) -> None:
        """Wrap ``tool``."""
        self._tool = tool

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Run the tool; resolve the source of its question here if it asks one."""
        outcome = await self._tool.run(call.arguments, reveal_answers(answers))
        if isinstance(outcome, Ask):
            return NeedsInput(
                question=outcome.question,
                source=self._tool.inquiry_source(call.name),
                accumulated_answers=dict(answers),
            )
        if isinstance(outcome, Failure):
            return Completed(content=outcome.message, is_error=True)
        return Completed(content=outcome.content)
