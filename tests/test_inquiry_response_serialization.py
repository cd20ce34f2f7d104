"""RFD 082 Phase 2: InquiryResponse serialization, "write new, read both".

Each test of the RFD's list is here twice: on the codec (structure_event /
unstructure_event), and on whole entries through a conversation on disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock

from coordinator import (
    Conversation,
    EventEntry,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.wire._codec import WireError, structure_event, unstructure_event
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    InquiryResponse,
    Redacted,
    UnknownCancellationReason,
)

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-03-05 21:21:22.295551"


def _read(payload: dict[str, Any]) -> object:
    return structure_event("inquiry_response", payload)


def _write_events(directory: Path, entries: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "events.json"
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def _entry(payload: dict[str, Any], event_id: str = "resp001") -> dict[str, Any]:
    return {"event_id": event_id, "timestamp": STAMP, "type": "inquiry_response", **payload}


def _only_payload(directory: Path) -> object:
    (entry,) = load_conversation(directory).stream
    assert isinstance(entry, EventEntry)
    return entry.payload


def _saved_entries(response: InquiryResponse, directory: Path) -> list[dict[str, Any]]:
    """Save a new conversation holding just ``response``; the entries on disk."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(response)
    save_conversation(conversation, directory)
    entries: list[dict[str, Any]] = orjson.loads((directory / "events.json").read_bytes())
    return entries


# ------------------------------------------------ backward-compat round trip


def test_a_pre_082_answer_reads_as_answered() -> None:
    """Backward-compat: the legacy flat {id, answer} lands as Answered."""
    assert _read({"id": "call_1.answer", "answer": True}) == Answered(
        id="call_1.answer", answer=True
    )


@pytest.mark.parametrize("answer", [True, False, "b", None, 0, {"k": [1, "x"]}])
def test_a_pre_082_answer_of_any_json_value_reads_as_answered(answer: Any) -> None:
    """Backward-compat: every JSON answer (null and false included) is an answer."""
    assert _read({"id": "c.q", "answer": answer}) == Answered(id="c.q", answer=answer)


def test_a_pre_082_answer_in_a_file_loads_as_answered_and_is_kept_verbatim(
    tmp_path: Path,
) -> None:
    """Backward-compat on disk: the legacy entry loads as Answered and re-saves unchanged."""
    path = _write_events(tmp_path, [_entry({"id": "toolu_01YZ.apply_changes", "answer": True})])
    before = path.read_bytes()
    assert _only_payload(tmp_path) == Answered(id="toolu_01YZ.apply_changes", answer=True)
    conversation = load_conversation(tmp_path)
    result = save_conversation(conversation)
    assert result.written == ()
    assert path.read_bytes() == before


# -------------------------------------------------------- tagged serialization

TAGGED: list[tuple[InquiryResponse, dict[str, Any]]] = [
    (
        Answered(id="call_1.confirm.1", answer=True),
        {"outcome": "answered", "id": "call_1.confirm.1", "answer": True},
    ),
    (
        Cancelled(id="call_1.confirm.1", reason=CancellationReason.USER),
        {"outcome": "cancelled", "id": "call_1.confirm.1", "reason": "user"},
    ),
    (
        Cancelled(id="call_1.confirm.1", reason=CancellationReason.BACKEND_ERROR),
        {"outcome": "cancelled", "id": "call_1.confirm.1", "reason": "backend_error"},
    ),
    (
        Cancelled(id="call_1.passphrase.1", reason=CancellationReason.NO_PROMPT_BACKEND),
        {"outcome": "cancelled", "id": "call_1.passphrase.1", "reason": "no_prompt_backend"},
    ),
    (
        Cancelled(id="call_1.passphrase.1", reason=CancellationReason.ASSISTANT_ROUTING_DENIED),
        {
            "outcome": "cancelled",
            "id": "call_1.passphrase.1",
            "reason": "assistant_routing_denied",
        },
    ),
    (
        Cancelled(id="call_1.confirm.1", reason=CancellationReason.INVALID_STATIC_ANSWER),
        {"outcome": "cancelled", "id": "call_1.confirm.1", "reason": "invalid_static_answer"},
    ),
    (
        Redacted(id="call_1.passphrase.1"),
        {"outcome": "redacted", "id": "call_1.passphrase.1"},
    ),
]


@pytest.mark.parametrize(("response", "wire"), TAGGED)
def test_each_response_is_written_in_its_tagged_shape(
    response: InquiryResponse, wire: dict[str, Any]
) -> None:
    """Tagged serialization: each variant writes its own shape, outcome first."""
    written = unstructure_event(response)
    assert written == wire
    assert list(written) == list(wire)


def test_the_tagged_shapes_are_distinct() -> None:
    """Answered, Cancelled(user), Cancelled(backend_error) and Redacted never collide."""
    shapes = [orjson.dumps(unstructure_event(response)) for response, _ in TAGGED]
    assert len(set(shapes)) == len(shapes)


@pytest.mark.parametrize(("response", "wire"), TAGGED)
def test_each_tagged_shape_reads_back(response: InquiryResponse, wire: dict[str, Any]) -> None:
    """The tagged form reads back to the same response."""
    assert _read(wire) == response


@pytest.mark.parametrize(("response", "wire"), TAGGED)
def test_a_new_response_is_saved_tagged_in_its_entry(
    response: InquiryResponse, wire: dict[str, Any], tmp_path: Path
) -> None:
    """On disk: the entry is event_id, timestamp, type, then the tagged payload."""
    (entry,) = _saved_entries(response, tmp_path)
    assert entry == {
        "event_id": "e000001",
        "timestamp": "2026-11-22 09:30:00.0",
        "type": "inquiry_response",
        **wire,
    }
    assert list(entry) == ["event_id", "timestamp", "type", *wire]
    assert _only_payload(tmp_path) == response


# --------------------------------------------------- missing reason is `user`


def test_a_cancelled_response_without_a_reason_reads_as_user() -> None:
    """Missing reason defaults to user, the conservative choice."""
    assert _read({"outcome": "cancelled", "id": "call_1.confirm.1"}) == Cancelled(
        id="call_1.confirm.1", reason=CancellationReason.USER
    )


def test_a_cancelled_entry_without_a_reason_loads_as_user(tmp_path: Path) -> None:
    """On disk: a reasonless cancellation loads as user, and is not rewritten."""
    path = _write_events(tmp_path, [_entry({"outcome": "cancelled", "id": "c.q.1"})])
    before = path.read_bytes()
    assert _only_payload(tmp_path) == Cancelled(id="c.q.1", reason=CancellationReason.USER)
    save_conversation(load_conversation(tmp_path))
    assert path.read_bytes() == before


# ------------------------------------------------ unknown reason round trips


@pytest.mark.parametrize("tag", ["some_future_variant", "", " ", "User"])
def test_an_unknown_reason_reads_as_unknown_and_writes_back_identically(tag: str) -> None:
    """An unrecognised tag, the empty one too, lands as Unknown(tag) and re-serializes alike."""
    wire = {"outcome": "cancelled", "id": "call_1.confirm.1", "reason": tag}
    read = _read(wire)
    assert read == Cancelled(id="call_1.confirm.1", reason=UnknownCancellationReason(tag))
    assert isinstance(read, Cancelled)
    assert read.reason.as_str() == tag
    assert unstructure_event(read) == wire
    assert orjson.dumps(unstructure_event(read)) == orjson.dumps(wire)


def test_an_unknown_reason_survives_a_load_and_save_byte_for_byte(tmp_path: Path) -> None:
    """On disk: the unknown reason's entry is written back with an identical shape."""
    entries = [
        _entry({"outcome": "cancelled", "id": "c.q.1", "reason": "some_future_variant"}),
        {"event_id": "turn002", "timestamp": STAMP, "type": "turn_start"},
    ]
    path = _write_events(tmp_path, entries)
    conversation = load_conversation(tmp_path)
    conversation.stream.append(Redacted(id="c.pw.1"))  # forces a rewrite
    save_conversation(conversation)
    written = orjson.loads(path.read_bytes())
    assert written[:2] == entries
    assert orjson.dumps(written[0]) == orjson.dumps(entries[0])


def test_an_unknown_reason_in_a_rebuilt_entry_is_written_verbatim(tmp_path: Path) -> None:
    """Written from the record (not the loaded text), the unknown tag is still verbatim."""
    reason = UnknownCancellationReason("some_future_variant")
    (entry,) = _saved_entries(Cancelled(id="c.q.1", reason=reason), tmp_path)
    assert entry["reason"] == "some_future_variant"


# ------------------------------------------------------- Redacted has no answer


def test_a_redacted_response_is_written_without_an_answer() -> None:
    """Redacted serializes with no answer key (and no reason)."""
    written = unstructure_event(Redacted(id="call_1.passphrase.1"))
    assert "answer" not in written
    assert "reason" not in written


def test_a_redacted_response_reads_without_materializing_an_answer() -> None:
    """Reading a redacted response gives a record that holds no answer."""
    read = _read({"outcome": "redacted", "id": "call_1.passphrase.1"})
    assert read == Redacted(id="call_1.passphrase.1")
    assert not hasattr(read, "answer")


def test_a_redacted_entry_on_disk_has_no_answer_key(tmp_path: Path) -> None:
    """On disk: the saved redacted entry has no answer key at all."""
    (entry,) = _saved_entries(Redacted(id="call_1.passphrase.1"), tmp_path)
    assert "answer" not in entry
    assert b'"answer"' not in (tmp_path / "events.json").read_bytes()


# ---------------------------------------------------------------- invalid shape


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"id": "call_1.confirm.1"}, "neither an 'outcome' nor an 'answer'"),
        ({}, "neither an 'outcome' nor an 'answer'"),
        ({"outcome": "answered", "id": "q"}, "answered inquiry_response has no 'answer'"),
        ({"outcome": "vanished", "id": "q"}, "unknown inquiry_response outcome 'vanished'"),
        ({"outcome": "cancelled", "id": "q", "reason": 5}, "reason must be a string, got an int"),
        ({"outcome": "cancelled", "id": "q", "reason": None}, "reason must be a string, got null"),
        ({"outcome": "redacted"}, "Redacted.id"),
        ({"answer": True}, "Answered.id"),
    ],
)
def test_an_invalid_response_shape_is_an_error(payload: dict[str, Any], problem: str) -> None:
    """No outcome, no answer and no redacted shape (or any broken variant) is an error."""
    with pytest.raises(WireError, match=problem):
        _read(payload)


def test_an_invalid_response_in_a_file_is_a_stream_format_error(tmp_path: Path) -> None:
    """On disk: loading refuses it, naming the file, the entry and the problem."""
    path = _write_events(
        tmp_path,
        [
            {"event_id": "turn001", "timestamp": STAMP, "type": "turn_start"},
            _entry({"id": "call_1.confirm.1"}),
        ],
    )
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 1
    message = str(caught.value)
    assert str(path) in message
    assert "entry 1" in message
    assert "neither an 'outcome' nor an 'answer'" in message
