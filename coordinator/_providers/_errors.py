"""The errors of the model providers.

Strategy: an adapter translates every error of its SDK (HTTP status, transport
failure, timeout, refusal) into :class:`ProviderError` at its boundary, and the
backend turns that into an :class:`~coordinator._backend.InquiryBackendError`
that names the question. A problem found before anything is sent (no SDK, no
API key, a bad configuration key) is a :class:`ProviderConfigError`.

No message carries an API key: messages are built from status codes, error
types and the provider's own error text, and :func:`redact` removes the key
from that text should a server ever echo it.
"""

from __future__ import annotations

from coordinator._errors import CoordinatorError

__all__ = ["ProviderConfigError", "ProviderError", "redact"]


class ProviderError(CoordinatorError):
    """A request to a model provider failed (``provider`` names which)."""

    def __init__(self, provider: str, problem: str) -> None:
        """Name the provider and what went wrong."""
        self.provider = provider
        self.problem = problem
        super().__init__(f"{provider}: {problem}")


class ProviderConfigError(CoordinatorError, ValueError):
    """A provider cannot be set up; ``key`` names the configuration key at fault."""

    def __init__(self, problem: str, *, key: str | None = None) -> None:
        """Name the key (when there is one) and the problem."""
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}" if key is not None else problem)


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``<redacted>``."""
    if not secret:
        return text
    return text.replace(secret, "<redacted>")
