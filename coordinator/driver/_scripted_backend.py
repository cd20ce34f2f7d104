"""A scripted inquiry backend: the model's answers, played from a script.

For tests and for ``inquiry run --answers``: answers, cancellations and each
kind of backend failure, in order, each optionally keyed by tool and question
id (a task takes the first unused entry that matches it). ``tasks`` records
every task received, so a test can show what was (and was not) sent, and
``unused`` names the entries no task took.
"""

from __future__ import annotations

import attrs

from coordinator.driver._backend import BackendErrorKind, InquiryBackendError, InquiryTask
from machines import JsonValue

__all__ = ["ScriptedInquiryBackend"]


@attrs.frozen(kw_only=True)
class _Entry:
    value: JsonValue = None
    failure: BackendErrorKind | None = None
    message: str = ""
    tool: str | None = None
    question: str | None = None
    position: int = 0  # in the order scripted, from 0

    def matches(self, task: InquiryTask) -> bool:
        if self.tool is not None and self.tool != task.tool_name:
            return False
        return self.question is None or self.question == task.question.id


class ScriptedInquiryBackend:
    """Answers questions for the model from a script."""

    def __init__(self) -> None:
        """Start with an empty script."""
        self._script: list[_Entry] = []
        self._added = 0
        self.tasks: list[InquiryTask] = []

    def _add(self, entry: _Entry) -> ScriptedInquiryBackend:
        self._script.append(attrs.evolve(entry, position=self._added))
        self._added += 1
        return self

    def respond(
        self, value: JsonValue, *, tool: str | None = None, question: str | None = None
    ) -> ScriptedInquiryBackend:
        """Answer a question with ``value``."""
        return self._add(_Entry(value=value, tool=tool, question=question))

    def fail(
        self,
        kind: BackendErrorKind,
        message: str = "scripted failure",
        *,
        tool: str | None = None,
        question: str | None = None,
    ) -> ScriptedInquiryBackend:
        """Fail a question with ``kind`` (``CANCELLED`` is the user's cancellation)."""
        return self._add(_Entry(failure=kind, message=message, tool=tool, question=question))

    @property
    def remaining(self) -> int:
        """How many scripted entries are still unused."""
        return len(self._script)

    @property
    def unused(self) -> tuple[int, ...]:
        """The scripted entries still unused, by position (0: the first scripted)."""
        return tuple(entry.position for entry in self._script)

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Answer ``task`` from the script (the :class:`InquiryBackend` protocol)."""
        self.tasks.append(task)
        for index, entry in enumerate(self._script):
            if entry.matches(task):
                del self._script[index]
                if entry.failure is not None:
                    raise InquiryBackendError(entry.failure, entry.message)
                return entry.value
        raise InquiryBackendError(
            BackendErrorKind.OTHER,
            f"the script has no answer for question {task.question.id!r} of tool "
            f"{task.tool_name!r}",
        )
