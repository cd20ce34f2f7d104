"""Validators that make invalid records impossible to construct.

Each raises :class:`RecordError` naming the record, the field and what was
expected. They describe the *type* of a bad value (in JSON's words, see
:func:`machines._json.json_type`), never the value itself, so a secret handed
to the wrong field cannot leak through the message. Whether a value is JSON
is asked of the one walk over JSON values, :func:`machines._json.is_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from machines._errors import RecordError
from machines._json import is_json, json_fault, json_type

if TYPE_CHECKING:
    from collections.abc import Callable

    import attrs

__all__ = [
    "check_json",
    "is_json",
    "json_object",
    "json_value",
    "mapping_of",
    "non_empty_string",
    "of_type",
    "optional_of_type",
    "string",
]


def _fail(
    instance: object, attribute: attrs.Attribute[Any], expected: str, value: object
) -> NoReturn:
    raise RecordError(
        f"{type(instance).__name__}.{attribute.name} must be {expected}, not {json_type(value)}"
    )


def string(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Require a ``str``."""
    if type(value) is not str:
        _fail(instance, attribute, "a string", value)


def non_empty_string(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Require a non-empty ``str``."""
    if type(value) is not str:
        _fail(instance, attribute, "a non-empty string", value)
    elif not value:
        raise RecordError(f"{type(instance).__name__}.{attribute.name} must not be empty")


def of_type(*types: type) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Require an instance of one of ``types`` (``bool`` is not an ``int`` here)."""
    expected = " or ".join(t.__name__ for t in types)

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) not in types and not (
            isinstance(value, types) and not isinstance(value, bool)
        ):
            _fail(instance, attribute, expected, value)

    return validate


def optional_of_type(*types: type) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Like :func:`of_type`, but ``None`` is allowed."""
    inner = of_type(*types)

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            inner(instance, attribute, value)

    return validate


def mapping_of(kind: type) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """Require a mapping from strings to instances of ``kind``."""

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, Mapping):
            _fail(instance, attribute, f"a mapping of str to {kind.__name__}", value)
        for key, item in value.items():
            if type(key) is not str:
                _fail(instance, attribute, "a mapping with str keys", key)
            if not isinstance(item, kind):
                raise RecordError(
                    f"{type(instance).__name__}.{attribute.name}[{key!r}] must be "
                    f"{kind.__name__}, not {json_type(item)}"
                )

    return validate


def check_json(where: str, value: object) -> None:
    """Raise :class:`RecordError` unless ``value`` is a JSON value, saying where it is not."""
    fault = json_fault(value)
    if fault is not None:
        raise RecordError(
            f"{where} must be a JSON value (str, number, bool, null, list, dict): {fault}"
        )


def json_value(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Require a JSON value (see :func:`is_json`)."""
    # The field's name is formatted only for the error: this runs for every record built.
    if not is_json(value):
        check_json(f"{type(instance).__name__}.{attribute.name}", value)


def json_object(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Require a ``dict`` that is a JSON value (see :func:`is_json`)."""
    if type(value) is not dict:
        _fail(instance, attribute, "an object", value)
    if not is_json(value):  # checked here first: this runs for every entry loaded
        json_value(instance, attribute, value)  # raises, naming the record and field
