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
"""

from __future__ import annotations

import functools
from typing import Any, BinaryIO

import orjson

__all__ = [
    "READ_BLOCK",
    "READ_DEPTH",
    "WRITE_DEPTH",
    "invalid_utf8",
    "loads_wrapped",
    "loads_writable",
    "read_file",
    "wrap",
    "writable",
]

#: How deeply nested a value ``orjson`` reads (arrays and objects alike).
READ_DEPTH = 1024
#: How deeply nested a value ``orjson`` writes.
WRITE_DEPTH = 254


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
    """``parts``, one after the other, inside the wrapping levels, for :func:`loads_wrapped`.

    A caller holding a large file drops its own copy once this returns, so
    that the text is not held twice while it parses.
    """
    opening, closing = _wrapping()
    if opening:
        return b"".join((opening, *parts, closing))
    if len(parts) == 1 and isinstance(parts[0], bytes):
        return parts[0]  # already the text to parse: no copy
    return b"".join(parts)


def loads_wrapped(wrapped: bytes) -> tuple[Any, bool]:
    """The value of the text :func:`wrap` wrapped, and whether ``orjson`` can write it back.

    Raises ``orjson.JSONDecodeError`` exactly as ``orjson.loads`` of the text
    itself does.
    """
    opening, closing = _wrapping()
    if not opening:
        value = orjson.loads(wrapped)
        return value, writable(value)
    try:
        value = orjson.loads(wrapped)
    except orjson.JSONDecodeError:
        pass  # too deep to write, or not JSON: the text alone says which
    else:
        for _ in opening:
            if type(value) is not list or len(value) != 1:
                break
            value = value[0]
        else:
            return value, True
    value = orjson.loads(wrapped[len(opening) : len(wrapped) - len(closing)])
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
