"""Reading a JSON file, and refusing in the same pass what a save would not write back as read.

A conversation file is read to be written back, and ``orjson``, which reads
and writes it, parses three things it could not write back as the file holds
them: a value nested deeper than it writes (it reads 1024 levels, writes
254), an integer beyond 64 bits (read as the nearest float, and written back
as that float: ``123456789012345678901234567890`` becomes
``1.2345678901234568e+29``), and an object that repeats a key (the last value
is kept, the others silently dropped). A file holding any of these is
refused at load (:class:`JsonTextError`, naming the entry and the key, never
a value), rather than changed by the next save.

Theory of operation. Every text parsed is written once again by ``orjson``,
as JP writes a file (a 2-space indent): that the writing succeeds proves the
value is not nested too deeply, and when what it writes is the very text that
was read, the text holds no repeated key and no integer beyond 64 bits either
(the value written has each key once, and writes such a number as a float,
never as the digits read). Every file JP writes, and every file this library
writes, passes this test: ``orjson.dumps(value, option=OPT_INDENT_2)`` is how
they are written. The writing costs less than the parse, and the comparison a
``memcmp``. Only a text laid out otherwise (written by hand, or by another
tool) is read again, by the standard library, which reports each object's
pairs as written and keeps integers whole: that exact check finds the first
repeated key or wide integer, if any, at several times the cost of the parse.

A file laid out as JP writes an array is read a block at a time and parsed
in pieces of whole entries (:func:`read_file`), each piece checked as it is
parsed: the file's text is never held whole. A problem found in a piece is
raised once the whole file has parsed, so that a file that is not JSON at
all is refused as such.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import orjson

from machines._json import JsonFault, json_fault, json_path, leaf_rules

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "READ_BLOCK",
    "WRITE_DEPTH",
    "JsonTextError",
    "invalid_utf8",
    "loads_writable",
    "read_file",
    "read_text",
    "unwritable_entry",
    "writable",
]

#: How deeply nested a value ``orjson`` writes.
WRITE_DEPTH = 254

#: How JP writes a file, and so how a text read is written again to compare.
_LAYOUT = orjson.OPT_INDENT_2


class JsonTextError(ValueError):
    """A JSON text holds what a save would not write back as read.

    ``index`` is the entry at fault when the text is an array of entries
    (``None`` otherwise); ``problem`` says what and where, never a value.
    """

    def __init__(self, index: int | None, problem: str) -> None:
        """Remember where and what."""
        self.index = index
        self.problem = problem
        super().__init__(problem if index is None else f"entry {index}: {problem}")


def writable(value: Any) -> bool:
    """Whether ``orjson`` can write ``value``.

    Of what ``orjson`` reads, only values nested too deeply cannot be written.
    """
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def loads_writable(data: bytes) -> tuple[Any, bool]:
    """``orjson.loads(data)``, and whether ``orjson`` can write the value back.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads(data)`` does.
    """
    value = orjson.loads(data)
    return value, writable(value)


# ------------------------------------------------------------ the check


class _Repeated(dict[str, Any]):
    """An object that repeated a key in the text: its last value for each key, as parsed."""

    __slots__ = ("key",)

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key


#: The integers ``orjson`` reads exactly: from ``-2**63`` to ``2**64 - 1``.
_SMALLEST_READ = -(2**63)
_LARGEST_READ = 2**64 - 1


class _ExactRead:
    """The standard library's parse of a text, noting whether it met a problem at all.

    Its objects are the parser's, but for one that repeats a key, which is a
    :class:`_Repeated`; its integers are the parser's (whole). Only a text
    where a problem was met is walked, to say the first and where it is.
    """

    __slots__ = ("met",)

    def __init__(self) -> None:
        self.met = False

    def object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        self.met = True
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Repeated(pairs, key)
            seen.add(key)
        return value  # not reached: a shorter dict means a key came twice

    def integer(self, digits: str) -> int:
        value = int(digits)
        if not _SMALLEST_READ <= value <= _LARGEST_READ:
            self.met = True
        return value

    def problem(self, text: bytes | bytearray, first: int | None) -> JsonTextError | None:
        """The first problem of ``text``, if it has one (see :func:`_first_problem`)."""
        value = json.loads(text, object_pairs_hook=self.object, parse_int=self.integer)
        return _first_problem(value, first) if self.met else None


def _integer(value: int) -> str | None:
    if _SMALLEST_READ <= value <= _LARGEST_READ:
        return None
    return "is an integer beyond 64 bits: it would be written back as a float, not as read"


def _repeated(value: _Repeated) -> str | None:
    return f"repeats the key {value.key!r}: a save would keep only its last value"


def _sound(_value: object) -> None:
    return None


#: What the exact check looks for in a value the standard library parsed.
_TEXT_RULES: Final = leaf_rules({int: _integer, _Repeated: _repeated}, others=_sound)


def _checked(
    value: Any, text: bytes | bytearray, first: int | None, end: int
) -> JsonTextError | None:
    """What in ``value``, parsed from ``text[:end]``, a save would not write back as read.

    ``first`` is the index of the first entry when ``value`` is a piece of
    an array of entries (``None`` when it is a file's whole value); ``text``
    holds at least ``end`` bytes, and what follows is the file's.
    """
    try:
        written = orjson.dumps(value, option=_LAYOUT)
    except orjson.JSONEncodeError:
        return _too_deep(value, first)
    if _as_written(text, end, written):
        return None
    return _ExactRead().problem(text[:end], first)


def _as_written(text: bytes | bytearray, end: int, written: bytes) -> bool:
    """Whether ``text[:end]`` is ``written``, but maybe for the newline before its last ``]``.

    A piece of a file is an array of some of its entries, cut out of the
    file's array: JP writes a newline before the file's ``]``, not before the
    comma the piece's ``]`` stands for.
    """
    if len(written) == end:
        return text.startswith(written)
    return (
        len(written) == end + 1
        and written.endswith(b"\n]")
        and text[end - 1] == ord("]")
        and text.startswith(memoryview(written)[:-2])
    )


def unwritable_entry(value: Any) -> int | None:
    """The index of the first entry ``orjson`` cannot write, when ``value`` is an array."""
    if type(value) is not list:
        return None
    return next((i for i, entry in enumerate(value) if not writable([entry])), None)


def _too_deep(value: Any, first: int | None) -> JsonTextError:
    problem = "is nested too deeply to be written back"
    index = None if first is None else unwritable_entry(value)
    if first is None or index is None:
        return JsonTextError(None, problem)
    return JsonTextError(first + index, f"entry {problem}")


def _first_problem(value: Any, first: int | None) -> JsonTextError | None:
    """The first repeated key or wide integer in ``value``, as the exact check parsed it."""
    if first is None or type(value) is not list:
        fault = json_fault(value, _TEXT_RULES)
        return None if fault is None else JsonTextError(None, _said(fault, "the object"))
    for index, entry in enumerate(value):
        fault = json_fault(entry, _TEXT_RULES)
        if fault is not None:
            kind = entry.get("type") if isinstance(entry, dict) else None
            problem = _said(fault, "the entry")
            return JsonTextError(
                first + index, problem if type(kind) is not str else f"{kind}: {problem}"
            )
    return None


def _said(fault: JsonFault, top: str) -> str:
    """``fault`` in a sentence; ``top`` names the value itself ("the entry")."""
    where = f"the value at {json_path(fault.path)!r}" if fault.path else top
    return f"{where} {fault.problem}"


# ------------------------------------------------------------ reading


def read_text(text: bytes | bytearray) -> Any:
    """The value of the JSON text ``text``: ``orjson.loads`` of it, checked.

    Raises ``orjson.JSONDecodeError`` as ``orjson.loads`` does, and
    :class:`JsonTextError` for what a save would not write back as read (by
    entry, when the text is an array).
    """
    value = orjson.loads(text)
    end = _end_of_value(text)
    problem = _checked(value, text, 0 if type(value) is list else None, end)
    if problem is not None:
        raise problem
    return value


#: How much of a file :func:`read_file` reads at a time.
READ_BLOCK = 1 << 19
#: How JP's files (an array written with a 2-space indent) start, and go from
#: one entry to the next: nowhere else in such a file, since a string holds
#: no raw newline and everything inside an entry is indented further.
_ARRAY_START = b"[\n  {"
_ENTRY_BREAK = b"\n  },\n  {"
_BREAK_COMMA = len(b"\n  }")  # the comma's offset in _ENTRY_BREAK
#: The whitespace JSON allows after the value (``bytes.rstrip`` would take more).
_JSON_SPACE = b" \t\n\r"
_OPEN, _CLOSE = ord("["), ord("]")


def read_file(handle: BinaryIO, *, block: int = READ_BLOCK) -> Any:
    """The value of the JSON file ``handle`` reads from its start, checked as :func:`read_text`.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads`` of the whole
    file does, at the file's own offsets, and :class:`JsonTextError` for a
    file that parses but would not be written back as read.

    A file laid out as JP writes an array is read ``block`` bytes at a time
    and parsed in pieces of whole entries: the file's text is never held
    whole, nor ``orjson``'s working copy of all of it (at a million entries
    that is half a gigabyte of text, and more in ``orjson``). The pieces are
    cut at entry breaks, in place: the comma of the break becomes the
    piece's ``]``, and the byte before the next piece its ``[``. When every
    piece is an array's items, the file is those items with the commas
    between them, so their values, in order, are the file's. Should a piece
    not parse (a file laid out otherwise that happens to hold the break, or
    one that is not valid), the whole file is read again and parsed as it
    is, which gives the error, or the value, for the file as a whole.
    """
    first = handle.read(block)
    if len(first) < block or not first.startswith(_ARRAY_START):
        # A file read in one block is parsed at once; one laid out otherwise, as it is.
        return read_text(first + handle.read())
    items: list[Any] = []
    problems: list[JsonTextError] = []  # the first one found, once found
    pending = bytearray(first)  # from the "[" of the piece being read
    chunk, cut_before = first, False
    while chunk:
        # Only the new bytes (and a break begun just before them) can hold a new break.
        cut = pending.rfind(_ENTRY_BREAK, max(0, len(pending) - len(chunk) - len(_ENTRY_BREAK)))
        if cut > 0:
            cut += _BREAK_COMMA
            pending[cut] = _CLOSE
            if not _piece(items, pending, cut + 1, problems):
                return _whole(handle)
            del pending[:cut]
            pending[0] = _OPEN
            cut_before = True
        chunk = handle.read(block)
        pending += chunk
    if not cut_before:
        return read_text(pending)  # the file in one piece, as it is
    end = _end_of_value(pending)
    if not end or pending[end - 1] != _CLOSE:
        return _whole(handle)
    if not _piece(items, pending, end, problems):
        return _whole(handle)
    if problems:
        raise problems[0]
    return items


def _piece(items: list[Any], pending: bytearray, end: int, problems: list[JsonTextError]) -> bool:
    """Add the entries of the piece ``pending[:end]`` (an array) to ``items``; whether it parsed.

    Until one is found, the piece's problem is added to ``problems``: the
    first one is the file's, and later pieces need not be checked.
    """
    with memoryview(pending) as view, view[:end] as text:
        try:
            value: Sequence[Any] = orjson.loads(text)
        except orjson.JSONDecodeError:
            return False
    first = len(items)
    items.extend(value)
    if not problems:
        problem = _checked(value, pending, first, end)
        if problem is not None:
            problems.append(problem)
    return True


def _end_of_value(text: bytes | bytearray) -> int:
    """Where the value of ``text`` ends: before the whitespace JSON allows after it.

    Counted from the end, without the copy ``rstrip`` makes.
    """
    end = len(text)
    while end and text[end - 1] in _JSON_SPACE:
        end -= 1
    return end


def _whole(handle: BinaryIO) -> Any:
    handle.seek(0)
    return read_text(handle.read())


def invalid_utf8(handle: BinaryIO, *, block: int = READ_BLOCK) -> str | None:
    """Where the text ``handle`` reads from its start stops being UTF-8; ``None`` if it never does.

    ``orjson`` checks that a text is UTF-8 before it parses any of it, and
    puts a failure at the text's start ("line 1 column 1 (char 0)") wherever
    the bad byte is. A reader told that must be told where it is: the first
    byte that is not UTF-8 is found here, ``block`` bytes at a time (a file is
    never held whole), and said as ``orjson`` says a position: the line, the
    column in characters, both from 1, and the byte's offset in the file.
    """
    handle.seek(0)
    offset = 0  # of the first byte not yet decoded
    line, column = 1, 1
    carried = b""
    while True:
        chunk = handle.read(block)
        data = carried + chunk
        bad: UnicodeDecodeError | None = None
        try:
            text = data.decode("utf-8")
            decoded = len(data)
        except UnicodeDecodeError as error:
            decoded = error.start
            text = data[:decoded].decode("utf-8")
            # A character the block's end cut in two is decoded with the next block.
            if not (chunk and error.end == len(data) and error.reason == "unexpected end of data"):
                bad = error
        newlines = text.count("\n")
        if newlines:
            line += newlines
            column = len(text) - text.rfind("\n")
        else:
            column += len(text)
        if bad is not None:
            byte = data[bad.start]
            return (
                f"invalid UTF-8 (byte 0x{byte:02x}): line {line} column {column} "
                f"(byte offset {offset + decoded})"
            )
        offset += decoded
        carried = data[decoded:]
        if not chunk:
            return None
