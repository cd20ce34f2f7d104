"""The Anthropic Messages API adapter (the ``anthropic`` extra).

Translation only: a :class:`ModelRequest` becomes a ``messages.create`` call of
the official async SDK, and the SDK's ``Message`` or error becomes a
:class:`ModelReply` or :class:`ProviderError`. The SDK is imported when an
adapter is made, so the package imports without it.

How the events map:

- system parts: the separate ``system`` field, one text block per part;
- chat requests and tool results: ``user`` messages; chat responses and tool
  calls: ``assistant`` messages. Consecutive events of one role share a
  message, with a user message's ``tool_result`` blocks first, as the API
  requires;
- a tool call is a ``tool_use`` block (its arguments are the JSON object
  ``input``), a tool result a ``tool_result`` block with the string content and
  ``is_error``. Ids are renamed per request (:class:`CallIds`): the API refuses
  a repeated ``tool_use`` id and any id not matching ``^[a-zA-Z0-9_-]+$``;
- structured data (``ChatResponse.data``) is sent as its JSON text;
- **reasoning is not sent**: a thinking block must carry the signature the API
  issued with it, which the stream does not keep, and the API refuses a
  thinking block without one. Text that is empty or only whitespace is dropped
  (the API refuses it too); an error result without output says so in words,
  since the API refuses an empty one.

Every request is sent with the top-level ``cache_control`` marker (unless
``prompt_cache=False``), which caches up to the last block: the inquiry request
then reads the prefix its parent turn wrote. Tools and system are serialized
by :meth:`AnthropicAdapter.tool_params` and :meth:`AnthropicAdapter.system_param`,
which see nothing else of the request.

Errors: an HTTP error status (after the SDK's own ``max_retries``), a
connection failure, an SDK timeout, a request the SDK refuses to send, a
reply that is not a Messages API message, a refusal (``stop_reason:
refusal``) and a reply cut off by the token limit are all
:class:`ProviderError`. ``asyncio.CancelledError`` is not caught.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

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

    from anthropic.types import (
        CacheControlEphemeralParam,
        MessageParam,
        TextBlockParam,
        ToolChoiceParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

    from coordinator.adapters.providers._requests import ModelRequest, ProviderEvent, ToolChoice
    from coordinator.adapters.providers._tools import ToolDefinition
    from machines import JsonValue

    _Block: TypeAlias = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam
    _Role: TypeAlias = Literal["user", "assistant"]

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicAdapter"]

#: The ``max_tokens`` of a request unless configured.
DEFAULT_MAX_TOKENS = 4096

#: A character the API refuses in a tool-use id (it takes ``^[a-zA-Z0-9_-]+$``).
_INVALID_ID_CHARACTER = re.compile(r"[^a-zA-Z0-9_-]")


def _import_sdk() -> None:
    try:
        import anthropic  # noqa: F401, PLC0415 - the SDK is an optional extra
    except ImportError:
        raise ProviderConfigError(
            "the Anthropic provider needs the anthropic SDK: "
            "pip install 'inquiry-coordinator[anthropic]'"
        ) from None


class AnthropicAdapter:
    """Send :class:`ModelRequest` values to the Anthropic Messages API.

    ``api_key`` defaults to the environment variable ``api_key_env``;
    ``base_url`` to the SDK's (``ANTHROPIC_BASE_URL``, then the public API).
    ``timeout`` (seconds) and ``max_retries`` are the SDK client's own; ``None``
    keeps the SDK's default timeout.
    """

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float | None = None,
        max_retries: int = 2,
        prompt_cache: bool = True,
    ) -> None:
        """Make the SDK client (nothing is sent yet)."""
        _import_sdk()
        import anthropic  # noqa: PLC0415 - the SDK is an optional extra

        if not isinstance(model, str) or not model:
            raise ProviderConfigError("must be a non-empty string", key="model")
        self.model = model
        self.max_tokens = max_tokens
        self.prompt_cache = prompt_cache
        self._api_key = resolve_api_key(api_key, api_key_env)
        self._client = anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=base_url,
            timeout=anthropic.not_given if timeout is None else timeout,
            max_retries=max_retries,
        )

    @property
    def provider(self) -> str:
        """``anthropic``."""
        return "anthropic"

    def __repr__(self) -> str:
        """The model and where requests go (never the key, nor credentials in the URL)."""
        where = shown_url(self._client.base_url)
        return f"AnthropicAdapter(model={self.model!r}, base_url={where!r})"

    # ------------------------------------------------------------ requests

    @staticmethod
    def system_param(parts: Iterable[str]) -> list[TextBlockParam]:
        """The ``system`` field: one text block per part that is not blank."""
        return [{"type": "text", "text": part} for part in parts if part.strip()]

    @staticmethod
    def tool_params(tools: Iterable[ToolDefinition]) -> list[ToolParam]:
        """The ``tools`` field (RFD 033's shape for ``answer_inquiry``)."""
        params: list[ToolParam] = []
        for tool in tools:
            # Keys in RFD 033's order; ``strict`` only when asked for, as the API
            # has it off by default.
            param: dict[str, object] = {"name": tool.name}
            if tool.description:
                param["description"] = tool.description
            if tool.strict:
                param["strict"] = True
            param["input_schema"] = dict(tool.parameters)
            params.append(cast("ToolParam", param))
        return params

    @staticmethod
    def tool_choice_param(choice: ToolChoice) -> ToolChoiceParam:
        """The ``tool_choice`` field: auto, or one tool and only one call of it."""
        if choice.forced is None:
            return {"type": "auto"}
        return {"type": "tool", "name": choice.forced, "disable_parallel_tool_use": True}

    @staticmethod
    def message_params(events: Iterable[ProviderEvent]) -> list[MessageParam]:
        """The ``messages`` field: the events grouped into alternating turns."""
        grouped: list[tuple[_Role, list[_Block]]] = []
        ids = CallIds(invalid=_INVALID_ID_CHARACTER)
        for event in events:
            converted = _block(event, ids)
            if converted is None:
                continue
            role, block = converted
            if grouped and grouped[-1][0] == role:
                grouped[-1][1].append(block)
            else:
                grouped.append((role, [block]))
        messages: list[MessageParam] = []
        for role, blocks in grouped:
            if role == "user":
                # The API wants a user message's tool results before its text.
                ordered = sorted(blocks, key=lambda block: block["type"] != "tool_result")
                messages.append({"role": "user", "content": ordered})
            else:
                messages.append({"role": "assistant", "content": blocks})
        return messages

    # ------------------------------------------------------------- sending

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send ``request``; translate the reply or the SDK's error."""
        import anthropic  # noqa: PLC0415 - the SDK is an optional extra

        system = self.system_param(request.system_parts)
        tools = self.tool_params(request.tools)
        messages = self.message_params(request.events)
        tool_choice = self.tool_choice_param(request.tool_choice) if tools else anthropic.omit
        cache: CacheControlEphemeralParam = {"type": "ephemeral"}
        try:
            message: object = await self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                messages=messages,
                system=system or anthropic.omit,
                tools=tools or anthropic.omit,
                tool_choice=tool_choice,
                cache_control=cache if self.prompt_cache else anthropic.omit,
            )
        except anthropic.APIStatusError as err:
            detail = err.api_message or err.type or err.body
            raise self._error(f"HTTP {err.status_code}: {self._said(detail)}") from None
        except anthropic.APITimeoutError:
            raise self._error("the request timed out") from None
        except anthropic.APIConnectionError:
            raise self._error(connection_problem(self._client.base_url)) from None
        except anthropic.AnthropicError as err:
            raise self._error(f"{type(err).__name__}: {err}") from None
        except json.JSONDecodeError:
            # A body declared as JSON that is not: the SDK parses it unguarded.
            raise self._error(
                "unreadable reply: the body is not JSON (is base_url the API's address?)"
            ) from None
        except ValueError as err:
            # The SDK checks some requests before sending: without a timeout it
            # refuses a max_tokens it expects to take longer than its default
            # allows without streaming. The request-building above is outside
            # this try, so only the SDK's refusals get here.
            raise self._error(
                f"the SDK refused to send the request (max_tokens={self.max_tokens}): {err}"
            ) from None
        return self._reply(message)

    def _reply(self, message: object) -> ModelReply:
        from anthropic.types import Message, TextBlock, ToolUseBlock  # noqa: PLC0415 - optional

        # The SDK hands over what the server sent without validating it: a page
        # that is not JSON as text, JSON of another shape as a Message of
        # missing or mistyped fields.
        if not isinstance(message, Message):
            raise self._error(
                f"unreadable reply: not a Messages API message but {type(message).__name__} "
                "(is base_url the API's address?)"
            )
        if message.stop_reason == "refusal":
            raise self._error("the model refused to answer")
        if message.stop_reason == "max_tokens":
            raise self._error(f"the reply was cut off at max_tokens={self.max_tokens}")
        if message.stop_reason == "model_context_window_exceeded":
            raise self._error("the reply was cut off: the model's context window is full")
        content: object = message.content
        if not isinstance(content, list):
            raise self._error("unreadable reply: the message has no content list")
        texts: list[str] = []
        calls: list[ReplyToolCall] = []
        try:
            for block in content:
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                elif isinstance(block, ToolUseBlock):
                    # The API parsed the input from JSON: a JSON object, or nothing usable.
                    arguments = (
                        cast("dict[str, JsonValue]", block.input)
                        if isinstance(block.input, dict)
                        else None
                    )
                    calls.append(ReplyToolCall(id=block.id, name=block.name, arguments=arguments))
            return ModelReply(text="".join(texts), tool_calls=tuple(calls))
        except (RecordError, TypeError) as err:
            raise self._error(f"unreadable reply: {err}") from None

    def _said(self, body: object) -> str:
        """What the server said in an error, fit for a message."""
        return server_text(body, *self._secrets()) or "no error message"

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key, *unshown_url_parts(self._client.base_url))

    def _error(self, problem: str) -> ProviderError:
        return ProviderError(self.provider, redact(problem, *self._secrets()))

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()


def _block(event: ProviderEvent, ids: CallIds) -> tuple[_Role, _Block] | None:
    # The API refuses a text block that is empty or only whitespace.
    if isinstance(event, ChatRequest):
        text = event.content
        return ("user", {"type": "text", "text": text}) if text.strip() else None
    if isinstance(event, ChatResponse):
        text = _response_text(event)
        return ("assistant", {"type": "text", "text": text}) if text.strip() else None
    if isinstance(event, ToolCallRequest):
        return (
            "assistant",
            {
                "type": "tool_use",
                "id": ids.call(event.id),
                "name": event.name,
                "input": dict(event.arguments),
            },
        )
    result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": ids.result(event.id)}
    if event.content.strip():
        result["content"] = event.content
    elif event.is_error:
        # The API refuses an error result without content.
        result["content"] = FAILED_WITHOUT_OUTPUT
    result["is_error"] = event.is_error
    return ("user", result)


def _response_text(event: ChatResponse) -> str:
    if event.kind is ChatResponseKind.REASONING:
        return ""  # not representable without the API's signature (see the module doc)
    if event.kind is ChatResponseKind.DATA:
        return orjson.dumps(event.content).decode()
    return str(event.content)
