"""The ``transitions`` machine each table runs on, through the library's public API.

``transitions`` executes the tables: one plain ``transitions.Machine`` per
table, its transitions the table's rows in table order, fired with
``machine.events[trigger].trigger(model, **payload)``. These tests hold the
rules of ``machines/_table.py`` on it: the first row whose guard holds fires,
a row must emit what it declares, an action that raises changes nothing, a
table must say what its rows into a final state mean.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest
import transitions

from machines import (
    MACHINES,
    CallOutcome,
    ChatRequest,
    IllegalTransitionError,
    MachineError,
    Resolution,
    TurnStart,
)
from machines._table import Guard, Out, Row, StepBuffer, TableMachine


class Light(enum.Enum):
    """A toy machine's states."""

    OFF = "off"
    ON = "on"
    BROKEN = "broken"


class Lamp:
    """A toy model."""

    def __init__(self) -> None:
        """Off, nothing fired yet."""
        self.state = Light.OFF
        self.buffer = StepBuffer()


def _click(_: Any, __: Any, out: Out) -> None:
    """The toy's action: it records a turn's start (any record would do)."""
    out.record(TurnStart())


def _lamp(*rows: Row[Light, Lamp]) -> TableMachine[Light, Lamp]:
    return TableMachine(
        name="lamp",
        states=Light,
        start=Light.OFF,
        rows=rows,
        final=(Light.BROKEN,),
        rules="",
    )


#: The lamp's one way to its final state, and what that means.
DROP: Row[Light, Lamp] = Row(
    trigger="drop", source=Light.ON, dest=Light.BROKEN, outcome=CallOutcome.FAILED
)


@pytest.mark.parametrize("machine", MACHINES, ids=lambda machine: machine.name)
def test_transitions_holds_every_row_under_its_source_in_table_order(
    machine: TableMachine[Any, Any],
) -> None:
    """Asked through its public API, transitions has each trigger's rows per state in order."""
    executor = machine.executor
    for state in machine.states:
        for trigger in machine.triggers:
            held = executor.get_transitions(trigger, source=state)
            rows = machine.rows_for(state, trigger)
            assert [t.dest for t in held] == [r.dest.name if r.dest else None for r in rows]
            assert [len(t.conditions) for t in held] == [int(r.guard is not None) for r in rows]


@pytest.mark.parametrize("machine", MACHINES, ids=lambda machine: machine.name)
def test_the_executor_is_a_plain_transitions_machine(machine: TableMachine[Any, Any]) -> None:
    """No subclass of its classes, no model attached, no automatic to_<state> triggers."""
    executor = machine.executor
    assert type(executor) is transitions.Machine
    assert executor.models == []
    assert set(executor.events) == set(machine.triggers)
    for event in executor.events.values():
        assert type(event) is transitions.Event
        held = executor.get_transitions(event.name)
        assert all(type(transition) is transitions.Transition for transition in held)
    assert machine.executor is executor  # built once, for every model


@pytest.mark.parametrize(
    ("switch", "refusal"),
    [
        (
            Row(
                trigger="switch",
                source=Light.OFF,
                dest=Light.ON,
                action=_click,
                emits=(ChatRequest,),
            ),
            r"declares \(ChatRequest\) / \(\) but emitted \(TurnStart\) / \(\)",
        ),
        (
            Row(trigger="switch", source=Light.OFF, dest=Light.ON, emits=(TurnStart,)),
            r"declares \(TurnStart\) / \(\) but emitted \(\) / \(\)",
        ),
    ],
    ids=["emits-undeclared", "declared-not-emitted"],
)
def test_a_row_emitting_other_than_it_declares_is_refused_and_changes_nothing(
    switch: Row[Light, Lamp], refusal: str
) -> None:
    """A row whose action emits other records than the row declares raises; the state stays."""
    lamp = Lamp()
    machine = _lamp(switch, DROP)
    with pytest.raises(MachineError, match=refusal):
        machine.fire(lamp, "switch")
    assert lamp.state is Light.OFF


def test_guards_see_the_payload_and_the_first_that_holds_fires() -> None:
    """Rows are tried in order with the trigger's payload; none holding raises, state kept."""
    lamp = Lamp()
    machine = _lamp(
        Row(
            trigger="switch",
            source=Light.OFF,
            dest=Light.BROKEN,
            guard=_guard("hard", lambda _, payload: payload["force"] > 1),
            outcome=CallOutcome.FAILED,
        ),
        Row(
            trigger="switch",
            source=Light.OFF,
            dest=Light.ON,
            guard=_guard("soft", lambda _, payload: payload["force"] == 1),
            action=_click,
            emits=(TurnStart,),
        ),
        DROP,
    )
    with pytest.raises(IllegalTransitionError, match="no row's guard holds"):
        machine.fire(lamp, "switch", force=0)
    assert lamp.state is Light.OFF
    machine.fire(lamp, "switch", force=1)
    assert _state(lamp) is Light.ON
    assert lamp.buffer.take().records == (TurnStart(),)
    with pytest.raises(IllegalTransitionError, match="trigger 'switch' in state 'on'"):
        machine.fire(lamp, "switch", force=2)


def _state(lamp: Lamp) -> Light:
    """The lamp's state now (through a call: mypy keeps the state it last saw)."""
    return lamp.state


def _guard(name: str, test: Any) -> Guard[Lamp]:
    return Guard(name, name, test)


def _breaks(_: Any, __: Any, out: Out) -> None:
    """An action that records, then fails."""
    out.record(TurnStart())
    raise RuntimeError("the action failed")


def test_an_action_that_raises_leaves_the_state_and_the_step_as_they_were() -> None:
    """What the action buffered before it raised is not noted; the model stays where it was."""
    lamp = Lamp()
    machine = _lamp(
        Row(trigger="switch", source=Light.OFF, dest=Light.ON, action=_breaks, emits=(TurnStart,)),
        DROP,
    )
    with pytest.raises(RuntimeError, match="the action failed"):
        machine.fire(lamp, "switch")
    assert lamp.state is Light.OFF
    assert len(lamp.buffer) == 0


def test_automatic_rows_fire_as_soon_as_their_state_is_entered() -> None:
    """An automatic row fires right after the row that entered its source, in the same step."""
    lamp = Lamp()
    machine = _lamp(
        Row(trigger="switch", source=Light.OFF, dest=Light.ON),
        Row(
            trigger="drop",
            source=Light.ON,
            dest=Light.BROKEN,
            outcome=CallOutcome.FAILED,
            auto=True,
        ),
    )
    machine.fire(lamp, "switch")
    assert _state(lamp) is Light.BROKEN
    assert [fired.row.trigger for fired in lamp.buffer.take().fired] == ["switch", "drop"]


@pytest.mark.parametrize(
    ("rows", "refusal"),
    [
        (
            (Row(trigger="switch", source=Light.OFF, dest=Light.ON),
             Row(trigger="drop", source=Light.ON, dest=Light.BROKEN)),
            r"drop:on->broken ends the model: it declares one outcome or resolution, not 0",
        ),
        (
            (Row(trigger="switch", source=Light.OFF, dest=Light.ON),
             Row(trigger="drop", source=Light.ON, dest=Light.BROKEN,
                 outcome=CallOutcome.FAILED, resolution=Resolution.FAILED)),
            r"drop:on->broken ends the model: it declares one outcome or resolution, not 2",
        ),
        (
            (Row(trigger="switch", source=Light.OFF, dest=Light.ON, outcome=CallOutcome.SUCCEEDED),
             DROP),
            r"switch:off->on does not end the model, so it may declare no outcome or resolution",
        ),
        (
            (Row(trigger="switch", source=Light.OFF, dest=Light.ON,
                 guard=_guard("ready", lambda _, __: True)),
             Row(trigger="drop", source=Light.ON, dest=Light.BROKEN,
                 guard=_guard("ready", lambda _, __: True), outcome=CallOutcome.FAILED)),
            r"guards with one name and two definitions: \['ready'\]",
        ),
    ],
    ids=["final-without-meaning", "final-with-two", "meaning-not-final", "guard-twice"],
)  # fmt: skip
def test_a_table_that_does_not_say_what_its_rows_mean_is_refused(
    rows: tuple[Row[Light, Lamp], ...], refusal: str
) -> None:
    """A row into a final state without one meaning, a meaning elsewhere, a guard defined twice."""
    with pytest.raises(MachineError, match=refusal):
        _lamp(*rows)
