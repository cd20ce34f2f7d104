"""Stream entries: conversation events and the global entries around them.

An entry loaded from disk remembers the exact object it was read from (with its
``event_id`` moved to the front), and is written back as that object. This is
what makes a load and save of a real conversation change nothing but the added
``event_id`` lines, including fields and nesting written by a newer writer
that this build does not model. An entry built in this process, or changed
(entries are immutable, so a change is a new entry), is written from its
record instead, in the current form.

Besides its id, an entry that answers a chat request (a ``chat_response``, a
tool call's request or response, an inquiry's request or response: RFD
098's five families, :func:`is_linked`) may carry a *request link*,
``request_id``: the ``event_id`` of the ``chat_request`` it answers. The
stream stamps it as it appends (:meth:`ConversationStream.append`); no other
kind carries one.

The global entries are those of JP today: ``config_delta`` (an apply, with
its ``delta`` and ``unsets``, or a ``reset``), ``compaction`` (its policies
kept as JSON, as JP writes them) and ``event_overlay`` (patches to the
metadata a provider is sent, :class:`EventOverlay`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeAlias, TypeVar

import attrs

from coordinator.stream._timestamps import Timestamp
from machines import (
    Answered,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryRequest,
    JsonValue,
    RecordError,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    json_type,
)
from machines.validators import (
    json_object,
    json_value,
    non_empty_string,
    of_type,
)

__all__ = [
    "EVENT_KINDS",
    "Compaction",
    "ConfigDelta",
    "EventEntry",
    "EventOverlay",
    "GlobalEntry",
    "OverlayPatch",
    "StreamEntry",
    "UnknownEntry",
    "is_linked",
    "with_loaded_form",
]


#: Keys a flattened ``config_delta`` cannot hold: reading it back would take them
#: for the envelope, for an unflattened ``delta``, or for what JP writes beside
#: a delta (``op``, ``unsets``).
_FLAT_RESERVED = frozenset(
    {"event_id", "request_id", "timestamp", "type", "metadata", "delta", "op", "unsets"}
)


#: The wire ``type`` tag of each conversation event kind.
EVENT_KINDS: Final[Mapping[type[Any], str]] = {
    TurnStart: "turn_start",
    ChatRequest: "chat_request",
    ChatResponse: "chat_response",
    ToolCallRequest: "tool_call_request",
    ToolCallResponse: "tool_call_response",
    InquiryRequest: "inquiry_request",
    Answered: "inquiry_response",
    Cancelled: "inquiry_response",
    Redacted: "inquiry_response",
}


#: Every conversation event record type (the payload of an :class:`EventEntry`).
_PAYLOAD_TYPES = tuple(EVENT_KINDS)

#: The records that answer a chat request, and so carry a request link (RFD 098):
#: a chat response, a tool call's request and response, an inquiry's request
#: and response. A turn start and a chat request open a scope; they answer none.
_LINKED = (
    ChatResponse,
    ToolCallRequest,
    ToolCallResponse,
    InquiryRequest,
    Answered,
    Cancelled,
    Redacted,
)


def is_linked(payload: object) -> bool:
    """Whether an entry of ``payload``'s kind carries a request link (RFD 098's five families)."""
    return isinstance(payload, _LINKED)


def _request_link(instance: EventEntry, _attribute: attrs.Attribute[Any], value: object) -> None:
    # Run after every field is set (attrs validates once __init__ has set them all).
    if value is None:
        return
    if type(value) is not str or not value:
        raise RecordError(
            f"EventEntry.request_id must be a non-empty string or None, not {json_type(value)}"
            if type(value) is not str
            else "EventEntry.request_id must not be empty (None: no link)"
        )
    if not is_linked(instance.payload):
        raise RecordError(
            f"a {instance.kind} entry carries no request_id: only the events that answer a "
            "chat request do (RFD 098)"
        )


@attrs.frozen(kw_only=True)
class EventEntry:
    """A conversation event in the stream: what happened, when, under which id.

    ``request_id``, on an event that answers a chat request, is the
    ``event_id`` of the ``chat_request`` it answers (RFD 098); ``None``: it
    carries no link (a legacy entry, one appended before the turn's first
    request, or a kind that never links).
    """

    event_id: str = attrs.field(validator=non_empty_string)
    timestamp: Timestamp = attrs.field(validator=of_type(Timestamp))
    payload: Event = attrs.field(validator=of_type(*_PAYLOAD_TYPES))
    metadata: Mapping[str, JsonValue] = attrs.field(factory=dict, validator=json_object)
    request_id: str | None = attrs.field(default=None, validator=_request_link)
    # The loaded form, given only by the codec (see with_loaded_form).
    _stored: dict[str, Any] | None = attrs.field(init=False, default=None, eq=False, repr=False)

    @property
    def kind(self) -> str:
        """The wire ``type`` tag (a subclass of a record has its record's)."""
        kind = EVENT_KINDS.get(type(self.payload))
        if kind is not None:
            return kind
        # The validator admits a subclass of a record (by isinstance), pairing
        # treats it as its record and the converter writes its record's fields,
        # so it is written as its record: the nearest record in its MRO names it.
        return next(
            EVENT_KINDS[base] for base in type(self.payload).__mro__ if base in EVENT_KINDS
        )


def _unsets(instance: ConfigDelta, _attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not tuple or any(type(path) is not str for path in value):
        raise RecordError(
            f"ConfigDelta.unsets must be a tuple of strings (dotted paths), not {json_type(value)}"
        )
    if value and instance.reset:
        raise RecordError("a reset ConfigDelta clears everything: it has no unsets")


@attrs.frozen(kw_only=True)
class ConfigDelta:
    """A change to the conversation's configuration (global: belongs to no turn).

    As JP records it: an *apply* merges ``delta`` on what the deltas before
    it made, after clearing the fields ``unsets`` names (dotted paths); a
    *reset* (``reset``, written ``"op": "reset"``) discards everything before
    it, the base configuration included, and carries no delta. In the oldest
    files the first ``config_delta`` has its keys flattened into the entry,
    with no ``delta`` key; ``flattened`` records that it was read so.
    """

    event_id: str = attrs.field(validator=non_empty_string)
    timestamp: Timestamp = attrs.field(validator=of_type(Timestamp))
    delta: Mapping[str, JsonValue] = attrs.field(factory=dict, validator=json_object)
    flattened: bool = attrs.field(default=False, validator=of_type(bool))
    reset: bool = attrs.field(default=False, validator=of_type(bool))
    unsets: tuple[str, ...] = attrs.field(default=(), validator=_unsets)
    # The loaded form, given only by the codec (see with_loaded_form).
    _stored: dict[str, Any] | None = attrs.field(init=False, default=None, eq=False, repr=False)

    kind = "config_delta"

    def __attrs_post_init__(self) -> None:
        """A flattened delta shares the entry's object; a reset has nothing to merge."""
        if self.flattened and (clash := sorted(_FLAT_RESERVED.intersection(self.delta))):
            raise RecordError(
                f"a flattened ConfigDelta.delta cannot hold the envelope keys {clash}"
            )
        if self.reset and (self.delta or self.flattened):
            raise RecordError("a reset ConfigDelta carries no delta")


@attrs.frozen(kw_only=True)
class Compaction:
    """An overlay that compacts what turns ``from_turn`` to ``to_turn`` show a provider (global).

    ``summary``, ``reasoning`` and ``tool_calls`` are JP's policies, kept as
    the JSON JP writes (RFD 064): ``summary`` is ``{"summary": text,
    "source"?: ...}`` (a bare string, as early writers and our tests wrote
    it, reads too), ``reasoning`` and ``tool_calls`` a policy each. Nothing
    here applies them (the provider view shows the raw events), so nothing
    here interprets them beyond :attr:`summary_text`.
    """

    event_id: str = attrs.field(validator=non_empty_string)
    timestamp: Timestamp = attrs.field(validator=of_type(Timestamp))
    from_turn: int = attrs.field(validator=of_type(int))
    to_turn: int = attrs.field(validator=of_type(int))
    summary: JsonValue = attrs.field(default=None, validator=json_value)
    reasoning: JsonValue = attrs.field(default=None, validator=json_value)
    tool_calls: JsonValue = attrs.field(default=None, validator=json_value)
    # The loaded form, given only by the codec (see with_loaded_form).
    _stored: dict[str, Any] | None = attrs.field(init=False, default=None, eq=False, repr=False)

    kind = "compaction"

    @property
    def summary_text(self) -> str | None:
        """The summary's text: JP's ``summary.summary``, or a bare string; ``None``: none."""
        summary = self.summary
        if isinstance(summary, Mapping):
            summary = summary.get("summary")
        return summary if isinstance(summary, str) else None


def _patches(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not tuple or any(type(patch) is not OverlayPatch for patch in value):
        raise RecordError(
            f"EventOverlay.patches must be a tuple of OverlayPatch, not {json_type(value)}"
        )


@attrs.frozen(kw_only=True)
class OverlayPatch:
    """JP's one patch: drop metadata ``remove`` from events whose ``metadata[key]`` is ``value``.

    Its wire form is JP's ``{"matcher": {"matcher": "metadata_value", "key",
    "value"}, "action": {"action": "remove_metadata", "key"}}``. The match is
    on the metadata as read (base64 storage decoded), a string equal to
    ``value``; a patch that matches an event without ``remove`` changes
    nothing (JP's ``OverlayPatch::apply``).
    """

    key: str = attrs.field(validator=of_type(str))
    value: str = attrs.field(validator=of_type(str))
    remove: str = attrs.field(validator=of_type(str))

    def apply(self, metadata: dict[str, JsonValue]) -> bool:
        """Apply the patch to ``metadata`` in place; whether it changed anything."""
        current = metadata.get(self.key)
        if type(current) is not str or current != self.value:
            return False
        return metadata.pop(self.remove, _MISSING) is not _MISSING


_MISSING: Any = object()


@attrs.frozen(kw_only=True)
class EventOverlay:
    """Patches to what a provider is shown of events, kept beside them, not in them (global).

    JP records a repair a provider asks for (a stale reasoning signature, say)
    this way: the events stay as they were recorded, for inspection and
    export, and the patches apply, in stream order and wherever the overlay
    sits, when the stream is projected for a request
    (:meth:`ConversationStream.provider_view`).
    """

    event_id: str = attrs.field(validator=non_empty_string)
    timestamp: Timestamp = attrs.field(validator=of_type(Timestamp))
    patches: tuple[OverlayPatch, ...] = attrs.field(default=(), validator=_patches)
    # The loaded form, given only by the codec (see with_loaded_form).
    _stored: dict[str, Any] | None = attrs.field(init=False, default=None, eq=False, repr=False)

    kind = "event_overlay"


def _unknown_raw(_instance: Any, _attribute: attrs.Attribute[Any], value: object) -> None:
    # Messages name the problem, not the contents: they are not ours to show.
    if type(value) is not dict:
        raise RecordError(f"UnknownEntry.raw must be an object, not {json_type(value)}")
    kind = value.get("type")
    if type(kind) is not str:
        raise RecordError("UnknownEntry.raw must have a string 'type'")
    if kind in _KNOWN_KINDS:
        raise RecordError(f"UnknownEntry.raw is a {kind!r} entry, a kind this build knows")
    json_value(_instance, _attribute, value)


_KNOWN_KINDS = frozenset(EVENT_KINDS.values()) | {"config_delta", "compaction", "event_overlay"}


@attrs.frozen
class UnknownEntry:
    """An entry of a kind this build does not know: kept, never decoded.

    It is written back exactly as it was read. Its ``event_id``, if it has a
    usable one, is honoured when other entries' ids are made unique.
    """

    raw: Mapping[str, Any] = attrs.field(repr=False, validator=_unknown_raw)

    @property
    def kind(self) -> str:
        """The entry's ``type`` tag."""
        return str(self.raw["type"])

    @property
    def event_id(self) -> str | None:
        """The entry's id, when it carries a non-empty string one."""
        value = self.raw.get("event_id")
        return value if type(value) is str and value else None

    def __repr__(self) -> str:
        """Name the kind, not the contents (they are not ours to show)."""
        return f"UnknownEntry(kind={self.kind!r}, event_id={self.event_id!r})"


#: An entry of a kind the codec reads (an unknown one is kept whole instead).
_Loaded = TypeVar("_Loaded", bound=EventEntry | ConfigDelta | Compaction | EventOverlay)


def with_loaded_form(entry: _Loaded, stored: dict[str, Any]) -> _Loaded:
    """``entry``, which will be written back as ``stored``, the object it was read from.

    For the codec alone, which builds each entry it loads with the entry's
    constructor (every validator run) and then gives it the object it read
    (its ``event_id`` moved to the front), so that a save writes back what
    was read, keys of a newer writer included. The form is not part of the
    entry's value (equality, repr), and not a constructor argument: an entry
    made from this one (``attrs.evolve``, a new record) has none, and is
    written from its record. ``stored`` must lead with the entry's id and
    have its kind, and an entry is given one once: a value others may hold
    does not change.
    """
    if entry._stored is not None:  # noqa: SLF001 - this module's own field
        raise RecordError("an entry is given its loaded form once")
    if type(stored) is not dict:
        raise RecordError(f"a loaded form must be an object, not {json_type(stored)}")
    if next(iter(stored), None) != "event_id" or stored["event_id"] != entry.event_id:
        raise RecordError("a loaded form must lead with its entry's event_id")
    if stored.get("type") != entry.kind:
        raise RecordError(f"a loaded form must be a {entry.kind!r} entry")
    # Frozen: the one field the constructor does not take is set as attrs
    # sets a frozen instance's own (its __init__ does the same).
    object.__setattr__(entry, "_stored", stored)
    return entry


#: An entry that belongs to no turn.
GlobalEntry: TypeAlias = ConfigDelta | Compaction | EventOverlay | UnknownEntry

#: Anything the stream holds.
StreamEntry: TypeAlias = EventEntry | GlobalEntry
