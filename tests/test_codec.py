"""The wire codec: exact shapes written, current and legacy shapes read, refusals worded.

Payloads are read and written as they are stored: a tool call's arguments and a
tool response's content in base64 (see tests/test_storage_fields.py).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from coordinator.stream import EVENT_KINDS
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
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    Redacted,
    SelectOption,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

BOOLEAN_QUESTION = InquiryQuestion(
    text="Do you want to apply the following patch?",
    answer_type=AnswerType.boolean(),
    default=True,
)

# Each event, its wire type, and its exact payload keys in on-disk order.
SHAPES: list[tuple[Event, str, dict[str, Any]]] = [
    (TurnStart(), "turn_start", {}),
    (ChatRequest(content="hi"), "chat_request", {"content": "hi"}),
    (
        ChatRequest(content="hi", schema={"type": "object"}, author="ana"),
        "chat_request",
        {"content": "hi", "schema": {"type": "object"}, "author": "ana"},
    ),
    (ChatResponse.message("hello"), "chat_response", {"message": "hello"}),
    (ChatResponse.reasoning("hmm"), "chat_response", {"reasoning": "hmm"}),
    (ChatResponse.data({"answer": 42}), "chat_response", {"data": {"answer": 42}}),
    (
        ToolCallRequest(id="toolu_01", name="fs_read_file", arguments={"path": "a.txt"}),
        "tool_call_request",
        {"id": "toolu_01", "name": "fs_read_file", "arguments": {"path": "YS50eHQ="}},
    ),
    (
        ToolCallResponse(id="toolu_01", content="done", is_error=False),
        "tool_call_response",
        {"id": "toolu_01", "content": "ZG9uZQ==", "is_error": False},
    ),
    (
        InquiryRequest(
            id="toolu_01YZ.apply_changes",
            source=InquirySource.tool("fs_modify_file"),
            question=BOOLEAN_QUESTION,
        ),
        "inquiry_request",
        {
            "id": "toolu_01YZ.apply_changes",
            "source": {"source": "tool", "name": "fs_modify_file"},
            "question": {
                "text": "Do you want to apply the following patch?",
                "answer_type": {"type": "boolean"},
                "default": True,
            },
        },
    ),
    (
        Answered(id="call_1.confirm.1", answer=True),
        "inquiry_response",
        {"outcome": "answered", "id": "call_1.confirm.1", "answer": True},
    ),
    (
        Cancelled(id="call_1.confirm.1", reason=CancellationReason.USER),
        "inquiry_response",
        {"outcome": "cancelled", "id": "call_1.confirm.1", "reason": "user"},
    ),
    (
        Redacted(id="call_1.passphrase.1"),
        "inquiry_response",
        {"outcome": "redacted", "id": "call_1.passphrase.1"},
    ),
]


@pytest.mark.parametrize(("event", "kind", "wire"), SHAPES)
def test_each_event_is_written_in_its_exact_shape(
    event: Event, kind: str, wire: dict[str, Any]
) -> None:
    """unstructure_event writes exactly the payload keys, in on-disk order."""
    written = unstructure_event(event)
    assert written == wire
    assert list(written) == list(wire)
    assert EVENT_KINDS[type(event)] == kind


@pytest.mark.parametrize(("event", "kind", "wire"), SHAPES)
def test_each_event_reads_back_from_its_shape(
    event: Event, kind: str, wire: dict[str, Any]
) -> None:
    """structure_event reads the written shape back into an equal record."""
    assert structure_event(kind, wire) == event


def test_the_seven_event_kinds_are_the_wire_tags() -> None:
    """Conversation events are exactly the seven kinds of the wire format."""
    assert set(EVENT_KINDS.values()) == {
        "turn_start",
        "chat_request",
        "chat_response",
        "tool_call_request",
        "tool_call_response",
        "inquiry_request",
        "inquiry_response",
    }


@pytest.mark.parametrize("kind", ["config_delta", "compaction", "future_kind"])
def test_non_events_are_not_decoded_as_events(kind: str) -> None:
    """structure_event returns None for anything that is not a conversation event."""
    assert structure_event(kind, {"type": kind}) is None


def test_envelope_and_newer_keys_are_ignored_when_reading() -> None:
    """Keys of the envelope or from a newer writer do not disturb the payload."""
    data = {
        "timestamp": "2026-03-05 19:31:45.7",
        "type": "tool_call_response",
        "id": "c",
        "content": "ok",
        "is_error": True,
        "metadata": {"a": 1},
        "added_by_a_newer_writer": [1, 2],
    }
    assert structure_event("tool_call_response", data) == ToolCallResponse(
        id="c", content="ok", is_error=True
    )


# ------------------------------------------------------------------ sources


@pytest.mark.parametrize(
    ("source", "wire"),
    [
        (InquirySource.tool("fs_modify_file"), {"source": "tool", "name": "fs_modify_file"}),
        (InquirySource.assistant(), {"source": "assistant"}),
        (InquirySource.user(), {"source": "user"}),
        (InquirySource.other("cron"), {"source": "other", "name": "cron"}),
    ],
)
def test_each_source_has_its_wire_shape(source: InquirySource, wire: dict[str, str]) -> None:
    """The four sources are written and read as {"source": tag, "name"?}."""
    request = InquiryRequest(id="q", source=source, question=BOOLEAN_QUESTION)
    payload = unstructure_event(request)
    assert payload["source"] == wire
    assert structure_event("inquiry_request", payload) == request


# ------------------------------------------------------- recorded questions


def test_recorded_select_options_are_objects_with_optional_description() -> None:
    """A recorded select writes {value, description?} for every option."""
    question = InquiryQuestion(
        text="Which?",
        answer_type=AnswerType.select(["a", SelectOption(value="b", description="Bee")]),
    )
    payload = unstructure_event(
        InquiryRequest(id="q", source=InquirySource.user(), question=question)
    )
    assert payload["question"] == {
        "text": "Which?",
        "answer_type": {
            "type": "select",
            "options": [{"value": "a"}, {"value": "b", "description": "Bee"}],
        },
    }


def test_recorded_select_options_are_read_as_bare_strings_too() -> None:
    """Bare-string options read as options without a description."""
    payload = {
        "id": "q",
        "source": {"source": "user"},
        "question": {"text": "?", "answer_type": {"type": "select", "options": ["a", "b"]}},
    }
    read = structure_event("inquiry_request", payload)
    assert isinstance(read, InquiryRequest)
    assert read.question.answer_type == AnswerType.select(["a", "b"])


@pytest.mark.parametrize(
    ("answer_type", "wire"),
    [
        (AnswerType.boolean(), {"type": "boolean"}),
        (AnswerType.text(), {"type": "text"}),
        (AnswerType.secret(), {"type": "secret"}),
    ],
)
def test_recorded_answer_types_are_tagged(answer_type: AnswerType, wire: dict[str, str]) -> None:
    """Boolean, text and secret answer types are written {"type": tag}."""
    question = InquiryQuestion(text="?", answer_type=answer_type)
    payload = unstructure_event(
        InquiryRequest(id="q", source=InquirySource.user(), question=question)
    )
    assert payload["question"]["answer_type"] == wire


def test_recorded_question_id_and_context_are_written_when_set() -> None:
    """New writes add the tool's question id and preamble; absent ones are omitted."""
    with_both = InquiryQuestion.from_question(
        Question.boolean("apply_changes", "Apply?", context="--- a\n+++ b")
    )
    payload = unstructure_event(
        InquiryRequest(id="c.apply_changes.1", source=InquirySource.tool("t"), question=with_both)
    )
    assert payload["question"] == {
        "text": "Apply?",
        "answer_type": {"type": "boolean"},
        "id": "apply_changes",
        "context": "--- a\n+++ b",
    }
    bare = unstructure_event(
        InquiryRequest(
            id="q",
            source=InquirySource.user(),
            question=InquiryQuestion(text="?", answer_type=AnswerType.text()),
        )
    )
    assert bare["question"] == {"text": "?", "answer_type": {"type": "text"}}


# ------------------------------------------------------- tool-facing questions


@pytest.mark.parametrize(
    ("question", "answer_type"),
    [
        (Question.boolean("ok", "OK?", default=True), {"type": "boolean"}),
        (Question.text_input("name", "Name?"), {"type": "text"}),
        (Question.secret("pw", "Passphrase?"), {"type": "secret"}),
        (Question.select("pick", "Which?", ["a", "b"]), {"type": "select", "options": ["a", "b"]}),
    ],
)
def test_tool_facing_questions_are_written_tagged(
    question: Question, answer_type: dict[str, Any]
) -> None:
    """The tool-facing question writes all five keys, its answer type tagged."""
    written = unstructure_question(question)
    assert list(written) == ["id", "text", "pre_amble", "answer_type", "default"]
    assert written["answer_type"] == answer_type
    assert structure_question(written) == question


def test_tool_facing_question_keeps_its_preamble_and_default() -> None:
    """The preamble is called pre_amble on the wire; absent values are null."""
    question = Question.select("pick", "Which?", ["a", "b"], default="b", context="pre")
    assert unstructure_question(question) == {
        "id": "pick",
        "text": "Which?",
        "pre_amble": "pre",
        "answer_type": {"type": "select", "options": ["a", "b"]},
        "default": "b",
    }
    assert unstructure_question(Question.text_input("n", "N?"))["pre_amble"] is None


def test_tool_facing_options_with_descriptions_are_written_as_objects() -> None:
    """An option with a description cannot be a bare string."""
    question = Question.select("pick", "?", [SelectOption(value="a", description="Ay")])
    written = unstructure_question(question)
    assert written["answer_type"]["options"] == [{"value": "a", "description": "Ay"}]
    assert structure_question(written) == question


@pytest.mark.parametrize(
    ("answer_type", "default"),
    [
        ("Boolean", "yes"),
        ({"type": "secret"}, 1234),
        ({"type": "select", "options": ["a"]}, ["a"]),
        ({"type": "text"}, {"k": None}),
    ],
)
def test_a_tool_questions_default_reads_and_writes_verbatim(
    answer_type: Any, default: Any
) -> None:
    """RFD 082: the default is kept whatever the answer type, and written back as it was."""
    read = structure_question(
        {"id": "q", "text": "?", "answer_type": answer_type, "default": default}
    )
    assert read.default == default
    assert type(read.default) is type(default)
    assert unstructure_question(read)["default"] == default


@pytest.mark.parametrize(
    ("legacy", "expected"),
    [
        ("Boolean", AnswerType.boolean()),
        ("Text", AnswerType.text()),
        ("Secret", AnswerType.secret()),
        ({"Select": {"options": ["a", "b"]}}, AnswerType.select(["a", "b"])),
        ({"type": "boolean"}, AnswerType.boolean()),
        ({"type": "text"}, AnswerType.text()),
        ({"type": "secret"}, AnswerType.secret()),
        ({"type": "select", "options": ["a", "b"]}, AnswerType.select(["a", "b"])),
    ],
)
def test_tool_facing_answer_types_are_read_in_both_forms(
    legacy: Any, expected: AnswerType
) -> None:
    """The legacy externally tagged and the tagged answer types both read."""
    wire = {"id": "q", "text": "?", "pre_amble": None, "answer_type": legacy, "default": None}
    assert structure_question(wire).answer_type == expected


def test_a_local_tool_question_reads_without_optional_keys() -> None:
    """A tool may leave out pre_amble and default."""
    read = structure_question(
        {"id": "pw", "text": "Passphrase?", "answer_type": {"type": "secret"}}
    )
    assert read == Question.secret("pw", "Passphrase?")


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ({"id": "q", "text": "?", "answer_type": "Select"}, "unknown answer type 'Select'"),
        ({"id": "q", "text": "?", "answer_type": "Maybe"}, "unknown answer type 'Maybe'"),
        ({"id": "q", "text": "?", "answer_type": {"type": "maybe"}}, "unknown answer type"),
        ({"id": "q", "text": "?", "answer_type": {"type": "select"}}, "'options' array"),
        ({"id": "q", "text": "?", "answer_type": {"Select": {}}}, "'options' array"),
        ({"id": "q", "text": "?", "answer_type": {}}, "answer_type has no 'type'"),
        ({"id": "", "text": "?", "answer_type": "Text"}, "Question.id must not be empty"),
        ({"text": "?", "answer_type": "Text"}, "^'id' is missing$"),
        ({"id": "q", "answer_type": "Text"}, "^'text' is missing$"),
        ({"id": "q", "text": "?"}, "^'answer_type' is missing$"),
        (
            {"id": 5, "text": "?", "answer_type": "Text"},
            "^Question.id must be a non-empty string, not an integer$",
        ),
        (
            {"id": "q", "text": "?", "answer_type": "Text", "pre_amble": []},
            "^Question.context must be str, not an array$",
        ),
    ],
)
def test_malformed_tool_questions_are_refused(wire: dict[str, Any], problem: str) -> None:
    """A question the codec cannot read raises WireError saying what is wrong."""
    with pytest.raises(WireError, match=problem):
        structure_question(wire)


def test_a_tool_question_must_be_an_object() -> None:
    """A question that is not an object is refused."""
    with pytest.raises(WireError, match="question must be an object, got an array"):
        structure_question(["q"])


# ------------------------------------------------------------ broken events


@pytest.mark.parametrize(
    ("kind", "payload", "problem"),
    [
        ("tool_call_response", {"id": "c", "content": "x", "is_error": "yes"}, "is_error"),
        ("tool_call_response", {"id": "c", "content": 5, "is_error": False}, "content"),
        ("tool_call_request", {"id": "c", "name": "n", "arguments": []}, "arguments"),
        ("tool_call_request", {"id": "c", "name": "n"}, "^'arguments' is missing$"),
        ("tool_call_request", {"name": "n", "arguments": {}}, "^'id' is missing$"),
        ("tool_call_request", {"id": 5, "name": "n", "arguments": {}}, "ToolCallRequest.id"),
        ("tool_call_response", {"id": "c", "content": "x"}, "^'is_error' is missing$"),
        ("chat_request", {}, "^'content' is missing$"),
        ("chat_request", {"content": "x", "schema": [1]}, "ChatRequest.schema must be an object"),
        ("tool_call_request", {"id": "", "name": "n", "arguments": {}}, "must not be empty"),
        ("chat_request", {"content": 5}, "content"),
        ("chat_response", {"message": "a", "reasoning": "b"}, "exactly one of"),
        ("chat_response", {}, "exactly one of"),
        ("chat_response", {"message": 5}, "ChatResponse.content must be a string"),
        ("inquiry_request", {"id": "q", "source": {"source": "robot"}}, "unknown inquiry source"),
        ("inquiry_request", {"id": "q", "source": {"source": ["tool"]}}, "unknown inquiry source"),
        (
            "inquiry_request",
            {"id": "q", "source": {"source": "tool", "name": ""}, "question": {}},
            "InquirySource.name must not be empty",
        ),
        (
            "inquiry_request",
            {
                "id": "q",
                "source": {"source": "user"},
                "question": {"text": "?", "answer_type": {"type": ["text"]}},
            },
            r"unknown answer type \['text'\]",
        ),
        (
            "inquiry_request",
            {"id": "q", "source": {"source": "tool"}, "question": {}},
            "InquirySource.name",
        ),
        (
            "inquiry_request",
            {"id": "q", "source": {"source": "user"}, "question": {"answer_type": "Text"}},
            "^'question.text' is missing$",
        ),
        ("inquiry_request", {"id": "q", "source": {"source": "user"}}, "^'question' is missing$"),
        (
            "inquiry_request",
            {"id": "q", "source": {"source": "user"}, "question": {"text": "?"}},
            "^'question.answer_type' is missing$",
        ),
        (
            "inquiry_request",
            {"id": "q", "source": {"source": "user"}, "question": ["?"]},
            "^question must be an object, got an array$",
        ),
        (
            "inquiry_response",
            {"outcome": "cancelled", "id": "q", "reason": 5},
            "^reason must be a string, got an integer$",
        ),
        ("inquiry_response", {"outcome": "answered", "id": "q"}, "has no 'answer'"),
        ("inquiry_response", {"outcome": "redacted"}, "^Redacted.id must be a non-empty string"),
        ("inquiry_response", {"id": "q"}, "neither an 'outcome' nor an 'answer'"),
        ("inquiry_response", {"outcome": "deferred", "id": "q"}, "unknown inquiry_response"),
    ],
)
def test_broken_payloads_raise_a_wire_error_saying_what_is_wrong(
    kind: str, payload: dict[str, Any], problem: str
) -> None:
    """A known kind with a broken payload is refused, naming the problem."""
    with pytest.raises(WireError, match=problem):
        structure_event(kind, payload)


def test_wire_errors_do_not_echo_the_answer() -> None:
    """A response that cannot be read does not repeat its answer in the error."""
    with pytest.raises(WireError) as caught:
        structure_event("inquiry_response", {"id": "", "answer": "hunter2"})
    assert "hunter2" not in str(caught.value)


def test_options_beside_an_answer_type_that_has_none_are_ignored() -> None:
    """A recorded ``text`` question with stray ``options`` reads as a plain text question."""
    payload = {
        "id": "q",
        "source": {"source": "user"},
        "question": {"text": "?", "answer_type": {"type": "text", "options": ["a"]}},
    }
    read = structure_event("inquiry_request", payload)
    assert isinstance(read, InquiryRequest)
    assert read.question.answer_type == AnswerType.text()


def _read_request(question: dict[str, Any], request_id: str = "q") -> InquiryRequest:
    payload = {"id": request_id, "source": {"source": "tool", "name": "t"}, "question": question}
    read = structure_event("inquiry_request", payload)
    assert isinstance(read, InquiryRequest)
    return read


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"default": True}, {"default": 1}),
        ({"default": 0}, {"default": False}),
        ({"default": "1"}, {"default": 1}),
        ({"default": None}, {}),
        ({"id": "a"}, {"id": "b"}),
        ({"context": "x"}, {}),
        ({"answer_type": {"type": "text"}}, {"answer_type": {"type": "secret"}}),
    ],
)
def test_questions_alike_but_for_a_value_of_another_type_are_each_written_back_as_read(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    """Read one after the other, each question is its own: true stays true, 1 stays 1."""
    base = {"text": "Go?", "answer_type": {"type": "boolean"}}
    for fields in (one, other, one):
        read = _read_request(base | fields)
        written = unstructure_event(read)["question"]
        wire = base | fields
        expected = InquiryQuestion(
            text="Go?",
            answer_type=AnswerType(kind=AnswerKind(wire["answer_type"]["type"])),
            default=fields.get("default"),
            id=fields.get("id"),
            context=fields.get("context"),
        )
        assert read.question == expected
        assert type(read.question.default) is type(fields.get("default"))
        assert written.get("default") == fields.get("default")


def test_a_float_default_keeps_its_sign() -> None:
    """-0.0 equals 0.0, so questions with float defaults are never shared."""
    base = {"text": "How much?", "answer_type": {"type": "text"}}
    _read_request(base | {"default": 0.0})
    negative = _read_request(base | {"default": -0.0})
    assert math.copysign(1.0, negative.question.default) == -1.0  # type: ignore[arg-type]


def test_a_select_without_options_is_refused_every_time() -> None:
    """A refused question is not remembered as if it had been read."""
    for _ in range(2):
        with pytest.raises(WireError, match="needs an 'options' array"):
            _read_request({"text": "Pick?", "answer_type": {"type": "select"}})


def test_a_secret_question_is_never_shared() -> None:
    """A file may record a secret question with a default: no cache keeps it."""
    wire = {"text": "Token?", "answer_type": {"type": "secret"}, "default": "hunter2"}
    first, second = _read_request(dict(wire), "q1"), _read_request(dict(wire), "q2")
    assert first.question == second.question
    assert first.question is not second.question
