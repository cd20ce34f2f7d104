"""An MCP server's input requests as questions, and answers as replies: the pure mapping."""

from __future__ import annotations

import math
from typing import Any

import pytest

from coordinator.adapters.mcp._exchange import Reply, Request
from coordinator.adapters.mcp._forms import Fill, FormFill, UrlFill, fill_for, legacy_key
from machines import AnswerKind, FieldKind, Form, Question, SecretValue, TextFormat, ToolAnswer


def form(properties: dict[str, Any], required: list[str] | None = None) -> FormFill:
    """A form request of ``properties``, ready to fill."""
    schema = {"type": "object", "properties": properties, "required": required or []}
    request = Request(key="k", mode="form", message="Fill this in", schema=schema)
    fill = fill_for(request, server="srv", tool="tool")
    assert isinstance(fill, FormFill)
    return fill


def asked_form(fill: FormFill) -> Form:
    """The form of the first question, the form question."""
    question = fill.question()
    assert question is not None
    assert question.id == "k"
    assert question.answer_type.form is not None
    return question.answer_type.form


def field_question(fill: FormFill, answer: dict[str, Any] | None = None) -> Question:
    """Answer the form (``answer``, by default nothing); the next question, a secret field's."""
    assert fill.question() is not None
    fill.take(answer or {})
    question = fill.question()
    assert question is not None
    return question


def refusal(fill: FormFill, answer: ToolAnswer) -> str:
    """Give ``answer`` to the current question; the context of that question, asked again."""
    asked = fill.question()
    assert asked is not None
    fill.take(answer)
    again = fill.question()
    assert again is not None
    assert again.id == asked.id
    assert again.context is not None
    return again.context


def test_a_form_is_one_question_naming_the_server_and_its_fields() -> None:
    """The form's question: id the key, a form answer type, text the message, fields listed."""
    fill = form({"ok": {"type": "boolean"}, "note": {"type": "string"}}, ["ok"])
    question = fill.question()
    assert question is not None
    assert question.id == "k"
    assert question.answer_type.kind is AnswerKind.FORM
    assert question.text == "Fill this in"
    assert question.context is not None
    assert "MCP server 'srv' (tool 'tool')" in question.context
    assert "ok; note (optional)" in question.context
    assert question.answer_type.accepts({"ok": True})
    assert question.answer_type.accepts("decline")
    assert not question.answer_type.accepts({"note": "no ok"})


def test_the_forms_answer_is_the_reply_content() -> None:
    """An object answer is sent as accept with that content; no other question follows."""
    fill = form({"ok": {"type": "boolean"}, "n": {"type": "integer"}}, ["ok"])
    fill.take({"ok": True, "n": 3})
    assert fill.question() is None
    assert fill.reply().revealed() == {"ok": True, "n": 3}
    assert fill.reply().action == "accept"


def test_decline_is_a_reply_without_content() -> None:
    """Declining ends the form at once; the server is told decline, with no content."""
    fill = form({"ok": {"type": "boolean"}}, ["ok"])
    fill.take("decline")
    assert fill.question() is None
    reply = fill.reply()
    assert reply.action == "decline"
    assert reply.content is None


@pytest.mark.parametrize(
    ("spec", "kind", "options"),
    [
        ({"type": "boolean"}, FieldKind.BOOLEAN, ()),
        ({"type": "string", "enum": ["a", "b"]}, FieldKind.CHOICE, ("a", "b")),
        (
            {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y"}]},
            FieldKind.CHOICE,
            ("x", "y"),
        ),
        ({"type": "string"}, FieldKind.TEXT, ()),
        ({"type": "integer", "minimum": 1}, FieldKind.INTEGER, ()),
        ({"type": "number"}, FieldKind.NUMBER, ()),
        (
            {"type": "array", "items": {"type": "string", "enum": ["p", "q"]}},
            FieldKind.CHOICES,
            ("p", "q"),
        ),
    ],
)
def test_each_kind_of_field_is_typed_in_the_form(
    spec: dict[str, Any], kind: FieldKind, options: tuple[str, ...]
) -> None:
    """Boolean, one choice (enum or oneOf), text, whole number, number, several choices."""
    (field,) = asked_form(form({"f": spec}, ["f"])).fields
    assert (field.name, field.kind, field.required, field.option_values) == (
        "f",
        kind,
        True,
        options,
    )


def test_titled_options_keep_their_titles_as_descriptions() -> None:
    """A oneOf's titles (and legacy enumNames) describe the choice's options."""
    (field,) = asked_form(
        form({"f": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}})
    ).fields
    assert [o.description for o in field.options] == ["Alpha", "Beta"]


def test_bounds_formats_and_defaults_are_the_fields() -> None:
    """A number's bounds, a text's lengths and format, a list's counts, defaults: all typed."""
    fields = asked_form(
        form(
            {
                "age": {"type": "integer", "minimum": 18, "maximum": 150, "default": 30},
                "mail": {"type": "string", "format": "email", "maxLength": 40},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["a", "b"]},
                    "maxItems": 1,
                },
            }
        )
    ).fields
    age, mail, tags = fields
    assert (age.minimum, age.maximum, age.offered_default) == (18, 150, 30)
    assert (mail.format, mail.max_length) == (TextFormat.EMAIL, 40)
    assert tags.max_items == 1


def test_the_forms_default_is_its_fields_defaults_when_every_required_one_has_one() -> None:
    """Enter (and the policy defaults) takes the fields' defaults, only if they make an answer."""
    complete = form({"b": {"type": "boolean", "default": True}, "n": {"type": "integer"}}, ["b"])
    question = complete.question()
    assert question is not None
    assert question.default == {"b": True}
    lacking = form({"b": {"type": "boolean"}, "n": {"type": "integer", "default": 2}}, ["b"])
    question = lacking.question()
    assert question is not None
    assert question.default is None


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("password", {"type": "string"}),
        ("apiKey", {"type": "string"}),
        ("github_token", {"type": "string"}),
        ("value", {"type": "string", "title": "Private key"}),
        ("value", {"type": "string", "writeOnly": True}),
        ("value", {"type": "string", "format": "password"}),
        ("pin", {"type": "string"}),
        # The issue's names, and the rule's three ways (words, endings, pairs).
        ("pass_phrase", {"type": "string"}),
        ("auth_code", {"type": "string"}),
        ("bearer", {"type": "string"}),
        ("githubtoken", {"type": "string"}),
        ("dbPassword", {"type": "string"}),
        ("APIKey", {"type": "string"}),
        ("recovery-code", {"type": "string"}),
        ("value", {"type": "string", "title": "Seed phrase"}),
        ("mfa", {"type": "string"}),
        ("session_cookie", {"type": "string"}),
        ("otp", {"type": "integer"}),
        ("card_cvv", {"type": "number"}),
    ],
)
def test_a_field_marked_or_named_a_secret_is_asked_apart_after_the_form(
    name: str, spec: dict[str, Any]
) -> None:
    """Format password, writeOnly, or a name or title saying so: out of the form, a secret."""
    fill = form({name: spec, "note": {"type": "string"}}, [name])
    question = fill.question()
    assert question is not None
    assert question.context is not None
    assert "Warning: this form asks for a secret" in question.context
    assert [field.name for field in asked_form(fill).fields] == ["note"]
    secret = field_question(fill)
    assert secret.id == f"k.{name}"
    assert secret.answer_type.is_secret
    assert secret.context is not None
    assert "MCP forbids servers to ask for one in a form" in secret.context


@pytest.mark.parametrize(
    "name",
    [
        "username",
        "pinned",
        "tokens_used",
        "description",
        "keyboard_layout",
        "monkey",
        "author",
        "authority",
        "spinner",
        "bypass",
        "compass",
        "passenger",
        "sort_key",
        "country_code",
    ],
)
def test_ordinary_names_are_not_secrets(name: str) -> None:
    """A name merely containing a secret word's letters is not a secret; nor a bare key or code."""
    fill = form({name: {"type": "string"}}, [name])
    (field,) = asked_form(fill).fields
    assert field.kind is FieldKind.TEXT
    fill.take({name: "x"})
    assert fill.question() is None


def configured(properties: dict[str, Any], *secret_fields: str) -> Fill | str:
    """A form of ``properties`` (all required), with ``secret_fields`` configured."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    request = Request(key="k", mode="form", message="Fill this in", schema=schema)
    return fill_for(request, server="srv", tool="tool", secret_fields=frozenset(secret_fields))


def test_a_field_the_configuration_names_is_a_secret_whatever_it_is_called() -> None:
    """secret_fields: 'nickname' is asked as a secret, and the warning says the configuration."""
    fill = configured({"nickname": {"type": "string"}, "note": {"type": "string"}}, "nickname")
    assert isinstance(fill, FormFill)
    assert [field.name for field in asked_form(fill).fields] == ["note"]  # only the field named
    question = field_question(fill, {"note": "hi"})
    assert question.answer_type.is_secret
    assert question.context is not None
    assert "the configuration names it a secret (secret_fields)" in question.context
    fill.take(SecretValue("Zq8v"))
    assert fill.question() is None
    assert fill.reply().revealed() == {"note": "hi", "nickname": "Zq8v"}


def test_a_number_asked_as_a_secret_is_sent_as_a_number_and_never_quoted() -> None:
    """An integer PIN: a secret question; '12a' refused without quoting it; 4711 sent as 4711."""
    fill = form({"pin": {"type": "integer", "minimum": 0, "default": 1234}}, ["pin"])
    question = field_question(fill)
    assert question.answer_type.is_secret
    assert question.default is None  # a secret's default would be recorded
    context = refusal(fill, SecretValue("12a"))
    assert "field 'pin' must be a whole number of at least 0" in context
    assert "12a" not in context
    fill.take(SecretValue(" 4711 "))
    assert fill.question() is None
    reply = fill.reply()
    assert "4711" not in repr(reply)
    assert reply.revealed() == {"pin": 4711}


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "boolean"},
        {"type": "string", "enum": ["a", "b"]},
        {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    ],
    ids=["boolean", "select", "multi-select"],
)
def test_a_field_answered_by_choosing_cannot_be_configured_a_secret(spec: dict[str, Any]) -> None:
    """secret_fields naming a boolean or a select: the form cannot be asked, saying why."""
    assert configured({"choice": spec}, "choice") == (
        "field 'choice' is named a secret (secret_fields), but it is answered by choosing, "
        "not typing, so it cannot be asked as one"
    )


def test_a_secret_name_on_a_boolean_or_select_is_no_secret() -> None:
    """Only free text can be a secret: a boolean called 'use_token' stays in the form."""
    (field,) = asked_form(form({"use_token": {"type": "boolean"}}, ["use_token"])).fields
    assert field.kind is FieldKind.BOOLEAN


def test_a_secret_that_does_not_fit_is_refused_without_quoting_it() -> None:
    """A too-short secret is asked again; the reason gives its length rule, never its value."""
    fill = form({"password": {"type": "string", "minLength": 12}}, ["password"])
    field_question(fill)
    context = refusal(fill, SecretValue("hunter2"))
    assert "at least 12 characters" in context
    assert "hunter2" not in context
    fill.take(SecretValue("correct horse battery"))
    reply = fill.reply()
    assert "correct horse" not in repr(reply)
    assert reply.revealed() == {"password": "correct horse battery"}


def test_an_optional_secret_left_empty_is_left_out() -> None:
    """An empty answer to an optional secret field sends no value for it."""
    fill = form({"token": {"type": "string"}, "pin": {"type": "integer"}})
    field_question(fill)
    fill.take(SecretValue(""))
    fill.take(SecretValue(" "))
    assert fill.question() is None
    assert fill.reply().revealed() == {}


def test_a_declined_form_asks_no_secret() -> None:
    """Declining the form asks for none of its secret fields: nothing to give, nothing sent."""
    fill = form({"token": {"type": "string"}}, ["token"])
    fill.take("decline")
    assert fill.question() is None
    assert fill.reply().action == "decline"


def test_a_form_of_secrets_only_is_an_empty_form_then_the_secrets() -> None:
    """No field left for the form: it asks to confirm (an empty object) or decline."""
    fill = form({"token": {"type": "string"}}, ["token"])
    assert asked_form(fill).fields == ()
    question = fill.question()
    assert question is not None
    assert question.answer_type.accepts({})
    assert question.context is not None
    assert "It has no fields: it asks you to confirm." in question.context


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"o": {"type": "object"}}}, "of a kind a form may"),
        ({"type": "object", "properties": {"l": {"type": "array"}}}, "of a kind a form may"),
        ({"type": "array"}, "not of type object"),
        ("nope", "not a JSON object"),
        ({"type": "object", "properties": {"d": {"enum": ["a", "a"]}}}, "same value twice"),
        (
            {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}},
            },
            "minimum above its maximum",
        ),
    ],
)
def test_a_form_that_cannot_be_asked_says_why(schema: Any, problem: str) -> None:
    """Nested objects, free arrays, a schema that is no object: refused, naming the fault."""
    request = Request(key="k", mode="form", message="m", schema=schema)
    refused = fill_for(request, server="s", tool="t")
    assert isinstance(refused, str)
    assert problem in refused


def test_a_url_request_is_accept_or_decline_for_a_person_recorded_without_its_query() -> None:
    """URL mode: an exclusive select, no default, never remembered; its text names the link cut."""
    url = "https://user:pw@auth.example.com:8443/authorize?state=T0KEN#frag"
    request = Request(key="login", mode="url", message="Sign in", url=url)
    fill = fill_for(request, server="s", tool="t")
    assert isinstance(fill, UrlFill)
    question = fill.question()
    assert question is not None
    assert question.id == "login"
    assert question.answer_type.option_values == ("accept", "decline")
    assert not question.answer_type.is_secret
    assert question.exclusive
    assert question.default is None
    assert not question.reusable
    recorded = f"{question.text} {question.context}"
    assert "https://auth.example.com:8443/authorize (query string not shown)" in recorded
    for hidden in ("T0KEN", "frag", "user", "pw@"):
        assert hidden not in recorded
    assert "T0KEN" not in repr(fill)
    assert fill.url == url


@pytest.mark.parametrize("action", ["accept", "decline"])
def test_a_url_reply_is_the_option_chosen(action: str) -> None:
    """The person's choice is what the server is told."""
    request = Request(key="u", mode="url", message="m", url="https://example.com/")
    fill = fill_for(request, server="s", tool="t")
    assert isinstance(fill, UrlFill)
    fill.take(action)
    assert fill.question() is None
    assert fill.reply().action == action


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "https://"])
def test_a_link_that_is_not_http_is_refused(url: str) -> None:
    """Only an http or https link with a host is shown to the person."""
    request = Request(key="u", mode="url", message="m", url=url)
    assert isinstance(fill_for(request, server="s", tool="t"), str)


def test_every_link_in_a_url_requests_message_is_recorded_without_its_query() -> None:
    """A message repeating the link, token and all: its text names each link as the url field."""
    url = "https://auth.example.com/authorize?state=T0KEN"
    message = f"Open {url} or https://u:pw@mirror.example.com/a#code=T0KEN to sign in."
    fill = fill_for(
        Request(key="login", mode="url", message=message, url=url), server="s", tool="t"
    )
    assert isinstance(fill, UrlFill)
    question = fill.question()
    assert question is not None
    assert question.text == (
        "Open https://auth.example.com/authorize (query string not shown) or "
        "https://mirror.example.com/a (query string not shown) to sign in."
    )
    for hidden in ("T0KEN", "pw@", "#code"):
        assert hidden not in f"{question.text} {question.context}"


def test_legacy_keys_are_stable_and_tell_requests_apart() -> None:
    """The same request gets the same id every time; another message or schema, another id."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    one = Request(key="", mode="form", message="Deploy?", schema=schema)
    same = Request(key="", mode="form", message="Deploy?", schema=dict(schema))
    other = Request(key="", mode="form", message="Deploy it?", schema=schema)
    assert legacy_key(one) == legacy_key(same)
    assert legacy_key(one) != legacy_key(other)
    assert legacy_key(one).startswith("form-")
    nonce_a = Request(key="", mode="url", message="m", url="https://e.com/a?nonce=1")
    nonce_b = Request(key="", mode="url", message="m", url="https://e.com/a?nonce=2")
    assert legacy_key(nonce_a) == legacy_key(nonce_b)


def test_a_nonce_in_a_url_requests_message_does_not_change_its_key() -> None:
    """The message's links count as recorded, without their query: a fresh nonce, the same id."""

    def asking(nonce: str) -> Request:
        link = f"https://e.com/cb?code=T0KEN&nonce={nonce}"
        return Request(key="", mode="url", message=f"Open {link} now", url=link)

    assert legacy_key(asking("1")) == legacy_key(asking("2"))
    other = Request(
        key="", mode="url", message="Open https://e.com/other now", url="https://e.com/cb"
    )
    assert legacy_key(other) != legacy_key(asking("1"))


def test_legacy_keys_are_the_ones_earlier_versions_gave() -> None:
    """Configuration names these ids: a request without links keeps the id it always had."""
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "default": 1.5},
            "n": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["ok"],
    }
    form = Request(key="", mode="form", message="Deploy?", schema=schema)
    assert legacy_key(form) == "form-a52ce3d55b0c"
    link = Request(key="", mode="url", message="Sign in", url="https://e.com/a?nonce=1")
    assert legacy_key(link) == "url-935646b84a96"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "number", "default": math.nan}}},
        {"type": "object", "properties": {1: {"type": "boolean"}}},
        {"type": "object", "properties": {"a": {"default": {1, 2}}}},
        {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10**30}}},
    ],
    ids=["not-finite", "key-not-a-string", "a-set", "beyond-64-bits"],
)
def test_a_schema_json_cannot_hold_still_gets_a_stable_key(schema: Any) -> None:
    """What JSON cannot hold keys the request by where it is; the id is the same every time."""
    one = Request(key="", mode="form", message="Go?", schema=schema)
    again = Request(key="", mode="form", message="Go?", schema=dict(schema))
    assert legacy_key(one) == legacy_key(again)
    assert legacy_key(one).startswith("form-")
    assert legacy_key(one) != legacy_key(Request(key="", mode="form", message="Go?", schema={}))


def test_a_reply_never_shows_its_content_in_its_repr() -> None:
    """A reply's repr names the fields answered, never their values."""
    reply = Reply(action="accept", content={"token": SecretValue("s3cret"), "name": "Ada"})
    assert "s3cret" not in repr(reply)
    assert "Ada" not in repr(reply)
    assert reply.revealed() == {"token": "s3cret", "name": "Ada"}
