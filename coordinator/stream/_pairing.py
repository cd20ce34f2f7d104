"""Pairing requests with their responses, turn by turn.

Theory of operation: an ``inquiry_request`` is closed by the
``inquiry_response`` that carries its id, and a ``tool_call_request`` by the
``tool_call_response`` that carries its id, **within the turn** that holds
them. Ids are only unique within a turn, and not even there in older files:
legacy two-segment inquiry ids repeat when a tool re-asked a question, and
some providers reuse synthetic tool-call ids across cycles. So pairing is by
id, then by *cycle*, then by order.

A turn runs in cycles: the model responds (its ``chat_response`` entries,
then the tool calls it makes), the calls run (asking their inquiries), their
responses are recorded, and the model responds again. Two requests of one id
in *different* cycles are different questions, so a request still open when
its id is asked again in a later cycle can never be answered: the later
request takes the id's next response, and the earlier one stays pending (a
backend that failed in cycle 1 leaves its request open; cycle 2 reuses the
tool-call id and asks again; cycle 2's answer must not close cycle 1's
request). Two requests of one id in the *same* cycle (parallel calls sharing
a synthetic id; a legacy question asked twice by one call) pair by order,
first in, first out, as RFD 082 asks of colliding legacy ids.

Where a cycle begins, by what each request follows in its turn:

- a tool-call request: the last ``chat_request`` or ``chat_response``. A
  model response writes its messages before its tool calls (every real JP
  file has them so), so a message after a tool call is the next response.
- an inquiry request: the last ``chat_request``, ``chat_response`` or
  ``tool_call_request``. An inquiry sits between the request and the
  response of the call that asks it, so a new tool call recorded between
  two inquiries of one id means the later was asked by a later call.

Only these entries delimit cycles, and ``sanitize`` never inserts or removes
one of them after the first ``chat_request``; tool-call responses, which it
does insert and remove, delimit nothing. That keeps a sanitized stream a
fixed point. (It also means a cycle the model opened without writing a
message, ``call X, result Y, call X``, is not told from one response making
two calls: those pair by order.) Ids are never parsed to find a request's
tool call: RFD 082 makes them opaque.

Rules:

- Ids are opaque. Nothing here splits, parses or compares them other than for
  equality.
- A turn starts at a ``turn_start``; conversation events before the first one
  form an implicit leading turn (numbered as :meth:`ConversationStream.turns`
  numbers them). Global entries belong to no turn and are skipped.
- Nothing pairs across a turn boundary: a request left open at the end of its
  turn is *pending* (the turn is blocked on it) even when a later turn answers
  the same id, and a response with no earlier open request in its turn is
  *orphaned*.
- A response pairs with the earliest open request of its id; the open
  requests of an id are always of one cycle (asking it in a later cycle
  leaves the earlier ones pending for good).
- One pass over the entries, a dict of deques per turn: linear in the stream.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import TYPE_CHECKING

import attrs

from coordinator.stream._entries import EventEntry
from machines import (
    Answered,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryRequest,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coordinator.stream._entries import StreamEntry

__all__ = [
    "Located",
    "Pair",
    "PairCounts",
    "PairKind",
    "Pairing",
    "StreamPairing",
    "TurnPairing",
    "pair_events",
    "pair_indexed",
]


class PairKind(enum.Enum):
    """What is being paired; values are the names reports use."""

    INQUIRY = "inquiry"
    TOOL_CALL = "tool_call"


@attrs.frozen
class Located:
    """A request or response, the position it holds and the id it carries."""

    index: int
    entry: EventEntry = attrs.field(repr=False)
    id: str


@attrs.frozen
class Pair:
    """A request and the response that closes it."""

    request: Located
    response: Located

    @property
    def id(self) -> str:
        """The id both carry."""
        return self.request.id


@attrs.frozen
class PairCounts:
    """How many pairs, pending requests and orphaned responses there are."""

    paired: int = 0
    pending: int = 0
    orphaned: int = 0

    def __add__(self, other: PairCounts) -> PairCounts:
        """The counts of both."""
        return PairCounts(
            self.paired + other.paired,
            self.pending + other.pending,
            self.orphaned + other.orphaned,
        )

    def as_dict(self) -> dict[str, int]:
        """The counts by name, for JSON."""
        return {"paired": self.paired, "pending": self.pending, "orphaned": self.orphaned}


@attrs.frozen
class TurnPairing:
    """One kind of request paired within turn ``turn``.

    ``pairs`` are in the order their responses appear; ``pending`` (requests
    with no response: the turn is blocked on them) and ``orphaned`` (responses
    with no request) in stream order.
    """

    turn: int
    pairs: tuple[Pair, ...] = ()
    pending: tuple[Located, ...] = ()
    orphaned: tuple[Located, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every request and every response in the turn is paired."""
        return not self.pending and not self.orphaned

    @property
    def counts(self) -> PairCounts:
        """How many of each."""
        return PairCounts(len(self.pairs), len(self.pending), len(self.orphaned))


@attrs.frozen
class Pairing:
    """One kind of request paired over a whole stream, turn by turn."""

    kind: PairKind
    turns: tuple[TurnPairing, ...]

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Every pair, turn by turn."""
        return tuple(pair for turn in self.turns for pair in turn.pairs)

    @property
    def pending(self) -> tuple[Located, ...]:
        """Every request still waiting for its response, in stream order."""
        return tuple(located for turn in self.turns for located in turn.pending)

    @property
    def orphaned(self) -> tuple[Located, ...]:
        """Every response with no request, in stream order."""
        return tuple(located for turn in self.turns for located in turn.orphaned)

    @property
    def complete(self) -> bool:
        """Whether every turn is fully paired."""
        return all(turn.complete for turn in self.turns)

    @property
    def counts(self) -> PairCounts:
        """The totals over every turn."""
        total = PairCounts()
        for turn in self.turns:
            total += turn.counts
        return total


@attrs.frozen
class StreamPairing:
    """Inquiries and tool calls of a stream, paired turn by turn."""

    inquiries: Pairing
    tool_calls: Pairing

    @property
    def complete(self) -> bool:
        """Whether every request and response of either kind is paired."""
        return self.inquiries.complete and self.tool_calls.complete


#: What a payload is to pairing: a request or a response of either kind, or
#: a chat message (which begins a cycle).
_ASK, _ANSWER, _CALL, _RESULT, _CHAT = range(5)


class _Matcher:
    """The open requests of one kind within one turn."""

    __slots__ = ("cycle_of", "open", "orphaned", "paired", "pairs", "requests")

    def __init__(self) -> None:
        # The open requests of an id, oldest first, and the cycle they were
        # all made in: a request of the id in a later cycle replaces them.
        self.open: dict[str, deque[Located]] = {}
        self.cycle_of: dict[str, int] = {}
        self.requests: list[Located] = []
        self.pairs: list[Pair] = []
        self.orphaned: list[Located] = []
        self.paired: set[int] = set()

    def request(self, located: Located, cycle: int) -> None:
        key = located.id
        waiting = self.open.get(key)
        if waiting is None:
            waiting = self.open[key] = deque()
            self.cycle_of[key] = cycle
        elif self.cycle_of[key] != cycle:
            # Asked again in a later cycle: what is still open of the earlier
            # one will never be answered. It stays pending (finish() finds it
            # among the requests); the new request takes the next response.
            waiting.clear()
            self.cycle_of[key] = cycle
        waiting.append(located)
        self.requests.append(located)

    def response(self, located: Located) -> None:
        waiting = self.open.get(located.id)
        if not waiting:
            self.orphaned.append(located)
            return
        request = waiting.popleft()
        self.paired.add(request.index)
        self.pairs.append(Pair(request, located))

    def finish(self, turn: int) -> TurnPairing:
        # Walking the requests in order (rather than what is left in the
        # deques) keeps the pending list in stream order without sorting.
        pending = tuple(r for r in self.requests if r.index not in self.paired)
        return TurnPairing(turn, tuple(self.pairs), pending, tuple(self.orphaned))


class _Turn:
    """Both matchers of the turn being read, and what has begun its cycles so far."""

    __slots__ = ("calls", "chats", "inquiries", "number", "tools")

    def __init__(self, number: int) -> None:
        self.number = number
        self.inquiries = _Matcher()
        self.tools = _Matcher()
        # The chat messages and the tool-call requests seen in the turn: a
        # tool call's cycle is the count of chat messages before it, an
        # inquiry's the count of both (see the module docstring). Only
        # whether two counts are equal matters.
        self.chats = 0
        self.calls = 0

    def feed(self, index: int, entry: EventEntry, role: int) -> None:
        located = Located(index, entry, entry.payload.id)  # type: ignore[union-attr]
        if role == _CALL:
            self.tools.request(located, self.chats)
            self.calls += 1
        elif role == _RESULT:
            self.tools.response(located)
        elif role == _ASK:
            self.inquiries.request(located, self.chats + self.calls)
        else:
            self.inquiries.response(located)


#: What a payload is to pairing, by its record type; pairing ignores a turn
#: start. A subclass of a record is what its record is.
_ROLES: dict[type, int | None] = {
    InquiryRequest: _ASK,
    Answered: _ANSWER,
    Cancelled: _ANSWER,
    Redacted: _ANSWER,
    ToolCallRequest: _CALL,
    ToolCallResponse: _RESULT,
    ChatRequest: _CHAT,
    ChatResponse: _CHAT,
    TurnStart: None,
}


def _role(payload: object) -> int | None:
    kind = type(payload)
    if kind in _ROLES:
        return _ROLES[kind]
    return next((role for cls, role in _ROLES.items() if isinstance(payload, cls)), None)


def pair_indexed(indexed: Iterable[tuple[int, StreamEntry]]) -> StreamPairing:
    """Pair the entries of ``indexed``, each given with the position it reports.

    The entries must be in stream order; positions are only carried into the
    result, so a caller pairing a filtered view of a stream can keep the
    positions of the original. See :func:`pair_events`.
    """
    inquiry_turns: list[TurnPairing] = []
    tool_turns: list[TurnPairing] = []
    current: _Turn | None = None

    def close(turn: _Turn) -> None:
        inquiry_turns.append(turn.inquiries.finish(turn.number))
        tool_turns.append(turn.tools.finish(turn.number))

    for index, entry in indexed:
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, TurnStart):
            if current is not None:
                close(current)
            current = _Turn(len(inquiry_turns))
            continue
        if current is None:
            # Events before any turn_start: the implicit leading turn.
            current = _Turn(0)
        role = _role(payload)
        if role == _CHAT:
            current.chats += 1
        elif role is not None:
            current.feed(index, entry, role)

    if current is not None:
        close(current)
    return StreamPairing(
        inquiries=Pairing(PairKind.INQUIRY, tuple(inquiry_turns)),
        tool_calls=Pairing(PairKind.TOOL_CALL, tuple(tool_turns)),
    )


def pair_events(entries: Iterable[StreamEntry]) -> StreamPairing:
    """Pair the inquiries and tool calls of ``entries`` (a stream, say), turn by turn.

    Positions in the result are indices into ``entries``; turn numbers match
    :meth:`ConversationStream.turns`. Every turn of the stream has a
    :class:`TurnPairing` of each kind, empty when it holds nothing to pair.
    """
    return pair_indexed(enumerate(entries))
