"""The errors of the model providers.

Strategy: an adapter translates every error of its SDK (HTTP status, transport
failure, timeout, refusal) into :class:`ProviderError` at its boundary, and the
backend turns that into an :class:`~coordinator.driver._backend.InquiryBackendError`
that names the question. A problem found before anything is sent (no SDK, no
API key, a bad configuration key) is a :class:`ProviderConfigError`.

No message carries an API key: messages are built from status codes, error
types and the provider's own error text, and :func:`~coordinator._text.redact` removes the key
from that text should a server ever echo it. A URL is shown only as
:func:`coordinator._text.shown_url` makes it: the user name, password and
query a ``base_url`` may carry are credentials too. The server's own text is
shown shortened (:func:`server_text`), redacted before it is cut so no part
of a key survives.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson

from coordinator._errors import CoordinatorError
from coordinator._text import redact, shown_url

__all__ = [
    "ProviderConfigError",
    "ProviderError",
    "connection_problem",
    "server_text",
]

#: How much of a server's error text a message shows (an HTML error page can be long).
SERVER_TEXT_LIMIT = 300


class ProviderError(CoordinatorError):
    """A request to a model provider failed (``provider`` names which)."""

    def __init__(self, provider: str, problem: str) -> None:
        """Name the provider and what went wrong."""
        self.provider = provider
        self.problem = problem
        super().__init__(f"{provider}: {problem}")


class ProviderConfigError(CoordinatorError, ValueError):
    """A provider cannot be set up; ``key`` names the configuration key at fault.

    ``tool`` names the tool at fault instead, when the problem is a tool the
    provider would refuse (its name).
    """

    def __init__(self, problem: str, *, key: str | None = None, tool: str | None = None) -> None:
        """Name the key or the tool (when there is one) and the problem."""
        self.key = key
        self.tool = tool
        self.problem = problem
        where = key if key is not None else (f"tool {tool!r}" if tool is not None else None)
        super().__init__(f"{where}: {problem}" if where is not None else problem)


def connection_problem(base_url: object) -> str:
    """Why nothing could be sent to ``base_url``, for a connection failure."""
    shown = shown_url(base_url)
    scheme = urlsplit(str(base_url)).scheme
    if scheme.lower() in {"http", "https"}:
        return f"could not connect to {shown}"
    # The SDKs speak HTTP only; any other scheme fails as a connection error.
    what = f"the URL scheme {scheme!r} is not supported" if scheme else "the URL has no scheme"
    return f"could not connect to {shown}: {what} (base_url must start with http:// or https://)"


def server_text(body: object, *secrets: str | None) -> str | None:
    """What a server said in an error ``body`` (text or JSON), redacted and shortened.

    ``None`` when it said nothing.
    """
    if isinstance(body, str):
        text = body
    elif not body:
        return None
    else:
        try:
            text = orjson.dumps(body).decode()
        except TypeError:
            return None
    # Redacted first: cutting first could leave part of a key behind.
    text = " ".join(redact(text, *secrets).split())
    if not text:
        return None
    if len(text) > SERVER_TEXT_LIMIT:
        return text[:SERVER_TEXT_LIMIT] + "..."
    return text
