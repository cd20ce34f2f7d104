"""An MCP server's input requests as questions, and answers as replies: the pure mapping."""

from __future__ import annotations

import math
from typing import Any

import pytest

from coordinator.adapters.mcp._exchange import Reply, Request
from coordinator.adapters.mcp._forms import Fill, FormFill, UrlFill, fill_for, legacy_key
from machines import AnswerKind, Question, SecretValue, ToolAnswer


def form(properties: dict[str, Any], required: list[str] | None = None) -> FormFill:
    """A form request of ``properties``, ready to fill."""
    schema = {"type": "object", "properties": properties, "required": required or []}
    request = Request(key="k", mode="form", message="Fill this in", schema=schema)
    fill = fill_for(request, server="srv", tool="tool")
    assert isinstance(fill, FormFill)
    return fill


def field_question(fill: FormFill) -> Question:
    """Accept the form; the first field's question."""
    decision = fill.question()
    assert decision is not None
    fill.take("accept")
    question = fill.question()
    assert question is not None
    return question


def refusal(fill: FormFill | UrlFill, answer: ToolAnswer) -> str:
    """Give ``answer`` to the current question; the context of that question, asked again."""
    asked = fill.question()
    assert asked is not None
    fill.take(answer)
    again = fill.question()
    assert again is not None
    assert again.id == asked.id
    assert again.context is not None
    return again.context


def fill_all(fill: FormFill, *answers: ToolAnswer) -> Reply:
    """Accept the form and answer its questions in order; the reply."""
    fill.take("accept")
    for answer in answers:
        assert fill.question() is not None
        fill.take(answer)
    assert fill.question() is None
    return fill.reply()


def test_the_decision_comes_first_and_names_the_server_and_fields() -> None:
    """A form's first question is accept-or-decline, id the key, naming server, tool and fields."""
    fill = form({"ok": {"type": "boolean"}, "note": {"type": "string"}}, ["ok"])
    decision = fill.question()
    assert decision is not None
    assert decision.id == "k"
    assert decision.answer_type.kind is AnswerKind.SELECT
    assert decision.answer_type.option_values == ("accept", "decline")
    assert decision.default == "accept"
    assert decision.text == "Fill this in"
    assert decision.context is not None
    assert "MCP server 'srv' (tool 'tool')" in decision.context
    assert "ok; note (optional)" in decision.context


def test_decline_is_a_reply_without_asking_the_fields() -> None:
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
        ({"type": "boolean"}, AnswerKind.BOOLEAN, ()),
        ({"type": "string", "enum": ["a", "b"]}, AnswerKind.SELECT, ("a", "b")),
        (
            {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y"}]},
            AnswerKind.SELECT,
            ("x", "y"),
        ),
        ({"type": "string"}, AnswerKind.TEXT, ()),
        ({"type": "integer", "minimum": 1}, AnswerKind.TEXT, ()),
        ({"type": "number"}, AnswerKind.TEXT, ()),
        ({"type": "array", "items": {"type": "string", "enum": ["p", "q"]}}, AnswerKind.TEXT, ()),
        ({"type": "string", "format": "password"}, AnswerKind.SECRET, ()),
    ],
)
def test_each_kind_of_field_has_its_answer_type(
    spec: dict[str, Any], kind: AnswerKind, options: tuple[str, ...]
) -> None:
    """Boolean, select (enum or oneOf), text, numbers and multi-selects as text, secrets."""
    question = field_question(form({"f": spec}, ["f"]))
    assert question.id == "k.f"
    assert question.answer_type.kind is kind
    assert question.answer_type.option_values == options


def test_titled_options_keep_their_titles_as_descriptions() -> None:
    """A oneOf's titles (and legacy enumNames) describe the select's options."""
    question = field_question(
        form({"f": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}})
    )
    assert [o.description for o in question.answer_type.options] == ["Alpha", "Beta"]


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
def test_a_field_marked_or_named_a_secret_is_a_secret_question(
    name: str, spec: dict[str, Any]
) -> None:
    """Format password, writeOnly, or a name or title saying so: a secret, with a warning."""
    fill = form({name: spec}, [name])
    decision = fill.question()
    assert decision is not None
    assert decision.context is not None
    assert "Warning: this form asks for a secret" in decision.context
    fill.take("accept")
    question = fill.question()
    assert question is not None
    assert question.answer_type.is_secret
    assert question.context is not None
    assert "MCP forbids servers to ask for one in a form" in question.context


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
    question = field_question(form({name: {"type": "string"}}, [name]))
    assert question.answer_type.kind is AnswerKind.TEXT


def configured(properties: dict[str, Any], *secret_fields: str) -> Fill | str:
    """A form of ``properties`` (all required), with ``secret_fields`` configured."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    request = Request(key="k", mode="form", message="Fill this in", schema=schema)
    return fill_for(request, server="srv", tool="tool", secret_fields=frozenset(secret_fields))


def test_a_field_the_configuration_names_is_a_secret_whatever_it_is_called() -> None:
    """secret_fields: 'nickname' is asked as a secret, and the warning says the configuration."""
    fill = configured({"nickname": {"type": "string"}, "note": {"type": "string"}}, "nickname")
    assert isinstance(fill, FormFill)
    question = field_question(fill)
    assert question.answer_type.is_secret
    assert question.context is not None
    assert "the configuration names it a secret (secret_fields)" in question.context
    fill.take(SecretValue("Zq8v"))
    following = fill.question()
    assert following is not None
    assert not following.answer_type.is_secret  # only the field named


def test_a_number_asked_as_a_secret_is_sent_as_a_number_and_never_quoted() -> None:
    """An integer PIN: a secret question; '12a' refused without quoting it; 4711 sent as 4711."""
    fill = form({"pin": {"type": "integer", "minimum": 0, "default": 1234}}, ["pin"])
    question = field_question(fill)
    assert question.answer_type.is_secret
    assert question.default is None  # a secret's default would be recorded
    context = refusal(fill, SecretValue("12a"))
    assert "the answer is not a whole number" in context
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
    """Only free text can be a secret: a boolean called 'use_token' stays a boolean."""
    question = field_question(form({"use_token": {"type": "boolean"}}, ["use_token"]))
    assert question.answer_type.kind is AnswerKind.BOOLEAN


def test_numbers_are_parsed_and_checked_and_a_misfit_is_asked_again() -> None:
    """'17' under a minimum of 18 is refused (asked again, saying why); '42' is sent as 42."""
    fill = form({"age": {"type": "integer", "minimum": 18, "maximum": 150}}, ["age"])
    fill.take("accept")
    first = fill.question()
    assert first is not None
    assert first.context is not None
    assert "A whole number from 18 to 150." in first.context
    assert "The last answer was refused: '17' is not from 18 to 150." in refusal(fill, "17")
    assert "'4.5' is not a whole number" in refusal(fill, "4.5")
    fill.take(" 42 ")
    assert fill.question() is None
    assert fill.reply().revealed() == {"age": 42}


@pytest.mark.parametrize(("text", "sent"), [("2.5", 2.5), ("-3", -3), ("1e3", 1000.0)])
def test_a_number_field_takes_integers_and_decimals(text: str, sent: float) -> None:
    """A number field sends the number the text says."""
    assert fill_all(form({"x": {"type": "number"}}, ["x"]), text).revealed() == {"x": sent}


@pytest.mark.parametrize("text", ["nan", "inf", "twelve", ""])
def test_a_number_field_refuses_what_json_cannot_hold(text: str) -> None:
    """nan, inf, words, and nothing (when required) are asked again."""
    fill = form({"x": {"type": "number"}}, ["x"])
    fill.take("accept")
    assert "The last answer was refused" in refusal(fill, text)


def test_an_optional_field_left_empty_is_left_out() -> None:
    """An empty answer to an optional text or number field sends no value for it."""
    fill = form(
        {"nick": {"type": "string"}, "n": {"type": "integer"}, "must": {"type": "string"}},
        ["must"],
    )
    assert fill_all(fill, "", "", "").revealed() == {"must": ""}


def test_a_multi_select_takes_values_separated_by_commas_or_a_json_array() -> None:
    """'ai, ops' and '["ai","ops"]' both send ['ai', 'ops']; an unknown value is asked again."""
    spec = {"type": "array", "items": {"type": "string", "enum": ["ai", "ops", "web"]}}
    assert fill_all(form({"t": spec}, ["t"]), "ai, ops").revealed() == {"t": ["ai", "ops"]}
    assert fill_all(form({"t": spec}, ["t"]), '["web"]').revealed() == {"t": ["web"]}
    fill = form({"t": {**spec, "maxItems": 1}}, ["t"])
    fill.take("accept")
    assert "it gives 2 values" in refusal(fill, "ai, ops")
    assert "'cloud' is not one of the values" in refusal(fill, "cloud")


@pytest.mark.parametrize(
    ("fmt", "bad", "good"),
    [
        ("email", "not an address", "ada@example.com"),
        ("date", "31/12/2026", "2026-12-31"),
        ("date-time", "2026-12-31T10:00:00", "2026-12-31T10:00:00+01:00"),
        ("uri", "", "https://example.com/x"),
    ],
)
def test_string_formats_are_checked(fmt: str, bad: str, good: str) -> None:
    """A string with a format the spec allows is checked before it is sent."""
    fill = form({"s": {"type": "string", "format": fmt}}, ["s"])
    fill.take("accept")
    assert "The last answer was refused" in refusal(fill, bad)
    fill.take(good)
    assert fill.reply().revealed() == {"s": good}


def test_a_secret_that_does_not_fit_is_refused_without_quoting_it() -> None:
    """A too-short secret is asked again; the reason gives its length rule, never its value."""
    fill = form({"password": {"type": "string", "minLength": 12}}, ["password"])
    fill.take("accept")
    context = refusal(fill, SecretValue("hunter2"))
    assert "shorter than 12 characters" in context
    assert "hunter2" not in context
    fill.take(SecretValue("correct horse battery"))
    reply = fill.reply()
    assert "correct horse" not in repr(reply)
    assert reply.revealed() == {"password": "correct horse battery"}


def test_defaults_become_the_questions_defaults_where_they_fit() -> None:
    """A boolean's, select's, text's and number's defaults are offered; a secret's never."""
    fill = form(
        {
            "b": {"type": "boolean", "default": True},
            "s": {"type": "string", "enum": ["x", "y"], "default": "y"},
            "n": {"type": "integer", "default": 3},
            "bad": {"type": "string", "enum": ["x"], "default": "z"},
            "token": {"type": "string", "default": "leak"},
        }
    )
    fill.take("accept")
    defaults = []
    while (question := fill.question()) is not None:
        defaults.append(question.default)
        fill.take(question.default if question.default is not None else "x")
    assert defaults == [True, "y", "3", None, None]


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"o": {"type": "object"}}}, "of a kind a form may"),
        ({"type": "object", "properties": {"l": {"type": "array"}}}, "of a kind a form may"),
        ({"type": "array"}, "not of type object"),
        ("nope", "not a JSON object"),
        ({"type": "object", "properties": {"d": {"enum": ["a", "a"]}}}, "same value twice"),
    ],
)
def test_a_form_that_cannot_be_asked_says_why(schema: Any, problem: str) -> None:
    """Nested objects, free arrays, a schema that is no object: refused, naming the fault."""
    request = Request(key="k", mode="form", message="m", schema=schema)
    refused = fill_for(request, server="s", tool="t")
    assert isinstance(refused, str)
    assert problem in refused


def test_a_url_request_is_one_secret_question_recorded_without_its_query() -> None:
    """URL mode: a secret question whose text and context name the link without its query."""
    url = "https://user:pw@auth.example.com:8443/authorize?state=T0KEN#frag"
    request = Request(key="login", mode="url", message="Sign in", url=url)
    fill = fill_for(request, server="s", tool="t")
    assert isinstance(fill, UrlFill)
    question = fill.question()
    assert question is not None
    assert question.id == "login"
    assert question.answer_type.is_secret
    recorded = f"{question.text} {question.context}"
    assert "https://auth.example.com:8443/authorize (query string not shown)" in recorded
    for hidden in ("T0KEN", "frag", "user", "pw@"):
        assert hidden not in recorded
    assert "T0KEN" not in repr(fill)
    assert fill.url == url


@pytest.mark.parametrize(("typed", "action"), [("", "accept"), ("  DECLINE ", "decline")])
def test_a_url_reply_is_enter_to_accept_or_decline(typed: str, action: str) -> None:
    """Enter alone confirms the person completed it; 'decline' refuses."""
    request = Request(key="u", mode="url", message="m", url="https://example.com/")
    fill = fill_for(request, server="s", tool="t")
    assert isinstance(fill, UrlFill)
    fill.take(SecretValue(typed))
    assert fill.question() is None
    assert fill.reply().action == action


def test_a_url_reply_that_is_neither_is_asked_again_unquoted() -> None:
    """Anything else typed at the (secret) prompt is asked again, and never quoted."""
    request = Request(key="u", mode="url", message="m", url="https://example.com/")
    fill = fill_for(request, server="s", tool="t")
    assert isinstance(fill, UrlFill)
    context = refusal(fill, SecretValue("my password"))
    assert "neither empty nor 'decline'" in context
    assert "my password" not in context


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
