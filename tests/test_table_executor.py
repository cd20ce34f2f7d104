"""The loop that executes the tables (``machines/_table.py``), held to ``transitions``.

``TableMachine.fire`` is one plain loop over the table's own index. Its
reference is what ``transitions``, through its public API, does with the same
rows (guards as conditions, a row's action as its ``before`` callback): from
each row's source state, every trigger with every payload the drivers know
must fire the same rows, reach the same state and refuse the same triggers
through both. The other tests hold the rules of ``machines/_table.py`` on toy
tables: the first row whose guard holds fires, a row must emit what it
declares, an action that raises changes nothing, a table must say what its
rows into a final state mean.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest
import transitions
from machine_drivers import DRIVERS
from test_machine_tables import WITNESSES, _prepare

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


def _reference(machine: TableMachine[Any, Any]) -> transitions.Machine:
    """The table as a plain ``transitions`` machine: guards as conditions, actions as before."""

    def condition(guard: Guard[Any]) -> Any:
        return lambda event: guard.test(event.model, event.kwargs)

    def before(row: Row[Any, Any]) -> Any:
        return lambda event: machine.run_row(row, event.model, event.kwargs)

    return transitions.Machine(
        model=None,
        states=machine.states,
        initial=machine.start,
        transitions=[
            {
                "trigger": row.trigger,
                "source": row.source,
                "dest": row.dest,
                "conditions": [condition(row.guard)] if row.guard is not None else [],
                "before": [before(row)],
            }
            for row in machine.rows
        ],
        auto_transitions=False,
        ignore_invalid_triggers=False,
        send_event=True,
    )


REFERENCES = {machine.name: _reference(machine) for machine in MACHINES}


def _ours(name: str, model: Any, trigger: str, payload: dict[str, Any]) -> bool:
    """Fire through the machine's own loop (one step: automatic rows are their own steps)."""
    DRIVERS[name].machine.fire(model, trigger, chain=False, **payload)
    return True


def _theirs(name: str, model: Any, trigger: str, payload: dict[str, Any]) -> bool:
    """Fire through the reference ``transitions`` machine."""
    return REFERENCES[name].events[trigger].trigger(model, **payload)


def _outcome(fire: Any, name: str, model: Any, trigger: str, payload: Any) -> tuple[Any, ...]:
    """What firing did: refused, raised (which error), or the state and the rows noted."""
    try:
        fired = fire(name, model, trigger, payload)
    except (IllegalTransitionError, transitions.MachineError):
        return ("refused",)
    except Exception as error:  # noqa: BLE001 - which error is what is compared
        return ("raised", type(error))
    if not fired:  # transitions: no condition held
        return ("refused",)
    step = model.buffer.take()
    return ("fired", model.state, [(f.machine, f.row, f.records, f.effects) for f in step.fired])


SITUATIONS = [
    pytest.param(name, row_id, id=f"{name}:{row_id}")
    for name, witnesses in WITNESSES.items()
    for row_id in witnesses
]


@pytest.mark.parametrize(("name", "row_id"), SITUATIONS)
def test_every_trigger_fires_as_a_transitions_machine_of_the_same_rows_would(
    name: str, row_id: str
) -> None:
    """From each row's source, every trigger and payload: the same rows, state and errors."""
    driver, witness = DRIVERS[name], WITNESSES[name][row_id]
    (row,) = [row for row in driver.machine.rows if row.id == row_id]
    for trigger in driver.machine.triggers:
        payloads = driver.payloads(_prepare(name, witness), trigger) or [{}]
        if trigger == row.trigger:
            payloads.append(witness.payload(_prepare(name, witness)))
        for payload in payloads:
            fired = _outcome(_ours, name, _prepare(name, witness), trigger, payload)
            expected = _outcome(_theirs, name, _prepare(name, witness), trigger, payload)
            assert fired == expected
            if trigger == row.trigger and payload is payloads[-1]:
                assert fired[:2] == ("fired", row.target)


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
