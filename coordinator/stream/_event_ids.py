"""Stream-entry identifiers (RFD 097, our D24).

An event id is opaque: any non-empty string is accepted on read. New ids are 7
lowercase base-36 characters drawn from the OS random number generator, as JP
draws them (``EventId::random``): random bytes, each below 252 (7 x 36) taken
as the character at its value modulo 36 so that every character is equally
likely, the four bytes above dropped. Nothing may rely on an id's length,
alphabet, or order.

Each id is one draw of its own, and nothing is kept between draws: no id
waits anywhere to be handed out, so two processes (a parent and a forked
child, two threads) never give the same one but by chance, and a test that
replaces ``os.urandom`` sees every draw. Uniqueness within a stream is the
stream's business (:meth:`ConversationStream.fresh_id`), not the generator's.
"""

from __future__ import annotations

import os
import string

__all__ = ["FRESH_ID_ATTEMPTS", "new_event_id", "repeated_ids"]

_ALPHABET = (string.digits + string.ascii_lowercase).encode("ascii")
_LENGTH = 7
# The first byte value that maps unevenly onto the alphabet (252 = 7 x 36).
_KEPT = 252
#: Bytes drawn for one id, as JP draws: fewer than seven of 32 survive about
#: once in 10^13 draws, and then the draw is made again.
_DRAW = 32
_TO_CHAR = bytes(_ALPHABET[byte % len(_ALPHABET)] if byte < _KEPT else 0 for byte in range(256))
_DROPPED = bytes(range(_KEPT, 256))


def new_event_id() -> str:
    """A fresh id from the OS RNG: one draw, no state kept (see the module's docstring)."""
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
