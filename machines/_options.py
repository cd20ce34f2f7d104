"""The options a question offers: a select's, and a form's choice fields'.

One record, shared by the answer types (:mod:`machines._questions`) and the
forms (:mod:`machines._forms`), and one converter from what a caller may give
(strings, or options).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from machines._errors import RecordError
from machines.validators import optional_of_type, string

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SelectOption", "to_options"]


@attrs.frozen(kw_only=True)
class SelectOption:
    """One choice of a select question (or of a form's choice field)."""

    value: str = attrs.field(validator=string)
    description: str | None = attrs.field(default=None, validator=optional_of_type(str))


def to_options(
    value: Iterable[str | SelectOption], where: str = "options"
) -> tuple[SelectOption, ...]:
    """``value`` as options: each a :class:`SelectOption`, or a bare string (its value).

    ``where`` names the field, for the error (``AnswerType.options``).
    """
    if isinstance(value, str):
        # A bare string is iterable; refuse it rather than splitting it into letters.
        raise RecordError(f"{where} must be a sequence of options, not a string")
    taken = []
    for option in value:
        if isinstance(option, SelectOption):
            taken.append(option)
        elif type(option) is str:
            taken.append(SelectOption(value=option))
        else:
            raise RecordError(
                f"{where} must hold strings or SelectOption, not {type(option).__name__}"
            )
    return tuple(taken)
