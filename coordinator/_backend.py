"""The inquiry backend: how a question gets an answer from the model.

The coordinator hands a backend an :class:`InquiryTask` for every question
routed to the assistant (targeted at it, or asked with no terminal present).
A secret question never becomes a task: the machines refuse to route it first.

A backend either returns the answer (a JSON value that fits the question's
answer type) or raises :class:`InquiryBackendError` with a
:class:`BackendErrorKind`. The coordinator maps the kinds to the recorded
cancellation reason as RFD 082's table says: ``CANCELLED`` (and an
``asyncio.CancelledError``) is the user's doing, everything else is a backend
error.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

import attrs

from coordinator._errors import CoordinatorError
from coordinator._stream import ProviderView
from machines import CancellationReason, Question

if TYPE_CHECKING:
    from machines import JsonValue

__all__ = [
    "BackendErrorKind",
    "InquiryBackend",
    "InquiryBackendError",
    "InquiryTask",
]


class BackendErrorKind(enum.Enum):
    """Why a backend could not answer."""

    #: The request was cancelled (user restart, tool cancel, hard quit).
    CANCELLED = "cancelled"
    #: The provider failed: transport error, HTTP error status, refusal.
    PROVIDER = "provider"
    #: The model replied without the data asked for (no ``answer_inquiry`` call).
    MISSING_STRUCTURED_DATA = "missing_structured_data"
    #: The reply could not be turned into a valid answer (after retries).
    ANSWER_EXTRACTION = "answer_extraction"
    #: Anything else (a scripted backend's catch-all).
    OTHER = "other"

    @property
    def reason(self) -> CancellationReason:
        """The cancellation reason recorded for an inquiry that failed so."""
        if self is BackendErrorKind.CANCELLED:
            return CancellationReason.USER
        return CancellationReason.BACKEND_ERROR


class InquiryBackendError(CoordinatorError):
    """A backend could not answer; ``kind`` says why, the message says how."""

    def __init__(self, kind: BackendErrorKind, message: str) -> None:
        """Describe the failure (never include a secret: none reaches a backend)."""
        self.kind = kind
        super().__init__(message)


@attrs.frozen(kw_only=True)
class InquiryTask:
    """One question for the model.

    ``view`` is the conversation as a provider may see it at the moment of
    asking (inquiry records never appear in it). The tool call ``tool_call_id``
    is still open in it; the backend closes it on its own copy with a
    ``Tool paused: <question text>`` response before asking.
    """

    inquiry_id: str
    tool_call_id: str
    tool_name: str
    question: Question
    view: ProviderView


class InquiryBackend(Protocol):
    """Something that can answer a question the way the model would."""

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Return the answer to ``task.question`` or raise :class:`InquiryBackendError`."""
        ...
