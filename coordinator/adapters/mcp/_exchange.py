"""What passes between a tool call and its server, in this package's own shapes.

The SDK's types stay in :mod:`coordinator.adapters.mcp._session` and
:mod:`coordinator.adapters.mcp._stdio`, the only modules that import the SDK
(it is optional). Everything else speaks these:
a :class:`Request` the server made (a form or a URL), the :class:`Reply` it
is told, and what one round of a call ended with: the driver's
:class:`~coordinator.driver.Completed`, :class:`InputRequired`, or a
:class:`ServerError` saying what went wrong in words the model can be told.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from machines import JsonValue, SecretValue

__all__ = [
    "CANCEL_REPLY",
    "ErrorKind",
    "InputRequired",
    "Reply",
    "Request",
    "SecretNumber",
    "ServerError",
    "Unaskable",
]


@attrs.frozen(kw_only=True)
class Request:
    """One input request of a server: a form (``schema``) or a URL (``url``).

    ``key`` is the ``inputRequests`` key; a legacy ``elicitation/create``
    has none, and is given one derived from what it asks.
    """

    key: str
    mode: Literal["form", "url"]
    message: str
    schema: Mapping[str, Any] | None = None
    url: str | None = attrs.field(default=None, repr=False)  # its query may hold a token


@attrs.frozen(kw_only=True)
class Unaskable:
    """An input request this client does not answer (sampling, roots): ``why`` in words."""

    key: str
    why: str


class SecretNumber:
    """A secret a form asks for as a number (a PIN, a code): shown nowhere, sent as that number."""

    __slots__ = ("_number",)

    def __init__(self, number: float) -> None:
        """Wrap ``number``; only :meth:`reveal` gives it back."""
        self._number = number

    def reveal(self) -> float:
        """The number: called only where the reply is handed to the SDK."""
        return self._number

    def __repr__(self) -> str:
        """Never the number."""
        return "SecretNumber(<secret>)"

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        """Never the number, whatever the format."""
        return repr(self)


@attrs.frozen(kw_only=True, repr=False)
class Reply:
    """What the server is told: ``accept`` (with ``content`` for a form), ``decline``, ``cancel``.

    ``content`` may hold a secret (a :class:`~machines.SecretValue`, or a
    :class:`SecretNumber`) until :meth:`revealed` hands it to the SDK; the
    ``repr`` never shows it.
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, JsonValue | SecretValue | SecretNumber] | None = None

    def __repr__(self) -> str:
        """The action, and the fields answered by name only."""
        fields = "" if self.content is None else f", fields={sorted(self.content)}"
        return f"Reply(action={self.action!r}{fields})"

    def revealed(self) -> dict[str, Any] | None:
        """The content as the server must receive it: secrets revealed, here and nowhere else."""
        if self.content is None:
            return None
        return {
            name: value.reveal() if isinstance(value, SecretValue | SecretNumber) else value
            for name, value in self.content.items()
        }


#: The person's cancel, and what an abandoned request is told.
CANCEL_REPLY: Final = Reply(action="cancel")


@attrs.frozen(kw_only=True)
class InputRequired:
    """The server needs answers before it goes on (one MRTR round).

    ``state`` is its ``requestState``, to be echoed byte for byte (``None``
    when it sent none: then none is sent back).
    """

    requests: tuple[Request | Unaskable, ...]
    state: str | None = attrs.field(default=None, repr=False)


class ErrorKind(enum.Enum):
    """What went wrong with a request to a server, as far as the call's next step goes."""

    #: The server could not be started, or its connection is gone.
    CLOSED = "closed"
    #: It did not answer in time.
    TIMEOUT = "timeout"
    #: It refused an echoed ``requestState`` (expired, or minted by a process now gone).
    INVALID_STATE = "invalid_state"
    #: The tool asks through ``elicitation/create``, which a 2026-07-28 connection cannot carry.
    NEEDS_LEGACY = "needs_legacy"
    #: Anything else: an error the model is told.
    OTHER = "other"


class ServerError(Exception):
    """A request to an MCP server failed; the message is what the model is told."""

    def __init__(self, message: str, kind: ErrorKind = ErrorKind.OTHER) -> None:
        """Say what failed; ``kind`` says what the call can do next."""
        super().__init__(message)
        self.message = message
        self.kind = kind
