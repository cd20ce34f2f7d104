"""Repairing a stream so that a model provider accepts it.

Theory of operation: ``sanitize()`` runs before every provider request. It
makes the conversation structurally valid by removing what cannot be sent and
closing what was left open, in seven steps, in this order:

1. Drop conversation events before the first ``chat_request`` (keep
   turn starts and global entries). Without any ``chat_request`` there is
   no "first" to drop before, and nothing is dropped.
2. Remove tool-call responses that pair with no request.
3. Insert an error response ``Tool call was interrupted.`` directly after each
   tool-call request that pairs with no response, stamped with the request's
   timestamp (and given a fresh event id, and the request link of the call
   it closes, if the call has one).
4. Remove inquiry responses that pair with no request.
5. Remove inquiry requests that pair with no response.
6. Remove every ``turn_start`` that no other conversation event follows (only
   global entries, or nothing, come after it).
7. When a ``chat_request`` exists: keep only the last of several
   turn starts before the first one, or insert one directly before it
   when there is none, stamped with its timestamp. Without any
   ``chat_request`` this step does nothing.

Steps 2-5 pair with :mod:`coordinator.stream._pairing`, on the stream as step 1 left
it: **turn-scoped, by cycle, then count-based**. An orphan in turn 1 is
repaired in turn 1 even when turn 2 pairs the same id; of two legacy requests
sharing an id and one response, the by-order pair stays and the other
request goes; a request left open in one cycle whose id a later cycle asks
again goes (an inquiry) or is closed where it stands (a tool call), and the
later request keeps its response.

Rules:

- Global entries (``config_delta``, ``compaction``, ``event_overlay``,
  unknown kinds) are never touched, removed or moved. Nothing kept is
  reordered: the result is the input with some entries left out and some
  inserted.
- Request links (RFD 098) are neither read nor changed: nothing is kept,
  dropped or repaired for its ``request_id``, which pairing never looks at.
- The result is a fixed point: ``sanitize`` on a sanitized stream changes
  nothing, on every stream. Why it holds, step by step: no step adds or
  removes a ``chat_request``, so whether one exists is the same on every run.
  After step 1 only turn starts and global entries precede the first
  ``chat_request``. Pairing's cycles begin at chat messages and tool-call
  requests, which no step inserts or removes after that, so every run sees
  the same cycles. Step 3 puts each inserted response right after an open
  request, which pairs every request of its cycle by order (every prefix
  still holds at least as many requests as responses) before a later cycle
  asks its id again, and steps 2, 4 and 5 remove only what pairing left
  over, so every turn ends fully paired. Step 6
  removes *every* trailing ``turn_start`` (removing only the last, as JP
  does, leaves the one before it trailing for the next run), and the turns
  it ends hold no events. Step 7 acts only on the turn starts before the
  first ``chat_request``, whose turns hold no events, and leaves exactly one
  there, which it then leaves alone; it never inserts where there is no
  ``chat_request`` (JP inserts one at the start of such a stream on every
  run).
- :func:`plan_sanitize` computes the result and what it would change without
  touching the stream (for ``--dry-run``); :func:`sanitize` applies it with
  :meth:`ConversationStream.replace` (also :meth:`SanitizePlan.apply`), and
  only when something changed, so the stream's ``revision`` (and so whether a
  save writes) moves only then.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, TypeGuard

import attrs

from coordinator.stream._entries import EventEntry, StreamEntry
from coordinator.stream._pairing import pair_indexed
from coordinator.stream._stream import ConversationStream
from machines import ChatRequest, ToolCallResponse, TurnStart
from machines.wording import INTERRUPTED

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "INTERRUPTED_TOOL_CALL",
    "Insertion",
    "InsertionReason",
    "Removal",
    "RemovalReason",
    "SanitizePlan",
    "SanitizeReport",
    "plan_sanitize",
    "sanitize",
]

#: The content of the error response that closes an unanswered tool call
#: (JP's wording, kept with the others the model is told in ``machines``).
INTERRUPTED_TOOL_CALL = INTERRUPTED


class RemovalReason(enum.Enum):
    """Why an entry was removed; values name the step, for reports and JSON."""

    #: Step 1: a conversation event before the first ``chat_request``.
    BEFORE_FIRST_CHAT_REQUEST = "before_first_chat_request"
    #: Step 2: a tool-call response that pairs with no request in its turn.
    ORPHANED_TOOL_CALL_RESPONSE = "orphaned_tool_call_response"
    #: Step 4: an inquiry response that pairs with no request in its turn.
    ORPHANED_INQUIRY_RESPONSE = "orphaned_inquiry_response"
    #: Step 5: an inquiry request that pairs with no response in its turn.
    UNANSWERED_INQUIRY_REQUEST = "unanswered_inquiry_request"
    #: Step 6: a ``turn_start`` no conversation event follows.
    TRAILING_TURN_START = "trailing_turn_start"
    #: Step 7: one of several turn starts before the first ``chat_request``.
    COLLAPSED_TURN_START = "collapsed_turn_start"


class InsertionReason(enum.Enum):
    """Why an entry was inserted; values name the step, for reports and JSON."""

    #: Step 3: the error response closing a tool call that had none.
    INTERRUPTED_TOOL_CALL = "interrupted_tool_call"
    #: Step 7: the ``turn_start`` the first ``chat_request`` lacked.
    MISSING_TURN_START = "missing_turn_start"


@attrs.frozen
class Removal:
    """An entry sanitize removes.

    ``index`` is its position in the stream before sanitizing; ``id`` is the
    tool-call or inquiry id it carries, if any.
    """

    reason: RemovalReason
    index: int
    event_id: str
    kind: str
    id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The removal as JSON."""
        return {
            "reason": self.reason.value,
            "index": self.index,
            "event_id": self.event_id,
            "kind": self.kind,
            "id": self.id,
        }


@attrs.frozen
class Insertion:
    """An entry sanitize inserts.

    ``index`` is its position in the sanitized stream; ``anchor`` the position,
    before sanitizing, of the entry it was inserted for (the unanswered
    tool-call request it follows, or the ``chat_request`` it precedes).
    """

    reason: InsertionReason
    index: int
    anchor: int
    entry: EventEntry = attrs.field(repr=False)

    @property
    def id(self) -> str | None:
        """The tool-call id of an inserted response."""
        payload = self.entry.payload
        return payload.id if isinstance(payload, ToolCallResponse) else None

    def as_dict(self) -> dict[str, Any]:
        """The insertion as JSON."""
        return {
            "reason": self.reason.value,
            "index": self.index,
            "anchor": self.anchor,
            "event_id": self.entry.event_id,
            "kind": self.entry.kind,
            "id": self.id,
        }


@attrs.frozen
class SanitizeReport:
    """What sanitize changed (or, from a plan, would change)."""

    removed: tuple[Removal, ...] = ()
    inserted: tuple[Insertion, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether anything was removed or inserted."""
        return bool(self.removed or self.inserted)

    @property
    def responses_inserted(self) -> int:
        """How many interrupted tool calls were closed."""
        return self._inserted(InsertionReason.INTERRUPTED_TOOL_CALL)

    @property
    def turn_starts_added(self) -> int:
        """How many turn starts were inserted (zero or one)."""
        return self._inserted(InsertionReason.MISSING_TURN_START)

    @property
    def turn_starts_collapsed(self) -> int:
        """How many surplus leading turn starts were removed."""
        return self.removed_for(RemovalReason.COLLAPSED_TURN_START)

    def removed_for(self, reason: RemovalReason) -> int:
        """How many entries were removed for ``reason``."""
        return sum(1 for removal in self.removed if removal.reason is reason)

    def _inserted(self, reason: InsertionReason) -> int:
        return sum(1 for insertion in self.inserted if insertion.reason is reason)

    def counts(self) -> dict[str, int]:
        """How many entries each step removed or inserted, by reason."""
        removed = {reason.value: self.removed_for(reason) for reason in RemovalReason}
        inserted = {reason.value: self._inserted(reason) for reason in InsertionReason}
        return {"removed_" + key: n for key, n in removed.items()} | {
            "inserted_" + key: n for key, n in inserted.items()
        }

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "changed": self.changed,
            "counts": self.counts(),
            "removed": [removal.as_dict() for removal in self.removed],
            "inserted": [insertion.as_dict() for insertion in self.inserted],
        }


@attrs.frozen
class SanitizePlan:
    """The sanitized entries of ``stream`` as it was at ``revision``, and what changed."""

    stream: ConversationStream = attrs.field(repr=False, eq=False)
    entries: tuple[StreamEntry, ...] = attrs.field(repr=False)
    report: SanitizeReport
    revision: int

    def apply(self) -> SanitizeReport:
        """Put the planned entries into the stream (only if something changes).

        Raises :class:`ValueError` when the stream changed since the plan was
        made: the plan would undo that change.
        """
        if self.stream.revision != self.revision:
            raise ValueError(
                f"the stream changed since this sanitize plan was made (revision "
                f"{self.revision}, now {self.stream.revision}); plan again"
            )
        if self.report.changed:
            self.stream.replace(self.entries)
        return self.report


def _id_of(entry: EventEntry) -> str | None:
    payload_id = getattr(entry.payload, "id", None)
    return payload_id if isinstance(payload_id, str) else None


def _first_chat_request(entries: Sequence[StreamEntry]) -> int | None:
    for index, entry in enumerate(entries):
        if isinstance(entry, EventEntry) and isinstance(entry.payload, ChatRequest):
            return index
    return None


def _is_event(entry: StreamEntry) -> TypeGuard[EventEntry]:
    """A conversation event other than a ``turn_start``."""
    return isinstance(entry, EventEntry) and not isinstance(entry.payload, TurnStart)


def _is_turn_start(entry: StreamEntry) -> TypeGuard[EventEntry]:
    return isinstance(entry, EventEntry) and isinstance(entry.payload, TurnStart)


class _Removals(dict[int, Removal]):
    """The entries to remove, by position in the input."""

    def add(self, reason: RemovalReason, index: int, entry: EventEntry) -> None:
        self[index] = Removal(reason, index, entry.event_id, entry.kind, _id_of(entry))


def _drop_before_first_chat_request(
    entries: Sequence[StreamEntry], first_chat: int | None, removed: _Removals
) -> None:
    """Step 1."""
    if first_chat is None:
        return
    for index in range(first_chat):
        if _is_event(entry := entries[index]):
            removed.add(RemovalReason.BEFORE_FIRST_CHAT_REQUEST, index, entry)


def _repair_pairs(entries: Sequence[StreamEntry], removed: _Removals) -> dict[int, str]:
    """Steps 2, 4 and 5; return the requests step 3 closes: their ids by position."""
    # Paired on what step 1 kept, with positions in the input.
    pairing = pair_indexed((i, e) for i, e in enumerate(entries) if i not in removed)
    for located in pairing.tool_calls.orphaned:
        removed.add(RemovalReason.ORPHANED_TOOL_CALL_RESPONSE, located.index, located.entry)
    for located in pairing.inquiries.orphaned:
        removed.add(RemovalReason.ORPHANED_INQUIRY_RESPONSE, located.index, located.entry)
    for located in pairing.inquiries.pending:
        removed.add(RemovalReason.UNANSWERED_INQUIRY_REQUEST, located.index, located.entry)
    return {located.index: located.id for located in pairing.tool_calls.pending}


def _drop_trailing_turn_starts(entries: Sequence[StreamEntry], removed: _Removals) -> None:
    """Step 6."""
    # Steps 1-5 never remove a turn start, and step 3 inserts only right
    # after a kept request, so the last kept event is where the trail begins.
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if _is_event(entry) and index not in removed:
            return
        if _is_turn_start(entry):
            removed.add(RemovalReason.TRAILING_TURN_START, index, entry)


def _one_leading_turn_start(
    entries: Sequence[StreamEntry], first_chat: int | None, removed: _Removals
) -> bool:
    """Step 7; return whether a turn start must be inserted before ``first_chat``."""
    if first_chat is None:
        return False
    leading = [(i, e) for i in range(first_chat) if _is_turn_start(e := entries[i])]
    for index, entry in leading[:-1]:
        removed.add(RemovalReason.COLLAPSED_TURN_START, index, entry)
    return not leading


def plan_sanitize(stream: ConversationStream) -> SanitizePlan:
    """Compute what :func:`sanitize` would make of ``stream``, without changing it.

    The stream's entries and ``revision`` stay as they are; the event ids of
    the entries the plan would insert are reserved in the stream, so that
    they stay unique when the plan is applied.
    """
    entries = list(stream)
    removed = _Removals()
    first_chat = _first_chat_request(entries)
    _drop_before_first_chat_request(entries, first_chat, removed)
    unanswered = _repair_pairs(entries, removed)
    _drop_trailing_turn_starts(entries, removed)
    insert_turn_start = _one_leading_turn_start(entries, first_chat, removed)
    return _build(stream, entries, removed, unanswered, first_chat if insert_turn_start else None)


def _build(
    stream: ConversationStream,
    entries: list[StreamEntry],
    removed: dict[int, Removal],
    unanswered: dict[int, str],
    missing_turn_start: int | None,
) -> SanitizePlan:
    """Lay out the kept entries with the inserted ones, in one pass."""
    result: list[StreamEntry] = []
    inserted: list[Insertion] = []
    for index, entry in enumerate(entries):
        if index == missing_turn_start and isinstance(entry, EventEntry):
            turn_start = stream.make_entry(TurnStart(), timestamp=entry.timestamp)
            inserted.append(
                Insertion(InsertionReason.MISSING_TURN_START, len(result), index, turn_start)
            )
            result.append(turn_start)
        if index in removed:
            continue
        result.append(entry)
        tool_call_id = unanswered.get(index)
        if tool_call_id is not None and isinstance(entry, EventEntry):
            response = ToolCallResponse(
                id=tool_call_id, content=INTERRUPTED_TOOL_CALL, is_error=True
            )
            # It answers what the call answered: the call's own link, or none.
            closing = stream.make_entry(
                response, timestamp=entry.timestamp, request_id=entry.request_id
            )
            inserted.append(
                Insertion(InsertionReason.INTERRUPTED_TOOL_CALL, len(result), index, closing)
            )
            result.append(closing)
    report = SanitizeReport(
        removed=tuple(removed[index] for index in sorted(removed)), inserted=tuple(inserted)
    )
    return SanitizePlan(stream, tuple(result), report, stream.revision)


def sanitize(stream: ConversationStream) -> SanitizeReport:
    """Sanitize ``stream`` in place (see the module docstring); report what changed.

    The stream is replaced only when something changed, so its ``revision``
    moves only then.
    """
    return plan_sanitize(stream).apply()
