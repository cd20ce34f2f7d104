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
  model's state, in their order, and fires the first whose conditions hold;
- :class:`RowTransition` holds a row's conditions and ``before`` callbacks
  (its guard and action), which are called directly with the model and the
  trigger's keyword payload (a table's callbacks are callables, never
  names), and its destination's enum member, which the model's ``state``
  is set to, as ``Machine.set_state`` does;
- :class:`RowMachine` builds such a machine from an enum of states (no state
  callbacks to run) with no model attached, no automatic ``to_<state>``
  triggers, no queue and no machine-wide callbacks: a configuration the
  trimmed path executes faithfully, and the only one it accepts.

A trigger in a state with no transition returns ``False``, as one whose
conditions all fail does, rather than raising: nothing has run, and
:class:`~machines._table.TableMachine` raises its own error, saying which.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from transitions import Event, Machine, Transition

if TYPE_CHECKING:
    from collections import defaultdict
    from collections.abc import Mapping

    from transitions import EventData

__all__ = ["RowEvent", "RowMachine", "RowTransition"]


class RowTransition(Transition):
    """A table row as a transition: conditions and ``before`` callbacks, all callables.

    They take ``(model, payload)``. A row has no ``prepare`` or ``after``
    callbacks (its action runs after its guard and before the state
    changes), so none is accepted: :class:`RowEvent` would not run them.
    """

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
        if after or prepare:
            raise ValueError("a table row has no prepare or after callbacks")
        super().__init__(source, dest, conditions, unless, before)
        named = [
            callback
            for callback in (*(condition.func for condition in self.conditions), *self.before)
            if not callable(callback)
        ]
        if named:
            raise ValueError(f"a table row's callbacks are callables, not names: {named}")
        #: The destination as the model holds it (set by :class:`RowMachine`).
        self.target: enum.Enum | None = None

    def execute(self, event_data: EventData) -> bool:
        """Not used: :meth:`RowEvent.fire` fires a table's transitions."""
        raise NotImplementedError(f"{event_data.event.name}: fire a table row through RowEvent")


class RowEvent(Event):
    """A trigger: the model's state's transitions, tried in order."""

    transitions: defaultdict[str, list[RowTransition]]  # type: ignore[assignment] # RowMachine's

    def trigger(self, model: object, *args: Any, **kwargs: Any) -> bool:
        """Fire on ``model`` with the keyword payload ``kwargs``; whether a transition fired."""
        if args:
            raise TypeError(f"{self.name}: a table's triggers take keyword payloads only")
        return self.fire(model, kwargs)

    def fire(self, model: Any, payload: Mapping[str, Any]) -> bool:
        """Fire the first of ``model``'s state's transitions whose conditions hold.

        Its ``before`` callbacks run, then the model takes its destination;
        returns whether one fired. Every step of every question comes here:
        the transitions' parts are read in this one loop, without a call per
        transition tried (a question tries about twenty).
        """
        # ``_name_`` is the enum member's name as a plain attribute (``.name``
        # is a descriptor): the key ``transitions`` files the transitions under.
        for transition in self.transitions.get(model.state._name_, ()):
            for condition in transition.conditions:
                if condition.func(model, payload) != condition.target:  # type: ignore[operator] # checked callable
                    break
            else:
                for callback in transition.before:
                    callback(model, payload)  # type: ignore[operator] # checked callable
                if transition.target is not None:
                    model.state = transition.target
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
