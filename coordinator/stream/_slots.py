"""Building a frozen attrs class by setting its slots, where a pass builds thousands.

An attrs constructor takes keywords, sets each field through a bound
``object.__setattr__`` and calls each validator: for a small class that is
most of what a load or a pairing pass spends on it per entry. Where the
caller has established every fact the validators check (or the class has
none), it may set the slots itself, through the setters this module hands
out: an entry's envelope and timestamp on load, a pairing's positions.
Records (the payloads) are always built by their constructors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["slot_setters"]


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of ``cls``'s slots ``names``, which must be all its fields, in order.

    Raises ``TypeError`` when they are not: a field added to the class must be
    added where its slots are set, or instances would lack it.
    """
    fields = tuple(field.name for field in attrs.fields(cls))
    if fields != names:
        raise TypeError(f"{cls.__name__} has the fields {fields}, not {names}")
    return tuple(cls.__dict__[name].__set__ for name in names)
