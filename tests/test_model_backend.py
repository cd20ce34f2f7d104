"""The model inquiry backend against both real SDKs and a local fake API.

Every scenario runs for Anthropic and for OpenAI: the official SDK sends real
HTTP to a server on 127.0.0.1 that records the bodies and plays the replies
the test scripts. What is checked is what a user could see: the answer or the
error kind, and what went over the wire.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from fake_api import (
    BACKUP,
    CALL_ID,
    INQUIRY_ID,
    KEY,
    PROVIDER_KITS,
    SYSTEM,
    TOOLS,
    FakeAPI,
    ProviderKit,
    Recorded,
    Reply,
    answer_args,
    asking_view,
    failure,
    make_task,
    raw_members,
    run_answer,
)

from coordinator.adapters.providers import ModelInquiryBackend
from coordinator.driver._backend import BackendErrorKind, InquiryBackend, InquiryTask
from coordinator.stream._entries import EventEntry
from coordinator.stream._stream import ConversationStream, ProviderView
from coordinator.stream._timestamps import Timestamp
from machines import (
    ChatRequest,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(params=PROVIDER_KITS, ids=lambda kit: kit.name)
def kit(request: pytest.FixtureRequest) -> ProviderKit:
    """Each provider in turn."""
    value: ProviderKit = request.param
    return value


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    """A running fake API server."""
    with FakeAPI() as server:
        yield server


def test_the_backend_is_an_inquiry_backend(kit: ProviderKit, api: FakeAPI) -> None:
    """ModelInquiryBackend type-checks as an InquiryBackend, and making one sends nothing."""

    async def scenario() -> None:
        backend: InquiryBackend = ModelInquiryBackend(kit.adapter(api.base_url, KEY), tools=TOOLS)
        assert isinstance(backend, ModelInquiryBackend)
        await backend.aclose()

    asyncio.run(scenario())
    assert api.requests == []


@pytest.mark.parametrize(
    ("question", "sent", "expected"),
    [
        (BACKUP, "true", True),
        (BACKUP, "FALSE", False),
        (Question.select("mode", "Which mode?", ["fast", "safe"]), "safe", "safe"),
        (Question.text_input("name", "New name?"), "  Demo Two  ", "  Demo Two  "),
    ],
    ids=["boolean-true", "boolean-upper-false", "select", "text"],
)
def test_a_good_answer_is_returned(
    kit: ProviderKit, api: FakeAPI, question: Question, sent: str, expected: JsonValue
) -> None:
    """A well-formed answer_inquiry call yields the parsed answer after one request."""
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args(sent)))
    assert run_answer(kit, api.base_url, make_task(question)) == expected
    assert len(api.requests) == 1
    assert api.requests[0].path == kit.path


def test_the_inquiry_request_forces_answer_inquiry(kit: ProviderKit, api: FakeAPI) -> None:
    """The inquiry request sets the provider's tool choice to answer_inquiry."""
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args("true")))
    run_answer(kit, api.base_url, make_task())
    assert api.requests[0].json()["tool_choice"] == kit.forced_choice


def test_a_malformed_answer_is_retried_with_feedback(kit: ProviderKit, api: FakeAPI) -> None:
    """A bad answer is fed back as a user message and the model's second answer is used."""
    api.reply(
        kit.tool_call("answer_1", "answer_inquiry", answer_args("yes")),
        kit.tool_call("answer_2", "answer_inquiry", answer_args("True")),
    )
    assert run_answer(kit, api.base_url, make_task()) is True
    first, second = (kit.conversation(request.text()) for request in api.requests)
    # The retry keeps the first request's messages as its prefix, byte for byte.
    assert second[: len(first)] == first
    grown = second[len(first) :]
    # ...then the model's bad call, its result, and the feedback as a user message.
    assert kit.tool_calls_in(grown[0]) == [("answer_1", "answer_inquiry", answer_args("yes"))]
    assert kit.tool_results(grown) == [
        ("answer_1", "Rejected: invalid answer 'yes': must be exactly true or false.")
    ]
    feedback = kit.user_text(grown[-1])
    assert feedback is not None
    assert "was rejected: invalid answer 'yes'" in feedback
    assert "Answer exactly `true` or `false`." in feedback
    assert INQUIRY_ID in feedback
    # Tools and system prompt do not change between attempts either.
    assert kit.tools_raw(api.requests[0].text()) == kit.tools_raw(api.requests[1].text())
    assert kit.system_raw(api.requests[0].text()) == kit.system_raw(api.requests[1].text())


def test_a_wrong_inquiry_id_is_retried_then_fails(kit: ProviderKit, api: FakeAPI) -> None:
    """An answer for another inquiry is rejected; after two retries it is an extraction error."""
    for number in range(3):
        api.reply(
            kit.tool_call(f"answer_{number}", "answer_inquiry", answer_args("true", "x.y.1"))
        )
    error = failure(kit, api.base_url, make_task())
    assert error.kind is BackendErrorKind.ANSWER_EXTRACTION
    assert len(api.requests) == 3
    assert "'backup'" in str(error)
    assert "Create backup files?" in str(error)
    assert "inquiry_id mismatch" in str(error)
    last_feedback = kit.user_text(kit.conversation(api.requests[2].text())[-1])
    assert last_feedback is not None
    assert "inquiry_id mismatch: expected 'call_1.backup.1', got 'x.y.1'" in last_feedback


def test_answer_retries_is_configurable(kit: ProviderKit, api: FakeAPI) -> None:
    """With answer_retries=0 a bad answer fails after a single request."""
    api.reply(kit.tool_call("answer_1", "answer_inquiry", {"inquiry_id": INQUIRY_ID}))
    error = failure(kit, api.base_url, make_task(), answer_retries=0)
    assert error.kind is BackendErrorKind.ANSWER_EXTRACTION
    assert "missing answer" in str(error)
    assert len(api.requests) == 1


def test_a_server_error_is_a_provider_error(kit: ProviderKit, api: FakeAPI) -> None:
    """An HTTP 500 (the SDK's own retries off) fails the inquiry as a provider error."""
    api.reply(kit.error(500, "overloaded, try later"))
    error = failure(kit, api.base_url, make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "500" in str(error)
    assert "overloaded, try later" in str(error)
    assert len(api.requests) == 1


def test_the_sdk_retries_a_server_error_itself(kit: ProviderKit, api: FakeAPI) -> None:
    """With one SDK retry, a 500 followed by an answer succeeds after two requests."""
    api.reply(
        kit.error(500, "blip", {"retry-after-ms": "1"}),
        kit.tool_call("answer_1", "answer_inquiry", answer_args("false")),
    )
    assert run_answer(kit, api.base_url, make_task(), max_retries=1) is False
    assert len(api.requests) == 2
    assert api.requests[0].body == api.requests[1].body


def test_a_reply_without_the_tool_call_is_missing_structured_data(
    kit: ProviderKit, api: FakeAPI
) -> None:
    """A reply with text and no answer_inquiry call fails at once, without retrying."""
    api.reply(kit.text("I think you should make a backup."))
    error = failure(kit, api.base_url, make_task())
    assert error.kind is BackendErrorKind.MISSING_STRUCTURED_DATA
    assert "'backup'" in str(error)
    assert len(api.requests) == 1


def test_a_call_of_another_tool_is_missing_structured_data(kit: ProviderKit, api: FakeAPI) -> None:
    """A reply that calls some other tool instead of answer_inquiry is missing structured data."""
    api.reply(kit.tool_call("call_9", "fs_modify_file", {"path": "x", "pattern": "y"}))
    assert failure(kit, api.base_url, make_task()).kind is BackendErrorKind.MISSING_STRUCTURED_DATA


def test_a_secret_question_sends_nothing(kit: ProviderKit, api: FakeAPI) -> None:
    """A secret question is refused with OTHER and no request reaches the server."""
    error = failure(kit, api.base_url, make_task(Question.secret("token", "API token?")))
    assert error.kind is BackendErrorKind.OTHER
    assert "secret" in str(error)
    assert api.requests == []


def test_a_task_whose_call_is_not_open_sends_nothing(kit: ProviderKit, api: FakeAPI) -> None:
    """A task naming a tool call the view does not hold open is refused before sending."""
    task = InquiryTask(
        inquiry_id="call_7.q.1",
        tool_call_id="call_7",
        tool_name="fs_modify_file",
        question=BACKUP,
        view=asking_view(),
    )
    error = failure(kit, api.base_url, task)
    assert error.kind is BackendErrorKind.OTHER
    assert "call_7" in str(error)
    assert api.requests == []


def test_inquiry_records_never_reach_the_provider(kit: ProviderKit, api: FakeAPI) -> None:
    """An inquiry record slipped into a view by hand is not sent."""
    view = asking_view()
    marker = InquiryRequest(
        id="call_0.q.1",
        source=InquirySource.tool("other_tool"),
        question=InquiryQuestion.from_question(Question.text_input("q", "MARKER-QUESTION")),
    )
    moment = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)
    entry = EventEntry(
        event_id="e-marker", timestamp=Timestamp.from_datetime(moment), payload=marker
    )
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args("true")))
    run_answer(
        kit, api.base_url, make_task(view=ProviderView(view.system_parts, (*view.events, entry)))
    )
    assert "MARKER-QUESTION" not in api.requests[0].text()
    assert "call_0.q.1" not in api.requests[0].text()


def test_the_cache_invariant_holds(kit: ProviderKit, api: FakeAPI) -> None:
    """A turn request and the inquiry that follows carry byte-identical tools and system prompt."""
    api.reply(
        kit.tool_call(CALL_ID, "fs_modify_file", {"path": "README.md", "pattern": "demo"}),
        kit.tool_call("answer_1", "answer_inquiry", answer_args("true")),
    )

    async def scenario() -> JsonValue:
        async with ModelInquiryBackend(
            kit.adapter(api.base_url, KEY, max_retries=0), tools=TOOLS
        ) as backend:
            stream = ConversationStream()
            stream.append(ChatRequest(content="Rename the project in README.md."))
            reply = await backend.adapter.complete(
                backend.turn_request(stream.provider_view(SYSTEM))
            )
            for event in reply.events():
                stream.append(event)
            return await backend.answer(make_task(view=stream.provider_view(SYSTEM)))

    assert asyncio.run(scenario()) is True
    turn, inquiry = (request.text() for request in api.requests)
    assert kit.tools_raw(turn) == kit.tools_raw(inquiry)
    assert kit.system_raw(turn) == kit.system_raw(inquiry)
    assert "answer_inquiry" in kit.tools_raw(turn)
    assert raw_members(turn)["tool_choice"] != raw_members(inquiry)["tool_choice"]
    # Only the messages grow: the turn's conversation is the inquiry's prefix.
    turn_messages = kit.conversation(turn)
    assert kit.conversation(inquiry)[: len(turn_messages)] == turn_messages


def test_a_held_request_can_be_cancelled(kit: ProviderKit, api: FakeAPI) -> None:
    """Cancelling the task awaiting an answer raises CancelledError, not a backend error."""
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args("true")).held())

    async def scenario() -> None:
        async with ModelInquiryBackend(kit.adapter(api.base_url, KEY), tools=TOOLS) as backend:
            asking = asyncio.ensure_future(backend.answer(make_task()))
            assert await asyncio.to_thread(api.wait_for_requests, 1)
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking

    asyncio.run(scenario())
    assert len(api.requests) == 1


def test_an_sdk_timeout_is_a_provider_error(kit: ProviderKit, api: FakeAPI) -> None:
    """A reply slower than the SDK's timeout fails the inquiry as a provider error."""
    api.reply(kit.tool_call("answer_1", "answer_inquiry", answer_args("true")).held())
    error = failure(kit, api.base_url, make_task(), timeout=0.2, max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "timed out" in str(error)


def test_an_unreachable_server_is_a_provider_error(kit: ProviderKit) -> None:
    """A refused connection fails the inquiry as a provider error naming where it went."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    error = failure(kit, f"http://127.0.0.1:{port}", make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert f"127.0.0.1:{port}" in str(error)


def test_the_api_key_is_in_no_error_or_log(
    kit: ProviderKit, api: FakeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    """Even when the server echoes the key back, neither the error nor any log line holds it."""
    api.reply(kit.error(401, f"invalid x-api-key: {KEY}"))
    caplog.set_level(logging.DEBUG)
    error = failure(kit, api.base_url, make_task(), max_retries=0)
    assert error.kind is BackendErrorKind.PROVIDER
    assert "401" in str(error)
    assert any(KEY in value for value in api.requests[0].headers.values())
    assert "invalid x-api-key: <redacted>" in str(error)
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert error.__cause__ is None or KEY not in str(error.__cause__)
    assert error.__context__ is None or KEY not in str(error.__context__)
    for record in caplog.records:
        assert KEY not in record.getMessage()
    assert KEY not in caplog.text


def test_rejected_answers_are_logged_without_the_key(
    kit: ProviderKit, api: FakeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    """A rejected attempt is logged with its reason; no log line holds the key."""
    api.reply(
        kit.tool_call("answer_1", "answer_inquiry", answer_args("maybe")),
        kit.tool_call("answer_2", "answer_inquiry", answer_args("false")),
    )
    caplog.set_level(logging.DEBUG)
    assert run_answer(kit, api.base_url, make_task()) is False
    assert any("'maybe'" in record.getMessage() for record in caplog.records)
    assert KEY not in caplog.text


def test_parallel_inquiries_are_answered_concurrently(kit: ProviderKit) -> None:
    """Two calls of one response ask at once; each request pauses its call and closes the other."""
    stream = ConversationStream()
    stream.append(ChatRequest(content="Rename the project in both files."))
    for call_id, path in (("call_1", "README.md"), ("call_2", "NOTES.md")):
        stream.append(
            ToolCallRequest(
                id=call_id, name="fs_modify_file", arguments={"path": path, "pattern": "demo"}
            )
        )
    view = stream.provider_view(SYSTEM)
    tasks = [
        InquiryTask(
            inquiry_id=f"{call_id}.backup.1",
            tool_call_id=call_id,
            tool_name="fs_modify_file",
            question=BACKUP,
            view=view,
        )
        for call_id in ("call_1", "call_2")
    ]

    def respond(request: Recorded) -> Reply:
        asked = "call_2.backup.1" if "call_2.backup.1" in request.text() else "call_1.backup.1"
        answer = "false" if asked.startswith("call_2") else "true"
        return kit.tool_call(f"answer_{asked}", "answer_inquiry", answer_args(answer, asked))

    async def scenario() -> list[JsonValue]:
        async with ModelInquiryBackend(
            kit.adapter(server.base_url, KEY, max_retries=0), tools=TOOLS
        ) as backend:
            return list(await asyncio.gather(*(backend.answer(task) for task in tasks)))

    with FakeAPI(respond) as server:
        assert asyncio.run(scenario()) == [True, False]
    assert len(server.requests) == 2
    for request in server.requests:
        asked = "call_2" if "call_2.backup.1" in request.text() else "call_1"
        other = "call_1" if asked == "call_2" else "call_2"
        results = dict(kit.tool_results(kit.conversation(request.text())))
        assert results == {
            asked: "Tool paused: Create backup files?",
            other: "Tool still running: its result is not available yet.",
        }
