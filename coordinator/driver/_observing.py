"""What the driver tells its observers: each machine step, in typed facts.

Theory of operation: every step the :class:`~coordinator.ToolCoordinator`
carries out is one tool call's machine (and the inquiry machine it drives)
reacting to one thing that happened. The step's ``fired`` rows say exactly
what the machines decided; this module projects them into :class:`StepFacts`,
handed to the coordinator's ``on_step`` callback: the tool call the step
belongs to, each row that fired (:class:`FiredRow`: its machine, trigger,
source, destination and guard, and the :class:`~machines.Row` itself), the
entries it appended (each with the row that emitted it), the machines'
states after it, and what the rows that fired mean, read from their
meaning columns (``machines/_meanings.py``):

- :class:`CallOutcome`: how a tool call ended (a row's ``outcome``, set on
  the step that ended it);
- :class:`Resolution`: how a question was decided (a row's ``resolution``,
  on the step that closed it);
- :class:`Permission`: who let a tool run, skipped it or refused it (a
  row's ``permission``), and, for the person, what they said with it;
- :class:`Delivery`: who let a finished call's result reach the model or
  withheld it (a row's ``delivery``);
- the detached policy's mode wherever nobody could be asked and it decided
  (a row's ``detached``: on the permission, the delivery, or the question);
- :class:`QuestionFacts`: which question the step concerned, and its
  attempt and number against the tool call's limits;
- :class:`SecretDefaultNotice`: a secret question came with a default.

Rules:

1. Nothing here reads a record's text, an id's shape, a counter's change, or
   a row's guard, trigger or state to work out what it meant: each fact is
   a column of a row that fired (``Fired.row``, the table's own row), a
   fact of the models after the step, or what the driver handed the machine.
2. Each row into a final state has its outcome or resolution: the machines
   refuse a table without, and the table tests run over every row.
3. Facts are built only when there is an observer: a driver without one
   pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from coordinator.stream import EventEntry
from machines import (
    INQUIRY_MACHINE,
    CallOutcome,
    DetachedMode,
    Effect,
    InquiryState,
    JsonValue,
    PermissionBy,
    Resolution,
    Row,
    ToolCallState,
)

if TYPE_CHECKING:
    from machines import Event, Fired, PermissionRuling, Step, ToolCall

__all__ = [
    "NOTHING_TOLD",
    "Delivery",
    "FiredRow",
    "Permission",
    "QuestionFacts",
    "RecordedEntry",
    "SecretDefaultNotice",
    "StepFacts",
    "Told",
    "fired_row",
    "step_facts",
]


@attrs.frozen(kw_only=True)
class Permission:
    """A decision to run a tool call or to skip it.

    ``remember``: the person's ``Y`` or ``N``, remembered for the rest of the
    turn. ``cancelled``: the person cancelled the prompt, which skips the
    call. ``reason`` (``r``) and ``arguments`` (``e``, edited) are the
    person's (or the answers file's), as given. ``detached``: the detached
    policy's mode, when nobody could be asked and it decided.
    """

    run: bool
    by: PermissionBy
    remember: bool = False
    cancelled: bool = False
    reason: str | None = None
    arguments: Mapping[str, JsonValue] | None = None
    detached: DetachedMode | None = None


@attrs.frozen(kw_only=True)
class Delivery:
    """A decision to deliver a finished call's result to the model, or to withhold it.

    ``detached``: the detached policy's mode, when nobody could be asked.
    """

    delivered: bool
    by: PermissionBy
    detached: DetachedMode | None = None


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
    answered (``None`` otherwise). ``detached`` is the detached policy's
    mode when, nobody to ask, it decided in this step (to put the question
    to the model, take its default, or refuse it).
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
    detached: DetachedMode | None = None


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
    ended the call, ``permission`` on the one that decided whether it runs,
    ``delivery`` on the one that decided whether its result is delivered.
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
    delivery: Delivery | None = None
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
    ``notices`` are the driver's own. ``answered_by``: who gave an answer
    (``person``, ``answers_file``, or the name an embedder or the inbox gave),
    recorded with a prompt parked and answered later.
    """

    remember: bool = False
    prompt_cancelled: bool = False
    reason: str | None = None
    arguments: Mapping[str, JsonValue] | None = None
    notices: tuple[SecretDefaultNotice, ...] = ()
    answered_by: str | None = None


NOTHING_TOLD = Told()

# ----------------------------------------------------------------- the rows


def fired_row(fired: Fired) -> FiredRow:
    """The typed view of a row that fired: the table's own row, and its machine."""
    row = fired.row
    return FiredRow(
        machine=fired.machine,
        trigger=row.trigger,
        source=row.source,
        dest=row.target,
        guard=row.guard.name if row.guard is not None else None,
        row=row,
    )


#: Who answers a permission prompt on screen: what they said comes with the ruling.
_ASKED = frozenset(
    {PermissionBy.PERSON, PermissionBy.ANSWERS_FILE, PermissionBy.PARKED_THEN_ANSWERED}
)


def _permission(ruling: PermissionRuling, detached: DetachedMode | None, told: Told) -> Permission:
    """A row's permission column; the person's (or file's) completed with what they said."""
    if ruling.by not in _ASKED:
        return Permission(run=ruling.run, by=ruling.by, detached=detached)
    return Permission(
        run=ruling.run,
        by=ruling.by,
        remember=told.remember,
        cancelled=told.prompt_cancelled,
        reason=told.reason,
        arguments=told.arguments,
    )


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
    delivered: Delivery | None = None
    closed: Resolution | None = None
    policy: DetachedMode | None = None
    for each in step.fired:
        row = fired_row(each)
        fired.append(row)
        taken = entries[len(recorded) : len(recorded) + len(each.records)]
        recorded.extend(RecordedEntry(entry=entry, row=row) for entry in taken)
        if each.row.outcome is not None:
            outcome = each.row.outcome
        if each.row.resolution is not None:
            closed = each.row.resolution
        if each.row.permission is not None:
            decided = _permission(each.row.permission, each.row.detached, told)
        if each.row.delivery is not None:
            ruling = each.row.delivery
            delivered = Delivery(
                delivered=ruling.delivered, by=ruling.by, detached=each.row.detached
            )
        if each.machine == INQUIRY_MACHINE.name and each.row.detached is not None:
            policy = each.row.detached
    inquiry = call.inquiries[-1] if call.inquiries else None
    question = None
    if inquiry is not None and any(row.machine == INQUIRY_MACHINE.name for row in fired):
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
            # The person's answer, closed in this step, kept for the turn.
            remembered=closed is not None and inquiry.remembered,
            failure=inquiry.failure,
            detached=policy,
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
        delivery=delivered,
        notices=told.notices,
    )
