"""JSON values: the type records hold, the one walk over them, and the one name of each kind.

Theory of operation. Everything that asks a question of a whole JSON value
(is it JSON at all, does a file's number fit in 64 bits, does a
configuration value nest too deeply) asks it through :func:`json_fault`,
which walks the value once, depth first and in the order the value would be
written, and stops at the first thing wrong. What counts as wrong is said by
its caller, leaf by leaf: a table from a leaf's exact type to a rule that
names its problem (a type the table leaves out is judged by ``others``). The
walk itself refuses, whatever the rules, what no JSON value can be: a key
that is not a string, and a container nested deeper than ``max_depth``
containers, by default :data:`WRITE_DEPTH`, the deepest ``orjson`` writes
(a value nested deeper could never be saved).

The walk is recursive, one call per container, and its depth limit is its
bound: it is never more than :data:`WRITE_DEPTH` calls deep, well under
Python's recursion limit (1,000), so no value, however it was built, can
exhaust the stack, and no value is walked past the depth it could be
written at. A value inside itself is therefore found as too deep, and then
said as what it is: the containers on the way to the one too deep are
looked along for one met twice, and the fault names the place where the
value first holds itself. The walk costs what writing the value would: a
part shared in many places is walked in each, as ``orjson`` would write it
in each.

Only ``dict`` and ``list`` are containers, and only exactly (a subclass is
a leaf, for the rules to judge): that is what a parser gives and what
``orjson`` writes as such.

A fault says where (the keys and indices from the top, :func:`json_path`
spells them) and what, in words: never the value, which may be a secret.
:func:`json_type` is the one way every layer names the kind of a value in an
error ("expected a string, got an array").
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

__all__ = [
    "JSON_LEAVES",
    "TOO_DEEP",
    "WRITE_DEPTH",
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
        """The fault in a sentence: ``the value at 'a.b[0]' is of type set, ...``.

        A path longer than :data:`_SPELLED_STEPS` is said by its first steps
        and its length (a value nested too deeply has one hundreds long).
        """
        if not self.path:
            return f"the value {self.problem}"
        if len(self.path) <= _SPELLED_STEPS:
            return f"the value at {json_path(self.path)!r} {self.problem}"
        where = json_path(self.path[:_SPELLED_STEPS]) + "..."
        return f"the value at {where!r} ({len(self.path)} levels down) {self.problem}"


#: How many steps of a path a fault spells out.
_SPELLED_STEPS = 8


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

#: How many containers deep ``orjson`` writes a value (the top one counts):
#: the deepest a value a conversation holds may nest, and the walk's bound.
WRITE_DEPTH: Final = 254

#: The walk's own faults, whatever the rules.
_NOT_A_STRING_KEY = "has a key of type {}, not a string"
_INSIDE_ITSELF = "contains itself"
#: The problem of a container nested deeper than the walk's ``max_depth``.
TOO_DEEP: Final = "is nested too deeply"


def json_fault(
    value: object,
    rules: LeafRules = JSON_LEAVES,
    *,
    max_depth: int = WRITE_DEPTH,
) -> JsonFault | None:
    """The first fault in ``value``, in the order it would be written; ``None`` if none.

    ``rules`` judges each leaf. A key that is not a string, and a container
    nested deeper than ``max_depth`` containers (the top one counts; at most
    :data:`WRITE_DEPTH`), are faults whatever the rules; a container deeper
    that is inside itself is said so, where it first loops.
    """
    if not 1 <= max_depth <= WRITE_DEPTH:
        raise ValueError(f"max_depth must be from 1 to {WRITE_DEPTH}, not {max_depth}")
    fault = _fault(value, rules, max_depth)
    if fault is not None and fault.problem == TOO_DEEP:
        return _where_it_loops(value, fault)
    return fault


def _fault(value: Any, rules: LeafRules, depth: int) -> JsonFault | None:
    """:func:`json_fault` of ``value``, where ``depth`` more containers may nest (it counts)."""
    sound = rules.sound
    kind = type(value)
    items: Iterable[tuple[Any, Any]]
    if kind is dict:
        items = value.items()
    elif kind is list:
        items = enumerate(value)
    elif kind in sound:
        return None
    else:
        problem = rules.checked.get(kind, rules.others)(value)
        return None if problem is None else JsonFault((), problem)
    if depth == 0:
        return JsonFault((), TOO_DEEP)
    for step, child in items:
        if kind is dict and type(step) is not str:
            return JsonFault((), _NOT_A_STRING_KEY.format(type(step).__name__))
        if type(child) in sound:
            continue  # most leaves: no call to judge them
        fault = _fault(child, rules, depth - 1)
        if fault is not None:
            return JsonFault((step, *fault.path), fault.problem)
    return None


def _where_it_loops(value: Any, fault: JsonFault) -> JsonFault:
    """``fault`` (too deep), or where its path first meets a container it went through before."""
    containers = [value]
    for step in fault.path:
        containers.append(containers[-1][step])
    for depth, container in enumerate(containers):
        if any(container is above for above in containers[:depth]):
            return JsonFault(fault.path[:depth], _INSIDE_ITSELF)
    return fault


def is_json(value: object) -> bool:
    """Whether ``value`` is a JSON value that round-trips exactly (see :data:`JSON_LEAVES`).

    A value nested deeper than :data:`WRITE_DEPTH` is not: it could not be written.
    """
    return _fault(value, JSON_LEAVES, WRITE_DEPTH) is None
