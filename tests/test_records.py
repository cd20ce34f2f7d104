"""Records: what can be constructed, and what is refused (RecordError, no echo)."""

from __future__ import annotations

from typing import Any

import pytest
from test_json_values import cyclic_dict, cyclic_list, wide_cycle

from coordinator import EventEntry
from coordinator.stream import (
    Compaction,
    ConfigDelta,
    EventOverlay,
    OverlayPatch,
    Timestamp,
    UnknownEntry,
)
from machines import (
    Answered,
    AnswerKind,
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    RecordError,
    Redacted,
    SecretValue,
    SelectOption,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    UnknownCancellationReason,
    parse_cancellation_reason,
)
from machines.validators import is_json

SENTINEL = "hunter2-do-not-echo"
STAMP = Timestamp("2026-03-05 19:31:45.7")
QUESTION = InquiryQuestion(text="Apply?", answer_type=AnswerType.boolean())


# ------------------------------------------------------------------ sources


@pytest.mark.parametrize(
    ("source", "kind", "name"),
    [
        (InquirySource.tool("fs_modify_file"), SourceKind.TOOL, "fs_modify_file"),
        (InquirySource.assistant(), SourceKind.ASSISTANT, None),
        (InquirySource.user(), SourceKind.USER, None),
        (InquirySource.other("scheduler"), SourceKind.OTHER, "scheduler"),
    ],
)
def test_each_inquiry_source_holds_its_kind_and_name(
    source: InquirySource, kind: SourceKind, name: str | None
) -> None:
    """The four sources construct, tool and other with a name, the rest without."""
    assert (source.kind, source.name) == (kind, name)


@pytest.mark.parametrize("kind", [SourceKind.TOOL, SourceKind.OTHER])
@pytest.mark.parametrize("name", [None, ""])
def test_named_sources_need_a_name(kind: SourceKind, name: str | None) -> None:
    """A tool or other source without a (non-empty) name cannot exist."""
    with pytest.raises(RecordError, match=r"InquirySource\.name"):
        InquirySource(kind=kind, name=name)


@pytest.mark.parametrize("kind", [SourceKind.ASSISTANT, SourceKind.USER])
def test_unnamed_sources_refuse_a_name(kind: SourceKind) -> None:
    """The assistant and the user are not named."""
    with pytest.raises(RecordError, match="has no name"):
        InquirySource(kind=kind, name="someone")


def test_source_kinds_are_exactly_the_four_wire_tags() -> None:
    """InquirySource is tool, assistant, user or other, nothing else."""
    assert {kind.value for kind in SourceKind} == {"tool", "assistant", "user", "other"}


# ------------------------------------------------------------- answer types


def test_answer_kinds_are_the_four_wire_tags_and_the_form() -> None:
    """AnswerType is Boolean, Select, Text or Secret (JP's tags), or a form (recorded as text)."""
    assert {kind.value for kind in AnswerKind} == {"boolean", "select", "text", "secret", "form"}


def test_select_options_accept_strings_and_option_objects() -> None:
    """Options given as strings become options without a description, in order."""
    answer_type = AnswerType.select(["a", SelectOption(value="b", description="Bee")])
    assert answer_type.options == (
        SelectOption(value="a"),
        SelectOption(value="b", description="Bee"),
    )
    assert answer_type.option_values == ("a", "b")


def test_select_options_refuse_a_bare_string() -> None:
    """A string is not split into one option per letter."""
    with pytest.raises(RecordError, match="not a string"):
        AnswerType.select("abc")


@pytest.mark.parametrize("kind", [AnswerKind.BOOLEAN, AnswerKind.TEXT, AnswerKind.SECRET])
def test_only_selects_have_options(kind: AnswerKind) -> None:
    """Options on a boolean, text or secret answer type are refused."""
    with pytest.raises(RecordError, match="has no options"):
        AnswerType(kind=kind, options=["a"])


@pytest.mark.parametrize(
    ("answer_type", "good", "bad"),
    [
        (AnswerType.boolean(), [True, False], ["yes", 1, None]),
        (AnswerType.select(["a", "b"]), ["a", "b"], ["c", True, None]),
        (AnswerType.text(), ["", "anything"], [1, None, True]),
        (AnswerType.secret(), ["pw", SecretValue("pw")], [1, None]),
    ],
)
def test_answer_type_accepts_exactly_its_answers(
    answer_type: AnswerType, good: list[object], bad: list[object]
) -> None:
    """Each answer type accepts its own kind of value and nothing else."""
    assert all(answer_type.accepts(value) for value in good)
    assert not any(answer_type.accepts(value) for value in bad)


def test_only_secret_answer_types_are_secret() -> None:
    """is_secret is true for the secret answer type alone."""
    assert [t.is_secret for t in (AnswerType.boolean(), AnswerType.text())] == [False, False]
    assert [AnswerType.select(["a"]).is_secret, AnswerType.secret().is_secret] == [False, True]


# ---------------------------------------------------------------- questions


def test_question_constructors_set_the_answer_type() -> None:
    """Each tool-facing constructor builds its answer type, context and default."""
    assert Question.boolean("ok", "OK?", default=True, context="diff").answer_type == (
        AnswerType.boolean()
    )
    assert Question.select("pick", "Which?", ["a"]).answer_type == AnswerType.select(["a"])
    assert Question.text_input("name", "Name?").answer_type == AnswerType.text()
    secret = Question.secret("pw", "Passphrase?", context="ssh")
    assert (secret.answer_type, secret.context, secret.default) == (
        AnswerType.secret(),
        "ssh",
        None,
    )


def test_a_select_question_needs_options() -> None:
    """A select question nobody could answer cannot exist."""
    with pytest.raises(RecordError, match="has no options"):
        Question.select("pick", "Which?", [])


def test_a_secret_question_may_have_a_default_its_repr_hides() -> None:
    """RFD 082 propagates a default whatever the answer type: kept, and never in a repr."""
    asked = Question(id="pw", text="Passphrase?", answer_type=AnswerType.secret(), default="x-9")
    assert asked.default == "x-9"
    assert "x-9" not in repr(asked)
    assert "default=<redacted>" in repr(asked)
    assert InquiryQuestion.from_question(asked).default == "x-9"
    plain = Question.boolean("go", "Go?", default=True)
    assert repr(plain) == (
        "Question(id='go', text='Go?', answer_type=AnswerType(kind=<AnswerKind.BOOLEAN: "
        "'boolean'>, options=(), form=None), context=None, default=True, exclusive=False, "
        "persistence=<AnswerReusePolicy.TURN: 'turn'>)"
    )


@pytest.mark.parametrize(
    ("answer_type", "default", "offered"),
    [
        (AnswerType.secret(), 4711, None),
        (AnswerType.secret(), "x-9", None),
        (AnswerType.boolean(), "yes", None),
        (AnswerType.boolean(), False, False),
        (AnswerType.select(["a", "b"]), "c", None),
        (AnswerType.select(["a", "b"]), "b", "b"),
        (AnswerType.text(), {"k": [1]}, None),
        (AnswerType.text(), "", ""),
        (AnswerType.text(), None, None),
    ],
)
def test_a_questions_default_is_kept_verbatim_and_offered_only_when_it_answers(
    answer_type: AnswerType, default: Any, offered: Any
) -> None:
    """RFD 082: any JSON default is kept and recorded as given; a prompt offers only an answer."""
    asked = Question(id="q", text="Q?", answer_type=answer_type, default=default)
    assert asked.default == default
    assert asked.offered_default == offered
    assert type(asked.offered_default) is type(offered)
    assert InquiryQuestion.from_question(asked).default == default


def test_a_recorded_secret_default_is_hidden_from_repr() -> None:
    """A file may record one (reading is lenient); the record's repr does not show it."""
    secret = InquiryQuestion(text="Token?", answer_type=AnswerType.secret(), default="hunter2")
    assert "hunter2" not in repr(secret)
    assert "default=<redacted>" in repr(secret)
    plain = InquiryQuestion(text="Go?", answer_type=AnswerType.boolean(), default=True)
    assert repr(plain) == (
        "InquiryQuestion(text='Go?', answer_type=AnswerType(kind=<AnswerKind.BOOLEAN: "
        "'boolean'>, options=(), form=None), default=True, id=None, context=None, exclusive=None, "
        "persistence=None)"
    )


def test_a_question_id_must_not_be_empty() -> None:
    """Answers come back keyed by the question id, so it cannot be empty."""
    with pytest.raises(RecordError, match=r"Question\.id must not be empty"):
        Question.text_input("", "Name?")


def test_a_recorded_question_keeps_what_the_tool_asked() -> None:
    """from_question copies text, answer type, default, question id and preamble."""
    question = Question.select("pick", "Which?", ["a", "b"], default="b", context="pre")
    assert InquiryQuestion.from_question(question) == InquiryQuestion(
        text="Which?",
        answer_type=AnswerType.select(["a", "b"]),
        default="b",
        id="pick",
        context="pre",
    )


def test_a_recorded_question_keeps_the_secret_answer_type() -> None:
    """A secret question is recorded as secret."""
    recorded = InquiryQuestion.from_question(Question.secret("pw", "Passphrase?"))
    assert recorded.answer_type.is_secret


def test_a_recorded_question_may_have_a_default_that_does_not_fit() -> None:
    """Recorded questions come from other writers, so their default is not checked."""
    recorded = InquiryQuestion(text="Go?", answer_type=AnswerType.boolean(), default="maybe")
    assert recorded.default == "maybe"


# -------------------------------------------------------------- responses


def test_cancellation_reasons_are_the_known_wire_tags() -> None:
    """as_str gives each known reason's wire tag."""
    assert [reason.as_str() for reason in CancellationReason] == [
        "user",
        "backend_error",
        "no_prompt_backend",
        "assistant_routing_denied",
        "invalid_static_answer",
        "attempts_exhausted",
        "interrupted",
        "withdrawn",
        "discarded",
        "timed_out",
        "invalid_answers_file_entry",
    ]


@pytest.mark.parametrize("reason", list(CancellationReason))
def test_known_tags_parse_to_known_reasons(reason: CancellationReason) -> None:
    """Reading a known tag gives the known reason."""
    assert parse_cancellation_reason(reason.as_str()) is reason


def test_unknown_tags_parse_to_unknown_reasons_kept_verbatim() -> None:
    """A tag from a newer writer is kept as it was read, and written back so."""
    reason = parse_cancellation_reason("some_future_variant")
    assert reason == UnknownCancellationReason("some_future_variant")
    assert reason.as_str() == "some_future_variant"


@pytest.mark.parametrize("tag", ["user", "backend_error", 5])
def test_an_unknown_reason_cannot_carry_a_known_tag(tag: str) -> None:
    """Unknown(tag) is only for strings this build does not know as tags."""
    with pytest.raises(RecordError):
        UnknownCancellationReason(tag)


def test_the_empty_tag_is_an_unknown_reason() -> None:
    """RFD 082 lands every tag it does not know in Unknown(tag): "" as well."""
    assert parse_cancellation_reason("") == UnknownCancellationReason("")


def test_redacted_has_no_answer() -> None:
    """A redacted response holds an id and nothing that could be an answer."""
    response = Redacted(id="call_1.pw.1")
    assert not hasattr(response, "answer")
    assert not hasattr(response, "reason")


def test_answered_refuses_a_secret_value() -> None:
    """A SecretValue is not JSON, so it cannot be recorded as an answer."""
    with pytest.raises(RecordError, match=r"Answered\.answer must be a JSON value"):
        Answered(id="x", answer=SecretValue(SENTINEL))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "answer", [float("nan"), float("inf"), {1: "a"}, (1, 2), {"a": {"b": {1, 2}}}]
)
def test_answers_must_be_json_that_round_trips(answer: object) -> None:
    """NaN, infinities, non-string keys, tuples and sets are not JSON answers."""
    with pytest.raises(RecordError, match="must be a JSON value"):
        Answered(id="x", answer=answer)  # type: ignore[arg-type]


# ------------------------------------------------------------------ events


def test_a_chat_response_is_one_of_three_kinds() -> None:
    """Message and reasoning hold text; data holds any JSON value."""
    assert {kind.value for kind in ChatResponseKind} == {"message", "reasoning", "data"}
    assert ChatResponse.data({"a": [1, None]}).content == {"a": [1, None]}
    with pytest.raises(RecordError, match=r"ChatResponse\.content must be a string"):
        ChatResponse.message({"a": 1})  # type: ignore[arg-type]


def test_tool_call_arguments_must_be_an_object() -> None:
    """Arguments are a JSON object."""
    with pytest.raises(RecordError, match=r"ToolCallRequest\.arguments must be an object"):
        ToolCallRequest(id="c", name="t", arguments=[1])  # type: ignore[arg-type]


def test_turn_starts_are_all_equal() -> None:
    """A turn marker carries nothing."""
    assert TurnStart() == TurnStart()


# ------------------------------------------------------------------ entries


def test_a_flattened_config_delta_cannot_hold_envelope_keys() -> None:
    """Flattened keys sharing the entry's object would be read back as its envelope."""
    with pytest.raises(RecordError, match="envelope keys"):
        ConfigDelta(event_id="a", timestamp=STAMP, delta={"type": "x"}, flattened=True)
    nested = ConfigDelta(event_id="a", timestamp=STAMP, delta={"type": "x"})
    assert nested.delta == {"type": "x"}


@pytest.mark.parametrize(
    "raw",
    [
        {"no_type": 1},
        {"type": 5},
        {"type": "chat_request", "content": "hi"},
        {"type": "config_delta", "delta": {}},
    ],
)
def test_an_unknown_entry_must_be_of_an_unknown_kind(raw: dict[str, Any]) -> None:
    """An unknown entry has a string type this build does not decode."""
    with pytest.raises(RecordError, match=r"UnknownEntry\.raw"):
        UnknownEntry(raw)


def test_an_unknown_entry_shows_its_kind_not_its_contents() -> None:
    """Its repr names the kind and id; the contents are not ours to show."""
    entry = UnknownEntry({"event_id": "abc", "type": "future", "secret": SENTINEL})
    assert repr(entry) == "UnknownEntry(kind='future', event_id='abc')"


# -------------------------------------------------- invalid: no echo, field named

BAD = [SENTINEL]  # a wrong type that carries the sentinel
EVENT = {"event_id": "a", "timestamp": STAMP}

INVALID: list[tuple[str, type, dict[str, Any]]] = [
    (
        "ToolCallResponse.is_error",
        ToolCallResponse,
        {"id": "c", "content": "", "is_error": SENTINEL},
    ),
    ("ToolCallResponse.content", ToolCallResponse, {"id": "c", "content": BAD, "is_error": False}),
    (
        "ToolCallRequest.arguments",
        ToolCallRequest,
        {"id": "c", "name": "t", "arguments": {"a": {SENTINEL}}},
    ),
    ("ToolCallRequest.name", ToolCallRequest, {"id": "c", "name": BAD, "arguments": {}}),
    ("ChatRequest.content", ChatRequest, {"content": BAD}),
    ("ChatRequest.schema", ChatRequest, {"content": "", "schema": BAD}),
    ("ChatResponse.kind", ChatResponse, {"kind": SENTINEL, "content": ""}),
    ("Question.answer_type", Question, {"id": "q", "text": "", "answer_type": SENTINEL}),
    ("Question.text", Question, {"id": "q", "text": BAD, "answer_type": AnswerType.text()}),
    (
        "Question.default",
        Question,
        {"id": "q", "text": "", "answer_type": AnswerType.boolean(), "default": {SENTINEL}},
    ),
    ("InquiryQuestion.answer_type", InquiryQuestion, {"text": "", "answer_type": SENTINEL}),
    (
        "InquiryQuestion.default",
        InquiryQuestion,
        {"text": "", "answer_type": AnswerType.text(), "default": {SENTINEL}},
    ),
    ("AnswerType.kind", AnswerType, {"kind": SENTINEL}),
    ("AnswerType.options", AnswerType, {"kind": AnswerKind.SELECT, "options": [BAD]}),
    ("SelectOption.value", SelectOption, {"value": BAD}),
    ("InquirySource.kind", InquirySource, {"kind": SENTINEL}),
    ("InquirySource.name", InquirySource, {"kind": SourceKind.TOOL, "name": BAD}),
    (
        "InquiryRequest.source",
        InquiryRequest,
        {"id": "x", "source": SENTINEL, "question": QUESTION},
    ),
    (
        "InquiryRequest.question",
        InquiryRequest,
        {"id": "x", "source": InquirySource.user(), "question": SENTINEL},
    ),
    ("Answered.answer", Answered, {"id": "x", "answer": {SENTINEL}}),
    ("Answered.id", Answered, {"id": BAD, "answer": 1}),
    ("Cancelled.reason", Cancelled, {"id": "x", "reason": SENTINEL}),
    ("Redacted.id", Redacted, {"id": BAD}),
    ("EventEntry.payload", EventEntry, {**EVENT, "payload": SENTINEL}),
    ("EventEntry.timestamp", EventEntry, {**EVENT, "timestamp": SENTINEL, "payload": TurnStart()}),
    ("EventEntry.metadata", EventEntry, {**EVENT, "payload": TurnStart(), "metadata": BAD}),
    ("ConfigDelta.delta", ConfigDelta, {**EVENT, "delta": BAD}),
    ("ConfigDelta.flattened", ConfigDelta, {**EVENT, "delta": {}, "flattened": SENTINEL}),
    ("Compaction.from_turn", Compaction, {**EVENT, "from_turn": SENTINEL, "to_turn": 1}),
    (
        "Compaction.summary",
        Compaction,
        {**EVENT, "from_turn": 0, "to_turn": 1, "summary": {SENTINEL}},
    ),
    (
        "EventEntry.request_id",
        EventEntry,
        {**EVENT, "payload": ChatResponse.message("x"), "request_id": BAD},
    ),
    ("ConfigDelta.unsets", ConfigDelta, {**EVENT, "unsets": BAD}),
    ("EventOverlay.patches", EventOverlay, {**EVENT, "patches": BAD}),
    ("OverlayPatch.value", OverlayPatch, {"key": "k", "value": BAD, "remove": "k"}),
]


@pytest.mark.parametrize(
    ("field", "record", "fields"), INVALID, ids=[field for field, _, _ in INVALID]
)
def test_an_invalid_record_is_refused_naming_the_field_not_the_value(
    field: str, record: type, fields: dict[str, Any]
) -> None:
    """Construction raises RecordError naming the field, and never shows the bad value."""
    with pytest.raises(RecordError) as caught:
        record(**fields)
    message = str(caught.value)
    assert field in message
    assert SENTINEL not in message
    assert SENTINEL not in repr(caught.value)


# ------------------------------------------------------------------ JSON values


@pytest.mark.parametrize("value", [cyclic_list(), cyclic_dict(), wide_cycle()])
def test_a_value_that_contains_itself_is_not_json(value: object) -> None:
    """A record refuses a cyclic value (JSON cannot write it) instead of looking for ever."""
    assert not is_json(value)
    with pytest.raises(RecordError, match=r"Answered\.answer must be a JSON value"):
        Answered(id="call_1.apply.1", answer=value)  # type: ignore[arg-type]
    with pytest.raises(RecordError, match=r"ToolCallRequest\.arguments"):
        ToolCallRequest(id="call_1", name="fs", arguments={"patch": value})  # type: ignore[dict-item]
