"""Event ids (RFD D24): generated, accepted, repaired, and written first."""

from __future__ import annotations

import logging
import os
import re
import string
from collections import Counter
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from hypothesis import given
from hypothesis import strategies as st

from coordinator import (
    Conversation,
    ConversationStream,
    EventEntry,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.stream import UnknownEntry, new_event_id
from coordinator.wire import IdRepairs, decode_stream
from machines import ChatRequest, TurnStart

if TYPE_CHECKING:
    from pathlib import Path

GENERATED = re.compile(r"[0-9a-z]{7}")
STAMP = "2026-03-05 19:31:45.7"


def _write(directory: Path, entries: list[dict[str, Any]]) -> Path:
    path = directory / "events.json"
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def _turn(event_id: object = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {} if event_id is None else {"event_id": event_id}
    return entry | {"timestamp": STAMP, "type": "turn_start"} | extra


def _ids(conversation: Conversation) -> list[str | None]:
    return [entry.event_id for entry in conversation.stream]


# --------------------------------------------------------------- generation


def test_new_ids_are_seven_lowercase_base36_characters() -> None:
    """A generated id is 7 characters from 0-9a-z."""
    ids = [new_event_id() for _ in range(2000)]
    assert all(GENERATED.fullmatch(event_id) for event_id in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    ("drawn", "expected"),
    [
        (bytes(range(32)), "0123456"),
        (bytes([35, 36, 71, 72, 251]) + bytes(27), "z0z0z00"),
        # Bytes 252-255 would make 0-3 likelier than the rest: they are dropped.
        (bytes([252, 253, 254, 255, 10, 11, 12, 13, 14, 15, 16]) + bytes(21), "abcdefg"),
    ],
)
def test_new_ids_are_drawn_from_the_os_rng(
    monkeypatch: pytest.MonkeyPatch, drawn: bytes, expected: str
) -> None:
    """Each id is one os.urandom draw, a byte per character, each byte value mapped evenly."""
    sizes: list[int] = []

    def urandom(size: int) -> bytes:
        sizes.append(size)
        return drawn[:size]

    monkeypatch.setattr(os, "urandom", urandom)
    assert new_event_id() == expected
    assert new_event_id() == expected  # nothing of the first draw was kept for the second
    assert sizes == [32, 32]


def test_a_draw_with_too_few_usable_bytes_is_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A draw that leaves fewer than seven usable bytes is thrown away, and another made."""
    draws = iter([bytes([255] * 26 + [1] * 6), bytes(32)])
    monkeypatch.setattr(os, "urandom", lambda size: next(draws)[:size])
    assert new_event_id() == "0000000"


def test_nothing_drawn_waits_in_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every id asks the OS afresh: no id drawn earlier waits in the process to be handed out."""
    calls: list[int] = []
    real = os.urandom

    def urandom(size: int) -> bytes:
        calls.append(size)
        return real(size)

    monkeypatch.setattr(os, "urandom", urandom)
    ids = [new_event_id() for _ in range(100)]
    assert len(set(ids)) == len(ids)
    assert len(calls) == len(ids)


def test_a_forked_child_draws_its_own_ids() -> None:
    """After a fork, parent and child each draw from the OS: they do not give the same ids."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, " ".join(new_event_id() for _ in range(20)).encode())
        os._exit(0)
    os.close(write)
    mine = {new_event_id() for _ in range(20)}
    given = os.read(read, 1024).decode().split()
    os.close(read)
    os.waitpid(child, 0)
    assert len(given) == 20
    assert all(GENERATED.fullmatch(event_id) for event_id in given)
    assert mine.isdisjoint(given)


def test_every_character_is_equally_likely_in_every_position() -> None:
    """Over many ids each of the 36 characters turns up about equally often at each position."""
    ids = [new_event_id() for _ in range(36 * 400)]
    for position in range(7):
        counts = Counter(event_id[position] for event_id in ids)
        assert set(counts) == set(string.digits + string.ascii_lowercase)
        # 400 expected per character; 6 standard deviations (about 120) either side.
        assert all(280 <= count <= 520 for count in counts.values()), (position, counts)


def test_appended_entries_get_generated_ids() -> None:
    """A stream without an injected id source gives new entries generated ids."""
    stream = ConversationStream()
    entries = [stream.append(TurnStart()), stream.append(ChatRequest(content="hi"))]
    assert all(GENERATED.fullmatch(entry.event_id) for entry in entries)
    assert entries[0].event_id != entries[1].event_id


# ------------------------------------------------------------------ reading


@pytest.mark.parametrize("event_id", ["x", "Hand-Edited ID!", "0", "toolu_01.q", "ü"])
def test_any_non_empty_id_is_kept_as_it_is(tmp_path: Path, event_id: str) -> None:
    """An id that does not look generated is accepted unchanged."""
    _write(tmp_path, [_turn(event_id)])
    conversation = load_conversation(tmp_path)
    assert _ids(conversation) == [event_id]
    assert conversation.id_repairs == IdRepairs()


@pytest.mark.parametrize("event_id", [None, "", 7, ["a"], {"id": "a"}, True])
def test_a_missing_or_unusable_id_gets_a_fresh_one_at_load(
    tmp_path: Path, event_id: object
) -> None:
    """Missing, empty or non-string ids are replaced by a generated id, counted as assigned."""
    entries = [_turn("keep"), _turn() if event_id is None else _turn(event_id)]
    _write(tmp_path, entries)
    conversation = load_conversation(tmp_path)
    kept, fresh = _ids(conversation)
    assert kept == "keep"
    assert fresh is not None
    assert GENERATED.fullmatch(fresh)
    assert conversation.id_repairs == IdRepairs(assigned=1, regenerated=0)


def test_a_file_without_ids_gets_them_all_and_keeps_them_once_saved(tmp_path: Path) -> None:
    """Legacy files get ids at load; after a save the next load repairs nothing."""
    path = _write(tmp_path, [_turn(), _turn(), _turn()])
    conversation = load_conversation(tmp_path)
    assert conversation.id_repairs == IdRepairs(assigned=3, regenerated=0)
    assert conversation.id_repairs.total == 3
    result = save_conversation(conversation)
    assert path in result.written
    reloaded = load_conversation(tmp_path)
    assert reloaded.id_repairs == IdRepairs()
    assert _ids(reloaded) == _ids(conversation)


def test_ids_assigned_at_load_differ_between_loads_until_saved(tmp_path: Path) -> None:
    """Nothing is written by loading, so two loads may assign different ids."""
    path = _write(tmp_path, [_turn()])
    before = path.read_bytes()
    first = load_conversation(tmp_path, new_id=lambda: "first00")
    second = load_conversation(tmp_path, new_id=lambda: "second0")
    assert (_ids(first), _ids(second)) == (["first00"], ["second0"])
    assert path.read_bytes() == before


# ---------------------------------------------------------------- duplicates


def test_the_earliest_duplicate_keeps_its_id_and_later_ones_are_regenerated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Duplicates: first occurrence keeps the id, each later one gets a fresh id and a warning."""
    path = _write(tmp_path, [_turn("dup"), _turn("other"), _turn("dup"), _turn("dup")])
    with caplog.at_level(logging.WARNING, logger="coordinator.stream"):
        conversation = load_conversation(tmp_path, new_id=CountingIds())
    assert _ids(conversation) == ["dup", "other", "e000001", "e000002"]
    assert conversation.id_repairs == IdRepairs(assigned=0, regenerated=2)
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("repeats event id 'dup'" in record.getMessage() for record in warnings)
    assert str(path) in warnings[0].getMessage()
    assert "entry 2" in warnings[0].getMessage()
    assert "entry 3" in warnings[1].getMessage()


def test_repaired_ids_are_what_a_save_writes_and_the_next_load_reads(tmp_path: Path) -> None:
    """Repaired and misplaced ids are saved as repaired, first; the next load repairs nothing."""
    late_id = {"timestamp": STAMP, "type": "turn_start", "event_id": "late"}
    path = _write(
        tmp_path, [_turn("dup"), _turn("dup"), _turn(""), _turn(7), late_id, _turn("dup")]
    )
    conversation = load_conversation(tmp_path, new_id=CountingIds())
    repaired = ["dup", "e000001", "e000002", "e000003", "late", "e000004"]
    assert _ids(conversation) == repaired
    save_conversation(conversation)
    written = orjson.loads(path.read_bytes())
    assert [entry["event_id"] for entry in written] == repaired
    assert all(next(iter(entry)) == "event_id" for entry in written)
    assert all(list(entry)[1:] == ["timestamp", "type"] for entry in written)
    again = load_conversation(tmp_path)
    assert _ids(again) == repaired
    assert again.id_repairs == IdRepairs()


def test_a_fresh_id_never_takes_an_id_used_further_down(tmp_path: Path) -> None:
    """Repair skips candidates that a later entry already carries."""
    _write(tmp_path, [_turn(), _turn("e000001"), _turn("e000002")])
    conversation = load_conversation(tmp_path, new_id=CountingIds())
    assert _ids(conversation) == ["e000003", "e000001", "e000002"]


def test_a_stream_holds_unique_ids_after_repair(tmp_path: Path) -> None:
    """After load, every id in the stream is distinct, and the stream accepts itself back."""
    _write(tmp_path, [_turn("a"), _turn("a"), _turn(), _turn(""), _turn("b"), _turn("a")])
    conversation = load_conversation(tmp_path)
    ids = _ids(conversation)
    assert len(set(ids)) == len(ids)
    conversation.stream.replace(list(conversation.stream))
    assert _ids(conversation) == ids


@pytest.mark.parametrize("unknown_first", [True, False])
def test_an_unknown_entry_keeps_its_id_and_a_known_one_sharing_it_is_regenerated(
    tmp_path: Path, unknown_first: bool
) -> None:
    """Unknown entries are verbatim, so a known entry with the same id gets a fresh one."""
    unknown = {"event_id": "shared", "type": "future_kind", "timestamp": STAMP, "x": 1}
    known = _turn("shared")
    _write(tmp_path, [unknown, known] if unknown_first else [known, unknown])
    conversation = load_conversation(tmp_path, new_id=CountingIds())
    entries = list(conversation.stream)
    (unknown_entry,) = [entry for entry in entries if isinstance(entry, UnknownEntry)]
    (known_entry,) = [entry for entry in entries if isinstance(entry, EventEntry)]
    assert unknown_entry.raw == unknown
    assert known_entry.event_id == "e000001"
    assert conversation.id_repairs == IdRepairs(assigned=0, regenerated=1)
    conversation.stream.replace(entries)  # the ids are unique: the stream accepts them


# ------------------------------------------------------------------ writing


def test_event_id_is_the_first_key_of_every_written_entry(tmp_path: Path) -> None:
    """Loaded entries (id anywhere or nowhere) and new ones are written id first."""
    path = _write(
        tmp_path,
        [
            _turn(),
            {"timestamp": STAMP, "type": "chat_request", "content": "hi", "event_id": "late"},
            {"type": "config_delta", "timestamp": STAMP, "delta": {}},
        ],
    )
    conversation = load_conversation(tmp_path, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(ChatRequest(content="new"))
    conversation.stream.append_config_delta({"model": "m"})
    save_conversation(conversation)
    written = orjson.loads(path.read_bytes())
    assert [next(iter(entry)) for entry in written] == ["event_id"] * 5
    assert [entry["event_id"] for entry in written] == [
        "e000001",
        "late",
        "e000002",
        "e000003",
        "e000004",
    ]
    lines = path.read_text().splitlines()
    openings = [index for index, line in enumerate(lines) if line == "  {"]
    assert all(lines[index + 1].startswith('    "event_id": ') for index in openings)


def test_the_rest_of_an_entry_keeps_its_key_order(tmp_path: Path) -> None:
    """Only event_id moves: the other keys stay in the order they were read."""
    path = _write(tmp_path, [{"type": "config_delta", "timestamp": STAMP, "delta": {"b": 1}}])
    conversation = load_conversation(tmp_path, new_id=CountingIds())
    save_conversation(conversation)
    (entry,) = orjson.loads(path.read_bytes())
    assert list(entry) == ["event_id", "type", "timestamp", "delta"]


# ------------------------------------------------------- repair, as a property

#: Ids drawn from a handful, so that entries share them and fresh ids collide.
_POOL = ("a", "b", "c", "e000001", "e000002")


def _id_entries() -> st.SearchStrategy[list[dict[str, Any]]]:
    """Entries of known and unknown kinds whose ids repeat, are missing, or are unusable."""
    ids = st.sampled_from([*_POOL, None, "", 7])
    kinds = st.sampled_from(["turn_start", "turn_start", "future_kind"])
    return st.lists(st.tuples(ids, kinds), max_size=10).map(
        lambda drawn: [_id_entry(event_id, kind) for event_id, kind in drawn]
    )


def _id_entry(event_id: object, kind: str) -> dict[str, Any]:
    head: dict[str, Any] = {} if event_id is None else {"event_id": event_id}
    return head | {"timestamp": STAMP, "type": kind}


class _PoolIds:
    """A deterministic id source that offers the pool's ids first, then unique ones."""

    def __init__(self) -> None:
        self.offered = 0

    def __call__(self) -> str:
        self.offered += 1
        return _POOL[self.offered - 1] if self.offered <= len(_POOL) else f"new{self.offered:04d}"


@given(_id_entries())
def test_repair_keeps_each_first_usable_id_and_takes_no_id_of_the_file(
    entries: list[dict[str, Any]],
) -> None:
    """RFD D24 on any file: the first holder keeps a usable id unless an unknown entry holds it."""
    stream, repairs = decode_stream(entries, new_id=_PoolIds())
    in_file = {entry["event_id"] for entry in entries if _usable(entry.get("event_id"))}
    unknown_ids = {entry.get("event_id") for entry in entries if entry["type"] == "future_kind"}
    kept: set[object] = set()
    changed = 0
    for raw, loaded in zip(entries, stream, strict=True):
        if raw["type"] == "future_kind":
            assert isinstance(loaded, UnknownEntry)
            assert loaded.raw == raw  # verbatim, its id too
            continue
        event_id = raw.get("event_id")
        if _usable(event_id) and event_id not in kept and event_id not in unknown_ids:
            assert loaded.event_id == event_id
            kept.add(event_id)
        else:
            assert loaded.event_id not in in_file  # fresh, and no other entry's
            changed += 1
    known = [entry.event_id for entry in stream if isinstance(entry, EventEntry)]
    assert len(set(known)) == len(known)
    assert repairs.total == changed


def _usable(event_id: object) -> bool:
    return type(event_id) is str and bool(event_id)


@pytest.mark.parametrize("bad", ["", 7, None])
def test_an_id_source_that_returns_no_usable_id_is_refused(tmp_path: Path, bad: object) -> None:
    """A new_id callable returning an empty or non-string id fails the load, saying so."""
    _write(tmp_path, [_turn()])
    with pytest.raises(TypeError, match="new_id must return a non-empty string"):
        load_conversation(tmp_path, new_id=lambda: bad)  # type: ignore[arg-type, return-value]


def test_a_file_that_cannot_be_read_logs_no_repairs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Id warnings are for loads that succeed: a broken entry further down means none."""
    _write(tmp_path, [_turn("dup"), _turn("dup"), {"type": "turn_start", "timestamp": 5}])
    with (
        caplog.at_level(logging.WARNING, logger="coordinator.stream"),
        pytest.raises(StreamFormatError, match="timestamp must be a string") as raised,
    ):
        load_conversation(tmp_path)
    assert raised.value.index == 2
    assert caplog.records == []
