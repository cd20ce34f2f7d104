"""Builders that set a frozen class's slots: what they build, what they refuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    answered,
    chat_requests,
    chat_responses,
    inquiry_requests,
    tool_call_requests,
    tool_call_responses,
)

from coordinator.stream._slots import record_builder, slot_setters
from machines import (
    Answered,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    RecordError,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable


@attrs.frozen
class _Point:
    x: int
    y: int


def test_the_setters_build_an_instance_equal_to_the_constructors() -> None:
    """Setting every slot gives what the attrs constructor gives."""
    set_x, set_y = slot_setters(_Point, ("x", "y"))
    point = object.__new__(_Point)
    set_x(point, 1)
    set_y(point, 2)
    assert point == _Point(1, 2)


@pytest.mark.parametrize("names", [("x",), ("y", "x"), ("x", "y", "z")])
def test_a_field_list_that_is_not_the_classs_is_refused(names: tuple[str, ...]) -> None:
    """A field missing, extra or out of order is a TypeError naming the class's fields."""
    with pytest.raises(TypeError, match=r"_Point has the fields \('x', 'y'\)"):
        slot_setters(_Point, names)


# ------------------------------------------------------------- record_builder


@given(
    record=st.one_of(
        answered(),
        chat_requests(),
        chat_responses(),
        inquiry_requests(),
        tool_call_requests(),
        tool_call_responses(),
    )
)
def test_a_builder_builds_what_the_constructor_builds(record: Any) -> None:
    """Equal, of the same class, with every field the same object."""
    values = attrs.astuple(record, recurse=False)
    built = record_builder(type(record))(*values)
    assert type(built) is type(record)
    assert built == record
    assert all(a is b for a, b in zip(attrs.astuple(built, recurse=False), values, strict=True))


def _constructor_error(cls: type, values: tuple[Any, ...]) -> str:
    names = [field.name for field in attrs.fields(cls)]
    with pytest.raises(RecordError) as caught:
        cls(**dict(zip(names, values, strict=True)))
    return str(caught.value)


_VALID: dict[type, tuple[Any, ...]] = {
    Answered: ("q", True),
    ChatRequest: ("hi", None, None),
    ChatResponse: (ChatResponseKind.MESSAGE, "hello"),
    ToolCallRequest: ("c", "fs_read_file", {"path": "a"}),
    ToolCallResponse: ("c", "done", False),
}
_WRONG = (None, 5, "", {"k": float("nan")}, [1], object())


@pytest.mark.parametrize("cls", list(_VALID))
def test_a_builder_refuses_what_the_constructor_refuses_in_its_words(cls: type) -> None:
    """Every field given every wrong value: the same RecordError, or none from either."""
    build: Callable[..., Any] = record_builder(cls)
    checked = 0
    for index in range(len(_VALID[cls])):
        for wrong in _WRONG:
            values = list(_VALID[cls])
            values[index] = wrong
            try:
                cls(**dict(zip([f.name for f in attrs.fields(cls)], values, strict=True)))
            except RecordError:
                with pytest.raises(RecordError) as caught:
                    build(*values)
                assert str(caught.value) == _constructor_error(cls, tuple(values))
                checked += 1
            else:
                build(*values)
    assert checked >= len(_VALID[cls])  # every field has some value it refuses


@pytest.mark.parametrize(
    ("kind", "content"),
    [(ChatResponseKind.MESSAGE, {"a": 1}), (ChatResponseKind.DATA, {"a": float("inf")})],
)
def test_a_validator_sees_every_field_set(kind: ChatResponseKind, content: Any) -> None:
    """A chat response's content is checked by its kind, set before any validator runs."""
    with pytest.raises(RecordError) as caught:
        record_builder(ChatResponse)(kind, content)
    assert str(caught.value) == _constructor_error(ChatResponse, (kind, content))
    assert record_builder(ChatResponse)(ChatResponseKind.DATA, {"a": 1}) == ChatResponse.data(
        {"a": 1}
    )


def test_a_builder_validates_even_with_attrs_validators_off() -> None:
    """Switching attrs' validators off does not let a broken record be read."""
    build = record_builder(ToolCallRequest)
    with attrs.validators.disabled(), pytest.raises(RecordError, match="must not be empty"):
        build("", "n", {})


@attrs.frozen
class _Converted:
    x: int = attrs.field(converter=int)
    y: int = 0


@attrs.frozen
class _PostInit:
    x: int
    y: int

    def __attrs_post_init__(self) -> None:
        """Something a builder would skip."""


@attrs.frozen
class _NotInit:
    x: int
    y: int = attrs.field(init=False, default=0)


@attrs.frozen
class _One:
    x: int


@attrs.frozen
class _Four:
    a: int
    b: int
    c: int
    d: int


@pytest.mark.parametrize(
    ("cls", "problem"),
    [
        (_Converted, "does more on construction"),
        (_PostInit, "does more on construction"),
        (_NotInit, "does more on construction"),
        (_One, "two or three fields; _One has 1"),
        (_Four, "two or three fields; _Four has 4"),
    ],
)
def test_a_class_a_builder_cannot_build_as_its_constructor_does_is_refused(
    cls: type[Any], problem: str
) -> None:
    """Rather than build it differently."""
    with pytest.raises(TypeError, match=problem):
        record_builder(cls)
