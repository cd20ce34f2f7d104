"""An MCP server's input request as questions, and the answers as the reply it asks for.

Theory of operation: an elicitation (an ``inputRequests`` entry of an
``input_required`` result, or a legacy ``elicitation/create`` request) is
*filled* one question at a time, each asked through the engine as the
calling tool's question (:class:`Fill`: :meth:`~Fill.question` gives the
next, :meth:`~Fill.take` takes its answer, :meth:`~Fill.reply` is the reply
once there is no next).

A form (``mode: form``, a flat JSON schema) is asked as **one question**, id
``<key>``, whose answer type is a form (:class:`~machines.Form`): each field
typed (a boolean; one choice, its options' titles shown; several choices;
text with its length and format; a whole number or a number with its
bounds), required or optional, its default offered. Its answer is one JSON
object of the fields answered, recorded as it is and sent as the content of
``accept``; or ``decline``, the server told so. A decline is an answer,
recorded as one: someone (the person, the model, a static answer) chose it,
and RFD 082's cancellation reasons all say a question was closed *without*
an answer. The person's cancel (Esc, Ctrl-C, anywhere in the form) is the
engine's ``Cancelled(user)``, and the server is told ``cancel``. The engine
holds every answer to the form: one that does not fit never reaches here.

A URL request (``mode: url``) is never a form: it is one select, id
``<key>``, ``accept`` (the person completed what the link asks) or
``decline``, recorded as answered like any choice. It is **exclusive**
(RFD 049: a person's to answer, never the model's: ``no_prompt_backend``
with nobody to ask, ``assistant_routing_denied`` when configured for the
model), has no default (the detached policy ``defaults`` cannot consent for
anyone), and is never remembered (``persistence`` none). Its recorded text
and context name the link without its query string, fragment or user name
(which can carry tokens), and so every link the server's message holds
(servers often repeat the link there, token and all); the person is shown
the whole link by :class:`~coordinator.adapters.mcp.McpToolbox.prompter`.

Exclusive: MCP has no way to say a request is for a person only, so this
client reads one: a form whose schema says ``"exclusive": true`` at its top
(JSON Schema lets a schema carry keywords it does not define) is asked as
an exclusive question, and a URL request always is. When nobody can be
asked, the detached policy ``auto`` then fails such a question rather than
put it to the model. The user's configuration overrides the mark, question
by question, both ways.

Secrets: the MCP specification forbids a form to ask for one (servers must
use URL mode), and has no field marker for one. A string, integer or number
field is taken for a secret when the server marks it so anyway (``format:
password``, ``writeOnly: true``), when the configuration names it
(``McpServer.secret_fields``), or when its name or title says so
(:func:`_secret_name`). A form's answer is recorded, so a secret field is
**not asked in the form**: it is asked after it (once the form is
accepted), as a secret question of its own, id ``<key>.<field>`` (never
echoed, recorded, remembered or sent to the model; a number is sent as the
number typed, and a refusal never quotes it), with a warning in its context
and the form's. The form records the other fields, the secret question is
``redacted``: every guarantee RFD 082 gives a secret holds as it is, and no
answer is recorded that is missing what the tool was given. A boolean,
choice or multi-choice field the configuration names cannot be asked as a
secret (its options are the question): the call fails, saying so.

The rule for names: the name and the title are cut into words (at ``_``,
``-``, spaces and other punctuation, digits, and camelCase humps:
``githubToken`` is ``github`` ``token``, ``APIKey`` is ``api`` ``key``),
lower-cased, and a field is a secret when

1. a word is one of :data:`SECRET_WORDS` (``pass_phrase``, ``auth_code``,
   ``bearer``, ``pin``);
2. a word ends with one of :data:`SECRET_ENDINGS`, names glued into one word
   (``githubtoken``, ``dbpassword``); no common word ends so; or
3. two words side by side are one of :data:`SECRET_PAIRS`, a key or a code
   said to be whose (``api_key``, ``private key``, ``recovery_code``,
   ``seed phrase``).

Whole words, never substrings: ``keyboard``, ``monkey``, ``author``,
``authority``, ``spinner``, ``bypass``, ``compass``, ``passenger``,
``pinned``, ``username`` and ``tokens_used`` (``tokens``: a count) are not
secrets; nor is ``key`` or ``code`` alone (a sort key, a country code). A
name the rule misses is named in the configuration.

Nothing here talks to a server: requests and replies are this package's own
shapes (:mod:`coordinator.adapters.mcp._exchange`).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import attrs
import orjson

from coordinator._text import shown_links, shown_url
from coordinator.adapters.mcp._exchange import Reply, Request, SecretNumber
from machines import DECLINE as MACHINES_DECLINE
from machines import (
    JSON_LEAVES,
    AnswerReusePolicy,
    AnswerType,
    FieldKind,
    Form,
    FormField,
    FormSchemaError,
    JsonValue,
    LeafRule,
    Question,
    SecretValue,
    SelectOption,
    json_fault,
    leaf_rules,
    typed_number,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from machines import ToolAnswer

__all__ = [
    "ACCEPT",
    "DECLINE",
    "SECRET_ENDINGS",
    "SECRET_PAIRS",
    "SECRET_WORDS",
    "Fill",
    "FormFill",
    "UrlFill",
    "fill_for",
    "legacy_key",
]

#: A URL question's two options; ``decline`` also refuses a form.
ACCEPT: Final = "accept"
DECLINE: Final = MACHINES_DECLINE

#: Words that make a field a secret when its name or title holds one (module docstring).
SECRET_WORDS: Final = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pass",
        "pwd",
        "pw",
        "token",
        "secret",
        "secrets",
        "apikey",
        "credential",
        "credentials",
        "creds",
        "bearer",
        "auth",
        "authorization",
        "cookie",
        "mnemonic",
        "pin",
        "otp",
        "totp",
        "hotp",
        "mfa",
        "cvv",
        "cvc",
    }
)
#: Endings of a word that make a field a secret: names glued into one word.
SECRET_ENDINGS: Final = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "token",
    "secret",
    "apikey",
    "credential",
    "credentials",
)
#: Two words side by side that make a field a secret: a key or a code, said to be whose.
SECRET_PAIRS: Final = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("access", "key"),
        ("secret", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
        ("session", "key"),
        ("ssh", "key"),
        ("license", "key"),
        ("licence", "key"),
        ("client", "secret"),
        ("access", "code"),
        ("recovery", "code"),
        ("backup", "code"),
        ("security", "code"),
        ("verification", "code"),
        ("authentication", "code"),
        ("login", "code"),
        ("seed", "phrase"),
        ("recovery", "phrase"),
    }
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


#: Deeper than this a schema is no form's (a form's is flat, its options a
#: level below): hashed by where it goes wrong, not its text, which orjson
#: could not write past its own limit.
_SCHEMA_DEPTH = 32


def _writable_integer(value: int) -> str | None:
    return None if -(2**63) <= value < 2**64 else "is an integer beyond 64 bits"


#: A schema's leaves as its key is written: JSON's, and integers orjson writes.
_SCHEMA_RULES: dict[type, LeafRule | None] = {
    str: None,
    bool: None,
    type(None): None,
    int: _writable_integer,
    float: JSON_LEAVES.checked[float],
}
_SCHEMA_LEAVES: Final = leaf_rules(_SCHEMA_RULES)


def legacy_key(request: Request) -> str:
    """A stable question id for a legacy ``elicitation/create``, which carries no key.

    Derived from what is asked, as it is recorded: the message and the
    schema; for a URL request, the message and the link without their query
    strings (:func:`~coordinator._text.shown_links`), which may hold a nonce
    that changes every time. The same request asked again has the same id,
    so the engine counts it as asked again.
    """
    what: JsonValue
    if request.mode == "url":
        what = {"message": shown_links(request.message), "url": shown_url(request.url or "")}
    else:
        schema = dict(request.schema) if request.schema is not None else None
        fault = json_fault(schema, _SCHEMA_LEAVES, max_depth=_SCHEMA_DEPTH)
        # A schema JSON cannot hold (a server's bug) is keyed by where it is
        # wrong: stable, and never its values.
        what = {"message": request.message, "schema": schema if fault is None else str(fault)}
    digest = hashlib.sha256(orjson.dumps(what, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{request.mode}-{digest[:12]}"


def _url_problem(url: str) -> str | None:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "its link cannot be read"
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return "its link is not an http or https address with a host"
    return None


# ------------------------------------------------------------ reading schemas


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _secret_because(name: str, spec: Mapping[str, Any], *, marked: bool) -> str | None:
    """Why a string or number field is a secret (the warning says it); ``None``: it is not."""
    if marked:
        return "the configuration names it a secret (secret_fields)"
    if spec.get("format") == "password":
        return "its format is 'password'"
    if spec.get("writeOnly") is True:
        return "it is marked writeOnly"
    for label in (name, spec.get("title")):
        if isinstance(label, str) and _secret_name(label):
            return f"it is called {label!r}"
    return None


def _secret_name(label: str) -> bool:
    """Whether ``label``, a field's name or title, names a secret (the module's rule)."""
    words = _words(label)
    return any(word in SECRET_WORDS or word.endswith(SECRET_ENDINGS) for word in words) or any(
        pair in SECRET_PAIRS for pair in itertools.pairwise(words)
    )


# ------------------------------------------------------------------ filling


class Fill(Protocol):
    """One request being filled, a question at a time."""

    @property
    def key(self) -> str:
        """The request's key (its question id, and its fields' prefix)."""
        ...

    def question(self) -> Question | None:
        """The next question to ask; ``None`` when the reply is ready."""
        ...

    def take(self, answer: ToolAnswer) -> None:
        """The answer to the question :meth:`question` last gave."""
        ...

    def reply(self) -> Reply:
        """What the server is told, once :meth:`question` gives ``None``."""
        ...


def _asker(server: str, tool: str) -> str:
    return f"MCP server '{server}' (tool '{tool}')"


_FORBIDDEN_IN_A_FORM = (
    "Warning: this form asks for a secret ({because}). MCP forbids servers to ask for one in "
    "a form (they must use URL mode). It is asked apart, after the form: not shown as you "
    "type, never recorded, remembered or sent to the model."
)


@attrs.frozen
class _Invalid:
    """An answer to a secret field that does not fit; ``why`` never quotes it."""

    why: str


@attrs.frozen
class _Omitted:
    """An optional secret field left out."""


@attrs.frozen(kw_only=True)
class _SecretField:
    """A field of a form asked apart, as a secret question: a string or a number."""

    field: FormField
    #: Why it is taken for a secret, for the warning.
    because: str

    def parse(self, answer: ToolAnswer) -> SecretValue | SecretNumber | _Invalid | _Omitted:
        """What the server is sent for ``answer``, or why it does not fit (never quoting it)."""
        field = self.field
        text = answer.reveal() if isinstance(answer, SecretValue) else str(answer)
        if field.kind is FieldKind.TEXT:
            if not text and not field.required:
                return _Omitted()
            problem = field.problem(text)
            return _Invalid(problem) if problem else SecretValue(text)
        text = text.strip()
        if not text and not field.required:
            return _Omitted()
        number = typed_number(text)
        if number is None:
            return _Invalid(f"field {field.name!r} must be {field.expected()}")
        problem = field.problem(number)
        return _Invalid(problem) if problem else SecretNumber(number)


@attrs.frozen(kw_only=True)
class _Parts:
    """A form's schema, read: the form asked as one question, and the fields asked apart."""

    form: Form
    secrets: tuple[_SecretField, ...]


def _parts(schema: object, secret_fields: frozenset[str]) -> _Parts | str:
    """The form and its secret fields, in the schema's order, or why it cannot be asked."""
    if type(schema) is not dict:
        return "its schema is not a JSON object"
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    secrets: list[_SecretField] = []
    try:
        if type(properties) is dict and type(required) is list:
            plain: dict[Any, Any] = {}
            for name, spec in properties.items():
                marked = name in secret_fields
                secret = _secret_field(name, spec, required=name in required, marked=marked)
                if isinstance(secret, str):
                    return secret
                if secret is None:
                    plain[name] = spec
                else:
                    secrets.append(secret)
            schema = {**schema, "properties": plain}
        # The form's reader refuses what is left that no form holds, naming it.
        form = Form.from_json_schema(schema)
    except FormSchemaError as error:
        return str(error)
    return _Parts(form=form, secrets=tuple(secrets))


def _secret_field(
    name: object, spec: object, *, required: bool, marked: bool
) -> _SecretField | str | None:
    """``None`` for a field asked in the form; the field asked apart (a secret); or why neither.

    ``marked``: the configuration names it a secret (``secret_fields``).
    """
    if type(name) is not str or not name or type(spec) is not dict:
        return None  # the form's reader says what is wrong with it
    typed = spec.get("type") in _TYPED and (spec.get("type") != "string" or not _enumerated(spec))
    if marked and not typed:
        return (
            f"field {name!r} is named a secret (secret_fields), but it is answered by "
            "choosing, not typing, so it cannot be asked as one"
        )
    because = _secret_because(name, spec, marked=marked) if typed else None
    if because is None:
        return None
    field = FormField.from_json_schema(name, spec, required=required)
    return _SecretField(field=field, because=because)


#: The kinds of field a person types the answer to: only these can be asked as secrets.
_TYPED: Final = ("string", "integer", "number")


def _enumerated(spec: Mapping[str, Any]) -> bool:
    return any(type(spec.get(key)) is list for key in ("enum", "oneOf", "anyOf"))


class FormFill:
    """A form: asked as one form question; then each field asked apart as a secret, if any."""

    def __init__(self, request: Request, parts: _Parts, *, server: str, tool: str) -> None:
        """Fill ``request``, whose schema gave ``parts``."""
        self.request = request
        self.form = parts.form
        self.secrets = parts.secrets
        self.server = server
        self.tool = tool
        #: -1: the form; then the index of the secret field being asked.
        self.position = -1
        self.declined = False
        self.content: dict[str, JsonValue | SecretValue | SecretNumber] = {}
        #: Why the last answer was refused, for the question asked again.
        self.note: str | None = None
        #: The schema marks the form for a person only (``"exclusive": true``).
        schema = request.schema or {}
        self.exclusive = schema.get("exclusive") is True

    def __repr__(self) -> str:
        """The key and where the filling is; never an answer."""
        return f"FormFill(key={self.request.key!r}, position={self.position})"

    @property
    def key(self) -> str:
        """The request's key."""
        return self.request.key

    def question(self) -> Question | None:
        """The form, then each secret field's question; ``None`` once declined or filled."""
        if self.declined or self.position >= len(self.secrets):
            return None
        if self.position < 0:
            return self._form_question()
        return self._secret_question(self.secrets[self.position])

    def take(self, answer: ToolAnswer) -> None:
        """Take the answer to the current question; one that does not fit is asked again."""
        self.note = None
        if self.position < 0:
            if answer == DECLINE:
                self.declined = True
            elif isinstance(answer, dict) and self.form.problem(answer) is None:
                self.content.update(answer)
            else:
                # The engine holds every answer to the form; a carried one may not fit.
                self.note = f"The last answer was refused: {self.form.problem(answer)}."
                return
            self.position = 0
            return
        secret = self.secrets[self.position]
        parsed = secret.parse(answer)
        if isinstance(parsed, _Invalid):
            self.note = f"The last answer was refused: {parsed.why}."
            return
        if not isinstance(parsed, _Omitted):
            self.content[secret.field.name] = parsed
        self.position += 1

    def reply(self) -> Reply:
        """``decline``, or ``accept`` with every field answered."""
        if self.declined:
            return Reply(action="decline")
        return Reply(action="accept", content=dict(self.content))

    def _form_question(self) -> Question:
        fields = self.form.fields
        listed = "; ".join(
            f"{field.name}{'' if field.required else ' (optional)'}" for field in fields
        )
        lines = [
            f"{_asker(self.server, self.tool)} asks you to fill in a form.",
            f"Its fields: {listed}." if fields else "It has no fields: it asks you to confirm.",
            f"Answer it, or '{DECLINE}' to refuse (the server is told so).",
        ]
        lines += [
            _FORBIDDEN_IN_A_FORM.format(because=f"field {secret.field.name!r}: {secret.because}")
            for secret in self.secrets
        ]
        if self.note is not None:
            lines.append(self.note)
        return Question.form(
            self.key,
            self.request.message or "The server asks for input.",
            self.form,
            context="\n".join(lines),
            exclusive=self.exclusive,
        )

    def _secret_question(self, secret: _SecretField) -> Question:
        field = secret.field
        label = field.title if field.title and field.title != field.name else None
        named = f"{label} ({field.name})" if label else field.name
        optional = "" if field.required else " Optional: an empty answer leaves it out."
        lines = [
            f"{_asker(self.server, self.tool)}, form: {self.request.message}",
            f"Secret field {self.position + 1} of {len(self.secrets)}: {named}"
            + ("" if field.required else " (optional)"),
            f"{field.expected()[0].upper()}{field.expected()[1:]}.{optional}",
            _FORBIDDEN_IN_A_FORM.format(because=secret.because),
        ]
        if self.note is not None:
            lines.append(self.note)
        return Question.secret(
            f"{self.key}.{field.name}",
            field.description or field.title or field.name,
            context="\n".join(lines),
        )


class UrlFill:
    """A URL request: one question, accept or decline, for the person alone."""

    def __init__(self, request: Request, *, server: str, tool: str) -> None:
        """Fill ``request``, whose link was checked."""
        self.request = request
        self.server = server
        self.tool = tool
        self.action: Literal["accept", "decline"] | None = None

    def __repr__(self) -> str:
        """The key; never the link, whose query may hold a token."""
        return f"UrlFill(key={self.request.key!r})"

    @property
    def key(self) -> str:
        """The request's key."""
        return self.request.key

    @property
    def url(self) -> str:
        """The whole link, for the person's eyes only."""
        return self.request.url or ""

    def question(self) -> Question | None:
        """The one question, until it is answered."""
        if self.action is not None:
            return None
        shown = shown_url(self.url)
        lines = [
            (
                f"{_asker(self.server, self.tool)} asks you to open a link in your browser "
                "and complete what it asks there."
            ),
            f"The link: {shown}",
            (
                f"Answer '{ACCEPT}' once you have completed it, or '{DECLINE}' to refuse "
                "(the server is told which)."
            ),
        ]
        return Question(
            id=self.key,
            # Servers often repeat the link, token and all, in the message.
            text=shown_links(self.request.message) or f"Open {shown}",
            answer_type=AnswerType.select(
                (
                    SelectOption(value=ACCEPT, description="I have completed it"),
                    SelectOption(value=DECLINE, description="refuse; the server is told so"),
                )
            ),
            context="\n".join(lines),
            # A link to open in a browser: a person's to follow, never the model's,
            # and a consent given afresh each time.
            exclusive=True,
            persistence=AnswerReusePolicy.NONE,
        )

    def take(self, answer: ToolAnswer) -> None:
        """``accept`` or ``decline`` (the engine took nothing else)."""
        self.action = "accept" if answer == ACCEPT else "decline"

    def reply(self) -> Reply:
        """``accept`` (consent, no content) or ``decline``."""
        return Reply(action=self.action or "decline")


def fill_for(
    request: Request, *, server: str, tool: str, secret_fields: frozenset[str] = frozenset()
) -> Fill | str:
    """How to fill ``request``, or why it cannot be asked (a malformed form, a bad link).

    ``secret_fields`` names the form's fields to ask as secrets, whatever they are called.
    """
    if request.mode == "url":
        problem = _url_problem(request.url or "")
        return problem or UrlFill(request, server=server, tool=tool)
    parts = _parts(request.schema, secret_fields)
    if isinstance(parts, str):
        return parts
    return FormFill(request, parts, server=server, tool=tool)
