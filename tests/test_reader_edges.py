"""Timestamps at the edges of what is read: the two forms wire-format.md names, and no others.

JP writes ``YYYY-MM-DD HH:MM:SS.f`` (UTC, no zone); RFC 3339 is accepted on
read, lowercase ``t`` and ``z`` included (RFC 3339, 5.6). Other ISO 8601
shapes are refused, and so is a moment that cannot be moved to UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator import EventEntry, StreamFormatError, load_conversation, save_conversation
from coordinator.stream import Timestamp
from machines import ChatRequest

if TYPE_CHECKING:
    from pathlib import Path


def _stream_with(stamp: str) -> bytes:
    """A stream whose second entry carries ``stamp``."""
    entries = [
        {"timestamp": "2026-03-05 19:31:45.7", "type": "turn_start"},
        {"timestamp": stamp, "type": "chat_request", "content": "hi"},
    ]
    return orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n"


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-03-05t19:31:45.5z", datetime(2026, 3, 5, 19, 31, 45, 500_000, tzinfo=UTC)),
        ("2026-03-05T19:31:45z", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),
        ("2026-03-05 19:31:45.5z", datetime(2026, 3, 5, 19, 31, 45, 500_000, tzinfo=UTC)),
        ("2026-03-05t21:31:45+02:00", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),
        ("2026-03-05 19:31:45Z", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),
        ("2026-03-05 19:31:45.5-23:59", datetime(2026, 3, 6, 19, 30, 45, 500_000, tzinfo=UTC)),
        (
            "2026-03-05T19:31:45.1234567890123Z",
            datetime(2026, 3, 5, 19, 31, 45, 123_456, tzinfo=UTC),
        ),
        ("0001-01-01 01:00:00+01:00", datetime(1, 1, 1, tzinfo=UTC)),
        ("2026-03-05 19:31:45", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),  # JP, no .f
    ],
)
def test_jp_form_and_rfc_3339_in_either_case_are_read_and_written_back_unchanged(
    tmp_path: Path, text: str, moment: datetime
) -> None:
    """RFC 3339 (lowercase letters, a space, any fraction), JP's form: its moment; text kept."""
    assert Timestamp(text).datetime == moment
    data = _stream_with(text)
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation(tmp_path)
    entry = conversation.stream[1]
    assert isinstance(entry, EventEntry)
    assert entry.timestamp.text == text
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    assert saved[1]["timestamp"] == text


@pytest.mark.parametrize(
    "text",
    [
        "2026-W10-4 19:31:45",  # an ISO week date
        "2026-W10-4 19:31:45.5",
        "2026-03-05 19:31:45,5",  # a comma before the fraction
        "2026-03-05 19:31:45+0530",  # an offset without its colon
        "2026-03-05T19:31:45.5+05",  # an offset of hours alone
        "2026-03-05T19:31:45.5+05:30:15",  # an offset with seconds
        "2026-03-05T19:31:45.5+05:60",  # no 60th minute
        "2026-03-05T19:31:45.5",  # a 'T' but no zone: neither form
        "2026-03-05 193145.5",  # a compact time
        "2026-03-05 19:31:45.1234567890",  # ten fraction digits in JP's form
        "2026-03-05 19:31:45.5 ",
    ],
)
def test_other_iso_8601_shapes_are_refused_naming_the_entry(tmp_path: Path, text: str) -> None:
    """Neither JP's form nor RFC 3339: refused, by entry, with the shapes that are read."""
    with pytest.raises(ValueError, match=r"is not 'YYYY-MM-DD HH:MM:SS\[\.f\]' or RFC 3339"):
        Timestamp(text)
    data = _stream_with(text)
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 1
    assert str(caught.value) == (
        f"{tmp_path / 'events.json'}: entry 1: chat_request: timestamp {text!r} is not "
        "'YYYY-MM-DD HH:MM:SS[.f]' or RFC 3339"
    )
    assert (tmp_path / "events.json").read_bytes() == data


@pytest.mark.parametrize("text", ["0001-01-01 00:00:00+01:00", "9999-12-31T23:59:59.5-01:00"])
def test_a_moment_outside_the_years_utc_can_hold_is_refused_at_load(
    tmp_path: Path, text: str
) -> None:
    """Moved to UTC it would fall before year 1 or after 9999: refused, not left to fail later."""
    with pytest.raises(ValueError, match="outside the years 1 to 9999 once moved to UTC"):
        Timestamp(text)
    (tmp_path / "events.json").write_bytes(_stream_with(text))
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'events.json'}: entry 1: chat_request: timestamp {text!r} is outside "
        "the years 1 to 9999 once moved to UTC"
    )


_JP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})?", re.ASCII)
_RFC = re.compile(
    r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)", re.ASCII
)


def _reads(text: str) -> bool:
    """Whether ``text`` is a timestamp, by the grammar alone (written apart from the module)."""
    zoned = _RFC.fullmatch(text) is not None
    if _JP.fullmatch(text) is None and not zoned:
        return False
    try:
        moment = datetime.fromisoformat(text.upper())
        if zoned:
            moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return False
    return True


@given(
    st.sampled_from(
        ["2026-03-05 19:31:45.755262", "2026-03-05T19:31:45.5+02:00", "0001-01-01 00:00:00Z"]
    ),
    st.lists(
        st.tuples(
            st.integers(0, 40), st.sampled_from(list("0123456789-:. ,TtZzW+")), st.booleans()
        ),
        max_size=3,
    ),
)
def test_a_timestamp_is_read_exactly_as_the_grammar_reads(
    base: str, edits: list[tuple[int, str, bool]]
) -> None:
    """A text near JP's form or RFC 3339 is a Timestamp exactly when the grammar reads it."""
    text = base
    for position, char, insert in edits:
        at = min(position, len(text))
        text = text[:at] + char + text[at + (0 if insert else 1) :]
    try:
        Timestamp(text)
    except ValueError:
        accepted = False
    else:
        accepted = True
    assert accepted == _reads(text)
