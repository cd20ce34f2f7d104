"""The tool-call machine: one per tool call the model makes.

Theory of operation: a tool call first needs permission (run mode ``ask``
prompts ``y``/``Y``/``n``/``N``/``r``/``e``; ``Y`` and ``N`` are remembered
for the turn; ``unattended`` runs; ``skip`` never runs). A prompt waits its
turn at the terminal in ``awaiting_permission`` and is answered in
``asking_permission``, once shown. When nobody can be asked (no terminal,
or an answers file without a reply), the tool's **detached policy** for
permissions decides (RFD 049): ``auto`` runs it, ``defaults`` and ``deny``
fail it (a permission has no default), ``park`` keeps it for later. Then it
runs; each time the tool stops with a question it waits for that question's
inquiry, and runs again with every answer so far. When it finishes, a tool whose result mode is
``ask`` asks the person whether its result may reach the model
(``awaiting_delivery``, then ``confirming_delivery``): delivered, withheld
(the model is told so), or cancelled; nobody to ask, its detached policy for
deliveries decides (``auto`` delivers, the others fail the call). It ends
succeeded, failed, skipped, withheld or cancelled, and that end is the one
``ToolCallResponse`` it emits; or ``parked``, without a response, when its
permission or its question was parked for an answer given later.

Rules:

1. Everything that affects this machine is in this file; the questions it
   waits for are :class:`~machines._inquiry_machine.Inquiry` machines it drives
   (rows that say ``delegates``), which record their own requests and
   responses.
2. Answers are keyed by the bare question id, latest wins, and are exactly
   what the next run of the tool receives. Nothing is pre-seeded: a tool sees
   a static answer only after it asked (RFD 082 "Pre-seed removal").
3. A tool that asks the same question more than ``max_attempts`` times, or
   more than ``max_questions`` questions in all, fails with a tool-level
   error instead of looping (a tool may make up a new question id each run). That last question is
   recorded and closed as ``attempts_exhausted`` by its inquiry like any
   other (RFD 082 records every question a tool asks), never routed.
4. Permission decisions are remembered only in
   ``TurnState.remembered_permission_decisions``; question answers only in
   ``remembered_tool_answers``. Neither caller touches the other's map.
5. A call left open when its turn stopped (RFD 023) is taken up with
   ``resume`` and what the stream recorded of it (:class:`RecordedCall`):
   a call whose last question was closed unanswered gets the response that
   closing would have given, without running; any other runs again, not
   asked permission again (its recorded questions prove it ran), with its
   recorded answers and its attempt budgets counted from its recorded
   questions. While a question recorded before the stop is still open, the
   call is ``resuming``: the tool's first question, if it is exactly that
   one, adopts its request (``needs_input`` [adopts]); anything else is met
   only after ``supersede`` has closed it as ``interrupted``.
6. What a row means is in its columns: each row that ends the call says how
   (``outcome``, a :class:`~machines.CallOutcome`), each row that lets the
   call run, skips it, or refuses it for want of anyone to ask says who
   decided and whether it runs (``permission``, a
   :class:`~machines.PermissionRuling`), each row that decides whether its
   result is delivered says who and how (``delivery``, a
   :class:`~machines.DeliveryRuling`), and each row where the detached
   policy decided says its mode (``detached``).
7. A question still open when the call is interrupted is withdrawn
   (``Cancelled(withdrawn)``), and the call ends ``interrupted``: nobody
   cancelled the question, its call was settled.
8. ``park`` (the detached policy, ours) ends the model in ``parked`` with no
   response: its question was parked (the inquiry ends ``parked``), or its
   permission (nobody to ask, policy ``park`` for ``run``). The process is
   done with the call; the tool is not running (it stopped to ask, or never
   started). When the turn is continued, the call is taken up again: a
   parked question as any question recorded before the stop (rule 5), a
   parked permission begun again with ``permission_parked``, so that the
   person's (or the answers file's) answer is recorded as
   ``parked then answered``. A delivery is never parked (the result is in
   memory only): :class:`~machines.DetachedPolicy` refuses it.
9. A prompt on screen (a permission, a delivery, a question) for longer
   than its ``timeout`` is ``time_out``-ed by the driver: closed (the call
   fails, route ``timed out``), or, with ``on_timeout`` ``detached``, handed
   to the detached policy as if nobody were there.
10. A call left open when its turn stopped, in a turn the user discards
    rather than continues (RFD 023), is closed with ``discard`` and what the
    stream recorded of it: the question that waited (left open, or parked)
    is closed ``Cancelled(discarded)`` by its inquiry, then the call gets
    the one response that says its turn was discarded (an error, outcome
    ``discarded``). Nothing runs, nothing is asked or remembered.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from machines._effects import (
    CompleteTool,
    QueueDeliveryPrompt,
    QueuePermissionPrompt,
    RunTool,
    ShowDeliveryPrompt,
    ShowPermissionPrompt,
)
from machines._errors import IllegalTransitionError
from machines._events import ToolCallRequest, ToolCallResponse
from machines._inquiry_machine import INQUIRY_MACHINE, Inquiry, InquiryFacts, InquiryState
from machines._inquiry_records import CancellationReason, Cancelled, InquiryRequest
from machines._json import JsonValue
from machines._meanings import (
    CallOutcome,
    DeliveryRuling,
    DetachedMode,
    DetachedPolicy,
    OnTimeout,
    PermissionBy,
    PermissionRuling,
)
from machines._questions import InquiryQuestion
from machines._table import Guard, Out, Row, Step, StepBuffer, TableMachine
from machines.validators import check_json, is_json, of_type, optional_of_type
from machines.wording import (
    DELIVERY_CANCELLED,
    DISCARDED,
    INPUT_CANCELLED,
    INTERRUPTED,
    RESULT_WITHHELD,
    SKIPPED_BY_CONFIGURATION,
    SKIPPED_BY_USER,
    SKIPPED_REMEMBERED,
    attempts_exhausted,
    delivery_refused,
    delivery_timed_out,
    permission_refused,
    permission_timed_out,
    questions_exhausted,
    secret_for_assistant,
    secret_without_terminal,
    skipped_with_reason,
    unavailable,
)

if TYPE_CHECKING:
    from machines._effects import ToolAnswer
    from machines._questions import InquirySource, Question
    from machines._turn_state import CachedAnswer, PermissionDecision, TurnState

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_QUESTIONS",
    "TOOL_CALL_MACHINE",
    "TOOL_CALL_ROWS",
    "RecordedCall",
    "RecordedQuestion",
    "ResultMode",
    "RunMode",
    "ToolCall",
    "ToolCallState",
]

#: How many times a tool may ask the same question in one tool call.
DEFAULT_MAX_ATTEMPTS = 8
#: How many questions in all a tool may ask in one tool call.
DEFAULT_MAX_QUESTIONS = 64


class ToolCallState(enum.Enum):
    """Where a tool call is in its life."""

    NEW = "new"
    AWAITING_PERMISSION = "awaiting_permission"
    ASKING_PERMISSION = "asking_permission"
    RUNNING = "running"
    #: Running again after a restart, a question recorded before it still open.
    RESUMING = "resuming"
    #: Its turn discarded, its waiting question closed: its response follows (transient).
    DISCARDING = "discarding"
    AWAITING_INPUT = "awaiting_input"
    #: Nobody can be asked permission: the detached policy decides (transient).
    PERMISSION_DETACHED = "permission_detached"
    #: Finished, its result waiting for the terminal (result mode ``ask``).
    AWAITING_DELIVERY = "awaiting_delivery"
    #: Finished, the person asked whether its result may reach the model.
    CONFIRMING_DELIVERY = "confirming_delivery"
    #: Nobody can confirm its result's delivery: the detached policy decides (transient).
    DELIVERY_DETACHED = "delivery_detached"
    #: Its result is to be delivered (a transient state: it ends as the tool did).
    DELIVERED = "delivered"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    #: It ran, and its result was not delivered: the model is told so.
    WITHHELD = "withheld"
    CANCELLED = "cancelled"
    #: Its question or its permission was parked: no response yet (rule 8).
    PARKED = "parked"


class RunMode(enum.Enum):
    """How a tool is allowed to run."""

    ASK = "ask"
    UNATTENDED = "unattended"
    SKIP = "skip"


class ResultMode(enum.Enum):
    """Whether a tool's result reaches the model as it is, or once a person confirms it."""

    UNATTENDED = "unattended"
    ASK = "ask"


def _answers(value: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    if not all(type(key) is str and is_json(answer) for key, answer in value.items()):
        raise TypeError("recorded answers map question ids to JSON values")
    return dict(value)


def _counts(value: Mapping[str, int]) -> Mapping[str, int]:
    if not all(type(k) is str and type(n) is int and n > 0 for k, n in value.items()):
        raise TypeError("recorded questions are counted by question id, each at least once")
    return dict(value)


def _optional_declined(_instance: Any, _attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not (
        isinstance(value, tuple)
        and len(value) == 2  # noqa: PLR2004 - a pair
        and isinstance(value[0], RecordedQuestion)
        and isinstance(value[1], Cancelled)
    ):
        raise TypeError("declined is a (RecordedQuestion, Cancelled) pair")


@attrs.frozen(kw_only=True)
class RecordedQuestion:
    """A request the stream holds for a call, and its bare question id (the tool's own).

    ``question_id`` is ``None`` for a request recorded without one (JP
    records none): it cannot be known, since an inquiry id is opaque and
    never parsed (RFD 082). ``parked``: the writer marked it parked by the
    detached policy (rather than left open by a run that stopped).
    """

    request: InquiryRequest = attrs.field(validator=of_type(InquiryRequest))
    question_id: str | None = attrs.field(validator=optional_of_type(str))
    parked: bool = attrs.field(default=False, validator=of_type(bool))

    def as_asked(self) -> Question:
        """The question as the tool asked it (only its ids matter: it is not asked again).

        Recorded without its question id, it goes by its inquiry id, an
        opaque name for it that nothing parses.
        """
        question_id = self.request.id if self.question_id is None else self.question_id
        return self.request.question.as_asked(question_id)

    def same_as(self, question: Question, source: InquirySource) -> bool:
        """Whether the tool, asking ``question`` from ``source``, asks exactly this again.

        Source, question id, text, answer type with its options, default and
        context must all be equal. A question recorded without its id is
        matched on everything that was recorded: the tool's id for it now
        has nothing to be compared with.
        """
        if self.request.source != source:
            return False
        asked = InquiryQuestion.from_question(question)
        recorded = self.request.question
        if self.question_id is None:
            return attrs.evolve(asked, id=None) == attrs.evolve(recorded, id=None)
        if recorded.id is None:
            recorded = attrs.evolve(recorded, id=self.question_id)
        return question.id == self.question_id and asked == recorded


@attrs.frozen(kw_only=True)
class RecordedCall:
    """What the stream holds of a tool call left open when its turn stopped.

    ``answers``: each question's latest recorded answer, by bare question id,
    given to the tool when it runs again (never a secret: none is recorded).
    ``asked``: how often each question id was recorded for the call, which
    its attempt and question budgets count. ``waiting``: its request still
    open. ``declined``: its last question, closed without an answer and
    nothing after it, with the response that closed it.
    """

    answers: Mapping[str, JsonValue] = attrs.field(factory=dict, converter=_answers)
    asked: Mapping[str, int] = attrs.field(factory=dict, converter=_counts)
    waiting: RecordedQuestion | None = attrs.field(
        default=None, validator=optional_of_type(RecordedQuestion)
    )
    declined: tuple[RecordedQuestion, Cancelled] | None = attrs.field(
        default=None, validator=_optional_declined
    )


class ToolCall:
    """One tool call on its way to a response (the machine's model).

    Start it with :meth:`begin`, then feed it what happens. Every method
    returns the :class:`Step`. ``response`` is set once the call is over.
    """

    __slots__ = (
        "answers",
        "arguments",
        "asked",
        "buffer",
        "detached",
        "inquiries",
        "inquiry",
        "max_attempts",
        "max_questions",
        "on_timeout",
        "pending",
        "permission_parked",
        "request",
        "response",
        "result_mode",
        "run_mode",
        "state",
        "terminal",
        "turn",
        "waiting",
    )

    def __init__(
        self,
        *,
        turn: TurnState,
        request: ToolCallRequest,
        run_mode: RunMode,
        terminal: bool,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_questions: int = DEFAULT_MAX_QUESTIONS,
        detached: DetachedPolicy | None = None,
        result_mode: ResultMode = ResultMode.UNATTENDED,
        on_timeout: OnTimeout = OnTimeout.CLOSE,
        permission_parked: bool = False,
    ) -> None:
        """A tool call not yet begun (state ``new``).

        ``terminal``: a prompt is there (a person, or an answers file standing
        in for one). ``detached``: the tool's detached policy, which decides a
        prompt nobody can answer (RFD 049's ``deny`` for each kind, unless
        given). ``result_mode``: ``ask`` to have the person confirm the result
        reaches the model. ``on_timeout``: what a prompt on screen past its
        timeout becomes. ``permission_parked``: its permission was parked
        earlier in the turn, and is asked again now (rule 8).
        """
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        if max_questions < 1:
            raise ValueError(f"max_questions must be at least 1, not {max_questions}")
        self.state = ToolCallState.NEW
        self.buffer = StepBuffer()
        self.turn = turn
        self.request = request
        self.arguments: Mapping[str, JsonValue] = request.arguments
        self.run_mode = run_mode
        self.terminal = terminal
        self.detached = detached if detached is not None else DetachedPolicy()
        if not isinstance(self.detached, DetachedPolicy):
            raise TypeError(f"detached must be a DetachedPolicy, not {type(detached).__name__}")
        if not isinstance(result_mode, ResultMode):
            raise TypeError(f"result_mode must be a ResultMode, not {type(result_mode).__name__}")
        self.result_mode = result_mode
        if not isinstance(on_timeout, OnTimeout):
            raise TypeError(f"on_timeout must be an OnTimeout, not {type(on_timeout).__name__}")
        self.on_timeout = on_timeout
        if type(permission_parked) is not bool:
            raise TypeError("permission_parked must be a bool")
        self.permission_parked = permission_parked
        #: A finished tool's result while it waits to be delivered: (content, is_error).
        self.pending: tuple[str, bool] | None = None
        self.max_attempts = max_attempts
        self.max_questions = max_questions
        self.answers: dict[str, ToolAnswer] = {}
        self.asked: Counter[str] = Counter()
        self.inquiry: Inquiry | None = None
        self.inquiries: list[Inquiry] = []
        self.response: ToolCallResponse | None = None
        #: The request recorded before a restart that the call has not yet
        #: adopted or superseded (state ``resuming``).
        self.waiting: RecordedQuestion | None = None

    @classmethod
    def begin(
        cls,
        *,
        turn: TurnState,
        request: ToolCallRequest,
        run_mode: RunMode,
        terminal: bool,
        remembered_permission: PermissionDecision | None,
        available: bool = True,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_questions: int = DEFAULT_MAX_QUESTIONS,
        detached: DetachedPolicy | None = None,
        result_mode: ResultMode = ResultMode.UNATTENDED,
        on_timeout: OnTimeout = OnTimeout.CLOSE,
        permission_parked: bool = False,
    ) -> tuple[ToolCall, Step]:
        """Decide permission as far as possible without asking anyone.

        ``available`` is false when no executor is registered under the
        tool's name: the call then fails at once, telling the model so.
        ``permission_parked``: a call whose permission was parked earlier in
        the turn, begun again when the turn is continued (rule 8).
        """
        call = cls(
            turn=turn,
            request=request,
            run_mode=run_mode,
            terminal=terminal,
            max_attempts=max_attempts,
            max_questions=max_questions,
            detached=detached,
            result_mode=result_mode,
            on_timeout=on_timeout,
            permission_parked=permission_parked,
        )
        return call, call._fire("begin", remembered=remembered_permission, available=available)

    @classmethod
    def resume(
        cls,
        *,
        turn: TurnState,
        request: ToolCallRequest,
        recorded: RecordedCall,
        run_mode: RunMode,
        terminal: bool,
        available: bool = True,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_questions: int = DEFAULT_MAX_QUESTIONS,
        detached: DetachedPolicy | None = None,
        result_mode: ResultMode = ResultMode.UNATTENDED,
        on_timeout: OnTimeout = OnTimeout.CLOSE,
    ) -> tuple[ToolCall, Step]:
        """Take up a call left open when its turn stopped, from what the stream ``recorded``.

        A call with nothing recorded is begun (:meth:`begin`), not resumed:
        nothing shows it ever got permission to run.
        """
        if not isinstance(recorded, RecordedCall):
            raise TypeError(f"recorded must be a RecordedCall, not {type(recorded).__name__}")
        call = cls(
            turn=turn,
            request=request,
            run_mode=run_mode,
            terminal=terminal,
            max_attempts=max_attempts,
            max_questions=max_questions,
            detached=detached,
            result_mode=result_mode,
            on_timeout=on_timeout,
        )
        return call, call._fire("resume", recorded=recorded, available=available)

    @property
    def id(self) -> str:
        """The tool-call id."""
        return self.request.id

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.request.name

    @property
    def closed(self) -> bool:
        """Whether the process is done with the call: it has its response, or was parked."""
        return self.state in TOOL_CALL_MACHINE.final

    def _fire(self, trigger: str, **payload: Any) -> Step:
        try:
            TOOL_CALL_MACHINE.fire(self, trigger, **payload)
        except BaseException:
            self.buffer.discard()
            raise
        return self.buffer.take()

    def terminal_ready(
        self,
        *,
        remembered_permission: PermissionDecision | None = None,
        cached_answer: CachedAnswer | None = None,
    ) -> Step:
        """The terminal is free for this call's queued prompt.

        Give the turn's remembered permission for a permission prompt, and the
        turn cache's answer for a question; each is checked again now.
        """
        return self._fire("terminal_ready", remembered=remembered_permission, cached=cached_answer)

    def permit(
        self,
        *,
        remember: bool = False,
        arguments: Mapping[str, Any] | None = None,
        from_file: bool = False,
    ) -> Step:
        """Run the tool (``y``; ``Y`` remembers; ``e`` gives edited ``arguments``).

        ``from_file``: the answers file gave the reply, standing in for the person.
        """
        if arguments is not None:
            check_json("edited arguments", dict(arguments))
        return self._fire("permit", remember=remember, arguments=arguments, from_file=from_file)

    def deny(
        self, *, remember: bool = False, reason: str | None = None, from_file: bool = False
    ) -> Step:
        """Skip the tool (``n``; ``N`` remembers; ``r`` gives a ``reason``)."""
        return self._fire("deny", remember=remember, reason=reason, from_file=from_file)

    def unanswered(self) -> Step:
        """The prompt on screen (permission or delivery) has no reply: the detached policy decides.

        What an answers file standing in for the person says when it has no
        entry for the prompt.
        """
        return self._fire("unanswered")

    def deliver(self, *, from_file: bool = False) -> Step:
        """Deliver the finished tool's result to the model (the person's ``y``)."""
        return self._fire("deliver", from_file=from_file)

    def withhold(self, *, from_file: bool = False) -> Step:
        """Do not deliver the result (``n``): the model is told the person withheld it."""
        return self._fire("withhold", from_file=from_file)

    def cancel_delivery(self) -> Step:
        """The person cancelled the delivery prompt (Ctrl-C, end of input)."""
        return self._fire("cancel_delivery")

    def completed(self, content: str, *, is_error: bool) -> Step:
        """The tool finished with ``content`` (an error when ``is_error``)."""
        return self._fire("completed", content=content, is_error=is_error)

    def needs_input(
        self,
        question: Question,
        *,
        source: InquirySource,
        accumulated_answers: Mapping[str, ToolAnswer],
        facts: InquiryFacts,
    ) -> Step:
        """The tool stopped with ``question``; ``source`` was resolved by the executor."""
        # The answers are copied by the row that keeps them, not here as well.
        return self._fire(
            "needs_input",
            question=question,
            source=source,
            accumulated=accumulated_answers,
            facts=facts,
        )

    def adopts(self, question: Question, source: InquirySource) -> bool:
        """Whether ``question`` is exactly the request recorded before the restart."""
        waiting = self.waiting
        return (
            self.state is ToolCallState.RESUMING
            and waiting is not None
            and waiting.same_as(question, source)
        )

    def supersede(self) -> Step:
        """Close the request recorded before the restart as ``interrupted``; the run goes on."""
        return self._fire("supersede")

    @classmethod
    def discard(
        cls,
        *,
        turn: TurnState,
        request: ToolCallRequest,
        recorded: RecordedCall,
        run_mode: RunMode,
        terminal: bool,
    ) -> tuple[ToolCall, Step]:
        """Close a call left open when its turn stopped, its turn discarded (rule 10).

        ``recorded`` is what the stream holds of it: its question that
        waited, if one did, is closed first. ``run_mode`` and ``terminal``
        are the call's as configured; nothing here asks or runs.
        """
        if not isinstance(recorded, RecordedCall):
            raise TypeError(f"recorded must be a RecordedCall, not {type(recorded).__name__}")
        call = cls(turn=turn, request=request, run_mode=run_mode, terminal=terminal)
        return call, call._fire("discard", recorded=recorded)

    def answer(
        self,
        inquiry_id: str,
        value: ToolAnswer,
        *,
        remember: bool = False,
        from_file: bool = False,
    ) -> Step:
        """The open question ``inquiry_id`` was answered ``value`` (``from_file``: by the file)."""
        inquiry = self._open_inquiry(inquiry_id, "answer")
        payload = inquiry.checked_answer(value, remember=remember, from_file=from_file)
        return self._fire("answer", **payload)

    def unanswered_input(self, inquiry_id: str) -> Step:
        """The question ``inquiry_id``, on screen, has no reply: the detached policy decides."""
        self._open_inquiry(inquiry_id, "unanswered_input")
        return self._fire("unanswered_input")

    def cancel_input(self, inquiry_id: str) -> Step:
        """The user cancelled the open question ``inquiry_id``."""
        self._open_inquiry(inquiry_id, "cancel_input")
        return self._fire("cancel_input")

    def fail_input(self, inquiry_id: str, error: str) -> Step:
        """The backend failed to answer the open question ``inquiry_id``."""
        self._open_inquiry(inquiry_id, "fail_input")
        return self._fire("fail_input", error=error)

    def interrupt(self) -> Step:
        """The turn is being cancelled: close whatever is open."""
        return self._fire("interrupt")

    def time_out(self, after: str) -> Step:
        """The permission or delivery prompt on screen outlived its timeout (``after``)."""
        return self._fire("time_out", after=after)

    def time_out_input(self, inquiry_id: str, after: str) -> Step:
        """The question ``inquiry_id``, on screen, outlived its timeout (``after``)."""
        self._open_inquiry(inquiry_id, "time_out_input")
        return self._fire("time_out_input", after=after)

    def _open_inquiry(self, inquiry_id: str, trigger: str) -> Inquiry:
        inquiry = self.inquiry
        if self.state is not ToolCallState.AWAITING_INPUT or inquiry is None:
            raise IllegalTransitionError(
                machine="tool_call", trigger=trigger, state=self.state.value
            )
        if inquiry.id != inquiry_id:
            raise IllegalTransitionError(
                machine="tool_call",
                trigger=trigger,
                state=self.state.value,
                detail=f"inquiry {inquiry_id!r} is not the open one ({inquiry.id!r})",
            )
        return inquiry


# ------------------------------------------------------------------ guards


def _g(name: str, description: str, test: Any) -> Guard[ToolCall]:
    return Guard(name, description, test)


def _asking(m: ToolCall) -> bool:
    return m.run_mode is RunMode.ASK


UNAVAILABLE = _g("unavailable", "no such tool is registered", lambda _, p: not p["available"])
UNATTENDED = _g("unattended", "run mode unattended", lambda m, _: m.run_mode is RunMode.UNATTENDED)
SKIP_MODE = _g("skip", "run mode skip", lambda m, _: m.run_mode is RunMode.SKIP)
REMEMBERED_YES = _g(
    "remembered_y",
    "run mode ask and a Y was remembered this turn",
    lambda m, p: _asking(m) and p["remembered"] == "y",
)
REMEMBERED_NO = _g(
    "remembered_n",
    "run mode ask and an N was remembered this turn",
    lambda m, p: _asking(m) and p["remembered"] == "n",
)
NOBODY_TO_ASK = _g(
    "nobody", "run mode ask and nobody can be asked", lambda m, _: _asking(m) and not m.terminal
)
ASK = _g("ask", "run mode ask and a prompt is there", lambda m, _: _asking(m) and m.terminal)
UNDECIDED = _g("undecided", "nothing remembered", lambda _, p: p["remembered"] not in ("y", "n"))
FROM_FILE = _g("from_file", "the answers file replied", lambda _, p: p["from_file"])
PARKED_PERMISSION = _g(
    "parked_permission",
    "its permission was parked earlier in the turn",
    lambda m, _: m.permission_parked,
)
TIMEOUT_TO_POLICY = _g(
    "timeout_to_policy",
    "on_timeout detached: the detached policy decides",
    lambda m, _: m.on_timeout is OnTimeout.DETACHED,
)
SUCCEEDED = _g(
    "ok",
    "result mode unattended, and the tool succeeded",
    lambda m, p: m.result_mode is ResultMode.UNATTENDED and not p["is_error"],
)
ERRORED = _g(
    "error",
    "result mode unattended, and the tool reported an error",
    lambda m, p: m.result_mode is ResultMode.UNATTENDED and p["is_error"],
)
TO_CONFIRM = _g(
    "confirm",
    "result mode ask, and a prompt is there",
    lambda m, _: m.result_mode is ResultMode.ASK and m.terminal,
)
NOBODY_TO_CONFIRM = _g(
    "nobody_to_confirm",
    "result mode ask, and nobody can be asked",
    lambda m, _: m.result_mode is ResultMode.ASK and not m.terminal,
)
RESULT_OK = _g("result_ok", "the tool succeeded", lambda m, _: not _pending(m)[1])
RESULT_ERROR = _g("result_error", "the tool reported an error", lambda m, _: _pending(m)[1])


def _policy_guard(kind: str, mode: DetachedMode) -> Guard[ToolCall]:
    attribute = "run" if kind == "permissions" else "deliver"
    return _g(
        f"{attribute}_{mode.value}",
        f"detached policy {mode.value} for {kind}",
        lambda m, _: getattr(m.detached, attribute) is mode,
    )


RUN_AUTO = _policy_guard("permissions", DetachedMode.AUTO)
RUN_DEFAULTS = _policy_guard("permissions", DetachedMode.DEFAULTS)
RUN_DENY = _policy_guard("permissions", DetachedMode.DENY)
RUN_PARK = _policy_guard("permissions", DetachedMode.PARK)
DELIVER_AUTO = _policy_guard("deliveries", DetachedMode.AUTO)
DELIVER_DEFAULTS = _policy_guard("deliveries", DetachedMode.DEFAULTS)
DELIVER_DENY = _policy_guard("deliveries", DetachedMode.DENY)
INQUIRY_ANSWERED = _g(
    "answered",
    "the question was answered (or redacted)",
    lambda m, _: _inquiry_state(m) in (InquiryState.ANSWERED, InquiryState.REDACTED),
)
INQUIRY_PARKED = _g(
    "parked",
    "the question was parked for an answer given later",
    lambda m, _: _inquiry_state(m) is InquiryState.PARKED,
)
INQUIRY_CANCELLED_BY_USER = _g(
    "cancelled_by_user",
    "the question was cancelled by the user",
    lambda m, _: _cancel_reason(m) is CancellationReason.USER,
)
INQUIRY_WITHDRAWN = _g(
    "withdrawn",
    "the question was withdrawn (its call was interrupted)",
    lambda m, _: _cancel_reason(m) is CancellationReason.WITHDRAWN,
)
INQUIRY_FAILED = _g(
    "failed",
    "the question was cancelled for any other reason",
    lambda m, _: (
        _cancel_reason(m) not in (None, CancellationReason.USER, CancellationReason.WITHDRAWN)
    ),
)


def _recorded(payload: Mapping[str, Any]) -> RecordedCall:
    recorded: RecordedCall = payload["recorded"]
    return recorded


def _declined_reason(payload: Mapping[str, Any]) -> object:
    declined = _recorded(payload).declined
    return None if declined is None else declined[1].reason


DECLINED_BY_USER = _g(
    "declined_by_user",
    "its last recorded question was cancelled by the user, and nothing came after",
    lambda _, p: _declined_reason(p) is CancellationReason.USER,
)
DECLINED = _g(
    "declined",
    "its last recorded question was closed unanswered for another reason",
    lambda _, p: _declined_reason(p) not in (None, CancellationReason.USER),
)
WAITING = _g(
    "waiting",
    "a question recorded before the restart is still open",
    lambda _, p: _recorded(p).waiting is not None,
)
RAN = _g(
    "ran",
    "its recorded questions show it ran before the restart",
    lambda _, p: bool(_recorded(p).asked),
)
ADOPTS = _g(
    "adopts",
    "the tool asks exactly the question recorded before the restart",
    lambda m, p: m.waiting is not None and m.waiting.same_as(p["question"], p["source"]),
)


def _pending(m: ToolCall) -> tuple[str, bool]:
    if m.pending is None:  # pragma: no cover - every row into delivering keeps the result
        raise AssertionError("a result waiting for delivery")
    return m.pending


def _inquiry_state(m: ToolCall) -> InquiryState | None:
    return m.inquiry.state if m.inquiry is not None else None


def _cancel_reason(m: ToolCall) -> object:
    inquiry = m.inquiry
    if inquiry is None or not isinstance(inquiry.response, Cancelled):
        return None
    return inquiry.response.reason


# ----------------------------------------------------------------- actions


def _run(m: ToolCall, out: Out) -> None:
    answers = dict(m.answers)
    out.effect(
        RunTool(tool_call_id=m.id, tool_name=m.name, arguments=m.arguments, answers=answers)
    )


def _finish(m: ToolCall, out: Out, content: str, *, is_error: bool) -> None:
    response = ToolCallResponse(id=m.id, content=content, is_error=is_error)
    m.response = response
    out.record(response)
    out.effect(CompleteTool(response=response))


def _not_available(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, unavailable(m.name), is_error=True)


def _run_now(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _run(m, out)


def _skip_by_configuration(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, SKIPPED_BY_CONFIGURATION, is_error=False)


def _skip_remembered(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, SKIPPED_REMEMBERED, is_error=False)


def _queue_permission(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    out.effect(QueuePermissionPrompt(tool_call_id=m.id, tool_name=m.name))


def _show_permission(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    out.effect(ShowPermissionPrompt(tool_call_id=m.id, tool_name=m.name, arguments=m.arguments))


def _permitted(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    if payload["remember"]:
        m.turn.remember_permission(m.name, "y")
    if payload["arguments"] is not None:
        m.arguments = dict(payload["arguments"])
    _run(m, out)


def _denied(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    if payload["remember"]:
        m.turn.remember_permission(m.name, "n")
    reason = payload["reason"]
    _finish(m, out, skipped_with_reason(reason) if reason else SKIPPED_BY_USER, is_error=False)


def _refuse_to_run(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, permission_refused(m.name, m.detached.run), is_error=True)


def _permission_timed_out(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, permission_timed_out(m.name, payload["after"]), is_error=True)


def _delivery_timed_out(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, delivery_timed_out(m.name, payload["after"]), is_error=True)


def _parked(m: ToolCall, _: Mapping[str, Any], __: Out) -> None:
    # The process is done with the question: nothing of it is asked here again.
    m.inquiry = None


def _keep_result(m: ToolCall, payload: Mapping[str, Any], _: Out) -> None:
    m.pending = (payload["content"], payload["is_error"])


def _queue_delivery(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    _keep_result(m, payload, out)
    out.effect(QueueDeliveryPrompt(tool_call_id=m.id, tool_name=m.name))


def _show_delivery(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    content, is_error = _pending(m)
    out.effect(
        ShowDeliveryPrompt(tool_call_id=m.id, tool_name=m.name, content=content, is_error=is_error)
    )


def _deliver(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    content, is_error = _pending(m)
    _finish(m, out, content, is_error=is_error)


def _withhold(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, RESULT_WITHHELD, is_error=False)


def _delivery_cancelled(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, DELIVERY_CANCELLED, is_error=False)


def _refuse_to_deliver(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, delivery_refused(m.name, m.detached.deliver), is_error=True)


def _succeeded(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, payload["content"], is_error=False)


def _errored(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, payload["content"], is_error=True)


def _open_question(m: ToolCall, payload: Mapping[str, Any], _: Out) -> None:
    question: Question = payload["question"]
    m.answers = dict(payload["accumulated"])
    facts: InquiryFacts = payload["facts"]
    answers = m.asked[question.id]
    # The inquiry records a question it may not ask and closes it at once (its first row).
    if answers >= m.max_attempts:
        facts = attrs.evolve(facts, exhausted=attempts_exhausted(m.name, question, answers))
    elif (total := m.asked.total()) >= m.max_questions:
        facts = attrs.evolve(facts, exhausted=questions_exhausted(m.name, total))
    m.asked[question.id] = answers + 1
    inquiry = Inquiry(
        turn=m.turn,
        tool_call_id=m.id,
        tool_name=m.name,
        question=question,
        source=payload["source"],
        facts=facts,
        buffer=m.buffer,
    )
    m.inquiry = inquiry
    m.inquiries.append(inquiry)
    # Its requests and responses are its own rows.
    INQUIRY_MACHINE.fire(inquiry, "ask")


def _take_up(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    recorded = _recorded(payload)
    m.answers = dict(recorded.answers)
    m.asked = Counter(recorded.asked)
    m.waiting = recorded.waiting
    _run(m, out)


def _cancelled_before(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    _finish(m, out, INPUT_CANCELLED, is_error=False)


def _failed_before(m: ToolCall, payload: Mapping[str, Any], out: Out) -> None:
    declined = _recorded(payload).declined
    if declined is None:  # pragma: no cover - the guard checked
        raise AssertionError("a declined row without a declined question")
    question, response = declined
    # What the tool was told then, where the record alone says it; else JP's word.
    if response.reason is CancellationReason.NO_PROMPT_BACKEND:
        content = secret_without_terminal(m.name, question.as_asked())
    elif response.reason is CancellationReason.ASSISTANT_ROUTING_DENIED:
        content = secret_for_assistant(m.name, question.as_asked())
    else:
        content = INTERRUPTED
    _finish(m, out, content, is_error=True)


def _adopt(m: ToolCall, payload: Mapping[str, Any], _: Out) -> None:
    waiting = m.waiting
    if waiting is None:  # pragma: no cover - the guard checked
        raise AssertionError("adopting without a recorded question")
    m.answers = dict(payload["accumulated"])
    # Counted already: the budgets were counted from the record, this request included.
    inquiry = Inquiry(
        turn=m.turn,
        tool_call_id=m.id,
        tool_name=m.name,
        question=payload["question"],
        source=payload["source"],
        facts=payload["facts"],
        buffer=m.buffer,
    )
    m.waiting = None
    m.inquiry = inquiry
    m.inquiries.append(inquiry)
    INQUIRY_MACHINE.fire(inquiry, "adopt", inquiry_id=waiting.request.id, parked=waiting.parked)


def _close_waiting(m: ToolCall, waiting: RecordedQuestion, trigger: str) -> None:
    """Close ``waiting``, recorded before the restart, by its inquiry's ``trigger`` row."""
    inquiry = Inquiry(
        turn=m.turn,
        tool_call_id=m.id,
        tool_name=m.name,
        question=waiting.as_asked(),
        source=waiting.request.source,
        facts=InquiryFacts(terminal=m.terminal),
        buffer=m.buffer,
    )
    m.inquiries.append(inquiry)
    INQUIRY_MACHINE.fire(inquiry, trigger, inquiry_id=waiting.request.id)


def _supersede(m: ToolCall, _: Mapping[str, Any], __: Out) -> None:
    waiting = m.waiting
    if waiting is None:  # pragma: no cover - every resuming call has one
        raise AssertionError("superseding without a recorded question")
    m.waiting = None
    _close_waiting(m, waiting, "supersede")


def _discard_waiting(m: ToolCall, payload: Mapping[str, Any], _: Out) -> None:
    waiting = _recorded(payload).waiting
    if waiting is None:  # pragma: no cover - the guard checked
        raise AssertionError("discarding a waiting question without one")
    _close_waiting(m, waiting, "discard")


def _discarded(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    m.inquiry = None
    _finish(m, out, DISCARDED, is_error=True)


def _forward(trigger: str) -> Any:
    def forward(m: ToolCall, payload: Mapping[str, Any], _: Out) -> None:
        INQUIRY_MACHINE.fire(m.inquiry, trigger, **payload)  # type: ignore[arg-type]

    return forward


def _resume(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    inquiry = m.inquiry
    if inquiry is None:  # pragma: no cover - the guard checked
        raise AssertionError("resuming without an inquiry")
    m.answers[inquiry.question.id] = inquiry.delivered
    m.inquiry = None
    _run(m, out)


def _input_cancelled(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    m.inquiry = None
    _finish(m, out, INPUT_CANCELLED, is_error=False)


def _input_failed(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    inquiry = m.inquiry
    failure = inquiry.failure if inquiry is not None else None
    m.inquiry = None
    _finish(m, out, failure or INTERRUPTED, is_error=True)


def _interrupted(m: ToolCall, _: Mapping[str, Any], out: Out) -> None:
    m.inquiry = None
    _finish(m, out, INTERRUPTED, is_error=True)


# ------------------------------------------------------------------- table

_S = ToolCallState

# Who decided whether a call runs, and whether it does: the rows' permission column.
_RUN_BY_CONFIGURATION = PermissionRuling(PermissionBy.CONFIGURATION, run=True)
_SKIP_BY_CONFIGURATION = PermissionRuling(PermissionBy.CONFIGURATION, run=False)
_RUN_REMEMBERED = PermissionRuling(PermissionBy.REMEMBERED, run=True)
_SKIP_REMEMBERED = PermissionRuling(PermissionBy.REMEMBERED, run=False)
_RUN_BY_POLICY = PermissionRuling(PermissionBy.DETACHED_POLICY, run=True)
_REFUSED_BY_POLICY = PermissionRuling(PermissionBy.DETACHED_POLICY, run=False)
_RUN_AS_BEFORE = PermissionRuling(PermissionBy.EARLIER_RUN, run=True)
_RUN_AFTER_PARKING = PermissionRuling(PermissionBy.PARKED_THEN_ANSWERED, run=True)
_SKIP_AFTER_PARKING = PermissionRuling(PermissionBy.PARKED_THEN_ANSWERED, run=False)
_NOT_RUN_IN_TIME = PermissionRuling(PermissionBy.TIMED_OUT, run=False)
_RUN_BY_PERSON = PermissionRuling(PermissionBy.PERSON, run=True)
_SKIP_BY_PERSON = PermissionRuling(PermissionBy.PERSON, run=False)
_RUN_BY_FILE = PermissionRuling(PermissionBy.ANSWERS_FILE, run=True)
_SKIP_BY_FILE = PermissionRuling(PermissionBy.ANSWERS_FILE, run=False)
# Who decided whether a finished call's result reaches the model: the rows' delivery column.
_DELIVERED_BY_PERSON = DeliveryRuling(PermissionBy.PERSON, delivered=True)
_WITHHELD_BY_PERSON = DeliveryRuling(PermissionBy.PERSON, delivered=False)
_DELIVERED_BY_FILE = DeliveryRuling(PermissionBy.ANSWERS_FILE, delivered=True)
_WITHHELD_BY_FILE = DeliveryRuling(PermissionBy.ANSWERS_FILE, delivered=False)
_DELIVERED_BY_POLICY = DeliveryRuling(PermissionBy.DETACHED_POLICY, delivered=True)
_WITHHELD_BY_POLICY = DeliveryRuling(PermissionBy.DETACHED_POLICY, delivered=False)
_NOT_DELIVERED_IN_TIME = DeliveryRuling(PermissionBy.TIMED_OUT, delivered=False)
_AUTO, _DEFAULTS, _DENY = DetachedMode.AUTO, DetachedMode.DEFAULTS, DetachedMode.DENY
_PARK = DetachedMode.PARK

#: The tool-call machine, row by row, in the order rows are tried.
TOOL_CALL_ROWS: tuple[Row[ToolCallState, ToolCall], ...] = (
    # Permission.
    Row(trigger="begin", source=_S.NEW, dest=_S.FAILED, guard=UNAVAILABLE,
        action=_not_available, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.UNAVAILABLE),
    Row(trigger="begin", source=_S.NEW, dest=_S.RUNNING, guard=UNATTENDED,
        action=_run_now, effects=(RunTool,), permission=_RUN_BY_CONFIGURATION),
    Row(trigger="begin", source=_S.NEW, dest=_S.SKIPPED, guard=SKIP_MODE,
        action=_skip_by_configuration, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_BY_CONFIGURATION, permission=_SKIP_BY_CONFIGURATION),
    Row(trigger="begin", source=_S.NEW, dest=_S.RUNNING, guard=REMEMBERED_YES,
        action=_run_now, effects=(RunTool,), permission=_RUN_REMEMBERED),
    Row(trigger="begin", source=_S.NEW, dest=_S.SKIPPED, guard=REMEMBERED_NO,
        action=_skip_remembered, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_REMEMBERED, permission=_SKIP_REMEMBERED),
    Row(trigger="begin", source=_S.NEW, dest=_S.PERMISSION_DETACHED, guard=NOBODY_TO_ASK),
    Row(trigger="begin", source=_S.NEW, dest=_S.AWAITING_PERMISSION, guard=ASK,
        action=_queue_permission, effects=(QueuePermissionPrompt,)),
    Row(trigger="interrupt", source=_S.NEW, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    # Taken up after a restart (RFD 023): closed as its last question was, or run again.
    Row(trigger="resume", source=_S.NEW, dest=_S.CANCELLED, guard=DECLINED_BY_USER,
        action=_cancelled_before, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.CANCELLED),
    Row(trigger="resume", source=_S.NEW, dest=_S.FAILED, guard=DECLINED,
        action=_failed_before, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.FAILED),
    Row(trigger="resume", source=_S.NEW, dest=_S.FAILED, guard=UNAVAILABLE,
        action=_not_available, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.UNAVAILABLE),
    Row(trigger="resume", source=_S.NEW, dest=_S.RESUMING, guard=WAITING,
        action=_take_up, effects=(RunTool,), permission=_RUN_AS_BEFORE),
    Row(trigger="resume", source=_S.NEW, dest=_S.RUNNING, guard=RAN,
        action=_take_up, effects=(RunTool,), permission=_RUN_AS_BEFORE),
    # Its turn discarded instead (rule 10): the question that waited is closed, then the call.
    Row(trigger="discard", source=_S.NEW, dest=_S.DISCARDING, guard=WAITING,
        action=_discard_waiting, delegates="inquiry.discard"),
    Row(trigger="discard", source=_S.NEW, dest=_S.CANCELLED,
        action=_discarded, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.DISCARDED),
    Row(trigger="inquiry_closed", source=_S.DISCARDING, dest=_S.CANCELLED,
        action=_discarded, emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.DISCARDED),
    # Run again while the recorded question is open: adopt it, or close it first.
    Row(trigger="needs_input", source=_S.RESUMING, dest=_S.AWAITING_INPUT, guard=ADOPTS,
        action=_adopt, delegates="inquiry.adopt"),
    Row(trigger="supersede", source=_S.RESUMING, dest=_S.RUNNING,
        action=_supersede, delegates="inquiry.supersede"),
    # A queued permission prompt is checked against the turn's decisions again.
    Row(trigger="terminal_ready", source=_S.AWAITING_PERMISSION, dest=_S.RUNNING,
        guard=REMEMBERED_YES, action=_run_now, effects=(RunTool,), permission=_RUN_REMEMBERED),
    Row(trigger="terminal_ready", source=_S.AWAITING_PERMISSION, dest=_S.SKIPPED,
        guard=REMEMBERED_NO, action=_skip_remembered,
        emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_REMEMBERED, permission=_SKIP_REMEMBERED),
    Row(trigger="terminal_ready", source=_S.AWAITING_PERMISSION, dest=_S.ASKING_PERMISSION,
        guard=UNDECIDED, action=_show_permission, effects=(ShowPermissionPrompt,)),
    Row(trigger="interrupt", source=_S.AWAITING_PERMISSION, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    # On screen: only now can the person (or the answers file) permit or deny;
    # a permission parked earlier in the turn is recorded as decided so.
    Row(trigger="permit", source=_S.ASKING_PERMISSION, dest=_S.RUNNING, guard=PARKED_PERMISSION,
        action=_permitted, effects=(RunTool,), permission=_RUN_AFTER_PARKING),
    Row(trigger="permit", source=_S.ASKING_PERMISSION, dest=_S.RUNNING, guard=FROM_FILE,
        action=_permitted, effects=(RunTool,), permission=_RUN_BY_FILE),
    Row(trigger="permit", source=_S.ASKING_PERMISSION, dest=_S.RUNNING,
        action=_permitted, effects=(RunTool,), permission=_RUN_BY_PERSON),
    Row(trigger="deny", source=_S.ASKING_PERMISSION, dest=_S.SKIPPED, guard=PARKED_PERMISSION,
        action=_denied, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_BY_USER, permission=_SKIP_AFTER_PARKING),
    Row(trigger="deny", source=_S.ASKING_PERMISSION, dest=_S.SKIPPED, guard=FROM_FILE,
        action=_denied, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_BY_USER, permission=_SKIP_BY_FILE),
    Row(trigger="deny", source=_S.ASKING_PERMISSION, dest=_S.SKIPPED,
        action=_denied, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SKIPPED_BY_USER, permission=_SKIP_BY_PERSON),
    Row(trigger="unanswered", source=_S.ASKING_PERMISSION, dest=_S.PERMISSION_DETACHED),
    Row(trigger="interrupt", source=_S.ASKING_PERMISSION, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    Row(trigger="time_out", source=_S.ASKING_PERMISSION, dest=_S.PERMISSION_DETACHED,
        guard=TIMEOUT_TO_POLICY),
    Row(trigger="time_out", source=_S.ASKING_PERMISSION, dest=_S.FAILED,
        action=_permission_timed_out, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.FAILED, permission=_NOT_RUN_IN_TIME),
    # Nobody can be asked permission: the detached policy (RFD 049) decides.
    Row(trigger="apply_policy", source=_S.PERMISSION_DETACHED, dest=_S.RUNNING, guard=RUN_AUTO,
        action=_run_now, effects=(RunTool,), auto=True, permission=_RUN_BY_POLICY,
        detached=_AUTO),
    Row(trigger="apply_policy", source=_S.PERMISSION_DETACHED, dest=_S.FAILED,
        guard=RUN_DEFAULTS, action=_refuse_to_run, emits=(ToolCallResponse,),
        effects=(CompleteTool,), auto=True, outcome=CallOutcome.FAILED,
        permission=_REFUSED_BY_POLICY, detached=_DEFAULTS),
    Row(trigger="apply_policy", source=_S.PERMISSION_DETACHED, dest=_S.FAILED, guard=RUN_DENY,
        action=_refuse_to_run, emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.FAILED, permission=_REFUSED_BY_POLICY, detached=_DENY),
    Row(trigger="apply_policy", source=_S.PERMISSION_DETACHED, dest=_S.PARKED, guard=RUN_PARK,
        auto=True, outcome=CallOutcome.PARKED, detached=_PARK),
    # Running.
    Row(trigger="completed", source=_S.RUNNING, dest=_S.SUCCEEDED, guard=SUCCEEDED,
        action=_succeeded, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.SUCCEEDED),
    Row(trigger="completed", source=_S.RUNNING, dest=_S.FAILED, guard=ERRORED,
        action=_errored, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.FAILED),
    Row(trigger="completed", source=_S.RUNNING, dest=_S.AWAITING_DELIVERY, guard=TO_CONFIRM,
        action=_queue_delivery, effects=(QueueDeliveryPrompt,)),
    Row(trigger="completed", source=_S.RUNNING, dest=_S.DELIVERY_DETACHED,
        guard=NOBODY_TO_CONFIRM, action=_keep_result),
    Row(trigger="needs_input", source=_S.RUNNING, dest=_S.AWAITING_INPUT,
        action=_open_question, delegates="inquiry.ask"),
    Row(trigger="interrupt", source=_S.RUNNING, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    # Waiting for the question's inquiry; what happens to it is forwarded.
    Row(trigger="terminal_ready", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("terminal_ready"), delegates="inquiry.terminal_ready"),
    Row(trigger="answer", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("answer"), delegates="inquiry.answer"),
    Row(trigger="cancel_input", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("cancel"), delegates="inquiry.cancel"),
    Row(trigger="fail_input", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("fail"), delegates="inquiry.fail"),
    Row(trigger="unanswered_input", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("unanswered"), delegates="inquiry.unanswered"),
    Row(trigger="interrupt", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("withdraw"), delegates="inquiry.withdraw"),
    Row(trigger="time_out_input", source=_S.AWAITING_INPUT, dest=None,
        action=_forward("time_out"), delegates="inquiry.time_out"),
    Row(trigger="inquiry_closed", source=_S.AWAITING_INPUT, dest=_S.RUNNING,
        guard=INQUIRY_ANSWERED, action=_resume, effects=(RunTool,), auto=True),
    Row(trigger="inquiry_closed", source=_S.AWAITING_INPUT, dest=_S.CANCELLED,
        guard=INQUIRY_CANCELLED_BY_USER, action=_input_cancelled,
        emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.CANCELLED),
    Row(trigger="inquiry_closed", source=_S.AWAITING_INPUT, dest=_S.CANCELLED,
        guard=INQUIRY_WITHDRAWN, action=_interrupted,
        emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.INTERRUPTED),
    Row(trigger="inquiry_closed", source=_S.AWAITING_INPUT, dest=_S.FAILED,
        guard=INQUIRY_FAILED, action=_input_failed,
        emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.FAILED),
    Row(trigger="inquiry_closed", source=_S.AWAITING_INPUT, dest=_S.PARKED,
        guard=INQUIRY_PARKED, action=_parked, auto=True, outcome=CallOutcome.PARKED),
    # Finished, result mode ask: the person says whether the result reaches the model.
    Row(trigger="terminal_ready", source=_S.AWAITING_DELIVERY, dest=_S.CONFIRMING_DELIVERY,
        action=_show_delivery, effects=(ShowDeliveryPrompt,)),
    Row(trigger="interrupt", source=_S.AWAITING_DELIVERY, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    Row(trigger="deliver", source=_S.CONFIRMING_DELIVERY, dest=_S.DELIVERED, guard=FROM_FILE,
        delivery=_DELIVERED_BY_FILE),
    Row(trigger="deliver", source=_S.CONFIRMING_DELIVERY, dest=_S.DELIVERED,
        delivery=_DELIVERED_BY_PERSON),
    Row(trigger="withhold", source=_S.CONFIRMING_DELIVERY, dest=_S.WITHHELD, guard=FROM_FILE,
        action=_withhold, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.WITHHELD, delivery=_WITHHELD_BY_FILE),
    Row(trigger="withhold", source=_S.CONFIRMING_DELIVERY, dest=_S.WITHHELD,
        action=_withhold, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.WITHHELD, delivery=_WITHHELD_BY_PERSON),
    Row(trigger="cancel_delivery", source=_S.CONFIRMING_DELIVERY, dest=_S.CANCELLED,
        action=_delivery_cancelled, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.CANCELLED),
    Row(trigger="unanswered", source=_S.CONFIRMING_DELIVERY, dest=_S.DELIVERY_DETACHED),
    Row(trigger="interrupt", source=_S.CONFIRMING_DELIVERY, dest=_S.CANCELLED,
        action=_interrupted, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.INTERRUPTED),
    Row(trigger="time_out", source=_S.CONFIRMING_DELIVERY, dest=_S.DELIVERY_DETACHED,
        guard=TIMEOUT_TO_POLICY),
    Row(trigger="time_out", source=_S.CONFIRMING_DELIVERY, dest=_S.FAILED,
        action=_delivery_timed_out, emits=(ToolCallResponse,), effects=(CompleteTool,),
        outcome=CallOutcome.FAILED, delivery=_NOT_DELIVERED_IN_TIME),
    # Nobody can confirm the delivery: the detached policy decides.
    Row(trigger="apply_policy", source=_S.DELIVERY_DETACHED, dest=_S.DELIVERED,
        guard=DELIVER_AUTO, auto=True, delivery=_DELIVERED_BY_POLICY, detached=_AUTO),
    Row(trigger="apply_policy", source=_S.DELIVERY_DETACHED, dest=_S.FAILED,
        guard=DELIVER_DEFAULTS, action=_refuse_to_deliver, emits=(ToolCallResponse,),
        effects=(CompleteTool,), auto=True, outcome=CallOutcome.FAILED,
        delivery=_WITHHELD_BY_POLICY, detached=_DEFAULTS),
    Row(trigger="apply_policy", source=_S.DELIVERY_DETACHED, dest=_S.FAILED,
        guard=DELIVER_DENY, action=_refuse_to_deliver, emits=(ToolCallResponse,),
        effects=(CompleteTool,), auto=True, outcome=CallOutcome.FAILED,
        delivery=_WITHHELD_BY_POLICY, detached=_DENY),
    # Delivered: the call ends as its tool did.
    Row(trigger="settle", source=_S.DELIVERED, dest=_S.SUCCEEDED, guard=RESULT_OK,
        action=_deliver, emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.SUCCEEDED),
    Row(trigger="settle", source=_S.DELIVERED, dest=_S.FAILED, guard=RESULT_ERROR,
        action=_deliver, emits=(ToolCallResponse,), effects=(CompleteTool,), auto=True,
        outcome=CallOutcome.FAILED),
)  # fmt: skip

TOOL_CALL_MACHINE: TableMachine[ToolCallState, ToolCall] = TableMachine(
    name="tool_call",
    states=ToolCallState,
    start=ToolCallState.NEW,
    rows=TOOL_CALL_ROWS,
    final=(
        ToolCallState.SUCCEEDED,
        ToolCallState.FAILED,
        ToolCallState.SKIPPED,
        ToolCallState.WITHHELD,
        ToolCallState.CANCELLED,
        ToolCallState.PARKED,
    ),
    rules=__doc__ or "",
)
