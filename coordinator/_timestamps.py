"""Timestamps as JP writes them, and as they were read.

JP stores UTC without a zone suffix, space-separated, with 1 to 9 fraction
digits, trailing zeros trimmed and whole seconds written ``.0``. What was read
is written back exactly (the text is kept), so nanosecond digits and RFC 3339
forms survive a round trip; new timestamps use JP's form.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from coordinator._slots import slot_setters

__all__ = ["Timestamp", "format_jp_timestamp", "read_timestamp"]


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
    # fromisoformat (3.11+) reads both JP's form and RFC 3339; it drops digits
    # past microseconds, which is why the text itself is what gets written back.
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _check(value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a timestamp text this module reads."""
    if type(value) is not str:
        raise ValueError(f"timestamp must be a string, not {type(value).__name__}")
    if len(value) < 19 or value[4] != "-" or value[10] not in " Tt":  # noqa: PLR2004
        # Require a date *and* a time: fromisoformat alone accepts a bare date.
        raise ValueError(f"timestamp {value!r} is not 'YYYY-MM-DD HH:MM:SS[.f]' or RFC 3339")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"timestamp {value!r} is not 'YYYY-MM-DD HH:MM:SS[.f]' or RFC 3339"
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
# machinery (a third of the cost) is left out (see coordinator._slots).
_new_timestamp = object.__new__
(_set_text,) = slot_setters(Timestamp, ("text",))


def read_timestamp(value: object) -> Timestamp:
    """The timestamp ``value`` read from disk; ``ValueError`` naming it when it is not one."""
    _check(value)
    stamp = _new_timestamp(Timestamp)
    _set_text(stamp, value)
    return stamp
