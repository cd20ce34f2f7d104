"""Building a frozen attrs class by setting its slots, where a pass builds thousands.

An attrs constructor takes keywords, sets each field through a bound
``object.__setattr__`` and calls each validator: for a small record that is
most of what a load or a pairing pass spends per entry. Where the caller has
established every fact the validators check (or the class has none), it may
set the slots itself, through the setters this module hands out. Where it has
not, :func:`record_builder` sets them and runs the class's own validators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["record_builder", "slot_setters"]

_Record = TypeVar("_Record", bound=attrs.AttrsInstance)


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of ``cls``'s slots ``names``, which must be all its fields, in order.

    Raises ``TypeError`` when they are not: a field added to the class must be
    added where its slots are set, or instances would lack it.
    """
    fields = tuple(field.name for field in attrs.fields(cls))
    if fields != names:
        raise TypeError(f"{cls.__name__} has the fields {fields}, not {names}")
    return tuple(cls.__dict__[name].__set__ for name in names)


def _unchecked(_instance: object, _attribute: object, _value: object) -> None:
    """The validator of a field that has none."""


def record_builder(cls: type[_Record]) -> Callable[..., _Record]:
    """A function building ``cls`` from its fields' values, given in field order.

    It does what the attrs constructor does, in the same order: it sets every
    field, then calls each field's validator with the same arguments, so an
    invalid value raises the constructor's error. Left out are the keyword
    call and the bound ``object.__setattr__`` per field, a quarter of the cost
    of a small record. Unlike the constructor, it validates even while attrs'
    validators are switched off.

    For classes of two or three fields that do nothing else on construction
    (no converter, no ``__attrs_pre_init__`` or ``__attrs_post_init__``);
    others are a ``TypeError``. The builder is written out for each size,
    because a loop over the fields costs about what it saves.
    """
    fields = attrs.fields(cls)
    if (
        any(field.converter is not None or not field.init for field in fields)
        or hasattr(cls, "__attrs_pre_init__")
        or hasattr(cls, "__attrs_post_init__")
    ):
        raise TypeError(f"{cls.__name__} does more on construction than validate its fields")
    setters = slot_setters(cls, tuple(field.name for field in fields))
    checks = tuple(field.validator or _unchecked for field in fields)
    new = object.__new__
    if len(fields) == 2:  # noqa: PLR2004 - the sizes written out
        (set_a, set_b), (check_a, check_b), (a, b) = setters, checks, fields

        def build_two(x: Any, y: Any) -> _Record:
            record: _Record = new(cls)
            set_a(record, x)
            set_b(record, y)
            check_a(record, a, x)
            check_b(record, b, y)
            return record

        return build_two
    if len(fields) == 3:  # noqa: PLR2004
        (set_a, set_b, set_c), (check_a, check_b, check_c), (a, b, c) = setters, checks, fields

        def build_three(x: Any, y: Any, z: Any) -> _Record:
            record: _Record = new(cls)
            set_a(record, x)
            set_b(record, y)
            set_c(record, z)
            check_a(record, a, x)
            check_b(record, b, y)
            check_c(record, c, z)
            return record

        return build_three
    raise TypeError(f"builders are for two or three fields; {cls.__name__} has {len(fields)}")
