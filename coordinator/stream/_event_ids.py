"""Stream-entry identifiers (RFD D24).

An event id is opaque: any non-empty string is accepted on read. New ids are 7
lowercase base-36 characters drawn from the OS random number generator. Nothing
may rely on their length, alphabet, or order.

Every appended record needs one, so ids are drawn in batches: one
``os.urandom`` call of 4 KiB makes about 570 ids, which wait in a queue (a
``deque``, whose ``popleft`` is atomic, so threads never share one). A system
call per id cost more than the rest of an append. A forked child starts with
an empty queue, so parent and child never hand out the same ids.
"""

from __future__ import annotations

import os
import string
from collections import deque

__all__ = ["FRESH_ID_ATTEMPTS", "new_event_id", "repeated_ids"]

_ALPHABET = (string.digits + string.ascii_lowercase).encode("ascii")
_LENGTH = 7
# Each random byte below 252 (7 x 36) becomes the character at its value
# modulo 36, so every character is equally likely; the four bytes above are
# dropped.
_KEPT = 252
#: Bytes drawn at once: about 4032 characters kept, 576 ids.
_DRAW = 4096
_TO_CHAR = bytes(_ALPHABET[byte % len(_ALPHABET)] if byte < _KEPT else 0 for byte in range(256))
_DROPPED = bytes(range(_KEPT, 256))

#: Ids drawn and not yet handed out, in the order they were drawn.
_drawn: deque[str] = deque()
os.register_at_fork(after_in_child=_drawn.clear)


def _draw() -> None:
    """Queue the ids one draw makes: its kept characters, seven at a time."""
    while not _drawn:
        chars = os.urandom(_DRAW).translate(_TO_CHAR, _DROPPED).decode("ascii")
        ends = range(_LENGTH, len(chars) + 1, _LENGTH)
        _drawn.extend(chars[end - _LENGTH : end] for end in ends)


def new_event_id() -> str:
    """A fresh id from the OS RNG (drawn in batches, see the module's docstring)."""
    while True:
        try:
            return _drawn.popleft()
        except IndexError:  # another thread may take the last of a draw first
            _draw()


#: How many ids in a row an id source may give that are taken already before
#: it is told it repeats itself. The default one repeats one in 78 billion.
FRESH_ID_ATTEMPTS = 1000


def repeated_ids(last: str) -> str:
    """The problem with an id source that gave :data:`FRESH_ID_ATTEMPTS` taken ids in a row."""
    return (
        f"new_id gave {FRESH_ID_ATTEMPTS} event ids in a row that the stream holds already"
        f" (the last {last!r}); it must give fresh ids"
    )
