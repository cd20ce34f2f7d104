"""The Anthropic adapter: what goes over the wire to the Messages API, and back.

The official SDK sends to a local fake API; the tests read the request bodies
it received, as the real API would.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import pytest
from fake_api import (
    ANTHROPIC,
    CALL_ID,
    INQUIRY_ID,
    KEY,
    SYSTEM,
    TOOLS,
    FakeAPI,
    Reply,
    answer_args,
    anthropic_message,
    anthropic_tool_use,
    failure,
    make_task,
    run_answer,
)

from coordinator.adapters.providers import (
    AnthropicAdapter,
    ModelReply,
    ModelRequest,
    ProviderConfigError,
    ReplyToolCall,
    ToolChoice,
    turn_tools,
)
from coordinator.driver._backend import BackendErrorKind
from machines import ChatRequest, ChatResponse, ToolCallRequest, ToolCallResponse

if TYPE_CHECKING:
    from collections.abc import Iterator

    from coordinator.adapters.providers import ProviderEvent


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    """A running fake API server."""
    with FakeAPI() as server:
        yield server


def send(api: FakeAPI, request: ModelRequest, **settings: Any) -> ModelReply:
    """Send ``request`` through a fresh adapter and return the reply."""

    async def scenario() -> ModelReply:
        adapter = AnthropicAdapter(
            model="claude-test", api_key=KEY, base_url=api.base_url, max_retries=0, **settings
        )
        try:
            return await adapter.complete(request)
        finally:
            await adapter.aclose()

    return asyncio.run(scenario())


def test_the_inquiry_request_body() -> None:
    """System blocks, strict answer_inquiry, forced choice, paused result and question, as sent."""
    with FakeAPI() as api:
        api.reply(anthropic_tool_use("toolu_1", "answer_inquiry", answer_args("true")))
        assert run_answer(ANTHROPIC, api.base_url, make_task()) is True
    body = api.requests[0].json()
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 4096
    assert body["system"] == [{"type": "text", "text": part} for part in SYSTEM]
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "answer_inquiry",
        "disable_parallel_tool_use": True,
    }
    assert body["cache_control"] == {"type": "ephemeral"}
    assert [tool["name"] for tool in body["tools"]] == ["fs_modify_file", "answer_inquiry"]
    answer_inquiry = body["tools"][1]
    assert list(answer_inquiry) == ["name", "description", "strict", "input_schema"]
    assert answer_inquiry["strict"] is True
    assert answer_inquiry["input_schema"]["additionalProperties"] is False
    assert answer_inquiry["input_schema"]["required"] == ["inquiry_id", "answer"]
    assert "strict" not in body["tools"][0]
    user, assistant, asking = body["messages"]
    assert user == {
        "role": "user",
        "content": [{"type": "text", "text": "Rename the project in README.md."}],
    }
    assert assistant == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": CALL_ID,
                "name": "fs_modify_file",
                "input": {"path": "README.md", "pattern": "demo"},
            }
        ],
    }
    assert asking["role"] == "user"
    paused, question = asking["content"]
    assert paused == {
        "type": "tool_result",
        "tool_use_id": CALL_ID,
        "content": "Tool paused: Create backup files?",
        "is_error": False,
    }
    assert question["type"] == "text"
    assert "The tool `fs_modify_file` requires additional input." in question["text"]
    assert "Create backup files?" in question["text"]
    assert "Answer exactly `true` or `false`." in question["text"]
    assert f"`{INQUIRY_ID}`" in question["text"]


def test_a_normal_request_lets_the_model_choose(api: FakeAPI) -> None:
    """A turn request carries the same tools with tool choice auto."""
    api.reply(anthropic_message([{"type": "text", "text": "Done."}]))
    request = ModelRequest(
        system_parts=SYSTEM,
        events=(ChatRequest(content="hi"),),
        tools=turn_tools(TOOLS),
        tool_choice=ToolChoice.auto(),
    )
    reply = send(api, request)
    assert reply == ModelReply(text="Done.")
    assert api.requests[0].json()["tool_choice"] == {"type": "auto"}


def test_without_tools_or_system_nothing_of_them_is_sent(api: FakeAPI) -> None:
    """No tools means no tools and no tool_choice field; no system parts, no system field."""
    api.reply(anthropic_message([{"type": "text", "text": "Hello."}]))
    send(api, ModelRequest(system_parts=(), events=(ChatRequest(content="hi"),), tools=()))
    body = api.requests[0].json()
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "system" not in body


def test_events_become_blocks_in_alternating_messages(api: FakeAPI) -> None:
    """Reasoning is dropped, data is JSON text, errors are marked, and results lead user turns."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Check both files."),
        ChatResponse.reasoning("I should read them."),
        ChatResponse.message("Reading."),
        ToolCallRequest(id="t1", name="fs_read_file", arguments={"path": "a"}),
        ToolCallRequest(id="t2", name="fs_read_file", arguments={"path": "b"}),
        ToolCallResponse(id="t1", content="alpha", is_error=False),
        ChatRequest(content="Also, hurry."),
        ToolCallResponse(id="t2", content="no such file", is_error=True),
        ChatResponse.data({"files": 1, "ok": False}),
        ChatRequest(content=""),
        ChatRequest(content="Thanks."),
    )
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))
    send(api, ModelRequest(system_parts=SYSTEM, events=events, tools=turn_tools(TOOLS)))
    assert api.requests[0].json()["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Check both files."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "t1", "name": "fs_read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "fs_read_file", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "alpha",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "no such file",
                    "is_error": True,
                },
                {"type": "text", "text": "Also, hurry."},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": '{"files":1,"ok":false}'}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks."}]},
    ]


def test_a_retry_answers_every_tool_use_of_the_rejected_reply(api: FakeAPI) -> None:
    """Each tool_use of a rejected reply gets a tool_result, ahead of the feedback text."""
    api.reply(
        anthropic_message(
            [
                {"type": "text", "text": "Answering."},
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "answer_inquiry",
                    "input": answer_args("perhaps"),
                },
                {"type": "tool_use", "id": "toolu_b", "name": "fs_read_file", "input": {}},
            ],
            "tool_use",
        ),
        anthropic_tool_use("toolu_c", "answer_inquiry", answer_args("false")),
    )
    assert run_answer(ANTHROPIC, api.base_url, make_task()) is False
    messages = api.requests[1].json()["messages"]
    assert messages[-2] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Answering."},
            {
                "type": "tool_use",
                "id": "toolu_a",
                "name": "answer_inquiry",
                "input": answer_args("perhaps"),
            },
            {"type": "tool_use", "id": "toolu_b", "name": "fs_read_file", "input": {}},
        ],
    }
    results, feedback = messages[-1]["content"][:2], messages[-1]["content"][2:]
    assert [(block["tool_use_id"], block["is_error"]) for block in results] == [
        ("toolu_a", True),
        ("toolu_b", True),
    ]
    assert "invalid answer 'perhaps'" in results[0]["content"]
    assert [block["type"] for block in feedback] == ["text"]
    assert "was rejected" in feedback[0]["text"]
    # Every tool_use is answered in the very next message (the API's rule).
    for index, message in enumerate(messages):
        uses = {b["id"] for b in message["content"] if b["type"] == "tool_use"}
        if uses:
            following = messages[index + 1]["content"]
            answered = {b["tool_use_id"] for b in following if b["type"] == "tool_result"}
            assert answered == uses


def test_a_refusal_is_a_provider_error(api: FakeAPI) -> None:
    """A reply that stops for refusal fails the inquiry as a provider error."""
    api.reply(anthropic_message([], "refusal"))
    error = failure(ANTHROPIC, api.base_url, make_task())
    assert error.kind is BackendErrorKind.PROVIDER
    assert "refused" in str(error)


def test_the_cache_marker_can_be_turned_off(api: FakeAPI) -> None:
    """With prompt_cache=False no top-level cache_control is sent."""
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))
    send(
        api,
        ModelRequest(system_parts=SYSTEM, events=(ChatRequest(content="hi"),), tools=()),
        prompt_cache=False,
    )
    assert "cache_control" not in api.requests[0].json()


def test_tool_call_arguments_come_back_as_objects(api: FakeAPI) -> None:
    """A tool_use block's input is the reply tool call's arguments."""
    api.reply(anthropic_tool_use("toolu_9", "fs_modify_file", {"path": "x", "n": [1, 2]}))
    reply = send(
        api, ModelRequest(system_parts=(), events=(ChatRequest(content="go"),), tools=TOOLS)
    )
    assert reply.tool_calls == (
        ReplyToolCall(id="toolu_9", name="fs_modify_file", arguments={"path": "x", "n": [1, 2]}),
    )


def test_the_key_comes_from_the_environment(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit key, ANTHROPIC_API_KEY is sent."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-the-environment")
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))

    async def scenario() -> None:
        adapter = AnthropicAdapter(model="claude-test", base_url=api.base_url, max_retries=0)
        await adapter.complete(
            ModelRequest(system_parts=(), events=(ChatRequest(content="hi"),), tools=())
        )
        await adapter.aclose()

    asyncio.run(scenario())
    headers = api.requests[0].headers.values()
    assert any("sk-from-the-environment" in value for value in headers)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no key anywhere, the error names the environment variable to set."""
    monkeypatch.delenv("MY_ANTHROPIC_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="MY_ANTHROPIC_KEY"):
        AnthropicAdapter(model="claude-test", api_key_env="MY_ANTHROPIC_KEY")


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the anthropic package, making an adapter says which extra to install."""
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ProviderConfigError, match=r"inquiry-coordinator\[anthropic\]"):
        AnthropicAdapter(model="claude-test", api_key=KEY)


def test_the_adapter_repr_hides_the_key() -> None:
    """The adapter's repr shows the model and the endpoint, never the key."""

    async def scenario() -> str:
        adapter = AnthropicAdapter(model="claude-test", api_key=KEY, base_url="http://127.0.0.1:9")
        text = repr(adapter)
        await adapter.aclose()
        return text

    text = asyncio.run(scenario())
    assert "claude-test" in text
    assert KEY not in text


def test_text_that_is_only_whitespace_is_not_sent(api: FakeAPI) -> None:
    """Blank system parts and blank messages are left out: the API refuses blank text blocks."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Fix a.txt"),
        ChatResponse.message("\n\n"),
        ToolCallRequest(id="c1", name="fs_modify_file", arguments={}),
        ToolCallResponse(id="c1", content="ok", is_error=False),
        ChatResponse.message(" "),
        ChatRequest(content="  "),
        ChatRequest(content="Thanks."),
    )
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))
    send(api, ModelRequest(system_parts=("Be careful.", "\n"), events=events, tools=TOOLS))
    body = api.requests[0].json()
    assert body["system"] == [{"type": "text", "text": "Be careful."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix a.txt"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "fs_modify_file", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "ok", "is_error": False},
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]


def test_an_error_result_without_output_says_so(api: FakeAPI) -> None:
    """An empty error result is sent with words saying the tool failed: the API wants content."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Run both."),
        ToolCallRequest(id="c1", name="lint", arguments={}),
        ToolCallRequest(id="c2", name="lint", arguments={}),
        ToolCallRequest(id="c3", name="lint", arguments={}),
        ToolCallResponse(id="c1", content="", is_error=True),
        ToolCallResponse(id="c2", content=" \n", is_error=False),
        ToolCallResponse(id="c3", content="", is_error=False),
        ChatRequest(content="Go on."),
    )
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))
    send(api, ModelRequest(system_parts=(), events=events, tools=TOOLS))
    results = api.requests[0].json()["messages"][2]["content"][:3]
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": "The tool failed without giving any output.",
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "c2", "is_error": False},
        {"type": "tool_result", "tool_use_id": "c3", "is_error": False},
    ]


def test_call_ids_are_renamed_to_the_apis_pattern_without_clashing(api: FakeAPI) -> None:
    """`call.1` becomes `call_1`, and the real `call_1` after it `call_1_2`; results follow."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Edit."),
        ToolCallRequest(id="call.1", name="fs_modify_file", arguments={}),
        ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}),
        ToolCallResponse(id="call_1", content="second", is_error=False),
        ToolCallResponse(id="call.1", content="first", is_error=False),
    )
    api.reply(anthropic_message([{"type": "text", "text": "ok"}]))
    send(api, ModelRequest(system_parts=(), events=events, tools=TOOLS))
    _, calls, results = api.requests[0].json()["messages"]
    assert [block["id"] for block in calls["content"]] == ["call_1", "call_1_2"]
    assert [(b["tool_use_id"], b["content"]) for b in results["content"]] == [
        ("call_1_2", "second"),
        ("call_1", "first"),
    ]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": None,
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    ],
    ids=["empty object", "content null"],
)
def test_a_reply_of_another_shape_is_a_provider_error(api: FakeAPI, body: object) -> None:
    """JSON that is no Messages API message fails as a provider error, not a TypeError."""
    api.reply(Reply(body))
    error = failure(ANTHROPIC, api.base_url, make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "anthropic: unreadable reply: the message has no content list" in str(error)


def test_a_max_tokens_the_sdk_will_not_send_is_a_provider_error(api: FakeAPI) -> None:
    """The SDK's refusal to send a long non-streaming request is a provider error naming it."""
    error = failure(ANTHROPIC, api.base_url, make_task(), max_retries=0, max_tokens=64000)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "anthropic: the SDK refused to send the request (max_tokens=64000)" in str(error)
    assert "Streaming is required" in str(error)
    assert api.requests == []


def test_a_full_context_window_cuts_the_reply_off(api: FakeAPI) -> None:
    """A reply stopped because the context window is full fails at once, saying so."""
    api.reply(anthropic_message([], "model_context_window_exceeded"))
    error = failure(ANTHROPIC, api.base_url, make_task(), max_retries=0)
    assert "the reply was cut off: the model's context window is full" in str(error)
    assert len(api.requests) == 1
