"""Timestamps: text read is written back exactly; new ones use JP's form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from hypothesis import given
from hypothesis import strategies as st
from strategies import timestamp_texts

from coordinator import (
    Conversation,
    ConversationStream,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.stream import Timestamp
from coordinator.stream._timestamps import format_jp_timestamp
from machines import ChatRequest, TurnStart

if TYPE_CHECKING:
    from pathlib import Path

KEPT = [
    "2026-03-05 19:31:45.7",
    "2026-03-18 11:54:23.0",
    "2026-03-05 21:21:16.755262",
    "2026-03-05 19:31:45.123456789",
    "2026-03-05 19:31:45.100000000",
    "2026-03-05T19:31:45Z",
    "2026-03-05T19:31:45.123456789Z",
    "2026-03-05T21:31:45.5+02:00",
    "2026-03-05T14:01:45-05:30",
]


@pytest.mark.parametrize("text", KEPT)
def test_a_timestamp_keeps_the_exact_text_it_was_read_as(text: str) -> None:
    """Nine fraction digits, RFC 3339 with Z or an offset: the text is kept."""
    assert Timestamp(text).text == text
    assert str(Timestamp(text)) == text


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-03-05 19:31:45.7", datetime(2026, 3, 5, 19, 31, 45, 700_000, tzinfo=UTC)),
        ("2026-03-05 19:31:45.123456789", datetime(2026, 3, 5, 19, 31, 45, 123_456, tzinfo=UTC)),
        ("2026-03-05T19:31:45Z", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),
        ("2026-03-05T21:31:45.5+02:00", datetime(2026, 3, 5, 19, 31, 45, 500_000, tzinfo=UTC)),
        ("2026-03-05T14:01:45-05:30", datetime(2026, 3, 5, 19, 31, 45, tzinfo=UTC)),
    ],
)
def test_a_timestamp_reads_as_a_moment_in_utc(text: str, moment: datetime) -> None:
    """JP's zone-less form is UTC; offsets are converted to UTC."""
    assert Timestamp(text).datetime == moment
    assert Timestamp(text).datetime.tzinfo is UTC


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 3, 18, 11, 54, 23, tzinfo=UTC), "2026-03-18 11:54:23.0"),
        (datetime(2026, 3, 5, 19, 31, 45, 700_000, tzinfo=UTC), "2026-03-05 19:31:45.7"),
        (datetime(2026, 3, 5, 21, 21, 16, 755_262, tzinfo=UTC), "2026-03-05 21:21:16.755262"),
        (datetime(2026, 3, 5, 21, 21, 16, 120, tzinfo=UTC), "2026-03-05 21:21:16.00012"),
        (
            datetime(2026, 3, 5, 23, 21, 16, 500_000, tzinfo=timezone(timedelta(hours=2))),
            "2026-03-05 21:21:16.5",
        ),
        (datetime(2026, 3, 5, 21, 21, 16, 5), "2026-03-05 21:21:16.000005"),  # noqa: DTZ001 - naive is UTC
        (datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), "0999-01-02 03:04:05.0"),
    ],
)
def test_new_timestamps_use_jp_form(moment: datetime, text: str) -> None:
    """UTC, space separator, trailing zeros trimmed, whole seconds as .0, four-digit year."""
    assert Timestamp.from_datetime(moment).text == text
    assert format_jp_timestamp(moment) == text


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_new_timestamp_reads_back_as_the_same_moment(moment: datetime) -> None:
    """A timestamp made from a moment is valid and stands for that moment."""
    stamp = Timestamp.from_datetime(moment)
    assert stamp.datetime == moment
    assert stamp == Timestamp(stamp.text)


@given(timestamp_texts())
def test_every_stored_form_is_accepted_and_kept(text: str) -> None:
    """Any JP or RFC 3339 text is a valid timestamp whose text is unchanged."""
    assert Timestamp(text).text == text
    assert Timestamp(text).datetime.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-05",  # a date alone
        "19:31:45",  # a time alone
        "yesterday at noon",
        "2026-13-05 19:31:45.7",  # no 13th month
        "2026-03-05 25:00:00.0",  # no 25th hour
        "2026/03/05 19:31:45.7",
        "",
    ],
)
def test_malformed_timestamps_are_refused(text: str) -> None:
    """Something that is not a date and time is not a timestamp."""
    with pytest.raises(ValueError, match="is not 'YYYY-MM-DD HH:MM:SS"):
        Timestamp(text)


def test_a_timestamp_must_be_text() -> None:
    """A number is not a timestamp."""
    with pytest.raises(ValueError, match="timestamp must be a string, not an integer"):
        Timestamp(1_741_203_105)  # type: ignore[arg-type]


# ----------------------------------------------------------- through a file


def _entries_with(stamps: list[str]) -> list[dict[str, Any]]:
    return [
        {"event_id": f"id{index}", "timestamp": stamp, "type": "turn_start"}
        for index, stamp in enumerate(stamps)
    ]


def test_loaded_timestamps_are_written_back_exactly(tmp_path: Path) -> None:
    """A save after a change keeps every loaded timestamp's text, non-monotonic order too."""
    path = tmp_path / "events.json"
    entries = _entries_with(KEPT)
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
    conversation = load_conversation(tmp_path, clock=FixedClock(), new_id=CountingIds())
    assert [entry.timestamp.text for entry in conversation.stream] == KEPT  # type: ignore[union-attr]
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    written = orjson.loads(path.read_bytes())
    assert [entry["timestamp"] for entry in written] == [*KEPT, "2026-11-22 09:30:00.0"]


def test_rebuilt_entries_keep_their_timestamp_text(tmp_path: Path) -> None:
    """An entry written from its record (not its loaded form) keeps the exact text."""
    conversation = Conversation.new(new_id=CountingIds())
    for text in KEPT:
        conversation.stream.append(TurnStart(), timestamp=Timestamp(text))
    save_conversation(conversation, tmp_path)
    written = orjson.loads((tmp_path / "events.json").read_bytes())
    assert [entry["timestamp"] for entry in written] == KEPT


def test_new_entries_are_stamped_by_the_stream_clock_in_jp_form(tmp_path: Path) -> None:
    """Appending stamps now, in JP's form (.0 for whole seconds)."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="hi"))
    save_conversation(conversation, tmp_path)
    written = orjson.loads((tmp_path / "events.json").read_bytes())
    assert [entry["timestamp"] for entry in written] == [
        "2026-11-22 09:30:00.0",
        "2026-11-22 09:30:01.5",
    ]


@pytest.mark.parametrize(
    ("stamp", "problem"),
    [
        ("2026-03-05", "timestamp '2026-03-05' is not"),
        ("not a time at all", "is not 'YYYY-MM-DD HH:MM:SS[.f]' or RFC 3339"),
        (1_741_203_105, "timestamp must be a string, not an integer"),
        (None, "timestamp must be a string, not null"),
    ],
)
def test_a_malformed_timestamp_in_a_file_names_the_entry(
    tmp_path: Path, stamp: object, problem: str
) -> None:
    """Loading refuses it with a StreamFormatError naming the file and entry index."""
    path = tmp_path / "events.json"
    entries: list[dict[str, Any]] = _entries_with(["2026-03-05 19:31:45.7"] * 3)
    entries[2]["timestamp"] = stamp
    path.write_bytes(orjson.dumps(entries))
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 2
    assert str(caught.value).startswith(f"{path}: entry 2: ")
    assert problem in str(caught.value)


def test_a_missing_timestamp_in_a_file_names_the_entry(tmp_path: Path) -> None:
    """An entry without a timestamp is refused, naming it."""
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps([{"type": "chat_request", "content": "hi"}]))
    with pytest.raises(
        StreamFormatError, match=r"entry 0: chat_request: entry has no 'timestamp'"
    ):
        load_conversation(tmp_path)


def test_a_stream_without_a_clock_stamps_with_the_system_clock() -> None:
    """Entries appended without an injected clock are stamped with the current UTC time."""
    stream = ConversationStream()
    before = datetime.now(UTC)
    stamps = [stream.append(TurnStart()).timestamp for _ in range(3)]
    after = datetime.now(UTC)
    assert all(before <= stamp.datetime <= after for stamp in stamps)
    assert [stamp.datetime for stamp in stamps] == sorted(stamp.datetime for stamp in stamps)
