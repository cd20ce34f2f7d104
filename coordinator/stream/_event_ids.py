"""Stream-entry identifiers (RFD D24).

An event id is opaque: any non-empty string is accepted on read. New ids are 7
lowercase base-36 characters drawn from the OS random number generator. Nothing
may rely on their length, alphabet, or order.

The OS is asked for random bytes for many ids at a time: a load gives every
entry of a file written without ids (JP's own) a fresh one, and a system call
per id was a twentieth of such a load. The ids drawn and not yet given wait in
a queue that threads take from one at a time (``deque.popleft`` is atomic),
and that a forked child empties, so that it never gives its parent's ids.
"""

from __future__ import annotations

import collections
import os
import string

__all__ = ["FRESH_ID_ATTEMPTS", "new_event_id", "repeated_ids"]

_ALPHABET = (string.digits + string.ascii_lowercase).encode("ascii")
_LENGTH = 7
# Each random byte below 252 (7 x 36) becomes the character at its value
# modulo 36, so every character is equally likely; the four bytes above are
# dropped. Sixteen bytes leave seven characters but for about one draw in 10^11.
_KEPT = 252
#: Bytes drawn at a time: about 140 ids.
_DRAW = 1024
_TO_CHAR = bytes(_ALPHABET[byte % len(_ALPHABET)] if byte < _KEPT else 0 for byte in range(256))
_DROPPED = bytes(range(_KEPT, 256))

#: Ids drawn and not yet given.
_drawn: collections.deque[str] = collections.deque()
os.register_at_fork(after_in_child=_drawn.clear)


def new_event_id() -> str:
    """A fresh id from the OS RNG (drawn with many others; see the module's docstring)."""
    while True:
        try:
            return _drawn.popleft()
        except IndexError:
            chars = os.urandom(_DRAW).translate(_TO_CHAR, _DROPPED).decode("ascii")
            _drawn.extend(
                chars[at : at + _LENGTH] for at in range(0, len(chars) - _LENGTH + 1, _LENGTH)
            )


#: How many ids in a row an id source may give that are taken already before
#: it is told it repeats itself. The default one repeats one in 78 billion.
FRESH_ID_ATTEMPTS = 1000


def repeated_ids(last: str) -> str:
    """The problem with an id source that gave :data:`FRESH_ID_ATTEMPTS` taken ids in a row."""
    return (
        f"new_id gave {FRESH_ID_ATTEMPTS} event ids in a row that the stream holds already"
        f" (the last {last!r}); it must give fresh ids"
    )
