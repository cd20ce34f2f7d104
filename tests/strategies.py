"""Hypothesis strategies for records, stream entries and whole streams.

Everything generated here is valid: it constructs, and it can be written to
disk and read back. Strings never hold lone surrogates (JSON files cannot carry
them); numbers stay within what ``orjson`` writes exactly (64-bit integers,
finite floats). Import these from other tests rather than writing new ones.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, cast

from hypothesis import strategies as st

from coordinator import ConversationStream, EventEntry
from coordinator.stream import (
    Compaction,
    ConfigDelta,
    EventOverlay,
    OverlayPatch,
    StreamEntry,
    Timestamp,
    UnknownEntry,
    is_linked,
)
from machines import (
    Answered,
    AnswerKind,
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquiryResponse,
    InquirySource,
    Question,
    Redacted,
    SelectOption,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    UnknownCancellationReason,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from machines import AnyCancellationReason, JsonValue

__all__ = [
    "ENVELOPE_KEYS",
    "KNOWN_ENTRY_KINDS",
    "answer_types",
    "answered",
    "cancellation_reasons",
    "cancelled",
    "chat_requests",
    "chat_responses",
    "compactions",
    "config_deltas",
    "conversation_streams",
    "event_entries",
    "event_ids",
    "event_overlays",
    "events",
    "inquiry_questions",
    "inquiry_requests",
    "inquiry_responses",
    "inquiry_sources",
    "json_objects",
    "json_values",
    "questions",
    "redacted",
    "select_options",
    "stream_entries",
    "texts",
    "timestamp_texts",
    "timestamps",
    "tool_call_requests",
    "tool_call_responses",
    "unknown_entries",
]

#: Every ``type`` tag this build decodes; anything else is an unknown entry.
KNOWN_ENTRY_KINDS = frozenset(
    {
        "turn_start",
        "chat_request",
        "chat_response",
        "tool_call_request",
        "tool_call_response",
        "inquiry_request",
        "inquiry_response",
        "config_delta",
        "compaction",
        "event_overlay",
    }
)

#: Keys of an entry's envelope, and what JP writes beside a delta; a flattened
#: ``config_delta`` cannot use them.
ENVELOPE_KEYS = frozenset(
    {"event_id", "request_id", "timestamp", "type", "metadata", "delta", "op", "unsets"}
)

_INT64 = 2**63


# ---------------------------------------------------------------- JSON values


def texts(*, min_size: int = 0, max_size: int | None = 12) -> st.SearchStrategy[str]:
    """Any text a JSON file can hold (no lone surrogates)."""
    return st.text(st.characters(exclude_categories=["Cs"]), min_size=min_size, max_size=max_size)


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-_INT64, max_value=_INT64 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(),
    )


def json_values(*, max_leaves: int = 8) -> st.SearchStrategy[JsonValue]:
    """Any JSON value, nested a little."""
    return cast(
        "st.SearchStrategy[JsonValue]",
        st.recursive(
            _scalars(),
            lambda children: st.one_of(
                st.lists(children, max_size=3),
                st.dictionaries(texts(max_size=6), children, max_size=3),
            ),
            max_leaves=max_leaves,
        ),
    )


def json_objects(
    *, keys: st.SearchStrategy[str] | None = None, max_size: int = 3
) -> st.SearchStrategy[dict[str, JsonValue]]:
    """A JSON object (string keys, JSON values)."""
    keys = texts(max_size=6) if keys is None else keys
    return st.dictionaries(keys, json_values(), max_size=max_size)


# ------------------------------------------------------------------ envelope


def event_ids() -> st.SearchStrategy[str]:
    """Any usable event id: a non-empty string (the generated form, or not)."""
    generated = st.text("0123456789abcdefghijklmnopqrstuvwxyz", min_size=7, max_size=7)
    return st.one_of(generated, texts(min_size=1, max_size=10))


def _digits(count: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=count, max_size=count)


# Strategies drawn from inside composites are built once, here: building them
# on every draw makes generation many times slower.
_DAYS = st.dates(min_value=date(1970, 1, 1), max_value=date(2100, 1, 1))
_TIMES = st.times()
_FRACTIONS = st.integers(min_value=1, max_value=9).flatmap(_digits)
_STYLES = st.sampled_from(["jp", "rfc3339-z", "rfc3339-offset", "rfc3339-whole"])
_SIGNS = st.sampled_from("+-")
_OFFSET_HOURS = st.integers(min_value=0, max_value=14)
_OFFSET_MINUTES = st.sampled_from([0, 30, 45])


@st.composite
def timestamp_texts(draw: st.DrawFn) -> str:
    """A timestamp as stored: JP's form (1-9 fraction digits) or RFC 3339."""
    base = f"{draw(_DAYS):%Y-%m-%d}"
    clock = f"{draw(_TIMES):%H:%M:%S}"
    fraction = draw(_FRACTIONS)
    style = draw(_STYLES)
    if style == "jp":
        return f"{base} {clock}.{fraction}"
    if style == "rfc3339-z":
        return f"{base}T{clock}.{fraction}Z"
    if style == "rfc3339-whole":
        return f"{base}T{clock}Z"
    sign, hours, minutes = draw(_SIGNS), draw(_OFFSET_HOURS), draw(_OFFSET_MINUTES)
    return f"{base}T{clock}.{fraction}{sign}{hours:02d}:{minutes:02d}"


def timestamps() -> st.SearchStrategy[Timestamp]:
    """A stored timestamp (see :func:`timestamp_texts`)."""
    return timestamp_texts().map(Timestamp)


# ------------------------------------------------------------------- records


def select_options() -> st.SearchStrategy[SelectOption]:
    """One option of a select question, with or without a description."""
    return st.builds(
        SelectOption, value=texts(max_size=8), description=st.none() | texts(max_size=8)
    )


def answer_types(*, min_options: int = 0) -> st.SearchStrategy[AnswerType]:
    """Any answer type; selects have at least ``min_options`` options."""
    return st.one_of(
        st.sampled_from([AnswerType.boolean(), AnswerType.text(), AnswerType.secret()]),
        st.lists(select_options(), min_size=min_options, max_size=4).map(AnswerType.select),
    )


def _default_for(answer_type: AnswerType) -> st.SearchStrategy[JsonValue]:
    if answer_type.kind is AnswerKind.BOOLEAN:
        return _cached.optional_booleans
    if answer_type.kind is AnswerKind.SELECT:
        return st.none() | st.sampled_from(answer_type.option_values)
    if answer_type.is_secret:
        return st.none()  # a secret question has none (it would be recorded)
    return _cached.optional_texts


@st.composite
def questions(draw: st.DrawFn) -> Question:
    """A tool-facing question whose default (if any) fits its answer type."""
    answer_type = draw(_cached.answerable_types)
    return Question(
        id=draw(_cached.names),
        text=draw(_cached.texts),
        answer_type=answer_type,
        context=draw(_cached.optional_texts),
        default=draw(_default_for(answer_type)),
    )


def inquiry_questions() -> st.SearchStrategy[InquiryQuestion]:
    """A recorded question: any default, optional question id and context."""
    return st.builds(
        InquiryQuestion,
        text=texts(),
        answer_type=answer_types(),
        default=json_values(),
        id=st.none() | texts(),
        context=st.none() | texts(),
    )


def inquiry_sources() -> st.SearchStrategy[InquirySource]:
    """Any of the four sources (tool and other carry a name)."""
    name = texts(min_size=1)
    return st.one_of(
        name.map(InquirySource.tool),
        st.just(InquirySource.assistant()),
        st.just(InquirySource.user()),
        name.map(InquirySource.other),
    )


def inquiry_requests() -> st.SearchStrategy[InquiryRequest]:
    """A recorded question."""
    return st.builds(
        InquiryRequest,
        id=texts(min_size=1),
        source=inquiry_sources(),
        question=inquiry_questions(),
    )


def _unknown_tags() -> st.SearchStrategy[str]:
    known = {reason.value for reason in CancellationReason}
    return texts(min_size=1).filter(lambda tag: tag not in known)


def cancellation_reasons() -> st.SearchStrategy[AnyCancellationReason]:
    """A reason this build knows, or one from a newer writer."""
    return st.one_of(
        st.sampled_from(list(CancellationReason)),
        _unknown_tags().map(UnknownCancellationReason),
    )


def answered() -> st.SearchStrategy[Answered]:
    """A recorded answer (any JSON value)."""
    return st.builds(Answered, id=texts(min_size=1), answer=json_values())


def cancelled() -> st.SearchStrategy[Cancelled]:
    """A question closed without an answer."""
    return st.builds(Cancelled, id=texts(min_size=1), reason=cancellation_reasons())


def redacted() -> st.SearchStrategy[Redacted]:
    """A question whose answer is deliberately not recorded."""
    return st.builds(Redacted, id=texts(min_size=1))


def inquiry_responses() -> st.SearchStrategy[InquiryResponse]:
    """Any of the three responses."""
    return st.one_of(answered(), cancelled(), redacted())


def chat_requests() -> st.SearchStrategy[ChatRequest]:
    """A user message, maybe with a schema and an author."""
    return st.builds(
        ChatRequest,
        content=texts(),
        schema=st.none() | json_objects(),
        author=st.none() | texts(),
    )


def chat_responses() -> st.SearchStrategy[ChatResponse]:
    """A message, reasoning, or structured data."""
    return st.one_of(
        texts().map(ChatResponse.message),
        texts().map(ChatResponse.reasoning),
        json_values().map(ChatResponse.data),
    )


def tool_call_requests() -> st.SearchStrategy[ToolCallRequest]:
    """A tool call with nested arguments (strings and other leaves)."""
    return st.builds(
        ToolCallRequest, id=texts(min_size=1), name=texts(min_size=1), arguments=json_objects()
    )


def tool_call_responses() -> st.SearchStrategy[ToolCallResponse]:
    """What a tool call produced."""
    return st.builds(
        ToolCallResponse, id=texts(min_size=1), content=texts(), is_error=st.booleans()
    )


def events() -> st.SearchStrategy[Event]:
    """Any of the seven conversation events."""
    return st.one_of(
        st.just(TurnStart()),
        chat_requests(),
        chat_responses(),
        tool_call_requests(),
        tool_call_responses(),
        inquiry_requests(),
        inquiry_responses(),
    )


# ------------------------------------------------------------------- entries


@st.composite
def event_entries(draw: st.DrawFn, event_id: str | None = None) -> EventEntry:
    """A conversation event in its envelope, with metadata and a request link sometimes.

    The link, on an event that answers a request, names any id: whether it
    binds is a reader's question, not the entry's.
    """
    payload = draw(_cached.events)
    return EventEntry(
        event_id=event_id if event_id is not None else draw(_cached.event_ids),
        timestamp=draw(_cached.timestamps),
        payload=payload,
        metadata=draw(_cached.json_objects),
        request_id=draw(_cached.optional_ids) if is_linked(payload) else None,
    )


@st.composite
def config_deltas(draw: st.DrawFn, event_id: str | None = None) -> ConfigDelta:
    """A configuration change: an apply (with unsets sometimes), a reset, or the oldest form."""
    shape = draw(st.sampled_from(["apply", "flattened", "reset"]))
    common: dict[str, Any] = {
        "event_id": event_id if event_id is not None else draw(_cached.event_ids),
        "timestamp": draw(_cached.timestamps),
    }
    if shape == "reset":
        return ConfigDelta(**common, reset=True)
    flattened = shape == "flattened"
    return ConfigDelta(
        **common,
        delta=draw(_cached.flat_objects if flattened else _cached.json_objects),
        flattened=flattened,
        unsets=tuple(draw(st.lists(_cached.texts, max_size=3))),
    )


@st.composite
def compactions(draw: st.DrawFn, event_id: str | None = None) -> Compaction:
    """A compaction with its optional policies; a summary as JP writes it, or a bare text."""
    return Compaction(
        event_id=event_id if event_id is not None else draw(_cached.event_ids),
        timestamp=draw(_cached.timestamps),
        from_turn=draw(_cached.turn_numbers),
        to_turn=draw(_cached.turn_numbers),
        summary=draw(_cached.summaries),
        reasoning=draw(_cached.json_values),
        tool_calls=draw(_cached.json_values),
    )


@st.composite
def event_overlays(draw: st.DrawFn, event_id: str | None = None) -> EventOverlay:
    """An overlay of JP's metadata patches (none, sometimes)."""
    patches = draw(
        st.lists(
            st.builds(OverlayPatch, key=_cached.texts, value=_cached.texts, remove=_cached.texts),
            max_size=3,
        )
    )
    return EventOverlay(
        event_id=event_id if event_id is not None else draw(_cached.event_ids),
        timestamp=draw(_cached.timestamps),
        patches=tuple(patches),
    )


@st.composite
def unknown_entries(draw: st.DrawFn, event_id: str | None = None) -> UnknownEntry:
    """An entry of a kind from a newer writer, with arbitrary fields.

    Its ``event_id`` is ``event_id`` when given; otherwise it has none, or an
    unusable one (empty, or not a string), which is kept as it is.
    """
    raw: dict[str, Any] = {}
    if event_id is not None:
        raw["event_id"] = event_id
    else:
        unusable = draw(_cached.unusable_ids)
        if unusable is not None:
            raw["event_id"] = unusable
    raw["type"] = draw(_cached.unknown_kinds)
    raw.update(draw(_cached.flat_objects))
    return UnknownEntry(raw)


_ENTRY_MAKERS: tuple[Callable[..., st.SearchStrategy[StreamEntry]], ...] = (
    event_entries,
    event_entries,
    event_entries,
    config_deltas,
    compactions,
    event_overlays,
    unknown_entries,
)


@st.composite
def stream_entries(draw: st.DrawFn, *, max_size: int = 12) -> list[StreamEntry]:
    """Entries of every kind, with unique event ids (unknown entries may have none)."""
    ids = draw(st.lists(_cached.event_ids, max_size=max_size, unique=True))
    entries: list[StreamEntry] = []
    for event_id in ids:
        make = draw(_cached.entry_makers)
        if make is unknown_entries and draw(st.booleans()):
            entries.append(draw(unknown_entries()))
        else:
            entries.append(draw(make(event_id=event_id)))
    return entries


def conversation_streams(*, max_size: int = 12) -> st.SearchStrategy[ConversationStream]:
    """A stream of random entries (global and unknown ones included)."""
    return stream_entries(max_size=max_size).map(ConversationStream)


class _Cached:
    """Strategies the composites above draw from, built once."""

    def __init__(self) -> None:
        self.texts = texts()
        self.names = texts(min_size=1)
        self.optional_texts = st.none() | texts()
        self.summaries = st.one_of(
            st.none(),
            texts(),
            st.builds(lambda text: {"summary": text}, texts()),
            st.builds(lambda text: {"summary": text, "source": "authored"}, texts()),
        )
        self.optional_booleans = st.none() | st.booleans()
        self.json_values = json_values()
        self.json_objects = json_objects()
        self.flat_objects = json_objects(
            keys=texts(max_size=6).filter(lambda key: key not in ENVELOPE_KEYS)
        )
        self.event_ids = event_ids()
        self.optional_ids = st.none() | event_ids()
        self.timestamps = timestamps()
        self.events = events()
        self.answerable_types = answer_types(min_options=1)
        self.turn_numbers = st.integers(min_value=0, max_value=1000)
        self.unusable_ids: st.SearchStrategy[object] = st.sampled_from([None, "", 7])
        self.unknown_kinds = texts(min_size=1).filter(lambda tag: tag not in KNOWN_ENTRY_KINDS)
        self.entry_makers = st.sampled_from(_ENTRY_MAKERS)


_cached = _Cached()
