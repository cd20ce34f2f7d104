"""What an inquiry sends, whatever the conversation holds, and how a failed request reads.

The view an inquiry is asked on is sanitized (on a copy) as before every
provider request, except for the calls still running; tool-call ids are
renamed per request; a reply the SDK could not make sense of, or one cut off
by the token limit, fails at once with a message naming the provider; no URL
credential is ever shown. Both providers run through their real SDKs against
the local fake API, which refuses what the real APIs refuse.
"""

from __future__ import annotations

import asyncio
import re
import socket
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import UNATTENDED, AskingTool, assistant_calls, executor, payloads
from fake_api import (
    BACKUP,
    KEY,
    PROVIDER_KITS,
    SYSTEM,
    TOOLS,
    FakeAPI,
    ProviderKit,
    Recorded,
    Reply,
    answer_args,
    anthropic_refusal,
    failure,
    make_task,
    openai_refusal,
    openai_tool_call,
    run_answer,
)

from coordinator import Conversation, EventEntry, ToolCoordinator
from coordinator.adapters.providers import ModelInquiryBackend, inquiry_request
from coordinator.driver._backend import BackendErrorKind, InquiryTask, inquiry_view
from coordinator.stream._stream import ConversationStream
from machines import (
    Answered,
    ChatRequest,
    ChatResponse,
    Question,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import INTERRUPTED

if TYPE_CHECKING:
    from collections.abc import Callable

    from machines import JsonValue

kits = pytest.mark.parametrize("kit", PROVIDER_KITS, ids=lambda kit: kit.name)

STILL_RUNNING = "Tool still running: its result is not available yet."


def answering(kit: ProviderKit) -> Callable[[Recorded], Reply]:
    """A fake model that answers every inquiry `true`, by the id it was asked about."""

    def respond(request: Recorded) -> Reply:
        inquiry_id = re.findall(r"inquiry_id `([^`]+)`", request.text())[-1]
        return kit.tool_call("answer_1", "answer_inquiry", answer_args("true", inquiry_id))

    return respond


def ask_in_the_current_turn(
    kit: ProviderKit, conversation: Conversation
) -> tuple[list[Answered], Recorded]:
    """Run an `edit` call that asks BACKUP, answered by the model; the answers and the request."""
    requests = assistant_calls(conversation, ("call_now", "edit"))
    with FakeAPI(answering(kit)) as api:

        async def scenario() -> None:
            async with ModelInquiryBackend(
                kit.adapter(api.base_url, KEY, max_retries=0), tools=TOOLS
            ) as backend:
                coordinator = ToolCoordinator(
                    conversation,
                    tools={"edit": executor(AskingTool([BACKUP]))},
                    config=UNATTENDED,
                    backend=backend,
                    system_parts=SYSTEM,
                )
                await coordinator.run(requests)

        asyncio.run(scenario())
    return payloads(conversation, Answered), api.requests[0]


def results_after_calls(kit: ProviderKit, body: str) -> dict[str, str]:
    """For each tool call sent, the content of the result in the message right after its own."""
    messages = kit.conversation(body)
    found: dict[str, str] = {}
    for index, raw in enumerate(messages):
        calls = [call_id for call_id, _, _ in kit.tool_calls_in(raw)]
        following = dict(kit.tool_results(messages[index + 1 : index + 1 + len(calls)]))
        for call_id in calls:
            found[call_id] = following.get(call_id, "<no result right after>")
    return found


# ------------------------------------------------------------ sanitizing the view


def crashed_earlier_turn() -> Conversation:
    """Turn 1's call was left open by a crash; turn 2 has begun."""
    conversation = Conversation.new(metadata={"title": "crashed"})
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="Tidy notes.txt."))
    stream.append(ChatResponse.message("On it."))
    stream.append(ToolCallRequest(id="call_crashed", name="lint", arguments={}))
    stream.append(TurnStart())
    stream.append(ChatRequest(content="Now edit README.md."))
    return conversation


@kits
def test_a_question_after_a_crashed_turn_is_answered_by_the_model(kit: ProviderKit) -> None:
    """An earlier turn's open call is closed where it stands, and the provider accepts the ask."""
    conversation = crashed_earlier_turn()
    answers, request = ask_in_the_current_turn(kit, conversation)
    assert [answer.answer for answer in answers] == [True]
    assert results_after_calls(kit, request.text()) == {
        "call_crashed": INTERRUPTED,
        "call_now": "Tool paused: Create backup files?",
    }
    # Sanitizing was done on a copy: the conversation still holds the open call.
    closed = [p.id for p in payloads(conversation, ToolCallResponse)]
    assert closed == ["call_now"]


@kits
def test_a_result_whose_call_is_gone_is_not_sent(kit: ProviderKit) -> None:
    """An orphan tool result in an earlier turn is left out, and the provider accepts the ask."""
    conversation = Conversation.new(metadata={"title": "orphan"})
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="Tidy notes.txt."))
    stream.append(ChatResponse.message("Done."))
    stream.append(ToolCallResponse(id="call_gone", content="stale", is_error=False))
    stream.append(TurnStart())
    stream.append(ChatRequest(content="Now edit README.md."))
    answers, request = ask_in_the_current_turn(kit, conversation)
    assert [answer.answer for answer in answers] == [True]
    assert "call_gone" not in request.text()
    assert "stale" not in request.text()


def test_the_view_leaves_the_running_calls_of_the_latest_response_open() -> None:
    """Only earlier calls are interrupted; the latest response's calls are paused or running."""
    stream = crashed_earlier_turn().stream
    stream.append(ToolCallRequest(id="call_slow", name="run_tests", arguments={}))
    stream.append(ChatResponse.reasoning("And the file."))
    stream.append(ToolCallRequest(id="call_now", name="fs_modify_file", arguments={}))
    stream.append(ToolCallRequest(id="call_done", name="fs_read_file", arguments={}))
    stream.append(ToolCallResponse(id="call_done", content="text", is_error=False))
    view = inquiry_view(stream, SYSTEM)
    task = InquiryTask(
        inquiry_id="call_now.backup.1",
        tool_call_id="call_now",
        tool_name="fs_modify_file",
        question=BACKUP,
        view=view,
    )
    events = inquiry_request(task, TOOLS).events
    assert view.system_parts == SYSTEM
    assert [e for e in events if isinstance(e, ToolCallResponse)] == [
        ToolCallResponse(id="call_crashed", content=INTERRUPTED, is_error=True),
        ToolCallResponse(id="call_done", content="text", is_error=False),
        ToolCallResponse(id="call_slow", content=STILL_RUNNING, is_error=False),
        ToolCallResponse(
            id="call_now", content="Tool paused: Create backup files?", is_error=False
        ),
    ]
    # The interrupted result sits right after its call, before turn 2's message.
    crashed = events.index(ToolCallRequest(id="call_crashed", name="lint", arguments={}))
    assert events[crashed + 1] == ToolCallResponse(
        id="call_crashed", content=INTERRUPTED, is_error=True
    )


def test_building_the_view_changes_nothing_in_the_stream() -> None:
    """The stream keeps its entries and its revision: sanitizing works on a copy."""
    stream = crashed_earlier_turn().stream
    stream.append(ToolCallRequest(id="call_now", name="fs_modify_file", arguments={}))
    before, revision = list(stream), stream.revision
    inquiry_view(stream)
    assert list(stream) == before
    assert stream.revision == revision


def test_a_plain_string_is_refused_as_system_parts() -> None:
    """A str would be split into one system part per character: refused, naming the parameter."""
    with pytest.raises(TypeError, match="system_parts"):
        ToolCoordinator(Conversation.new(), tools={}, system_parts="Be careful.")


# ----------------------------------------------------------------- call ids


def repeated_ids_stream() -> ConversationStream:
    """A turn whose provider reused a synthetic id, and whose next call's id has a dot."""
    stream = ConversationStream()
    stream.append(ChatRequest(content="Edit both files."))
    stream.append(ToolCallRequest(id="fs_modify_file_0", name="fs_modify_file", arguments={}))
    stream.append(ToolCallResponse(id="fs_modify_file_0", content="a done", is_error=False))
    stream.append(ToolCallRequest(id="fs_modify_file_0", name="fs_modify_file", arguments={}))
    stream.append(ToolCallResponse(id="fs_modify_file_0", content="b done", is_error=False))
    stream.append(ToolCallRequest(id="call.1", name="fs_modify_file", arguments={}))
    return stream


@kits
def test_repeated_and_odd_call_ids_are_sent_unique_and_paired(kit: ProviderKit) -> None:
    """Each call is sent under its own id, its result under the same one; the API accepts it."""
    view = repeated_ids_stream().provider_view(SYSTEM)
    task = InquiryTask(
        inquiry_id="call.1.backup.1",
        tool_call_id="call.1",
        tool_name="fs_modify_file",
        question=BACKUP,
        view=view,
    )
    with FakeAPI() as api:
        api.reply(
            kit.tool_call("answer_1", "answer_inquiry", answer_args("true", task.inquiry_id))
        )
        assert run_answer(kit, api.base_url, task, max_retries=0) is True
    body = api.requests[0].text()
    results = results_after_calls(kit, body)
    assert list(results.values()) == ["a done", "b done", "Tool paused: Create backup files?"]
    # Anthropic takes ^[a-zA-Z0-9_-]+$ only; OpenAI takes any id as it is.
    renamed = "call_1" if kit.name == "anthropic" else "call.1"
    assert list(results) == ["fs_modify_file_0", "fs_modify_file_0_2", renamed]
    # The inquiry id is not a call id: the model is asked for it as it is.
    assert "`call.1.backup.1`" in body


@kits
def test_renamed_ids_keep_the_turns_prefix(kit: ProviderKit) -> None:
    """A turn request and its inquiry rename the shared ids alike, so the cached prefix holds."""
    stream = repeated_ids_stream()
    *before, last = list(stream)
    stream.replace(before)  # the turn request is sent before the model makes its last call
    assert isinstance(last, EventEntry)
    with FakeAPI() as api:
        api.reply(
            kit.tool_call("call.1", "fs_modify_file", {}),
            kit.tool_call("answer_1", "answer_inquiry", answer_args("true", "call.1.backup.1")),
        )

        async def scenario() -> JsonValue:
            async with ModelInquiryBackend(
                kit.adapter(api.base_url, KEY, max_retries=0), tools=TOOLS
            ) as backend:
                reply = await backend.adapter.complete(
                    backend.turn_request(stream.provider_view(SYSTEM))
                )
                assert reply.events() == (last.payload,)
                stream.append(last.payload)
                task = InquiryTask(
                    inquiry_id="call.1.backup.1",
                    tool_call_id="call.1",
                    tool_name="fs_modify_file",
                    question=BACKUP,
                    view=stream.provider_view(SYSTEM),
                )
                return await backend.answer(task)

        assert asyncio.run(scenario()) is True
    turn, inquiry = (request.text() for request in api.requests)
    turn_messages = kit.conversation(turn)
    assert kit.conversation(inquiry)[: len(turn_messages)] == turn_messages


# ------------------------------------------------------------- odd replies


@kits
@pytest.mark.parametrize(
    "reply",
    [
        Reply(b"<html><body>Welcome to the proxy</body></html>", content_type="text/html"),
        Reply("Welcome to the proxy"),
        Reply(b"<html><body>Welcome</body></html>", content_type="application/json"),
    ],
    ids=["html page", "json string", "page said to be json"],
)
def test_a_reply_that_is_no_api_reply_is_a_provider_error(kit: ProviderKit, reply: Reply) -> None:
    """A 200 page from a wrong base_url fails as a provider error: the reply is unreadable."""
    with FakeAPI() as api:
        api.reply(reply)
        error = failure(kit, api.base_url, make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert f"{kit.name}: unreadable reply" in str(error)
    assert "base_url" in str(error)


@kits
def test_a_reply_cut_off_by_the_token_limit_fails_at_once(kit: ProviderKit) -> None:
    """A truncated reply is not retried as a bad answer: the error names the token limit."""
    if kit.name == "anthropic":
        cut = kit.tool_call("t1", "answer_inquiry", {})
        assert isinstance(cut.body, dict)
        cut = Reply({**cut.body, "stop_reason": "max_tokens"})
    else:
        cut = openai_tool_call("c1", "answer_inquiry", '{"inquiry_id": "call_1.backup.1", "ans')
        assert isinstance(cut.body, dict)
        choice = {**cut.body["choices"][0], "finish_reason": "length"}
        cut = Reply({**cut.body, "choices": [choice]})
    with FakeAPI() as api:
        api.reply(cut, cut, cut)
        error = failure(kit, api.base_url, make_task(), max_retries=0, max_tokens=64)
    assert len(api.requests) == 1
    assert error.kind is BackendErrorKind.PROVIDER
    assert f"{kit.name}: the reply was cut off at max_tokens=64" in str(error)


# ----------------------------------------------------------- error messages


@kits
def test_credentials_in_the_base_url_are_never_shown(kit: ProviderKit) -> None:
    """User name, password and query of base_url are in neither the repr nor the error."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://proxyuser:proxy-token-123@127.0.0.1:{port}"

    async def scenario() -> str:
        adapter = kit.adapter(base_url, KEY, max_retries=0)
        text = repr(adapter)
        await adapter.aclose()
        return text

    shown = asyncio.run(scenario())
    error = failure(kit, base_url, make_task(), max_retries=0)
    for text in (shown, str(error)):
        assert f"127.0.0.1:{port}" in text
        assert "proxy-token-123" not in text
        assert "proxyuser" not in text
    assert f"{kit.name}: could not connect to http://127.0.0.1:{port}" in str(error)


@kits
def test_an_unsupported_url_scheme_is_named(kit: ProviderKit) -> None:
    """A base_url the SDK cannot speak to says which scheme it has and which it needs."""
    error = failure(kit, "ftp://files.example", make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "the URL scheme 'ftp' is not supported" in str(error)
    assert "http:// or https://" in str(error)


@kits
def test_an_error_page_that_is_not_json_is_shown_shortened_and_redacted(
    kit: ProviderKit,
) -> None:
    """The server's own text is shown, cut to a bounded length, the key redacted before the cut."""
    page = "<html><body>Bad Gateway" + " padding" * 30 + f" key={KEY}" + " more" * 200
    with FakeAPI() as api:
        api.reply(Reply(page.encode(), 400, content_type="text/html"))
        error = failure(kit, api.base_url, make_task(), max_retries=0)
    text = str(error)
    assert f"{kit.name}: HTTP 400: <html><body>Bad Gateway padding" in text
    assert "key=<redacted>" in text
    assert KEY[:12] not in text
    assert text.endswith("...")
    assert len(text) < 500


@kits
def test_a_key_is_never_left_half_shown_by_the_cut(kit: ProviderKit) -> None:
    """A key straddling the cut is redacted whole first, so no prefix of it remains."""
    page = "x" * 290 + KEY
    with FakeAPI() as api:
        api.reply(Reply(page.encode(), 400, content_type="text/plain"))
        error = failure(kit, api.base_url, make_task(), max_retries=0)
    assert KEY[:8] not in str(error)


def test_the_view_of_a_question_of_a_plain_turn_is_the_provider_view() -> None:
    """With nothing to repair, the inquiry view is the provider view."""
    stream = ConversationStream()
    stream.append(TurnStart())
    stream.append(ChatRequest(content="Rename the project."))
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    assert inquiry_view(stream, SYSTEM) == stream.provider_view(SYSTEM)


def test_a_question_with_no_open_call_in_the_latest_response_is_refused() -> None:
    """An earlier call open in a hand-made view is not the running one: nothing is sent."""
    stream = ConversationStream()
    stream.append(ChatRequest(content="First."))
    stream.append(ToolCallRequest(id="call_1", name="fs_modify_file", arguments={}))
    stream.append(ChatRequest(content="Second."))
    task = make_task(Question.boolean("backup", "Backup?"), stream.provider_view(SYSTEM))
    with FakeAPI() as api:
        error = failure(PROVIDER_KITS[0], api.base_url, task)
    assert error.kind is BackendErrorKind.OTHER
    assert api.requests == []


# -------------------------------------------------------- the fake's refusals

CALL = {"type": "tool_use", "id": "c1", "name": "t", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "c1", "content": "ok"}


@pytest.mark.parametrize(
    ("messages", "refused"),
    [
        ([{"role": "user", "content": " "}], "non-whitespace text"),
        (
            [{"role": "assistant", "content": [CALL]}, {"role": "user", "content": "hi"}],
            "without `tool_result`",
        ),
        ([{"role": "user", "content": [RESULT]}], "unexpected `tool_use_id`"),
        (
            [
                {"role": "assistant", "content": [CALL, CALL]},
                {"role": "user", "content": [RESULT, RESULT]},
            ],
            "must be unique",
        ),
        (
            [
                {"role": "assistant", "content": [{**CALL, "id": "c.1"}]},
                {"role": "user", "content": [{**RESULT, "tool_use_id": "c.1"}]},
            ],
            "should match pattern",
        ),
        (
            [
                {"role": "assistant", "content": [CALL]},
                {"role": "user", "content": [{**RESULT, "content": "", "is_error": True}]},
            ],
            "cannot be empty",
        ),
    ],
)
def test_the_fake_refuses_what_the_messages_api_refuses(
    messages: list[dict[str, object]], refused: str
) -> None:
    """The fake answers 400 where the Messages API does, so tests see what users would."""
    assert refused in (anthropic_refusal({"messages": messages}) or "")


@pytest.mark.parametrize(
    ("messages", "refused"),
    [
        (
            [
                {"role": "assistant", "tool_calls": [{"id": "a"}]},
                {"role": "assistant", "tool_calls": [{"id": "b"}]},
                {"role": "tool", "tool_call_id": "a", "content": ""},
            ],
            "must be followed by tool messages",
        ),
        ([{"role": "tool", "tool_call_id": "a", "content": ""}], "must be a response"),
        ([{"role": "assistant", "tool_calls": [{"id": "x" * 41}]}], "string too long"),
    ],
)
def test_the_fake_refuses_what_chat_completions_refuses(
    messages: list[dict[str, object]], refused: str
) -> None:
    """The fake answers 400 where Chat Completions does."""
    assert refused in (openai_refusal({"messages": messages}) or "")
