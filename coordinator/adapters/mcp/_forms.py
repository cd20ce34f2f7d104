"""An MCP server's input request as questions, and the answers as the reply it asks for.

Theory of operation: an elicitation (an ``inputRequests`` entry of an
``input_required`` result, or a legacy ``elicitation/create`` request) is
*filled* one question at a time, each asked through the engine as the
calling tool's question (:class:`Fill`: :meth:`~Fill.question` gives the
next, :meth:`~Fill.take` takes its answer, :meth:`~Fill.reply` is the reply
once there is no next).

A form (``mode: form``, a flat JSON schema) is asked as:

1. the **decision**, question id ``<key>``: a select, ``accept`` (answer
   the form) or ``decline`` (refuse: the server is told so). A decline is
   an answer, recorded as one: the person (or the model, or a static
   answer) chose it, and RFD 082's cancellation reasons all say a question
   was closed *without* an answer. The person's cancel (Ctrl-C) is the
   engine's ``Cancelled(user)``, and the server is told ``cancel``.
2. after ``accept``, **one question per field**, id ``<key>.<field>``, in
   the schema's order: ``boolean`` is a boolean; a string ``enum`` (or
   ``oneOf`` of ``const`` and ``title``) a select; any other string a text
   question; ``number`` and ``integer`` a text question whose answer is
   parsed as the number the schema asks for; an array of enumerated strings
   (multi-select) a text question taking the values separated by commas.
   One question per field, not one structured question: the engine's answer
   types have no object, a JSON text is easy to get wrong, and per-field ids
   let configuration target, answer and the turn remember each field alone.

An answer that does not fit (not a number, out of range, too short, not an
email address) is not sent: the same question is asked again, its context
saying why, as a tool asks again after an invalid answer; the engine's bound
on asking one question again applies.

A URL request (``mode: url``) is never a form and never goes to the model:
it is one **secret** question, id ``<key>``, so the engine routes it only to
the person at a terminal (``no_prompt_backend`` without one,
``assistant_routing_denied`` when configured for the model) and records no
reply. Its recorded text and context name the link without its query
string, fragment or user name (which can carry tokens), and so every link
the server's message holds (servers often repeat the link there, token and
all); the person is shown the whole link by
:class:`~coordinator.adapters.mcp.McpToolbox.prompter`. An empty reply
confirms the person completed it (``accept``), ``decline`` refuses.

Exclusive (RFD 049): MCP has no way to say a request is for a person only,
so this client reads one: a form whose schema says ``"exclusive": true`` at
its top (JSON Schema lets a schema carry keywords it does not define) is
asked as exclusive questions, its decision and every field, and a URL
request always is. When nobody can be asked, the detached policy ``auto``
then fails such a question rather than put it to the model. The user's
configuration overrides the mark, question by question, both ways.

Secrets: the MCP specification forbids a form to ask for one (servers must
use URL mode), and has no field marker for one. A string, integer or number
field is taken for a secret when the server marks it so anyway (``format:
password``, ``writeOnly: true``), when the configuration names it
(``McpServer.secret_fields``), or when its name or title says so
(:func:`_secret_name`). It is asked as a secret question (never echoed,
recorded, remembered or sent to the model; a number is sent as the number
typed, and a refusal never quotes it), with a warning in its context and the
decision's. A boolean, select or multi-select field the configuration names
cannot be asked as a secret (its options are the question): the call fails,
saying so.

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

import datetime as dt
import enum
import hashlib
import itertools
import math
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import attrs
import orjson

from coordinator._text import shown_links, shown_url
from coordinator.adapters.mcp._exchange import Reply, Request, SecretNumber
from machines import (
    JSON_LEAVES,
    AnswerType,
    JsonValue,
    LeafRule,
    Question,
    SecretValue,
    SelectOption,
    is_json,
    json_fault,
    leaf_rules,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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

#: The decision's two options, and the reply to a URL question that refuses.
ACCEPT: Final = "accept"
DECLINE: Final = "decline"

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
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_LARGEST_INTEGER = 2**63 - 1


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


# ------------------------------------------------------------------ fields


class _Kind(enum.Enum):
    BOOLEAN = "boolean"
    SELECT = "select"
    MULTI = "multi"
    TEXT = "text"
    INTEGER = "integer"
    NUMBER = "number"
    SECRET = "secret"  # noqa: S105 - a kind of field, not a password


@attrs.frozen
class _Invalid:
    """An answer that does not fit; ``why`` never quotes a secret."""

    why: str


@attrs.frozen
class _Omitted:
    """An optional field left out."""


_Parsed: TypeAlias = "JsonValue | SecretValue | SecretNumber | _Invalid | _Omitted"


@attrs.frozen(kw_only=True)
class _Field:
    """One property of a form's schema, read and checked."""

    name: str
    kind: _Kind
    title: str | None
    description: str | None
    required: bool
    options: tuple[SelectOption, ...] = ()
    default: JsonValue = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    #: Why it is taken for a secret, for the warning.
    secret_because: str | None = None

    @property
    def text(self) -> str:
        return self.description or self.title or self.name

    def answer_type(self) -> AnswerType:
        if self.kind is _Kind.BOOLEAN:
            return AnswerType.boolean()
        if self.kind is _Kind.SELECT:
            return AnswerType.select(self.options)
        if self.kind is _Kind.SECRET or self.secret_because is not None:
            return AnswerType.secret()
        return AnswerType.text()

    def question_default(self) -> JsonValue:
        """The schema's default as this field's question takes it; ``None`` if it does not fit."""
        default = self.default
        if self.secret_because is not None or default is None:
            return None  # a secret question has no default: it would be recorded
        if self.kind is _Kind.MULTI and isinstance(default, list):
            values = [str(item) for item in default]
            return ", ".join(values) if all(isinstance(item, str) for item in default) else None
        if self.kind in (_Kind.INTEGER, _Kind.NUMBER) and not isinstance(default, bool):
            return str(default) if isinstance(default, int | float) else None
        return default if self.answer_type().accepts(default) else None

    def hint(self) -> str:
        """What an answer must be, in words."""
        optional = "" if self.required else " Optional: an empty answer leaves it out."
        if self.kind is _Kind.MULTI:
            values = ", ".join(option.value for option in self.options)
            counted = _count_range(self.min_items, self.max_items, "value")
            return f"One or more of: {values}, separated by commas{counted}.{optional}"
        if self.kind in (_Kind.INTEGER, _Kind.NUMBER):
            what = "A whole number" if self.kind is _Kind.INTEGER else "A number"
            return f"{what}{_number_range(self.minimum, self.maximum)}.{optional}"
        if self.kind in (_Kind.TEXT, _Kind.SECRET):
            what = _FORMAT_WORDS.get(self.format or "", "Text")
            counted = _count_range(self.min_length, self.max_length, "character")
            return f"{what}{counted}.{optional}"
        return ""

    def parse(self, answer: ToolAnswer) -> _Parsed:
        """The value the server is sent for ``answer``, or why it does not fit."""
        if self.kind in (_Kind.BOOLEAN, _Kind.SELECT):
            return answer  # the engine checked it fits the question
        if self.secret_because is not None:  # a string or a number, asked as a secret
            return self._secret(answer)
        text = answer if isinstance(answer, str) else ""
        if not text.strip() and not self.required:
            return _Omitted()
        if self.kind is _Kind.MULTI:
            return self._values(text)
        if self.kind in (_Kind.INTEGER, _Kind.NUMBER):
            return self._number(text.strip())
        problem = _length_problem(text, self.min_length, self.max_length)
        if problem is None and self.format is not None:
            problem = _FORMAT_CHECKS[self.format](text)
        return _Invalid(problem) if problem else text

    def _secret(self, answer: ToolAnswer) -> _Parsed:
        if self.kind is not _Kind.SECRET:
            return self._secret_number(answer)
        secret = answer if isinstance(answer, SecretValue) else SecretValue(str(answer))
        if not secret.reveal() and not self.required:
            return _Omitted()
        problem = _length_problem(secret.reveal(), self.min_length, self.max_length)
        return _Invalid(problem) if problem else secret

    def _secret_number(self, answer: ToolAnswer) -> _Parsed:
        text = (answer.reveal() if isinstance(answer, SecretValue) else str(answer)).strip()
        if not text and not self.required:
            return _Omitted()
        number = self._number(text, shown="the answer")  # a refusal never quotes a secret
        return SecretNumber(number) if isinstance(number, int | float) else number

    def _number(self, text: str, *, shown: str | None = None) -> _Parsed:
        said = shown or repr(text)
        number: int | float
        try:
            number = int(text)
        except ValueError:
            if self.kind is _Kind.INTEGER:
                return _Invalid(f"{said} is not a whole number")
            try:
                number = float(text)
            except ValueError:
                return _Invalid(f"{said} is not a number")
            if not math.isfinite(number):
                return _Invalid(f"{said} is not a finite number")
        if isinstance(number, int) and abs(number) > _LARGEST_INTEGER:
            return _Invalid(f"{said} is too large a number")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            return _Invalid(f"{said} is not{_number_range(self.minimum, self.maximum)}")
        return number

    def _values(self, text: str) -> _Parsed:
        values: list[str]
        if text.lstrip().startswith("["):
            try:
                loaded = orjson.loads(text)
            except orjson.JSONDecodeError:
                return _Invalid("it starts with '[' but is not a JSON array")
            if not isinstance(loaded, list) or not all(isinstance(v, str) for v in loaded):
                return _Invalid("it is not a JSON array of strings")
            values = loaded
        else:
            values = [value.strip() for value in text.split(",") if value.strip()]
        allowed = {option.value for option in self.options}
        unknown = [value for value in values if value not in allowed]
        if unknown:
            return _Invalid(f"{unknown[0]!r} is not one of the values")
        if len(set(values)) != len(values):
            return _Invalid("a value is given twice")
        if (self.min_items is not None and len(values) < self.min_items) or (
            self.max_items is not None and len(values) > self.max_items
        ):
            return _Invalid(f"it gives {len(values)} values, not{_count(self)}")
        return list(values)


def _count(field: _Field) -> str:
    return _count_range(field.min_items, field.max_items, "value")


_FORMAT_WORDS = {
    "email": "An email address",
    "uri": "A URI (such as https://example.com/)",
    "date": "A date (YYYY-MM-DD)",
    "date-time": "A date and time (YYYY-MM-DDTHH:MM:SS, with its time zone)",
}


def _number_range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {_shown_number(low)} to {_shown_number(high)}"
    if low is not None:
        return f" of at least {_shown_number(low)}"
    if high is not None:
        return f" of at most {_shown_number(high)}"
    return ""


def _shown_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _count_range(low: int | None, high: int | None, unit: str) -> str:
    if low is not None and high is not None:
        return f" ({low} to {high} {unit}s)" if low != high else f" ({low} {unit}s)"
    if low is not None:
        return f" (at least {low} {unit}{'s' if low != 1 else ''})"
    if high is not None:
        return f" (at most {high} {unit}{'s' if high != 1 else ''})"
    return ""


def _length_problem(text: str, low: int | None, high: int | None) -> str | None:
    if low is not None and len(text) < low:
        return f"it is shorter than {low} character{'s' if low != 1 else ''}"
    if high is not None and len(text) > high:
        return f"it is longer than {high} character{'s' if high != 1 else ''}"
    return None


def _email_problem(text: str) -> str | None:
    return None if _EMAIL.fullmatch(text) else f"{text!r} is not an email address"


def _uri_problem(text: str) -> str | None:
    parts = urllib.parse.urlsplit(text)
    return None if parts.scheme and (parts.netloc or parts.path) else f"{text!r} is not a URI"


def _date_problem(text: str) -> str | None:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return f"{text!r} is not a date (YYYY-MM-DD)"
    return None


def _date_time_problem(text: str) -> str | None:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return f"{text!r} is not a date and time"
    return None if moment.tzinfo is not None else f"{text!r} has no time zone (add Z or +01:00)"


#: The string formats the MCP specification allows in a form, each checked before sending.
_FORMAT_CHECKS: Final[Mapping[str, Callable[[str], str | None]]] = {
    "email": _email_problem,
    "uri": _uri_problem,
    "date": _date_problem,
    "date-time": _date_time_problem,
}


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


def _optional_text(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    return value if isinstance(value, str) and value else None


def _bound(spec: Mapping[str, Any], key: str) -> float | None:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _size(spec: Mapping[str, Any], key: str) -> int | None:
    value = spec.get(key)
    return value if type(value) is int and value >= 0 else None


def _choices(spec: Mapping[str, Any]) -> tuple[SelectOption, ...] | None:
    """The options of an enumerated string, titled (``oneOf``/``anyOf``) or not (``enum``)."""
    enum_values = spec.get("enum")
    if isinstance(enum_values, list):
        if not enum_values or not all(isinstance(value, str) for value in enum_values):
            return None
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(enum_values) else None
        return tuple(
            SelectOption(value=value, description=_title(titles[i]) if titles else None)
            for i, value in enumerate(enum_values)
        )
    for key in ("oneOf", "anyOf"):
        consts = spec.get(key)
        if isinstance(consts, list) and consts:
            options = []
            for const in consts:
                if not isinstance(const, dict) or not isinstance(const.get("const"), str):
                    return None
                options.append(
                    SelectOption(value=const["const"], description=_title(const.get("title")))
                )
            return tuple(options)
    return None


def _title(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _string(spec: Mapping[str, Any], common: dict[str, Any]) -> _Field | None:
    secret = common["secret_because"]
    format_ = spec.get("format")
    return _Field(
        kind=_Kind.SECRET if secret else _Kind.TEXT,
        min_length=_size(spec, "minLength"),
        max_length=_size(spec, "maxLength"),
        format=format_ if isinstance(format_, str) and format_ in _FORMAT_CHECKS else None,
        **common,
    )


def _number_field(spec: Mapping[str, Any], common: dict[str, Any]) -> _Field | None:
    return _Field(
        kind=_Kind.INTEGER if spec.get("type") == "integer" else _Kind.NUMBER,
        minimum=_bound(spec, "minimum"),
        maximum=_bound(spec, "maximum"),
        **common,
    )


def _multi(spec: Mapping[str, Any], common: dict[str, Any]) -> _Field | None:
    items = spec.get("items")
    options = _choices(items) if isinstance(items, dict) else None
    if options is None:
        return None  # an array of free values: no form may ask for one
    return _Field(
        kind=_Kind.MULTI,
        options=options,
        min_items=_size(spec, "minItems"),
        max_items=_size(spec, "maxItems"),
        **common,
    )


def _boolean(_spec: Mapping[str, Any], common: dict[str, Any]) -> _Field | None:
    return _Field(kind=_Kind.BOOLEAN, **common)


#: How each JSON type a form may hold is read (an enumerated string is a select first).
_READERS: Final[Mapping[str, Callable[[Mapping[str, Any], dict[str, Any]], _Field | None]]] = {
    "boolean": _boolean,
    "string": _string,
    "integer": _number_field,
    "number": _number_field,
    "array": _multi,
}


#: The kinds of field a person types the answer to: only these can be asked as secrets.
_TYPED: Final = ("string", "integer", "number")


def _field(name: str, spec: object, *, required: bool, marked: bool) -> _Field | str:
    """The field ``name`` (``marked`` a secret by the configuration), or why it cannot be asked."""
    if not isinstance(spec, dict):
        return f"field {name!r} is not described by a JSON object"
    kind = spec.get("type")
    options = _choices(spec)
    typed = kind in _TYPED and (kind != "string" or options is None)
    if marked and not typed:
        return (
            f"field {name!r} is named a secret (secret_fields), but it is answered by "
            "choosing, not typing, so it cannot be asked as one"
        )
    common: dict[str, Any] = {
        "name": name,
        "title": _optional_text(spec, "title"),
        "description": _optional_text(spec, "description"),
        "required": required,
        "default": spec.get("default") if is_json(spec.get("default")) else None,
        "secret_because": _secret_because(name, spec, marked=marked) if typed else None,
    }
    if kind in ("string", None) and options is not None:
        if len({option.value for option in options}) != len(options):
            return f"field {name!r} offers the same value twice"
        return _Field(kind=_Kind.SELECT, options=options, **common)
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    field = reader(spec, common) if reader is not None else None
    if field is None:
        shown = kind if isinstance(kind, str) else "no type"
        return f"field {name!r} is of a kind a form may not ask for ({shown})"
    return field


def _schema_problem(schema: object) -> str | None:
    """What keeps ``schema`` from being a form's: an object with properties and required."""
    if not isinstance(schema, dict):
        return "its schema is not a JSON object"
    if schema.get("type", "object") != "object":
        return "its schema is not of type object"
    if not isinstance(schema.get("properties", {}), dict):
        return "its schema's properties are not a JSON object"
    if not isinstance(schema.get("required", []), list):
        return "its schema's required is not a list"
    return None


def _fields(schema: object, secret_fields: frozenset[str]) -> tuple[_Field, ...] | str:
    """The form's fields, in the schema's order, or why it cannot be asked."""
    if (problem := _schema_problem(schema)) is not None or not isinstance(schema, dict):
        return problem or "its schema is not a JSON object"
    required = schema.get("required", [])
    fields = []
    for name, spec in schema.get("properties", {}).items():
        if not isinstance(name, str) or not name:
            return "its schema has a field without a name"
        field = _field(name, spec, required=name in required, marked=name in secret_fields)
        if isinstance(field, str):
            return field
        fields.append(field)
    return tuple(fields)


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
    "a form (they must use URL mode). The answer is treated as a secret: not shown as you "
    "type, never recorded, remembered or sent to the model."
)


class FormFill:
    """A form: the decision, then its fields one by one."""

    def __init__(
        self, request: Request, fields: tuple[_Field, ...], *, server: str, tool: str
    ) -> None:
        """Fill ``request``, whose schema gave ``fields``."""
        self.request = request
        self.fields = fields
        self.server = server
        self.tool = tool
        #: -1: the decision; then the index of the field being asked.
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

    def _done(self) -> bool:
        return self.declined or self.position >= len(self.fields)

    def question(self) -> Question | None:
        """The decision, then each field's question; ``None`` once declined or filled."""
        if self._done():
            return None
        if self.position < 0:
            return self._decision()
        return self._field_question(self.fields[self.position])

    def take(self, answer: ToolAnswer) -> None:
        """Take the answer to the current question; an answer that does not fit is asked again."""
        self.note = None
        if self.position < 0:
            if answer == DECLINE:
                self.declined = True
            self.position = 0
            return
        field = self.fields[self.position]
        parsed = field.parse(answer)
        if isinstance(parsed, _Invalid):
            self.note = f"The last answer was refused: {parsed.why}."
            return
        if not isinstance(parsed, _Omitted):
            self.content[field.name] = parsed
        self.position += 1

    def reply(self) -> Reply:
        """``decline``, or ``accept`` with every field answered."""
        if self.declined:
            return Reply(action="decline")
        return Reply(action="accept", content=dict(self.content))

    def _secret_fields(self) -> list[_Field]:
        return [field for field in self.fields if field.secret_because is not None]

    def _decision(self) -> Question:
        count = len(self.fields)
        listed = "; ".join(
            f"{field.name}{'' if field.required else ' (optional)'}" for field in self.fields
        )
        lines = [
            f"{_asker(self.server, self.tool)} asks you to fill in a form.",
            f"Its fields: {listed}." if count else "It has no fields: it asks you to confirm.",
            "Answer 'accept' to answer them, or 'decline' to refuse (the server is told so).",
        ]
        lines += [
            _FORBIDDEN_IN_A_FORM.format(because=f"field {field.name!r}: {field.secret_because}")
            for field in self._secret_fields()
        ]
        fields = f"answer its {count} field{'s' if count != 1 else ''}" if count else "confirm"
        return Question(
            id=self.key,
            text=self.request.message or "The server asks for input.",
            answer_type=AnswerType.select(
                (
                    SelectOption(value=ACCEPT, description=fields),
                    SelectOption(value=DECLINE, description="refuse; the server is told so"),
                )
            ),
            default=ACCEPT,
            context="\n".join(lines),
            exclusive=self.exclusive,
        )

    def _field_question(self, field: _Field) -> Question:
        position = self.position + 1
        label = field.title if field.title and field.title != field.text else None
        named = f"{label} ({field.name})" if label else field.name
        lines = [
            f"{_asker(self.server, self.tool)}, form: {self.request.message}",
            f"Field {position} of {len(self.fields)}: {named}"
            + ("" if field.required else " (optional)"),
        ]
        if hint := field.hint():
            lines.append(hint)
        if field.secret_because is not None:
            lines.append(_FORBIDDEN_IN_A_FORM.format(because=field.secret_because))
        if self.note is not None:
            lines.append(self.note)
        return Question(
            id=f"{self.key}.{field.name}",
            text=field.text,
            answer_type=field.answer_type(),
            default=field.question_default(),
            context="\n".join(lines),
            exclusive=self.exclusive,
        )


class UrlFill:
    """A URL request: one secret question, for the person alone."""

    def __init__(self, request: Request, *, server: str, tool: str) -> None:
        """Fill ``request``, whose link was checked."""
        self.request = request
        self.server = server
        self.tool = tool
        self.action: Literal["accept", "decline"] | None = None
        self.note: str | None = None

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
                "Press Enter once you have completed it, or type 'decline' to refuse. "
                "What you type is not shown and not recorded."
            ),
        ]
        if self.note is not None:
            lines.append(self.note)
        return Question(
            id=self.key,
            # Servers often repeat the link, token and all, in the message.
            text=shown_links(self.request.message) or f"Open {shown}",
            answer_type=AnswerType.secret(),
            context="\n".join(lines),
            # A link to open in a browser: a person's to follow, never the model's.
            exclusive=True,
        )

    def take(self, answer: ToolAnswer) -> None:
        """An empty reply accepts, ``decline`` declines; anything else is asked again."""
        reply = answer.reveal() if isinstance(answer, SecretValue) else answer
        said = reply.strip().lower() if isinstance(reply, str) else None
        if said == "":
            self.action, self.note = "accept", None
        elif said == DECLINE:
            self.action, self.note = "decline", None
        else:
            # Never quoted: whatever was typed at a secret prompt stays unseen.
            self.note = "The last reply was neither empty nor 'decline'."

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
    fields = _fields(request.schema, secret_fields)
    if isinstance(fields, str):
        return fields
    return FormFill(request, fields, server=server, tool=tool)
