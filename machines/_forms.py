"""A form: several typed fields asked as one question, answered by one object.

Theory of operation: a :class:`Form` is the answer type of a question that
asks for several values at once (an MCP server's form, ``docs/mcp.md``). It
is a tuple of :class:`FormField`, each typed (:class:`FieldKind`): a
boolean, one choice among options, several choices among options, text
(with a length and a :class:`TextFormat`), a whole number or a number (with
bounds). The answer is **one JSON object**, a value for each field answered
(an optional field may be left out), or the string :data:`DECLINE`: the one
who answers refused to fill it in. Both are answers, recorded as such; a
cancel (Esc, Ctrl-C) is no answer, and closes the question ``cancelled``.

A form holds **no secret field**: a secret is a question of its own
(:meth:`~machines.AnswerType.secret`), whose answer is never recorded; a
form's answer always is. Whoever builds a form from a schema that asks for
a secret asks that field apart (``docs/mcp.md``, *Secrets*).

Schemas: :meth:`Form.json_schema` writes the form as the flat JSON schema
MCP's forms use (``type: object``; each property a boolean, a string, an
enumerated string, an array of enumerated strings, an integer or a number),
and :meth:`Form.from_json_schema` reads one back, refusing what a form may
not hold (:class:`FormSchemaError`, naming the field). The two are inverse:
a form written and read back is the same form. The schema is what a model
is shown, and what a conversation records of the form.

Every refusal of an answer (:meth:`Form.problem`) names the field and the
rule it breaks, never the value given.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Final

import attrs

from machines._errors import RecordError
from machines._json import JsonValue, json_type
from machines._options import SelectOption, to_options
from machines.validators import (
    json_value,
    non_empty_string,
    of_type,
    optional_of_type,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "DECLINE",
    "FieldKind",
    "Form",
    "FormField",
    "FormSchemaError",
    "TextFormat",
    "typed_number",
]

#: The answer that refuses to fill a form in.
DECLINE: Final = "decline"


def typed_number(text: str) -> int | float | None:
    """The number ``text`` says: a whole number when it reads as one, else a float; or none.

    What a person typed in a number field; the field's own rules
    (:meth:`FormField.problem`) then hold it to its kind and bounds.
    """
    words = text.strip()
    try:
        return int(words)
    except ValueError:
        pass
    try:
        return float(words)
    except ValueError:
        return None


class FieldKind(enum.Enum):
    """What a field of a form takes; the values name the kinds in words and in errors."""

    BOOLEAN = "boolean"
    CHOICE = "choice"
    CHOICES = "choices"
    TEXT = "text"
    INTEGER = "integer"
    NUMBER = "number"


class TextFormat(enum.Enum):
    """The formats a text field may require (MCP's four); values are JSON schema's names."""

    EMAIL = "email"
    URI = "uri"
    DATE = "date"
    DATE_TIME = "date-time"


class FormSchemaError(RecordError):
    """A JSON schema that is no form's; the message names the field and the fault."""


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
#: The largest integer a form takes (JSON's, as orjson writes it).
_LARGEST_INTEGER = 2**63 - 1

_CHOICE_KINDS = frozenset({FieldKind.CHOICE, FieldKind.CHOICES})
_NUMBER_KINDS = frozenset({FieldKind.INTEGER, FieldKind.NUMBER})


def _email_problem(text: str) -> str | None:
    return None if _EMAIL.fullmatch(text) else "an email address"


def _uri_problem(text: str) -> str | None:
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return "a URI"
    return None if parts.scheme and (parts.netloc or parts.path) else "a URI"


def _date_problem(text: str) -> str | None:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return "a date (YYYY-MM-DD)"
    return None


def _date_time_problem(text: str) -> str | None:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return "a date and time (YYYY-MM-DDTHH:MM:SS, with its time zone)"
    return None if moment.tzinfo is not None else "a date and time with its time zone"


#: Each format's check: ``None``, or what the text should have been, in words.
_FORMAT_CHECKS: Final[Mapping[TextFormat, Callable[[str], str | None]]] = {
    TextFormat.EMAIL: _email_problem,
    TextFormat.URI: _uri_problem,
    TextFormat.DATE: _date_problem,
    TextFormat.DATE_TIME: _date_time_problem,
}

#: Each format in words, for what a field takes.
FORMAT_WORDS: Final[Mapping[TextFormat, str]] = {
    TextFormat.EMAIL: "an email address",
    TextFormat.URI: "a URI (such as https://example.com/)",
    TextFormat.DATE: "a date (YYYY-MM-DD)",
    TextFormat.DATE_TIME: "a date and time (YYYY-MM-DDTHH:MM:SS, with its time zone)",
}


def _count(low: int | None, high: int | None, unit: str) -> str:
    def many(count: int) -> str:
        return f"{count} {unit}{'' if count == 1 else 's'}"

    if low is not None and high is not None:
        return many(low) if low == high else f"{low} to {high} {unit}s"
    if low is not None:
        return f"at least {many(low)}"
    if high is not None:
        return f"at most {many(high)}"
    return ""


def shown_number(value: float) -> str:
    """A bound as a person reads it: ``3`` rather than ``3.0``."""
    return str(int(value)) if float(value).is_integer() else str(value)


def _between(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {shown_number(low)} to {shown_number(high)}"
    if low is not None:
        return f" of at least {shown_number(low)}"
    if high is not None:
        return f" of at most {shown_number(high)}"
    return ""


def _size(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (type(value) is not int or value < 0):
        raise RecordError(
            f"{type(instance).__name__}.{attribute.name} must be a whole number of at least 0"
        )


def _bound(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(
            f"{type(instance).__name__}.{attribute.name} must be a number, not {json_type(value)}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise RecordError(f"{type(instance).__name__}.{attribute.name} must be a finite number")


def _field_options(value: Iterable[str | SelectOption]) -> tuple[SelectOption, ...]:
    return to_options(value, where="FormField.options")


@attrs.frozen(kw_only=True)
class FormField:
    """One field of a form: its name (the answer's key), its kind, and what fits it.

    ``options`` belong to the choice kinds (and are required there, each
    value once); the bounds to their kinds: ``minimum``/``maximum`` to the
    numbers, ``min_length``/``max_length``/``format`` to text,
    ``min_items``/``max_items`` to several choices. ``default`` is kept as
    given (any JSON value); only a default that fits is offered
    (:attr:`offered_default`).
    """

    name: str = attrs.field(validator=non_empty_string)
    kind: FieldKind = attrs.field(validator=of_type(FieldKind))
    required: bool = attrs.field(default=False, validator=of_type(bool))
    title: str | None = attrs.field(default=None, validator=optional_of_type(str))
    description: str | None = attrs.field(default=None, validator=optional_of_type(str))
    options: tuple[SelectOption, ...] = attrs.field(default=(), converter=_field_options)
    default: JsonValue = attrs.field(default=None, validator=json_value)
    minimum: float | None = attrs.field(default=None, validator=_bound)
    maximum: float | None = attrs.field(default=None, validator=_bound)
    min_length: int | None = attrs.field(default=None, validator=_size)
    max_length: int | None = attrs.field(default=None, validator=_size)
    format: TextFormat | None = attrs.field(default=None, validator=optional_of_type(TextFormat))
    min_items: int | None = attrs.field(default=None, validator=_size)
    max_items: int | None = attrs.field(default=None, validator=_size)

    def __attrs_post_init__(self) -> None:
        """Each bound on its kind only, and a choice's options given, each value once."""
        where = f"form field {self.name!r}"
        if self.kind in _CHOICE_KINDS:
            if not self.options:
                raise RecordError(f"{where} offers no options")
            values = [option.value for option in self.options]
            if len(set(values)) != len(values):
                raise RecordError(f"{where} offers the same value twice")
        elif self.options:
            raise RecordError(f"{where} is of kind {self.kind.value}: it has no options")
        kinds: tuple[tuple[tuple[str, ...], frozenset[FieldKind] | tuple[FieldKind, ...]], ...] = (
            (("minimum", "maximum"), _NUMBER_KINDS),
            (("min_length", "max_length", "format"), (FieldKind.TEXT,)),
            (("min_items", "max_items"), (FieldKind.CHOICES,)),
        )
        for names, allowed in kinds:
            for name in names:
                if getattr(self, name) is not None and self.kind not in allowed:
                    raise RecordError(f"{where} is of kind {self.kind.value}: it has no {name}")
        for low, high in (
            ("minimum", "maximum"),
            ("min_length", "max_length"),
            ("min_items", "max_items"),
        ):
            lowest, highest = getattr(self, low), getattr(self, high)
            if lowest is not None and highest is not None and lowest > highest:
                raise RecordError(f"{where} has a {low} above its {high}")

    @property
    def label(self) -> str:
        """The field as a person reads it: its title, else its name."""
        return self.title or self.name

    @property
    def option_values(self) -> tuple[str, ...]:
        """The values a choice field takes, in order."""
        return tuple(option.value for option in self.options)

    @property
    def offered_default(self) -> JsonValue:
        """The default, when it fits the field; ``None`` otherwise."""
        if self.default is None or self.problem(self.default) is not None:
            return None
        return self.default

    def expected(self) -> str:
        """What a value of this field must be, in words."""
        kind = self.kind
        if kind is FieldKind.BOOLEAN:
            return "true or false"
        if kind is FieldKind.CHOICE:
            return "one of " + ", ".join(repr(value) for value in self.option_values)
        if kind is FieldKind.CHOICES:
            counted = _count(self.min_items, self.max_items, "value")
            values = ", ".join(repr(value) for value in self.option_values)
            return f"a list of distinct values among {values}" + (
                f" ({counted})" if counted else ""
            )
        if kind in _NUMBER_KINDS:
            what = "a whole number" if kind is FieldKind.INTEGER else "a number"
            return what + _between(self.minimum, self.maximum)
        what = FORMAT_WORDS[self.format] if self.format is not None else "text"
        counted = _count(self.min_length, self.max_length, "character")
        return what + (f" ({counted})" if counted else "")

    def problem(self, value: object) -> str | None:
        """Why ``value`` does not fit this field; ``None`` when it does. Never quotes it."""
        fits = _FITS[self.kind](self, value)
        return None if fits else f"field {self.name!r} must be {self.expected()}"

    def json_schema(self) -> dict[str, JsonValue]:
        """The field as a property of a form's JSON schema (MCP's shapes)."""
        schema: dict[str, JsonValue] = {"type": _SCHEMA_TYPES[self.kind]}
        if self.title is not None:
            schema["title"] = self.title
        if self.description is not None:
            schema["description"] = self.description
        if self.kind is FieldKind.CHOICE:
            schema.update(_choices_schema(self.options))
        elif self.kind is FieldKind.CHOICES:
            schema["items"] = {"type": "string", **_choices_schema(self.options)}
        bounds = (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("format", self.format.value if self.format is not None else None),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
            ("default", self.default),
        )
        schema.update((key, value) for key, value in bounds if value is not None)
        return schema

    @classmethod
    def from_json_schema(cls, name: str, spec: object, *, required: bool) -> FormField:
        """The field ``name`` a schema describes by ``spec`` (:class:`FormSchemaError`: none)."""
        return read_field(name, spec, required=required)


def _fits_boolean(_field: FormField, value: object) -> bool:
    return type(value) is bool


def _fits_choice(field: FormField, value: object) -> bool:
    return type(value) is str and value in field.option_values


def _fits_choices(field: FormField, value: object) -> bool:
    if type(value) is not list or not all(type(item) is str for item in value):
        return False
    allowed = set(field.option_values)
    return (
        all(item in allowed for item in value)
        and len(set(value)) == len(value)
        and (field.min_items is None or len(value) >= field.min_items)
        and (field.max_items is None or len(value) <= field.max_items)
    )


def _fits_text(field: FormField, value: object) -> bool:
    if type(value) is not str:
        return False
    if (field.min_length is not None and len(value) < field.min_length) or (
        field.max_length is not None and len(value) > field.max_length
    ):
        return False
    return field.format is None or _FORMAT_CHECKS[field.format](value) is None


def _fits_number(field: FormField, value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and (field.kind is FieldKind.INTEGER or not math.isfinite(value)):
        return False
    if isinstance(value, int) and abs(value) > _LARGEST_INTEGER:
        return False
    return (field.minimum is None or value >= field.minimum) and (
        field.maximum is None or value <= field.maximum
    )


#: Whether a value fits a field, by the field's kind.
_FITS: Final[Mapping[FieldKind, Callable[[FormField, object], bool]]] = {
    FieldKind.BOOLEAN: _fits_boolean,
    FieldKind.CHOICE: _fits_choice,
    FieldKind.CHOICES: _fits_choices,
    FieldKind.TEXT: _fits_text,
    FieldKind.INTEGER: _fits_number,
    FieldKind.NUMBER: _fits_number,
}

_SCHEMA_TYPES: Final[Mapping[FieldKind, str]] = {
    FieldKind.BOOLEAN: "boolean",
    FieldKind.CHOICE: "string",
    FieldKind.CHOICES: "array",
    FieldKind.TEXT: "string",
    FieldKind.INTEGER: "integer",
    FieldKind.NUMBER: "number",
}


def _choices_schema(choices: tuple[SelectOption, ...]) -> dict[str, JsonValue]:
    """Options as a schema says them: a plain ``enum``, or ``oneOf`` consts with titles."""
    if all(option.description is None for option in choices):
        return {"enum": [option.value for option in choices]}
    consts: list[JsonValue] = []
    for option in choices:
        const: dict[str, JsonValue] = {"const": option.value}
        if option.description is not None:
            const["title"] = option.description
        consts.append(const)
    return {"oneOf": consts}


def _answered(field: FormField, answer: Mapping[str, object]) -> str | None:
    """Why ``answer``, a form's, does not answer ``field`` as it must; ``None`` when it does."""
    if field.name not in answer:
        return f"field {field.name!r} is required" if field.required else None
    if answer[field.name] is None:
        return f"field {field.name!r} is null: leave an optional field out instead"
    return field.problem(answer[field.name])


def _unique_names(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, tuple) or not all(isinstance(f, FormField) for f in value):
        raise RecordError(f"{type(instance).__name__}.{attribute.name} must hold FormFields")
    names = [field.name for field in value]
    if len(set(names)) != len(names):
        raise RecordError("a form has two fields of the same name")


def _fields(value: Iterable[FormField]) -> tuple[FormField, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Form:
    """The fields a form asks for, in order (each name once).

    Its answer is a JSON object of the fields' values (an optional field may
    be left out), or :data:`DECLINE`.
    """

    fields: tuple[FormField, ...] = attrs.field(converter=_fields, validator=_unique_names)

    def field(self, name: str) -> FormField | None:
        """The field called ``name``, if there is one."""
        return next((field for field in self.fields if field.name == name), None)

    def problem(self, answer: object) -> str | None:
        """Why ``answer`` is no answer to this form; ``None`` when it is. Never quotes a value."""
        if answer == DECLINE:
            return None
        if type(answer) is not dict:
            return (
                "a form's answer must be an object of its fields' values, "
                f"or {DECLINE!r}, not {json_type(answer)}"
            )
        known = {field.name for field in self.fields}
        for name in answer:
            if type(name) is not str or name not in known:
                shown = repr(name[:40]) if type(name) is str else json_type(name)
                return f"the form has no field {shown}"
        return next(
            (problem for field in self.fields if (problem := _answered(field, answer))), None
        )

    def expected(self) -> str:
        """What an answer must be, in words."""
        if not self.fields:
            return f"an empty object (to confirm), or {DECLINE!r}"
        listed = "; ".join(
            f"{field.name} ({'required' if field.required else 'optional'}): {field.expected()}"
            for field in self.fields
        )
        return f"an object of the form's fields ({listed}), or {DECLINE!r}"

    def defaults(self) -> dict[str, JsonValue] | None:
        """The answer the fields' defaults make, when every required field has one that fits."""
        answer: dict[str, JsonValue] = {}
        for field in self.fields:
            default = field.offered_default
            if default is not None:
                answer[field.name] = default
            elif field.required:
                return None
        return answer

    def json_schema(self) -> dict[str, JsonValue]:
        """The form as the flat JSON schema an MCP form uses."""
        schema: dict[str, JsonValue] = {
            "type": "object",
            "properties": {field.name: field.json_schema() for field in self.fields},
        }
        required: list[JsonValue] = [field.name for field in self.fields if field.required]
        if required:
            schema["required"] = required
        return schema

    @classmethod
    def from_json_schema(cls, schema: object) -> Form:
        """The form ``schema`` describes, or :class:`FormSchemaError` saying why it is none.

        Keywords a form does not use are ignored (a ``pattern``, an
        ``exclusive`` mark, a format MCP does not name); a kind a form may
        not hold (an object, an array of free values, no type) is refused,
        naming the field.
        """
        if type(schema) is not dict:
            raise FormSchemaError("its schema is not a JSON object")
        if schema.get("type", "object") != "object":
            raise FormSchemaError("its schema is not of type object")
        properties = schema.get("properties", {})
        if type(properties) is not dict:
            raise FormSchemaError("its schema's properties are not a JSON object")
        required = schema.get("required", [])
        if type(required) is not list:
            raise FormSchemaError("its schema's required is not a list")
        fields = []
        for name, spec in properties.items():
            if type(name) is not str or not name:
                raise FormSchemaError("its schema has a field without a name")
            fields.append(read_field(name, spec, required=name in required))
        return cls(fields=fields)


def read_field(name: str, spec: object, *, required: bool) -> FormField:
    """The field ``name`` of a form's schema, or :class:`FormSchemaError` saying why not."""
    if type(spec) is not dict:
        raise FormSchemaError(f"field {name!r} is not described by a JSON object")
    kind = spec.get("type")
    choices = _choices(spec)
    common: dict[str, Any] = {
        "name": name,
        "required": required,
        "title": _text(spec, "title"),
        "description": _text(spec, "description"),
        "default": spec.get("default"),
    }
    try:
        if kind in ("string", None) and choices is not None:
            return FormField(kind=FieldKind.CHOICE, options=choices, **common)
        if kind == "boolean":
            return FormField(kind=FieldKind.BOOLEAN, **common)
        if kind == "string":
            format_ = spec.get("format")
            text_format = next((f for f in TextFormat if f.value == format_), None)
            return FormField(
                kind=FieldKind.TEXT,
                min_length=_whole(spec, "minLength"),
                max_length=_whole(spec, "maxLength"),
                format=text_format,
                **common,
            )
        if kind in ("integer", "number"):
            return FormField(
                kind=FieldKind.INTEGER if kind == "integer" else FieldKind.NUMBER,
                minimum=_number(spec, "minimum"),
                maximum=_number(spec, "maximum"),
                **common,
            )
        items = spec.get("items")
        if kind == "array" and type(items) is dict and (listed := _choices(items)) is not None:
            return FormField(
                kind=FieldKind.CHOICES,
                options=listed,
                min_items=_whole(spec, "minItems"),
                max_items=_whole(spec, "maxItems"),
                **common,
            )
    except RecordError as error:
        raise FormSchemaError(str(error)) from None
    shown = kind if type(kind) is str else "no type"
    raise FormSchemaError(f"field {name!r} is of a kind a form may not ask for ({shown})")


def _text(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    return value if type(value) is str else None


def _number(spec: Mapping[str, Any], key: str) -> float | None:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) and abs(value) <= _LARGEST_INTEGER else None


def _whole(spec: Mapping[str, Any], key: str) -> int | None:
    value = spec.get(key)
    return value if type(value) is int and value >= 0 else None


def _choices(spec: Mapping[str, Any]) -> tuple[SelectOption, ...] | None:
    """The options of an enumerated string, titled (``oneOf``/``anyOf``) or not (``enum``)."""
    values = spec.get("enum")
    if type(values) is list:
        if not values or not all(type(value) is str for value in values):
            return None
        names = spec.get("enumNames")
        titles = names if type(names) is list and len(names) == len(values) else None
        return tuple(
            SelectOption(value=value, description=_title(titles[i]) if titles else None)
            for i, value in enumerate(values)
        )
    for key in ("oneOf", "anyOf"):
        consts = spec.get(key)
        if type(consts) is list and consts:
            found = []
            for const in consts:
                if type(const) is not dict or type(const.get("const")) is not str:
                    return None
                found.append(
                    SelectOption(value=const["const"], description=_title(const.get("title")))
                )
            return tuple(found)
    return None


def _title(value: object) -> str | None:
    return value if type(value) is str else None
