"""Tool-call ids as one request sends them: unique, and of a form the API accepts.

The stream keeps the ids the model gave, and they may repeat (some providers
reuse synthetic ids such as ``fs_modify_file_0`` across cycles, and ids repeat
across turns) or hold characters an API refuses (Anthropic accepts only
``^[a-zA-Z0-9_-]+$``; OpenAI at most 40 characters). An API pairs a result
with its call by id, so a repeated id is ambiguous, and Anthropic refuses it
outright.

So each request renames them, in event order: a call keeps its id when that
is acceptable and not yet used in the request, and otherwise gets its
acceptable form with the first free ``_2``, ``_3``... suffix; a result takes
the name of the call it answers (the oldest open call with its id, as pairing
goes). A name depends only on the events before it, so the inquiry request
renames the prefix it shares with the turn's request exactly as that request
did, and the prompt cache holds. Nothing of this reaches the stream, and the
``inquiry_id`` the model is asked to echo is not a tool-call id: it is sent
as it is.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import re

__all__ = ["CallIds"]


class CallIds:
    """The names one request gives its tool calls and results.

    ``invalid`` matches each character the API refuses (replaced by ``_``);
    ``max_length`` is the longest id it takes.
    """

    def __init__(
        self, *, invalid: re.Pattern[str] | None = None, max_length: int | None = None
    ) -> None:
        """Start a request with no name given."""
        self._invalid = invalid
        self._max_length = max_length
        self._used: set[str] = set()
        # The next suffix to try per acceptable form: a long run of one
        # repeated id is named in linear time.
        self._next: dict[str, int] = {}
        self._open: dict[str, deque[str]] = {}

    def _acceptable(self, id: str) -> str:
        text = self._invalid.sub("_", id) if self._invalid is not None else id
        return text[: self._max_length] if self._max_length is not None else text

    def call(self, id: str) -> str:
        """The name of the next tool call whose id is ``id``."""
        base = self._acceptable(id)
        name = base
        number = self._next.get(base, 2)
        while name in self._used:
            suffix = f"_{number}"
            number += 1
            stem = base if self._max_length is None else base[: self._max_length - len(suffix)]
            name = stem + suffix
        self._next[base] = number
        self._used.add(name)
        self._open.setdefault(id, deque()).append(name)
        return name

    def result(self, id: str) -> str:
        """The name of the call a result with ``id`` answers."""
        waiting = self._open.get(id)
        if waiting:
            return waiting.popleft()
        # No open call: sanitize removes such a result before a request is
        # built, so only a request put together by hand gets here.
        return self._acceptable(id)
