"""JSON values: the type records hold, the one walk over them, and the one name of each kind.

Theory of operation. Everything that asks a question of a whole JSON value
(is it JSON at all, does a file's number fit in 64 bits, does a
configuration value nest too deeply) asks it through :func:`json_fault`,
which walks the value once, depth first and in the order the value would be
written, and stops at the first thing wrong. What counts as wrong is said by
its caller, leaf by leaf: a table from a leaf's exact type to a rule that
names its problem (a type the table leaves out is judged by ``others``). The
walk itself refuses, whatever the rules, what no JSON value can be: a key
that is not a string, and a container inside itself (which would make it
endless). Given a ``max_depth``, it also refuses a container nested deeper.

Only ``dict`` and ``list`` are containers, and only exactly (a subclass is
a leaf, for the rules to judge): that is what a parser gives and what
``orjson`` writes as such. A container met again elsewhere in the value is
not walked again, so a value sharing one list in many places costs what its
distinct parts do (unless ``max_depth`` is given: a part shared deeper down
could be too deep there).

A fault says where (the keys and indices from the top, :func:`json_path`
spells them) and what, in words: never the value, which may be a secret.
:func:`json_type` is the one way every layer names the kind of a value in an
error ("expected a string, got an array").
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from operator import length_hint
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

__all__ = [
    "JSON_LEAVES",
    "TOO_DEEP",
    "JsonFault",
    "JsonPath",
    "JsonValue",
    "LeafRule",
    "LeafRules",
    "is_json",
    "json_fault",
    "json_path",
    "json_type",
    "leaf_rules",
]

if TYPE_CHECKING:
    #: Any value JSON can carry: what tools answer with, what arguments hold.
    JsonValue: TypeAlias = (
        bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
    )
else:
    # At run time the alias is Any, so cattrs passes JSON through untouched;
    # record validators (is_json, below) do the checking.
    JsonValue: TypeAlias = Any


# ------------------------------------------------------------------ names

_NAMES: Final[Mapping[type, str]] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    dict: "an object",
    list: "an array",
    type(None): "null",
    dt.datetime: "a date-time",
    dt.date: "a date",
    dt.time: "a time",
}


def json_type(value: object, *, toml: bool = False) -> str:
    """What ``value`` is, in JSON's words ("a string", "an object", "null").

    With ``toml``, in TOML's: an object is "a table". A type JSON has no
    word for is named by its Python name ("tuple").
    """
    kind = type(value)
    if toml and kind is dict:
        return "a table"
    return _NAMES.get(kind) or kind.__name__


# ------------------------------------------------------------------ the walk

#: Keys and indices from the top of a value to a place inside it.
JsonPath: TypeAlias = tuple[str | int, ...]
#: A leaf's problem, in words that follow its place ("is a float that is not
#: finite"), or ``None`` when it has none.
LeafRule: TypeAlias = Callable[[Any], str | None]


class JsonFault(NamedTuple):
    """The first thing wrong in a value: where it is, and what (in words that follow a place)."""

    path: JsonPath
    problem: str

    def __str__(self) -> str:
        """The fault in a sentence: ``the value at 'a.b[0]' is of type set, ...``."""
        if not self.path:
            return f"the value {self.problem}"
        return f"the value at {json_path(self.path)!r} {self.problem}"


def json_path(path: JsonPath) -> str:
    """``path`` as the errors spell it: ``arguments.files[0].name`` (``""`` for the top)."""
    spelled = ""
    for step in path:
        if type(step) is int:
            spelled += f"[{step}]"
        else:
            spelled = f"{spelled}.{step}" if spelled else str(step)
    return spelled


def _cannot_hold(value: object) -> str:
    # A value built in Python: its Python type says best what it is.
    return f"is of type {type(value).__name__}, which JSON cannot hold"


def _finite(value: float) -> str | None:
    # orjson would write NaN and the infinities as null: not the value read back.
    if math.isfinite(value):
        return None
    return "is a float that is not finite, which JSON cannot hold"


class LeafRules(NamedTuple):
    """How a walk judges a leaf: by its exact type, always sound, or by a rule."""

    #: The types of leaves that are always sound.
    sound: frozenset[type]
    #: The rule of each type of leaf that has one.
    checked: Mapping[type, LeafRule]
    #: The rule of a leaf of any other type.
    others: LeafRule


def leaf_rules(
    rules: Mapping[type, LeafRule | None], others: LeafRule = _cannot_hold
) -> LeafRules:
    """The :class:`LeafRules` of ``rules`` (a type's rule, ``None`` when always sound)."""
    return LeafRules(
        sound=frozenset(kind for kind, rule in rules.items() if rule is None),
        checked={kind: rule for kind, rule in rules.items() if rule is not None},
        others=others,
    )


#: The leaves of a JSON value that round-trips exactly: strings, booleans,
#: integers, null and finite floats. No other type.
JSON_LEAVES: Final = leaf_rules(
    {str: None, bool: None, int: None, type(None): None, float: _finite}
)

#: The leaves that are JSON whatever their value.
_SOUND_LEAVES: Final = JSON_LEAVES.sound

#: The walk's own faults, whatever the rules.
_NOT_A_STRING_KEY = "has a key of type {}, not a string"
_INSIDE_ITSELF = "contains itself"
#: The problem of a container nested deeper than the walk's ``max_depth``.
TOO_DEEP: Final = "is nested too deeply"

#: Containers the plain walk enters, and how deep it goes, before it suspects a
#: cycle and walks again, carefully. Counting costs next to nothing;
#: remembering every container entered, to tell a cycle from a part shared in
#: many places, costs each walk. (A file nests at most 1,024 levels: orjson
#: reads no deeper.)
_CONTAINERS_BEFORE_CARE = 1_000_000
_DEPTH_BEFORE_CARE = 1_024

#: Where a walk has gone through every item of a container.
_END: Final[Any] = object()


def json_fault(
    value: object,
    rules: LeafRules = JSON_LEAVES,
    *,
    max_depth: int | None = None,
) -> JsonFault | None:
    """The first fault in ``value``, in the order it would be written; ``None`` if none.

    ``rules`` judges each leaf. A key that is not a string, a container
    inside itself and, with ``max_depth``, a container nested deeper than
    that many containers (the top one counts) are faults whatever the rules.
    """
    return _walk(value, rules, max_depth, max_depth is not None)


def _walk(  # noqa: C901, PLR0911, PLR0912, PLR0915 - one loop (its speed is every load's), every case in it
    value: object,
    rules: LeafRules,
    max_depth: int | None,
    careful: bool,
) -> JsonFault | None:
    """:func:`json_fault`, plain or careful.

    Plain, the walk only counts the containers it enters and how deep it is;
    past :data:`_CONTAINERS_BEFORE_CARE` or :data:`_DEPTH_BEFORE_CARE` it
    starts again, carefully: it keeps the containers on the way down (one met
    again there is inside itself), and those walked whole (one met again
    elsewhere is not walked again).
    """
    sound, checked, others = rules
    kind = type(value)
    items: Any
    if kind is dict:
        items = iter(value.items())  # type: ignore[attr-defined]
    elif kind is list:
        items = iter(value)  # type: ignore[call-overload]
    else:
        if kind in sound:
            return None
        problem = checked.get(kind, others)(value)
        return None if problem is None else JsonFault((), problem)
    # The current container and its items still to walk; above it, each
    # container on the way down with its items, and the key of the one below.
    container: Any = value
    key: Any = None
    above: list[tuple[Any, Any, Any]] = []
    budget = _CONTAINERS_BEFORE_CARE
    # Careful, the containers on the way down and those walked whole.
    on_path: set[int] | None = {id(value)} if careful else None
    walked: set[int] | None = set() if careful and max_depth is None else None
    while True:
        if kind is dict:
            for key, child in items:
                if type(key) is not str:
                    where = _path(above, container)
                    return JsonFault(where, _NOT_A_STRING_KEY.format(type(key).__name__))
                if type(child) not in sound:
                    break
            else:
                child = _END
        else:
            # An array's items are not pairs: its own loop, without a key to look at.
            for child in items:
                if type(child) not in sound:
                    break
            else:
                child = _END
        if child is _END:
            if on_path is not None:
                on_path.discard(id(container))
                if walked is not None:
                    walked.add(id(container))
            if not above:
                return None
            items, container, key = above.pop()
            kind = type(container)
            continue
        kind = type(child)
        if kind is not dict and kind is not list:
            problem = checked.get(kind, others)(child)
            if problem is not None:
                return JsonFault(_path(above, container, items, key), problem)
            kind = type(container)  # and on with its items
            continue
        if on_path is not None:
            ident = id(child)
            if walked is not None and ident in walked:
                kind = type(container)
                continue
            if ident in on_path:
                return JsonFault(_path(above, container, items, key), _INSIDE_ITSELF)
            if max_depth is not None and len(above) + 1 >= max_depth:
                return JsonFault(_path(above, container, items, key), TOO_DEEP)
            on_path.add(ident)
        else:
            budget -= 1
            if budget < 0 or len(above) == _DEPTH_BEFORE_CARE:
                return _walk(value, rules, max_depth, True)  # noqa: FBT003
        above.append((items, container, key))
        container = child
        items = iter(child.items()) if kind is dict else iter(child)


def _path(
    above: list[tuple[Any, Any, Any]], container: Any, items: Any = _END, key: Any = None
) -> JsonPath:
    """The path to ``container``, or to its item just taken from ``items`` (``key``, in an object).

    In an array the item's index is where its iterator stands: the walk
    keeps no count, which would cost every item.
    """
    steps = [*above, (items, container, key)] if items is not _END else above
    return tuple(
        at if type(holder) is dict else len(holder) - length_hint(its) - 1
        for its, holder, at in steps
    )


def is_json(value: object) -> bool:
    """Whether ``value`` is a JSON value that round-trips exactly (see :data:`JSON_LEAVES`)."""
    # Every record built with a JSON field calls this, most often with a plain
    # leaf (an answer): that is answered without the walk.
    if type(value) in _SOUND_LEAVES:
        return True
    return _walk(value, JSON_LEAVES, None, False) is None  # noqa: FBT003 - positional, as fast
