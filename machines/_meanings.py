"""What a row means: the vocabulary of the tables' meaning columns.

Theory of operation: a row of a machine table says what happens (trigger,
source, destination, guard, what it emits) and, in its meaning columns, what
that *means* to someone reading the outcome:

- ``outcome`` (tool-call rows into a final state): how the tool call ended,
  a :class:`CallOutcome`;
- ``resolution`` (inquiry rows into a final state): by which route the
  question was decided, a :class:`Resolution`;
- ``permission`` (tool-call rows that let a call run or skip it): who decided,
  and whether it runs, a :class:`PermissionRuling`.

Rules:

1. A meaning is declared on the row, once, beside the row's guard and
   destination: nothing elsewhere re-derives it from a guard's name, a
   trigger's name or a state. An observer reads the column of the row that
   fired (``Fired.row``).
2. Every row into a final state declares how its model ended (its
   ``outcome`` or its ``resolution``), and no other row does:
   :class:`~machines.TableMachine` refuses a table that breaks this, so a
   row added without its meaning cannot be imported.
3. A :class:`Resolution` is the route by which a question was decided, one
   member per route: recording the route with each response reads this
   column, and a new route (a default taken, a question parked and answered
   later, a timeout) is a new member on the new row, never a second table.
"""

from __future__ import annotations

import enum

import attrs

from machines.validators import of_type

__all__ = ["CallOutcome", "PermissionBy", "PermissionRuling", "Resolution"]


class CallOutcome(enum.Enum):
    """How a tool call ended: the ``outcome`` of the row that took it to its final state."""

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
    """How a question was decided: the ``resolution`` of the row that closed it."""

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


@attrs.frozen
class PermissionRuling:
    """A row's ``permission`` column: who decided, and whether the call runs."""

    by: PermissionBy = attrs.field(validator=of_type(PermissionBy))
    run: bool = attrs.field(validator=of_type(bool))

    def __str__(self) -> str:
        """As the tables show it: ``runs (configuration)``, ``skipped (person)``."""
        return f"{'runs' if self.run else 'skipped'} ({self.by.value})"
