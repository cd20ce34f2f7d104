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
from typing import Any

import orjson

__all__ = ["READ_DEPTH", "WRITE_DEPTH", "loads_wrapped", "loads_writable", "wrap", "writable"]

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


def wrap(data: bytes) -> bytes:
    """``data`` inside the wrapping levels, for :func:`loads_wrapped`.

    A caller holding a large file drops its own copy once this returns, so
    that the text is not held twice while it parses.
    """
    opening, closing = _wrapping()
    return b"".join((opening, data, closing)) if opening else data


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
