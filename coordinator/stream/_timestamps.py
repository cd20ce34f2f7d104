"""Timestamps as JP writes them, and as they were read.

JP stores UTC without a zone suffix, space-separated, with 1 to 9 fraction
digits, trailing zeros trimmed and whole seconds written ``.0``. What was read
is written back exactly (the text is kept), so nanosecond digits and RFC 3339
forms survive a round trip; new timestamps use JP's form.

Read are exactly two forms (``wire-format.md``): JP's,
``YYYY-MM-DD HH:MM:SS[.f]`` with at most 9 fraction digits and no zone (a
whole second without its ``.0`` is read too, as it always was here), and
RFC 3339: a ``T``, ``t`` or space between date and time, any number of
fraction digits, and ``Z``, ``z`` or a ``+HH:MM``/``-HH:MM`` offset. What else
ISO 8601 allows (week and ordinal dates, a comma before the fraction, compact
or hour-only offsets, no zone after a ``T``) is refused, as is a moment that
falls outside the years 1 to 9999 once moved to UTC (:attr:`Timestamp.datetime`
could not stand for it).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import attrs

from machines import json_type

__all__ = ["Timestamp", "format_jp_timestamp"]


def format_jp_timestamp(moment: datetime) -> str:
    """Format ``moment`` in JP's storage form (naive values are taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    fraction = f"{moment.microsecond:06d}".rstrip("0") or "0"
    # Fields formatted one by one: `%Y` does not pad years before 1000 on every
    # platform, and strftime costs several times as much (every record is stamped).
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{fraction}"
    )


def _parse(text: str) -> datetime:
    # fromisoformat (3.11+) reads both JP's form and RFC 3339 but for a
    # lowercase "t" or "z" (RFC 3339 5.6 allows them); it drops digits past
    # microseconds, which is why the text itself is what gets written back.
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = datetime.fromisoformat(text.upper())
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


_SHAPES = "'YYYY-MM-DD HH:MM:SS[.f]' or RFC 3339"

#: JP's form, whole seconds with or without a fraction.
_JP_FORM = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?")

#: RFC 3339's ``date-time`` (section 5.6), with its note's space separator and
#: lowercase letters. Ranges of the date and time fields are fromisoformat's
#: to check; the offset's are checked here, as fromisoformat takes "+05:60".
_RFC_3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


def _malformed(value: str) -> ValueError:
    return ValueError(f"timestamp {value!r} is not {_SHAPES}")


def _valid(_instance: Timestamp, _attribute: attrs.Attribute[str], value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a timestamp text this module reads."""
    if type(value) is not str:
        raise ValueError(f"timestamp must be a string, not {json_type(value)}")
    if _JP_FORM.fullmatch(value):
        zoned = False
    elif _RFC_3339.fullmatch(value):
        zoned = True
    else:
        raise _malformed(value)
    try:
        moment = datetime.fromisoformat(value.upper() if zoned else value)
    except ValueError:
        raise _malformed(value) from None
    if zoned:
        try:
            moment.astimezone(UTC)
        except OverflowError:
            raise ValueError(
                f"timestamp {value!r} is outside the years 1 to 9999 once moved to UTC"
            ) from None


@attrs.frozen
class Timestamp:
    """A point in time, remembered in the exact text it was read or written as."""

    text: str = attrs.field(validator=_valid)

    @classmethod
    def from_datetime(cls, moment: datetime) -> Timestamp:
        """A new timestamp in JP's storage form."""
        return cls(format_jp_timestamp(moment))

    @property
    def datetime(self) -> datetime:
        """The moment, in UTC (microsecond precision)."""
        return _parse(self.text)

    def __str__(self) -> str:
        """The stored text."""
        return self.text
