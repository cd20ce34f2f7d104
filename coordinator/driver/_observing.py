"""What the driver tells its observers: each machine step, in typed facts.

Theory of operation: every step the :class:`~coordinator.ToolCoordinator`
carries out is one tool call's machine (and the inquiry machine it drives)
reacting to one thing that happened. The step's ``fired`` rows say exactly
what the machines decided; this module turns them into :class:`StepFacts`,
handed to the coordinator's ``on_step`` callback: the tool call the step
belongs to, each row that fired (:class:`FiredRow`: its machine, trigger,
source, destination and guard, and the :class:`~machines.Row` itself), the
entries it appended (each with the row that emitted it), the machines'
states after it, and what follows from those rows:

- :class:`CallOutcome`: how a tool call ended (set on the step that ended it);
- :class:`Resolution`: how a question was resolved (on the step that closed it);
- :class:`Permission`: who let a tool run or skipped it, and whether the
  person's decision is remembered for the turn;
- :class:`QuestionFacts`: which question the step concerned, and its
  attempt and number against the tool call's limits;
- :class:`SecretDefaultNotice`: a secret question came with a default.

Rules:

1. Nothing here reads a record's text, an id's shape or a counter's change:
   each fact is read from the rows that fired (looked up in the machine
   tables by the row's id) and from what the driver handed the machine.
2. Each row into a final state has its outcome or resolution; the tests run
   over every row of both tables, so a row added without one fails them.
3. Facts are built only when there is an observer: a driver without one
   pays nothing for them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from coordinator.stream._entries import EventEntry
from machines import (
    INQUIRY_MACHINE,
    TOOL_CALL_MACHINE,
    Effect,
    InquiryState,
    JsonValue,
    Row,
    ToolCallState,
)

if TYPE_CHECKING:
    from machines import Event, Fired, Step, ToolCall

__all__ = [
    "NOTHING_TOLD",
    "CallOutcome",
    "FiredRow",
    "Permission",
    "PermissionBy",
    "QuestionFacts",
    "RecordedEntry",
    "Resolution",
    "SecretDefaultNotice",
    "StepFacts",
    "Told",
    "call_outcome",
    "fired_row",
    "permission",
    "resolution",
    "step_facts",
]


class CallOutcome(enum.Enum):
    """How a tool call ended, read from the row that took it to its final state."""

    SUCCEEDED = "succeeded"
    #: The tool reported an error, its executor failed, or a question it asked failed.
    FAILED = "failed"
    #: No executor is registered under the tool's name.
    UNAVAILABLE = "unavailable"
    SKIPPED_BY_CONFIGURATION = "skipped by configuration"
    SKIPPED_BY_USER = "skipped by the user"
    #: An ``N`` given earlier in the turn skipped it.
    SKIPPED_REMEMBERED = "skipped, remembered"
    #: The person cancelled a question it asked.
    CANCELLED = "cancelled"
    #: The batch was stopped (``cancel``, Ctrl-C) before the call got further.
    INTERRUPTED = "interrupted"


class Resolution(enum.Enum):
    """How a question was resolved, read from the row that closed it."""

    #: An answer the person gave earlier in the turn, and asked to remember.
    REMEMBERED = "remembered"
    #: A static answer from configuration.
    CONFIGURATION = "configuration"
    PERSON = "person"
    MODEL = "model"
    #: Closed before anyone was asked: asked too often, a secret that may not
    #: go where it would have to, or a static answer that does not fit.
    REFUSED = "refused"
    #: The person cancelled it, or the batch was stopped while it waited.
    CANCELLED = "cancelled"
    #: The model could not answer it.
    FAILED = "failed"
    #: Asked before its turn stopped, and closed when the turn was continued
    #: without being asked again as it stood (``supersede``: ``interrupted``).
    INTERRUPTED = "interrupted"


class PermissionBy(enum.Enum):
    """Who decided whether a tool call runs."""

    #: The tool's run mode: ``unattended`` runs it, ``skip`` skips it.
    CONFIGURATION = "configuration"
    #: Run mode ``ask`` with nobody at a terminal to ask: it runs, as JP does.
    NO_TERMINAL = "no terminal"
    #: A ``Y`` or ``N`` the person gave earlier in the turn.
    REMEMBERED = "remembered"
    PERSON = "person"
    #: A call taken up after a restart whose recorded questions show it had run:
    #: it was let run then, and is not asked again (RFD 023).
    EARLIER_RUN = "earlier run"


@attrs.frozen(kw_only=True)
class Permission:
    """A decision to run a tool call or to skip it.

    ``remember``: the person's ``Y`` or ``N``, remembered for the rest of the
    turn. ``cancelled``: the person cancelled the prompt, which skips the
    call. ``reason`` (``r``) and ``arguments`` (``e``, edited) are the
    person's, as given.
    """

    run: bool
    by: PermissionBy
    remember: bool = False
    cancelled: bool = False
    reason: str | None = None
    arguments: Mapping[str, JsonValue] | None = None


@attrs.frozen(kw_only=True)
class FiredRow:
    """One row that fired, as typed facts (and the row of the table itself)."""

    machine: str
    trigger: str
    source: ToolCallState | InquiryState
    #: The state after the row (its source again for a row that stays).
    dest: ToolCallState | InquiryState
    #: The guard's name, ``None`` for an unguarded row.
    guard: str | None
    row: Row[Any, Any] = attrs.field(repr=False, eq=False)


@attrs.frozen(kw_only=True)
class RecordedEntry:
    """An entry a step appended, and the row that emitted its record."""

    entry: EventEntry
    row: FiredRow


@attrs.frozen(kw_only=True)
class QuestionFacts:
    """The question a step concerned, after the step.

    ``attempt`` counts how often this tool call has asked this question id,
    this time included (``max_attempts`` is its limit); ``number`` counts the
    questions it has asked in all (``max_questions``). ``remembered``: the
    person's answer, closed in this step, is remembered for the turn.
    ``failure`` is what the tool call is told when the question was not
    answered (``None`` otherwise).
    """

    inquiry_id: str | None
    question_id: str
    state: InquiryState
    attempt: int
    max_attempts: int
    number: int
    max_questions: int
    resolution: Resolution | None = None
    remembered: bool = False
    failure: str | None = None


@attrs.frozen(kw_only=True)
class SecretDefaultNotice:
    """A secret question came with a ``default``: recorded as RFD 082 says, never pre-filled.

    Told once per tool and question id for each coordinator.
    """

    tool_call_id: str
    tool_name: str
    question_id: str

    @property
    def message(self) -> str:
        """The warning, in words (names only: never the default itself)."""
        return (
            f"tool {self.tool_name!r} gives its secret question {self.question_id!r} a "
            "default: it is recorded in the conversation as given (RFD 082), and never "
            "offered at the prompt; a tool must not put a sensitive value there"
        )


@attrs.frozen(kw_only=True)
class StepFacts:
    """What one machine step did, for the coordinator's ``on_step`` observer.

    ``fired`` lists every row in the order it fired (the tool call's and its
    inquiry's); ``entries`` what the step appended, in order.
    ``call_state`` is the tool call's state after the step; ``question``,
    the question it concerned, if any. ``outcome`` is set on the step that
    ended the call, ``permission`` on the one that decided whether it runs.
    """

    tool_call_id: str
    tool_name: str
    fired: tuple[FiredRow, ...]
    entries: tuple[RecordedEntry, ...]
    #: What the step asked the driver to do, in order (a secret answer stays wrapped).
    effects: tuple[Effect, ...]
    call_state: ToolCallState
    question: QuestionFacts | None = None
    outcome: CallOutcome | None = None
    permission: Permission | None = None
    notices: tuple[SecretDefaultNotice, ...] = ()

    @property
    def records(self) -> tuple[Event, ...]:
        """The records the step appended, in order."""
        return tuple(recorded.entry.payload for recorded in self.entries)


@attrs.frozen(kw_only=True)
class Told:
    """What the driver handed the machine in the step: facts the rows cannot say.

    ``remember``: the person asked to remember their answer (to a permission
    prompt or a question); ``prompt_cancelled``: they cancelled the
    permission prompt; ``reason`` and ``arguments``: what they gave with it.
    ``notices`` are the driver's own.
    """

    remember: bool = False
    prompt_cancelled: bool = False
    reason: str | None = None
    arguments: Mapping[str, JsonValue] | None = None
    notices: tuple[SecretDefaultNotice, ...] = ()


NOTHING_TOLD = Told()

# ----------------------------------------------------------------- the rows

_MACHINES = {machine.name: machine for machine in (TOOL_CALL_MACHINE, INQUIRY_MACHINE)}


@attrs.frozen
class _Known:
    """A row as typed facts, and what it means, worked out once per row of a table."""

    row: FiredRow
    outcome: CallOutcome | None
    resolution: Resolution | None
    #: The decision the row makes, ``None`` if it makes none; a person's is
    #: completed from what the driver was told (:func:`permission`).
    permission: Permission | None


_ROWS: dict[tuple[str, str], _Known] = {}


def _known(fired: Fired) -> _Known:
    key = (fired.machine, fired.row)
    known = _ROWS.get(key)
    if known is None:
        row = next(row for row in _MACHINES[fired.machine].rows if row.id == fired.row)
        typed = FiredRow(
            machine=fired.machine,
            trigger=row.trigger,
            source=row.source,
            dest=row.target,
            guard=row.guard.name if row.guard is not None else None,
            row=row,
        )
        known = _Known(typed, call_outcome(typed), resolution(typed), permission(typed))
        _ROWS[key] = known
    return known


def fired_row(fired: Fired) -> FiredRow:
    """The typed view of a row that fired, looked up in its machine's table by the row's id."""
    return _known(fired).row


def call_outcome(row: FiredRow) -> CallOutcome | None:
    """How the tool call ended, if ``row`` (of the tool-call machine) ended it."""
    dest = row.dest
    if row.machine != TOOL_CALL_MACHINE.name or dest not in TOOL_CALL_MACHINE.final:
        return None
    if dest is ToolCallState.SUCCEEDED:
        return CallOutcome.SUCCEEDED
    if dest is ToolCallState.SKIPPED:
        if row.trigger == "deny":
            return CallOutcome.SKIPPED_BY_USER
        return (
            CallOutcome.SKIPPED_BY_CONFIGURATION
            if row.guard == "skip"
            else CallOutcome.SKIPPED_REMEMBERED
        )
    if dest is ToolCallState.CANCELLED:
        return CallOutcome.INTERRUPTED if row.trigger == "interrupt" else CallOutcome.CANCELLED
    return CallOutcome.UNAVAILABLE if row.guard == "unavailable" else CallOutcome.FAILED


def resolution(row: FiredRow) -> Resolution | None:
    """How the question was resolved, if ``row`` (of the inquiry machine) closed it."""
    if row.machine != INQUIRY_MACHINE.name or row.dest not in INQUIRY_MACHINE.final:
        return None
    if row.dest is InquiryState.CANCELLED:
        by_trigger = {
            "cancel": Resolution.CANCELLED,
            "fail": Resolution.FAILED,
            "supersede": Resolution.INTERRUPTED,
        }
        return by_trigger.get(row.trigger, Resolution.REFUSED)
    return _ANSWERED_FROM[row.source]


#: Who answered, by the state the answering row leaves.
_ANSWERED_FROM: Mapping[ToolCallState | InquiryState, Resolution] = {
    InquiryState.CACHED: Resolution.REMEMBERED,
    InquiryState.STATIC: Resolution.CONFIGURATION,
    InquiryState.SHOWN: Resolution.PERSON,
    InquiryState.ROUTED: Resolution.MODEL,
}


_DECIDES = (ToolCallState.RUNNING, ToolCallState.RESUMING, ToolCallState.SKIPPED)
_PERMISSION_BY_GUARD = {
    "unattended": PermissionBy.CONFIGURATION,
    "skip": PermissionBy.CONFIGURATION,
    "no_terminal": PermissionBy.NO_TERMINAL,
    "remembered_y": PermissionBy.REMEMBERED,
    "remembered_n": PermissionBy.REMEMBERED,
    "ran": PermissionBy.EARLIER_RUN,
    "waiting": PermissionBy.EARLIER_RUN,
}


def permission(row: FiredRow, told: Told = NOTHING_TOLD) -> Permission | None:
    """The decision to run or skip, if ``row`` (of the tool-call machine) made it."""
    if (
        row.machine != TOOL_CALL_MACHINE.name
        or row.source
        not in (
            ToolCallState.NEW,
            ToolCallState.AWAITING_PERMISSION,
            ToolCallState.ASKING_PERMISSION,
        )
        or row.dest not in _DECIDES
    ):
        return None
    run = row.dest is not ToolCallState.SKIPPED
    if row.source is ToolCallState.ASKING_PERMISSION:
        return Permission(
            run=run,
            by=PermissionBy.PERSON,
            remember=told.remember,
            cancelled=told.prompt_cancelled,
            reason=told.reason,
            arguments=told.arguments,
        )
    return Permission(run=run, by=_PERMISSION_BY_GUARD[row.guard or ""])


# ---------------------------------------------------------------- the facts


def step_facts(
    call: ToolCall,
    step: Step,
    entries: list[EventEntry],
    told: Told = NOTHING_TOLD,
) -> StepFacts:
    """The facts of ``step``, which ``call`` took and whose records became ``entries``."""
    fired: list[FiredRow] = []
    recorded: list[RecordedEntry] = []
    outcome: CallOutcome | None = None
    decided: Permission | None = None
    closed: Resolution | None = None
    remembered = asked = False
    for each in step.fired:
        known = _known(each)
        row = known.row
        fired.append(row)
        if each.records:
            taken = entries[len(recorded) : len(recorded) + len(each.records)]
            recorded.extend(RecordedEntry(entry=entry, row=row) for entry in taken)
        if known.outcome is not None:
            outcome = known.outcome
        if known.permission is not None:
            by_person = known.permission.by is PermissionBy.PERSON
            decided = permission(row, told) if by_person else known.permission
        if known.resolution is not None:
            closed = known.resolution
            # The one row that keeps an answer for the turn: the person's, not a secret.
            remembered = told.remember and row.dest is InquiryState.ANSWERED
        asked = asked or row.machine == INQUIRY_MACHINE.name
    inquiry = call.inquiries[-1] if call.inquiries else None
    question = None
    if inquiry is not None and asked:
        question_id = inquiry.question.id
        question = QuestionFacts(
            inquiry_id=inquiry.id,
            question_id=question_id,
            state=inquiry.state,
            attempt=call.asked[question_id],
            max_attempts=call.max_attempts,
            number=call.asked.total(),
            max_questions=call.max_questions,
            resolution=closed,
            remembered=remembered and closed is Resolution.PERSON,
            failure=inquiry.failure,
        )
    return StepFacts(
        tool_call_id=call.id,
        tool_name=call.name,
        fired=tuple(fired),
        entries=tuple(recorded),
        effects=step.effects,
        call_state=call.state,
        question=question,
        outcome=outcome,
        permission=decided,
        notices=told.notices,
    )
