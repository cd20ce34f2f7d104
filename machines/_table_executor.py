"""The ``transitions`` machine a table runs on, doing only what a table needs.

Theory of operation: ``transitions`` executes every machine table (the design
fixes it as the executor). Its ``Machine`` resolves the table's rows into one
``Event`` per trigger, each holding, per source state, that trigger's
``Transition`` objects in the order they were added: a trigger tries the ones
of the model's state in that order, and the first whose conditions hold runs
its ``before`` callbacks, changes the model's state and runs its ``after``
callbacks.

Out of the box a trigger also does, every time, what a table never uses: an
``EventData`` and a ``partial`` per trigger, the check of the machine's event
queue, four machine-wide callback lists (always empty here), every callback
resolved by name (``resolve_callable``, although the table's are callables),
``State.exit``/``enter`` with their empty callback lists and their logging,
and the model's state looked up by name, through ``Enum.name``, three times.
Together that was about ten microseconds a trigger, most of what a question
cost the driver. The subclasses below keep the executing and drop the rest:

- :class:`RowEvent` tries the transitions ``transitions`` filed under the
  model's state, in their order, and stops at the first that fires;
- :class:`RowTransition` calls its conditions, ``prepare``, ``before`` and
  ``after`` callbacks directly with the model and the trigger's keyword
  payload (a table's callbacks are callables, never names), and sets the
  model's ``state`` to the destination's enum member, as
  ``Machine.set_state`` does;
- :class:`RowMachine` builds such a machine from an enum of states (no state
  callbacks to run) with no model attached, no automatic ``to_<state>``
  triggers, no queue and no machine-wide callbacks: a configuration the
  trimmed path executes faithfully, and the only one it accepts.

A trigger of a state with no transition returns ``False`` here rather than
raising: :class:`~machines._table.TableMachine` looks every trigger up before
it fires it, and raises its own error.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from transitions import Event, Machine, Transition

if TYPE_CHECKING:
    from collections import defaultdict

    from transitions import EventData

__all__ = ["RowCallback", "RowEvent", "RowMachine", "RowTransition"]

#: A row's condition or callback: the model and the trigger's keyword payload.
RowCallback = Callable[[Any, Mapping[str, Any]], Any]


class RowTransition(Transition):
    """A transition whose callbacks are callables taking ``(model, payload)``."""

    def __init__(  # noqa: PLR0917 - transitions' own signature, called positionally by it
        self,
        source: str,
        dest: str,
        conditions: Any = None,
        unless: Any = None,
        before: Any = None,
        after: Any = None,
        prepare: Any = None,
    ) -> None:
        """As ``Transition``; every condition and callback must be a callable."""
        super().__init__(source, dest, conditions, unless, before, after, prepare)
        named = [
            callback
            for callback in (
                *(condition.func for condition in self.conditions),
                *self.prepare,
                *self.before,
                *self.after,
            )
            if not callable(callback)
        ]
        if named:
            raise ValueError(f"a table row's callbacks are callables, not names: {named}")
        #: The destination as the model holds it (set by :class:`RowMachine`).
        self.target: enum.Enum | None = None

    def fire(self, model: Any, payload: Mapping[str, Any]) -> bool:
        """Fire on ``model`` if the conditions hold; whether it fired."""
        for callback in self.prepare:
            callback(model, payload)  # type: ignore[operator] # checked callable
        for condition in self.conditions:
            if condition.func(model, payload) != condition.target:  # type: ignore[operator] # checked callable
                return False
        for callback in self.before:
            callback(model, payload)  # type: ignore[operator] # checked callable
        if self.target is not None:
            model.state = self.target
        for callback in self.after:
            callback(model, payload)  # type: ignore[operator] # checked callable
        return True

    def execute(self, event_data: EventData) -> bool:
        """``transitions``' own entry point, on the same path as :meth:`fire`."""
        return self.fire(event_data.model, event_data.kwargs)


class RowEvent(Event):
    """A trigger: the model's state's transitions, tried in order."""

    transitions: defaultdict[str, list[RowTransition]]  # type: ignore[assignment] # RowMachine's

    def trigger(self, model: object, *args: Any, **kwargs: Any) -> bool:
        """Fire on ``model`` with the keyword payload ``kwargs``; whether a transition fired."""
        if args:
            raise TypeError(f"{self.name}: a table's triggers take keyword payloads only")
        return self.fire(model, kwargs)

    def fire(self, model: Any, payload: Mapping[str, Any]) -> bool:
        """Try the transitions of ``model``'s state in order; whether one fired."""
        # ``_name_`` is the enum member's name as a plain attribute (``.name``
        # is a descriptor): the key ``transitions`` files the transitions under.
        for transition in self.transitions.get(model.state._name_, ()):
            if transition.fire(model, payload):
                return True
        return False


class RowMachine(Machine):
    """A ``transitions.Machine`` of :class:`RowEvent` and :class:`RowTransition`."""

    transition_cls = RowTransition
    event_cls = RowEvent

    def __init__(
        self,
        *,
        states: type[enum.Enum],
        initial: enum.Enum,
        transitions: list[dict[str, Any]],
        name: str,
    ) -> None:
        """Build the machine of ``transitions`` over the enum ``states``."""
        super().__init__(
            model=None,
            states=states,
            initial=initial,
            transitions=transitions,
            auto_transitions=False,
            ignore_invalid_triggers=False,
            queued=False,
            name=name,
        )
        self.row_events: dict[str, RowEvent] = {}
        for trigger, event in self.events.items():
            if not isinstance(event, RowEvent):  # pragma: no cover - event_cls above
                raise TypeError(f"{trigger}: {type(event).__name__} is not a RowEvent")
            for transition in (t for rows in event.transitions.values() for t in rows):
                if transition.dest is not None:
                    target = self.states[transition.dest].value
                    if not isinstance(target, enum.Enum):  # pragma: no cover - an enum's states
                        raise TypeError(f"{trigger}: state {target!r} is not an enum member")
                    transition.target = target
            self.row_events[trigger] = event
