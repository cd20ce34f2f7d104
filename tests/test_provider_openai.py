"""The OpenAI adapter: what goes over the wire to Chat Completions, and back.

The official SDK sends to a local fake API; the tests read the request bodies
it received, as the real API would.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import pytest
from fake_api import (
    CALL_ID,
    INQUIRY_ID,
    KEY,
    OPENAI,
    SYSTEM,
    TOOLS,
    FakeAPI,
    Reply,
    answer_args,
    failure,
    make_task,
    openai_completion,
    openai_text,
    openai_tool_call,
    run_answer,
)

from coordinator.adapters.providers import (
    ModelReply,
    ModelRequest,
    OpenAIAdapter,
    ProviderConfigError,
    ReplyToolCall,
    turn_tools,
)
from coordinator.driver._backend import BackendErrorKind
from machines import (
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    ToolCallRequest,
    ToolCallResponse,
)

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
        adapter = OpenAIAdapter(
            model="gpt-test",
            api_key=KEY,
            base_url=api.base_url + "/v1",
            max_retries=0,
            **settings,
        )
        try:
            return await adapter.complete(request)
        finally:
            await adapter.aclose()

    return asyncio.run(scenario())


def test_the_inquiry_request_body(api: FakeAPI) -> None:
    """System first, strict function tools, forced choice, paused tool message and question."""
    api.reply(openai_tool_call("call_a", "answer_inquiry", answer_args("false")))
    assert run_answer(OPENAI, api.base_url, make_task()) is False
    body = api.requests[0].json()
    assert body["model"] == "gpt-test"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "answer_inquiry"}}
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        "fs_modify_file",
        "answer_inquiry",
    ]
    answer_inquiry = body["tools"][1]
    assert answer_inquiry["type"] == "function"
    assert answer_inquiry["function"]["strict"] is True
    assert answer_inquiry["function"]["parameters"]["additionalProperties"] is False
    assert answer_inquiry["function"]["parameters"]["required"] == ["inquiry_id", "answer"]
    assert body["tools"][0]["function"]["strict"] is False
    system, user, assistant, paused, question = body["messages"]
    assert system == {"role": "system", "content": "\n\n".join(SYSTEM)}
    assert user == {"role": "user", "content": "Rename the project in README.md."}
    assert assistant["role"] == "assistant"
    assert "content" not in assistant
    [call] = assistant["tool_calls"]
    assert call["id"] == CALL_ID
    assert call["type"] == "function"
    assert call["function"]["name"] == "fs_modify_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "README.md", "pattern": "demo"}
    assert paused == {
        "role": "tool",
        "tool_call_id": CALL_ID,
        "content": "Tool paused: Create backup files?",
    }
    assert question["role"] == "user"
    assert "The tool `fs_modify_file` requires additional input." in question["content"]
    assert "Answer exactly `true` or `false`." in question["content"]
    assert f"`{INQUIRY_ID}`" in question["content"]
    assert "max_completion_tokens" not in body


def test_a_normal_request_lets_the_model_choose(api: FakeAPI) -> None:
    """A turn request carries the same tools with tool choice auto."""
    api.reply(openai_text("Done."))
    reply = send(
        api,
        ModelRequest(
            system_parts=SYSTEM, events=(ChatRequest(content="hi"),), tools=turn_tools(TOOLS)
        ),
    )
    assert reply == ModelReply(text="Done.")
    assert api.requests[0].json()["tool_choice"] == "auto"


def test_without_tools_or_system_nothing_of_them_is_sent(api: FakeAPI) -> None:
    """No tools means no tools and no tool_choice; no system parts, no system message."""
    api.reply(openai_text("Hello."))
    send(api, ModelRequest(system_parts=("",), events=(ChatRequest(content="hi"),), tools=()))
    body = api.requests[0].json()
    assert "tools" not in body
    assert "tool_choice" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_events_become_chat_messages(api: FakeAPI) -> None:
    """Reasoning is dropped, data is JSON text, text and calls share one assistant message."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Check both files."),
        ChatResponse.reasoning("I should read them."),
        ChatResponse.message("Reading."),
        ToolCallRequest(id="t1", name="fs_read_file", arguments={"path": "a"}),
        ToolCallRequest(id="t2", name="fs_read_file", arguments={"path": "b"}),
        ToolCallResponse(id="t1", content="alpha", is_error=False),
        ToolCallResponse(id="t2", content="no such file", is_error=True),
        ChatResponse.data({"files": 1}),
        ChatResponse.message("Done."),
    )
    api.reply(openai_text("ok"))
    send(api, ModelRequest(system_parts=SYSTEM, events=events, tools=turn_tools(TOOLS)))
    assert api.requests[0].json()["messages"][1:] == [
        {"role": "user", "content": "Check both files."},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "fs_read_file", "arguments": '{"path":"a"}'},
                },
                {
                    "id": "t2",
                    "type": "function",
                    "function": {"name": "fs_read_file", "arguments": '{"path":"b"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "alpha"},
        {"role": "tool", "tool_call_id": "t2", "content": "no such file"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": '{"files":1}'},
                {"type": "text", "text": "Done."},
            ],
        },
    ]


def test_arguments_that_are_not_json_are_rejected_and_retried(api: FakeAPI) -> None:
    """Unparseable arguments are an extraction error fed back; the retry's answer is used."""
    api.reply(
        openai_tool_call("call_a", "answer_inquiry", '{"inquiry_id": "call_1.backup.1", "ans'),
        openai_tool_call("call_b", "answer_inquiry", answer_args("true")),
    )
    assert run_answer(OPENAI, api.base_url, make_task()) is True
    messages = api.requests[1].json()["messages"]
    assert messages[-3]["tool_calls"][0]["id"] == "call_a"
    assert messages[-2] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "Rejected: the arguments were not a JSON object.",
    }
    assert messages[-1]["role"] == "user"
    assert "the arguments were not a JSON object" in messages[-1]["content"]


def test_every_tool_call_of_a_rejected_reply_gets_a_tool_message(api: FakeAPI) -> None:
    """Each call of a rejected reply is answered by a tool message before the feedback."""
    api.reply(
        openai_completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {
                            "name": "answer_inquiry",
                            "arguments": json.dumps(answer_args("nope")),
                        },
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "fs_read_file", "arguments": "{}"},
                    },
                ],
            },
            "tool_calls",
        ),
        openai_tool_call("call_c", "answer_inquiry", answer_args("false")),
    )
    assert run_answer(OPENAI, api.base_url, make_task()) is False
    messages = api.requests[1].json()["messages"]
    assert [call["id"] for call in messages[-4]["tool_calls"]] == ["call_a", "call_b"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages[-3:]] == [
        ("tool", "call_a"),
        ("tool", "call_b"),
        ("user", None),
    ]


def test_a_refusal_is_a_provider_error(api: FakeAPI) -> None:
    """A refusal fails the inquiry as a provider error."""
    api.reply(openai_completion({"role": "assistant", "content": None, "refusal": "I can't."}))
    error = failure(OPENAI, api.base_url, make_task())
    assert error.kind is BackendErrorKind.PROVIDER
    assert "refused" in str(error)


def test_a_filtered_reply_is_a_provider_error(api: FakeAPI) -> None:
    """A content_filter finish fails the inquiry as a provider error."""
    api.reply(openai_completion({"role": "assistant", "content": ""}, "content_filter"))
    error = failure(OPENAI, api.base_url, make_task())
    assert error.kind is BackendErrorKind.PROVIDER
    assert "content filter" in str(error)


def test_a_reply_without_choices_is_a_provider_error(api: FakeAPI) -> None:
    """A completion with no choices fails the inquiry as a provider error."""
    reply = openai_text("unused")
    assert isinstance(reply.body, dict)
    api.reply(type(reply)({**reply.body, "choices": []}))
    error = failure(OPENAI, api.base_url, make_task())
    assert error.kind is BackendErrorKind.PROVIDER
    assert "no choices" in str(error)


def test_max_tokens_is_sent_as_max_completion_tokens(api: FakeAPI) -> None:
    """A configured token limit is sent as max_completion_tokens."""
    api.reply(openai_text("ok"))
    send(
        api,
        ModelRequest(system_parts=(), events=(ChatRequest(content="hi"),), tools=()),
        max_tokens=64,
    )
    assert api.requests[0].json()["max_completion_tokens"] == 64


def test_tool_call_arguments_come_back_as_objects(api: FakeAPI) -> None:
    """A function call's JSON arguments are the reply tool call's arguments."""
    api.reply(openai_tool_call("call_9", "fs_modify_file", {"path": "x", "n": [1, 2]}))
    reply = send(
        api, ModelRequest(system_parts=(), events=(ChatRequest(content="go"),), tools=TOOLS)
    )
    assert reply.tool_calls == (
        ReplyToolCall(id="call_9", name="fs_modify_file", arguments={"path": "x", "n": [1, 2]}),
    )


def test_the_key_comes_from_the_environment(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit key, OPENAI_API_KEY is sent."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    api.reply(openai_text("ok"))

    async def scenario() -> None:
        adapter = OpenAIAdapter(model="gpt-test", base_url=api.base_url + "/v1", max_retries=0)
        await adapter.complete(
            ModelRequest(system_parts=(), events=(ChatRequest(content="hi"),), tools=())
        )
        await adapter.aclose()

    asyncio.run(scenario())
    headers = api.requests[0].headers.values()
    assert any("sk-from-the-environment" in value for value in headers)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no key anywhere, the error names the environment variable to set."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        OpenAIAdapter(model="gpt-test")


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the openai package, making an adapter says which extra to install."""
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ProviderConfigError, match=r"inquiry-coordinator\[openai\]"):
        OpenAIAdapter(model="gpt-test", api_key=KEY)


@pytest.mark.parametrize(
    "between",
    [ChatResponse.reasoning("Now the second file."), ChatResponse.message("And b.txt too.")],
    ids=["reasoning", "message"],
)
def test_text_between_calls_keeps_one_assistant_message(
    api: FakeAPI, between: ChatResponse
) -> None:
    """Both calls of one response share its assistant message; their tool messages follow it."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Fix a.txt and b.txt"),
        ToolCallRequest(id="call_a", name="fs_modify_file", arguments={"path": "a.txt"}),
        between,
        ToolCallRequest(id="call_b", name="fs_modify_file", arguments={"path": "b.txt"}),
        ToolCallResponse(id="call_a", content="ok a", is_error=False),
        ToolCallResponse(id="call_b", content="ok b", is_error=False),
    )
    api.reply(openai_text("ok"))
    send(api, ModelRequest(system_parts=(), events=events, tools=TOOLS))
    user, assistant, *tools = api.requests[0].json()["messages"]
    assert user == {"role": "user", "content": "Fix a.txt and b.txt"}
    assert assistant["role"] == "assistant"
    assert [call["id"] for call in assistant["tool_calls"]] == ["call_a", "call_b"]
    said = None if between.kind is ChatResponseKind.REASONING else "And b.txt too."
    assert assistant.get("content") == said
    assert tools == [
        {"role": "tool", "tool_call_id": "call_a", "content": "ok a"},
        {"role": "tool", "tool_call_id": "call_b", "content": "ok b"},
    ]


def test_an_error_result_without_output_says_so(api: FakeAPI) -> None:
    """The API has no error flag: an empty error result is sent as words saying it failed."""
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Run it."),
        ToolCallRequest(id="c1", name="lint", arguments={}),
        ToolCallRequest(id="c2", name="lint", arguments={}),
        ToolCallResponse(id="c1", content="", is_error=True),
        ToolCallResponse(id="c2", content="", is_error=False),
    )
    api.reply(openai_text("ok"))
    send(api, ModelRequest(system_parts=(), events=events, tools=TOOLS))
    assert api.requests[0].json()["messages"][2:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "The tool failed without giving any output.",
        },
        {"role": "tool", "tool_call_id": "c2", "content": ""},
    ]


def test_call_ids_are_unique_and_within_40_characters(api: FakeAPI) -> None:
    """A repeated id and one longer than the API takes are renamed; results follow their call."""
    long_id = "toolu_" + "x" * 50
    events: tuple[ProviderEvent, ...] = (
        ChatRequest(content="Edit."),
        ToolCallRequest(id="fs_modify_file_0", name="fs_modify_file", arguments={}),
        ToolCallRequest(id="fs_modify_file_0", name="fs_modify_file", arguments={}),
        ToolCallRequest(id=long_id, name="fs_modify_file", arguments={}),
        ToolCallResponse(id="fs_modify_file_0", content="first", is_error=False),
        ToolCallResponse(id="fs_modify_file_0", content="second", is_error=False),
        ToolCallResponse(id=long_id, content="third", is_error=False),
    )
    api.reply(openai_text("ok"))
    send(api, ModelRequest(system_parts=(), events=events, tools=TOOLS))
    _, assistant, *tools = api.requests[0].json()["messages"]
    ids = [call["id"] for call in assistant["tool_calls"]]
    assert ids == ["fs_modify_file_0", "fs_modify_file_0_2", long_id[:40]]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        (ids[0], "first"),
        (ids[1], "second"),
        (ids[2], "third"),
    ]


def test_a_choice_without_a_message_is_a_provider_error(api: FakeAPI) -> None:
    """A choice whose message is null fails as a provider error, not an AttributeError."""
    reply = openai_text("unused")
    assert isinstance(reply.body, dict)
    choice = {"index": 0, "message": None, "finish_reason": "stop"}
    api.reply(Reply({**reply.body, "choices": [choice]}))
    error = failure(OPENAI, api.base_url, make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "openai: unreadable reply: its choice has no message" in str(error)


def test_an_error_given_as_a_string_is_shown(api: FakeAPI) -> None:
    """A server whose `error` is a plain string is quoted, not reported as saying nothing."""
    api.reply(Reply({"error": "model not found"}, 404))
    error = failure(OPENAI, api.base_url, make_task(), max_retries=0)
    assert "openai: HTTP 404: model not found" in str(error)


def test_a_cut_off_reply_without_max_tokens_names_the_models_limit(api: FakeAPI) -> None:
    """With no max_tokens set, a `length` finish says the model's own limit cut it off."""
    api.reply(openai_completion({"role": "assistant", "content": "partial"}, "length"))
    error = failure(OPENAI, api.base_url, make_task(), max_retries=0)
    assert "the reply was cut off at the model's own limit (max_tokens is not set)" in str(error)
    assert len(api.requests) == 1
