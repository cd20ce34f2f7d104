"""Machines declared as tables, executed by the ``transitions`` library.

Theory of operation: a machine is a states enum and an ordered tuple of
:class:`Row` (trigger, source, destination, guard, action, and what the row
emits). ``transitions`` executes the table; diagrams, the README's tables and
the tests read the same tuple, so changing a row changes all of them.

Rules, held by :class:`TableMachine`:

1. A trigger is looked up *before* anything changes. A (state, trigger) pair
   with no row raises :class:`IllegalTransitionError`; so does a trigger whose
   rows' guards all fail. Either way state and records are untouched.
2. Rows sharing (trigger, source) are tried in table order; the first whose
   guard holds fires. Guards are pure functions of the model and the
   trigger's payload: facts handed in, never looked up.
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

One ``transitions.Machine`` is built per table, once, on first use (so a
process that only reads conversations never imports ``transitions``); models
are plain objects with a ``state`` attribute driven through it, so a question
costs no machine construction. It is a :class:`~machines._table_executor.RowMachine`,
whose triggers do only what a table needs: the rows filed under the model's
state, tried in order, each guard and action a plain call with the model and
the payload (out of the box, ``transitions`` spends some ten microseconds a
trigger on event objects, callbacks resolved by name and empty callback
lists; see that module).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs

from machines._effects import Effect
from machines._errors import IllegalTransitionError, MachineError
from machines._events import Event

if TYPE_CHECKING:
    from machines._table_executor import RowEvent

__all__ = [
    "NO_PAYLOAD",
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
#: The payload of a trigger that carries nothing, as an automatic row's (read-only: shared).
NO_PAYLOAD: Mapping[str, Any] = MappingProxyType({})
M = TypeVar("M", bound="Model")


@attrs.frozen
class Fired:
    """One row that fired: which, and what it emitted."""

    machine: str
    row: str
    records: tuple[Event, ...]
    effects: tuple[Effect, ...]


@attrs.frozen
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

    def take(self) -> Step:
        """Return the step so far and start a new one."""
        fired, self._fired = tuple(self._fired), []
        records: list[Event] = []
        effects: list[Effect] = []
        for entry in fired:
            records += entry.records
            effects += entry.effects
        return _step(tuple(records), tuple(effects), fired)

    def discard(self) -> None:
        """Drop what the current step buffered (it failed; nothing of it counts)."""
        self._fired = []

    def __len__(self) -> int:
        """How many rows fired in the current step."""
        return len(self._fired)


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
    (what that machine emits is declared by its own rows).
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

    @property
    def target(self) -> S:
        """The state the model is in after the row fires."""
        return self.dest if self.dest is not None else self.source

    @property
    def id(self) -> str:
        """A stable name for the row: ``trigger:source->target[guard]``."""
        guard = f"[{self.guard.name}]" if self.guard else ""
        return f"{self.trigger}:{self.source.value}->{self.target.value}{guard}"


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
        """Check the table; the ``transitions.Machine`` that runs it is built on first use."""
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
        self._auto: dict[S, str] = {row.source: row.trigger for row in self.rows if row.auto}
        self._auto_by_name = {state.name: trigger for state, trigger in self._auto.items()}
        #: States whose rows are all automatic: one of them must fire on entry.
        self.transient: frozenset[S] = frozenset(
            state
            for state in self._auto
            if all(row.auto for row in self.rows if row.source is state)
        )
        self.triggers: tuple[str, ...] = tuple(dict.fromkeys(row.trigger for row in self.rows))
        self._events: dict[str, RowEvent] | None = None

    def _check(self) -> None:
        self._check_final()
        ids = [row.id for row in self.rows]
        duplicates = {row_id for row_id in ids if ids.count(row_id) > 1}
        if duplicates:
            raise MachineError(f"{self.name}: rows declared twice: {sorted(duplicates)}")
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

    def _check_final(self) -> None:
        sources = {row.source for row in self.rows}
        if leaving := sorted(state.value for state in self.final & sources):
            raise MachineError(f"{self.name}: final states with rows out of them: {leaving}")
        stuck = sorted(state.value for state in self.states if state not in sources | self.final)
        if stuck:
            raise MachineError(f"{self.name}: states with no rows that are not final: {stuck}")

    def _build(self) -> dict[str, RowEvent]:
        """The ``transitions`` events of this table, built on first use.

        Built lazily: importing ``transitions`` and building its machines is
        start-up time a command that only reads conversations does not need.
        """
        from machines._table_executor import RowMachine  # noqa: PLC0415 - see the docstring

        machine = RowMachine(
            states=self.states,
            initial=self.start,
            transitions=[self._transition(row) for row in self.rows],
            name=self.name,
        )
        # transitions must try each (state, trigger) row in table order, as the rules say.
        for (source, trigger), rows in self._index.items():
            resolved = machine.row_events[trigger].transitions.get(source.name, [])
            expected = [row.dest.name if row.dest is not None else None for row in rows]
            if [transition.dest for transition in resolved] != expected:
                raise MachineError(  # pragma: no cover - a bug in this module, not a table
                    f"{self.name}: transitions resolved {trigger} in {source.value} differently"
                )
        self._events = machine.row_events
        return self._events

    def _transition(self, row: Row[S, M]) -> dict[str, Any]:
        transition: dict[str, Any] = {
            "trigger": row.trigger,
            "source": row.source,
            "dest": row.dest,
            "before": [self._applier(row)],
        }
        if row.guard is not None:
            transition["conditions"] = [row.guard.test]
        return transition

    def _applier(self, row: Row[S, M]) -> Callable[[M, Mapping[str, Any]], None]:
        """What runs when ``row`` fires: its action, checked, noted in the model's step.

        Made once per row, holding what it reads of the row (its id, a
        formatted string, its action and what it declares), so that a step
        looks none of it up.
        """
        machine, row_id, action = self.name, row.id, row.action
        emits, kinds = row.emits, row.effects
        if action is None and not emits and not kinds:
            # Nothing can run inside it, and its note is a value: the same one every time.
            note = _fired(machine, row_id, (), ())

            def note_only(model: M, _payload: Mapping[str, Any]) -> None:
                model.buffer._fired.append(note)  # noqa: SLF001 - the buffer is this module's

            return note_only

        def apply(model: M, payload: Mapping[str, Any]) -> None:
            fired = model.buffer._fired  # noqa: SLF001 - the buffer is this module's
            # The row goes in the step where it was when its action began, so what a
            # delegated machine fires inside the action follows it, in order.
            index = len(fired)
            if action is None:
                records: tuple[object, ...] = ()
                effects: tuple[object, ...] = ()
            else:
                out = Out()
                action(model, payload, out)
                records, effects = tuple(out.records), tuple(out.effects)
            # Most rows emit nothing of one of the two: nothing to build to compare.
            if ((records or emits) and tuple(map(type, records)) != emits) or (
                (effects or kinds) and tuple(map(type, effects)) != kinds
            ):
                emitted = tuple(map(type, records))
                raise MachineError(
                    f"{machine} row {row_id} declares {_names(emits)} / {_names(kinds)} "
                    f"but emitted {_names(emitted)} / {_names(tuple(map(type, effects)))}"
                )
            fired.insert(index, _fired(machine, row_id, records, effects))

        return apply

    def rows_for(self, state: S, trigger: str) -> tuple[Row[S, M], ...]:
        """The rows that may fire on ``trigger`` in ``state``, in priority order."""
        return self._index.get((state, trigger), ())

    def fire(self, model: M, trigger: str, *, chain: bool = True, **payload: Any) -> None:
        """Fire ``trigger`` on ``model``; then, unless ``chain`` is false, automatic rows.

        Raises :class:`IllegalTransitionError` (nothing changed) when no row
        allows the trigger in the model's state.
        """
        self.fire_with(model, trigger, payload, chain=chain)

    def fire_with(
        self, model: M, trigger: str, payload: Mapping[str, Any], *, chain: bool = True
    ) -> None:
        """:meth:`fire`, the payload given as a mapping (guards and actions only read it).

        For the models' own methods, which hold their payload as a mapping
        already and pass it on, rather than build it again for each machine.
        """
        events = self._events if self._events is not None else self._build()
        event = events.get(trigger)
        # transitions looks up the state's rows first: with none, or none whose
        # guard holds (guards are pure), nothing has run and nothing changed.
        if event is None or not event.fire(model, payload):
            raise self._refused(model.state, trigger)
        if chain and model.state._name_ in self._auto_by_name:
            self.run_automatic(model)

    def _refused(self, state: S, trigger: str) -> IllegalTransitionError:
        if (state, trigger) not in self._index:
            return IllegalTransitionError(machine=self.name, trigger=trigger, state=state.value)
        return IllegalTransitionError(
            machine=self.name,
            trigger=trigger,
            state=state.value,
            detail="no row's guard holds for these facts",
        )

    def run_automatic(self, model: M) -> None:
        """Fire automatic rows for as long as one applies; a transient state must be left."""
        events = self._events if self._events is not None else self._build()
        auto = self._auto_by_name
        # Keyed by the state's name, a str, whose hash is cached (an enum's is computed in Python).
        while (trigger := auto.get((state := model.state)._name_)) is not None:
            if not events[trigger].fire(model, NO_PAYLOAD):
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


def _fired_builder() -> Callable[..., Fired]:
    """What builds a :class:`Fired` for every row that fires: its slots set directly.

    ``Fired`` validates nothing, so setting its four slots is all its attrs
    constructor does, less the keyword call and a bound ``object.__setattr__``
    per field (half its cost, paid by every step). Should the class change
    (a field, a validator), this is the constructor again.
    """
    fields = attrs.fields(Fired)
    if tuple(field.name for field in fields) != ("machine", "row", "records", "effects") or any(
        field.validator is not None or field.converter is not None for field in fields
    ):
        return Fired  # pragma: no cover - Fired as declared above has plain fields
    set_machine, set_row, set_records, set_effects = (
        Fired.__dict__[field.name].__set__ for field in fields
    )
    new = object.__new__

    def fired(machine: str, row: str, records: Any, effects: Any) -> Fired:
        built: Fired = new(Fired)
        set_machine(built, machine)
        set_row(built, row)
        set_records(built, records)
        set_effects(built, effects)
        return built

    return fired


_fired = _fired_builder()


def _step_builder() -> Callable[..., Step]:
    """What builds every :class:`Step`: its slots set directly, as :func:`_fired_builder` does."""
    fields = attrs.fields(Step)
    if tuple(field.name for field in fields) != ("records", "effects", "fired") or any(
        field.validator is not None or field.converter is not None for field in fields
    ):
        return Step  # pragma: no cover - Step as declared above has plain fields
    set_records, set_effects, set_fired = (Step.__dict__[field.name].__set__ for field in fields)
    new = object.__new__

    def step(records: Any, effects: Any, fired: Any) -> Step:
        built: Step = new(Step)
        set_records(built, records)
        set_effects(built, effects)
        set_fired(built, fired)
        return built

    return step


_step = _step_builder()


def _names(types: tuple[type, ...]) -> str:
    return "(" + ", ".join(kind.__name__ for kind in types) + ")"
