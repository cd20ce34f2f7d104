"""The inquiry machine: one per question a tool asks.

Theory of operation (RFD 082, "Recording lifecycle"): the question is recorded
*before* anything decides where its answer comes from; then, in this order, an
answer remembered this turn (never for a secret), a static answer from
configuration, and otherwise routing: to the model when the question targets
the assistant; to the person at the prompt when it targets the user and a
prompt is there (a terminal, or an answers file standing in for the person);
and when nobody can be asked, to the **detached policy** (RFD 049), which
puts the question to the model (``auto``, never an exclusive one), takes its
default (``defaults``), fails it (``deny``, the default), or keeps it for an
answer given later (``park``, ours). A question
routed to the person waits in ``routed`` until the terminal is free and then
in ``shown``: only a question on screen takes the person's answer (or the
answers file's), and only one sent to the model takes the model's (or its
failure). An answers file with no reply for a question on screen hands it to
the detached policy (``unanswered``). A question on screen for longer than its
``timeout`` is closed as ``timed_out``, or handed to the detached policy
(``time_out``). Every question ends in exactly one of ``answered``,
``redacted`` (a secret the tool received but the stream does not hold),
``cancelled`` (with the reason), or ``parked``: kept, with no response yet,
for an answer given later in the same turn.

Rules:

1. Everything that affects this machine is in this file: its states, its
   guards, its actions, and :data:`INQUIRY_ROWS`, the table that declares them.
2. Entering ``requested`` allocates the inquiry id from the turn state and
   emits the ``InquiryRequest``; each transition into a final state emits
   exactly one response. No other code creates these records.
3. Guards decide from facts handed in (:class:`InquiryFacts`, the trigger's
   payload); the machine looks nothing up.
4. A secret is never cached (read or write), never recorded, never routed to
   the model: ``assistant_routing_denied`` when it targets the assistant,
   ``no_prompt_backend`` when nobody can be asked, whatever the detached
   policy but ``park`` (a secret is a person's to give, and its default is
   never taken; parked, it waits for one). The answer the tool gets travels
   as a :class:`SecretValue`. An exclusive question (a person's only, RFD
   049 and 083) targeted at the assistant is refused the same way,
   ``assistant_routing_denied``: the check is the mark, never the tool's name.
5. A static answer that does not fit the question is not applied:
   ``invalid_static_answer``, and the tool is told which question, what was
   configured and what was expected. Nor is an answers file's reply that
   does not fit the question on screen: ``invalid_answers_file_entry`` (the
   file's fault; ``user`` would blame a person), never remembered, and the
   tool is told what was expected, never what the file held.
6. A question the tool call may not ask (``exhausted``, set by the
   tool-call machine: the same question too often, or too many questions) is
   still recorded, then closed at once as ``attempts_exhausted``: the stream
   holds every question a tool asked.
7. Only the person's answer can be remembered for the turn (their ``Y`` or
   ``N``, or the answers file's ``remember``, standing in for them); an
   answer from the model that asks to be is refused. A question whose answer
   may not be reused (``persistence`` none, RFD 083) is never looked up in
   the turn's memory nor remembered: a ``remember`` with its answer is dropped.
8. A turn continued after its process stopped (RFD 023) holds requests
   recorded before the stop. Such a request is never recorded again: when
   the tool, run again, asks exactly that question, ``adopt`` takes the
   recorded id and the question is resolved as any other (its one response
   goes under that id); otherwise ``supersede`` closes it as
   ``interrupted``, emitting only the response. When the turn is discarded
   instead of continued (RFD 023), ``discard`` closes such a request as
   ``discarded``, emitting only the response: nothing is asked, nothing
   remembered.
9. Each row that closes a question says in its ``resolution`` column the
   route by which it was decided (:class:`~machines.Resolution`: remembered,
   configuration, person, answers file, model, default, denied, refused,
   withdrawn, ...); each row where the detached policy decided says its
   mode in its ``detached`` column. Whoever reads what fired reads those
   columns, never the row's guard, trigger or source.
10. A question still open when its tool call is settled otherwise (the batch
    stopped: a cancel, Ctrl-C away from its prompt, a signal, a crash) is
    ``withdraw``-n: ``Cancelled(withdrawn)``, never ``user``, since nobody
    answered or cancelled it. ``cancel`` is the person's (Ctrl-C or end of
    input at its prompt, an answers file's ``cancel``) or the model's request
    cancelled (RFD 082: the user's doing).
11. ``park`` ends the model in ``parked`` without a response: the process is
    done with the question, whose request stays on disk (the driver marks it
    parked, in its entry's metadata). It is answered later in one of two
    ways, each under the request's own id: the tool, run again when the turn
    is continued, asks it again and ``adopt`` takes it up marked
    ``parked``, so that the person's (or the answers file's) answer closes
    it as ``parked_then_answered``; or ``answer_later`` gives it an answer
    without its tool (the inbox), held to the question as any answer is. A
    parked secret is a person's at a terminal: the answers file's answer to
    it is not taken (the policy decides again), and ``answer_later`` has no
    row for it.
12. A question on screen for longer than its ``timeout`` is closed
    ``Cancelled(timed_out)`` (``time_out``), or, when the tool's ``on_timeout``
    says ``detached``, handed to the detached policy as if nobody were there.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from machines._effects import AskAssistant, QueueQuestion, ShowQuestion
from machines._errors import InvalidAnswerError
from machines._inquiry_records import (
    Answered,
    CancellationReason,
    Cancelled,
    InquiryRequest,
    Redacted,
)
from machines._json import JsonValue
from machines._meanings import DetachedMode, OnTimeout, Resolution
from machines._questions import InquiryQuestion, InquirySource, Question
from machines._secret import SecretValue
from machines._table import Guard, Out, Row, Step, StepBuffer, TableMachine
from machines._turn_state import CachedAnswer, TurnState
from machines.validators import is_json, of_type, optional_of_type
from machines.wording import (
    backend_failed,
    exclusive_for_assistant,
    invalid_answers_file_entry,
    invalid_static_answer,
    question_refused,
    question_timed_out,
    secret_for_assistant,
    secret_without_terminal,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from machines._effects import ToolAnswer
    from machines._inquiry_records import InquiryResponse

__all__ = [
    "INQUIRY_MACHINE",
    "INQUIRY_ROWS",
    "Inquiry",
    "InquiryFacts",
    "InquiryState",
    "StaticAnswer",
    "Target",
]


class InquiryState(enum.Enum):
    """Where a question is in its life."""

    NEW = "new"
    REQUESTED = "requested"
    CACHED = "cached"
    STATIC = "static"
    ROUTED = "routed"
    SHOWN = "shown"
    #: Nobody can be asked: the detached policy decides (a transient state).
    DETACHED = "detached"
    ANSWERED = "answered"
    #: Kept by the detached policy ``park``, with no response yet, for an
    #: answer given later (the process is done with it).
    PARKED = "parked"
    REDACTED = "redacted"
    CANCELLED = "cancelled"


class Target(enum.Enum):
    """Who a question is configured to be answered by."""

    USER = "user"
    ASSISTANT = "assistant"


@attrs.frozen(repr=False)
class StaticAnswer:
    """An answer configured for a question; it may not fit, and may be meant as a secret."""

    value: JsonValue

    def __repr__(self) -> str:
        """Never show the value: it may be a secret's static answer."""
        return "StaticAnswer(<configured>)"


@attrs.frozen(kw_only=True)
class InquiryFacts:
    """What the driver knows when a question arrives, handed to the guards.

    ``cached_answer`` is what the turn cache holds for the question (the
    driver asks :meth:`TurnState.remembered_tool_answer`, which never returns
    one for a secret). ``exhausted`` is set by the tool-call machine, not the
    driver, when the tool call may not ask this question: why, in the words
    the tool is told. ``terminal`` says a prompt is there (a person, or an
    answers file standing in for one); ``detached`` is the tool's detached
    policy for its questions, which decides when nobody can be asked (RFD
    049's default, ``deny``, unless configured); ``on_timeout`` what becomes
    of the question should it be on screen for longer than its timeout.
    """

    # Typed on the way in: the resolve rows' guards cover every Target and
    # every answer kind, and a fact outside them (a target spelled as a plain
    # string) would match none and leave the question requested forever.
    terminal: bool = attrs.field(validator=of_type(bool))
    target: Target = attrs.field(default=Target.USER, validator=of_type(Target))
    static_answer: StaticAnswer | None = attrs.field(
        default=None, validator=optional_of_type(StaticAnswer)
    )
    cached_answer: CachedAnswer | None = attrs.field(
        default=None, validator=optional_of_type(CachedAnswer)
    )
    exhausted: str | None = attrs.field(default=None, validator=optional_of_type(str))
    detached: DetachedMode = attrs.field(
        default=DetachedMode.DENY, validator=of_type(DetachedMode)
    )
    on_timeout: OnTimeout = attrs.field(default=OnTimeout.CLOSE, validator=of_type(OnTimeout))


class Inquiry:
    """One question on its way to an answer (the machine's model).

    Create it with :meth:`ask`; then feed it what happens with
    :meth:`terminal_ready`, :meth:`answer`, :meth:`cancel` or :meth:`fail`.
    Each returns the :class:`Step`: records for the stream, effects for the
    driver. ``delivered`` is what the tool receives once the question is
    answered or redacted; ``failure`` is the tool-level error once it is
    cancelled for any reason but the user's; ``remembered`` is true once the
    person's answer to it is remembered for the turn; ``routed_to`` says who
    it waits for once routed (the user at the prompt, or the model);
    ``parked_before`` is true for a request parked before, taken up again.
    """

    __slots__ = (
        "buffer",
        "delivered",
        "facts",
        "failure",
        "id",
        "parked_before",
        "question",
        "remembered",
        "response",
        "routed_to",
        "source",
        "state",
        "tool_call_id",
        "tool_name",
        "turn",
    )

    def __init__(
        self,
        *,
        turn: TurnState,
        tool_call_id: str,
        tool_name: str,
        question: Question,
        source: InquirySource,
        facts: InquiryFacts,
        buffer: StepBuffer | None = None,
    ) -> None:
        """A question not yet recorded (state ``new``)."""
        self.state = InquiryState.NEW
        # Not `buffer or ...`: a shared buffer is empty (falsy) until something fires.
        self.buffer = buffer if buffer is not None else StepBuffer()
        self.turn = turn
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.question = question
        self.source = source
        self.facts = facts
        self.id: str | None = None
        self.delivered: ToolAnswer | None = None
        self.response: InquiryResponse | None = None
        self.failure: str | None = None
        self.remembered = False
        self.routed_to: Target | None = None
        self.parked_before = False

    @classmethod
    def ask(
        cls,
        *,
        turn: TurnState,
        tool_call_id: str,
        tool_name: str,
        question: Question,
        source: InquirySource,
        facts: InquiryFacts,
    ) -> tuple[Inquiry, Step]:
        """Record the question and resolve it as far as it can go without waiting."""
        inquiry = cls(
            turn=turn,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            question=question,
            source=source,
            facts=facts,
        )
        inquiry.fire("ask")
        return inquiry, inquiry.buffer.take()

    @classmethod
    def supersede_recorded(
        cls,
        *,
        turn: TurnState,
        request: InquiryRequest,
        question_id: str,
        tool_call_id: str,
        tool_name: str,
    ) -> tuple[Inquiry, Step]:
        """Close ``request``, recorded before the turn stopped, as ``interrupted``.

        For a request no tool call of the continued turn will ask again (or
        none is known to have asked: then ``tool_call_id`` and ``tool_name``
        say what is known, and may be empty). Its question is never asked:
        only its ids are read (:meth:`InquiryQuestion.as_asked`).
        """
        return cls._close_recorded(
            "supersede",
            turn=turn,
            request=request,
            question_id=question_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
        )

    @classmethod
    def discard_recorded(
        cls,
        *,
        turn: TurnState,
        request: InquiryRequest,
        question_id: str,
        tool_call_id: str,
        tool_name: str,
    ) -> tuple[Inquiry, Step]:
        """Close ``request``, recorded before the turn stopped, as ``discarded`` (rule 8).

        As :meth:`supersede_recorded`, for a turn discarded rather than continued.
        """
        return cls._close_recorded(
            "discard",
            turn=turn,
            request=request,
            question_id=question_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
        )

    @classmethod
    def _close_recorded(
        cls,
        trigger: str,
        *,
        turn: TurnState,
        request: InquiryRequest,
        question_id: str,
        tool_call_id: str,
        tool_name: str,
    ) -> tuple[Inquiry, Step]:
        inquiry = cls(
            turn=turn,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            question=request.question.as_asked(question_id),
            source=request.source,
            facts=InquiryFacts(terminal=False),
        )
        inquiry.fire(trigger, inquiry_id=request.id)
        return inquiry, inquiry.buffer.take()

    @classmethod
    def answer_parked(
        cls,
        *,
        turn: TurnState,
        request: InquiryRequest,
        question_id: str,
        tool_call_id: str,
        tool_name: str,
        value: ToolAnswer,
    ) -> tuple[Inquiry, Step]:
        """Answer ``request``, parked earlier, with ``value``, without its tool (the inbox).

        The answer is held to the recorded question as any answer is
        (:class:`InvalidAnswerError` when it does not fit; nothing changes).
        A secret has no row here: it is a person's, at a terminal, when the
        turn is continued (:class:`~machines.IllegalTransitionError`).
        """
        inquiry = cls(
            turn=turn,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            question=request.question.as_asked(question_id),
            source=request.source,
            facts=InquiryFacts(terminal=False),
        )
        payload = inquiry.checked_answer(value, remember=False)
        inquiry.fire("answer_later", inquiry_id=request.id, **payload)
        return inquiry, inquiry.buffer.take()

    @property
    def closed(self) -> bool:
        """Whether the process is done with the question: it has its response, or was parked."""
        return self.state in INQUIRY_MACHINE.final

    def terminal_ready(self, cached_answer: CachedAnswer | None) -> Step:
        """The terminal is free for this question; ``cached_answer`` is the turn cache's."""
        self.fire("terminal_ready", cached=cached_answer)
        return self.buffer.take()

    def answer(
        self, value: ToolAnswer, *, remember: bool = False, from_file: bool = False
    ) -> Step:
        """The person (the answers file, ``from_file``) or the model answered ``value``.

        ``remember`` it for the turn (the person's ``Y`` or ``N`` only).
        """
        self.fire("answer", **self.checked_answer(value, remember=remember, from_file=from_file))
        return self.buffer.take()

    def cancel(self) -> Step:
        """The user cancelled (Ctrl-C, end of input at the prompt), or the model's request was."""
        self.fire("cancel")
        return self.buffer.take()

    def withdraw(self) -> Step:
        """Its tool call is settled while it is open: closed as ``withdrawn``."""
        self.fire("withdraw")
        return self.buffer.take()

    def unanswered(self) -> Step:
        """On screen, the answers file has no reply: the detached policy decides."""
        self.fire("unanswered")
        return self.buffer.take()

    def fail(self, error: str) -> Step:
        """The backend failed to answer; ``error`` says how (never a secret)."""
        self.fire("fail", error=error)
        return self.buffer.take()

    def time_out(self, after: str) -> Step:
        """On screen for longer than its timeout (``after``, as the tool is told it)."""
        self.fire("time_out", after=after)
        return self.buffer.take()

    def fire(self, trigger: str, **payload: Any) -> None:
        """Fire ``trigger`` (and automatic rows); a failure leaves no half step behind."""
        try:
            INQUIRY_MACHINE.fire(self, trigger, **payload)
        except BaseException:
            self.buffer.discard()
            raise

    def checked_answer(
        self, value: ToolAnswer, *, remember: bool, from_file: bool = False
    ) -> dict[str, Any]:
        """The payload of an ``answer`` trigger, or :class:`InvalidAnswerError`.

        Checked before the machine is touched, so a bad answer changes nothing.
        The one exception is the answers file's reply to a question on screen
        (rule 5): its misfit is the machine's to record, and the payload then
        carries no value (it may be a secret meant for another question).
        """
        answer_type = self.question.answer_type
        if not answer_type.accepts(value) or not (
            isinstance(value, SecretValue) or is_json(value)
        ):
            if from_file and self.state is InquiryState.SHOWN:
                return {"value": None, "remember": False, "from_file": True, "fits": False}
            raise InvalidAnswerError(
                f"the answer to question {self.question.id!r} of tool {self.tool_name!r} "
                f"must be {answer_type.expected()}, not {type(value).__name__}"
            )
        if answer_type.is_secret and not isinstance(value, SecretValue):
            value = SecretValue(value)  # type: ignore[arg-type] # accepts() checked it is a str
        # A question asked afresh every time keeps nothing, whoever asked to (rule 7).
        remember = remember and self.question.reusable
        return {"value": value, "remember": remember, "from_file": from_file, "fits": True}


# ------------------------------------------------------------------ guards


def _secret(inquiry: Inquiry) -> bool:
    return inquiry.question.answer_type.is_secret


def _g(name: str, description: str, test: Any) -> Guard[Inquiry]:
    return Guard(name, description, test)


EXHAUSTED = _g(
    "exhausted",
    "the tool call may ask no more (this question too often, or too many)",
    lambda m, _: m.facts.exhausted is not None,
)
HAS_CACHED = _g(
    "cached",
    "the turn cache holds an answer (never for a secret, nor one asked afresh each time)",
    lambda m, _: m.facts.cached_answer is not None and m.question.reusable,
)
HAS_STATIC = _g(
    "static",
    "configuration holds a static answer",
    lambda m, _: m.facts.static_answer is not None,
)
SECRET_FOR_ASSISTANT = _g(
    "secret_for_assistant",
    "a secret targeted at the assistant",
    lambda m, _: _secret(m) and m.facts.target is Target.ASSISTANT,
)
EXCLUSIVE_FOR_ASSISTANT = _g(
    "exclusive_for_assistant",
    "an exclusive question (a person's only) targeted at the assistant",
    lambda m, _: not _secret(m) and m.question.exclusive and m.facts.target is Target.ASSISTANT,
)
TO_USER = _g(
    "to_user",
    "targeted at the user and a prompt is there",
    lambda m, _: m.facts.target is Target.USER and m.facts.terminal,
)
TO_ASSISTANT = _g(
    "to_assistant",
    "targeted at the assistant (never a secret, nor an exclusive question)",
    lambda m, _: (
        not _secret(m) and not m.question.exclusive and m.facts.target is Target.ASSISTANT
    ),
)
NOBODY = _g(
    "nobody",
    "targeted at the user and nobody can be asked",
    lambda m, _: m.facts.target is Target.USER and not m.facts.terminal,
)
STATIC_INVALID = _g(
    "invalid",
    "the static answer does not fit the question",
    lambda m, _: not _static_fits(m),
)
SECRET = _g("secret", "a secret", lambda m, _: _secret(m))
PLAIN = _g("plain", "not a secret", lambda m, _: not _secret(m))
MISFIT_FROM_FILE = _g(
    "misfit_from_file",
    "from the answers file, and it does not fit the question",
    lambda _, p: p["from_file"] and not p["fits"],
)
SECRET_FROM_FILE = _g(
    "secret_from_file",
    "a secret, from the answers file",
    lambda m, p: _secret(m) and p["from_file"],
)
PLAIN_FROM_FILE = _g(
    "plain_from_file",
    "not a secret, from the answers file",
    lambda m, p: not _secret(m) and p["from_file"],
)
EXCLUSIVE_AUTO = _g(
    "exclusive_auto",
    "policy auto, and the question is exclusive (a person's only)",
    lambda m, _: m.facts.detached is DetachedMode.AUTO and m.question.exclusive,
)
AUTO = _g(
    "auto", "policy auto: the model answers", lambda m, _: m.facts.detached is DetachedMode.AUTO
)
DEFAULT = _g(
    "default",
    "policy defaults, and the question has a default that answers it",
    lambda m, _: m.facts.detached is DetachedMode.DEFAULTS and _has_default(m),
)
NO_DEFAULT = _g(
    "no_default",
    "policy defaults, and no default answers the question",
    lambda m, _: m.facts.detached is DetachedMode.DEFAULTS and not _has_default(m),
)
DENY = _g("deny", "policy deny", lambda m, _: m.facts.detached is DetachedMode.DENY)
PARK = _g(
    "park",
    "policy park: kept for an answer given later (a secret too)",
    lambda m, _: m.facts.detached is DetachedMode.PARK,
)
PARKED_SECRET_FROM_FILE = _g(
    "parked_secret_from_file",
    "parked before, a secret, from the answers file (a person's only)",
    lambda m, p: m.parked_before and _secret(m) and p["from_file"],
)
PARKED_SECRET = _g(
    "parked_secret", "parked before, a secret", lambda m, _: m.parked_before and _secret(m)
)
PARKED_BEFORE = _g(
    "parked_before", "parked before, not a secret", lambda m, _: m.parked_before and not _secret(m)
)
TIMEOUT_TO_POLICY = _g(
    "timeout_to_policy",
    "on_timeout detached: the detached policy decides",
    lambda m, _: m.facts.on_timeout is OnTimeout.DETACHED,
)
REMEMBERED_MEANWHILE = _g(
    "remembered_meanwhile",
    "the turn cache gained an answer while the question waited (never for a secret, "
    "nor one asked afresh each time)",
    lambda m, p: m.routed_to is Target.USER and p["cached"] is not None and m.question.reusable,
)
STILL_OPEN = _g(
    "uncached",
    "routed to the user and nothing remembered meanwhile",
    lambda m, p: m.routed_to is Target.USER and (p["cached"] is None or not m.question.reusable),
)
FROM_MODEL = _g(
    "from_model",
    "routed to the assistant, and nothing to remember",
    lambda m, p: m.routed_to is Target.ASSISTANT and not p["remember"],
)
WITH_MODEL = _g(
    "with_model", "routed to the assistant", lambda m, _: m.routed_to is Target.ASSISTANT
)


def _static_fits(inquiry: Inquiry) -> bool:
    static = inquiry.facts.static_answer
    return static is not None and inquiry.question.answer_type.accepts(static.value)


def _has_default(inquiry: Inquiry) -> bool:
    # Only a default that answers the question, and never a secret's (its
    # offered_default is None): what a prompt would take for Enter alone.
    return inquiry.question.offered_default is not None


# ----------------------------------------------------------------- actions


def _record_request(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    m.id = m.turn.allocate_inquiry_id(m.tool_call_id, m.question.id)
    question = InquiryQuestion.from_question(m.question)
    out.record(InquiryRequest(id=m.id, source=m.source, question=question))


def _adopt_request(m: Inquiry, payload: Mapping[str, Any], _: Out) -> None:
    # The request is on disk already, under this id; the turn state skips it
    # (it was handed every recorded id), so no allocation is made.
    m.id = payload["inquiry_id"]
    m.parked_before = payload["parked"]


def _answer_later(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    m.id = payload["inquiry_id"]
    m.parked_before = True
    _take_answer(m, payload, out)


def _id(m: Inquiry) -> str:
    if m.id is None:  # pragma: no cover - every row after `ask` has one
        raise AssertionError("an inquiry past `new` has an id")
    return m.id


def _close(m: Inquiry, out: Out, response: InquiryResponse) -> None:
    m.response = response
    out.record(response)


def _cancelled(m: Inquiry, out: Out, reason: CancellationReason, failure: str | None) -> None:
    m.failure = failure
    _close(m, out, Cancelled(id=_id(m), reason=reason))


def _give_up(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    _cancelled(m, out, CancellationReason.ATTEMPTS_EXHAUSTED, m.facts.exhausted)


def _supersede(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    m.id = payload["inquiry_id"]
    _cancelled(m, out, CancellationReason.INTERRUPTED, None)


def _discard(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    m.id = payload["inquiry_id"]
    _cancelled(m, out, CancellationReason.DISCARDED, None)


def _deny_secret_for_assistant(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    failure = secret_for_assistant(m.tool_name, m.question)
    _cancelled(m, out, CancellationReason.ASSISTANT_ROUTING_DENIED, failure)


def _deny_exclusive_for_assistant(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    failure = exclusive_for_assistant(m.tool_name, m.question)
    _cancelled(m, out, CancellationReason.ASSISTANT_ROUTING_DENIED, failure)


def _deny_secret_without_terminal(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    failure = secret_without_terminal(m.tool_name, m.question)
    _cancelled(m, out, CancellationReason.NO_PROMPT_BACKEND, failure)


def _take_cached(m: Inquiry, _: Mapping[str, Any], __: Out) -> None:
    cached = m.facts.cached_answer
    if cached is None:  # pragma: no cover - the guard checked
        raise AssertionError("cached row without a cached answer")
    m.delivered = cached.value


def _take_cached_meanwhile(m: Inquiry, payload: Mapping[str, Any], __: Out) -> None:
    cached: CachedAnswer = payload["cached"]
    m.delivered = cached.value


def _queue_for_user(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    m.routed_to = Target.USER
    out.effect(
        QueueQuestion(
            tool_call_id=m.tool_call_id,
            inquiry_id=_id(m),
            tool_name=m.tool_name,
            question=m.question,
        )
    )


def _show_to_user(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    out.effect(
        ShowQuestion(
            tool_call_id=m.tool_call_id,
            inquiry_id=_id(m),
            tool_name=m.tool_name,
            source=m.source,
            question=m.question,
        )
    )


def _ask_assistant(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    m.routed_to = Target.ASSISTANT
    out.effect(
        AskAssistant(
            tool_call_id=m.tool_call_id,
            inquiry_id=_id(m),
            tool_name=m.tool_name,
            question=m.question,
        )
    )


def _in_the_clear(value: ToolAnswer | None) -> JsonValue:
    if isinstance(value, SecretValue):  # pragma: no cover - rows for secrets redact
        raise TypeError("a secret is never recorded as an answer")
    return value


def _static(m: Inquiry) -> JsonValue:
    static = m.facts.static_answer
    if static is None:  # pragma: no cover - the guard checked
        raise AssertionError("static row without a static answer")
    return static.value


def _answer_from_cache(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    _close(m, out, Answered(id=_id(m), answer=_in_the_clear(m.delivered)))


def _reject_static(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    failure = invalid_static_answer(m.tool_name, m.question, _static(m))
    _cancelled(m, out, CancellationReason.INVALID_STATIC_ANSWER, failure)


def _apply_static_secret(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    value = _static(m)
    if not isinstance(value, str):  # pragma: no cover - the guard checked it fits
        raise TypeError("a fitting secret answer is a string")
    m.delivered = SecretValue(value)
    _close(m, out, Redacted(id=_id(m)))


def _apply_static(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    value = _static(m)
    m.delivered = value
    _close(m, out, Answered(id=_id(m), answer=value))


def _reject_file_entry(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    failure = invalid_answers_file_entry(m.tool_name, m.question)
    _cancelled(m, out, CancellationReason.INVALID_ANSWERS_FILE_ENTRY, failure)


def _take_secret_answer(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    m.delivered = payload["value"]
    _close(m, out, Redacted(id=_id(m)))


def _take_answer(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    value: JsonValue = payload["value"]
    m.delivered = value
    if payload["remember"]:
        m.turn.remember_tool_answer(m.tool_name, m.question, value)
        m.remembered = True
    _close(m, out, Answered(id=_id(m), answer=value))


def _cancel_by_user(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    _cancelled(m, out, CancellationReason.USER, None)


def _withdraw(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    _cancelled(m, out, CancellationReason.WITHDRAWN, None)


def _time_out(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    failure = question_timed_out(m.tool_name, m.question, payload["after"])
    _cancelled(m, out, CancellationReason.TIMED_OUT, failure)


def _refuse_for_nobody(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    # RFD 082's reason for "only a person may answer, and none can be asked";
    # the response's route (denied) and the policy's mode say the rest.
    failure = question_refused(m.tool_name, m.question, m.facts.detached)
    _cancelled(m, out, CancellationReason.NO_PROMPT_BACKEND, failure)


def _take_default(m: Inquiry, _: Mapping[str, Any], out: Out) -> None:
    value = m.question.offered_default
    m.delivered = value
    _close(m, out, Answered(id=_id(m), answer=value))


def _backend_failed(m: Inquiry, payload: Mapping[str, Any], out: Out) -> None:
    failure = backend_failed(m.tool_name, m.question, payload["error"])
    _cancelled(m, out, CancellationReason.BACKEND_ERROR, failure)


# ------------------------------------------------------------------- table

_S = InquiryState

#: The inquiry machine, row by row, in the order rows are tried.
INQUIRY_ROWS: tuple[Row[InquiryState, Inquiry], ...] = (
    Row(trigger="ask", source=_S.NEW, dest=_S.REQUESTED,
        action=_record_request, emits=(InquiryRequest,)),
    # A request recorded before the turn stopped: asked again exactly, or closed
    # (the turn continued, or discarded); a parked one, answered later without
    # its tool (the inbox: rule 11).
    Row(trigger="adopt", source=_S.NEW, dest=_S.REQUESTED, action=_adopt_request),
    Row(trigger="answer_later", source=_S.NEW, dest=_S.ANSWERED, guard=PLAIN,
        action=_answer_later, emits=(Answered,), resolution=Resolution.PARKED_THEN_ANSWERED),
    Row(trigger="supersede", source=_S.NEW, dest=_S.CANCELLED,
        action=_supersede, emits=(Cancelled,), resolution=Resolution.INTERRUPTED),
    Row(trigger="discard", source=_S.NEW, dest=_S.CANCELLED,
        action=_discard, emits=(Cancelled,), resolution=Resolution.DISCARDED),
    # Resolution, in RFD 082's order: cache, static answer, routing guards, routing;
    # before them all, the tool-call machine's limit on asking again.
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.CANCELLED, guard=EXHAUSTED,
        action=_give_up, emits=(Cancelled,), auto=True, resolution=Resolution.REFUSED),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.CACHED, guard=HAS_CACHED,
        action=_take_cached, auto=True),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.STATIC, guard=HAS_STATIC, auto=True),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.CANCELLED, guard=SECRET_FOR_ASSISTANT,
        action=_deny_secret_for_assistant, emits=(Cancelled,), auto=True,
        resolution=Resolution.REFUSED),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.CANCELLED, guard=EXCLUSIVE_FOR_ASSISTANT,
        action=_deny_exclusive_for_assistant, emits=(Cancelled,), auto=True,
        resolution=Resolution.REFUSED),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.ROUTED, guard=TO_USER,
        action=_queue_for_user, effects=(QueueQuestion,), auto=True),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.ROUTED, guard=TO_ASSISTANT,
        action=_ask_assistant, effects=(AskAssistant,), auto=True),
    Row(trigger="resolve", source=_S.REQUESTED, dest=_S.DETACHED, guard=NOBODY, auto=True),
    Row(trigger="use_cached", source=_S.CACHED, dest=_S.ANSWERED,
        action=_answer_from_cache, emits=(Answered,), auto=True,
        resolution=Resolution.REMEMBERED),
    Row(trigger="use_static", source=_S.STATIC, dest=_S.CANCELLED, guard=STATIC_INVALID,
        action=_reject_static, emits=(Cancelled,), auto=True, resolution=Resolution.REFUSED),
    Row(trigger="use_static", source=_S.STATIC, dest=_S.REDACTED, guard=SECRET,
        action=_apply_static_secret, emits=(Redacted,), auto=True,
        resolution=Resolution.CONFIGURATION),
    Row(trigger="use_static", source=_S.STATIC, dest=_S.ANSWERED, guard=PLAIN,
        action=_apply_static, emits=(Answered,), auto=True,
        resolution=Resolution.CONFIGURATION),
    # Nobody can be asked: the detached policy (RFD 049) decides; a secret is a
    # person's only (parked, it waits for one).
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.PARKED, guard=PARK, auto=True,
        resolution=Resolution.PARKED, detached=DetachedMode.PARK),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.CANCELLED, guard=SECRET,
        action=_deny_secret_without_terminal, emits=(Cancelled,), auto=True,
        resolution=Resolution.REFUSED),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.CANCELLED, guard=EXCLUSIVE_AUTO,
        action=_refuse_for_nobody, emits=(Cancelled,), auto=True,
        resolution=Resolution.DENIED, detached=DetachedMode.AUTO),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.ROUTED, guard=AUTO,
        action=_ask_assistant, effects=(AskAssistant,), auto=True, detached=DetachedMode.AUTO),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.ANSWERED, guard=DEFAULT,
        action=_take_default, emits=(Answered,), auto=True,
        resolution=Resolution.DEFAULT, detached=DetachedMode.DEFAULTS),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.CANCELLED, guard=NO_DEFAULT,
        action=_refuse_for_nobody, emits=(Cancelled,), auto=True,
        resolution=Resolution.DENIED, detached=DetachedMode.DEFAULTS),
    Row(trigger="apply_policy", source=_S.DETACHED, dest=_S.CANCELLED, guard=DENY,
        action=_refuse_for_nobody, emits=(Cancelled,), auto=True,
        resolution=Resolution.DENIED, detached=DetachedMode.DENY),
    # A question waiting for the terminal is checked against the cache again.
    Row(trigger="terminal_ready", source=_S.ROUTED, dest=_S.CACHED, guard=REMEMBERED_MEANWHILE,
        action=_take_cached_meanwhile),
    Row(trigger="terminal_ready", source=_S.ROUTED, dest=_S.SHOWN, guard=STILL_OPEN,
        action=_show_to_user, effects=(ShowQuestion,)),
    # The model's answer, or its failure; secrets never reach it (rows 5 and 8).
    Row(trigger="answer", source=_S.ROUTED, dest=_S.ANSWERED, guard=FROM_MODEL,
        action=_take_answer, emits=(Answered,), resolution=Resolution.MODEL),
    Row(trigger="fail", source=_S.ROUTED, dest=_S.CANCELLED, guard=WITH_MODEL,
        action=_backend_failed, emits=(Cancelled,), resolution=Resolution.FAILED),
    # The model's request cancelled; or, waiting, its tool call was settled.
    Row(trigger="cancel", source=_S.ROUTED, dest=_S.CANCELLED,
        action=_cancel_by_user, emits=(Cancelled,), resolution=Resolution.CANCELLED),
    Row(trigger="withdraw", source=_S.ROUTED, dest=_S.CANCELLED,
        action=_withdraw, emits=(Cancelled,), resolution=Resolution.WITHDRAWN),
    # On screen: the person (or the answers file) answers, or cancels (Ctrl-C,
    # end of input); an answers file without a reply leaves it to the policy,
    # one whose reply does not fit is refused (rule 5). Parked before, its
    # answer closes it as such; a parked secret is a person's.
    Row(trigger="answer", source=_S.SHOWN, dest=_S.DETACHED, guard=PARKED_SECRET_FROM_FILE),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.CANCELLED, guard=MISFIT_FROM_FILE,
        action=_reject_file_entry, emits=(Cancelled,), resolution=Resolution.REFUSED),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.REDACTED, guard=PARKED_SECRET,
        action=_take_secret_answer, emits=(Redacted,),
        resolution=Resolution.PARKED_THEN_ANSWERED),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.ANSWERED, guard=PARKED_BEFORE,
        action=_take_answer, emits=(Answered,), resolution=Resolution.PARKED_THEN_ANSWERED),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.REDACTED, guard=SECRET_FROM_FILE,
        action=_take_secret_answer, emits=(Redacted,), resolution=Resolution.ANSWERS_FILE),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.ANSWERED, guard=PLAIN_FROM_FILE,
        action=_take_answer, emits=(Answered,), resolution=Resolution.ANSWERS_FILE),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.REDACTED, guard=SECRET,
        action=_take_secret_answer, emits=(Redacted,), resolution=Resolution.PERSON),
    Row(trigger="answer", source=_S.SHOWN, dest=_S.ANSWERED, guard=PLAIN,
        action=_take_answer, emits=(Answered,), resolution=Resolution.PERSON),
    Row(trigger="cancel", source=_S.SHOWN, dest=_S.CANCELLED,
        action=_cancel_by_user, emits=(Cancelled,), resolution=Resolution.CANCELLED),
    Row(trigger="unanswered", source=_S.SHOWN, dest=_S.DETACHED),
    Row(trigger="withdraw", source=_S.SHOWN, dest=_S.CANCELLED,
        action=_withdraw, emits=(Cancelled,), resolution=Resolution.WITHDRAWN),
    # On screen past its timeout: the policy decides, or it is closed as timed out.
    Row(trigger="time_out", source=_S.SHOWN, dest=_S.DETACHED, guard=TIMEOUT_TO_POLICY),
    Row(trigger="time_out", source=_S.SHOWN, dest=_S.CANCELLED,
        action=_time_out, emits=(Cancelled,), resolution=Resolution.TIMED_OUT),
)  # fmt: skip

INQUIRY_MACHINE: TableMachine[InquiryState, Inquiry] = TableMachine(
    name="inquiry",
    states=InquiryState,
    start=InquiryState.NEW,
    rows=INQUIRY_ROWS,
    final=(
        InquiryState.ANSWERED,
        InquiryState.REDACTED,
        InquiryState.CANCELLED,
        InquiryState.PARKED,
    ),
    rules=__doc__ or "",
)
