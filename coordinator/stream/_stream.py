"""The conversation stream: entries in order, grouped into turns.

A turn begins at a ``turn_start``. Older files have none, so conversation
events before the first ``turn_start`` form an implicit leading turn. Global
entries (``config_delta``, ``compaction``, ``event_overlay``, unknown kinds)
sit between events but belong to no turn; readers that work per turn skip
them.

The stream hands events to a model provider only through
:meth:`ConversationStream.provider_view`, which applies the
:func:`machines.is_provider_visible` allowlist, leaves out the events whose
request link binds nothing (RFD 098) and applies JP's event overlays.

What a batch of tool calls needs from history is found without reading it:
the stream keeps, as it appends, where the last turn starts and the event id
of that turn's latest ``chat_request`` (what an answering event appended now
links to), and a load (the constructor, :meth:`ConversationStream.replace`)
sets both in its one pass over the entries. So :meth:`current_turn` and
:meth:`append` cost the same at turn 10,000 as at turn 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, overload

import attrs

from coordinator.stream._entries import (
    ConfigDelta,
    EventEntry,
    EventOverlay,
    StreamEntry,
    UnknownEntry,
    is_linked,
)
from coordinator.stream._event_ids import FRESH_ID_ATTEMPTS, new_event_id, repeated_ids
from coordinator.stream._links import (
    Exclusion,
    RequestLinks,
    provider_exclusions,
    request_links,
)
from coordinator.stream._timestamps import Timestamp
from machines import ChatRequest, Event, TurnStart, is_provider_visible

if TYPE_CHECKING:
    from machines import JsonValue

__all__ = ["ConversationStream", "ProviderView", "Turn"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _entry_id(entry: StreamEntry) -> str | None:
    return entry.event_id


@attrs.frozen
class Turn:
    """A turn: ``entries`` is ``stream[start:stop]``, global entries included.

    ``marked`` is false for the implicit leading turn of a file written before
    turns were marked.
    """

    index: int
    start: int
    stop: int
    marked: bool
    entries: tuple[StreamEntry, ...] = attrs.field(repr=False)

    @property
    def events(self) -> Iterator[EventEntry]:
        """The turn's conversation events, in order (global entries skipped)."""
        return (entry for entry in self.entries if isinstance(entry, EventEntry))


@attrs.frozen
class ProviderView:
    """Everything a model provider may be given: system parts and visible events.

    ``excluded`` says which events were left out because a request link
    binds nothing (RFD 098), and why: data for the caller to show before it
    sends the view, never text shown here.
    """

    system_parts: tuple[str, ...]
    events: tuple[EventEntry, ...]
    excluded: tuple[Exclusion, ...] = ()


class ConversationStream(Sequence[StreamEntry]):
    """The ordered entries of one conversation.

    ``clock`` and ``new_id`` are injected so tests can fix time and ids; by
    default time is UTC now and ids come from the OS RNG. ``revision`` grows
    with every change, so a store can tell an unchanged stream without
    serializing it; ``replaced_at`` is the revision of the last change that
    was not an append (:meth:`replace`), so a store can tell a stream that
    only grew at its end since it last saved it, and append just that.

    Entries are values, and so are the dicts and lists inside them: the
    stream keeps what it is given as it is (a payload's ``arguments``, a
    loaded entry's text as read, to write it back unchanged), and nothing
    changed inside an entry in place is seen by the stream, its revision or
    a save. To change an entry, put a new one in its place (:meth:`replace`).
    """

    def __init__(
        self,
        entries: Iterable[StreamEntry] = (),
        *,
        clock: Callable[[], datetime] | None = None,
        new_id: Callable[[], str] | None = None,
        duplicated_ids: Iterable[str] = (),
    ) -> None:
        """Hold ``entries`` (their event ids must be unique).

        ``duplicated_ids`` are the ids more than one entry carried in the file
        the entries were read from (the codec gives them): a request link
        naming one is ambiguous, and so unresolved (RFD 097, RFD 098).
        """
        self._clock = clock or _utc_now
        self._new_id = new_id or new_event_id
        self._entries: list[StreamEntry] = []
        # Every id the stream holds or has held: one an entry took away with
        # it is never given again, so a link to that entry stays unresolved
        # rather than binding to a later one (as JP's EventIds).
        self._ids: set[str] = set()
        self._duplicated = frozenset(duplicated_ids)
        # Where turns start, and the event id of the last turn's latest
        # chat_request: kept as entries are appended, set by a load.
        self._markers: list[int] = []
        self._leading_events = False
        self._request: str | None = None
        self.revision = 0
        self.replaced_at = 0
        self._set(list(entries))

    # ------------------------------------------------------------ sequence

    def __len__(self) -> int:
        """The number of entries."""
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> StreamEntry: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[StreamEntry]: ...
    def __getitem__(self, index: int | slice) -> StreamEntry | Sequence[StreamEntry]:
        """Entry ``index`` (or a tuple of entries for a slice)."""
        if isinstance(index, slice):
            return tuple(self._entries[index])
        return self._entries[index]

    def __iter__(self) -> Iterator[StreamEntry]:
        """The entries in order."""
        return iter(self._entries)

    def __repr__(self) -> str:
        """Size, not contents."""
        return f"ConversationStream({len(self._entries)} entries)"

    # ------------------------------------------------------------- writing

    def now(self) -> Timestamp:
        """The stream clock's current time, in JP's storage form."""
        return Timestamp.from_datetime(self._clock())

    def fresh_id(self) -> str:
        """An event id used by no entry of this stream (and now reserved).

        Raises ``ValueError`` when ``new_id`` keeps giving ids the stream
        holds (a constant, say), rather than asking it for ever.
        """
        for _ in range(FRESH_ID_ATTEMPTS):
            candidate = self._new_id()
            if candidate not in self._ids:
                self._ids.add(candidate)
                return candidate
        raise ValueError(repeated_ids(candidate))

    def make_entry(
        self,
        payload: Event,
        *,
        timestamp: Timestamp | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        request_id: str | None = None,
    ) -> EventEntry:
        """Build an entry with a fresh id, without adding it (see :meth:`replace`).

        ``request_id`` is the request link it carries (RFD 098), for an entry
        put in place of others: :meth:`append` stamps its own.
        """
        return EventEntry(
            event_id=self.fresh_id(),
            timestamp=timestamp or self.now(),
            payload=payload,
            metadata=dict(metadata) if metadata else {},
            request_id=request_id,
        )

    def append(
        self,
        payload: Event,
        *,
        timestamp: Timestamp | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> EventEntry:
        """Append a conversation event stamped now, with a fresh id.

        An event that answers a chat request is linked to the current turn's
        latest ``chat_request`` (:attr:`active_request_id`; none before the
        turn's first: RFD 098).
        """
        request_id = self._request if is_linked(payload) else None
        entry = self.make_entry(
            payload, timestamp=timestamp, metadata=metadata, request_id=request_id
        )
        self._entries.append(entry)
        self._note(len(self._entries) - 1, entry)
        self.revision += 1
        return entry

    def append_config_delta(self, delta: Mapping[str, JsonValue]) -> ConfigDelta:
        """Append a configuration change (a global entry)."""
        entry = ConfigDelta(event_id=self.fresh_id(), timestamp=self.now(), delta=dict(delta))
        self._entries.append(entry)
        self.revision += 1
        return entry

    def replace(self, entries: Iterable[StreamEntry]) -> None:
        """Replace every entry at once (event ids must stay unique).

        The ids of the entries that go are never given again (see
        :meth:`fresh_id`).
        """
        held = self._ids
        self._set(list(entries))
        self._ids |= held
        self.revision += 1
        self.replaced_at = self.revision

    def _set(self, entries: list[StreamEntry]) -> None:
        ids: set[str] = set()
        # Entries of kinds this version does not know are kept verbatim, so an
        # id they repeat among themselves is the writer's and must survive;
        # an id of ours must be unique among all (a load would give it a new
        # one otherwise, whichever of the two came first).
        unknown: set[str] = set()
        for index, entry in enumerate(entries):
            if not isinstance(entry, StreamEntry):
                raise TypeError(
                    f"entry {index} is a {type(entry).__name__}, not a stream entry"
                    " (an EventEntry, a ConfigDelta, a Compaction or an UnknownEntry)"
                )
            event_id = _entry_id(entry)
            if event_id is None:
                continue
            if isinstance(entry, UnknownEntry):
                if event_id in ids and event_id not in unknown:
                    raise ValueError(f"entry {index} repeats event id {event_id!r}")
                unknown.add(event_id)
            elif event_id in ids:
                raise ValueError(f"entry {index} repeats event id {event_id!r}")
            ids.add(event_id)
        self._entries = entries
        self._ids = ids
        self._index_turns()

    def _index_turns(self) -> None:
        self._markers = []
        self._leading_events = False
        self._request = None
        for index, entry in enumerate(self._entries):
            self._note(index, entry)

    def _note(self, index: int, entry: StreamEntry) -> None:
        """Keep the turn markers and the active request as they are with entry ``index`` added."""
        if not isinstance(entry, EventEntry):
            return
        payload = entry.payload
        if isinstance(payload, TurnStart):
            self._markers.append(index)
            self._request = None
            return
        if not self._markers:
            self._leading_events = True
        if isinstance(payload, ChatRequest):
            self._request = entry.event_id

    def _bounds(self) -> list[tuple[int, bool]]:
        bounds = [(start, True) for start in self._markers]
        if self._leading_events:
            bounds.insert(0, (0, False))
        return bounds

    # ------------------------------------------------------------- reading

    def turns(self) -> list[Turn]:
        """The turns, in order; global entries stay inside the turn they sit in."""
        bounds = self._bounds()
        return [self._turn(number, bounds) for number in range(len(bounds))]

    @property
    def turn_count(self) -> int:
        """How many turns :meth:`turns` gives, found without listing them."""
        return len(self._markers) + self._leading_events

    def current_turn(self) -> Turn | None:
        """The last turn, where new events go; ``None`` before the first.

        It costs the turn's length, not the stream's: its start is kept.
        """
        if self._markers:
            start, marked = self._markers[-1], True
        elif self._leading_events:
            start, marked = 0, False
        else:
            return None
        stop = len(self._entries)
        return Turn(self.turn_count - 1, start, stop, marked, tuple(self._entries[start:stop]))

    def _turn(self, number: int, bounds: list[tuple[int, bool]]) -> Turn:
        start, marked = bounds[number]
        stop = bounds[number + 1][0] if number + 1 < len(bounds) else len(self._entries)
        return Turn(number, start, stop, marked, tuple(self._entries[start:stop]))

    @property
    def active_request_id(self) -> str | None:
        """The event id an answering event appended now links to (RFD 098).

        The current turn's latest ``chat_request``; ``None`` before the
        turn's first (a ``turn_start`` clears it) and before any turn.
        """
        return self._request

    @property
    def duplicated_ids(self) -> frozenset[str]:
        """The ids more than one entry carried in the file this stream was read from."""
        return self._duplicated

    def request_links(self) -> RequestLinks:
        """Which chat request each answering event answers, read as written (RFD 098)."""
        return request_links(self._entries, self._duplicated)

    def provider_view(self, system_parts: Iterable[str] = ()) -> ProviderView:
        """What a provider may see: ``system_parts`` and the visible events.

        This is the only way events leave the engine for a model provider.
        As JP projects a stream: an event whose request link binds nothing
        is left out, with the other half of its tool call (``excluded`` says
        which and why: RFD 098), and every event overlay's patches apply, in
        stream order, to the metadata of the events shown (the entries
        themselves stay as recorded).
        """
        excluded = provider_exclusions(self._entries, self.request_links())
        left_out = {exclusion.index for exclusion in excluded}
        patches = [
            patch
            for entry in self._entries
            if isinstance(entry, EventOverlay)
            for patch in entry.patches
        ]
        events = []
        for index, entry in enumerate(self._entries):
            if not (isinstance(entry, EventEntry) and is_provider_visible(entry.payload)):
                continue
            if index in left_out:
                continue
            if patches and entry.metadata:
                metadata = dict(entry.metadata)
                changed = [patch.apply(metadata) for patch in patches]
                if any(changed):
                    entry = attrs.evolve(entry, metadata=metadata)  # noqa: PLW2901 - the shown one
            events.append(entry)
        return ProviderView(tuple(system_parts), tuple(events), excluded)

    def unknown_entries(self) -> list[UnknownEntry]:
        """Entries of kinds this build does not know (kept verbatim)."""
        return [entry for entry in self._entries if isinstance(entry, UnknownEntry)]
