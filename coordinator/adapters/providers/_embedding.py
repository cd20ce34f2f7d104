"""A provider's tool calls in, the coordinator's responses out: the glue of an agent loop.

Theory of operation: an agent loop sends the model a conversation, reads
the tool calls in its reply, runs them, and sends the results back. The
coordinator runs ``ToolCallRequest`` records and answers with
``ToolCallResponse`` records; these four functions translate between those
and the two message shapes the providers use:

==================  =================================  ==================================
provider            the model's calls, in              the results, out
==================  =================================  ==================================
Anthropic Messages  the reply's ``tool_use`` blocks:   one ``user`` message of
                    :func:`anthropic_tool_calls`       ``tool_result`` blocks:
                                                       :func:`anthropic_tool_results`
OpenAI Chat         the reply message's                one ``tool`` message per call:
Completions         ``tool_calls``:                    :func:`openai_tool_results`
                    :func:`openai_tool_calls`
==================  =================================  ==================================

In: the SDK's own objects (``anthropic.types.Message``, its content
blocks; ``openai.types.chat.ChatCompletion``, its message) or the same
shapes as plain dicts, as a program that logs or replays replies holds
them. Both are read by field name, so neither SDK is imported here: the
helpers work with whichever one the embedder has, or none. Out: plain
dicts, which both SDKs take as message parameters.

The calls come out in the reply's order, which is the order the results
go back in (the APIs pair by id, but a reader of the log pairs by order).
A call whose arguments are not a JSON object (OpenAI's are JSON text the
model wrote, and it can get them wrong) cannot be a ``ToolCallRequest``:
:class:`ToolCallShapeError` names the call, its tool and the fault, and
the embedder answers it as it sees fit (an error result, say). A reply
with no call gives an empty list: the model is done.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

import orjson

from coordinator._errors import CoordinatorError
from machines import JsonValue, ToolCallRequest, ToolCallResponse

__all__ = [
    "ToolCallShapeError",
    "anthropic_tool_calls",
    "anthropic_tool_results",
    "openai_tool_calls",
    "openai_tool_results",
]


class ToolCallShapeError(CoordinatorError, ValueError):
    """A provider's reply holds a tool call this cannot read; names the call and the fault.

    ``call_id`` and ``tool`` are the call's (``None`` where the reply did not
    say), so the embedder can answer that call with an error.
    """

    def __init__(
        self, problem: str, *, call_id: str | None = None, tool: str | None = None
    ) -> None:
        """Name the call (when it has an id) and what is wrong with it."""
        self.call_id = call_id
        self.tool = tool
        self.problem = problem
        where = f"tool call {call_id!r}" if call_id is not None else "a tool call"
        if tool is not None:
            where += f" (tool {tool!r})"
        super().__init__(f"{where}: {problem}")


def _field(value: object, name: str) -> Any:
    """``value``'s field ``name``: a dict's key or an SDK object's attribute; ``None`` if none."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _text(value: object, what: str, call_id: str | None = None) -> str:
    if not isinstance(value, str) or not value:
        raise ToolCallShapeError(f"its {what} is not a non-empty string", call_id=call_id)
    return value


def _call(call_id: object, name: object, arguments: object) -> ToolCallRequest:
    checked_id = _text(call_id, "id")
    tool = _text(name, "name", checked_id)
    if not isinstance(arguments, Mapping):
        raise ToolCallShapeError(
            f"its arguments are not a JSON object (got {_kind(arguments)})",
            call_id=checked_id,
            tool=tool,
        )
    try:
        return ToolCallRequest(
            id=checked_id, name=tool, arguments=cast("Mapping[str, JsonValue]", dict(arguments))
        )
    except (TypeError, ValueError) as error:  # a value no JSON holds (a set, a float NaN)
        raise ToolCallShapeError(
            f"its arguments are not JSON: {error}", call_id=checked_id, tool=tool
        ) from None


def _kind(value: object) -> str:
    """What a JSON value is, in words (never the value: arguments may hold anything)."""
    kinds = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    if value is None:
        return "nothing"
    if isinstance(value, list | tuple):
        return "an array"
    return kinds.get(type(value), type(value).__name__)


# ------------------------------------------------------------------ Anthropic


def anthropic_tool_calls(reply: object) -> list[ToolCallRequest]:
    """The ``tool_use`` blocks of an Anthropic reply, as the coordinator's calls, in order.

    ``reply`` is a ``Message`` (the SDK's, or its dict), an assistant
    message parameter (``{"role": "assistant", "content": [...]}``), or its
    content: a list of blocks, each an SDK block or a dict. Other blocks
    (text, thinking) are passed over. :class:`ToolCallShapeError` for a
    ``tool_use`` block without an id or a name, or whose ``input`` is not
    an object.
    """
    content = reply if isinstance(reply, list | tuple) else _field(reply, "content")
    if isinstance(content, str):
        return []  # a message given as plain text holds no block, so no call
    if not isinstance(content, Iterable):
        raise ToolCallShapeError("the reply has no content blocks to read calls from")
    return [
        _call(_field(block, "id"), _field(block, "name"), _field(block, "input"))
        for block in content
        if _field(block, "type") == "tool_use"
    ]


def anthropic_tool_results(responses: Iterable[ToolCallResponse]) -> dict[str, Any]:
    """The coordinator's responses as one Anthropic ``user`` message of ``tool_result`` blocks.

    Append it to the messages after the assistant's reply: the API wants
    every ``tool_use`` of that reply answered in the next message, and
    ``is_error`` tells the model a call failed (it is sent only then).
    """
    blocks: list[dict[str, Any]] = []
    for response in responses:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": response.id,
            "content": response.content,
        }
        if response.is_error:
            block["is_error"] = True
        blocks.append(block)
    return {"role": "user", "content": blocks}


# ------------------------------------------------------------------ OpenAI


def openai_tool_calls(reply: object) -> list[ToolCallRequest]:
    """The ``tool_calls`` of an OpenAI Chat Completions reply, as the coordinator's calls.

    ``reply`` is a ``ChatCompletion`` (its first choice's message is read:
    a loop asks for one, ``n`` unset), or the message itself
    (``ChatCompletionMessage``), each the SDK's or a dict. A call's
    ``function.arguments`` is the JSON text the model wrote:
    :class:`ToolCallShapeError` when it is not a JSON object, and for a
    call that is not a function call (a custom tool's free text), which the
    coordinator has no arguments for.
    """
    choices = _field(reply, "choices")
    message = reply
    if choices is not None:
        if not isinstance(choices, list | tuple) or not choices:
            raise ToolCallShapeError("the reply has no choice to read calls from")
        message = _field(choices[0], "message")
    calls = _field(message, "tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, Iterable) or isinstance(calls, str | Mapping):
        raise ToolCallShapeError("the message's tool_calls is not a list")
    return [_openai_call(call) for call in calls]


def _openai_call(call: object) -> ToolCallRequest:
    call_id = _field(call, "id")
    kind = _field(call, "type")
    function = _field(call, "function")
    shown_id = call_id if isinstance(call_id, str) else None
    if kind not in {"function", None} or function is None:
        raise ToolCallShapeError(
            f"it is a {kind!s} call, not a function call: it has no arguments to run with",
            call_id=shown_id,
        )
    name = _field(function, "name")
    text = _field(function, "arguments")
    if not isinstance(text, str):
        arguments: object = text
    else:
        try:
            arguments = orjson.loads(text) if text.strip() else {}
        except orjson.JSONDecodeError as error:
            raise ToolCallShapeError(
                f"its arguments are not JSON text ({error})",
                call_id=shown_id,
                tool=name if isinstance(name, str) else None,
            ) from None
    return _call(call_id, name, arguments)


def openai_tool_results(responses: Iterable[ToolCallResponse]) -> list[dict[str, Any]]:
    """The coordinator's responses as OpenAI ``tool`` messages, one per call, in order.

    Extend the messages with them after the assistant's message. Chat
    Completions has no error flag: a failed call's content says so (the
    coordinator's error texts do).
    """
    return [
        {"role": "tool", "tool_call_id": response.id, "content": response.content}
        for response in responses
    ]
