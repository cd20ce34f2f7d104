"""Who decided: the route of each response, recorded in its entry's ``metadata``.

Theory of operation: every ``inquiry_response`` says by which route its
question was decided, and a ``tool_call_response`` says who decided a
prompt about its call (permission to run, delivery of its result), in a
form JP keeps verbatim: one key of the entry's ``metadata``, ``"inquiry"``
(``docs/wire.md``)::

    inquiry_response    {"inquiry": {"route": "person"}}
                        {"inquiry": {"route": "model", "detached": "auto"}}
                        {"inquiry": {"route": "denied", "detached": "deny"}}
                        {"inquiry": {"route": "parked_then_answered", "by": "inbox"}}
                        {"inquiry": {"route": "person", "by": "inbox"}}
    tool_call_response  {"inquiry": {"permission": {"route": "answers_file"}}}
                        {"inquiry": {"route": "discarded"}}
                        {"inquiry": {
                            "permission": {"route": "detached_policy", "detached": "auto"},
                            "delivery": {"route": "person"}}}

A route is the lower-cased name of the column value of the row that decided
(:class:`~machines.Resolution` for a question; :class:`~machines.PermissionBy`
for a permission or a delivery); a tool call closed because its turn was
discarded (the row's outcome ``discarded``) says so with the route
:data:`~coordinator._recorded_routes.DISCARDED_ROUTE`, as the questions
closed with it do, which is how a reader knows the turn was discarded;
``detached`` is the mode of the detached
policy (RFD 049), present only where the policy decided (the row's
``detached`` column, or, for a question the policy put to the model, the
row that did so); ``by`` names who answered a prompt parked earlier
(``person``, ``answers_file``, or the name the inbox or an embedder gave:
what the driver was handed with the answer, ``Told.answered_by``), and
where a person answered a live prompt when not at the terminal (``inbox``:
the web inbox's page, ``QuestionAnswer.by``).
Metadata is the entry's envelope, set by the driver as it appends a record
a machine step emitted: no record is made here, and nothing is read from a
record's text.

Rules:

1. The route is read from the row that fired, never from a guard, a trigger
   or a state: :meth:`CallRoutes.append` goes through a step's rows in
   order, takes in what each decided, and appends each record the row
   emitted with the metadata the row gives it.
2. A permission decided by the tool's run mode (``unattended``, ``skip``)
   is configuration, said once by the configuration itself: only a
   decision made when the call ran (the person, the answers file, a
   remembered ``Y``/``N``, the detached policy, an earlier run) is recorded.
3. On disk, metadata's string leaves are base64 like every metadata string
   (``wire-format.md``); :func:`coordinator._recorded_routes.recorded_route`
   reads a decoded entry's, for ``inquiry export`` and ``inquiry check``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator._recorded_routes import DISCARDED_ROUTE, ROUTE_KEY
from coordinator.driver._observing import NOTHING_TOLD
from machines import (
    INQUIRY_MACHINE,
    Answered,
    CallOutcome,
    Cancelled,
    DetachedMode,
    PermissionBy,
    Redacted,
    Resolution,
    ToolCallResponse,
)

if TYPE_CHECKING:
    import enum
    from collections.abc import Mapping
    from typing import Any

    from coordinator.driver._observing import Told
    from coordinator.stream import ConversationStream, EventEntry
    from machines import Event, Fired, JsonValue, Row, Step, ToolCall

__all__ = ["CallRoutes", "append_answered_later", "append_closed"]


#: A column value as written: its name, lower-cased (``answers_file``, ``detached_policy``).
_WIRE: Mapping[enum.Enum, str] = {
    member: member.name.lower() for kind in (Resolution, PermissionBy) for member in kind
}


#: The routes of a prompt parked and answered later: their decision names who answered.
_LATER = (Resolution.PARKED_THEN_ANSWERED, PermissionBy.PARKED_THEN_ANSWERED)
#: Who answers at the terminal: a person's answer says ``by`` only when given elsewhere.
_PERSON = "person"


def _decision(
    route: enum.Enum, detached: DetachedMode | None, by: str | None = None
) -> dict[str, JsonValue]:
    decided: dict[str, JsonValue] = {"route": _WIRE[route]}
    if detached is not None:
        decided["detached"] = detached.value
    if by is not None and (route in _LATER or (route is Resolution.PERSON and by != _PERSON)):
        decided["by"] = by
    return decided


def append_answered_later(stream: ConversationStream, step: Step, by: str) -> list[EventEntry]:
    """Append the records of ``step``, a parked question answered without its tool, with routes.

    For the inbox (and an embedder continuing a turn with answers): no tool
    call's machine took the step, only the question's, whose row says how it
    was decided; ``by`` names who answered.
    """
    return append_closed(stream, step, by)


def append_closed(
    stream: ConversationStream, step: Step, by: str | None = None
) -> list[EventEntry]:
    """Append the records of ``step``, a question's own (no tool call's machine took it).

    Each goes in with the route its row says (``by``: who answered, for a
    question parked and answered later).
    """
    return [
        stream.append(record, metadata={ROUTE_KEY: _decision(fired.row.resolution, None, by)})
        for fired in step.fired
        if fired.row.resolution is not None
        for record in fired.records
    ]


class CallRoutes:
    """The decisions of one tool call so far, and the metadata of the records its rows emit."""

    __slots__ = ("_delivery", "_permission", "_policy_questions")

    def __init__(self) -> None:
        """Nothing decided yet."""
        self._permission: dict[str, JsonValue] | None = None
        self._delivery: dict[str, JsonValue] | None = None
        # Inquiry ids the detached policy routed (to the model): their response says so.
        self._policy_questions: dict[str, DetachedMode] = {}

    def append(
        self, stream: ConversationStream, step: Step, call: ToolCall, told: Told = NOTHING_TOLD
    ) -> list[EventEntry]:
        """Append the records of ``step``, ``call``'s, in order, each with its row's metadata.

        ``told``: what the driver handed the machine with the step (who answered).
        """
        entries: list[EventEntry] = []
        for fired in step.fired:
            row = fired.row
            if row.permission is not None or row.delivery is not None or row.detached is not None:
                self._note(fired, call, told)
            # A plain loop: every question takes this path, and a generator or a
            # comprehension would cost a frame each time (most rows emit nothing).
            for record in fired.records:
                metadata = self._metadata(row, record, told)
                entries.append(stream.append(record, metadata=metadata))
        return entries

    def _note(self, fired: Fired, call: ToolCall, told: Told) -> None:
        """Take in what ``fired``, a row of ``call``'s step, decided."""
        row = fired.row
        if row.permission is not None and row.permission.by is not PermissionBy.CONFIGURATION:
            self._permission = _decision(row.permission.by, row.detached, told.answered_by)
        if row.delivery is not None:
            self._delivery = _decision(row.delivery.by, row.detached)
        asked = fired.machine == INQUIRY_MACHINE.name
        if asked and row.detached is not None and row.resolution is None:
            # The policy put the question to the model: its response, later, says so.
            inquiry_id = call.inquiries[-1].id
            if inquiry_id is not None:
                self._policy_questions[inquiry_id] = row.detached

    def _metadata(
        self, row: Row[Any, Any], record: Event, told: Told
    ) -> dict[str, JsonValue] | None:
        """The metadata of ``record``, which ``row`` emitted (``None``: it carries none)."""
        if isinstance(record, Answered | Cancelled | Redacted) and row.resolution is not None:
            detached = row.detached or self._policy_questions.pop(record.id, None)
            return {ROUTE_KEY: _decision(row.resolution, detached, told.answered_by)}
        if isinstance(record, ToolCallResponse):
            decided: dict[str, JsonValue] = {}
            if row.outcome is CallOutcome.DISCARDED:
                decided["route"] = DISCARDED_ROUTE
            if self._permission is not None:
                decided["permission"] = self._permission
            if self._delivery is not None:
                decided["delivery"] = self._delivery
            return {ROUTE_KEY: decided} if decided else None
        return None
