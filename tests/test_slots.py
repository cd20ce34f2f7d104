"""Setters of a frozen class's slots: what they build, what they refuse."""

from __future__ import annotations

import attrs
import pytest

from coordinator.stream._slots import slot_setters


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
