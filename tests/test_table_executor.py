"""The ``transitions`` machine each table runs on (machines._table_executor).

``transitions`` executes the tables, through subclasses that keep only what a
table needs: the rows filed under the model's state, tried in table order,
guards and actions called with the model and the payload. What they leave
out is refused rather than ignored, and a row must emit what it declares.
"""

from __future__ import annotations

import enum
from typing import Any

import pytest
import transitions

from machines import MACHINES, ChatRequest, IllegalTransitionError, MachineError, TurnStart
from machines._table import Guard, Out, Row, StepBuffer, TableMachine
from machines._table_executor import RowEvent, RowTransition


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


@pytest.mark.parametrize("machine", MACHINES, ids=lambda machine: machine.name)
def test_transitions_files_every_row_under_its_source_in_table_order(
    machine: TableMachine[Any, Any],
) -> None:
    """Each trigger is a transitions Event whose transitions per state are the table's rows."""
    events = machine._build()
    for state in machine.states:
        for trigger in machine.triggers:
            event = events[trigger]
            assert isinstance(event, transitions.Event)
            filed = event.transitions.get(state.name, [])
            assert all(isinstance(transition, transitions.Transition) for transition in filed)
            rows = machine.rows_for(state, trigger)
            assert [t.target for t in filed] == [row.dest for row in rows]


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
    machine = _lamp(switch, Row(trigger="drop", source=Light.ON, dest=Light.BROKEN))
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
        ),
        Row(
            trigger="switch",
            source=Light.OFF,
            dest=Light.ON,
            guard=_guard("soft", lambda _, payload: payload["force"] == 1),
            action=_click,
            emits=(TurnStart,),
        ),
        Row(trigger="drop", source=Light.ON, dest=Light.BROKEN),
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


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"conditions": ["is_ready"]}, "callables, not names"),
        ({"before": ["on_switch"]}, "callables, not names"),
        ({"after": [print]}, "no prepare or after"),
        ({"prepare": [print]}, "no prepare or after"),
    ],
)
def test_a_table_row_takes_callables_and_no_callbacks_it_would_not_run(
    options: dict[str, Any], refused: str
) -> None:
    """Names to resolve, and prepare or after callbacks, are refused when the row is made."""
    with pytest.raises(ValueError, match=refused):
        RowTransition("OFF", "ON", **options)


def test_a_table_trigger_takes_its_payload_by_keyword_only() -> None:
    """A positional argument to a table's trigger is refused, not silently dropped."""
    machine = MACHINES[0]
    event = machine._build()[machine.triggers[0]]
    assert isinstance(event, RowEvent)
    with pytest.raises(TypeError, match="keyword payloads only"):
        event.trigger(object(), "positional")
