"""Reading and writing ``events.json`` entries.

Reading validates every entry of a kind this build knows, so a broken file is
refused at load with the entry's index, not later at some use. Every entry,
its timestamp and its payload are built by their own constructors, whose
validators say what is wrong; the entry is then given the object it was read
from, to be written back as read
(:func:`coordinator.stream._entries.with_loaded_form`). Event ids are
made usable and unique as RFD 097 (our D24) says: a missing, empty or
non-string id gets a fresh one, and where ids repeat the earliest keeps its id
and later ones get fresh ids (each logged as a warning); the ids that repeated
are handed to the stream, which holds a request link naming one unresolved.
``event_id`` is always the first key, and an answering event's ``request_id``
(RFD 098) the second.

The entry kinds are JP's today: the seven conversation events, and the global
``config_delta`` (an apply, ``op`` absent or ``"apply"``, or a ``reset``),
``compaction`` and ``event_overlay``; any other ``type`` is kept verbatim.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

import attrs
import orjson

from coordinator.stream import (
    FRESH_ID_ATTEMPTS,
    Compaction,
    ConfigDelta,
    ConversationStream,
    EventEntry,
    EventOverlay,
    GlobalEntry,
    OverlayPatch,
    StreamEntry,
    Timestamp,
    UnknownEntry,
    is_linked,
    new_event_id,
    repeated_ids,
    with_loaded_form,
)
from coordinator.wire._codec import (
    PAYLOAD_HOOKS,
    WireError,
    unstructure_event,
    with_record_metadata,
    without_record_metadata,
)
from coordinator.wire._storage_fields import decode_leaves, encode_leaves
from machines import Event, RecordError, json_type

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import datetime

__all__ = [
    "DecodedEntries",
    "EntryDecodeError",
    "IdRepairs",
    "decode_entries",
    "decode_stream",
    "encode_entries",
    "encode_stream",
]

_LOG = logging.getLogger("coordinator.stream")

#: Keys a flattened ``config_delta`` does not take into its delta: the envelope's,
#: and what JP writes beside a delta (``op``, ``unsets``).
_ENVELOPE = frozenset({"event_id", "request_id", "timestamp", "type", "metadata", "op", "unsets"})


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


#: Stands for an absent key in ``dict.get`` (``None`` is a value the wire can hold).
_ABSENT: Any = object()


def _timestamp(raw: dict[str, Any]) -> Timestamp:
    text = raw.get("timestamp", _ABSENT)
    if text is _ABSENT:
        raise _EntryError("entry has no 'timestamp'")
    try:
        return Timestamp(text)
    except ValueError as error:
        raise _EntryError(str(error)) from None


def _event_reader(read_payload: Callable[[Any, Any], Event], record: Any) -> _EntryReader:
    """The reader of entries of one event kind, whose payloads the hook ``read_payload`` reads."""

    def read(raw: dict[str, Any], event_id: str) -> EventEntry:
        payload = read_payload(raw, record)
        metadata = raw.get("metadata", {})
        if type(metadata) is not dict:
            raise _EntryError("'metadata' must be an object")
        entry = EventEntry(
            event_id=event_id,
            timestamp=_timestamp(raw),
            payload=payload,
            # Its string leaves are stored base64; what the record read from it (a
            # form's schema) is the record's.
            metadata=without_record_metadata(payload, decode_leaves(metadata)),
            request_id=_request_id(raw, payload),
        )
        return with_loaded_form(entry, _stored(raw, event_id))

    return read


def _request_id(raw: dict[str, Any], payload: Event) -> str | None:
    """The request link of an answering event as written (RFD 098); ``None``: none.

    A link is read as written, whatever it names: whether it binds is the
    stream's question (:mod:`coordinator.stream._links`), never repaired
    here. ``null`` spells no link, as ``Option`` does in JP's serde. On a kind
    that never links the key is not read (it is kept, as any key is).
    """
    link = raw.get("request_id")
    if link is None or not is_linked(payload):
        return None
    if type(link) is not str or not link:
        raise _EntryError(
            "'request_id' must be a non-empty string (the event_id of a chat_request), "
            f"not {'an empty string' if link == '' else json_type(link)}"
        )
    return link


def _config_delta(raw: dict[str, Any], event_id: str) -> ConfigDelta:
    op = raw.get("op", "apply")
    if op == "reset":
        # JP writes a reset with no delta, and reads none from it: a delta
        # left in one by hand is kept in the file, and means nothing.
        return ConfigDelta(event_id=event_id, timestamp=_timestamp(raw), reset=True)
    if op != "apply":
        shown = repr(op) if type(op) is str else json_type(op)
        raise _EntryError(f"unknown config_delta op {shown} (JP writes 'reset', or none)")
    unsets = raw.get("unsets", [])
    if type(unsets) is not list or any(type(path) is not str for path in unsets):
        raise _EntryError("'unsets' must be an array of strings (dotted paths)")
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
        event_id=event_id,
        timestamp=_timestamp(raw),
        delta=delta,
        flattened=flattened,
        unsets=tuple(unsets),
    )


def _event_overlay(raw: dict[str, Any], event_id: str) -> EventOverlay:
    patches = raw.get("patches", _ABSENT)
    if patches is _ABSENT:
        raise _EntryError("event_overlay has no 'patches'")
    if type(patches) is not list:
        raise _EntryError(f"'patches' must be an array, not {json_type(patches)}")
    return EventOverlay(
        event_id=event_id,
        timestamp=_timestamp(raw),
        patches=tuple(_overlay_patch(patch, at) for at, patch in enumerate(patches)),
    )


def _overlay_patch(value: object, at: int) -> OverlayPatch:
    """Patch ``at`` of an overlay: JP's one matcher and one action, or a refusal naming it.

    JP reads these tags exactly and refuses a load with one it does not know
    (a newer kind of patch comes under a new entry ``type``, kept verbatim):
    so do we, rather than show a provider what JP would not.
    """
    where = f"patches[{at}]"
    patch = _object(value, where)
    matcher = _object(patch.get("matcher"), f"{where}.matcher")
    action = _object(patch.get("action"), f"{where}.action")
    if matcher.get("matcher") != "metadata_value":
        raise _EntryError(f"{where}.matcher: unknown matcher {_tag(matcher.get('matcher'))}")
    if action.get("action") != "remove_metadata":
        raise _EntryError(f"{where}.action: unknown action {_tag(action.get('action'))}")
    try:
        return OverlayPatch(
            key=_field(matcher, "key", f"{where}.matcher"),
            value=_field(matcher, "value", f"{where}.matcher"),
            remove=_field(action, "key", f"{where}.action"),
        )
    except RecordError as error:
        raise _EntryError(f"{where}: {error}") from None


def _field(data: dict[str, Any], key: str, where: str) -> Any:
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        raise _EntryError(f"'{where}.{key}' is missing")
    return value


def _object(value: object, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _EntryError(f"{where} must be an object, not {json_type(value)}")
    return value


def _tag(value: object) -> str:
    return repr(value) if type(value) is str else json_type(value)


def _compaction(raw: dict[str, Any], event_id: str) -> Compaction:
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


def _global_reader(
    read: Callable[[dict[str, Any], str], ConfigDelta | Compaction | EventOverlay],
) -> _EntryReader:
    """The reader of a global entry kind, remembering the loaded form as events do."""

    def read_entry(raw: dict[str, Any], event_id: str) -> GlobalEntry:
        return with_loaded_form(read(raw, event_id), _stored(raw, event_id))

    return read_entry


def _stored(raw: dict[str, Any], event_id: str) -> dict[str, Any]:
    """The loaded form ``raw`` as its entry will be written: its id first."""
    for first, value in raw.items():  # only the first key: is it the id, unchanged?
        if first == "event_id" and value == event_id:
            return raw
        break
    # The id goes first; an unusable or repeated one it replaces keeps no place of its own.
    stored = {"event_id": event_id, **raw}
    stored["event_id"] = event_id
    return stored


_EntryReader: TypeAlias = Callable[[dict[str, Any], str], StreamEntry]

#: The reader of each entry kind this build knows, by its wire ``type``.
_READERS: Final[Mapping[str, _EntryReader]] = {
    **{kind: _event_reader(*hook) for kind, hook in PAYLOAD_HOOKS.items()},
    "config_delta": _global_reader(_config_delta),
    "compaction": _global_reader(_compaction),
    "event_overlay": _global_reader(_event_overlay),
}


def _ids_in_file(raw_entries: Sequence[Any]) -> tuple[set[str], set[str]]:
    """Every usable id in the file, and those of entries of unknown kinds (one pass)."""
    reserved: set[str] = set()
    # Ids of unknown entries cannot be changed (they are kept verbatim), so a
    # known entry that shares one gets a fresh id even when it comes first.
    verbatim: set[str] = set()
    for raw in raw_entries:
        if type(raw) is dict:
            event_id = raw.get("event_id")
            if type(event_id) is str and event_id:
                reserved.add(event_id)
                if type(kind := raw.get("type")) is str and kind not in _READERS:
                    verbatim.add(event_id)
    return reserved, verbatim


@attrs.frozen
class DecodedEntries:
    """A decoded stream: its entries, what loading did to ids, and the ids that repeated."""

    entries: list[StreamEntry]
    repairs: IdRepairs
    duplicated: frozenset[str] = frozenset()


def decode_entries(
    raw_entries: Sequence[Any],
    *,
    new_id: Callable[[], str],
    origin: str = "<stream>",
) -> DecodedEntries:
    """Decode the parsed ``events.json`` array into entries.

    Raises :class:`EntryDecodeError` naming the first entry that cannot be
    read. The warnings about repaired ids are logged once every entry has
    been read, in stream order: a file that cannot be read logs none.
    """
    decoded, warnings = _decode_entries(raw_entries, new_id=new_id)
    for message, *args in warnings:
        _LOG.warning(message, origin, *args)
    return decoded


def _decode_entries(
    raw_entries: Sequence[Any], *, new_id: Callable[[], str]
) -> tuple[DecodedEntries, list[tuple[Any, ...]]]:
    """Decode every entry, and say what was done to ids (the warnings to log).

    The earliest holder of an id keeps it, unless an unknown entry (kept
    verbatim) holds it too, wherever it is; a fresh id is used nowhere in
    the file.
    """
    reserved, verbatim = _ids_in_file(raw_entries)
    seen: set[str] = set()
    # Ids more than one entry carried: which one a reference meant is unknown.
    duplicated: set[str] = set()
    entries: list[StreamEntry] = []
    warnings: list[tuple[Any, ...]] = []
    assigned = regenerated = 0
    for index, raw in enumerate(raw_entries):
        kind = _kind(index, raw)
        event_id = raw.get("event_id")
        if type(event_id) is not str or not event_id:
            event_id = None
        reader = _READERS.get(kind)
        if reader is None:
            # Kept verbatim, so its id cannot be changed even when it repeats.
            if event_id is not None:
                if event_id in seen:
                    duplicated.add(event_id)
                    warnings.append(
                        (
                            "%s: entry %d (%s) repeats event id %r; kept as is (unknown kind)",
                            index,
                            kind,
                            event_id,
                        )
                    )
                seen.add(event_id)
            entries.append(UnknownEntry(raw))
            continue
        if event_id is None:
            event_id = _fresh(new_id, reserved, seen)
            assigned += 1
        elif event_id in seen or event_id in verbatim:
            duplicated.add(event_id)
            repeated, event_id = event_id, _fresh(new_id, reserved, seen)
            warnings.append(
                ("%s: entry %d repeats event id %r; regenerated as %r", index, repeated, event_id)
            )
            regenerated += 1
        seen.add(event_id)
        try:
            entries.append(reader(raw, event_id))
        except (_EntryError, WireError, RecordError) as error:
            raise EntryDecodeError(index, f"{kind}: {error}") from None
    repairs = IdRepairs(assigned=assigned, regenerated=regenerated)
    return DecodedEntries(entries, repairs, frozenset(duplicated)), warnings


def _kind(index: int, raw: object) -> str:
    """The ``type`` of entry ``index``, which must be an object with a string one."""
    if type(raw) is not dict:
        raise EntryDecodeError(index, f"entry is not an object but {json_type(raw)}")
    kind = raw.get("type")
    if type(kind) is not str:
        raise EntryDecodeError(index, "entry has no string 'type'")
    return kind


def _fresh(new_id: Callable[[], str], reserved: set[str], seen: set[str]) -> str:
    for _ in range(FRESH_ID_ATTEMPTS):
        candidate = new_id()
        if type(candidate) is not str or not candidate:
            raise TypeError(f"new_id must return a non-empty string, not {candidate!r}")
        if candidate not in reserved and candidate not in seen:
            reserved.add(candidate)
            return candidate
    raise ValueError(repeated_ids(candidate))


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
        return _encode_config_delta(entry)
    if isinstance(entry, EventOverlay):
        return {
            "event_id": entry.event_id,
            "type": "event_overlay",
            "timestamp": entry.timestamp.text,
            "patches": [_encode_patch(patch) for patch in entry.patches],
        }
    out: dict[str, Any] = {"event_id": entry.event_id, "type": "compaction"}
    out |= {"timestamp": entry.timestamp.text}
    out |= {"from_turn": entry.from_turn, "to_turn": entry.to_turn}
    optional = {"summary": entry.summary, "reasoning": entry.reasoning}
    optional["tool_calls"] = entry.tool_calls
    return out | {key: value for key, value in optional.items() if value is not None}


def _encode_config_delta(entry: ConfigDelta) -> dict[str, Any]:
    """As JP writes one: a reset as ``type``, ``op``, ``timestamp``; an apply with its delta."""
    head: dict[str, Any] = {"event_id": entry.event_id, "type": "config_delta"}
    if entry.reset:
        return head | {"op": "reset", "timestamp": entry.timestamp.text}
    head["timestamp"] = entry.timestamp.text
    out = head | (dict(entry.delta) if entry.flattened else {"delta": entry.delta})
    if entry.unsets:
        out["unsets"] = list(entry.unsets)
    return out


def _encode_patch(patch: OverlayPatch) -> dict[str, Any]:
    return {
        "matcher": {"matcher": "metadata_value", "key": patch.key, "value": patch.value},
        "action": {"action": "remove_metadata", "key": patch.remove},
    }


def _encode_event(entry: EventEntry) -> dict[str, Any]:
    payload = unstructure_event(entry.payload)  # its storage fields encoded
    out: dict[str, Any] = {"event_id": entry.event_id}
    if entry.request_id is not None:
        # Beside event_id, as RFD 098 puts it on the entry's wrapper.
        out["request_id"] = entry.request_id
    out["timestamp"] = entry.timestamp.text
    out["type"] = entry.kind
    out.update(payload)
    metadata = with_record_metadata(entry.payload, entry.metadata)  # a form's schema, say
    if metadata:
        out["metadata"] = encode_leaves(metadata)
    return out


def encode_entries(entries: Iterable[StreamEntry]) -> list[dict[str, Any]]:
    """The on-disk array for ``entries``."""
    return [encode_entry(entry) for entry in entries]


def decode_stream(
    raw_entries: Sequence[Any],
    *,
    origin: str = "<stream>",
    clock: Callable[[], datetime] | None = None,
    new_id: Callable[[], str] | None = None,
) -> tuple[ConversationStream, IdRepairs]:
    """Decode a parsed ``events.json`` array into a stream; report the ids it had to repair.

    Raises :class:`EntryDecodeError` for an entry it cannot read. The stream
    keeps ``raw_entries``' values, to write them back as they were read:
    change none of them afterwards.
    """
    new_id = new_id or new_event_id
    decoded = decode_entries(raw_entries, new_id=new_id, origin=origin)
    stream = ConversationStream(
        decoded.entries, clock=clock, new_id=new_id, duplicated_ids=decoded.duplicated
    )
    return stream, decoded.repairs


def encode_stream(stream: ConversationStream) -> list[dict[str, Any]]:
    """The on-disk array of ``stream``: a copy, which the caller may change freely.

    (The store writes the entries without copying them, through
    :func:`encode_entries`.)
    """
    wire = encode_entries(stream)
    try:
        return cast("list[dict[str, Any]]", orjson.loads(orjson.dumps(wire)))
    except orjson.JSONEncodeError:  # nested deeper than orjson writes
        return copy.deepcopy(wire)
