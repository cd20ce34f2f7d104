"""Stream-entry identifiers (RFD D24).

An event id is opaque: any non-empty string is accepted on read. New ids are 7
lowercase base-36 characters drawn from the OS random number generator. Nothing
may rely on their length, alphabet, or order.
"""

from __future__ import annotations

import secrets
import string

__all__ = ["new_event_id"]

_ALPHABET = string.digits + string.ascii_lowercase
_LENGTH = 7
_SPACE = len(_ALPHABET) ** _LENGTH


def new_event_id() -> str:
    """Draw a fresh id from the OS RNG."""
    number = secrets.randbelow(_SPACE)
    chars = []
    for _ in range(_LENGTH):
        number, digit = divmod(number, 36)
        chars.append(_ALPHABET[digit])
    return "".join(chars)
