"""Parsing a file and learning whether it can be written back (coordinator.wire._json_read).

The parse proves a file writable by reading it inside extra levels of arrays
(a text long enough that this costs it less than writing it once), and a
large file laid out as JP writes it is read a block at a time and parsed
in pieces of whole entries. These tests hold both to what they replace:
``orjson.loads`` of the whole file as it is (its value, or its error at the
file's own offsets), and writing the value once to see whether ``orjson`` can.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import jp_params
from hypothesis import given
from hypothesis import strategies as st
from reliability_inputs import own_events
from strategies import json_values

from coordinator import StreamFormatError, load_conversation, save_conversation
from coordinator.wire import _json_read, encode_stream
from coordinator.wire._json_read import READ_BLOCK, invalid_utf8, loads_writable, read_file
from machines import ChatRequest

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True, params=["wrapped", "as_it_is"])
def parse_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test both ways: every text wrapped, and every text (but a long one) as it is."""
    way: str = request.param
    monkeypatch.setattr(_json_read, "WRAP_FROM", 0 if way == "wrapped" else 1 << 40)
    return way


def _nested(depth: int, kind: str) -> bytes:
    """A value ``depth`` containers deep: arrays, objects, or the two in turn."""
    text = b"7"
    for level in range(depth):
        if kind == "array" or (kind == "mixed" and level % 2):
            text = b"[" + text + b"]"
        else:
            text = b'{"k":' + text + b"}"
    return text


def _as_orjson(data: bytes) -> tuple[Any, bool] | str:
    """What ``loads_writable`` must give: orjson's value and whether it writes, or its error."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        return str(error)
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return value, False
    return value, True


def _ours(data: bytes) -> tuple[Any, bool] | str:
    try:
        return loads_writable(data)
    except orjson.JSONDecodeError as error:
        return str(error)


def _same(ours: tuple[Any, bool] | str, expected: tuple[Any, bool] | str) -> bool:
    """Equality without recursion (``==`` on a value 1024 levels deep exceeds Python's limit)."""
    if isinstance(ours, str) or isinstance(expected, str):
        return ours == expected
    pairs = [(ours[1], expected[1]), (ours[0], expected[0])]
    while pairs:
        left, right = pairs.pop()
        if type(left) is not type(right):
            return False
        if type(left) is dict:
            if list(left) != list(right):
                return False
            left, right = list(left.values()), list(right.values())
        if type(left) is list:
            if len(left) != len(right):
                return False
            pairs.extend(zip(left, right, strict=True))
        elif left != right:
            return False
    return True


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
@pytest.mark.parametrize("depth", [0, 1, 253, 254, 255, 256, 1023, 1024, 1025])
def test_depth_decides_writable_as_writing_does(kind: str, depth: int) -> None:
    """At and around orjson's limits (writes 254 levels, reads 1024), for every container."""
    data = _nested(depth, kind)
    assert _same(_ours(data), _as_orjson(data))


def test_the_limits_are_orjsons() -> None:
    """The limits assumed are the installed orjson's, so files are parsed once, wrapped."""
    read, write = _json_read.READ_DEPTH, _json_read.WRITE_DEPTH

    def writes(depth: int) -> bool:
        result = _as_orjson(_nested(depth, "mixed"))
        assert not isinstance(result, str)
        return result[1]

    assert writes(write)
    assert not writes(write + 1)
    assert isinstance(_as_orjson(_nested(read + 1, "mixed")), str)
    assert _json_read._wrapping() == (b"[" * (read - write), b"]" * (read - write))


@pytest.mark.parametrize(
    "data",
    [b"", b"  \n", b"]", b"][", b"1], [2", b"[1],[2]", b"1 2", b"{}]", b"[]][[]", b'"a"]'],
)
def test_text_that_is_json_only_once_wrapped_is_refused_as_orjson_refuses_it(
    data: bytes,
) -> None:
    """Same message, with the offsets of the file itself."""
    expected = _as_orjson(data)
    assert isinstance(expected, str)
    assert _ours(data) == expected


@pytest.mark.parametrize("depth", [254, 255, 1024, 1025])
@pytest.mark.parametrize("shorter", [1, 0])
def test_texts_either_side_of_the_wrapping_length_read_as_orjson_reads_them(
    monkeypatch: pytest.MonkeyPatch, depth: int, shorter: int
) -> None:
    """Wrapped from ``WRAP_FROM`` bytes, as they are below: the same value, writable or not."""
    monkeypatch.setattr(_json_read, "WRAP_FROM", 8192)
    nested = _nested(depth, "mixed")
    data = nested + b" " * (8192 - shorter - len(nested))
    wrapped = _json_read.wrap(data)
    assert (len(wrapped) > len(data)) is (not shorter)
    assert _same(_ours(data), _as_orjson(data))


def test_whitespace_around_the_value_is_allowed_as_orjson_allows_it() -> None:
    """The file's value, whatever whitespace surrounds it."""
    data = b' \n\t[1, {"a": [true]}]\r\n '
    assert _ours(data) == ([1, {"a": [True]}], True)


@given(
    value=json_values(max_leaves=12),
    cuts=st.lists(st.tuples(st.integers(0, 200), st.sampled_from(b'[]{},:" 1')), max_size=3),
)
def test_any_text_reads_as_orjson_reads_it(value: Any, cuts: list[tuple[int, int]]) -> None:
    """Valid JSON, and JSON with brackets, commas and quotes put in or taken out."""
    data = bytearray(orjson.dumps(value))
    for position, byte in cuts:
        at = position % (len(data) + 1)
        if byte == ord(" ") and at < len(data):
            del data[at]
        else:
            data.insert(at, byte)
    assert _ours(bytes(data)) == _as_orjson(bytes(data))


def test_with_other_limits_every_file_is_read_the_plain_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An orjson whose limits differ gets no wrapping, and the results stay right."""
    monkeypatch.setattr(_json_read, "READ_DEPTH", 2048)
    assert _json_read._wrapping.__wrapped__() == (b"", b"")
    monkeypatch.setattr(_json_read, "_wrapping", lambda: (b"", b""))
    for depth in (3, 254, 255, 1024, 1025):
        data = _nested(depth, "mixed")
        assert _same(_ours(data), _as_orjson(data))
    assert _same(_ours(b"1], [2"), _as_orjson(b"1], [2"))


def _with_deep_arguments(tmp_path: Path, depth: int) -> bytes:
    """Our small conversation whose sixth entry's arguments make the file ``depth`` deep."""
    events = own_events()
    events[5]["arguments"]["deep"] = "\x00deep\x00"
    # The file's array, the entry and its arguments are three levels already.
    deep = b"[" * (depth - 3) + b"]" * (depth - 3)
    data = orjson.dumps(events).replace(orjson.dumps("\x00deep\x00"), deep)
    (tmp_path / "events.json").write_bytes(data)
    return data


def test_a_file_exactly_as_deep_as_orjson_writes_loads_and_saves(tmp_path: Path) -> None:
    """254 levels, counting the file's array: the deepest value that can be saved."""
    data = _with_deep_arguments(tmp_path, 254)
    conversation = load_conversation(tmp_path)
    save_conversation(conversation, tmp_path / "copy")
    saved = orjson.loads((tmp_path / "copy" / "events.json").read_bytes())
    assert saved[5]["arguments"]["deep"] == orjson.loads(data)[5]["arguments"]["deep"]


def test_a_file_one_level_deeper_is_refused_naming_the_entry(tmp_path: Path) -> None:
    """255 levels: refused at load, by entry, and the file left as it was."""
    data = _with_deep_arguments(tmp_path, 255)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 5
    assert str(caught.value).endswith("entry is nested too deeply to be written back")
    assert (tmp_path / "events.json").read_bytes() == data


def test_a_broken_file_is_refused_at_its_own_offsets(tmp_path: Path) -> None:
    """The error a load reports is orjson's for the file, not for the wrapped text."""
    data = b'[\n  {"type": "turn_start",\n   oops\n]\n'
    (tmp_path / "events.json").write_bytes(data)
    expected = _as_orjson(data)
    assert isinstance(expected, str)
    assert "line 3" in expected
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value).endswith(f"is not valid JSON: {expected}")


# ------------------------------------------------------------- read in pieces


class _Handle(io.BytesIO):
    """A file that counts how it is read: whole, in blocks, or again from its start."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.whole_reads = 0
        self.seeks = 0

    def read(self, size: int | None = -1, /) -> bytes:
        if size is None or size < 0:
            self.whole_reads += 1
        return super().read(size)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        self.seeks += 1
        return super().seek(offset, whence)


def _read(data: bytes, block: int) -> tuple[tuple[Any, bool] | str, _Handle]:
    handle = _Handle(data)
    try:
        return read_file(handle, block=block), handle
    except orjson.JSONDecodeError as error:
        return str(error), handle


def _laid_out(entries: list[Any]) -> bytes:
    """``entries`` as JP writes a stream: a 2-space indent and a newline."""
    return orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n"


def test_a_stream_as_jp_lays_it_out_is_read_in_pieces(tmp_path: Path) -> None:
    """The file is never held whole, nor read twice, and its value is orjson's."""
    entries = own_events()
    data = _laid_out(entries)
    result, handle = _read(data, block=64)
    assert result == (orjson.loads(data), True)
    assert (handle.whole_reads, handle.seeks) == (0, 0)
    (tmp_path / "events.json").write_bytes(data)
    loaded = encode_stream(load_conversation(tmp_path).stream)
    assert [{k: v for k, v in entry.items() if k != "event_id"} for entry in loaded] == entries


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_are_read_in_pieces_as_orjson_reads_them(path: Path) -> None:
    """JP's own files take the path that reads them a block at a time."""
    data = (path / "events.json").read_bytes()
    result, handle = _read(data, block=4096)
    assert result == (orjson.loads(data), True)
    assert (handle.whole_reads, handle.seeks) == (0, 0)


@given(
    entries=st.lists(
        st.dictionaries(st.sampled_from("abc"), json_values(max_leaves=6)), max_size=6
    ),
    cuts=st.lists(
        st.tuples(
            st.integers(0, 400),
            st.sampled_from([b"[", b"]", b"{", b"}", b",", b'"', b" ", b"\n", b"\n  },\n  {"]),
        ),
        max_size=3,
    ),
    block=st.integers(1, 40),
)
def test_any_text_read_in_pieces_reads_as_orjson_reads_it(
    entries: list[dict[str, Any]], cuts: list[tuple[int, bytes]], block: int
) -> None:
    """Any laid-out stream, mutated, reads as orjson reads it: value, writability or error.

    Brackets, commas, quotes and entry breaks are put in or taken out, and the
    error must be orjson's for the file, at its own offsets.
    """
    data = bytearray(_laid_out(entries))
    for position, text in cuts:
        at = position % (len(data) + 1)
        if text == b" " and at < len(data):
            del data[at]
        else:
            data[at:at] = text
    assert _read(bytes(data), block)[0] == _as_orjson(bytes(data))


def test_an_entry_break_inside_an_entry_is_read_as_orjson_reads_it() -> None:
    """A file laid out otherwise, whose break sits deeper than the entries: read again whole."""
    data = b'[\n  {"a": [\n  {\n  },\n  {\n  }\n  ]},\n  {"d": [\n  {"e": 1\n  },\n  {}]}\n]\n'
    assert data.count(b"\n  },\n  {") == 2  # both inside an entry
    result, handle = _read(data, block=8)
    assert result == (orjson.loads(data), True)
    assert handle.seeks == 1


def test_a_break_split_across_two_blocks_is_found() -> None:
    """Every block size, so that the break starts in one block and ends in the next."""
    data = _laid_out([{"n": number, "text": "x" * number} for number in range(12)])
    for block in range(1, 40):
        result, handle = _read(data, block)
        assert result == (orjson.loads(data), True)
        assert handle.seeks == 0


def test_a_laid_out_file_too_deep_in_a_later_piece_is_refused_naming_the_entry(
    tmp_path: Path,
) -> None:
    """The too-deep entry is in a piece after the first: refused, by entry, file untouched."""
    events = own_events()
    events[5]["arguments"]["deep"] = "\x00deep\x00"
    deep = b"[" * 252 + b"]" * 252
    data = _laid_out(events).replace(orjson.dumps("\x00deep\x00"), deep)
    (tmp_path / "events.json").write_bytes(data)
    assert _read(data, block=64)[0] == _as_orjson(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 5
    assert (tmp_path / "events.json").read_bytes() == data


def test_a_laid_out_file_broken_in_a_later_piece_is_refused_at_its_own_offsets(
    tmp_path: Path,
) -> None:
    """The error is orjson's for the whole file, not for the piece that would not parse."""
    data = _laid_out(own_events()).replace(b'"type": "tool_call_response"', b'"type" "x"', 1)
    (tmp_path / "events.json").write_bytes(data)
    expected = _as_orjson(data)
    assert isinstance(expected, str)
    assert not expected.endswith("line 1 column 1 (char 0)")
    assert _read(data, block=64)[0] == expected
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value).endswith(f"is not valid JSON: {expected}")


@pytest.mark.parametrize("ending", [b"\n1\n", b"\n", b"\n]]\n", b"\n] 1\n", b"\n]\x0c", b"\n}\n"])
def test_a_laid_out_file_that_does_not_end_its_array_is_refused_as_orjson_refuses_it(
    ending: bytes,
) -> None:
    """The last piece ends at the array's own "]": anything else there is the file's error."""
    data = _laid_out(own_events()).removesuffix(b"\n]\n") + ending
    expected = _as_orjson(data)
    assert isinstance(expected, str)
    assert _read(data, block=64)[0] == expected


# ------------------------------------------------------------- not UTF-8


def _where(data: bytes, offset: int) -> str:
    """How a position is said: line and column (characters) from 1, and the byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[data.rfind(b"\n", 0, offset) + 1 : offset].decode()) + 1
    return f"line {line} column {column} (byte offset {offset})"


def test_the_first_byte_not_utf8_is_found_whatever_the_block_size() -> None:
    """Characters cut by a block's end are not errors; the bad byte is placed in the file."""
    data = '[\n  "é€😀",\n  "x'.encode() + b"\xff" + b'"\n]\n'
    bad = data.index(b"\xff")
    expected = f"invalid UTF-8 (byte 0xff): {_where(data, bad)}"
    assert expected.endswith("line 3 column 5 (byte offset 21)")
    good = '[\n  "é€😀"\n]\n'.encode()
    cut_short = good + "€".encode()[:2]
    for block in range(1, len(data) + 1):
        assert invalid_utf8(io.BytesIO(data), block=block) == expected
        assert invalid_utf8(io.BytesIO(good), block=block) is None
        assert invalid_utf8(io.BytesIO(cut_short), block=block) == (
            f"invalid UTF-8 (byte 0xe2): {_where(cut_short, len(good))}"
        )


def test_a_byte_not_utf8_in_a_later_piece_is_refused_at_its_own_line(tmp_path: Path) -> None:
    """A stream read in pieces names the byte's line, column and offset, not char 0."""
    entries = [{"type": "chat_request", "content": f"{n} {'x' * 400}"} for n in range(2000)]
    data = _laid_out(entries).replace(b"1500 x", b"1500 \xe9", 1)
    offset = data.index(b"\xe9")
    assert offset > READ_BLOCK  # past the first piece
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'events.json'}: is not valid JSON: invalid UTF-8 (byte 0xe9): "
        f"{_where(data, offset)}"
    )
    assert "line 6004 column 22" in str(caught.value)
    assert (tmp_path / "events.json").read_bytes() == data


# ------------------------------------------------------ integers beyond 64 bits

_STAMP = "2026-03-05 19:31:45.7"
#: Stands in the tree for a number literal, put into the text afterwards.
_NUMBER = "\x00number\x00"


def _with_number(entry: dict[str, Any], literal: str) -> bytes:
    """A stream of a turn start and ``entry``, whose placeholder becomes ``literal`` verbatim."""
    entries = [{"timestamp": _STAMP, "type": "turn_start"}, {"timestamp": _STAMP, **entry}]
    return _laid_out(entries).replace(orjson.dumps(_NUMBER), literal.encode())


def _question(default: Any) -> dict[str, Any]:
    return {"text": "Note?", "answer_type": {"type": "text"}, "default": default}


#: Every place a number can sit, as (entry, the key path the error names).
_PLACES = [
    pytest.param({"type": "future_kind", "ledger_id": _NUMBER}, "'ledger_id'", id="unknown-entry"),
    pytest.param(
        {"type": "future_kind", "totals": {"rows": [1, _NUMBER]}},
        "'totals.rows[1]'",
        id="unknown-entry-nested",
    ),
    pytest.param(
        {"type": "tool_call_request", "id": "c", "name": "n", "arguments": {"n": [_NUMBER]}},
        "'arguments.n[0]'",
        id="arguments",
    ),
    pytest.param(
        {"type": "chat_response", "message": "ok", "metadata": {"tokens": _NUMBER}},
        "'metadata.tokens'",
        id="metadata",
    ),
    pytest.param(
        {"type": "config_delta", "delta": {"seed": _NUMBER}}, "'delta.seed'", id="config-delta"
    ),
    pytest.param(
        {"type": "compaction", "from_turn": 0, "to_turn": 1, "reasoning": {"n": _NUMBER}},
        "'reasoning.n'",
        id="compaction",
    ),
    pytest.param(
        {"type": "chat_request", "content": "hi", "schema": {"maximum": _NUMBER}},
        "'schema.maximum'",
        id="chat-request-schema",
    ),
    pytest.param(
        {"type": "chat_response", "data": {"id": _NUMBER}}, "'data.id'", id="chat-response-data"
    ),
    pytest.param(
        {
            "type": "inquiry_request",
            "id": "c.q",
            "source": {"source": "user"},
            "question": _question(_NUMBER),
        },
        "'question.default'",
        id="question-default",
    ),
    pytest.param(
        {"type": "inquiry_response", "id": "c.q", "answer": _NUMBER}, "'answer'", id="answer"
    ),
    pytest.param(
        {"type": "inquiry_response", "outcome": "answered", "id": "c.q", "answer": [_NUMBER]},
        "'answer[0]'",
        id="answered-outcome",
    ),
]


@pytest.mark.parametrize("literal", ["123456789012345678901234567890", "-9223372036854775809"])
@pytest.mark.parametrize(("entry", "key"), _PLACES)
def test_an_integer_beyond_64_bits_is_refused_naming_the_entry_and_key(
    tmp_path: Path, entry: dict[str, Any], key: str, literal: str
) -> None:
    """Read as a float, it would be saved as one: the load is refused and nothing written."""
    data = _with_number(entry, literal)
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 1
    assert str(caught.value) == (
        f"{tmp_path / 'events.json'}: entry 1: {entry['type']}: the integer at {key} lies "
        "beyond 64 bits: it would be written back as a float, not as read"
    )
    assert literal not in str(caught.value)
    assert (tmp_path / "events.json").read_bytes() == data


def test_an_integer_beyond_64_bits_in_metadata_json_is_refused_naming_the_key(
    tmp_path: Path,
) -> None:
    """The conversation's metadata file is written back too: refused the same way."""
    (tmp_path / "events.json").write_bytes(_laid_out([]))
    (tmp_path / "metadata.json").write_bytes(
        b'{\n  "title": "t",\n  "stars": [1e20, 18446744073709551616]\n}\n'
    )
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index is None
    assert str(caught.value) == (
        f"{tmp_path / 'metadata.json'}: the integer at 'stars[1]' lies beyond 64 bits: "
        "it would be written back as a float, not as read"
    )


@pytest.mark.parametrize("literal", ["1e20", "1.5e300", "-1e19", "12345678901234567890.0"])
@pytest.mark.parametrize(("entry", "key"), _PLACES)
def test_a_float_beyond_64_bits_written_as_a_float_loads_and_saves(
    tmp_path: Path, entry: dict[str, Any], key: str, literal: str
) -> None:
    """Only integers are refused: the same magnitude written as a float is a float, kept."""
    del key
    (tmp_path / "events.json").write_bytes(_with_number(entry, literal))
    conversation = load_conversation(tmp_path)
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    assert float(literal) in _numbers(saved[1])


def _numbers(value: Any) -> list[Any]:
    """Every number inside ``value``."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) in (int, float):
            found.append(item)
    return found


@pytest.mark.parametrize("literal", ["18446744073709551615", "-9223372036854775808"])
def test_the_integers_at_the_edges_of_64_bits_load_and_save_as_they_were(
    tmp_path: Path, literal: str
) -> None:
    """From -2**63 to 2**64 - 1 integers are read exactly, so those are kept, digit for digit."""
    entry = {"type": "future_kind", "ledger_id": _NUMBER, "event_id": "e1"}
    data = _with_number(entry, literal)
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation(tmp_path)
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    assert f'"ledger_id": {literal},'.encode() in (tmp_path / "events.json").read_bytes()


def test_the_slow_path_tells_an_integer_from_a_float_by_its_text() -> None:
    """Where the standard library finds an integer beyond 64 bits: entry and key path."""
    text = b'[{"a": 1e20}, {"b": {"c": [0, -18446744073709551617]}}]'
    assert _json_read.integer_beyond_64_bits(text) == (1, "b.c[1]")
    assert _json_read.integer_beyond_64_bits(b'[{"a": 1e20, "b": 18446744073709551615}]') is None
    assert _json_read.integer_beyond_64_bits(b"99999999999999999999") == (None, "")
