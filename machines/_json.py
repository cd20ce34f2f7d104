"""The JSON value type shared by records, answers and tool arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

__all__ = ["JsonValue"]

if TYPE_CHECKING:
    #: Any value JSON can carry: what tools answer with, what arguments hold.
    JsonValue: TypeAlias = (
        bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
    )
else:
    # At run time the alias is Any, so cattrs passes JSON through untouched;
    # record validators (machines.validators.is_json) do the checking.
    JsonValue: TypeAlias = Any
