"""The wire codec: one private cattrs converter, and one hook each way per record.

Theory of operation. Every record the wire holds is read by exactly one
structure hook and written by exactly one unstructure hook, each registered
once on the project's private converter (:data:`_CONVERTER`); nothing else
reads or writes one. A load hands the payload of each entry to the structure
hook of its kind (:data:`PAYLOAD_HOOKS`), which reads it as it is stored:
the base64 storage fields of a tool call's arguments and a tool response's
content are decoded by the hook that reads them, and encoded by the hook
that writes them (:mod:`coordinator.wire._storage_fields`).

Validation is the records' own. A hook takes the values out of the payload
and hands them to the record's constructor, whose validators refuse a value
of the wrong type in the record's words ("ToolCallRequest.id must be a
non-empty string, not an integer"). A hook refuses itself only what a
constructor cannot see (:class:`WireError`): a key that is missing, a tag it
does not know, a shape no writer ever wrote. Every refusal describes the
value's type or the key, never the value.

"Write new, read both": every record is written in its current form, and read
in its current form and every legacy one JP has written:

- ``inquiry_response`` written tagged (``{"outcome": ...}``); the legacy flat
  ``{"id", "answer"}`` reads as ``Answered``; a ``cancelled`` without a reason
  reads as reason ``user``; a reason this build does not know is kept verbatim.
- a tool-facing ``answer_type`` written tagged (``{"type": "secret"}``); the
  legacy externally tagged form (``"Boolean"``, ``{"Select": {...}}``) read too.
- select options written as ``{value, description?}``; bare strings read too.

A form (an answer type JP does not know) is written in a shape JP reads:
the recorded question is a ``text`` question, its answer the form's JSON
object (``answer`` is any JSON value to JP), and the form's schema goes
where JP keeps what it does not know verbatim, the entry's ``metadata``,
under ``{"inquiry": {"form": <schema>}}`` (:func:`with_record_metadata`
adds it as the entry is written, :func:`without_record_metadata` takes it
out as it is read, and the hook that reads the request reads it back as a
form). A schema there that does not read as a form leaves the question the
``text`` question JP reads, its metadata kept as it is (``docs/wire.md``,
*Forms*).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import attrs
from cattrs.preconf.orjson import make_converter

from coordinator._recorded_routes import ROUTE_KEY
from coordinator.stream import EVENT_KINDS
from coordinator.wire._storage_fields import (
    decode_field,
    decode_leaves,
    encode_field,
    encode_leaves,
)
from machines import (
    Answered,
    AnswerKind,
    AnswerReusePolicy,
    AnswerType,
    AnyCancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    Event,
    Form,
    FormSchemaError,
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
    json_type,
    parse_cancellation_reason,
)

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "PAYLOAD_HOOKS",
    "WireError",
    "question_metadata",
    "structure_event",
    "structure_question",
    "unstructure_event",
    "unstructure_question",
    "unstructure_recorded_question",
    "with_record_metadata",
    "without_record_metadata",
]


class WireError(ValueError):
    """A value read from the wire does not have the shape of its record."""


def _required(
    data: dict[str, Any], keys: Callable[[dict[str, Any]], Any], within: str = ""
) -> Any:
    """``keys(data)``, an ``itemgetter`` of the keys a record cannot do without.

    A key that is missing is said with its place (``within`` is its object's).
    """
    try:
        return keys(data)
    except KeyError as error:
        raise WireError(f"{within + str(error.args[0])!r} is missing") from None


# The keys each shape cannot do without, taken in one call.
_ID, _SOURCE, _QUESTION, _CONTENT = (
    itemgetter(key) for key in ("id", "source", "question", "content")
)
_QUESTION_TEXT = itemgetter("text", "answer_type")
_TOOL_QUESTION = itemgetter("id", "text", "answer_type")
_TOOL_CALL = itemgetter("id", "name", "arguments")
_TOOL_RESULT = itemgetter("id", "content", "is_error")


def _object(value: Any, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise WireError(f"{where} must be an object, got {json_type(value)}")
    return value


# ---------------------------------------------------------------- answer types


def _structure_option(value: Any, _: Any = None) -> SelectOption:
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


#: Each wire tag's member (a tag that is not one is said in the hook's words).
_ANSWER_KINDS: Final = {kind.value: kind for kind in AnswerKind}
_SOURCE_KINDS: Final = {kind.value: kind for kind in SourceKind}

_LEGACY_KINDS: Final = {
    "Boolean": "boolean",
    "Select": "select",
    "Text": "text",
    "Secret": "secret",
}


def _options(body: dict[str, Any]) -> list[SelectOption]:
    raw = body.get("options")
    if type(raw) is not list:
        raise WireError("a select answer type needs an 'options' array")
    return [_structure_option(option) for option in raw]


def _structure_form(data: dict[str, Any]) -> AnswerType:
    """A tool's form: ``{"type": "form", "schema": <its JSON schema>}``."""
    try:
        return AnswerType.form_of(Form.from_json_schema(data.get("schema")))
    except FormSchemaError as error:
        raise WireError(f"a form answer type's schema: {error}") from None


def _structure_answer_type(value: Any, _: Any = None) -> AnswerType:
    if type(value) is str:
        # Legacy externally tagged unit variant: "Boolean", "Text", "Secret".
        tag = _LEGACY_KINDS.get(value)
        if tag is None or tag == "select":
            raise WireError(f"unknown answer type {value!r}")
        return AnswerType(kind=_ANSWER_KINDS[tag])
    data = _object(value, "answer_type")
    if "type" in data:
        tag = data["type"]
        kind = _ANSWER_KINDS.get(tag) if type(tag) is str else None
        if kind is None:
            raise WireError(f"unknown answer type {tag!r}")
        if kind is AnswerKind.FORM:
            return _structure_form(data)
        if kind is not AnswerKind.SELECT:
            return AnswerType(kind=kind)
        return AnswerType(kind=kind, options=_options(data))
    if len(data) == 1 and "Select" in data:
        # Legacy externally tagged struct variant: {"Select": {"options": [...]}}.
        return AnswerType.select(_options(_object(data["Select"], "answer_type.Select")))
    raise WireError("answer_type has no 'type'")


def _unstructure_answer_type(answer_type: AnswerType, *, options_as_objects: bool = True) -> Any:
    """As recorded, or as a tool gives it (``options_as_objects`` false: options as strings).

    A form is written whole for a tool (``{"type": "form", "schema": ...}``);
    recorded, it is the ``text`` JP reads, its schema in the entry's metadata.
    """
    if answer_type.form is not None:
        if options_as_objects:
            return {"type": AnswerKind.TEXT.value}
        return {"type": AnswerKind.FORM.value, "schema": answer_type.form.json_schema()}
    if answer_type.kind is not AnswerKind.SELECT:
        return {"type": answer_type.kind.value}
    if options_as_objects or any(o.description is not None for o in answer_type.options):
        options: list[Any] = [_unstructure_option(o) for o in answer_type.options]
    else:
        options = [o.value for o in answer_type.options]
    return {"type": "select", "options": options}


# --------------------------------------------------------------------- sources


def _structure_source(value: Any, _: Any = None) -> InquirySource:
    data = _object(value, "source")
    tag = data.get("source")
    kind = _SOURCE_KINDS.get(tag) if type(tag) is str else None
    if kind is None:
        raise WireError(f"unknown inquiry source {tag!r}")
    return InquirySource(kind=kind, name=data.get("name"))


def _unstructure_source(source: InquirySource) -> dict[str, Any]:
    if source.name is None:
        return {"source": source.kind.value}
    return {"source": source.kind.value, "name": source.name}


# ------------------------------------------------------------------- questions


def _structure_recorded_question(value: Any, _: Any = None) -> InquiryQuestion:
    data = _object(value, "question")
    text, answer_type = _required(data, _QUESTION_TEXT, "question.")
    return InquiryQuestion(
        text=text,
        answer_type=_structure_answer_type(answer_type),
        default=data.get("default"),
        id=data.get("id"),
        context=data.get("context"),
        exclusive=data.get("exclusive"),
        persistence=data.get("persistence"),
    )


def _unstructure_recorded_question(question: InquiryQuestion) -> dict[str, Any]:
    out: dict[str, Any] = {
        "text": question.text,
        "answer_type": _unstructure_answer_type(question.answer_type),
    }
    # What is absent is omitted, as JP omits it; `exclusive` (RFD 049) and
    # `persistence` (RFD 083) are written only where they are not the
    # default, and a file's value is kept.
    optional = (
        ("default", question.default),
        ("id", question.id),
        ("context", question.context),
        ("exclusive", question.exclusive),
        ("persistence", question.persistence),
    )
    return out | {key: value for key, value in optional if value is not None}


def _structure_question(value: Any, _: Any = None) -> Question:
    data = _object(value, "question")
    question_id, text, answer_type = _required(data, _TOOL_QUESTION)
    # The wire writes absent values as null; a null default means no default.
    return Question(
        id=question_id,
        text=text,
        answer_type=_structure_answer_type(answer_type),
        context=data.get("pre_amble"),
        default=data.get("default"),
        # RFD 049: the tool marks a question only a person may answer; absent or null, it is not.
        exclusive=False if data.get("exclusive") is None else data["exclusive"],
        persistence=_structure_persistence(data.get("persistence")),
    )


def _structure_persistence(value: object) -> AnswerReusePolicy:
    """RFD 083's ``persistence`` of a tool's question: ``"none"`` or ``"turn"`` (absent)."""
    if value is None:
        return AnswerReusePolicy.TURN
    for policy in AnswerReusePolicy:
        if value == policy.value:
            return policy
    choices = " or ".join(f'"{policy.value}"' for policy in AnswerReusePolicy)
    # A short repr: the value is a tool's, and the message may reach a terminal.
    given = repr(value[:32]) if isinstance(value, str) else json_type(value)
    raise WireError(f"question.persistence must be {choices}, not {given}")


def unstructure_question(question: Question) -> dict[str, Any]:
    """Write a tool-facing question in the current (tagged) form."""
    out = {
        "id": question.id,
        "text": question.text,
        "pre_amble": question.context,
        "answer_type": _unstructure_answer_type(question.answer_type, options_as_objects=False),
        "default": question.default,
    }
    if question.persistence is not AnswerReusePolicy.TURN:
        out["persistence"] = question.persistence.value
    return out | ({"exclusive": True} if question.exclusive else {})


# ---------------------------------------------------------- conversation events


def _structure_turn_start(_value: Any, _: Any = None) -> TurnStart:
    return TurnStart()


def _structure_chat_request(data: dict[str, Any], _: Any = None) -> ChatRequest:
    content = _required(data, _CONTENT)
    return ChatRequest(content=content, schema=data.get("schema"), author=data.get("author"))


def _unstructure_chat_request(request: ChatRequest) -> dict[str, Any]:
    out: dict[str, Any] = {"content": request.content}
    if request.schema is not None:
        out["schema"] = request.schema
    if request.author is not None:
        out["author"] = request.author
    return out


_CHAT_RESPONSE_KEYS: Final = tuple((kind.value, kind) for kind in ChatResponseKind)


def _structure_chat_response(data: dict[str, Any], _: Any = None) -> ChatResponse:
    present = [(key, kind) for key, kind in _CHAT_RESPONSE_KEYS if key in data]
    if len(present) != 1:
        raise WireError("a chat_response needs exactly one of 'message', 'reasoning', 'data'")
    key, kind = present[0]
    return ChatResponse(kind=kind, content=data[key])


def _unstructure_chat_response(response: ChatResponse) -> dict[str, Any]:
    return {response.kind.value: response.content}


def _structure_tool_call_request(data: dict[str, Any], _: Any = None) -> ToolCallRequest:
    call_id, name, arguments = _required(data, _TOOL_CALL)
    if type(arguments) is dict:
        arguments = decode_leaves(arguments)  # its string leaves are stored base64
    return ToolCallRequest(id=call_id, name=name, arguments=arguments)


def _unstructure_tool_call_request(request: ToolCallRequest) -> dict[str, Any]:
    return {"id": request.id, "name": request.name, "arguments": encode_leaves(request.arguments)}


def _structure_tool_call_response(data: dict[str, Any], _: Any = None) -> ToolCallResponse:
    call_id, content, is_error = _required(data, _TOOL_RESULT)
    if type(content) is str:
        content = decode_field(content)  # stored base64
    return ToolCallResponse(id=call_id, content=content, is_error=is_error)


def _unstructure_tool_call_response(response: ToolCallResponse) -> dict[str, Any]:
    content = encode_field(response.content)
    return {"id": response.id, "content": content, "is_error": response.is_error}


def _structure_inquiry_request(data: dict[str, Any], _: Any = None) -> InquiryRequest:
    # Read in the order the keys are written, so that the first problem is named.
    request_id = _required(data, _ID)
    source = _structure_source(_required(data, _SOURCE))
    question = _structure_recorded_question(_required(data, _QUESTION))
    if question.answer_type.kind is AnswerKind.TEXT:
        form = _recorded_form(data.get("metadata"))
        if form is not None:
            question = attrs.evolve(question, answer_type=AnswerType.form_of(form))
    return InquiryRequest(id=request_id, source=source, question=question)


#: Under :data:`~coordinator._recorded_routes.ROUTE_KEY` of a request's metadata: its form.
FORM_KEY: Final = "form"


def _recorded_form(metadata: object) -> Form | None:
    """The form a request's stored ``metadata`` holds (its leaves base64), if one reads as such."""
    ours = metadata.get(ROUTE_KEY) if type(metadata) is dict else None
    schema = ours.get(FORM_KEY) if type(ours) is dict else None
    if schema is None:
        return None
    try:
        return Form.from_json_schema(decode_leaves(schema))
    except FormSchemaError:
        # Not ours, or broken by hand: the question stays the text question JP reads.
        return None


def _form_of(event: Event) -> Form | None:
    if isinstance(event, InquiryRequest):
        return event.question.answer_type.form
    return None


def with_record_metadata(event: Event, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """An entry's (decoded) ``metadata`` as written: with what its record keeps there.

    A form question's schema (``{"inquiry": {"form": ...}}``), beside what
    the key holds (a route, a park mark); everything else as it is.
    """
    return _with_form(_form_of(event), metadata)


def question_metadata(question: InquiryQuestion) -> Mapping[str, Any]:
    """What the entry of a request asking ``question`` keeps in its (decoded) metadata."""
    return _with_form(question.answer_type.form, {})


def _with_form(form: Form | None, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    if form is None:
        return metadata
    ours = metadata.get(ROUTE_KEY)
    kept = dict(ours) if isinstance(ours, Mapping) else {}
    return {**metadata, ROUTE_KEY: {**kept, FORM_KEY: form.json_schema()}}


def without_record_metadata(event: Event, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """An entry's (decoded) ``metadata`` as read, less what its record took from there (a form)."""
    if _form_of(event) is None:
        return metadata
    kept = dict(metadata)
    ours = {key: value for key, value in kept[ROUTE_KEY].items() if key != FORM_KEY}
    if ours:
        kept[ROUTE_KEY] = ours  # where it was among the keys
    else:
        del kept[ROUTE_KEY]
    return kept


def _unstructure_inquiry_request(request: InquiryRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "source": _unstructure_source(request.source),
        "question": _unstructure_recorded_question(request.question),
    }


def _structure_reason(value: Any) -> AnyCancellationReason:
    # Any string is a tag: one this build does not know, "" too, lands in
    # Unknown(tag) and is written back verbatim (RFD 082's reader rule).
    if type(value) is not str:
        raise WireError(f"reason must be a string, got {json_type(value)}")
    return parse_cancellation_reason(value)


def _structure_response(data: dict[str, Any], _: Any = None) -> InquiryResponse:
    outcome = data.get("outcome")
    if outcome is None:
        # Pre-082 writers only ever recorded answers, as a flat {id, answer}.
        if "answer" not in data:
            raise WireError("inquiry_response has neither an 'outcome' nor an 'answer'")
        return Answered(id=data.get("id"), answer=data["answer"])  # type: ignore[arg-type]
    if outcome == "answered":
        if "answer" not in data:
            raise WireError("an answered inquiry_response has no 'answer'")
        return Answered(id=data.get("id"), answer=data["answer"])  # type: ignore[arg-type]
    if outcome == "cancelled":
        # A missing reason is the conservative `user`: every other reason needs
        # the engine itself to have written it.
        reason = _structure_reason(data.get("reason", "user"))
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

#: A structure hook: the value read, and the type asked for (unused: each hook reads one).
_Hook: TypeAlias = Callable[[Any, Any], Any]

#: Each record's hooks: how it is read, and how it is written.
_HOOKS: Final[Mapping[Any, tuple[_Hook, Callable[[Any], Any]]]] = {
    TurnStart: (_structure_turn_start, lambda _: {}),
    ChatRequest: (_structure_chat_request, _unstructure_chat_request),
    ChatResponse: (_structure_chat_response, _unstructure_chat_response),
    ToolCallRequest: (_structure_tool_call_request, _unstructure_tool_call_request),
    ToolCallResponse: (_structure_tool_call_response, _unstructure_tool_call_response),
    InquiryRequest: (_structure_inquiry_request, _unstructure_inquiry_request),
    InquiryResponse: (_structure_response, _unstructure_response),
    InquiryQuestion: (_structure_recorded_question, _unstructure_recorded_question),
    InquirySource: (_structure_source, _unstructure_source),
    AnswerType: (_structure_answer_type, _unstructure_answer_type),
    SelectOption: (_structure_option, _unstructure_option),
    Question: (_structure_question, unstructure_question),
}


def _make_converter() -> cattrs.Converter:
    converter = make_converter()
    for record, (structure, unstructure) in _HOOKS.items():
        converter.register_structure_hook(record, structure)
        if record is InquiryResponse:
            # Written by the type of the response, each of the union's three.
            for response in (Answered, Cancelled, Redacted):
                converter.register_unstructure_hook(response, unstructure)
        else:
            converter.register_unstructure_hook(record, unstructure)
    return converter


_CONVERTER: Final = _make_converter()

#: The record type each conversation event kind is read as (a response is one of three).
_READ_AS: Final[Mapping[str, Any]] = {
    **{kind: record for record, kind in EVENT_KINDS.items() if kind != "inquiry_response"},
    "inquiry_response": InquiryResponse,
}

#: For each conversation event kind, the converter's hook that reads its payload
#: as stored, and the type to hand it. Keys of the envelope, or of a newer
#: writer, are not looked at.
PAYLOAD_HOOKS: Final[Mapping[str, tuple[_Hook, Any]]] = {
    kind: (_CONVERTER.get_structure_hook(record), record) for kind, record in _READ_AS.items()
}


def structure_event(kind: str, data: dict[str, Any]) -> Event | None:
    """Read the payload of a conversation event of wire ``type`` ``kind``, as stored.

    ``None`` when ``kind`` is not a conversation event. A payload that is not
    one raises :class:`WireError` saying why.
    """
    hook = PAYLOAD_HOOKS.get(kind)
    if hook is None:
        return None
    read, record = hook
    try:
        return read(data, record)  # type: ignore[no-any-return]
    except RecordError as error:
        raise WireError(str(error)) from None


def unstructure_recorded_question(question: InquiryQuestion) -> dict[str, Any]:
    """Write a recorded question as an ``inquiry_request`` holds it (its ``question`` key)."""
    return _unstructure_recorded_question(question)


def unstructure_event(event: Event) -> dict[str, Any]:
    """Write the payload keys of ``event`` as stored, in their on-disk order."""
    return _CONVERTER.unstructure(event)  # type: ignore[no-any-return]


def structure_question(value: Any) -> Question:
    """Read a tool-facing question (tagged or legacy answer type)."""
    try:
        return _CONVERTER.structure(value, Question)
    except RecordError as error:
        raise WireError(str(error)) from None
