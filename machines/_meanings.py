"""What a row means: the vocabulary of the tables' meaning columns.

Theory of operation: a row of a machine table says what happens (trigger,
source, destination, guard, what it emits) and, in its meaning columns, what
that *means* to someone reading the outcome:

- ``outcome`` (tool-call rows into a final state): how the tool call ended,
  a :class:`CallOutcome`;
- ``resolution`` (inquiry rows into a final state): by which route the
  question was decided, a :class:`Resolution`;
- ``permission`` (tool-call rows that let a call run, skip it, or refuse it
  for want of anyone to ask): who decided, and whether it runs, a
  :class:`PermissionRuling`;
- ``delivery`` (tool-call rows that decide whether a finished call's result
  reaches the model, for a tool whose ``result`` is ``ask``): who decided,
  and whether it is delivered, a :class:`DeliveryRuling`;
- ``detached`` (rows where nobody could be asked, and the detached prompt
  policy of RFD 049 decided instead): the policy's mode, a
  :class:`DetachedMode`.

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
4. A :class:`DetachedMode` is what decides a prompt nobody can answer (no
   terminal, or an answers file without a reply), per :class:`PromptKind`.
   The default is ``deny`` (RFD 049). ``park`` (ours, issue 41) keeps a
   question or a permission, recorded, for an answer given later: the
   process is done with it (the rows into ``parked`` end its model, with
   the outcome or resolution ``parked``), and the turn waits until a later
   run, or the inbox, answers it (``parked_then_answered``). A delivery is
   never parked: the result it would wait with is held in memory only.
5. A prompt on screen for longer than its ``timeout`` is closed as
   ``timed_out`` (:class:`OnTimeout` ``close``, the default), or handed to
   the detached policy as if nobody were there (``detached``).
"""

from __future__ import annotations

import enum

import attrs

from machines._errors import RecordError
from machines.validators import of_type

__all__ = [
    "CallOutcome",
    "DeliveryRuling",
    "DetachedMode",
    "DetachedPolicy",
    "OnTimeout",
    "PermissionBy",
    "PermissionRuling",
    "PromptKind",
    "Resolution",
]


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
    #: The person cancelled a question it asked, or the prompt delivering its result.
    CANCELLED = "cancelled"
    #: The batch was stopped (``cancel``, Ctrl-C) before the call got further.
    INTERRUPTED = "interrupted"
    #: It ran, and the person (or the answers file) chose not to deliver its
    #: result: the model is told so instead.
    WITHHELD = "result withheld"
    #: Its question (or its permission) was parked by the detached policy: it
    #: has no response yet, and waits for an answer given later (another run
    #: continuing the turn, or the inbox). The process is done with it.
    PARKED = "parked"
    #: Open when its turn stopped, and closed when that unfinished turn was
    #: discarded: it does not run again, and the model is told so.
    DISCARDED = "discarded"


class Resolution(enum.Enum):
    """How a question was decided: the ``resolution`` of the row that closed it."""

    #: An answer the person gave earlier in the turn, and asked to remember.
    REMEMBERED = "remembered"
    #: A static answer from configuration.
    CONFIGURATION = "configuration"
    PERSON = "person"
    #: The answers file (``inquiry run --answers``), standing in for the person.
    ANSWERS_FILE = "answers_file"
    MODEL = "model"
    #: Nobody could be asked; the detached policy ``defaults`` took the question's default.
    DEFAULT = "default"
    #: Nobody could be asked, and the detached policy refused to answer for
    #: them: ``deny``, ``defaults`` with no default, or ``auto`` for an
    #: exclusive question.
    DENIED = "denied"
    #: Closed without an answer taken: asked too often, a secret that may not
    #: go where it would have to, or a static answer (or the answers file's
    #: reply) that does not fit.
    REFUSED = "refused"
    #: The person cancelled it (or the answers file did), or the model's
    #: request was cancelled.
    CANCELLED = "cancelled"
    #: Its tool call was settled while it was open (the batch stopped: a
    #: cancel, Ctrl-C away from its prompt, a signal, a crash): nobody answered
    #: or cancelled *it*.
    WITHDRAWN = "withdrawn"
    #: The model could not answer it.
    FAILED = "failed"
    #: Asked before its turn stopped, and closed when the turn was continued
    #: without being asked again as it stood (``supersede``: ``interrupted``).
    INTERRUPTED = "interrupted"
    #: Asked before its turn stopped, and closed when that unfinished turn
    #: was discarded (``discard``: ``discarded``); nobody answered it.
    DISCARDED = "discarded"
    #: Not decided here: nobody could be asked, and the detached policy
    #: ``park`` kept it, recorded, for an answer given later. No response is
    #: recorded with it (the request is marked parked instead).
    PARKED = "parked"
    #: Parked earlier, and answered later: by a person or the answers file
    #: when the turn was continued, or through the inbox, under the id it
    #: was parked with.
    PARKED_THEN_ANSWERED = "parked_then_answered"
    #: On screen for longer than its ``timeout``, and closed so (``timed_out``).
    TIMED_OUT = "timed_out"


class PermissionBy(enum.Enum):
    """Who decided a prompt about a tool call: whether it runs, or its result is delivered."""

    #: The tool's run mode: ``unattended`` runs it, ``skip`` skips it.
    CONFIGURATION = "configuration"
    #: Nobody could be asked (no terminal, or the answers file has no reply):
    #: the detached policy decided (the row's ``detached`` column says how).
    DETACHED_POLICY = "detached policy"
    #: A ``Y`` or ``N`` the person gave earlier in the turn.
    REMEMBERED = "remembered"
    PERSON = "person"
    #: The answers file (``inquiry run --answers``), standing in for the person.
    ANSWERS_FILE = "answers file"
    #: A call taken up after a restart whose recorded questions show it had run:
    #: it was let run then, and is not asked again (RFD 023).
    EARLIER_RUN = "earlier run"
    #: Parked earlier by the detached policy, and decided when the turn was
    #: continued (by a person, or the answers file).
    PARKED_THEN_ANSWERED = "parked then answered"
    #: The prompt was on screen for longer than its ``timeout``: the call
    #: does not run (a permission), or its result is not delivered.
    TIMED_OUT = "timed out"


class DetachedMode(enum.Enum):
    """What the detached prompt policy (RFD 049) does with a prompt nobody can answer."""

    #: Run mode ``ask`` runs, a result is delivered, a question goes to the
    #: model; an exclusive question fails instead.
    AUTO = "auto"
    #: A question takes its default (one that answers it), else fails; a
    #: permission or a delivery has no default, and fails.
    DEFAULTS = "defaults"
    #: Fail the call with a descriptive error (the default).
    DENY = "deny"
    #: Keep the prompt, recorded, for someone to answer later: the call stops
    #: without a response (its tool is not left running), the rest of the
    #: batch goes on, and the turn waits. Questions (a secret too: it waits
    #: for a person) and permissions; never a delivery.
    PARK = "park"


class OnTimeout(enum.Enum):
    """What happens to a prompt that was on screen for longer than its ``timeout``."""

    #: Closed as timed out: a question ``Cancelled(timed_out)``, a permission
    #: or a delivery refused; the call fails, telling the model why.
    CLOSE = "close"
    #: Handed to the tool's detached policy, as if nobody were there.
    DETACHED = "detached"


class PromptKind(enum.Enum):
    """The three kinds of prompt the detached policy is configured for (RFD 049's keys)."""

    #: May this tool run? (run mode ``ask``)
    RUN = "run"
    #: May this result reach the model? (result mode ``ask``)
    DELIVER = "deliver"
    #: A tool's question for the person (``target = "user"``).
    TOOL = "tool"


def _not_parked(
    _instance: object, _attribute: attrs.Attribute[DetachedMode], value: object
) -> None:
    if value is DetachedMode.PARK:
        raise RecordError(
            "DetachedPolicy.deliver cannot be 'park': a finished tool's result is held in "
            "memory only, so it could not wait for a later answer (use 'auto', 'defaults' "
            "or 'deny')"
        )


@attrs.frozen(kw_only=True)
class DetachedPolicy:
    """One tool's detached policy, resolved: the mode for each :class:`PromptKind`.

    RFD 049's default is ``deny`` for every kind: nothing runs, is delivered
    or is answered unattended unless configuration says so.
    """

    run: DetachedMode = attrs.field(default=DetachedMode.DENY, validator=of_type(DetachedMode))
    deliver: DetachedMode = attrs.field(
        default=DetachedMode.DENY, validator=[of_type(DetachedMode), _not_parked]
    )
    tool: DetachedMode = attrs.field(default=DetachedMode.DENY, validator=of_type(DetachedMode))

    def mode(self, kind: PromptKind) -> DetachedMode:
        """The mode for prompts of ``kind``."""
        if kind is PromptKind.RUN:
            return self.run
        if kind is PromptKind.DELIVER:
            return self.deliver
        return self.tool


@attrs.frozen
class PermissionRuling:
    """A row's ``permission`` column: who decided, and whether the call runs."""

    by: PermissionBy = attrs.field(validator=of_type(PermissionBy))
    run: bool = attrs.field(validator=of_type(bool))

    def __str__(self) -> str:
        """As the tables show it: ``runs (configuration)``, ``skipped (person)``."""
        return f"{'runs' if self.run else 'skipped'} ({self.by.value})"


@attrs.frozen
class DeliveryRuling:
    """A row's ``delivery`` column: who decided, and whether the result reaches the model."""

    by: PermissionBy = attrs.field(validator=of_type(PermissionBy))
    delivered: bool = attrs.field(validator=of_type(bool))

    def __str__(self) -> str:
        """As the tables show it: ``delivered (person)``, ``withheld (detached policy)``."""
        return f"{'delivered' if self.delivered else 'withheld'} ({self.by.value})"
