"""Validators that make invalid records impossible to construct.

Each raises :class:`RecordError` naming the record, the field and what was
expected. They describe the *type* of a bad value, never the value itself, so a
secret handed to the wrong field cannot leak through the message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from machines._errors import RecordError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

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
        f"{type(instance).__name__}.{attribute.name} must be {expected}, "
        f"not {type(value).__name__}"
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
                    f"{kind.__name__}, not {type(item).__name__}"
                )

    return validate


def is_json(value: object) -> bool:
    """Whether ``value`` is a JSON value that round-trips exactly.

    Strict where JSON is: string keys only, finite floats only (``orjson``
    would silently write NaN as ``null``), and no other types.
    """
    if type(value) is dict:
        # Most values checked are objects of plain scalars (arguments, metadata,
        # a recorded answer's object): those are read without building a stack.
        nested = _nested_children(value)
        return nested is not None and (not nested or _all_json(nested, value))
    return _all_json([value], value)


def _nested_children(value: dict[Any, object]) -> list[object] | None:
    """The children of ``value`` that are not strings, booleans, integers or null.

    ``None`` when a key is not a string.
    """
    nested = []
    for key, child in value.items():
        if type(key) is not str:
            return None
        kind = type(child)
        if not (kind is str or kind is bool or kind is int or child is None):
            nested.append(child)
    return nested


#: Values the plain walk looks at before it suspects a cycle and checks exactly.
_VALUES_BEFORE_CYCLE_CHECK = 1_000_000


def _all_json(stack: list[object], root: object) -> bool:
    """Whether every value on ``stack``, and everything inside them, is JSON (empties it).

    ``stack`` holds ``root``'s values still to check (or ``root`` itself).
    """
    # A value that contains itself would keep this walk going for ever. Tracking
    # the containers seen would cost every call; counting what is pushed costs
    # next to nothing, and only a value this large pays for the exact check.
    budget = _VALUES_BEFORE_CYCLE_CHECK
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or kind is int or item is None:
            continue
        if kind is float:
            if not math.isfinite(item):  # type: ignore[arg-type]
                return False
            continue
        if kind is not dict and kind is not list:
            return False
        budget -= len(item)  # type: ignore[arg-type]
        if budget < 0:
            return _acyclic_json(root)
        if kind is dict:
            for key, child in item.items():  # type: ignore[attr-defined]
                if type(key) is not str:
                    return False
                stack.append(child)
        else:
            stack.extend(item)  # type: ignore[arg-type]
    return True


def _acyclic_json(root: object) -> bool:
    """Like :func:`_all_json`, but a container inside itself is not JSON.

    Depth first, keeping the containers on the current path; a container
    checked once is not checked again, so a value sharing one list in many
    places (which JSON writes out in full) costs what its distinct parts do.
    """
    done: set[int] = set()
    path: set[int] = set()
    # Each frame: a container (None above the root), and its children still to check.
    frames: list[tuple[object, Iterator[object]]] = [(None, iter((root,)))]
    while frames:
        container, children = frames[-1]
        child = next(children, _END)
        if child is _END:
            frames.pop()
            path.discard(id(container))
            done.add(id(container))
            continue
        kind = type(child)
        if kind is not dict and kind is not list:
            if not _plain_json(child):
                return False
        elif id(child) in path:
            return False
        elif id(child) not in done:
            items: dict[object, object] | list[object] = child  # type: ignore[assignment]
            if isinstance(items, dict):
                if any(type(key) is not str for key in items):
                    return False
                path.add(id(child))
                frames.append((child, iter(items.values())))
            else:
                path.add(id(child))
                frames.append((child, iter(items)))
    return True


def _plain_json(item: object) -> bool:
    kind = type(item)
    if kind is float:
        return math.isfinite(item)  # type: ignore[arg-type]
    return kind is str or kind is bool or kind is int or item is None


_END = object()


def check_json(where: str, value: object) -> None:
    """Raise :class:`RecordError` unless ``value`` is a JSON value."""
    if not is_json(value):
        raise RecordError(f"{where} must be a JSON value (str, number, bool, null, list, dict)")


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
