"""Reading and writing ``events.json`` entries.

Reading validates every entry of a kind this build knows, so a broken file is
refused at load with the entry's index, not later at some use. Event ids are
made usable and unique as RFD D24 says: a missing, empty or non-string id gets
a fresh one, and where ids repeat the earliest keeps its id and later ones get
fresh ids (each logged as a warning). ``event_id`` is always the first key.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs

from coordinator._codec import EVENT_KINDS, WireError, structure_event, unstructure_event
from coordinator._entries import Compaction, ConfigDelta, EventEntry, StreamEntry, UnknownEntry
from coordinator._gc import collector_paused
from coordinator._storage_fields import decode_field, decode_leaves, encode_field, encode_leaves
from coordinator._timestamps import Timestamp
from machines import RecordError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = ["EntryDecodeError", "IdRepairs", "decode_entries", "encode_entries"]

_LOG = logging.getLogger("coordinator.stream")

#: Keys of the envelope every entry has, besides its payload.
_ENVELOPE = frozenset({"event_id", "timestamp", "type", "metadata"})


@attrs.frozen
class IdRepairs:
    """What loading did to event ids: how many were missing, how many repeated."""

    assigned: int = 0
    regenerated: int = 0

    @property
    def total(self) -> int:
        """All ids that were given a fresh value."""
        return self.assigned + self.regenerated


class _EntryError(ValueError):
    """A problem with one entry; the caller adds the file and the index."""


def _timestamp(raw: dict[str, Any]) -> Timestamp:
    if "timestamp" not in raw:
        raise _EntryError("entry has no 'timestamp'")
    try:
        return Timestamp(raw["timestamp"])
    except ValueError as error:
        raise _EntryError(str(error)) from None


def _decode_event(kind: str, raw: dict[str, Any], event_id: str) -> EventEntry:
    data = raw
    if kind == "tool_call_request":
        arguments = raw.get("arguments")
        if type(arguments) is dict:
            data = {**raw, "arguments": decode_leaves(arguments)}
    elif kind == "tool_call_response":
        content = raw.get("content")
        if type(content) is str:
            data = {**raw, "content": decode_field(content)}
    payload = structure_event(kind, data)
    if payload is None:  # pragma: no cover - the caller dispatches on known kinds
        raise _EntryError(f"{kind!r} is not a conversation event")
    metadata = raw.get("metadata", {})
    if type(metadata) is not dict:
        raise _EntryError("'metadata' must be an object")
    return EventEntry(
        event_id=event_id,
        timestamp=_timestamp(raw),
        payload=payload,
        metadata=decode_leaves(metadata) if metadata else {},
    )


def _decode_config_delta(raw: dict[str, Any], event_id: str) -> ConfigDelta:
    if "delta" in raw:
        delta = raw["delta"]
        if type(delta) is not dict:
            raise _EntryError("'delta' must be an object")
        flattened = False
    else:
        # The oldest files flatten the configuration into the entry itself.
        delta = {key: value for key, value in raw.items() if key not in _ENVELOPE}
        flattened = True
    return ConfigDelta(
        event_id=event_id, timestamp=_timestamp(raw), delta=delta, flattened=flattened
    )


def _decode_compaction(raw: dict[str, Any], event_id: str) -> Compaction:
    for key in ("from_turn", "to_turn"):
        if key not in raw:
            raise _EntryError(f"compaction has no {key!r}")
    return Compaction(
        event_id=event_id,
        timestamp=_timestamp(raw),
        from_turn=raw["from_turn"],
        to_turn=raw["to_turn"],
        summary=raw.get("summary"),
        reasoning=raw.get("reasoning"),
        tool_calls=raw.get("tool_calls"),
    )


def _decode_one(raw: dict[str, Any], kind: str, event_id: str) -> StreamEntry:
    if kind in _EVENT_TAGS:
        entry: StreamEntry = _decode_event(kind, raw, event_id)
    elif kind == "config_delta":
        entry = _decode_config_delta(raw, event_id)
    else:
        entry = _decode_compaction(raw, event_id)
    if next(iter(raw)) == "event_id" and raw["event_id"] == event_id:
        stored = raw
    else:
        # The id goes first; an unusable or repeated one it replaces keeps no place of its own.
        stored = {"event_id": event_id, **raw}
        stored["event_id"] = event_id
    object.__setattr__(entry, "_stored", stored)
    return entry


_EVENT_TAGS = frozenset(EVENT_KINDS.values())
_KNOWN = _EVENT_TAGS | {"config_delta", "compaction"}


def _usable_id(value: object) -> str | None:
    return value if type(value) is str and value else None


def _ids_in_file(raw_entries: Sequence[Any]) -> tuple[set[str], set[str]]:
    """Every usable id in the file, and those of entries of unknown kinds (one pass)."""
    reserved: set[str] = set()
    # Ids of unknown entries cannot be changed (they are kept verbatim), so a
    # known entry that shares one gets a fresh id even when it comes first.
    verbatim: set[str] = set()
    for raw in raw_entries:
        if type(raw) is dict:
            event_id = raw.get("event_id")
            if type(event_id) is str and event_id:  # a usable id (see _usable_id)
                reserved.add(event_id)
                if type(kind := raw.get("type")) is str and kind not in _KNOWN:
                    verbatim.add(event_id)
    return reserved, verbatim


def decode_entries(
    raw_entries: Sequence[Any],
    *,
    new_id: Callable[[], str],
    origin: str = "<stream>",
) -> tuple[list[StreamEntry], IdRepairs]:
    """Decode the parsed ``events.json`` array into entries.

    Raises :class:`EntryDecodeError` naming the first entry that cannot be read.
    """
    with collector_paused():  # a bulk pass that makes no cycles (see coordinator._gc)
        return _decode_entries(raw_entries, new_id=new_id, origin=origin)


def _decode_entries(
    raw_entries: Sequence[Any], *, new_id: Callable[[], str], origin: str
) -> tuple[list[StreamEntry], IdRepairs]:
    # Every usable id in the file, so that a fresh id never takes one that an
    # entry further down already carries.
    reserved, verbatim = _ids_in_file(raw_entries)
    seen: set[str] = set()
    entries: list[StreamEntry] = []
    assigned = regenerated = 0
    for index, raw in enumerate(raw_entries):
        if type(raw) is not dict:
            raise EntryDecodeError(index, f"entry is not an object but {_kind_name(raw)}")
        kind = raw.get("type")
        if type(kind) is not str:
            raise EntryDecodeError(index, "entry has no string 'type'")
        event_id = _usable_id(raw.get("event_id"))
        if kind not in _KNOWN:
            # Kept verbatim, so its id cannot be changed even when it repeats.
            if event_id is not None:
                if event_id in seen:
                    _LOG.warning(
                        "%s: entry %d (%s) repeats event id %r; kept as is (unknown kind)",
                        origin,
                        index,
                        kind,
                        event_id,
                    )
                seen.add(event_id)
            entries.append(UnknownEntry(raw))
            continue
        if event_id is None:
            event_id = _fresh(new_id, reserved, seen)
            assigned += 1
        elif event_id in seen or event_id in verbatim:
            fresh = _fresh(new_id, reserved, seen)
            _LOG.warning(
                "%s: entry %d repeats event id %r; regenerated as %r",
                origin,
                index,
                event_id,
                fresh,
            )
            event_id = fresh
            regenerated += 1
        seen.add(event_id)
        try:
            entries.append(_decode_one(raw, kind, event_id))
        except (_EntryError, WireError, RecordError) as error:
            raise EntryDecodeError(index, f"{kind}: {error}") from None
    return entries, IdRepairs(assigned=assigned, regenerated=regenerated)


def _fresh(new_id: Callable[[], str], reserved: set[str], seen: set[str]) -> str:
    while True:
        candidate = new_id()
        if candidate not in reserved and candidate not in seen:
            reserved.add(candidate)
            return candidate


def _kind_name(value: object) -> str:
    names = {list: "an array", str: "a string", int: "a number", float: "a number"}
    names |= {bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class EntryDecodeError(ValueError):
    """Entry ``index`` of a stream cannot be read; ``problem`` says why."""

    def __init__(self, index: int, problem: str) -> None:
        """Remember where and what."""
        self.index = index
        self.problem = problem
        super().__init__(f"entry {index}: {problem}")


def encode_entry(entry: StreamEntry) -> dict[str, Any]:
    """The on-disk object for ``entry``."""
    if isinstance(entry, UnknownEntry):
        return dict(entry.raw)
    if entry._stored is not None:
        return entry._stored
    if isinstance(entry, EventEntry):
        return _encode_event(entry)
    if isinstance(entry, ConfigDelta):
        head = {"event_id": entry.event_id, "type": "config_delta"}
        head["timestamp"] = entry.timestamp.text
        return head | (dict(entry.delta) if entry.flattened else {"delta": entry.delta})
    out: dict[str, Any] = {"event_id": entry.event_id, "type": "compaction"}
    out |= {"timestamp": entry.timestamp.text}
    out |= {"from_turn": entry.from_turn, "to_turn": entry.to_turn}
    optional = {"summary": entry.summary, "reasoning": entry.reasoning}
    optional["tool_calls"] = entry.tool_calls
    return out | {key: value for key, value in optional.items() if value is not None}


def _encode_event(entry: EventEntry) -> dict[str, Any]:
    payload = unstructure_event(entry.payload)
    kind = entry.kind
    if kind == "tool_call_request":
        payload["arguments"] = encode_leaves(payload["arguments"])
    elif kind == "tool_call_response":
        payload["content"] = encode_field(payload["content"])
    out: dict[str, Any] = {
        "event_id": entry.event_id,
        "timestamp": entry.timestamp.text,
        "type": kind,
    }
    out.update(payload)
    if entry.metadata:
        out["metadata"] = encode_leaves(entry.metadata)
    return out


def encode_entries(entries: Iterable[StreamEntry]) -> list[dict[str, Any]]:
    """The on-disk array for ``entries``."""
    return [encode_entry(entry) for entry in entries]
