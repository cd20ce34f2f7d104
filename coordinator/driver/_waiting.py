"""What waits in a conversation, and answering a parked question without its tool (the inbox).

Theory of operation: a turn blocked on a prompt is a turn whose last run
parked it (the detached policy ``park``: the writer marked its request) or
died while it was open (a crash, a kill). :func:`waiting_prompts` lists
what waits in a conversation directory, read without taking its writer
lock (a reader never does), each with whether it was parked or left open,
and whether a live process holds the lock now (a run at work: what it
reads may be moving on). :func:`answer_waiting` answers one parked
question of a directory, under the writer lock, through the inquiry
machine's row for it (``answer_later``), recorded under the request's own
id as ``parked_then_answered`` by whoever the caller names (``inbox``);
the tool is not run: the turn's continuation replays the answer to it,
and it goes on from there. :func:`answer_parked` does the same on a
conversation the caller holds (``ToolCoordinator.continue_turn`` hands it
an embedder's answers).

Rules:

1. An answer is held to the recorded question exactly as any answer is
   (its type, its options): one that does not fit is refused, naming the
   question and what it must be, never the value.
2. A secret is never taken here: it is a person's, typed at a terminal
   into the run that continues the turn, and is never written.
3. Only a question its writer marked parked is answered here; one a run
   left open when it died is asked again when the turn is continued (its
   tool, run again, may ask something else), and is listed so.
4. Every answer given at once is checked before any is appended: all are
   recorded, or none. Refusals are :class:`WaitingAnswerError`; another
   process writing the conversation is
   :class:`~coordinator.store.ConversationLockedError`, naming it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs

from coordinator._errors import CoordinatorError
from coordinator._recorded_routes import recorded_park
from coordinator.driver._routes import append_answered_later
from coordinator.store import holder_of, load_conversation, load_locked, save_conversation
from coordinator.stream import ASSISTANT_TOOLS, EventEntry, find_incomplete_turn
from machines import (
    Inquiry,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    InvalidAnswerError,
    PromptKind,
    TurnState,
)
from machines.validators import of_type, optional_of_type

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from pathlib import Path

    from coordinator.store import Conversation
    from coordinator.stream import IncompleteTurn, OpenCall
    from machines import JsonValue, Step

__all__ = [
    "NotWaitingError",
    "SecretNotTakenError",
    "UnfitAnswerError",
    "WaitingAnswerError",
    "WaitingPrompt",
    "WaitingPrompts",
    "answer_parked",
    "answer_waiting",
    "waiting_prompts",
]

#: What may name who answered (``inbox``, ``embedder``): a short word, shown as it is.
_ANSWERER = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


class WaitingAnswerError(CoordinatorError):
    """An answer to a waiting prompt was refused; nothing was written."""


class NotWaitingError(WaitingAnswerError):
    """No parked question of the conversation's last turn has that id."""


class SecretNotTakenError(WaitingAnswerError):
    """The question is a secret: a person answers it at a terminal, when the turn is continued."""


class UnfitAnswerError(WaitingAnswerError):
    """The answer does not fit the recorded question (its type, its options)."""


@attrs.frozen(kw_only=True)
class WaitingPrompt:
    """A prompt a conversation's last turn waits on.

    ``kind`` is :attr:`~machines.PromptKind.TOOL` for a question (its
    ``inquiry_id``, and its ``question`` and ``source`` as recorded) or
    :attr:`~machines.PromptKind.RUN` for a permission to run the call.
    ``parked``: its writer parked it (the detached policy); otherwise a run
    left it open when it stopped. ``since``: when it was parked, or, left
    open, when it was asked (a timestamp's text, as recorded).
    """

    tool_call_id: str = attrs.field(validator=of_type(str))
    tool_name: str = attrs.field(validator=of_type(str))
    kind: PromptKind = attrs.field(validator=of_type(PromptKind))
    parked: bool = attrs.field(validator=of_type(bool))
    since: str = attrs.field(validator=of_type(str))
    inquiry_id: str | None = attrs.field(default=None, validator=optional_of_type(str))
    question: InquiryQuestion | None = attrs.field(
        default=None, validator=optional_of_type(InquiryQuestion)
    )
    source: InquirySource | None = attrs.field(
        default=None, validator=optional_of_type(InquirySource)
    )


@attrs.frozen(kw_only=True)
class WaitingPrompts:
    """What a conversation's last turn waits on, and whether a live process writes it now.

    ``writer`` is the pid of the live process holding its writer lock
    (``None``: nobody writes it), which :func:`answer_waiting` would meet.
    """

    prompts: tuple[WaitingPrompt, ...]
    writer: int | None


def waiting_prompts(
    path: Path, *, assistant_tools: Collection[str] = ASSISTANT_TOOLS
) -> WaitingPrompts:
    """What the conversation in directory ``path`` waits on, read without its lock.

    ``assistant_tools``: the tools whose questions are the assistant's
    (``ask_user``, by any name the conversation's runs gave it).
    """
    conversation = load_conversation(path)
    try:
        incomplete = find_incomplete_turn(conversation.stream, assistant_tools=assistant_tools)
        prompts = () if incomplete is None else _waiting(incomplete)
    finally:
        conversation.close()
    return WaitingPrompts(prompts=prompts, writer=holder_of(path))


def _waiting(incomplete: IncompleteTurn) -> tuple[WaitingPrompt, ...]:
    prompts = []
    for call in incomplete.open:
        request = call.tool_call
        if call.permission_parked and call.parked is not None:
            prompts.append(
                WaitingPrompt(
                    tool_call_id=request.id,
                    tool_name=request.name,
                    kind=PromptKind.RUN,
                    parked=True,
                    since=call.parked.since,
                )
            )
            continue
        waiting = call.waiting
        if waiting is None or not isinstance(waiting.entry.payload, InquiryRequest):
            continue
        asked = waiting.entry.payload
        since = call.parked.since if call.parked is not None else str(waiting.entry.timestamp)
        prompts.append(
            WaitingPrompt(
                tool_call_id=request.id,
                tool_name=request.name,
                kind=PromptKind.TOOL,
                parked=call.parked is not None,
                since=since,
                inquiry_id=asked.id,
                question=asked.question,
                source=asked.source,
            )
        )
    return tuple(prompts)


def answer_waiting(
    path: Path,
    inquiry_id: str,
    value: JsonValue,
    *,
    by: str = "inbox",
    assistant_tools: Collection[str] = ASSISTANT_TOOLS,
) -> None:
    """Answer the parked question ``inquiry_id`` of the conversation in ``path`` with ``value``.

    Under the writer lock (another writer: ``ConversationLockedError``,
    naming it), recorded as ``parked_then_answered`` by ``by``, and saved;
    refused with a :class:`WaitingAnswerError` (nothing written) for a
    question that is not parked, a secret, or an answer that does not fit.
    """
    conversation = load_locked(path)
    try:
        answer_parked(conversation, {inquiry_id: value}, by=by, assistant_tools=assistant_tools)
        save_conversation(conversation)
    finally:
        conversation.close()


def answer_parked(
    conversation: Conversation,
    answers: Mapping[str, JsonValue],
    *,
    by: str,
    incomplete: IncompleteTurn | None = None,
    assistant_tools: Collection[str] = ASSISTANT_TOOLS,
) -> list[EventEntry]:
    """Answer parked questions of ``conversation``'s last turn, by inquiry id; the entries made.

    The caller holds the conversation's writer lock, and saves it.
    ``incomplete`` is its last turn as found (found here when not given).
    Every answer is checked first (rules 1 to 4); then all are appended.
    """
    if type(by) is not str or not _ANSWERER.fullmatch(by):
        raise ValueError(
            "by names who answered in a short word (letters, digits, '_', '.', '-'), "
            "such as 'inbox'"
        )
    if incomplete is None:
        incomplete = find_incomplete_turn(conversation.stream, assistant_tools=assistant_tools)
    parked = _parked_questions(incomplete)
    turn = TurnState(recorded_ids=incomplete.recorded_inquiry_ids if incomplete else ())
    steps: list[Step] = []
    for inquiry_id, value in answers.items():
        call, request = _parked_one(parked, inquiry_id)
        if request.question.answer_type.is_secret:
            raise SecretNotTakenError(
                f"question {inquiry_id!r} of tool {call.tool_call.name!r} is a secret: a person "
                "gives it at a terminal when the turn is continued (inquiry run --continue-turn "
                "--interactive), and it is never written"
            )
        question_id = request.question.id or request.id
        try:
            _, step = Inquiry.answer_parked(
                turn=turn,
                request=request,
                question_id=question_id,
                tool_call_id=call.tool_call.id,
                tool_name=call.tool_call.name,
                value=value,
            )
        except InvalidAnswerError as error:
            raise UnfitAnswerError(f"{error}; nothing was written") from None
        steps.append(step)
    stream = conversation.stream
    return [entry for step in steps for entry in append_answered_later(stream, step, by)]


def _parked_questions(
    incomplete: IncompleteTurn | None,
) -> dict[str, tuple[OpenCall, InquiryRequest]]:
    """The last turn's parked questions, by inquiry id, with the open call that asked each."""
    found: dict[str, tuple[OpenCall, InquiryRequest]] = {}
    for call in incomplete.open if incomplete is not None else ():
        waiting = call.waiting
        if waiting is None or not isinstance(waiting.entry, EventEntry):
            continue
        request = waiting.entry.payload
        if isinstance(request, InquiryRequest) and recorded_park(waiting.entry.metadata):
            found[request.id] = (call, request)
    return found


def _parked_one(
    parked: Mapping[str, tuple[OpenCall, InquiryRequest]], inquiry_id: str
) -> tuple[OpenCall, InquiryRequest]:
    if inquiry_id not in parked:
        ids = ", ".join(repr(known) for known in parked) or "none"
        raise NotWaitingError(
            f"no parked question of the conversation's last turn has the id {inquiry_id!r} "
            f"(parked: {ids}); one left open by a run that stopped is asked again when the "
            "turn is continued"
        )
    return parked[inquiry_id]
