"""Asking a person: the prompter interface, and a scripted prompter.

The coordinator shows one prompt at a time (the machines queue the rest) and
hands the prompter the effect that asks for it: a
:class:`~machines.ShowPermissionPrompt`, a :class:`~machines.ShowQuestion`,
or (for a tool whose result mode is ``ask``, to a prompter that is also a
:class:`DeliveryPrompter`) a :class:`~machines.ShowDeliveryPrompt`. A
prompter answers, or raises :class:`PromptCancelled` when the person cancels
(Ctrl-C, end of input). Any other error a prompter raises is treated the
same way (RFD 082: a prompter failure is indistinguishable from a
cancellation at this vantage point) and logged. A prompter that stands in
for the person (an answers file) and has no reply for a prompt raises
:class:`PromptUnanswered`: nobody can answer it, and the tool's detached
policy (RFD 049) decides instead.

:class:`ScriptedPrompter` plays a person from a script, for tests and (made
``from_file``) for ``inquiry run --answers``, whose answers are then
recorded as the answers file's and whose missing replies fall to the
detached policy. Like the terminal, it hands the answer to a secret question
over as a :class:`~machines.SecretValue`, and never asks to remember one; no
``repr`` of it or of its script shows a scripted answer, which may be meant
for a secret question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from coordinator._errors import CoordinatorError
from machines import (
    JsonValue,
    SecretValue,
    ShowDeliveryPrompt,
    ShowPermissionPrompt,
    ShowQuestion,
    ToolAnswer,
)

__all__ = [
    "DeliveryAnswer",
    "DeliveryPrompter",
    "Deny",
    "PermissionAnswer",
    "Permit",
    "PromptCancelled",
    "PromptUnanswered",
    "Prompter",
    "QuestionAnswer",
    "ScriptExhaustedError",
    "ScriptedCancel",
    "ScriptedPrompter",
]


class PromptCancelled(Exception):  # noqa: N818 - it is an outcome, not a failure
    """The person cancelled the prompt (Ctrl-C, end of input)."""


class PromptUnanswered(Exception):  # noqa: N818 - it is an outcome, not a failure
    """Whoever stands in for the person at this prompt has no reply: the detached policy decides.

    Raised by a prompter that is not a person (an answers file); a person
    at a terminal answers or cancels.
    """


@attrs.frozen(kw_only=True)
class Permit:
    """Run the tool: ``y``; ``Y`` (``remember``); ``e`` (edited ``arguments``).

    ``from_file``: the answers file gave this reply, standing in for the person.
    """

    remember: bool = False
    arguments: Mapping[str, JsonValue] | None = None
    from_file: bool = False


@attrs.frozen(kw_only=True)
class Deny:
    """Skip the tool: ``n``; ``N`` (``remember``); ``r`` (with a ``reason``)."""

    remember: bool = False
    reason: str | None = None
    from_file: bool = False


#: A person's answer to a permission prompt.
PermissionAnswer: TypeAlias = Permit | Deny


@attrs.frozen(kw_only=True)
class QuestionAnswer:
    """A person's answer; ``remember`` it for the rest of the turn (``Y``/``N``).

    ``by``: where the person gave it, when not at the prompter's own
    terminal (``inbox``: on the web inbox's page); recorded with the
    response's route (``{"route": "person", "by": "inbox"}``).
    """

    value: ToolAnswer
    remember: bool = False
    from_file: bool = False
    by: str | None = None


@attrs.frozen(kw_only=True)
class DeliveryAnswer:
    """Whether a finished tool's result reaches the model (``y``), or is withheld (``n``)."""

    deliver: bool
    from_file: bool = False


class Prompter(Protocol):
    """Something that can ask the person at the terminal."""

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """May the tool run? Raise :class:`PromptCancelled` on cancel."""
        ...

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer the question. Raise :class:`PromptCancelled` on cancel."""
        ...


@runtime_checkable
class DeliveryPrompter(Prompter, Protocol):
    """A prompter that can also ask whether a result may reach the model (result mode ``ask``).

    A separate protocol, so that a prompter written before result delivery
    existed is still a :class:`Prompter`; asked to confirm a delivery, such a
    prompter counts as one that failed (the delivery is cancelled, and logged).
    """

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        """May the result reach the model? Raise :class:`PromptCancelled` on cancel."""
        ...


class ScriptExhaustedError(CoordinatorError):
    """A scripted prompter was asked something its script has no answer for."""


@attrs.frozen(kw_only=True)
class ScriptedCancel:
    """Cancel the prompt, as Ctrl-C would."""

    tool: str | None = None
    question: str | None = None


#: What a scripted reply is for.
_Kind: TypeAlias = Literal["permission", "question", "delivery"]
_Reply: TypeAlias = PermissionAnswer | QuestionAnswer | DeliveryAnswer | ScriptedCancel


@attrs.frozen(kw_only=True)
class _Scripted:
    """One scripted reply, for the first prompt it matches.

    ``position`` counts the replies of its kind in the order they were
    scripted, from 0. ``reply`` is not in the ``repr``: the answer may be
    meant for a secret question.
    """

    reply: _Reply = attrs.field(repr=False)
    tool: str | None
    question: str | None
    kind: _Kind
    position: int = 0

    def matches(self, *, kind: _Kind, tool: str, question: str | None) -> bool:
        if self.kind != kind:
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

    ``from_file``: the script is an answers file standing in for the person.
    Its replies are recorded as the answers file's, and a prompt it has no
    reply for raises :class:`PromptUnanswered` (the detached policy decides)
    rather than :class:`ScriptExhaustedError` (a script that does not fit).
    """

    def __init__(self, *, from_file: bool = False) -> None:
        """Start with an empty script."""
        self.from_file = from_file
        self._script: list[_Scripted] = []
        self._added: dict[_Kind, int] = {"permission": 0, "question": 0, "delivery": 0}
        self.shown: list[ShowPermissionPrompt | ShowQuestion | ShowDeliveryPrompt] = []

    def _add(
        self, reply: _Reply, *, tool: str | None, question: str | None, kind: _Kind
    ) -> ScriptedPrompter:
        position = self._added[kind]
        self._added[kind] += 1
        self._script.append(
            _Scripted(reply=reply, tool=tool, question=question, kind=kind, position=position)
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
        reply = QuestionAnswer(value=value, remember=remember, from_file=self.from_file)
        return self._add(reply, tool=tool, question=question, kind="question")

    def cancel(self, *, tool: str | None = None, question: str | None = None) -> ScriptedPrompter:
        """Cancel a question (Ctrl-C)."""
        reply = ScriptedCancel(tool=tool, question=question)
        return self._add(reply, tool=tool, question=question, kind="question")

    def permit(
        self,
        *,
        remember: bool = False,
        arguments: Mapping[str, JsonValue] | None = None,
        tool: str | None = None,
    ) -> ScriptedPrompter:
        """Allow a tool to run (``y``, or ``Y`` with ``remember``)."""
        reply = Permit(remember=remember, arguments=arguments, from_file=self.from_file)
        return self._add(reply, tool=tool, question=None, kind="permission")

    def deny(
        self, *, remember: bool = False, reason: str | None = None, tool: str | None = None
    ) -> ScriptedPrompter:
        """Skip a tool (``n``, ``N`` with ``remember``, ``r`` with a ``reason``)."""
        reply = Deny(remember=remember, reason=reason, from_file=self.from_file)
        return self._add(reply, tool=tool, question=None, kind="permission")

    def cancel_permission(self, *, tool: str | None = None) -> ScriptedPrompter:
        """Cancel a permission prompt (Ctrl-C)."""
        reply = ScriptedCancel(tool=tool)
        return self._add(reply, tool=tool, question=None, kind="permission")

    def deliver(self, *, tool: str | None = None) -> ScriptedPrompter:
        """Let a finished tool's result reach the model (``y``)."""
        reply = DeliveryAnswer(deliver=True, from_file=self.from_file)
        return self._add(reply, tool=tool, question=None, kind="delivery")

    def withhold(self, *, tool: str | None = None) -> ScriptedPrompter:
        """Withhold a finished tool's result (``n``): the model is told so."""
        reply = DeliveryAnswer(deliver=False, from_file=self.from_file)
        return self._add(reply, tool=tool, question=None, kind="delivery")

    def cancel_delivery(self, *, tool: str | None = None) -> ScriptedPrompter:
        """Cancel a delivery prompt (Ctrl-C)."""
        reply = ScriptedCancel(tool=tool)
        return self._add(reply, tool=tool, question=None, kind="delivery")

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        return len(self._script)

    @property
    def unused_permissions(self) -> tuple[int, ...]:
        """The permission replies still unused, by position (0: the first scripted)."""
        return tuple(s.position for s in self._script if s.kind == "permission")

    @property
    def unused_answers(self) -> tuple[int, ...]:
        """The question replies (answers and cancellations) still unused, by position."""
        return tuple(s.position for s in self._script if s.kind == "question")

    @property
    def unused_deliveries(self) -> tuple[int, ...]:
        """The delivery replies still unused, by position."""
        return tuple(s.position for s in self._script if s.kind == "delivery")

    def used_before(self, kind: _Kind, *, tool: str, question: str | None = None) -> bool:
        """Take out the reply a prompt took before (a turn continued); whether one matched.

        The continued turn holds what an earlier run's prompt was answered
        with, and is not asked again: the script is spent as it was then, so
        that the next prompt takes the reply it would have taken, and the
        spent one is not reported unused.
        """
        for index, scripted in enumerate(self._script):
            if scripted.matches(kind=kind, tool=tool, question=question):
                del self._script[index]
                return True
        return False

    def _take(self, *, kind: _Kind, tool: str, question: str | None = None) -> _Reply:
        for index, scripted in enumerate(self._script):
            if scripted.matches(kind=kind, tool=tool, question=question):
                return self._script.pop(index).reply
        what = {
            "permission": "permission to run",
            "question": f"question {question!r}",
            "delivery": "delivering the result",
        }[kind]
        message = f"the script has no reply for {what} of tool {tool!r}"
        if self.from_file:
            raise PromptUnanswered(message)
        raise ScriptExhaustedError(message)

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Reply to a permission prompt from the script."""
        self.shown.append(prompt)
        reply = self._take(kind="permission", tool=prompt.tool_name)
        if isinstance(reply, Permit | Deny):
            return reply
        raise PromptCancelled

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Reply to a question from the script."""
        self.shown.append(prompt)
        reply = self._take(kind="question", tool=prompt.tool_name, question=prompt.question.id)
        if not isinstance(reply, QuestionAnswer):
            raise PromptCancelled
        if prompt.question.answer_type.is_secret:
            # As the terminal hands a secret over: wrapped, and never to be remembered.
            value = SecretValue(reply.value) if isinstance(reply.value, str) else reply.value
            return QuestionAnswer(value=value, remember=False, from_file=reply.from_file)
        return reply

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        """Reply to a delivery prompt from the script."""
        self.shown.append(prompt)
        reply = self._take(kind="delivery", tool=prompt.tool_name)
        if isinstance(reply, DeliveryAnswer):
            return reply
        raise PromptCancelled


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
