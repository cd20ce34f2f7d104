"""Machines declared as tables, and the one loop that executes them.

Theory of operation: a machine is a states enum and an ordered tuple of
:class:`Row` (trigger, source, destination, guard, action, what the row
emits, and what it means: the ``outcome``, ``resolution`` and ``permission``
columns of :mod:`machines._meanings`, with ``delivery`` and ``detached``).
:class:`TableMachine` executes the
table; diagrams, the docs' tables, the observers and the tests read the
same tuple, so changing a row changes all of them.

Rules, held by :class:`TableMachine`:

1. A trigger is looked up *before* anything changes. A (state, trigger) pair
   with no row raises :class:`IllegalTransitionError`; so does a trigger whose
   rows' guards all fail. Either way state and records are untouched.
2. Rows sharing (trigger, source) are tried in table order; the first whose
   guard holds fires. Guards are pure functions of the model and the
   trigger's payload: facts handed in, never looked up. A guard's name
   stands for one definition in its table.
3. A row's action runs after its guard holds and before the state changes,
   and only buffers records and effects; an action that raises leaves the
   state as it was. A row emits exactly the record and effect types it
   declares, checked as it fires.
4. *Automatic* rows (``auto=True``) fire by themselves right after their
   source state is entered, if a guard holds; they model steps nobody waits
   for (a cached answer is applied as soon as it is found). A state whose
   rows are all automatic is *transient*: nothing else could ever move a
   model out of it, so entering it when none of its guards holds raises
   :class:`MachineError` instead of leaving the model stuck there, where a
   driver would wait for ever (the step is discarded by the model's
   ``fire``, as any failed step is; the model is not to be used again).
5. The final states are declared with the table, as h11 lists its terminal
   states with ``{}``: a final state has no rows, and every other state has
   at least one, or the table is refused when the machine is built.
6. Every row into a final state says how its model ended (its ``outcome``
   or its ``resolution``), and no other row does; a table that breaks this
   is refused when the machine is built.

How a table runs: :meth:`TableMachine.fire` is one plain loop over the
table's own index, ``(state, trigger) -> rows in table order``, built when
the machine is made: the first row whose guard holds runs its action (which
buffers what it emits, checked against what the row declares), then the
model takes the row's destination. Automatic rows are fired the same way
right after, for as long as one applies. Models are plain objects with a
``state`` attribute; one :class:`TableMachine` drives any number of them
and keeps nothing of any. These are the semantics of a ``transitions``
machine built from the same rows (conditions for guards, a ``before``
callback for the action): ``tests/test_table_executor.py`` runs every row,
every refused trigger and every guard that fails through both and compares
them. ``transitions`` itself is not used to run the tables: through its
public API a trigger costs some twelve microseconds, and a question takes
five or six triggers, which put a question's engine time over its budget
(the figures are in ``docs/machines.md``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

from machines._effects import Effect
from machines._errors import IllegalTransitionError, MachineError
from machines._events import Event
from machines._meanings import (
    CallOutcome,
    DeliveryRuling,
    DetachedMode,
    PermissionRuling,
    Resolution,
)

__all__ = [
    "Fired",
    "Guard",
    "Model",
    "Out",
    "Row",
    "Step",
    "StepBuffer",
    "TableMachine",
]

S = TypeVar("S", bound=enum.Enum)
M = TypeVar("M", bound="Model")


class Model(Protocol):
    """What a table machine drives: a state and a buffer for what fires."""

    state: Any
    buffer: StepBuffer


class Out:
    """What a row's action emits: records and effects, in order."""

    __slots__ = ("effects", "records")

    def __init__(self) -> None:
        """Start empty."""
        self.records: list[Event] = []
        self.effects: list[Effect] = []

    def record(self, record: Event) -> None:
        """Emit a stream record."""
        self.records.append(record)

    def effect(self, effect: Effect) -> None:
        """Ask the driver to do something."""
        self.effects.append(effect)


@attrs.frozen
class Guard(Generic[M]):
    """A named condition on the model and the trigger's payload."""

    name: str
    description: str
    test: Callable[[M, Mapping[str, Any]], bool] = attrs.field(repr=False)


Action = Callable[[M, Mapping[str, Any], Out], None]


@attrs.frozen(kw_only=True)
class Row(Generic[S, M]):
    """One transition: on ``trigger`` in ``source``, if ``guard``, go to ``dest``.

    ``dest`` is ``None`` for an internal transition (the state stays).
    ``emits`` and ``effects`` are the record and effect types the row emits,
    in order; ``delegates`` names the other machine's trigger its action fires
    (what that machine emits is declared by its own rows). The meaning
    columns (:mod:`machines._meanings`) say what the row means to whoever
    reads what fired: ``outcome`` (how a tool call ended), ``resolution``
    (how a question was decided), ``permission`` (who let a call run or
    skipped it), ``delivery`` (who let its result reach the model or
    withheld it), ``detached`` (the detached policy's mode, where nobody
    could be asked and it decided).
    """

    trigger: str
    source: S
    dest: S | None
    guard: Guard[M] | None = None
    action: Action[M] | None = attrs.field(default=None, repr=False)
    emits: tuple[type, ...] = ()
    effects: tuple[type, ...] = ()
    delegates: str | None = None
    auto: bool = False
    outcome: CallOutcome | None = None
    resolution: Resolution | None = None
    permission: PermissionRuling | None = None
    delivery: DeliveryRuling | None = None
    detached: DetachedMode | None = None

    @property
    def target(self) -> S:
        """The state the model is in after the row fires."""
        return self.dest if self.dest is not None else self.source

    @property
    def id(self) -> str:
        """A stable name for the row: ``trigger:source->target[guard]``."""
        guard = f"[{self.guard.name}]" if self.guard else ""
        return f"{self.trigger}:{self.source.value}->{self.target.value}{guard}"


def _row_id(row: Row[Any, Any]) -> str:
    return repr(row.id)


@attrs.frozen(kw_only=True)
class Fired:
    """One row that fired: which machine, the table's own row, and what it emitted."""

    machine: str
    row: Row[Any, Any] = attrs.field(repr=_row_id)
    records: tuple[Event, ...]
    effects: tuple[Effect, ...]


@attrs.frozen(kw_only=True)
class Step:
    """What a machine step recorded, and what the driver must do next.

    ``records`` go to the stream in this order; ``effects`` are carried out by
    the driver; ``fired`` says which rows produced them. Both are typed as the
    closed unions :data:`~machines.Event` and :data:`~machines.Effect`: a
    driver dispatching over ``effects`` with ``match`` and ``assert_never``
    fails type checking when an effect type is added and not handled.
    """

    records: tuple[Event, ...]
    effects: tuple[Effect, ...]
    fired: tuple[Fired, ...]


class StepBuffer:
    """Collects what fires during one step (shared by a machine and the ones it drives)."""

    def __init__(self) -> None:
        """Start empty."""
        self._fired: list[Fired] = []

    def note(self, fired: Fired, *, at: int) -> None:
        """Put ``fired`` at position ``at`` of the step (where its row began to fire)."""
        self._fired.insert(at, fired)

    def take(self) -> Step:
        """Return the step so far and start a new one."""
        fired, self._fired = tuple(self._fired), []
        return Step(
            records=tuple(record for entry in fired for record in entry.records),
            effects=tuple(effect for entry in fired for effect in entry.effects),
            fired=fired,
        )

    def discard(self) -> None:
        """Drop what the current step buffered (it failed; nothing of it counts)."""
        self._fired = []

    def __len__(self) -> int:
        """How many rows fired in the current step."""
        return len(self._fired)


class TableMachine(Generic[S, M]):
    """Executes one machine's table for any number of models."""

    def __init__(
        self,
        *,
        name: str,
        states: type[S],
        start: S,
        rows: Sequence[Row[S, M]],
        final: Collection[S],
        rules: str,
    ) -> None:
        """Check the table (rules 2, 4, 5 and 6); refuse it with :class:`MachineError`."""
        self.name = name
        self.states = states
        self.start = start
        self.rows: tuple[Row[S, M], ...] = tuple(rows)
        #: The states a model ends in, as declared (checked against the rows).
        self.final: frozenset[S] = frozenset(final)
        self.rules = rules
        self._index: dict[tuple[S, str], tuple[Row[S, M], ...]] = {}
        for row in self.rows:
            key = (row.source, row.trigger)
            self._index[key] = (*self._index.get(key, ()), row)
        self._check()
        #: The automatic trigger of each state that has one.
        self.automatic: Mapping[S, str] = {
            row.source: row.trigger for row in self.rows if row.auto
        }
        #: States whose rows are all automatic: one of them must fire on entry.
        self.transient: frozenset[S] = frozenset(
            state
            for state in self.automatic
            if all(row.auto for row in self.rows if row.source is state)
        )
        self.triggers: tuple[str, ...] = tuple(dict.fromkeys(row.trigger for row in self.rows))

    def _check(self) -> None:
        self._check_final()
        self._check_meanings()
        self._check_names()
        for (source, trigger), rows in self._index.items():
            if any(row.guard is None for row in rows[:-1]):
                raise MachineError(
                    f"{self.name}: {trigger} in {source.value}: an unguarded row hides the rest"
                )
            if len({row.auto for row in rows}) > 1:
                raise MachineError(f"{self.name}: {trigger} in {source.value}: mixed auto rows")
        autos: dict[S, set[str]] = {}
        for row in self.rows:
            if row.auto:
                autos.setdefault(row.source, set()).add(row.trigger)
        for state, triggers in autos.items():
            if len(triggers) > 1:
                raise MachineError(f"{self.name}: several automatic triggers in {state.value}")

    def _check_names(self) -> None:
        ids = [row.id for row in self.rows]
        duplicates = {row_id for row_id in ids if ids.count(row_id) > 1}
        if duplicates:
            raise MachineError(f"{self.name}: rows declared twice: {sorted(duplicates)}")
        definitions: dict[str, set[Guard[M]]] = {}
        for row in self.rows:
            if row.guard is not None:
                definitions.setdefault(row.guard.name, set()).add(row.guard)
        if twice := sorted(name for name, guards in definitions.items() if len(guards) > 1):
            raise MachineError(f"{self.name}: guards with one name and two definitions: {twice}")

    def _check_final(self) -> None:
        sources = {row.source for row in self.rows}
        if leaving := sorted(state.value for state in self.final & sources):
            raise MachineError(f"{self.name}: final states with rows out of them: {leaving}")
        stuck = sorted(state.value for state in self.states if state not in sources | self.final)
        if stuck:
            raise MachineError(f"{self.name}: states with no rows that are not final: {stuck}")

    def _check_meanings(self) -> None:
        for row in self.rows:
            ends = [meaning for meaning in (row.outcome, row.resolution) if meaning is not None]
            if row.target in self.final and len(ends) != 1:
                raise MachineError(
                    f"{self.name} row {row.id} ends the model: it declares one outcome or "
                    f"resolution, not {len(ends)}"
                )
            if row.target not in self.final and ends:
                raise MachineError(
                    f"{self.name} row {row.id} does not end the model, so it may declare "
                    "no outcome or resolution"
                )

    def run_row(self, row: Row[S, M], model: M, payload: Mapping[str, Any]) -> None:
        """Run ``row``'s action on ``model`` and note what it emitted in the model's step.

        Its guard has held; the model's state is not changed here (:meth:`fire`
        does that once this returns). Raises :class:`MachineError` when the
        action emits other record or effect types than the row declares.
        """
        # The row goes in the step where it was when its action began, so what a
        # delegated machine fires inside the action follows it, in order.
        at = len(model.buffer)
        out = Out()
        if row.action is not None:
            row.action(model, payload, out)
        records, effects = tuple(out.records), tuple(out.effects)
        emitted, caused = tuple(map(type, records)), tuple(map(type, effects))
        if emitted != row.emits or caused != row.effects:
            raise MachineError(
                f"{self.name} row {row.id} declares {_names(row.emits)} / "
                f"{_names(row.effects)} but emitted {_names(emitted)} / {_names(caused)}"
            )
        model.buffer.note(
            Fired(machine=self.name, row=row, records=records, effects=effects), at=at
        )

    def rows_for(self, state: S, trigger: str) -> tuple[Row[S, M], ...]:
        """The rows that may fire on ``trigger`` in ``state``, in priority order."""
        return self._index.get((state, trigger), ())

    def fire(self, model: M, trigger: str, *, chain: bool = True, **payload: Any) -> None:
        """Fire ``trigger`` on ``model``; then, unless ``chain`` is false, automatic rows.

        Raises :class:`IllegalTransitionError` (nothing changed) when no row
        allows the trigger in the model's state.
        """
        state = model.state
        rows = self.rows_for(state, trigger)
        if not rows:
            raise IllegalTransitionError(machine=self.name, trigger=trigger, state=state.value)
        if not self._fire_first(rows, model, payload):
            # Guards are pure: none held, so nothing has run and nothing changed.
            raise IllegalTransitionError(
                machine=self.name,
                trigger=trigger,
                state=state.value,
                detail="no row's guard holds for these facts",
            )
        if chain:
            self.run_automatic(model)

    def _fire_first(
        self, rows: tuple[Row[S, M], ...], model: M, payload: Mapping[str, Any]
    ) -> bool:
        """Fire the first of ``rows`` whose guard holds; whether one did."""
        for row in rows:
            if row.guard is None or row.guard.test(model, payload):
                self.run_row(row, model, payload)
                model.state = row.target
                return True
        return False

    def run_automatic(self, model: M) -> None:
        """Fire automatic rows for as long as one applies; a transient state must be left."""
        while (trigger := self.automatic.get(state := model.state)) is not None:
            if not self._fire_first(self.rows_for(state, trigger), model, {}):
                if state in self.transient:
                    # A table whose guards miss a case: fail loudly, never wait for ever.
                    raise MachineError(
                        f"{self.name} machine is stuck in transient state {state.value!r}: "
                        f"no {trigger!r} row's guard holds for these facts"
                    )
                return

    def paths(self) -> Iterator[tuple[Row[S, M], ...]]:
        """Every simple path of rows from the start state to a terminal state."""

        def walk(state: S, seen: frozenset[S], path: tuple[Row[S, M], ...]) -> Iterator[Any]:
            if state in self.final:
                yield path
                return
            for row in self.rows:
                if row.source is state and row.target not in seen:
                    yield from walk(row.target, seen | {row.target}, (*path, row))

        yield from walk(self.start, frozenset({self.start}), ())


def _names(types: tuple[type, ...]) -> str:
    return "(" + ", ".join(kind.__name__ for kind in types) + ")"
