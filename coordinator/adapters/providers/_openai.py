"""The OpenAI Chat Completions API adapter (the ``openai`` extra).

Translation only: a :class:`ModelRequest` becomes a ``chat.completions.create``
call of the official async SDK, and the SDK's ``ChatCompletion`` or error
becomes a :class:`ModelReply` or :class:`ProviderError`. The SDK is imported
when an adapter is made, so the package imports without it.

How the events map:

- system parts: one ``system`` message first, the parts joined by blank lines;
- a chat request: a ``user`` message;
- the chat responses and tool calls of one response: one ``assistant``
  message, its text as ``content`` and its calls as ``tool_calls`` (arguments
  as JSON text), whatever text or reasoning sits between the calls: the API
  wants the ``tool`` messages of every call right after the message holding
  it. Ids are renamed per request (:class:`CallIds`), so a result names one
  call only, and within the API's 40 characters;
- a tool result: a ``tool`` message with the string content. The API has no
  error flag, so an error result is sent as its text alone (words saying it
  failed when it has none);
- structured data (``ChatResponse.data``) is sent as its JSON text;
- **reasoning is not sent**: Chat Completions takes no reasoning as input.

Tools and the system message are serialized by :meth:`OpenAIAdapter.tool_params`
and :meth:`OpenAIAdapter.system_messages`, which see nothing else of the
request, so a turn's requests and its inquiries share the cached prefix.

Errors: an HTTP error status (after the SDK's own ``max_retries``), a
connection failure, an SDK timeout, a reply that is not a chat completion, a
refusal, a ``content_filter`` finish and a reply cut off by the token limit
(a ``length`` finish) are all :class:`ProviderError`.
``asyncio.CancelledError`` is not caught.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import orjson

from coordinator._text import redact, shown_url, unshown_url_parts
from coordinator.adapters.providers._call_ids import CallIds
from coordinator.adapters.providers._credentials import resolve_api_key
from coordinator.adapters.providers._errors import (
    ProviderConfigError,
    ProviderError,
    connection_problem,
    server_text,
)
from coordinator.adapters.providers._messages import FAILED_WITHOUT_OUTPUT
from coordinator.adapters.providers._requests import ModelReply, ReplyToolCall
from machines import (
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    RecordError,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    import openai
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartTextParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolChoiceOptionParam,
    )

    from coordinator.adapters.providers._requests import ModelRequest, ProviderEvent, ToolChoice
    from coordinator.adapters.providers._tools import ToolDefinition
    from machines import JsonValue

__all__ = ["OpenAIAdapter"]

#: The longest tool-call id the API takes.
_MAX_ID_LENGTH = 40


def _import_sdk() -> None:
    try:
        import openai  # noqa: F401, PLC0415 - the SDK is an optional extra
    except ImportError:
        raise ProviderConfigError(
            "the OpenAI provider needs the openai SDK: pip install 'inquiry-coordinator[openai]'"
        ) from None


class OpenAIAdapter:
    """Send :class:`ModelRequest` values to the OpenAI Chat Completions API.

    ``api_key`` defaults to the environment variable ``api_key_env``;
    ``base_url`` to the SDK's (``OPENAI_BASE_URL``, then the public API).
    ``timeout`` (seconds) and ``max_retries`` are the SDK client's own; ``None``
    keeps the SDK's default timeout. ``max_tokens`` is sent as
    ``max_completion_tokens`` when given.
    """

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        base_url: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
    ) -> None:
        """Make the SDK client (nothing is sent yet)."""
        _import_sdk()
        import openai  # noqa: PLC0415 - the SDK is an optional extra

        if not isinstance(model, str) or not model:
            raise ProviderConfigError("must be a non-empty string", key="model")
        self.model = model
        self.max_tokens = max_tokens
        self._api_key = resolve_api_key(api_key, api_key_env)
        self._client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=base_url,
            timeout=openai.not_given if timeout is None else timeout,
            max_retries=max_retries,
        )

    @property
    def provider(self) -> str:
        """``openai``."""
        return "openai"

    def __repr__(self) -> str:
        """The model and where requests go (never the key, nor credentials in the URL)."""
        where = shown_url(self._client.base_url)
        return f"OpenAIAdapter(model={self.model!r}, base_url={where!r})"

    # ------------------------------------------------------------ requests

    @staticmethod
    def system_messages(parts: Iterable[str]) -> list[ChatCompletionMessageParam]:
        """The leading ``system`` message (none when there is no system text)."""
        text = "\n\n".join(part for part in parts if part)
        return [{"role": "system", "content": text}] if text else []

    @staticmethod
    def tool_params(tools: Iterable[ToolDefinition]) -> list[ChatCompletionFunctionToolParam]:
        """The ``tools`` field: function tools, ``strict`` as each definition says."""
        params: list[ChatCompletionFunctionToolParam] = []
        for tool in tools:
            if tool.description:
                params.append(
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": dict(tool.parameters),
                            "strict": tool.strict,
                        },
                    }
                )
            else:
                params.append(
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "parameters": dict(tool.parameters),
                            "strict": tool.strict,
                        },
                    }
                )
        return params

    @staticmethod
    def tool_choice_param(choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
        """The ``tool_choice`` field: ``auto``, or the one function to call."""
        if choice.forced is None:
            return "auto"
        return {"type": "function", "function": {"name": choice.forced}}

    @staticmethod
    def message_params(events: Iterable[ProviderEvent]) -> list[ChatCompletionMessageParam]:
        """The conversation messages (after the system message)."""
        messages: list[ChatCompletionMessageParam] = []
        texts: list[str] = []
        calls: list[ChatCompletionMessageFunctionToolCallParam] = []
        ids = CallIds(max_length=_MAX_ID_LENGTH)

        def flush_assistant() -> None:
            if texts or calls:
                messages.append(_assistant_message(texts, calls))
                texts.clear()
                calls.clear()

        for event in events:
            # Text between a response's calls stays in its one message: a second
            # assistant message would leave the first one's calls unanswered.
            if isinstance(event, ChatResponse):
                text = _response_text(event)
                if text:
                    texts.append(text)
            elif isinstance(event, ToolCallRequest):
                calls.append(
                    {
                        "id": ids.call(event.id),
                        "type": "function",
                        "function": {"name": event.name, "arguments": _json(event.arguments)},
                    }
                )
            else:
                flush_assistant()
                if isinstance(event, ChatRequest):
                    messages.append({"role": "user", "content": event.content})
                else:
                    content = event.content
                    if event.is_error and not content.strip():
                        content = FAILED_WITHOUT_OUTPUT  # the API has no flag to say it failed
                    messages.append(
                        {"role": "tool", "tool_call_id": ids.result(event.id), "content": content}
                    )
        flush_assistant()
        return messages

    # ------------------------------------------------------------- sending

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send ``request``; translate the reply or the SDK's error."""
        import openai  # noqa: PLC0415 - the SDK is an optional extra

        tools = self.tool_params(request.tools)
        messages = self.system_messages(request.system_parts)
        messages.extend(self.message_params(request.events))
        try:
            completion: object = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=tools or openai.omit,
                tool_choice=self.tool_choice_param(request.tool_choice) if tools else openai.omit,
                max_completion_tokens=openai.omit if self.max_tokens is None else self.max_tokens,
            )
        except openai.APIStatusError as err:
            raise self._error(f"HTTP {err.status_code}: {self._said(err)}") from None
        except openai.APITimeoutError:
            raise self._error("the request timed out") from None
        except openai.APIConnectionError:
            raise self._error(connection_problem(self._client.base_url)) from None
        except openai.OpenAIError as err:
            raise self._error(f"{type(err).__name__}: {err}") from None
        except json.JSONDecodeError:
            # A body declared as JSON that is not: the SDK parses it unguarded.
            raise self._error(
                "unreadable reply: the body is not JSON (is base_url the API's address?)"
            ) from None
        return self._reply(completion)

    def _reply(self, completion: object) -> ModelReply:
        from openai.types.chat import (  # noqa: PLC0415 - the SDK is an optional extra
            ChatCompletion,
            ChatCompletionMessage,
            ChatCompletionMessageFunctionToolCall,
        )

        # The SDK hands over what the server sent without validating it: a page
        # that is not JSON as text, JSON of another shape as a ChatCompletion of
        # missing or mistyped fields.
        if not isinstance(completion, ChatCompletion):
            raise self._error(
                f"unreadable reply: not a chat completion but {type(completion).__name__} "
                "(is base_url the API's address?)"
            )
        choices: object = completion.choices
        if not isinstance(choices, list) or not choices:
            raise self._error("the reply has no choices")
        choice = choices[0]
        message: object = getattr(choice, "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise self._error("unreadable reply: its choice has no message")
        finish_reason: object = getattr(choice, "finish_reason", None)
        if message.refusal:
            raise self._error(f"the model refused to answer: {message.refusal}")
        if finish_reason == "content_filter":
            raise self._error("the reply was withheld by the content filter")
        if finish_reason == "length":
            limit = (
                "the model's own limit (max_tokens is not set)"
                if self.max_tokens is None
                else f"max_tokens={self.max_tokens}"
            )
            raise self._error(f"the reply was cut off at {limit}")
        try:
            # Custom (free-text) tool calls are never asked for, so never read.
            calls = tuple(
                ReplyToolCall(
                    id=call.id,
                    name=call.function.name,
                    arguments=_json_object(call.function.arguments),
                )
                for call in message.tool_calls or ()
                if isinstance(call, ChatCompletionMessageFunctionToolCall)
            )
            return ModelReply(text=message.content or "", tool_calls=calls)
        except (RecordError, AttributeError, TypeError) as err:
            raise self._error(f"unreadable reply: {err}") from None

    def _said(self, err: openai.APIStatusError) -> str:
        """What the server said in an error, fit for a message."""
        return server_text(_status_detail(err), *self._secrets()) or "no error message"

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key, *unshown_url_parts(self._client.base_url))

    def _error(self, problem: str) -> ProviderError:
        return ProviderError(self.provider, redact(problem, *self._secrets()))

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()


def _assistant_message(
    texts: list[str], calls: list[ChatCompletionMessageFunctionToolCallParam]
) -> ChatCompletionAssistantMessageParam:
    message: ChatCompletionAssistantMessageParam = {"role": "assistant"}
    if len(texts) == 1:
        message["content"] = texts[0]
    elif texts:
        parts: list[ChatCompletionContentPartTextParam] = [
            {"type": "text", "text": text} for text in texts
        ]
        message["content"] = parts
    if calls:
        message["tool_calls"] = list(calls)
    return message


def _response_text(event: ChatResponse) -> str:
    if event.kind is ChatResponseKind.REASONING:
        return ""  # Chat Completions takes no reasoning as input
    if event.kind is ChatResponseKind.DATA:
        return orjson.dumps(event.content).decode()
    return str(event.content)


def _json(arguments: object) -> str:
    return orjson.dumps(arguments).decode()


def _json_object(text: object) -> dict[str, JsonValue] | None:
    if not isinstance(text, str):
        return None  # arguments are JSON text; anything else is nothing usable
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return cast("dict[str, JsonValue]", value) if isinstance(value, dict) else None


def _status_detail(err: openai.APIStatusError) -> object:
    # The SDK keeps the body's ``error`` member: the API's object, whose message
    # is its own words, or whatever else a server sent there (a string); a body
    # that is not JSON is kept as its text.
    body = err.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message.strip():
            return message
        return err.type or body
    return body
