"""Parsing a JSON file and learning, in the same pass, whether it can be written back.

``orjson`` reads values nested up to 1024 levels but writes only 254, and a
file the store loads must be one it can save. Writing the parsed value once
to find out costs 4% of a load's instructions. Instead the text is parsed in
770 (1024 - 254) more levels of arrays: it parses only if its own nesting is
at most 254, so a successful parse is the proof.

The wrapped text is read as the file only when each wrapping array turns out
to hold exactly one value: then the file is that value with nothing around it
but whitespace, so the two parses agree. (A file that is not JSON, such as
``1], [2``, can be once wrapped; it fails this test.) Anything else (a file too
deep for the wrapping, or not JSON) is parsed again as it is, which raises the
error for the file's own offsets, or leaves the value to be written once to
check it. The limits are those of the ``orjson`` installed, checked on first
use; where they are not the ones above, every file takes that second path.

The wrapping has a price of its own, whatever the text: ``orjson`` builds 770
arrays and each is looked at, about 70 microseconds. A text shorter than
:data:`WRAP_FROM` (a ``metadata.json``, a short conversation) is parsed as it
is and written once instead, which costs it less; a longer one, and each
piece of a long stream, is wrapped.

``orjson`` also reads an integer beyond 64 bits (below ``-2**63`` or above
``2**64 - 1``) as the nearest float, and would write it back as that float:
``123456789012345678901234567890`` becomes ``1.2345678901234568e+29``. The
parsed value cannot tell such an integer from a float written as one
(``1e20``), and looking at every value of every load for one would cost a
load a fifth of its time (scanning its text for long runs of digits, several
percent). So the readers note a float that large where they look at values
anyway (:func:`note_wide_floats`): every leaf of the storage fields
(arguments, metadata), the free-form values of the records (a chat
request's schema, a response's data, an answer, a question's default), and
global and unknown entries whole, which are few. Only a file where one was
noted is read again by the standard library, which keeps integers whole, to
find the integer it was (:func:`integer_beyond_64_bits`). Not looked at: a key
a newer writer added to an entry of a kind this build knows, which is kept
and written back but read by no reader.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "READ_BLOCK",
    "READ_DEPTH",
    "WRAP_FROM",
    "WRITE_DEPTH",
    "WideFloats",
    "holds_wide_float",
    "integer_beyond_64_bits",
    "invalid_utf8",
    "is_wide_float",
    "loads_wrapped",
    "loads_writable",
    "note_wide_floats",
    "read_file",
    "watch_wide_floats",
    "wrap",
    "writable",
]

#: How deeply nested a value ``orjson`` reads (arrays and objects alike).
READ_DEPTH = 1024
#: How deeply nested a value ``orjson`` writes.
WRITE_DEPTH = 254
#: The length from which a text is parsed wrapped. Below it, writing the value
#: once costs less than the wrapping (they cost the same near 400 KB).
WRAP_FROM = 1 << 18


def writable(value: Any) -> bool:
    """Whether ``orjson`` can write ``value``.

    Of what ``orjson`` reads, only values nested too deeply cannot be written.
    """
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@functools.cache
def _wrapping() -> tuple[bytes, bytes]:
    """The text around a file that proves it writable by parsing; empty when the limits differ."""
    try:
        orjson.loads(_nested(READ_DEPTH))
    except orjson.JSONDecodeError:
        return b"", b""
    try:
        orjson.loads(_nested(READ_DEPTH + 1))
    except orjson.JSONDecodeError:
        value: list[Any] = []
        for _ in range(WRITE_DEPTH - 1):
            value = [value]
        if writable(value) and not writable([value]):
            levels = READ_DEPTH - WRITE_DEPTH
            return b"[" * levels, b"]" * levels
    return b"", b""


def wrap(*parts: bytes | bytearray | memoryview) -> bytes:
    """``parts``, one after the other, as :func:`loads_wrapped` parses them.

    Inside the wrapping levels when they are :data:`WRAP_FROM` bytes or
    longer, as they are when shorter. A caller holding a large file drops its
    own copy once this returns, so that the text is not held twice while it
    parses.
    """
    opening, closing = _wrapping()
    if opening and sum(len(part) for part in parts) >= WRAP_FROM:
        return b"".join((opening, *parts, closing))
    if len(parts) == 1 and isinstance(parts[0], bytes):
        return parts[0]  # already the text to parse: no copy
    return b"".join(parts)


def loads_wrapped(text: bytes) -> tuple[Any, bool]:
    """The value of the text :func:`wrap` gave, and whether ``orjson`` can write it back.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads`` of the parts
    themselves does. A text of :data:`WRAP_FROM` bytes or more is wrapped:
    :func:`wrap` wraps exactly the parts that long, and wrapping only adds.
    """
    opening, closing = _wrapping()
    if not opening or len(text) < WRAP_FROM:
        value = orjson.loads(text)
        return value, writable(value)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # too deep to write, or not JSON: the text alone says which
    else:
        for _ in opening:
            if type(value) is not list or len(value) != 1:
                break
            value = value[0]
        else:
            return value, True
    value = orjson.loads(text[len(opening) : len(text) - len(closing)])
    return value, writable(value)


def loads_writable(data: bytes) -> tuple[Any, bool]:
    """``orjson.loads(data)``, and whether ``orjson`` can write the value back.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads(data)`` does.
    """
    return loads_wrapped(wrap(data))


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


def read_file(handle: BinaryIO, *, block: int = READ_BLOCK) -> tuple[Any, bool]:
    """The value of the JSON file ``handle`` reads from its start, and whether it can be written.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads`` of the whole
    file does, at the file's own offsets.

    A file laid out as JP writes an array is read ``block`` bytes at a time
    and parsed in pieces of whole entries: the file's text is never held
    whole, nor ``orjson``'s working copy of all of it (at a million entries
    that is half a gigabyte of text, and more in ``orjson``). The pieces are
    cut at entry breaks, each one's comma dropped; when every piece is an
    array's items, the file is those items with the commas between them, so
    their values, in order, are the file's. Should a piece not parse (a file
    laid out otherwise that happens to hold the break, or one that is not
    valid), or be too deep to write, the whole file is read again and parsed
    as it is, which gives the error, or the value, for the file as a whole.
    """
    first = handle.read(block)
    if len(first) < block or not first.startswith(_ARRAY_START):
        # A file read in one block is parsed at once; one laid out otherwise, as it is.
        return loads_wrapped(wrap(first, handle.read()))
    items: list[Any] = []
    pending = bytearray(first)
    del pending[:1]  # the array's "["
    chunk, cut_before = first, False
    while chunk:
        # Only the new bytes (and a break begun just before them) can hold a new break.
        cut = pending.rfind(_ENTRY_BREAK, max(0, len(pending) - len(chunk) - len(_ENTRY_BREAK)))
        if cut >= 0:
            cut += _BREAK_COMMA
            if not _parsed_into(items, pending, cut):
                return _whole(handle)
            del pending[: cut + 1]
            cut_before = True
        chunk = handle.read(block)
        pending += chunk
    if not cut_before:
        return loads_wrapped(wrap(b"[", pending))  # the file in one piece, as it is
    end = len(pending.rstrip(_JSON_SPACE)) - 1
    if end < 0 or pending[end] != ord("]") or not _parsed_into(items, pending, end):
        return _whole(handle)
    return items, True


def _parsed_into(items: list[Any], pending: bytearray, end: int) -> bool:
    """Add the items of ``pending[:end]`` to ``items``: ``False`` unless they parse, writable."""
    with memoryview(pending) as view:
        text = wrap(b"[", view[:end], b"]")
    try:
        value, can_write = loads_wrapped(text)
    except orjson.JSONDecodeError:
        return False
    if can_write:
        items.extend(value)
    return can_write


def _whole(handle: BinaryIO) -> tuple[Any, bool]:
    handle.seek(0)
    return loads_wrapped(wrap(handle.read()))


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


# ------------------------------------------------------- integers beyond 64 bits

#: The integers ``orjson`` reads exactly: from ``-2**63`` to ``2**64 - 1``.
_SMALLEST_READ = -(2**63)
_LARGEST_READ = 2**64 - 1
#: The same bounds as floats (both are powers of two, so exact).
_FLOAT_FLOOR = float(_SMALLEST_READ)
_FLOAT_CEILING = float(_LARGEST_READ + 1)


def is_wide_float(value: float) -> bool:
    """Whether ``value`` is a float ``orjson`` could have read from an integer beyond 64 bits.

    Every float that large is a whole number; a float in range came from a
    float literal, as ``orjson`` reads every integer in range as an integer.
    The floor itself counts: ``-2**63 - 1`` reads as the float ``-2.0**63``.
    """
    return not _FLOAT_FLOOR < value < _FLOAT_CEILING


def holds_wide_float(value: Any) -> bool:
    """Whether ``value``, a parsed JSON value, holds a float :func:`is_wide_float` names."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if is_wide_float(item):
                return True
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


class WideFloats:
    """Whether a reader met a float :func:`is_wide_float` names, while it was watched."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False


_watching: contextvars.ContextVar[WideFloats | None] = contextvars.ContextVar(
    "watching_wide_floats", default=None
)


@contextlib.contextmanager
def watch_wide_floats() -> Iterator[WideFloats]:
    """Note, while in the block, whether :func:`note_wide_floats` was called."""
    sightings = WideFloats()
    token = _watching.set(sightings)
    try:
        yield sightings
    finally:
        _watching.reset(token)


def note_wide_floats() -> None:
    """Tell the watcher, if any, that a value read holds a float beyond 64 bits.

    Called by a reader only when it meets one: the rare path.
    """
    sightings = _watching.get()
    if sightings is not None:
        sightings.seen = True


def integer_beyond_64_bits(data: bytes) -> tuple[int | None, str] | None:
    """Where the JSON text ``data`` holds an integer ``orjson`` cannot read exactly, if anywhere.

    The entry's index when the text is an array of entries (``None`` when it is
    not, or the integer is not inside one), and the key path to the integer,
    dotted with ``[index]`` for array items (``""`` for the value itself).
    ``None`` when every integer fits in 64 bits. The standard library reads
    integers whole; this is the slow path, for a text where a reader noted a
    float that large (it may have been written as a float).
    """
    value = json.loads(data)
    if type(value) is list:
        for index, entry in enumerate(value):
            path = _integer_beyond_64_bits(entry)
            if path is not None:
                return index, path
        return None
    path = _integer_beyond_64_bits(value)
    return None if path is None else (None, path)


def _integer_beyond_64_bits(value: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind is int:
            if not _SMALLEST_READ <= item <= _LARGEST_READ:
                return path
        elif kind is dict:
            # Reversed, so that the first key in the text is looked at first.
            stack.extend(
                (child, f"{path}.{key}" if path else key) for key, child in reversed(item.items())
            )
        elif kind is list:
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None
