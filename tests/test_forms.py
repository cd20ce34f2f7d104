"""A form as an answer type: its fields, what fits them, its schema, and its record on disk."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import texts

from coordinator.stream import ConversationStream
from coordinator.wire import decode_stream, encode_stream
from machines import (
    DECLINE,
    Answered,
    AnswerKind,
    AnswerType,
    ChatRequest,
    FieldKind,
    Form,
    FormField,
    FormSchemaError,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    RecordError,
    SelectOption,
    TextFormat,
    ToolCallRequest,
)
from machines.wording import invalid_static_answer

#: A form of one field of each kind.
DEPLOY = Form(
    fields=(
        FormField(name="go", kind=FieldKind.BOOLEAN, required=True, description="Deploy now?"),
        FormField(
            name="env",
            kind=FieldKind.CHOICE,
            required=True,
            title="Environment",
            options=(SelectOption(value="dev", description="Development"), "prod"),
        ),
        FormField(name="tags", kind=FieldKind.CHOICES, options=("a", "b", "c"), max_items=2),
        FormField(name="replicas", kind=FieldKind.INTEGER, minimum=1, maximum=9, default=2),
        FormField(name="ratio", kind=FieldKind.NUMBER, minimum=0, maximum=1),
        FormField(name="mail", kind=FieldKind.TEXT, format=TextFormat.EMAIL, max_length=40),
    )
)


def test_a_fitting_answer_is_accepted_and_decline_always_is() -> None:
    """An object of the fields (optional ones left out) answers a form; so does 'decline'."""
    answer_type = AnswerType.form_of(DEPLOY)
    assert answer_type.kind is AnswerKind.FORM
    assert answer_type.accepts({"go": True, "env": "prod"})
    assert answer_type.accepts(
        {"go": False, "env": "dev", "tags": ["a"], "replicas": 9, "ratio": 0.5, "mail": "a@b.io"}
    )
    assert answer_type.accepts(DECLINE)
    assert not answer_type.is_secret


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"env": "prod"}, "field 'go' is required"),
        ({"go": "yes", "env": "prod"}, "field 'go' must be true or false"),
        ({"go": True, "env": "test"}, "field 'env' must be one of 'dev', 'prod'"),
        ({"go": True, "env": "dev", "x": 1}, "the form has no field 'x'"),
        ({"go": True, "env": "dev", "tags": ["a", "a"]}, "field 'tags' must be a list of"),
        ({"go": True, "env": "dev", "tags": ["a", "b", "c"]}, "(at most 2 values)"),
        ({"go": True, "env": "dev", "tags": "a"}, "field 'tags' must be a list of"),
        ({"go": True, "env": "dev", "replicas": 10}, "a whole number from 1 to 9"),
        ({"go": True, "env": "dev", "replicas": 2.0}, "a whole number from 1 to 9"),
        ({"go": True, "env": "dev", "replicas": True}, "a whole number from 1 to 9"),
        ({"go": True, "env": "dev", "ratio": 1.5}, "a number from 0 to 1"),
        ({"go": True, "env": "dev", "mail": "nope"}, "field 'mail' must be an email address"),
        ({"go": True, "env": "dev", "mail": "a" * 38 + "@b.io"}, "(at most 40 characters)"),
        ({"go": True, "env": "dev", "mail": None}, "is null: leave an optional field out"),
        (["go"], "a form's answer must be an object of its fields' values, or 'decline'"),
        ("no", "a form's answer must be an object"),
    ],
)
def test_an_answer_that_does_not_fit_says_which_field_and_rule(answer: Any, problem: str) -> None:
    """Each refusal names the field and the rule, never the value given."""
    said = AnswerType.form_of(DEPLOY).problem(answer)
    assert said is not None
    assert problem in said
    assert "nope" not in said
    assert "test" not in said


@pytest.mark.parametrize(
    ("text_format", "good", "bad"),
    [
        (TextFormat.EMAIL, "ada@example.com", "not an address"),
        (TextFormat.URI, "https://example.com/x", "no scheme"),
        (TextFormat.DATE, "2026-12-31", "31/12/2026"),
        (TextFormat.DATE_TIME, "2026-12-31T10:00:00+01:00", "2026-12-31T10:00:00"),
    ],
)
def test_text_formats_are_checked(text_format: TextFormat, good: str, bad: str) -> None:
    """The four formats MCP names: a value of the format fits, another does not."""
    field = FormField(name="f", kind=FieldKind.TEXT, format=text_format)
    assert field.problem(good) is None
    assert field.problem(bad) is not None


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"kind": FieldKind.CHOICE}, "offers no options"),
        ({"kind": FieldKind.CHOICE, "options": ("a", "a")}, "offers the same value twice"),
        ({"kind": FieldKind.TEXT, "options": ("a",)}, "it has no options"),
        ({"kind": FieldKind.TEXT, "minimum": 1}, "it has no minimum"),
        ({"kind": FieldKind.INTEGER, "max_length": 1}, "it has no max_length"),
        ({"kind": FieldKind.INTEGER, "minimum": 3, "maximum": 1}, "a minimum above its maximum"),
        ({"kind": FieldKind.NUMBER, "minimum": float("inf")}, "must be a finite number"),
        ({"kind": FieldKind.TEXT, "min_length": -1}, "a whole number of at least 0"),
    ],
)
def test_a_field_that_cannot_be_asked_cannot_exist(fields: dict[str, Any], problem: str) -> None:
    """Options only for choices (each once), bounds only on their kinds, low below high."""
    with pytest.raises(RecordError, match=problem):
        FormField(name="f", **fields)


def test_two_fields_of_one_name_are_no_form() -> None:
    """An answer's keys are the fields' names: each names one field."""
    field = FormField(name="f", kind=FieldKind.BOOLEAN)
    with pytest.raises(RecordError, match="two fields of the same name"):
        Form(fields=(field, field))


def test_a_form_answer_type_needs_its_form_and_no_other_has_one() -> None:
    """The form kind and a form go together: neither without the other."""
    with pytest.raises(RecordError, match="needs its form"):
        AnswerType(kind=AnswerKind.FORM)
    with pytest.raises(RecordError, match="a text answer type has no form"):
        AnswerType(kind=AnswerKind.TEXT, form=DEPLOY)


def test_a_form_questions_default_is_its_fields_defaults() -> None:
    """Question.form: the fields' defaults make the default when every required one has one."""
    assert Question.form("k", "Deploy?", DEPLOY).default is None  # 'go' has none
    ready = Form(
        fields=(
            FormField(name="go", kind=FieldKind.BOOLEAN, required=True, default=True),
            FormField(
                name="n", kind=FieldKind.INTEGER, default="two"
            ),  # does not fit: not offered
        )
    )
    question = Question.form("k", "Go?", ready)
    assert question.default == {"go": True}
    assert question.offered_default == {"go": True}


def test_the_schema_says_every_field_as_mcp_forms_do() -> None:
    """Booleans, titled choices as oneOf, choices as arrays, bounds, formats, required."""
    assert DEPLOY.json_schema() == {
        "type": "object",
        "properties": {
            "go": {"type": "boolean", "description": "Deploy now?"},
            "env": {
                "type": "string",
                "title": "Environment",
                "oneOf": [{"const": "dev", "title": "Development"}, {"const": "prod"}],
            },
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "maxItems": 2,
            },
            "replicas": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "mail": {"type": "string", "maxLength": 40, "format": "email"},
        },
        "required": ["go", "env"],
    }


def _fields() -> st.SearchStrategy[FormField]:
    options = st.lists(texts(max_size=6), min_size=1, max_size=4, unique=True).flatmap(
        lambda values: st.tuples(
            *(
                st.builds(SelectOption, value=st.just(v), description=st.none() | texts())
                for v in values
            )
        )
    )
    name = texts(min_size=1, max_size=8)
    common = {
        "name": name,
        "required": st.booleans(),
        "title": st.none() | texts(min_size=1),
        "description": st.none() | texts(min_size=1),
    }
    bound = st.none() | st.integers(-100, 100)
    return st.one_of(
        st.builds(
            FormField, kind=st.just(FieldKind.BOOLEAN), default=st.none() | st.booleans(), **common
        ),
        st.builds(FormField, kind=st.just(FieldKind.CHOICE), options=options, **common),
        st.builds(
            FormField,
            kind=st.just(FieldKind.CHOICES),
            options=options,
            max_items=st.none() | st.integers(5, 9),
            **common,
        ),
        st.builds(
            FormField,
            kind=st.just(FieldKind.TEXT),
            format=st.none() | st.sampled_from(TextFormat),
            max_length=st.none() | st.integers(0, 9),
            **common,
        ),
        st.builds(
            FormField,
            kind=st.sampled_from([FieldKind.INTEGER, FieldKind.NUMBER]),
            minimum=bound,
            maximum=st.none() | st.integers(101, 200),
            **common,
        ),
    )


def forms() -> st.SearchStrategy[Form]:
    """A form of up to four fields, their names distinct."""
    return st.lists(_fields(), max_size=4, unique_by=lambda field: field.name).map(
        lambda fields: Form(fields=tuple(fields))
    )


@given(forms())
def test_a_form_written_as_a_schema_reads_back_the_same_form(form: Form) -> None:
    """json_schema and from_json_schema are inverse: the record keeps the form whole."""
    assert Form.from_json_schema(form.json_schema()) == form
    assert Form.from_json_schema(orjson.loads(orjson.dumps(form.json_schema()))) == form


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"o": {"type": "object"}}}, "(object)"),
        ({"type": "object", "properties": {"l": {"type": "array"}}}, "(array)"),
        ({"type": "object", "properties": {"x": {}}}, "(no type)"),
        ({"type": "object", "properties": {"x": 1}}, "not described by a JSON object"),
        ({"type": "object", "properties": {"": {"type": "string"}}}, "a field without a name"),
        ({"type": "object", "properties": []}, "properties are not a JSON object"),
        ({"type": "object", "required": "x"}, "required is not a list"),
        ({"type": "array"}, "not of type object"),
        (None, "not a JSON object"),
    ],
)
def test_a_schema_that_is_no_forms_is_refused_naming_the_fault(schema: Any, problem: str) -> None:
    """What a form cannot hold is refused, naming the field or the schema's fault."""
    with pytest.raises(FormSchemaError) as caught:
        Form.from_json_schema(schema)
    assert problem in str(caught.value)


def _asked(form: Form) -> ConversationStream:
    stream = ConversationStream()
    stream.append(ChatRequest(content="Deploy."))
    stream.append(ToolCallRequest(id="call_1", name="deploy", arguments={}))
    question = InquiryQuestion.from_question(Question.form("confirm", "Deploy api?", form))
    stream.append(
        InquiryRequest(
            id="call_1.confirm.1", source=InquirySource.tool("deploy"), question=question
        ),
        metadata={"inquiry": {"parked": {"prompt": "tool", "since": "now"}}, "other": [1]},
    )
    stream.append(Answered(id="call_1.confirm.1", answer={"go": True, "env": "prod"}))
    return stream


def test_on_disk_a_form_is_a_text_question_jp_reads_with_its_schema_in_metadata() -> None:
    """The answer type JP knows (text), the answer the object, the schema beside other keys."""
    entries = encode_stream(_asked(DEPLOY))
    request, answer = entries[2], entries[3]
    assert request["question"]["answer_type"] == {"type": "text"}
    assert set(request["metadata"]) == {"inquiry", "other"}
    ours = request["metadata"]["inquiry"]
    assert list(ours) == ["parked", "form"]
    assert ours["form"]["type"] == base64.b64encode(b"object").decode()  # metadata is base64
    assert answer["answer"] == {"go": True, "env": "prod"}


@given(forms())
def test_a_form_question_and_its_metadata_read_back_as_written(form: Form) -> None:
    """A stream holding a form question loads as it was: the form, and the metadata as given."""
    stream = _asked(form)
    read, _ = decode_stream(orjson.loads(orjson.dumps(encode_stream(stream))))
    assert list(read) == list(stream)


def test_a_form_schema_this_build_cannot_read_leaves_the_text_question_as_it_was() -> None:
    """Metadata another writer put there that is no form's: read as JP reads it, kept as it is."""
    entries = encode_stream(_asked(DEPLOY))
    entries[2]["metadata"]["inquiry"]["form"] = {"type": base64.b64encode(b"array").decode()}
    read, _ = decode_stream(orjson.loads(orjson.dumps(entries)))
    request = list(read)[2].payload  # type: ignore[union-attr]
    assert isinstance(request, InquiryRequest)
    assert request.question.answer_type == AnswerType.text()
    assert encode_stream(read)[2] == entries[2]


def test_a_static_answer_that_does_not_fit_a_form_names_the_field() -> None:
    """The tool is told which field of the configured answer breaks which rule."""
    told = invalid_static_answer("deploy", Question.form("k", "Go?", DEPLOY), {"go": True})
    assert "does not fit the question" in told
    assert "(field 'env' is required)" in told
