"""A secret answer on its way to the tool.

A :class:`SecretValue` wraps the only copy the engine holds of an answer to a
secret question. It is revealed exactly once per run of the tool, at the
executor boundary; everywhere else it prints as ``<secret>``. It cannot be
pickled, and ``orjson`` refuses it, so it cannot reach disk by accident.
"""

from __future__ import annotations

import hmac
from typing import NoReturn

__all__ = ["SecretValue"]


class SecretValue:
    """An answer that must never be persisted, logged or shown."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        """Wrap ``value``; only :meth:`reveal` gives it back."""
        if not isinstance(value, str):
            # The message must not echo the value: it may be the secret itself.
            raise TypeError(f"a secret answer must be a string, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """Return the secret: call this only where the tool receives it."""
        return self._value

    def __repr__(self) -> str:
        """Never show the value."""
        return "SecretValue(<secret>)"

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        """Never show the value, whatever the format."""
        return repr(self)

    def __eq__(self, other: object) -> bool:
        """Compare in constant time, so equality leaks nothing through timing."""
        if not isinstance(other, SecretValue):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        """Hash by identity class only: a hash of the value would leak it."""
        return hash(SecretValue)

    def __reduce__(self) -> NoReturn:
        """Refuse pickling: a pickled secret is a secret on disk."""
        raise TypeError("SecretValue cannot be pickled")

    def __getstate__(self) -> NoReturn:
        """Refuse to hand over the state, which is the secret: ``reveal()`` is the one way out."""
        raise TypeError("SecretValue cannot be pickled")
