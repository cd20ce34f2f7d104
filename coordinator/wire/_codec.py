"""The wire codec: one private cattrs converter, and the entry shapes around it.

"Write new, read both": every record is written in its current form, and read
in its current form and every legacy one JP has written:

- ``inquiry_response`` written tagged (``{"outcome": ...}``); the legacy flat
  ``{"id", "answer"}`` reads as ``Answered``; a ``cancelled`` without a reason
  reads as reason ``user``; a reason this build does not know is kept verbatim.
- a tool-facing ``answer_type`` written tagged (``{"type": "secret"}``); the
  legacy externally tagged form (``"Boolean"``, ``{"Select": {...}}``) read too.
- select options written as ``{value, description?}``; bare strings read too.

Storage (base64) decoding and the entry envelope (``event_id``, ``timestamp``,
``type``, ``metadata``) are handled here as well, so the rest of the code only
ever sees decoded records.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.orjson import make_converter
from cattrs.v import format_exception

from coordinator.stream._entries import EVENT_KINDS
from coordinator.stream._slots import record_builder
from coordinator.wire._json_read import holds_wide_float, note_wide_floats
from coordinator.wire._storage_fields import decode_field, decode_object
from machines import (
    Answered,
    AnswerKind,
    AnswerType,
    AnyCancellationReason,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquiryResponse,
    InquirySource,
    Question,
    RecordError,
    Redacted,
    SelectOption,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    UnknownCancellationReason,
    parse_cancellation_reason,
)

__all__ = [
    "EVENT_KINDS",
    "STORED_READERS",
    "WireError",
    "json_type",
    "structure_event",
    "structure_question",
    "unstructure_event",
    "unstructure_question",
]


# The records read most often, built as their constructors build them, for a
# quarter less (see coordinator.stream._slots.record_builder). Each takes its fields in
# the order the record declares them.
_new_answered: Final = record_builder(Answered)
_new_chat_request: Final = record_builder(ChatRequest)
_new_chat_response: Final = record_builder(ChatResponse)
_new_inquiry_request: Final = record_builder(InquiryRequest)
_new_tool_call_request: Final = record_builder(ToolCallRequest)
_new_tool_call_response: Final = record_builder(ToolCallResponse)


class WireError(ValueError):
    """A value read from the wire does not have the shape of its record."""


def _expect(kind: type, what: str) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        # cattrs would coerce 5 into "5"; a stored value of the wrong type is a
        # broken file, not something to repair silently.
        if type(value) is not kind:
            raise WireError(f"expected {what}, got {json_type(value)}")
        return value

    return structure


def json_type(value: object) -> str:
    """What ``value`` is, in JSON's words ("a string", "an object", "null")."""
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    names |= {dict: "an object", list: "an array", type(None): "null"}
    return names.get(type(value), type(value).__name__)


#: The types of parsed JSON that can be, or hold, a float.
_FREE_FORM: Final = frozenset({float, dict, list})


def _note_wide_floats_in(value: Any) -> None:
    """Note a float beyond 64 bits in ``value``, a free-form value read from the wire.

    The values of a record the readers look at anyway: a float that large may
    be an integer ``orjson`` could not read exactly (see coordinator.wire._json_read).
    """
    if holds_wide_float(value):
        note_wide_floats()


def _object(value: Any, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise WireError(f"{where} must be an object, got {json_type(value)}")
    return value


# ---------------------------------------------------------------- answer types


def _structure_option(value: Any, _: Any) -> SelectOption:
    if type(value) is str:
        return SelectOption(value=value)
    data = _object(value, "a select option")
    if "value" not in data:
        raise WireError("a select option has no 'value'")
    return SelectOption(value=data["value"], description=data.get("description"))


def _unstructure_option(option: SelectOption) -> dict[str, Any]:
    if option.description is None:
        return {"value": option.value}
    return {"value": option.value, "description": option.description}


# Wire tags to members: an enum's call by value costs ten times a dict lookup,
# and these run for every recorded question.
_ANSWER_KINDS: Final = {kind.value: kind for kind in AnswerKind}
_SOURCE_KINDS: Final = {kind.value: kind for kind in SourceKind}

#: Records are immutable, so every question of a kind without options can share one.
_PLAIN_ANSWER_TYPES: Final[Mapping[AnswerKind, AnswerType]] = {
    kind: AnswerType(kind=kind) for kind in AnswerKind if kind is not AnswerKind.SELECT
}

_LEGACY_KINDS: Final = {
    "Boolean": "boolean",
    "Select": "select",
    "Text": "text",
    "Secret": "secret",
}


def _structure_answer_type(value: Any, _: Any) -> AnswerType:
    if type(value) is str:
        # Legacy externally tagged unit variant: "Boolean", "Text", "Secret".
        tag = _LEGACY_KINDS.get(value)
        if tag is None or tag == "select":
            raise WireError(f"unknown answer type {value!r}")
        return _PLAIN_ANSWER_TYPES[_ANSWER_KINDS[tag]]
    data = _object(value, "answer_type")
    if "type" in data:
        tag = data["type"]
        kind = _ANSWER_KINDS.get(tag) if type(tag) is str else None
        if kind is None:
            raise WireError(f"unknown answer type {tag!r}")
        if kind is not AnswerKind.SELECT:
            return _PLAIN_ANSWER_TYPES[kind]
        raw = data.get("options")
        if type(raw) is not list:
            raise WireError("a select answer type needs an 'options' array")
        options = tuple(_structure_option(option, SelectOption) for option in raw)
        return AnswerType(kind=kind, options=options)
    if len(data) == 1 and "Select" in data:
        # Legacy externally tagged struct variant: {"Select": {"options": [...]}}.
        body = _object(data["Select"], "answer_type.Select")
        raw = body.get("options")
        if type(raw) is not list:
            raise WireError("a select answer type needs an 'options' array")
        return AnswerType.select(_structure_option(option, SelectOption) for option in raw)
    raise WireError("answer_type has no 'type'")


def _unstructure_answer_type(answer_type: AnswerType, *, options_as_objects: bool) -> Any:
    if answer_type.kind is not AnswerKind.SELECT:
        return {"type": answer_type.kind.value}
    if options_as_objects or any(o.description is not None for o in answer_type.options):
        options: list[Any] = [_unstructure_option(o) for o in answer_type.options]
    else:
        options = [o.value for o in answer_type.options]
    return {"type": "select", "options": options}


# --------------------------------------------------------------------- sources


def _structure_source(value: Any, _: Any) -> InquirySource:
    data = _object(value, "source")
    tag = data.get("source")
    kind = _SOURCE_KINDS.get(tag) if type(tag) is str else None
    if kind is None:
        raise WireError(f"unknown inquiry source {tag!r}")
    name = data.get("name")
    if name is None or type(name) is str:
        return _shared_source(kind, name)
    return InquirySource(kind=kind, name=name)  # refused by its validator, with its message


@functools.lru_cache(maxsize=256)
def _shared_source(kind: SourceKind, name: str | None) -> InquirySource:
    # A stream asks the same few tools over and over; records are immutable, so
    # their questions can share one source. Invalid ones raise, and are not cached.
    return InquirySource(kind=kind, name=name)


def _unstructure_source(source: InquirySource) -> dict[str, Any]:
    if source.name is None:
        return {"source": source.kind.value}
    return {"source": source.kind.value, "name": source.name}


# ------------------------------------------------------------------- responses


def _structure_reason(value: Any, _: Any) -> AnyCancellationReason:
    if type(value) is not str or not value:
        raise WireError(f"reason must be a non-empty string, got {json_type(value)}")
    return parse_cancellation_reason(value)


def _structure_response(value: Any, _: Any) -> InquiryResponse:
    data = _object(value, "inquiry_response")
    outcome = data.get("outcome")
    if outcome is None:
        # Pre-082 writers only ever recorded answers, as a flat {id, answer}.
        if "answer" not in data:
            raise WireError("inquiry_response has neither an 'outcome' nor an 'answer'")
        answer = data["answer"]
        if type(answer) in _FREE_FORM:
            _note_wide_floats_in(answer)
        return _new_answered(data.get("id"), answer)
    if outcome == "answered":
        if "answer" not in data:
            raise WireError("an answered inquiry_response has no 'answer'")
        answer = data["answer"]
        if type(answer) in _FREE_FORM:
            _note_wide_floats_in(answer)
        return _new_answered(data.get("id"), answer)
    if outcome == "cancelled":
        # A missing reason is the conservative `user`: every other reason needs
        # the engine itself to have written it.
        reason = _structure_reason(data.get("reason", "user"), None)
        return Cancelled(id=data.get("id"), reason=reason)  # type: ignore[arg-type]
    if outcome == "redacted":
        return Redacted(id=data.get("id"))  # type: ignore[arg-type]
    raise WireError(f"unknown inquiry_response outcome {outcome!r}")


def _unstructure_response(response: InquiryResponse) -> dict[str, Any]:
    if isinstance(response, Answered):
        return {"outcome": "answered", "id": response.id, "answer": response.answer}
    if isinstance(response, Cancelled):
        return {"outcome": "cancelled", "id": response.id, "reason": response.reason.as_str()}
    return {"outcome": "redacted", "id": response.id}


# ------------------------------------------------------------------- converter


def _passthrough(value: Any, _: Any) -> Any:
    return value


def _is_json_mapping(kind: Any) -> bool:
    # Mapping[str, JsonValue] fields (arguments, schema) are checked by the
    # records' validators; copying them item by item would only cost time.
    return getattr(kind, "__origin__", None) is Mapping


def _make_converter() -> cattrs.Converter:
    converter = make_converter()
    # Simple types first: strict, never coercing.
    converter.register_structure_hook(str, _expect(str, "a string"))
    converter.register_structure_hook(bool, _expect(bool, "a boolean"))
    converter.register_structure_hook(int, _expect(int, "an integer"))
    converter.register_structure_hook_func(_is_json_mapping, _passthrough)
    converter.register_structure_hook(SelectOption, _structure_option)
    converter.register_unstructure_hook(SelectOption, _unstructure_option)
    converter.register_structure_hook(AnswerType, _structure_answer_type)
    converter.register_unstructure_hook(
        AnswerType, lambda value: _unstructure_answer_type(value, options_as_objects=True)
    )
    converter.register_structure_hook(InquirySource, _structure_source)
    converter.register_unstructure_hook(InquirySource, _unstructure_source)
    converter.register_structure_hook(CancellationReason, _structure_reason)
    converter.register_structure_hook(UnknownCancellationReason, _structure_reason)
    for response in (Answered, Cancelled, Redacted):
        converter.register_structure_hook(response, _structure_response)
        converter.register_unstructure_hook(response, _unstructure_response)

    converter.register_structure_hook(
        InquiryQuestion, make_dict_structure_fn(InquiryQuestion, converter)
    )
    converter.register_unstructure_hook(
        InquiryQuestion,
        make_dict_unstructure_fn(InquiryQuestion, converter, _cattrs_omit_if_default=True),
    )
    converter.register_structure_hook(
        InquiryRequest, make_dict_structure_fn(InquiryRequest, converter)
    )
    converter.register_unstructure_hook(
        InquiryRequest, make_dict_unstructure_fn(InquiryRequest, converter)
    )
    converter.register_structure_hook(ChatRequest, make_dict_structure_fn(ChatRequest, converter))
    converter.register_unstructure_hook(
        ChatRequest, make_dict_unstructure_fn(ChatRequest, converter, _cattrs_omit_if_default=True)
    )
    for plain in (ToolCallRequest, ToolCallResponse):
        converter.register_structure_hook(plain, make_dict_structure_fn(plain, converter))
        converter.register_unstructure_hook(plain, make_dict_unstructure_fn(plain, converter))
    # The tool-facing question calls its preamble `pre_amble` on the wire.
    converter.register_structure_hook(
        Question,
        make_dict_structure_fn(Question, converter, context=override(rename="pre_amble")),
    )
    return converter


_CONVERTER: Final = _make_converter()


def _describe(error: BaseException, kind: type | None) -> str:
    if isinstance(error, WireError | RecordError):
        return str(error)
    return format_exception(error, kind)


def _structure(value: Any, kind: type[Any]) -> Any:
    try:
        return _CONVERTER.structure(value, kind)
    except cattrs.BaseValidationError as error:
        messages = cattrs.transform_error(error, path="$", format_exception=_describe)
        raise WireError("; ".join(messages)) from None
    except RecordError as error:
        raise WireError(str(error)) from None


# ------------------------------------------------------------------ questions


def structure_question(value: Any) -> Question:
    """Read a tool-facing question (tagged or legacy answer type)."""
    data = _object(value, "question")
    # The wire writes absent values as null; a null default means no default.
    return _structure(data, Question)  # type: ignore[no-any-return]


def unstructure_question(question: Question) -> dict[str, Any]:
    """Write a tool-facing question in the current (tagged) form."""
    return {
        "id": question.id,
        "text": question.text,
        "pre_amble": question.context,
        "answer_type": _unstructure_answer_type(question.answer_type, options_as_objects=False),
        "default": question.default,
    }


# --------------------------------------------------------------------- events


_CHAT_RESPONSE_KEYS: Final = tuple((kind.value, kind) for kind in ChatResponseKind)


def _structure_chat_response(data: dict[str, Any]) -> ChatResponse:
    present = [(key, kind) for key, kind in _CHAT_RESPONSE_KEYS if key in data]
    if len(present) != 1:
        raise WireError("a chat_response needs exactly one of 'message', 'reasoning', 'data'")
    key, kind = present[0]
    content = data[key]
    if type(content) is not str:
        _note_wide_floats_in(content)
    return _new_chat_response(kind, content)


#: A turn marker has no fields: one immutable instance serves every turn.
_TURN_START: Final = TurnStart()

_EVENT_READERS: Final[Mapping[str, Callable[[dict[str, Any]], Event]]] = {
    "turn_start": lambda _: _TURN_START,
    "chat_request": lambda data: _structure(data, ChatRequest),
    "chat_response": _structure_chat_response,
    "tool_call_request": lambda data: _structure(data, ToolCallRequest),
    "tool_call_response": lambda data: _structure(data, ToolCallResponse),
    "inquiry_request": lambda data: _structure(data, InquiryRequest),
    "inquiry_response": lambda data: _structure_response(data, None),
}


# Loading a conversation reads thousands of entries of a few kinds. For those,
# a direct reader builds the record from well-formed data without the
# converter's per-field dispatch (a third of the cost of a load). On anything
# it does not expect it gives up, and the converter reads the entry instead, so
# the record, and every error message, is exactly the converter's.


def _build_tool_call_request(raw: dict[str, Any], arguments: Any) -> Event | None:
    call_id, name = raw.get("id"), raw.get("name")
    if type(call_id) is str and type(name) is str:
        return _new_tool_call_request(call_id, name, arguments)
    return None


def _build_tool_call_response(raw: dict[str, Any], content: Any) -> Event | None:
    call_id, is_error = raw.get("id"), raw.get("is_error")
    if type(call_id) is str and type(is_error) is bool:
        return _new_tool_call_response(call_id, content, is_error)
    return None


def _fast_tool_call_request(data: dict[str, Any]) -> Event | None:
    arguments = data.get("arguments")
    return _build_tool_call_request(data, arguments) if type(arguments) is dict else None


def _fast_tool_call_response(data: dict[str, Any]) -> Event | None:
    content = data.get("content")
    return _build_tool_call_response(data, content) if type(content) is str else None


def _fast_chat_request(data: dict[str, Any]) -> Event | None:
    content, schema, author = data.get("content"), data.get("schema"), data.get("author")
    if type(content) is not str or not (schema is None or type(schema) is dict):
        return None
    if not _optional_string(author):
        return None
    if schema is not None:
        _note_wide_floats_in(schema)
    return _new_chat_request(content, schema, author)


def _optional_string(value: object) -> bool:
    return value is None or type(value) is str


def _fast_inquiry_request(data: dict[str, Any]) -> Event | None:
    request_id, question = data.get("id"), data.get("question")
    if type(request_id) is not str or type(question) is not dict:
        return None
    text, question_id, context = question.get("text"), question.get("id"), question.get("context")
    if type(text) is not str or not _optional_string(question_id) or not _optional_string(context):
        return None
    if "answer_type" not in question or "source" not in data:
        return None
    answer_type, default = question["answer_type"], question.get("default")
    # {"type": tag}: a kind without options ("select" here is refused, and not cached).
    # Never a secret: a file may have recorded one with a default, which no cache may keep.
    tag = answer_type.get("type") if type(answer_type) is dict and len(answer_type) == 1 else None
    if type(tag) is str and tag != "secret" and type(default) in _SHAREABLE_DEFAULTS:
        recorded = _shared_question(text, tag, default, question_id, context)
    else:
        recorded = _recorded_question(text, answer_type, default, question_id, context)
    source = _structure_source(data["source"], None)
    return _new_inquiry_request(request_id, source, recorded)


def _recorded_question(
    text: str, answer_type: Any, default: Any, question_id: str | None, context: str | None
) -> InquiryQuestion:
    # Reached by few questions (a select, a secret, a default not plain): a
    # float beyond 64 bits is looked for here, not on the shared fast path.
    _note_wide_floats_in([answer_type, default])
    return InquiryQuestion(
        text=text,
        answer_type=_structure_answer_type(answer_type, None),
        default=default,
        id=question_id,
        context=context,
    )


#: Defaults a shared question may hold: immutable, and equal only to what writes
#: the same (the cache tells true from 1 by type). Not floats: -0.0 == 0.0.
_SHAREABLE_DEFAULTS: Final = frozenset({str, bool, int, type(None)})


@functools.lru_cache(maxsize=256, typed=True)
def _shared_question(
    text: str, tag: str, default: Any, question_id: str | None, context: str | None
) -> InquiryQuestion:
    # A tool asks the same question call after call (every question in the
    # real conversations we test with is one of a few). Records are immutable,
    # so the requests can share it, as they share sources. `typed` keeps a
    # default of true apart from 1 and 1.0. Invalid ones raise, and are not cached.
    return _recorded_question(text, {"type": tag}, default, question_id, context)


_FAST_READERS: Final[Mapping[str, Callable[[dict[str, Any]], Event | None]]] = {
    "chat_request": _fast_chat_request,
    "tool_call_request": _fast_tool_call_request,
    "tool_call_response": _fast_tool_call_response,
    "inquiry_request": _fast_inquiry_request,
}


def _by_converter(read: Callable[[dict[str, Any]], Event]) -> Callable[[dict[str, Any]], Event]:
    """``read``, with a record's refusal worded as the codec's."""

    def by_converter(data: dict[str, Any]) -> Event:
        try:
            return read(data)
        except RecordError as error:
            raise WireError(str(error)) from None

    return by_converter


def _fast_first(
    fast: Callable[[dict[str, Any]], Event | None], converter: Callable[[dict[str, Any]], Event]
) -> Callable[[dict[str, Any]], Event]:
    """``fast``, or ``converter`` where it gives up (``None``, or anything raised)."""

    def read(data: dict[str, Any]) -> Event:
        try:
            event = fast(data)
        except Exception:  # noqa: BLE001 - anything unusual is the converter's to judge
            event = None
        return converter(data) if event is None else event

    return read


#: Each conversation event kind's reader of the converter, errors worded.
_CONVERTER_READERS: Final[Mapping[str, Callable[[dict[str, Any]], Event]]] = {
    kind: _by_converter(read) for kind, read in _EVENT_READERS.items()
}

#: Each conversation event kind's reader of a decoded entry: fast where it can be.
_DECODED_READERS: Final[Mapping[str, Callable[[dict[str, Any]], Event]]] = {
    kind: _fast_first(_FAST_READERS[kind], read) if kind in _FAST_READERS else read
    for kind, read in _CONVERTER_READERS.items()
}


def structure_event(kind: str, data: dict[str, Any]) -> Event | None:
    """Read the payload of a conversation event of wire type ``kind``.

    ``data`` is the decoded entry (storage fields already decoded); keys that
    belong to the envelope or to a newer writer are ignored. Returns ``None``
    when ``kind`` is not a conversation event.
    """
    read = _DECODED_READERS.get(kind)
    return None if read is None else read(data)


# Reading an entry as it is stored: its storage fields decoded, then its
# record built. One function per kind, so that a load of thousands of entries
# pays for no dispatch and no copy of the entry beyond what it must decode.


def _stored_field(
    kind: str,
    field: str,
    stored_type: type,
    decode: Callable[[Any], Any],
    build: Callable[[dict[str, Any], Any], Event | None],
) -> Callable[[dict[str, Any]], Event]:
    """The stored reader of a kind with one storage field, ``field``.

    ``decode`` reads the field when it is stored as a ``stored_type``;
    ``build`` makes the record directly from the entry and the decoded field,
    or gives up (``None``, or a refusal), and the converter reads the entry
    instead and words any refusal.
    """
    converter = _CONVERTER_READERS[kind]

    def read(raw: dict[str, Any]) -> Event:
        value = raw.get(field)
        if type(value) is not stored_type:
            return converter(raw)
        value = decode(value)
        try:
            event = build(raw, value)
        except RecordError:
            event = None
        return converter({**raw, field: value}) if event is None else event

    return read


#: For each conversation event kind, its reader of an entry as stored (storage
#: fields still encoded; ``metadata`` is the envelope's, read by the caller).
#: Kinds without storage fields read it as their decoded form.
STORED_READERS: Final[Mapping[str, Callable[[dict[str, Any]], Event]]] = {
    **_DECODED_READERS,
    "tool_call_request": _stored_field(
        "tool_call_request", "arguments", dict, decode_object, _build_tool_call_request
    ),
    "tool_call_response": _stored_field(
        "tool_call_response", "content", str, decode_field, _build_tool_call_response
    ),
}


def unstructure_event(event: Event) -> dict[str, Any]:
    """Write the payload keys of ``event``, in their on-disk order."""
    if isinstance(event, TurnStart):
        return {}
    if isinstance(event, ChatResponse):
        return {event.kind.value: event.content}
    if isinstance(event, Answered | Cancelled | Redacted):
        return _unstructure_response(event)
    return _CONVERTER.unstructure(event)  # type: ignore[no-any-return]
