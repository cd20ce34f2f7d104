"""The one walk over JSON values and the one name of a value's kind (machines._json)."""

from __future__ import annotations

import datetime as dt
import sys
import uuid
from typing import Any

import pytest
from hypothesis import given
from strategies import json_values

from coordinator.wire._json_read import writable
from machines._json import (
    TOO_DEEP,
    WRITE_DEPTH,
    JsonFault,
    is_json,
    json_fault,
    json_path,
    json_type,
    leaf_rules,
)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("x", "a string"),
        (True, "a boolean"),
        (3, "an integer"),
        (1.5, "a number"),
        ({}, "an object"),
        ([], "an array"),
        (None, "null"),
        (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "a date-time"),
        (dt.date(2026, 1, 1), "a date"),
        (dt.time(1, 2), "a time"),
        ((1, 2), "tuple"),
        (uuid.UUID(int=1), "UUID"),
    ],
)
def test_every_kind_is_named_in_jsons_words(value: object, words: str) -> None:
    """One name per kind for every error; a kind JSON has no word for is its Python name."""
    assert json_type(value) == words


def test_an_object_is_a_table_in_tomls_words() -> None:
    """TOML calls an object a table; every other kind keeps its name."""
    assert json_type({}, toml=True) == "a table"
    assert json_type([], toml=True) == "an array"
    assert json_type(3, toml=True) == "an integer"


@given(json_values(max_leaves=20))
def test_any_json_value_has_no_fault(value: Any) -> None:
    """Whatever a parser gives (finite floats, string keys) is JSON."""
    assert json_fault(value) is None
    assert is_json(value)


@pytest.mark.parametrize(
    ("value", "fault"),
    [
        (float("nan"), ((), "is a float that is not finite, which JSON cannot hold")),
        ({"a": [1, {"b": float("inf")}]}, (("a", 1, "b"), "is a float that is not finite")),
        ([1, [2, [3, (4,)]]], ((1, 1, 1), "is of type tuple, which JSON cannot hold")),
        ({"x": {1: "one"}}, (("x",), "has a key of type int, not a string")),
        ({1: "one"}, ((), "has a key of type int, not a string")),
        ({"a": {1, 2}, "b": float("nan")}, (("a",), "is of type set")),
    ],
)
def test_the_first_fault_is_named_with_its_path(
    value: object, fault: tuple[tuple[str | int, ...], str]
) -> None:
    """The fault is the first in written order, with the keys and indices that lead to it."""
    found = json_fault(value)
    assert found is not None
    assert found.path == fault[0]
    assert found.problem.startswith(fault[1])
    assert not is_json(value)


def test_the_first_fault_in_written_order_wins() -> None:
    """Keys in the order they are written, items in order: the earliest fault is named."""
    value = {"first": [0, {"deep": [1, 2, float("nan")]}], "second": object(), "third": {1: 2}}
    assert json_fault(value) == JsonFault(
        ("first", 1, "deep", 2), "is a float that is not finite, which JSON cannot hold"
    )


def test_a_fault_is_said_in_a_sentence_without_its_value() -> None:
    """Where, quoted so that a key cannot break the line, and what: never the value."""
    secret = "hunter2"
    fault = json_fault({"token\n": {secret: float("nan")}})
    assert fault is not None
    assert str(fault) == (
        "the value at 'token\\n.hunter2' is a float that is not finite, which JSON cannot hold"
    )
    assert str(JsonFault((), "contains itself")) == "the value contains itself"
    assert json_path(("a", 0, "b", 12)) == "a[0].b[12]"
    assert str(JsonFault(("k",) * 254, TOO_DEEP)) == (
        "the value at 'k.k.k.k.k.k.k.k...' (254 levels down) is nested too deeply"
    )
    assert json_path((3,)) == "[3]"


# ------------------------------------------------------------------ cycles


def cyclic_list() -> list[object]:
    """A list that holds itself."""
    looped: list[object] = [1, "two"]
    looped.append(looped)
    return looped


def cyclic_dict() -> dict[str, object]:
    """An object that holds itself, two levels down."""
    looped: dict[str, object] = {"path": "a"}
    looped["self"] = {"again": [looped]}
    return looped


def wide_cycle() -> list[object]:
    """A list that holds itself twice: each pass through it doubles what is left to look at."""
    looped: list[object] = []
    looped.extend([looped, looped])
    return looped


@pytest.mark.parametrize(
    ("value", "path"),
    [(cyclic_list(), (2,)), (cyclic_dict(), ("self", "again", 0)), (wide_cycle(), (0,))],
)
def test_a_value_inside_itself_is_a_fault_found_where_it_loops(
    value: object, path: tuple[str | int, ...]
) -> None:
    """The walk ends, and names the place where the value holds itself."""
    assert json_fault(value) == JsonFault(path, "contains itself")


def test_a_cycle_after_many_containers_is_found_where_it_loops() -> None:
    """A thousand containers walked first, then a value holding itself: named where it loops."""
    looped: list[object] = [[index] for index in range(1_000)]
    looped.append({"deep": [looped]})
    assert json_fault(looped) == JsonFault((1_000, "deep", 0), "contains itself")


def test_a_cycle_longer_than_the_writer_nests_is_too_deep() -> None:
    """A loop through more containers than orjson writes is refused as too deep, at the limit."""
    chain: list[object] = []
    top = chain
    for _ in range(WRITE_DEPTH + 10):
        inner: list[object] = []
        chain.append(inner)
        chain = inner
    chain.append(top)
    assert json_fault(top) == JsonFault((0,) * WRITE_DEPTH, TOO_DEEP)


def test_a_value_deeper_than_the_writer_nests_is_refused_where_it_gets_too_deep() -> None:
    """As deep as orjson writes is JSON; one deeper, or a hundred thousand, is not, named where."""
    for depth, fault in (
        (WRITE_DEPTH, None),
        (WRITE_DEPTH + 1, JsonFault((0,) * WRITE_DEPTH, TOO_DEEP)),
        (100_000, JsonFault((0,) * WRITE_DEPTH, TOO_DEEP)),
    ):
        value: Any = []
        for _ in range(depth - 1):
            value = [value]
        assert json_fault(value) == fault
        assert is_json(value) is (fault is None)
        assert writable(value) is (fault is None)


def test_the_walk_stays_well_under_pythons_recursion_limit() -> None:
    """Walked from a stack already half used, the deepest value costs no RecursionError."""

    def at_depth(frames: int) -> JsonFault | None:
        if frames:
            return at_depth(frames - 1)
        value: Any = {}
        for _ in range(WRITE_DEPTH * 2):
            value = {"k": value}
        return json_fault(value)

    fault = at_depth(sys.getrecursionlimit() // 2)
    assert fault == JsonFault(("k",) * WRITE_DEPTH, TOO_DEEP)


def test_a_part_shared_in_many_places_is_judged_in_each() -> None:
    """A list held in many places is walked wherever it is written; a fault named at its first."""
    shared: list[object] = [[index] for index in range(1_000)]
    assert json_fault({"a": shared, "b": [shared, [shared]]}) is None
    assert json_fault({"a": shared, "b": [shared, [float("nan")]]}) == JsonFault(
        ("b", 1, 0), "is a float that is not finite, which JSON cannot hold"
    )
    assert json_fault([*shared, {1: "one"}]) == JsonFault(
        (1_000,), "has a key of type int, not a string"
    )
    assert json_fault([*shared, {"a": object()}]) == JsonFault(
        (1_000, "a"), "is of type object, which JSON cannot hold"
    )
    broken: list[object] = [float("inf")]
    assert json_fault({"a": [1, broken], "b": broken}) == JsonFault(
        ("a", 1, 0), "is a float that is not finite, which JSON cannot hold"
    )


# ------------------------------------------------------------------ rules and depth


def test_rules_judge_leaves_by_exact_type() -> None:
    """A type's rule, a sound type, and the rule for the rest; a dict subclass is a leaf."""

    class Tagged(dict[str, Any]):
        pass

    rules = leaf_rules(
        {str: None, int: lambda n: None if n < 10 else "is too big"},
        others=lambda value: f"is {json_type(value)} here",
    )
    assert json_fault({"a": "x", "b": [1, 2]}, rules) is None
    assert json_fault({"a": [1, 20]}, rules) == JsonFault(("a", 1), "is too big")
    assert json_fault({"a": True}, rules) == JsonFault(("a",), "is a boolean here")
    assert json_fault({"a": Tagged(b=1)}, rules) == JsonFault(("a",), "is Tagged here")


@pytest.mark.parametrize("kind", ["array", "object"])
def test_a_container_deeper_than_the_limit_is_a_fault(kind: str) -> None:
    """``max_depth`` containers, the top one counted, and not one more."""
    value: Any = 1
    for _ in range(5):
        value = [value] if kind == "array" else {"k": value}
    assert json_fault(value, max_depth=5) is None
    fault = json_fault(value, max_depth=4)
    step = 0 if kind == "array" else "k"
    assert fault == JsonFault((step, step, step, step), TOO_DEEP)


@pytest.mark.parametrize("depth", [0, WRITE_DEPTH + 1])
def test_a_limit_past_what_the_writer_nests_is_refused(depth: int) -> None:
    """The walk's bound is orjson's: a limit of none, or deeper than it writes, is an error."""
    with pytest.raises(
        ValueError, match=f"max_depth must be from 1 to {WRITE_DEPTH}, not {depth}"
    ):
        json_fault([], max_depth=depth)
