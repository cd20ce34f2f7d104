"""Stream-entry identifiers (RFD D24).

An event id is opaque: any non-empty string is accepted on read. New ids are 7
lowercase base-36 characters drawn from the OS random number generator. Nothing
may rely on their length, alphabet, or order.
"""

from __future__ import annotations

import os
import string

__all__ = ["FRESH_ID_ATTEMPTS", "new_event_id", "repeated_ids"]

_ALPHABET = (string.digits + string.ascii_lowercase).encode("ascii")
_LENGTH = 7
# Each random byte below 252 (7 x 36) becomes the character at its value
# modulo 36, so every character is equally likely; the four bytes above are
# dropped. Sixteen bytes leave seven characters but for about one draw in 10^11.
_KEPT = 252
_DRAW = 16
_TO_CHAR = bytes(_ALPHABET[byte % len(_ALPHABET)] if byte < _KEPT else 0 for byte in range(256))
_DROPPED = bytes(range(_KEPT, 256))


def new_event_id() -> str:
    """Draw a fresh id from the OS RNG.

    One system call and one byte translation per id: every appended entry and
    every entry loaded without an id gets one.
    """
    while True:
        chars = os.urandom(_DRAW).translate(_TO_CHAR, _DROPPED)
        if len(chars) >= _LENGTH:
            return chars[:_LENGTH].decode("ascii")


#: How many ids in a row an id source may give that are taken already before
#: it is told it repeats itself. The default one repeats one in 78 billion.
FRESH_ID_ATTEMPTS = 1000


def repeated_ids(last: str) -> str:
    """The problem with an id source that gave :data:`FRESH_ID_ATTEMPTS` taken ids in a row."""
    return (
        f"new_id gave {FRESH_ID_ATTEMPTS} event ids in a row that the stream holds already"
        f" (the last {last!r}); it must give fresh ids"
    )
