"""Reading a JSON file, refusing what a save would not write back (coordinator.wire._json_read).

A text reads as ``orjson`` reads it (its value, or its error at the file's own
offsets), unless it holds what ``orjson`` would not write back as the text
says: a value nested deeper than it writes, an integer beyond 64 bits, or an
object that repeats a key. Those are refused at load, naming the file, the
entry and the key, never a value; the file is left as it was. A file is read
whole, once, and checked as a whole.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import jp_params
from hypothesis import given
from hypothesis import strategies as st
from reliability_inputs import own_events
from strategies import json_values

from coordinator import StreamFormatError, load_conversation, save_conversation
from coordinator.wire import encode_stream
from coordinator.wire._json_read import (
    WRITE_DEPTH,
    JsonTextError,
    invalid_utf8,
    loads_writable,
    read_file,
    read_text,
)
from machines import ChatRequest

if TYPE_CHECKING:
    from pathlib import Path

#: orjson reads a value nested this deep, and no deeper.
READ_DEPTH = 1024


def _nested(depth: int, kind: str) -> bytes:
    """A value ``depth`` containers deep: arrays, objects, or the two in turn."""
    text = b"7"
    for level in range(depth):
        if kind == "array" or (kind == "mixed" and level % 2):
            text = b"[" + text + b"]"
        else:
            text = b'{"k":' + text + b"}"
    return text


def _refusal(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The oracle's object: a repeated key is a refusal."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("repeated key")
    return dict(pairs)


def _expected(data: bytes) -> Any:
    """What a read must give: orjson's error, a refusal (repeated key, too deep), or the value.

    The oracle: ``orjson.loads`` says whether the text is JSON; the standard
    library, which reports every pair as written, whether a key repeats;
    writing the value once whether it is too deep.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        return str(error)
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return "refused"
    try:
        json.loads(data, object_pairs_hook=_refusal)
    except ValueError:
        return "refused"
    return value


def _ours(data: bytes) -> Any:
    try:
        return read_text(data)
    except orjson.JSONDecodeError as error:
        return str(error)
    except JsonTextError:
        return "refused"


def _same(ours: Any, expected: Any) -> bool:
    """Equality without recursion (``==`` on a value 1024 levels deep exceeds Python's limit)."""
    pairs = [(ours, expected)]
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


# ----------------------------------------------------------------- depth


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
@pytest.mark.parametrize("depth", [0, 1, 253, 254, 255, 256, 1023, 1024, 1025])
def test_a_text_too_deep_to_write_is_refused_and_one_too_deep_to_read_is_not_json(
    kind: str, depth: int
) -> None:
    """At and around orjson's limits (writes 254 levels, reads 1024), for every container."""
    data = _nested(depth, kind)
    ours, expected = _ours(data), _expected(data)
    assert _same(ours, expected)
    assert (ours == "refused") is (WRITE_DEPTH < depth <= READ_DEPTH)


def test_the_limits_are_orjsons() -> None:
    """The depth the module assumes is the installed orjson's."""
    assert loads_writable(_nested(WRITE_DEPTH, "mixed"))[1]
    assert not loads_writable(_nested(WRITE_DEPTH + 1, "mixed"))[1]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(_nested(READ_DEPTH + 1, "mixed"))


def test_loads_writable_is_orjsons_value_and_whether_it_writes() -> None:
    """The reader of a file the store will not load, only compare: no refusal of its own."""
    assert loads_writable(b'{"a": 1, "a": 2}') == ({"a": 2}, True)
    assert loads_writable(b"[1, 2]") == ([1, 2], True)
    with pytest.raises(orjson.JSONDecodeError):
        loads_writable(b"[1,")


# ----------------------------------------------------------------- any text


@pytest.mark.parametrize(
    "data",
    [b"", b"  \n", b"]", b"][", b"1], [2", b"[1],[2]", b"1 2", b"{}]", b"[]][[]", b'"a"]'],
)
def test_text_that_is_not_json_is_refused_as_orjson_refuses_it(data: bytes) -> None:
    """Same message, with the offsets of the file itself."""
    expected = _expected(data)
    assert isinstance(expected, str)
    assert _ours(data) == expected


def test_whitespace_around_the_value_is_allowed_as_orjson_allows_it() -> None:
    """The file's value, whatever whitespace surrounds it."""
    assert read_text(b' \n\t[1, {"a": [true]}]\r\n ') == [1, {"a": [True]}]


@given(
    value=json_values(max_leaves=12),
    cuts=st.lists(st.tuples(st.integers(0, 200), st.sampled_from(b'[]{},:" 1a')), max_size=3),
    indent=st.booleans(),
)
def test_any_text_reads_as_orjson_reads_it_or_is_refused_for_a_repeated_key(
    value: Any, cuts: list[tuple[int, int]], indent: bool
) -> None:
    """Valid JSON, and JSON with brackets, commas, quotes and letters put in or taken out."""
    data = bytearray(orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0))
    for position, byte in cuts:
        at = position % (len(data) + 1)
        if byte == ord(" ") and at < len(data):
            del data[at]
        else:
            data.insert(at, byte)
    assert _same(_ours(bytes(data)), _expected(bytes(data)))


# ------------------------------------------------------------- a file


class _Handle(io.BytesIO):
    """A file that counts how it is read: whole, in parts, or again from its start."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.whole_reads = 0
        self.part_reads = 0
        self.seeks = 0

    def read(self, size: int | None = -1, /) -> bytes:
        if size is None or size < 0:
            self.whole_reads += 1
        else:
            self.part_reads += 1
        return super().read(size)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        self.seeks += 1
        return super().seek(offset, whence)


def _read(data: bytes) -> tuple[Any, _Handle]:
    handle = _Handle(data)
    try:
        return read_file(handle), handle
    except orjson.JSONDecodeError as error:
        return str(error), handle
    except JsonTextError:
        return "refused", handle


def _laid_out(entries: list[Any]) -> bytes:
    """``entries`` as JP writes a stream: a 2-space indent and a newline."""
    return orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n"


def test_a_stream_as_jp_lays_it_out_is_read_once_whole(tmp_path: Path) -> None:
    """One read of the whole file, never again from its start; its value is orjson's."""
    entries = own_events()
    data = _laid_out(entries)
    result, handle = _read(data)
    assert result == orjson.loads(data)
    assert (handle.whole_reads, handle.part_reads, handle.seeks) == (1, 0, 0)
    (tmp_path / "events.json").write_bytes(data)
    loaded = encode_stream(load_conversation(tmp_path).stream)
    assert [{k: v for k, v in entry.items() if k != "event_id"} for entry in loaded] == entries


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_are_read_once_as_orjson_reads_them(path: Path) -> None:
    """JP's own files are read in one read, and their value is orjson's."""
    data = (path / "events.json").read_bytes()
    result, handle = _read(data)
    assert result == orjson.loads(data)
    assert (handle.whole_reads, handle.part_reads, handle.seeks) == (1, 0, 0)


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_are_proven_by_writing_them_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JP's files are written as orjson writes them: the standard library never reads them."""

    def second_parse(*_: object, **__: object) -> None:
        raise AssertionError("a JP file was parsed a second time")

    monkeypatch.setattr(json, "loads", second_parse)
    for name in ("events.json", "metadata.json", "base_config.json"):
        if (path / name).is_file():
            with (path / name).open("rb") as handle:
                read_file(handle)


@given(
    entries=st.lists(
        st.dictionaries(st.sampled_from("abc"), json_values(max_leaves=6)), max_size=6
    ),
    cuts=st.lists(
        st.tuples(
            st.integers(0, 400),
            st.sampled_from(
                [b"[", b"]", b"{", b"}", b",", b'"', b" ", b"\n", b"\n  },\n  {", b'"a": 1, ']
            ),
        ),
        max_size=3,
    ),
)
def test_any_laid_out_file_reads_as_orjson_reads_it_or_is_refused(
    entries: list[dict[str, Any]], cuts: list[tuple[int, bytes]]
) -> None:
    """Any laid-out stream, mutated, reads as orjson reads the text: value, refusal or error.

    Brackets, commas, quotes, entry breaks and repeated keys are put in or
    taken out, and an error must be orjson's for the file, at its own offsets.
    """
    data = bytearray(_laid_out(entries))
    for position, text in cuts:
        at = position % (len(data) + 1)
        if text == b" " and at < len(data):
            del data[at]
        else:
            data[at:at] = text
    assert _same(_read(bytes(data))[0], _expected(bytes(data)))


@pytest.mark.parametrize("ending", [b"\n1\n", b"\n", b"\n]]\n", b"\n] 1\n", b"\n]\x0c", b"\n}\n"])
def test_a_laid_out_file_that_does_not_end_its_array_is_refused_as_orjson_refuses_it(
    ending: bytes,
) -> None:
    """A file that does not end at its array's own "]" is refused with orjson's error for it."""
    data = _laid_out(own_events()).removesuffix(b"\n]\n") + ending
    expected = _expected(data)
    assert isinstance(expected, str)
    assert _read(data)[0] == expected


def test_a_laid_out_file_broken_late_is_refused_at_its_own_offsets(
    tmp_path: Path,
) -> None:
    """The error is orjson's for the whole file, at the line where it breaks."""
    data = _laid_out(own_events()).replace(b'"type": "tool_call_response"', b'"type" "x"', 1)
    (tmp_path / "events.json").write_bytes(data)
    expected = _expected(data)
    assert isinstance(expected, str)
    assert not expected.endswith("line 1 column 1 (char 0)")
    assert _read(data)[0] == expected
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value).endswith(f"is not valid JSON: {expected}")


def test_a_file_that_is_not_json_is_refused_as_such_before_any_repeated_key(
    tmp_path: Path,
) -> None:
    """A repeated key early in the file, and a later entry not JSON: the file is not JSON."""
    events = own_events()
    data = _laid_out(events).replace(
        b'"reasoning": "hmm"', b'"reasoning": "a",\n    "reasoning": "b"'
    )
    data = data.replace(b'"type": "tool_call_response"', b'"type" "x"', 1)
    expected = _expected(data)
    assert isinstance(expected, str)
    assert _read(data)[0] == expected
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError, match="is not valid JSON"):
        load_conversation(tmp_path)


# ------------------------------------------------------------- too deep


def _with_deep_arguments(depth: int) -> bytes:
    """Our small conversation whose sixth entry's arguments make the file ``depth`` deep."""
    events = own_events()
    events[5]["arguments"]["deep"] = "\x00deep\x00"
    # The file's array, the entry and its arguments are three levels already.
    deep = b"[" * (depth - 3) + b"]" * (depth - 3)
    return _laid_out(events).replace(orjson.dumps("\x00deep\x00"), deep)


def test_a_file_exactly_as_deep_as_orjson_writes_loads_and_saves(tmp_path: Path) -> None:
    """254 levels, counting the file's array: the deepest value that can be saved."""
    data = _with_deep_arguments(254)
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation(tmp_path)
    save_conversation(conversation, tmp_path / "copy")
    saved = orjson.loads((tmp_path / "copy" / "events.json").read_bytes())
    assert saved[5]["arguments"]["deep"] == orjson.loads(data)[5]["arguments"]["deep"]


def test_a_file_one_level_deeper_is_refused_naming_the_entry(tmp_path: Path) -> None:
    """255 levels: refused at load, by entry, and the file left as it was."""
    data = _with_deep_arguments(255)
    assert _read(data)[0] == "refused"
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index == 5
    assert str(caught.value).endswith("entry is nested too deeply to be written back")
    assert (tmp_path / "events.json").read_bytes() == data


def test_a_broken_file_is_refused_at_its_own_offsets(tmp_path: Path) -> None:
    """The error a load reports is orjson's for the file."""
    data = b'[\n  {"type": "turn_start",\n   oops\n]\n'
    (tmp_path / "events.json").write_bytes(data)
    expected = _expected(data)
    assert isinstance(expected, str)
    assert "line 3" in expected
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert str(caught.value).endswith(f"is not valid JSON: {expected}")


# ------------------------------------------------------------- not UTF-8


def _where(data: bytes, offset: int) -> str:
    """How a position is said: line and column (characters) from 1, and the byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[data.rfind(b"\n", 0, offset) + 1 : offset].decode()) + 1
    return f"line {line} column {column} (byte offset {offset})"


def test_the_first_byte_not_utf8_is_placed_in_the_file() -> None:
    """Its line, its column in characters (wide ones before it) and its byte offset."""
    data = '[\n  "é€😀",\n  "x'.encode() + b"\xff" + b'"\n]\n'
    bad = data.index(b"\xff")
    expected = f"invalid UTF-8 (byte 0xff): {_where(data, bad)}"
    assert expected.endswith("line 3 column 5 (byte offset 21)")
    good = '[\n  "é€😀"\n]\n'.encode()
    cut_short = good + "€".encode()[:2]
    assert invalid_utf8(io.BytesIO(data)) == expected
    assert invalid_utf8(io.BytesIO(good)) is None
    assert invalid_utf8(io.BytesIO(cut_short)) == (
        f"invalid UTF-8 (byte 0xe2): {_where(cut_short, len(good))}"
    )


def test_a_byte_not_utf8_deep_in_a_long_file_is_refused_at_its_own_line(
    tmp_path: Path,
) -> None:
    """A long stream's load names the byte's line, column and offset, not char 0."""
    entries = [{"type": "chat_request", "content": f"{n} {'x' * 400}"} for n in range(2000)]
    data = _laid_out(entries).replace(b"1500 x", b"1500 \xe9", 1)
    offset = data.index(b"\xe9")
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
#: Stands in the tree for a piece of text, put into the file afterwards.
_NUMBER = "\x00number\x00"


def _with_text(entry: dict[str, Any], text: str, *, compact: bool = False) -> bytes:
    """A stream of a turn start and ``entry``, whose placeholder becomes ``text`` verbatim."""
    entries = [{"timestamp": _STAMP, "type": "turn_start"}, {"timestamp": _STAMP, **entry}]
    laid_out = orjson.dumps(entries) if compact else _laid_out(entries)
    return laid_out.replace(orjson.dumps(_NUMBER), text.encode())


def _refused(directory: Path, data: bytes) -> StreamFormatError:
    """The error a load of ``data`` as ``events.json`` raises; the file is left as it was."""
    (directory / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(directory)
    assert (directory / "events.json").read_bytes() == data
    return caught.value


def _question(default: Any) -> dict[str, Any]:
    return {"text": "Note?", "answer_type": {"type": "text"}, "default": default}


#: Every place a number can sit, as (entry, the key path the error names).
_PLACES = [
    pytest.param({"type": "future_kind", "ledger_id": _NUMBER}, "ledger_id", id="unknown-entry"),
    pytest.param(
        {"type": "future_kind", "totals": {"rows": [1, _NUMBER]}},
        "totals.rows[1]",
        id="unknown-entry-nested",
    ),
    pytest.param(
        {"type": "tool_call_request", "id": "c", "name": "n", "arguments": {"n": [_NUMBER]}},
        "arguments.n[0]",
        id="arguments",
    ),
    pytest.param(
        {"type": "chat_response", "message": "ok", "metadata": {"tokens": _NUMBER}},
        "metadata.tokens",
        id="metadata",
    ),
    pytest.param(
        {"type": "config_delta", "delta": {"seed": _NUMBER}}, "delta.seed", id="config-delta"
    ),
    pytest.param(
        {"type": "compaction", "from_turn": 0, "to_turn": 1, "reasoning": {"n": _NUMBER}},
        "reasoning.n",
        id="compaction",
    ),
    pytest.param(
        {"type": "chat_request", "content": "hi", "schema": {"maximum": _NUMBER}},
        "schema.maximum",
        id="chat-request-schema",
    ),
    pytest.param(
        {"type": "chat_request", "content": "hi", "added_by_a_newer_writer": _NUMBER},
        "added_by_a_newer_writer",
        id="newer-writers-key",
    ),
    pytest.param(
        {"type": "chat_response", "data": {"id": _NUMBER}}, "data.id", id="chat-response-data"
    ),
    pytest.param(
        {
            "type": "inquiry_request",
            "id": "c.q",
            "source": {"source": "user"},
            "question": _question(_NUMBER),
        },
        "question.default",
        id="question-default",
    ),
    pytest.param(
        {"type": "inquiry_response", "id": "c.q", "answer": _NUMBER}, "answer", id="answer"
    ),
    pytest.param(
        {"type": "inquiry_response", "outcome": "answered", "id": "c.q", "answer": [_NUMBER]},
        "answer[0]",
        id="answered-outcome",
    ),
]


#: Integers beyond 64 bits: the last one is as long as the float orjson writes for it
#: (``1.2345678901234568e+21``), so only the text, not its length, gives it away.
_WIDE = ["123456789012345678901234567890", "-9223372036854775809", "1234567890123456789012"]


@pytest.mark.parametrize("compact", [False, True], ids=["as JP writes", "laid out otherwise"])
@pytest.mark.parametrize("literal", _WIDE)
@pytest.mark.parametrize(("entry", "key"), _PLACES)
def test_an_integer_beyond_64_bits_is_refused_naming_the_entry_and_key(
    tmp_path: Path, entry: dict[str, Any], key: str, literal: str, compact: bool
) -> None:
    """Read as a float, it would be saved as one: the load is refused and nothing written."""
    error = _refused(tmp_path, _with_text(entry, literal, compact=compact))
    assert error.index == 1
    assert str(error) == (
        f"{tmp_path / 'events.json'}: entry 1: {entry['type']}: the value at {key!r} is an "
        "integer beyond 64 bits: it would be written back as a float, not as read"
    )
    assert literal not in str(error)


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
        f"{tmp_path / 'metadata.json'}: the value at 'stars[1]' is an integer beyond 64 bits: "
        "it would be written back as a float, not as read"
    )


@pytest.mark.parametrize("literal", ["1e20", "1.5e300", "-1e19", "12345678901234567890.0"])
@pytest.mark.parametrize(("entry", "key"), _PLACES)
def test_a_float_beyond_64_bits_written_as_a_float_loads_and_saves(
    tmp_path: Path, entry: dict[str, Any], key: str, literal: str
) -> None:
    """Only integers are refused: the same magnitude written as a float is a float, kept."""
    del key
    (tmp_path / "events.json").write_bytes(_with_text(entry, literal))
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
    data = _with_text(entry, literal)
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation(tmp_path)
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    assert f'"ledger_id": {literal},'.encode() in (tmp_path / "events.json").read_bytes()


# ------------------------------------------------------------- repeated keys

#: A value that must never be shown: a repeated key is named, its values are not.
_SECRET = "hunter2-do-not-echo"
#: Every place an object can repeat a key, as (entry, the text the file holds
#: there, the place the error names).
_REPEATS = [
    pytest.param(
        {"type": "chat_request", "content": _NUMBER},
        f'"{_SECRET}",\n    "content": "again"',
        "the entry repeats the key 'content'",
        id="entry",
    ),
    pytest.param(
        {"type": "tool_call_request", "id": "c", "name": "n", "arguments": {"path": _NUMBER}},
        f'"{_SECRET}",\n      "path": "b.txt"',
        "the value at 'arguments' repeats the key 'path'",
        id="arguments",
    ),
    pytest.param(
        {"type": "chat_response", "message": "ok", "metadata": {"a": {"b": [{"c": _NUMBER}]}}},
        f'"{_SECRET}", "c": 2',
        "the value at 'metadata.a.b[0]' repeats the key 'c'",
        id="metadata-nested",
    ),
    pytest.param(
        {"type": "config_delta", "delta": {"model": _NUMBER}},
        f'"{_SECRET}",\n      "model": "other"',
        "the value at 'delta' repeats the key 'model'",
        id="config-delta",
    ),
    pytest.param(
        {"type": "future_kind", "body": {"x": _NUMBER}},
        f'"{_SECRET}", "\\u0078": 1',
        "the value at 'body' repeats the key 'x'",
        id="unknown-entry-escaped-key",
    ),
    pytest.param(
        {"type": "inquiry_response", "id": "c.q", "answer": _NUMBER},
        f'"{_SECRET}",\n    "answer": "no"',
        "the entry repeats the key 'answer'",
        id="answer",
    ),
]


@pytest.mark.parametrize("compact", [False, True], ids=["as JP writes", "laid out otherwise"])
@pytest.mark.parametrize(("entry", "text", "problem"), _REPEATS)
def test_a_repeated_key_is_refused_naming_the_entry_and_key_never_a_value(
    tmp_path: Path, entry: dict[str, Any], text: str, problem: str, compact: bool
) -> None:
    """Rather than drop all but a repeated key's last value at the next save, the load refuses."""
    error = _refused(tmp_path, _with_text(entry, text, compact=compact))
    assert error.index == 1
    assert str(error) == (
        f"{tmp_path / 'events.json'}: entry 1: {entry['type']}: {problem}: "
        "a save would keep only its last value"
    )
    assert _SECRET not in str(error)


@pytest.mark.parametrize("name", ["metadata.json", "base_config.json"])
def test_a_repeated_key_in_the_other_files_is_refused_naming_the_file_and_key(
    tmp_path: Path, name: str
) -> None:
    """metadata.json and base_config.json are written back too: refused the same way."""
    (tmp_path / "events.json").write_bytes(_laid_out([]))
    data = f'{{\n  "title": "{_SECRET}",\n  "nested": {{"title": 1}},\n  "title": "x"\n}}\n'
    (tmp_path / name).write_bytes(data.encode())
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert caught.value.index is None
    assert str(caught.value) == (
        f"{tmp_path / name}: the object repeats the key 'title': "
        "a save would keep only its last value"
    )
    assert _SECRET not in str(caught.value)


@pytest.mark.parametrize(
    ("inserted", "problem"),
    [
        (b'"author": "a",\n    "author": "b",\n    ', "the entry repeats the key 'author'"),
        (b'"n": 1234567890123456789012,\n    ', "the value at 'n' is an integer beyond 64 bits"),
    ],
    ids=["repeated key", "wide integer as long as its float"],
)
def test_a_problem_deep_in_a_long_file_is_found_and_named_by_its_entry(
    tmp_path: Path, inserted: bytes, problem: str
) -> None:
    """Every entry of a long stream is checked, and the one at fault named by its index."""
    entries = [{"type": "chat_request", "content": f"{n} {'x' * 400}"} for n in range(2000)]
    data = _laid_out(entries).replace(b'"content": "1500 x', inserted + b'"content": "1500 x', 1)
    error = _refused(tmp_path, data)
    assert error.index == 1500
    assert f"entry 1500: chat_request: {problem}" in str(error)


def test_the_first_problem_in_the_file_is_the_one_named(tmp_path: Path) -> None:
    """A repeated key, then an integer beyond 64 bits: the repeated key, which comes first."""
    entries = [{"type": "future_kind", "a": _NUMBER}, {"type": "future_kind", "b": _NUMBER}]
    data = _laid_out(entries)
    data = data.replace(orjson.dumps(_NUMBER), b'1, "a": 2', 1)
    data = data.replace(orjson.dumps(_NUMBER), b"99999999999999999999", 1)
    error = _refused(tmp_path, data)
    assert error.index == 0
    assert "repeats the key 'a'" in str(error)


def test_the_same_key_in_different_objects_is_no_repeat(tmp_path: Path) -> None:
    """A key repeats only within one object: the same name elsewhere loads and saves."""
    entry = {
        "timestamp": _STAMP,
        "type": "future_kind",
        "id": 1,
        "inner": {"id": 2, "list": [{"id": 3}, {"id": 4}]},
    }
    data = orjson.dumps([entry])  # laid out otherwise: the exact check reads it
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation(tmp_path)
    save_conversation(conversation, tmp_path / "copy")
    saved = orjson.loads((tmp_path / "copy" / "events.json").read_bytes())
    assert saved[0]["inner"] == entry["inner"]
