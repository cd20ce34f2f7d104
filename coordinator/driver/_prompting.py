"""Asking a person: the prompter interface, and a scripted prompter.

The coordinator shows one prompt at a time (the machines queue the rest) and
hands the prompter the effect that asks for it: a
:class:`~machines.ShowPermissionPrompt` or a :class:`~machines.ShowQuestion`.
A prompter answers, or raises :class:`PromptCancelled` when the person
cancels (Ctrl-C, end of input). Any other error a prompter raises is treated
the same way (RFD 082: a prompter failure is indistinguishable from a
cancellation at this vantage point) and logged.

:class:`ScriptedPrompter` plays a person from a script, for tests and for
``inquiry run --answers``. Like the terminal, it hands the answer to a secret
question over as a :class:`~machines.SecretValue`, and never asks to remember
one; no ``repr`` of it or of its script shows a scripted answer, which may be
meant for a secret question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeAlias

import attrs

from coordinator._errors import CoordinatorError
from machines import JsonValue, SecretValue, ShowPermissionPrompt, ShowQuestion, ToolAnswer

__all__ = [
    "Deny",
    "PermissionAnswer",
    "Permit",
    "PromptCancelled",
    "Prompter",
    "QuestionAnswer",
    "ScriptExhaustedError",
    "ScriptedCancel",
    "ScriptedPrompter",
]


class PromptCancelled(Exception):  # noqa: N818 - it is an outcome, not a failure
    """The person cancelled the prompt (Ctrl-C, end of input)."""


@attrs.frozen(kw_only=True)
class Permit:
    """Run the tool: ``y``; ``Y`` (``remember``); ``e`` (edited ``arguments``)."""

    remember: bool = False
    arguments: Mapping[str, JsonValue] | None = None


@attrs.frozen(kw_only=True)
class Deny:
    """Skip the tool: ``n``; ``N`` (``remember``); ``r`` (with a ``reason``)."""

    remember: bool = False
    reason: str | None = None


#: A person's answer to a permission prompt.
PermissionAnswer: TypeAlias = Permit | Deny


@attrs.frozen(kw_only=True)
class QuestionAnswer:
    """A person's answer; ``remember`` it for the rest of the turn (``Y``/``N``)."""

    value: ToolAnswer
    remember: bool = False


class Prompter(Protocol):
    """Something that can ask the person at the terminal."""

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """May the tool run? Raise :class:`PromptCancelled` on cancel."""
        ...

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer the question. Raise :class:`PromptCancelled` on cancel."""
        ...


class ScriptExhaustedError(CoordinatorError):
    """A scripted prompter was asked something its script has no answer for."""


@attrs.frozen(kw_only=True)
class ScriptedCancel:
    """Cancel the prompt, as Ctrl-C would."""

    tool: str | None = None
    question: str | None = None


@attrs.frozen(kw_only=True)
class _Scripted:
    """One scripted reply, for the first prompt it matches.

    ``position`` counts the replies of its kind (permission or question) in
    the order they were scripted, from 0. ``reply`` is not in the ``repr``:
    the answer may be meant for a secret question.
    """

    reply: PermissionAnswer | QuestionAnswer | ScriptedCancel = attrs.field(repr=False)
    tool: str | None
    question: str | None
    permission: bool
    position: int = 0

    def matches(self, *, tool: str, question: str | None) -> bool:
        if self.permission != (question is None):
            return False
        if self.tool is not None and self.tool != tool:
            return False
        return self.question is None or self.question == question


class ScriptedPrompter:
    """A prompter that replies from a script, in order.

    Each reply may name the ``tool`` and the ``question`` id it is for; a
    prompt takes the first unused reply that matches it (an unnamed reply
    matches anything of its kind), so parallel tools get the right answers
    whatever order their prompts come in. ``shown`` lists every prompt.
    """

    def __init__(self) -> None:
        """Start with an empty script."""
        self._script: list[_Scripted] = []
        self._added = {True: 0, False: 0}  # replies scripted so far, by `permission`
        self.shown: list[ShowPermissionPrompt | ShowQuestion] = []

    def _add(
        self,
        reply: PermissionAnswer | QuestionAnswer | ScriptedCancel,
        *,
        tool: str | None,
        question: str | None,
        permission: bool,
    ) -> ScriptedPrompter:
        position = self._added[permission]
        self._added[permission] += 1
        self._script.append(
            _Scripted(
                reply=reply, tool=tool, question=question, permission=permission, position=position
            )
        )
        return self

    def answer(
        self,
        value: ToolAnswer,
        *,
        remember: bool = False,
        tool: str | None = None,
        question: str | None = None,
    ) -> ScriptedPrompter:
        """Answer a question with ``value``."""
        reply = QuestionAnswer(value=value, remember=remember)
        return self._add(reply, tool=tool, question=question, permission=False)

    def cancel(self, *, tool: str | None = None, question: str | None = None) -> ScriptedPrompter:
        """Cancel a question (Ctrl-C)."""
        reply = ScriptedCancel(tool=tool, question=question)
        return self._add(reply, tool=tool, question=question, permission=False)

    def permit(
        self,
        *,
        remember: bool = False,
        arguments: Mapping[str, JsonValue] | None = None,
        tool: str | None = None,
    ) -> ScriptedPrompter:
        """Allow a tool to run (``y``, or ``Y`` with ``remember``)."""
        reply = Permit(remember=remember, arguments=arguments)
        return self._add(reply, tool=tool, question=None, permission=True)

    def deny(
        self, *, remember: bool = False, reason: str | None = None, tool: str | None = None
    ) -> ScriptedPrompter:
        """Skip a tool (``n``, ``N`` with ``remember``, ``r`` with a ``reason``)."""
        reply = Deny(remember=remember, reason=reason)
        return self._add(reply, tool=tool, question=None, permission=True)

    def cancel_permission(self, *, tool: str | None = None) -> ScriptedPrompter:
        """Cancel a permission prompt (Ctrl-C)."""
        reply = ScriptedCancel(tool=tool)
        return self._add(reply, tool=tool, question=None, permission=True)

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        return len(self._script)

    @property
    def unused_permissions(self) -> tuple[int, ...]:
        """The permission replies still unused, by position (0: the first scripted)."""
        return tuple(s.position for s in self._script if s.permission)

    @property
    def unused_answers(self) -> tuple[int, ...]:
        """The question replies (answers and cancellations) still unused, by position."""
        return tuple(s.position for s in self._script if not s.permission)

    def _take(self, *, tool: str, question: str | None) -> _Scripted:
        for index, scripted in enumerate(self._script):
            if scripted.matches(tool=tool, question=question):
                return self._script.pop(index)
        what = f"question {question!r}" if question else "permission to run"
        raise ScriptExhaustedError(f"the script has no reply for {what} of tool {tool!r}")

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Reply to a permission prompt from the script."""
        self.shown.append(prompt)
        reply = self._take(tool=prompt.tool_name, question=None).reply
        if isinstance(reply, Permit | Deny):
            return reply
        raise PromptCancelled

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Reply to a question from the script."""
        self.shown.append(prompt)
        reply = self._take(tool=prompt.tool_name, question=prompt.question.id).reply
        if not isinstance(reply, QuestionAnswer):
            raise PromptCancelled
        if prompt.question.answer_type.is_secret:
            # As the terminal hands a secret over: wrapped, and never to be remembered.
            value = SecretValue(reply.value) if isinstance(reply.value, str) else reply.value
            return QuestionAnswer(value=value, remember=False)
        return reply


def scripted(replies: Iterable[PermissionAnswer | QuestionAnswer]) -> ScriptedPrompter:
    """A scripted prompter replying with ``replies`` in order (unkeyed)."""
    prompter = ScriptedPrompter()
    for reply in replies:
        if isinstance(reply, QuestionAnswer):
            prompter.answer(reply.value, remember=reply.remember)
        elif isinstance(reply, Permit):
            prompter.permit(remember=reply.remember, arguments=reply.arguments)
        else:
            prompter.deny(remember=reply.remember, reason=reply.reason)
    return prompter
