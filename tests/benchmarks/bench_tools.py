"""The tools the benchmarks run: built-ins that ask questions and need no one to wait for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator import Ask, BuiltinTool, Success

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from coordinator.driver import BuiltinOutcome
    from machines import JsonValue, Question

__all__ = ["AskInTurn"]


class AskInTurn(BuiltinTool):
    """Asks its questions one run at a time, in order, then succeeds."""

    def __init__(self, questions: Sequence[Question]) -> None:
        """Ask ``questions``."""
        self.questions = tuple(questions)

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """The first unanswered question, or success."""
        del arguments
        for question in self.questions:
            if question.id not in answers:
                return Ask(question)
        return Success("done")
