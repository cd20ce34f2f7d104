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

A file is read whole and parsed at once (:func:`read_file`): the store has
refused, before reading a byte, anything but a regular file within its size
limit (:mod:`coordinator.store._files`), and the largest real conversation
is 1.6 MB. A text that is not JSON at all is refused as such, before any
check.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Final

import orjson

from machines import WRITE_DEPTH, JsonFault, json_fault, json_path, leaf_rules

__all__ = [
    "WRITE_DEPTH",
    "JsonTextError",
    "invalid_utf8",
    "loads_writable",
    "read_file",
    "read_text",
    "unwritable_entry",
    "writable",
]

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

    def problem(self, text: bytes, first: int | None) -> JsonTextError | None:
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


def _checked(value: Any, text: bytes, end: int) -> JsonTextError | None:
    """What in ``value``, parsed from ``text[:end]``, a save would not write back as read.

    What follows ``end`` is the whitespace JSON allows after a value.
    """
    first = 0 if type(value) is list else None  # an array is said by entry
    try:
        written = orjson.dumps(value, option=_LAYOUT)
    except orjson.JSONEncodeError:
        return _too_deep(value, first)
    if len(written) == end and text.startswith(written):
        return None
    return _ExactRead().problem(text[:end], first)


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


def read_text(text: bytes) -> Any:
    """The value of the JSON text ``text``: ``orjson.loads`` of it, checked.

    Raises ``orjson.JSONDecodeError`` as ``orjson.loads`` does, and
    :class:`JsonTextError` for what a save would not write back as read (by
    entry, when the text is an array).
    """
    value = orjson.loads(text)
    problem = _checked(value, text, len(text.rstrip(_JSON_SPACE)))
    if problem is not None:
        raise problem
    return value


#: The whitespace JSON allows after the value (``bytes.rstrip()`` would take more).
_JSON_SPACE = b" \t\n\r"


def read_file(handle: BinaryIO) -> Any:
    """The value of the JSON file ``handle`` reads from its start, checked as :func:`read_text`.

    The file is read whole: the caller has opened it as the store opens a
    file, within its size limit (see the module's docstring). Raises
    ``orjson.JSONDecodeError`` as ``orjson.loads`` of the file does, and
    :class:`JsonTextError` for a file that parses but would not be written
    back as read.
    """
    return read_text(handle.read())


def invalid_utf8(handle: BinaryIO) -> str | None:
    """Where the text ``handle`` reads from its start stops being UTF-8; ``None`` if it never does.

    ``orjson`` checks that a text is UTF-8 before it parses any of it, and
    puts a failure at the text's start ("line 1 column 1 (char 0)") wherever
    the bad byte is. A reader told that must be told where it is: the first
    byte that is not UTF-8, said as ``orjson`` says a position: the line, the
    column in characters, both from 1, and the byte's offset in the file.
    """
    handle.seek(0)
    data = handle.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start].decode("utf-8")
        line = before.count("\n") + 1
        column = len(before) - before.rfind("\n")
        return (
            f"invalid UTF-8 (byte 0x{data[error.start]:02x}): line {line} column {column} "
            f"(byte offset {error.start})"
        )
    return None
