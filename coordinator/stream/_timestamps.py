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
import time
from datetime import UTC, datetime, timedelta

import attrs

from coordinator.stream._slots import slot_setters
from machines._json import json_type

__all__ = ["Timestamp", "format_jp_timestamp", "read_timestamp", "stamp_at", "stamp_now"]


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

# The patterns are compiled on first use, by re's own cache: most runs never
# meet a timestamp JP did not write, and compiling costs every start.

#: JP's form, whole seconds with or without a fraction.
_JP_FORM = r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"

#: RFC 3339's ``date-time`` (section 5.6), with its note's space separator and
#: lowercase letters. Ranges of the date and time fields are fromisoformat's
#: to check; the offset's are checked here, as fromisoformat takes "+05:60".
_RFC_3339 = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


#: Where JP's form has its separators (a constant: building the slice costs).
_SEPARATORS = slice(4, 20, 3)


def _malformed(value: str) -> ValueError:
    return ValueError(f"timestamp {value!r} is not {_SHAPES}")


def _check(value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a timestamp text this module reads."""
    if type(value) is not str:
        raise ValueError(f"timestamp must be a string, not {json_type(value)}")
    # JP's form with a fraction (every timestamp JP writes), at the cost of
    # one slice: the separators at 4, 7, 10, 13, 16 and 19 rule out every
    # other shape fromisoformat reads that has no zone, and a moment with no
    # zone is in range as it stands. Anything else takes the full check.
    if value[_SEPARATORS] == "-- ::." and len(value) <= 29:  # noqa: PLR2004 - 9 fraction digits
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass  # a lowercase "z", say: the full check decides
        else:
            if moment.tzinfo is None:
                return
    _check_other(value)


def _check_other(value: str) -> None:
    """The full check, for what JP does not write."""
    if re.fullmatch(_JP_FORM, value):
        zoned = False
    elif re.fullmatch(_RFC_3339, value):
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


def _valid(_instance: Timestamp, _attribute: attrs.Attribute[str], value: object) -> None:
    _check(value)


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


# A load reads a timestamp for every entry. It is checked exactly as the
# constructor checks it, by the same function; only attrs' construction
# machinery (a third of the cost) is left out (see coordinator.stream._slots).
_new_timestamp = object.__new__
(_set_text,) = slot_setters(Timestamp, ("text",))


def read_timestamp(value: object) -> Timestamp:
    """The timestamp ``value`` read from disk; ``ValueError`` naming it when it is not one."""
    _check(value)
    stamp = _new_timestamp(Timestamp)
    _set_text(stamp, value)
    return stamp


# ------------------------------------------------------------- the clock

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The last whole second stamped, and its text up to the fraction's dot.
_second: tuple[int, str] = (-1, "")


def stamp_at(nanoseconds: int) -> Timestamp:
    """A new timestamp for ``nanoseconds`` since the epoch, as :meth:`Timestamp.from_datetime`.

    The stream stamps every record it appends, and records come in bursts:
    the text up to the second is formatted once a second and kept, and only
    the fraction is formatted each time (a fifth of the cost). The text is
    :func:`format_jp_timestamp`'s for the same microsecond (a property test
    holds them equal), well-formed by construction, so the timestamp is
    built by setting its slot.
    """
    global _second  # noqa: PLW0603 - one cached second for the process
    seconds, micros = divmod(nanoseconds // 1000, 1_000_000)
    cached = _second
    if cached[0] != seconds:
        whole = format_jp_timestamp(_EPOCH + timedelta(seconds=seconds))
        cached = _second = (seconds, whole[:-1])  # without the ".0"'s "0"
    text = f"{cached[1]}{f'{micros:06d}'.rstrip('0') or '0'}"
    stamp = _new_timestamp(Timestamp)
    _set_text(stamp, text)
    return stamp


def stamp_now() -> Timestamp:
    """A new timestamp for the current time (the system clock, in UTC)."""
    return stamp_at(time.time_ns())
