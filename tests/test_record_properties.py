"""Round-trip properties: every record written and read back is equal; legacy forms read right."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    answered,
    cancelled,
    chat_requests,
    chat_responses,
    compactions,
    config_deltas,
    event_entries,
    events,
    inquiry_requests,
    inquiry_responses,
    json_values,
    questions,
    redacted,
    texts,
    tool_call_requests,
    tool_call_responses,
    unknown_entries,
)

from coordinator import ConversationStream
from coordinator.stream import EVENT_KINDS, StreamEntry
from coordinator.wire import decode_stream, encode_stream
from coordinator.wire._codec import (
    WireError,
    structure_event,
    structure_question,
    unstructure_event,
    unstructure_question,
)
from machines import (
    Answered,
    AnswerKind,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryRequest,
    InquiryResponse,
    Question,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    UnknownCancellationReason,
)


def through_json(value: Any) -> Any:
    """What a value is after being written to a file and read back."""
    return orjson.loads(orjson.dumps(value))


def round_trip(event: Event) -> object:
    """Write an event's payload as JSON and read it back."""
    return structure_event(EVENT_KINDS[type(event)], through_json(unstructure_event(event)))


@given(chat_requests())
def test_chat_requests_round_trip(event: ChatRequest) -> None:
    """A chat request reads back equal."""
    assert round_trip(event) == event


@given(chat_responses())
def test_chat_responses_round_trip(event: ChatResponse) -> None:
    """A message, reasoning or data response reads back equal."""
    assert round_trip(event) == event


@given(tool_call_requests())
def test_tool_call_requests_round_trip(event: ToolCallRequest) -> None:
    """A tool call with any arguments reads back equal."""
    assert round_trip(event) == event


@given(tool_call_responses())
def test_tool_call_responses_round_trip(event: ToolCallResponse) -> None:
    """A tool response reads back equal."""
    assert round_trip(event) == event


@given(inquiry_requests())
def test_inquiry_requests_round_trip(event: InquiryRequest) -> None:
    """A recorded question (any source, answer type, default, id, context) reads back equal."""
    assert round_trip(event) == event


@given(inquiry_responses())
def test_inquiry_responses_round_trip(event: InquiryResponse) -> None:
    """Answered, Cancelled (known or unknown reason) and Redacted read back equal."""
    assert round_trip(event) == event


@given(events())
def test_every_event_round_trips(event: Event) -> None:
    """All seven kinds, turn_start included, read back equal."""
    assert round_trip(event) == event


@given(questions())
def test_tool_facing_questions_round_trip(question: Question) -> None:
    """A tool-facing question written tagged reads back equal."""
    assert structure_question(through_json(unstructure_question(question))) == question


# ------------------------------------------------------------------ legacy


def _legacy_answer_type(question: Question) -> Any:
    kind = question.answer_type.kind
    if kind is AnswerKind.SELECT:
        return {"Select": {"options": list(question.answer_type.option_values)}}
    return kind.value.capitalize()


@given(questions().filter(lambda q: all(o.description is None for o in q.answer_type.options)))
def test_tool_facing_questions_read_from_the_legacy_form(question: Question) -> None:
    """The externally tagged answer type ("Boolean", {"Select": ...}) reads the same question."""
    legacy = unstructure_question(question) | {"answer_type": _legacy_answer_type(question)}
    assert structure_question(through_json(legacy)) == question


@given(inquiry_requests())
def test_recorded_select_options_read_from_bare_strings(event: InquiryRequest) -> None:
    """Options written as bare strings read as options without a description."""
    payload = unstructure_event(event)
    answer_type = payload["question"]["answer_type"]
    if answer_type["type"] == "select":
        answer_type["options"] = [option["value"] for option in answer_type["options"]]
    read = structure_event("inquiry_request", through_json(payload))
    assert isinstance(read, InquiryRequest)
    expected = [option.value for option in event.question.answer_type.options]
    assert list(read.question.answer_type.option_values) == expected
    assert all(option.description is None for option in read.question.answer_type.options)


@given(answered())
def test_answers_read_from_the_pre_082_flat_form(response: Answered) -> None:
    """The legacy {id, answer} form reads as the same Answered."""
    legacy = {"id": response.id, "answer": response.answer}
    assert structure_event("inquiry_response", through_json(legacy)) == response


@given(texts(min_size=1))
def test_a_cancellation_without_a_reason_reads_as_user(inquiry_id: str) -> None:
    """A cancelled response with no reason is a user cancellation."""
    read = structure_event("inquiry_response", {"outcome": "cancelled", "id": inquiry_id})
    assert read == Cancelled(id=inquiry_id, reason=CancellationReason.USER)


@given(cancelled())
def test_a_cancellation_writes_its_reason_tag_verbatim(response: Cancelled) -> None:
    """Known or unknown, the reason is written as its tag, exactly."""
    written = unstructure_event(response)
    assert written == {
        "outcome": "cancelled",
        "id": response.id,
        "reason": response.reason.as_str(),
    }
    if isinstance(response.reason, UnknownCancellationReason):
        assert written["reason"] == response.reason.tag


@given(redacted())
def test_a_redacted_response_never_carries_an_answer(response: Redacted) -> None:
    """Written or read, a redacted response has no answer."""
    written = unstructure_event(response)
    assert written == {"outcome": "redacted", "id": response.id}
    read = structure_event("inquiry_response", through_json(written))
    assert read == response
    assert not hasattr(read, "answer")


# ------------------------------------------------------------------ entries


@given(st.one_of(event_entries(), config_deltas(), compactions(), unknown_entries()))
def test_a_single_entry_round_trips_through_the_wire(entry: StreamEntry) -> None:
    """Any entry, written as its on-disk object and read back, is equal (ids, stamps, metadata)."""
    wire = through_json(encode_stream(ConversationStream([entry])))
    stream, repairs = decode_stream(wire)
    assert list(stream) == [entry]
    if entry.event_id is not None:
        assert repairs.total == 0
        assert next(iter(wire[0])) == "event_id"


# ------------------------------------------------------- damaged payloads


def _damage(data: st.DataObject, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with one key changed or gone, maybe inside its question or source."""
    damaged = dict(payload)
    holders = [damaged]
    for key in ("question", "source"):
        if type(damaged.get(key)) is dict:
            damaged[key] = inner = dict(damaged[key])
            holders.append(inner)
            if type(inner.get("answer_type")) is dict:
                inner["answer_type"] = dict(inner["answer_type"])
                holders.append(inner["answer_type"])
    target = data.draw(st.sampled_from(holders))
    key = data.draw(st.sampled_from([*target, "id", "text", "type", "name", "schema", "author"]))
    if data.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = data.draw(json_values(max_leaves=3))
    return damaged


@given(st.data())
def test_any_payload_reads_as_a_record_of_its_kind_or_is_refused_with_a_wire_error(
    data: st.DataObject,
) -> None:
    """Damaged or not, a payload is read as its kind's record, or refused: nothing else escapes."""
    event = data.draw(events())
    kind = EVENT_KINDS[type(event)]
    payload = through_json(unstructure_event(event))
    if data.draw(st.booleans()):
        payload = _damage(data, payload)
    refused: WireError | None = None
    try:
        read = structure_event(kind, payload)
    except WireError as error:
        refused = error
    if refused is not None:
        assert str(refused)  # it says why
        return
    assert read is not None
    assert EVENT_KINDS[type(read)] == kind
    # What was read is a record, validated: it writes and reads back the same.
    assert round_trip(read) == read
