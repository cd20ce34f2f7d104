"""The model inquiry backend: the provider-agnostic core of RFD 033.

:class:`ModelInquiryBackend` answers an :class:`~coordinator.driver._backend.InquiryTask`
by asking the model, through a :class:`ProviderAdapter` that only translates
requests and replies to one provider's API. The core decides everything else:
what the inquiry request holds, how the answer is extracted, when to retry and
which :class:`~coordinator.driver._backend.BackendErrorKind` a failure is.

Failures, as RFD 082's table maps them:

- the provider failed (transport, HTTP status, timeout, refusal): ``PROVIDER``;
- the reply has no ``answer_inquiry`` call: ``MISSING_STRUCTURED_DATA``;
- every attempt was rejected (wrong or missing ``inquiry_id`` or ``answer``, an
  answer not of the expected form): ``ANSWER_EXTRACTION``, after
  ``answer_retries`` retries that feed the reason back to the model;
- a secret question, or a task whose tool call is not open: ``OTHER``, and
  nothing is sent.

``asyncio.CancelledError`` is never caught: it propagates and the coordinator
records a user cancellation. This backend never raises ``CANCELLED`` itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, Self

from coordinator.adapters.providers._answers import AnswerRejectedError, extract_answer
from coordinator.adapters.providers._errors import ProviderError
from coordinator.adapters.providers._requests import (
    CallNotOpenError,
    ModelReply,
    ModelRequest,
    after_rejection,
    inquiry_request,
    turn_request,
)
from coordinator.adapters.providers._tools import ANSWER_INQUIRY, ToolDefinition, turn_tools
from coordinator.driver import BackendErrorKind, InquiryBackendError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import TracebackType

    from coordinator.driver import InquiryTask
    from coordinator.stream import ProviderView
    from machines import JsonValue

__all__ = ["DEFAULT_ANSWER_RETRIES", "ModelInquiryBackend", "ProviderAdapter"]

_log = logging.getLogger("coordinator.providers")

#: How many times a rejected answer is asked for again (RFD 033: up to 2).
DEFAULT_ANSWER_RETRIES = 2


class ProviderAdapter(Protocol):
    """One provider's API, reduced to sending a :class:`ModelRequest`.

    ``complete`` raises :class:`ProviderError` for every failure of the
    provider or its SDK, and lets ``asyncio.CancelledError`` through.
    """

    @property
    def provider(self) -> str:
        """The provider's name, for messages (``anthropic``, ``openai``)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send ``request`` and return the model's reply."""
        ...

    async def aclose(self) -> None:
        """Release the SDK client and its connections."""
        ...


class ModelInquiryBackend:
    """An :class:`~coordinator.driver._backend.InquiryBackend` that asks the model.

    ``tools`` are the embedder's tool definitions for the turn; every request
    this backend builds carries them followed by ``answer_inquiry``
    (:func:`~coordinator.adapters.providers.turn_tools`). Build the turn's normal
    requests with :meth:`turn_request` so they share the inquiry's prefix.
    """

    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        tools: Iterable[ToolDefinition] = (),
        answer_retries: int = DEFAULT_ANSWER_RETRIES,
    ) -> None:
        """Ask through ``adapter``; retry a rejected answer ``answer_retries`` times."""
        if type(answer_retries) is not int or answer_retries < 0:
            raise ValueError("answer_retries must be a whole number, 0 or more")
        self.adapter = adapter
        self.answer_retries = answer_retries
        self._tools = tuple(tools)
        turn_tools(self._tools)  # refuse a clash with answer_inquiry now, not mid-turn

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        """The tool definitions of every request of the turn."""
        return turn_tools(self._tools)

    def turn_request(self, view: ProviderView) -> ModelRequest:
        """A normal request of the turn (tool choice auto), built as inquiries are."""
        return turn_request(view, self._tools)

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Ask the model ``task``'s question and return its answer."""
        question = task.question
        where = f"question {question.id!r} of tool {task.tool_name!r}"
        if question.answer_type.is_secret:
            # The machines never route a secret here; refuse before building anything.
            raise InquiryBackendError(
                BackendErrorKind.OTHER,
                f"{where} is secret: secret questions are never sent to the model",
            )
        try:
            request = inquiry_request(task, self._tools)
        except CallNotOpenError as err:
            raise InquiryBackendError(
                BackendErrorKind.OTHER, f"cannot ask {where}: {err}"
            ) from None
        attempts = 1 + self.answer_retries
        reason = ""
        for attempt in range(1, attempts + 1):
            reply = await self._complete(request, where)
            call = next((call for call in reply.tool_calls if call.name == ANSWER_INQUIRY), None)
            if call is None:
                raise InquiryBackendError(
                    BackendErrorKind.MISSING_STRUCTURED_DATA,
                    f"the model did not call {ANSWER_INQUIRY} to answer {where}",
                )
            try:
                return extract_answer(call.arguments, task.inquiry_id, question.answer_type)
            except AnswerRejectedError as rejected:
                reason = rejected.reason
            _log.info(
                "inquiry %s: attempt %d of %d rejected: %s",
                task.inquiry_id,
                attempt,
                attempts,
                reason,
            )
            if attempt < attempts:
                request = after_rejection(request, reply, call, task, reason)
        raise InquiryBackendError(
            BackendErrorKind.ANSWER_EXTRACTION,
            f"no valid answer to {where} ({question.text!r}) after {attempts} "
            f"attempt{'s' if attempts > 1 else ''}: {reason}",
        )

    async def _complete(self, request: ModelRequest, where: str) -> ModelReply:
        try:
            return await self.adapter.complete(request)
        except ProviderError as err:
            raise InquiryBackendError(
                BackendErrorKind.PROVIDER, f"asking {where} failed: {err}"
            ) from err

    async def aclose(self) -> None:
        """Close the adapter's client."""
        await self.adapter.aclose()

    async def __aenter__(self) -> Self:
        """Use the backend in ``async with``; the adapter is closed on the way out."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the adapter's client."""
        await self.aclose()
