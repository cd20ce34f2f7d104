"""The agent-loop helpers: a provider's tool calls in, the coordinator's responses out.

Each reads the SDK's own objects (built by the SDK from the body its API
sends) and the same shapes as plain dicts, with the same result.
"""

from __future__ import annotations

from typing import Any

import anthropic.types
import openai.types.chat
import pytest

from coordinator import (
    ToolCallShapeError,
    anthropic_tool_calls,
    anthropic_tool_results,
    openai_tool_calls,
    openai_tool_results,
)
from machines import JsonValue, ToolCallRequest, ToolCallResponse

ANTHROPIC_REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "text", "text": "Deploying both."},
        {"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": {"service": "api"}},
        {"type": "tool_use", "id": "toolu_2", "name": "deploy", "input": {"n": [1, 2.5, None]}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}

OPENAI_REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "deploy", "arguments": '{"service": "api"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "deploy", "arguments": '{"n": [1, 2.5, null]}'},
                    },
                ],
            },
        }
    ],
}

CALLS: list[tuple[str, dict[str, JsonValue]]] = [
    ("deploy", {"service": "api"}),
    ("deploy", {"n": [1, 2.5, None]}),
]


def anthropic_forms() -> list[object]:
    """The one reply as the SDK's Message, a dict, a message parameter and its blocks."""
    message = anthropic.types.Message.model_validate(ANTHROPIC_REPLY)
    return [
        message,
        ANTHROPIC_REPLY,
        {"role": "assistant", "content": ANTHROPIC_REPLY["content"]},
        message.content,
        ANTHROPIC_REPLY["content"],
    ]


def openai_forms() -> list[object]:
    """The one reply as the SDK's ChatCompletion, its message, and both as dicts."""
    completion = openai.types.chat.ChatCompletion.model_validate(OPENAI_REPLY)
    return [
        completion,
        completion.choices[0].message,
        OPENAI_REPLY,
        OPENAI_REPLY["choices"][0]["message"],
    ]


@pytest.mark.parametrize("reply", anthropic_forms())
def test_anthropic_tool_use_blocks_become_calls_in_order(reply: object) -> None:
    """Every form of one Anthropic reply gives its tool_use blocks as calls; text passed over."""
    assert anthropic_tool_calls(reply) == [
        ToolCallRequest(id=f"toolu_{n}", name=name, arguments=arguments)
        for n, (name, arguments) in enumerate(CALLS, 1)
    ]


@pytest.mark.parametrize("reply", openai_forms())
def test_openai_tool_calls_become_calls_their_json_parsed(reply: object) -> None:
    """Every form of one OpenAI reply gives its function calls, arguments parsed, in order."""
    assert openai_tool_calls(reply) == [
        ToolCallRequest(id=f"call_{n}", name=name, arguments=arguments)
        for n, (name, arguments) in enumerate(CALLS, 1)
    ]


def test_a_reply_without_calls_gives_none() -> None:
    """Text only (or a message given as a string): no call, the model is done."""
    text_only = {**ANTHROPIC_REPLY, "content": [{"type": "text", "text": "Done."}]}
    assert anthropic_tool_calls(anthropic.types.Message.model_validate(text_only)) == []
    assert anthropic_tool_calls({"role": "assistant", "content": "Done."}) == []
    said = {"role": "assistant", "content": "Done.", "refusal": None}
    reply = {**OPENAI_REPLY, "choices": [{"index": 0, "finish_reason": "stop", "message": said}]}
    assert openai_tool_calls(openai.types.chat.ChatCompletion.model_validate(reply)) == []
    assert openai_tool_calls(said) == []


def test_responses_go_back_in_each_providers_shape() -> None:
    """Anthropic: a user message of tool_result blocks (is_error on failure); OpenAI: tool ones."""
    responses = [
        ToolCallResponse(id="c1", content="deployed api to staging", is_error=False),
        ToolCallResponse(id="c2", content="Tool input cancelled by user.", is_error=True),
    ]
    assert anthropic_tool_results(responses) == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "deployed api to staging"},
            {
                "type": "tool_result",
                "tool_use_id": "c2",
                "content": "Tool input cancelled by user.",
                "is_error": True,
            },
        ],
    }
    assert openai_tool_results(responses) == [
        {"role": "tool", "tool_call_id": "c1", "content": "deployed api to staging"},
        {"role": "tool", "tool_call_id": "c2", "content": "Tool input cancelled by user."},
    ]


def _openai_call(**change: Any) -> dict[str, Any]:
    call = {"id": "call_9", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}
    return {"role": "assistant", "tool_calls": [{**call, **change}]}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(
            _openai_call(function={"name": "deploy", "arguments": '{"service": "api"'}),
            "tool call 'call_9' (tool 'deploy'): its arguments are not JSON text",
            id="openai-json-cut-short",
        ),
        pytest.param(
            _openai_call(function={"name": "deploy", "arguments": '["api"]'}),
            "tool call 'call_9' (tool 'deploy'): its arguments are not a JSON object "
            "(got an array)",
            id="openai-array",
        ),
        pytest.param(
            _openai_call(type="custom", function=None, custom={"name": "x", "input": "y"}),
            "tool call 'call_9': it is a custom call, not a function call",
            id="openai-custom",
        ),
        pytest.param(
            [{"type": "tool_use", "id": "toolu_9", "name": "deploy", "input": "api"}],
            "tool call 'toolu_9' (tool 'deploy'): its arguments are not a JSON object "
            "(got a string)",
            id="anthropic-input-string",
        ),
        pytest.param(
            [{"type": "tool_use", "id": "", "name": "deploy", "input": {}}],
            "a tool call: its id is not a non-empty string",
            id="anthropic-no-id",
        ),
    ],
)
def test_a_call_that_cannot_be_read_is_refused_naming_it(reply: Any, message: str) -> None:
    """A malformed call: ToolCallShapeError naming the call, its tool and the fault."""
    read = anthropic_tool_calls if isinstance(reply, list) else openai_tool_calls
    with pytest.raises(ToolCallShapeError) as caught:
        read(reply)
    assert str(caught.value).startswith(message)
    assert caught.value.call_id == (None if "a tool call" in message else message.split("'")[1])
