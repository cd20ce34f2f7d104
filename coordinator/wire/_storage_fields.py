"""The base64 storage fields.

To keep conversation text out of grep and editor search, JP stores some fields
base64-encoded: every string leaf of ``metadata`` (all kinds), every string
leaf of ``tool_call_request.arguments``, and ``tool_call_response.content``.

Decoding is lenient, as JP's is: a value that is not base64 of UTF-8 text is
kept as it is. We are stricter in one way, for fidelity: only *canonical*
base64 (the exact text our encoder would produce) counts as encoded. A
non-canonical string cannot have come from an encoder, so it must be a plain
value, and reading it as plain means it is written back unchanged.
"""

from __future__ import annotations

import binascii
from typing import Any

from machines import WRITE_DEPTH

__all__ = ["decode_field", "decode_leaves", "encode_field", "encode_leaves"]

#: Each base64 character's value; padding counts as a value whose low bits are
#: set, so a third "=" from the end reads as bits the padding leaves unused.
_B64_INDEX = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
} | {"=": 0x3F}


def decode_field(text: str) -> str:
    """Decode one stored string, or return it unchanged if it is not encoded."""
    try:
        # Strict mode accepts exactly what b64decode(validate=True) does.
        raw = binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        return text
    # Strict mode takes unpadded text only in whole quads, which is canonical;
    # padded text it also takes with stray padding after a whole quad
    # ("aGkg=", "Done==="). Canonical padded text is whole quads ending in
    # "xx==" or "xxx=" whose padded-out bits are zero: a length of whole
    # quads, then the bits (a third "=" from the end counts as set bits, see
    # _B64_INDEX).
    if text.endswith("=") and (
        len(text) & 3
        or (_B64_INDEX[text[-3]] & 0x0F if text[-2] == "=" else _B64_INDEX[text[-2]] & 0x03)
    ):
        return text
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return text


def encode_field(text: str) -> str:
    """Encode one string for storage."""
    return binascii.b2a_base64(text.encode("utf-8"), newline=False).decode("ascii")


def decode_leaves(value: Any, depth: int = WRITE_DEPTH) -> Any:
    """Decode every string leaf of ``value``; other leaves stay as they are.

    Decoding descends through at most ``depth`` containers, by default as
    many as a value may nest (:data:`~machines._json.WRITE_DEPTH`): what lies
    deeper is left as it is, for the record's validator to refuse as nested
    too deeply. A value read from a file nests no deeper (the read refuses
    it); one built in Python may, and cannot make decoding exhaust the stack.
    """
    kind = type(value)
    if kind is str:
        return decode_field(value)
    if depth == 0:
        return value
    if kind is dict:
        return {key: decode_leaves(child, depth - 1) for key, child in value.items()}
    if kind is list:
        return [decode_leaves(child, depth - 1) for child in value]
    return value


def encode_leaves(value: Any) -> Any:
    """Encode every string leaf of ``value``; other leaves stay as they are."""
    kind = type(value)
    if kind is str:
        return encode_field(value)
    if kind is dict:
        return {key: encode_leaves(child) for key, child in value.items()}
    if kind is list:
        return [encode_leaves(child) for child in value]
    return value
