"""MCP tools through the coordinator: real servers over stdio, every question an inquiry."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from coordinator_harness import (
    UNATTENDED,
    assert_invariants,
    conversation_on_disk,
    payloads,
    stored_text,
)
from mcp_servers import LEAKY_TOKEN, LOGIN_URL, REGISTER_TOKEN, SIGNUP_TOKEN

from coordinator import load_conversation
from coordinator.adapters.mcp import McpServer, McpToolbox
from coordinator.driver import (
    NeedsInput,
    QuestionAnswer,
    ScriptedInquiryBackend,
    ScriptedPrompter,
    ToolCoordinator,
    parse_tools_config,
)
from machines import (
    Answered,
    AnswerKind,
    CancellationReason,
    Cancelled,
    ChatResponse,
    FieldKind,
    Form,
    InquiryRequest,
    Redacted,
    SecretValue,
    ShowQuestion,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

    from coordinator import Conversation
    from coordinator.driver import ToolsConfig
    from machines import JsonValue

SERVERS = Path(__file__).with_name("mcp_servers.py")
CONFIRM, ENV = "__main__:ask_confirm", "__main__:ask_env"


def ops(tmp_path: Path, name: str = "ops", *extra: str) -> McpServer:
    """The test server ``ops`` (an MCPServer), started over stdio in ``tmp_path``."""
    return McpServer(
        name=name,
        command=(sys.executable, str(SERVERS), "ops", name, *extra),
        cwd=tmp_path,
        timeout=30,
        start_timeout=60,
        stderr=tmp_path / f"{name}.log",
    )


def raw(tmp_path: Path) -> McpServer:
    """The low-level test server, whose requestState is not sealed."""
    return McpServer(
        name="raw", command=(sys.executable, str(SERVERS), "raw"), cwd=tmp_path, timeout=30
    )


def received(tmp_path: Path) -> list[dict[str, Any]]:
    """What the servers of ``tmp_path`` were told, in order."""
    log = tmp_path / "received.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@attrs.define
class Play:
    """What a batch of MCP calls left: the responses, and what the person was shown."""

    responses: list[ToolCallResponse]
    shown: list[ShowQuestion]


async def play(
    conversation: Conversation,
    servers: Sequence[McpServer],
    calls: Sequence[tuple[str, str, Mapping[str, JsonValue]]],
    *,
    tools: Mapping[str, tuple[str, str]],
    prompter: ScriptedPrompter | None = None,
    config: ToolsConfig = UNATTENDED,
    backend: ScriptedInquiryBackend | None = None,
    max_attempts: int = 8,
) -> Play:
    """Run ``calls`` (id, tool, arguments) in one batch, ``tools`` naming each (server, tool)."""
    async with McpToolbox(servers) as toolbox:
        executors = {name: toolbox.executor(*where) for name, where in tools.items()}
        coordinator = ToolCoordinator(
            conversation,
            tools=executors,
            config=config,
            prompter=toolbox.prompter(prompter) if prompter is not None else None,
            backend=backend,
            max_attempts=max_attempts,
            on_step=toolbox.observe,
        )
        conversation.stream.append(ChatResponse.message("On it."))
        requests = [ToolCallRequest(id=i, name=n, arguments=dict(a)) for i, n, a in calls]
        for request in requests:
            conversation.stream.append(request)
        responses = await coordinator.run(requests)
    shown = [p for p in (prompter.shown if prompter else []) if isinstance(p, ShowQuestion)]
    return Play(responses=responses, shown=shown)


def run_calls(
    tmp_path: Path,
    *calls: tuple[str, str, Mapping[str, JsonValue]],
    servers: Sequence[McpServer] = (),
    tools: Mapping[str, tuple[str, str]] | None = None,
    **options: Any,
) -> tuple[Conversation, Play]:
    """A new conversation running ``calls`` in one batch, each tool of that name on ``ops``."""
    conversation = conversation_on_disk(tmp_path / "conversation")
    servers = list(servers) or [ops(tmp_path)]
    named = tools or {name: (servers[0].name, name) for _, name, _ in calls}
    return conversation, asyncio.run(play(conversation, servers, calls, tools=named, **options))


def asked(conversation: Conversation) -> list[InquiryRequest]:
    """The inquiry requests recorded, in order."""
    return payloads(conversation, InquiryRequest)


def responses(conversation: Conversation) -> list[Answered | Cancelled | Redacted]:
    """The inquiry responses recorded, in order."""
    return payloads(conversation, (Answered, Cancelled, Redacted))


class Obliging(ScriptedPrompter):
    """A person who fills every form with yes and 'dev', and confirms every link."""

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer by the question's kind, whatever order parallel calls ask in."""
        self.shown.append(prompt)
        answer_type = prompt.question.answer_type
        if answer_type.is_secret:
            return QuestionAnswer(value=SecretValue(""))
        if answer_type.form is not None:
            filled: dict[str, JsonValue] = {}
            for field in answer_type.form.fields:
                if field.kind is FieldKind.BOOLEAN:
                    filled[field.name] = True
                elif field.kind is FieldKind.CHOICE:
                    filled[field.name] = "dev" if "dev" in field.option_values else "?"
            return QuestionAnswer(value=filled)
        return QuestionAnswer(value="accept")


def form_of(request: InquiryRequest) -> Form:
    """The form a recorded request asks."""
    form = request.question.answer_type.form
    assert form is not None
    return form


def test_input_required_asks_each_form_as_one_question(tmp_path: Path) -> None:
    """MRTR: each inputRequests entry is one form question of the tool, answered by an object."""
    prompter = ScriptedPrompter().answer({"ok": True}).answer({"env": "prod"})
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        prompter=prompter,
    )
    assert result.responses == [
        ToolCallResponse(id="call_1", content="ops: deployed api to prod", is_error=False)
    ]
    requests = asked(conversation)
    assert [r.question.id for r in requests] == [CONFIRM, ENV]
    assert [r.id for r in requests] == [f"call_1.{r.question.id}.1" for r in requests]
    assert [r.question.answer_type.kind for r in requests] == [AnswerKind.FORM] * 2
    (ok,) = form_of(requests[0]).fields
    assert (ok.name, ok.kind, ok.required, ok.description) == (
        "ok",
        FieldKind.BOOLEAN,
        True,
        "Deploy now?",
    )
    (env,) = form_of(requests[1]).fields
    assert (env.kind, env.title, env.option_values) == (
        FieldKind.CHOICE,
        "Environment",
        ("dev", "staging", "prod"),
    )
    assert all(r.source.kind is SourceKind.TOOL and r.source.name == "deploy" for r in requests)
    assert [r.answer for r in responses(conversation)] == [{"ok": True}, {"env": "prod"}]  # type: ignore[union-attr]
    assert received(tmp_path) == [{"tool": "deploy", "confirm": "accept", "env": "accept"}]
    assert_invariants(conversation)


def test_a_form_is_recorded_as_a_text_question_jp_reads_its_schema_in_metadata(
    tmp_path: Path,
) -> None:
    """On disk: answer type text, the answer the object, the schema under metadata inquiry.form."""
    conversation, _ = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        prompter=ScriptedPrompter().answer({"ok": True}).answer({"env": "prod"}),
    )
    entries = json.loads((tmp_path / "conversation" / "events.json").read_bytes())
    request = next(e for e in entries if e["type"] == "inquiry_request")
    assert request["question"]["answer_type"] == {"type": "text"}  # a tag JP knows
    stored = request["metadata"]["inquiry"]["form"]  # metadata's strings are stored base64
    assert stored["properties"]["ok"]["type"] == base64.b64encode(b"boolean").decode()
    answer = next(e for e in entries if e["type"] == "inquiry_response")
    assert (answer["outcome"], answer["answer"]) == ("answered", {"ok": True})
    reloaded = load_conversation(tmp_path / "conversation")
    (read, _) = payloads(reloaded, InquiryRequest)
    assert read.question.answer_type == asked(conversation)[0].question.answer_type
    assert_invariants(conversation)


def test_legacy_elicitation_is_asked_while_the_call_is_in_flight(tmp_path: Path) -> None:
    """ctx.elicit: refused on 2026-07-28, so the call is made again legacy; its ids are stable."""
    prompter = Obliging()
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "legacy_deploy", {"service": "web"}),
        ("call_2", "legacy_deploy", {"service": "web"}),
        ("call_3", "legacy_login", {}),
        prompter=prompter,
    )
    assert [r.content for r in result.responses] == [
        "ops: deployed web to dev (legacy)",
        "ops: deployed web to dev (legacy)",
        "legacy sign-in: accept",
    ]
    link = next(r for r in asked(conversation) if r.id.startswith("call_3."))
    assert str(link.question.id).startswith("url-")
    assert link.question.answer_type.option_values == ("accept", "decline")
    requests = [r for r in asked(conversation) if not r.id.startswith("call_3.")]
    first = [r.question.id for r in requests if r.id.startswith("call_1.")]
    second = [r.question.id for r in requests if r.id.startswith("call_2.")]
    assert first == second  # the same requests, the same ids: configurable
    assert [str(question_id)[:5] for question_id in first] == ["form-", "form-"]
    assert requests[0].question.text == "Really deploy web?"
    told = sorted(e["tool"] for e in received(tmp_path))
    assert told == ["legacy_deploy"] * 4 + ["legacy_login"]
    assert_invariants(conversation, secrets=["Q-TOKEN-77"])


SIGNUP_ANSWER: dict[str, JsonValue] = {
    "name": "Ada",
    "age": 42,
    "email": "ada@example.com",
    "plan": "pro",
    "newsletter": False,
    "tags": ["ai", "ops"],
}


def test_a_multi_field_form_is_one_question_its_secret_field_apart(tmp_path: Path) -> None:
    """Every field typed in one form, recorded as the object; the secret redacted, not on disk."""
    prompter = ScriptedPrompter().answer(SIGNUP_ANSWER).answer(SIGNUP_TOKEN)
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "signup", {}),
        prompter=prompter,
    )
    content = result.responses[0].content
    assert content.startswith("signed up: ")
    assert json.loads(content.removeprefix("signed up: ")) == {
        "age": 42,
        "api_token": "matches",
        "email": "ada@example.com",
        "name": "Ada",
        "newsletter": False,
        "plan": "pro",
        "tags": ["ai", "ops"],
    }
    requests = asked(conversation)
    assert [r.id.removeprefix("call_1.") for r in requests] == [
        "account.1",
        "account.api_token.1",
    ]
    fields = {field.name: field for field in form_of(requests[0]).fields}
    assert list(fields) == ["name", "age", "email", "plan", "newsletter", "tags", "nickname"]
    assert (fields["age"].kind, fields["age"].minimum, fields["age"].maximum) == (
        FieldKind.INTEGER,
        18,
        150,
    )
    assert (fields["tags"].kind, fields["tags"].max_items) == (FieldKind.CHOICES, 2)
    assert [o.description for o in fields["plan"].options] == ["Free", "Pro, billed monthly"]
    assert not fields["nickname"].required
    form_question = requests[0].question
    assert form_question.context is not None
    assert "MCP forbids servers to ask for one in a form" in form_question.context
    token = requests[1].question
    assert token.answer_type.is_secret
    recorded = responses(conversation)
    assert recorded[0] == Answered(id="call_1.account.1", answer=SIGNUP_ANSWER)
    assert recorded[1] == Redacted(id="call_1.account.api_token.1")
    assert_invariants(conversation, secrets=[SIGNUP_TOKEN])


def test_a_secret_the_tools_result_echoes_is_masked_before_it_is_stored(tmp_path: Path) -> None:
    """A tool echoing the token its form was given: the model and the record see it masked."""
    prompter = ScriptedPrompter().answer({}).answer(REGISTER_TOKEN)
    conversation, result = run_calls(tmp_path, ("call_1", "register", {}), prompter=prompter)
    (response,) = result.responses
    assert response.content == "registered with token <secret>"
    assert isinstance(responses(conversation)[-1], Redacted)
    assert received(tmp_path) == [{"tool": "register", "action": "accept"}]
    # The response is stored base64: the check decodes it (a masking slip would show there).
    assert_invariants(conversation, secrets=[REGISTER_TOKEN])


def test_decline_is_an_answer_and_the_server_is_told_decline(tmp_path: Path) -> None:
    """The person's decline is recorded as the answer 'decline'; the server gets decline."""
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        prompter=ScriptedPrompter().answer("decline"),
    )
    assert result.responses[0].content == "ops: not deployed (confirmation decline)"
    assert responses(conversation) == [Answered(id=f"call_1.{CONFIRM}.1", answer="decline")]
    (shown,) = result.shown
    assert shown.question.answer_type.accepts("decline")
    assert received(tmp_path) == [{"tool": "deploy", "confirm": "decline", "env": "not asked"}]
    assert_invariants(conversation)


def test_the_persons_cancel_is_cancelled_user_and_the_server_is_told_cancel(
    tmp_path: Path,
) -> None:
    """Ctrl-C at a form: Cancelled(user), the call closed; both eras' servers hear cancel."""
    prompter = ScriptedPrompter().cancel(tool="deploy").cancel(tool="legacy_deploy")
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        ("call_2", "legacy_deploy", {"service": "api"}),
        prompter=prompter,
    )
    assert [r.content for r in result.responses] == ["Tool input cancelled by user."] * 2
    cancelled = [r for r in responses(conversation) if isinstance(r, Cancelled)]
    assert [r.reason for r in cancelled] == [CancellationReason.USER] * 2
    told = {entry["tool"]: entry["confirm"] for entry in received(tmp_path)}
    assert told == {"deploy": "cancel", "legacy_deploy": "cancel"}
    assert_invariants(conversation)


def test_the_server_hears_cancel_as_soon_as_the_call_is_closed(tmp_path: Path) -> None:
    """The observe hook tells the server cancel while the run goes on, not at closing."""
    conversation = conversation_on_disk(tmp_path / "conversation")
    prompter = ScriptedPrompter().cancel()

    async def cancel_then_wait() -> list[dict[str, Any]]:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            coordinator = on_ops(toolbox, conversation, prompter, "deploy")
            await coordinator_call(coordinator, conversation, "call_1", "deploy")
            for _ in range(200):  # the cancel is sent in the background
                if received(tmp_path):
                    break
                await asyncio.sleep(0.05)
            return received(tmp_path)

    told = asyncio.run(cancel_then_wait())
    assert told == [{"tool": "deploy", "confirm": "cancel", "env": "not asked"}]
    assert_invariants(conversation)


def test_a_url_request_is_shown_whole_to_the_person_and_recorded_without_its_query(
    tmp_path: Path,
) -> None:
    """URL mode: the person's accept is recorded; the link's query reaches no record."""
    prompter = ScriptedPrompter().answer("accept")
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "login", {}),
        prompter=prompter,
    )
    assert result.responses[0].content == "signed in"
    (request,) = asked(conversation)
    assert request.question.answer_type.option_values == ("accept", "decline")
    assert request.question.exclusive
    assert request.question.persistence == "none"
    assert "https://auth.example.invalid/authorize (query string not shown)" in str(
        request.question.context
    )
    assert responses(conversation) == [Answered(id="call_1.authorize.1", answer="accept")]
    (shown,) = result.shown
    assert LOGIN_URL in str(shown.question.context)  # the person saw the whole link
    assert received(tmp_path) == [{"tool": "login", "action": "accept"}]
    assert_invariants(conversation, secrets=["Q-TOKEN-77", "state="])


def test_a_declined_url_request_is_recorded_and_masks_nothing_later(tmp_path: Path) -> None:
    """The URL's decline is an answer on record, no secret: the word shows in what follows."""
    prompter = ScriptedPrompter().answer("decline").answer({"ok": False})
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "login", {}),
        prompter=prompter,
    )
    assert result.responses[0].content == "not signed in (decline)"
    assert responses(conversation) == [Answered(id="call_1.authorize.1", answer="decline")]
    assert received(tmp_path) == [{"tool": "login", "action": "decline"}]
    assert_invariants(conversation)


def test_a_url_request_without_a_terminal_is_cancelled_no_prompt_backend(tmp_path: Path) -> None:
    """No person: the URL question is never sent to the model; the server hears cancel."""
    backend = ScriptedInquiryBackend()
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "login", {}),
        backend=backend,
    )
    assert result.responses[0].is_error
    assert responses(conversation) == [
        Cancelled(id="call_1.authorize.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]
    assert backend.tasks == []
    assert received(tmp_path) == [{"tool": "login", "action": "cancel"}]
    assert_invariants(conversation, secrets=["Q-TOKEN-77"])


#: The message of the test server's leaky_login as it may be recorded: its link without the token.
LEAKY_SHOWN = "Please open https://auth.example.invalid/cb (query string not shown) to sign in"


def test_a_link_in_a_url_requests_message_is_recorded_without_its_query(tmp_path: Path) -> None:
    """A message holding a link with a token: recorded as the url field is, the token nowhere."""
    conversation, result = run_calls(
        tmp_path, ("call_1", "leaky_login", {}), prompter=ScriptedPrompter().answer("accept")
    )
    assert result.responses[0].content == "signed in"
    (request,) = asked(conversation)
    assert request.question.text == LEAKY_SHOWN
    (shown,) = result.shown
    assert shown.question.text == LEAKY_SHOWN
    assert LOGIN_URL in str(shown.question.context)  # the person still gets the link to open
    assert LEAKY_TOKEN not in stored_text(conversation)
    assert_invariants(conversation, secrets=[LEAKY_TOKEN])


def test_without_a_terminal_the_model_is_told_the_message_without_its_token(
    tmp_path: Path,
) -> None:
    """No person: the call's result quotes the message, its link's query left out."""
    conversation, result = run_calls(
        tmp_path, ("call_1", "leaky_login", {}), backend=ScriptedInquiryBackend()
    )
    (response,) = result.responses
    assert response.is_error
    assert f'asked "{LEAKY_SHOWN}"' in response.content
    assert LEAKY_TOKEN not in stored_text(conversation)
    assert_invariants(conversation, secrets=[LEAKY_TOKEN])


def test_a_legacy_link_with_a_fresh_nonce_in_its_message_keeps_its_question_id(
    tmp_path: Path,
) -> None:
    """Legacy URL requests whose message's link changes each time: one id, no token recorded."""
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "legacy_leaky_login", {}),
        ("call_2", "legacy_leaky_login", {}),
        prompter=Obliging(),
    )
    assert [r.content for r in result.responses] == ["legacy sign-in: accept"] * 2
    first, second = asked(conversation)
    assert first.question.id == second.question.id
    assert str(first.question.id).startswith("url-")
    assert first.question.text == LEAKY_SHOWN
    assert_invariants(conversation, secrets=[LEAKY_TOKEN, "nonce", "pw@", "#at-"])


def test_a_url_request_configured_for_the_model_is_refused(tmp_path: Path) -> None:
    """A URL question configured for the model: assistant_routing_denied, never sent."""
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {"login": {"questions": {"authorize": {"target": "assistant"}}}},
        }
    )
    backend = ScriptedInquiryBackend()
    conversation, _ = run_calls(
        tmp_path,
        ("call_1", "login", {}),
        prompter=ScriptedPrompter(),
        config=config,
        backend=backend,
    )
    assert responses(conversation) == [
        Cancelled(id="call_1.authorize.1", reason=CancellationReason.ASSISTANT_ROUTING_DENIED)
    ]
    assert backend.tasks == []
    assert_invariants(conversation)


def test_static_answers_and_the_model_answer_mcp_questions_as_any_tools(tmp_path: Path) -> None:
    """Configuration applies unchanged: a form routed to the model, one answered statically."""
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {
                "deploy": {
                    "questions": {
                        CONFIRM: {"target": "assistant"},
                        ENV: {"answer": {"env": "staging"}},
                    }
                }
            },
        }
    )
    backend = ScriptedInquiryBackend().respond({"ok": True}, question=CONFIRM)
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        prompter=ScriptedPrompter(),
        config=config,
        backend=backend,
    )
    assert result.responses[0].content == "ops: deployed api to staging"
    assert [r.answer for r in responses(conversation)] == [{"ok": True}, {"env": "staging"}]  # type: ignore[union-attr]
    assert [task.question.id for task in backend.tasks] == [CONFIRM]
    assert result.shown == []
    assert_invariants(conversation)


def test_a_remembered_form_answers_the_same_form_of_a_later_call(tmp_path: Path) -> None:
    """The turn cache applies: a form answer remembered answers it in the next call, unasked."""
    conversation = conversation_on_disk(tmp_path / "conversation")
    prompter = ScriptedPrompter().answer({"ok": True}, remember=True).answer("decline")
    prompter.answer("decline")

    async def two_cycles() -> None:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            coordinator = on_ops(toolbox, conversation, prompter, "deploy")
            await coordinator_call(coordinator, conversation, "call_1", "deploy")
            await coordinator_call(coordinator, conversation, "call_2", "deploy")

    asyncio.run(two_cycles())
    second = [r.question.id for r in asked(conversation) if r.id.startswith("call_2.")]
    assert second == [CONFIRM, ENV]
    shown = [
        prompt.question.id
        for prompt in prompter.shown
        if isinstance(prompt, ShowQuestion) and prompt.tool_call_id == "call_2"
    ]
    assert shown == [ENV]  # the confirmation came from the turn's memory
    assert_invariants(conversation)


def test_a_field_asked_again_too_often_ends_the_call_attempts_exhausted(tmp_path: Path) -> None:
    """The re-ask bound applies: a secret field's answer that never fits: attempts_exhausted."""
    prompter = ScriptedPrompter().answer(SIGNUP_ANSWER)
    for _ in range(3):
        prompter.answer("short", question="account.api_token")  # never its 8 characters
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "signup", {}),
        prompter=prompter,
        max_attempts=2,
    )
    assert result.responses[0].is_error
    assert responses(conversation)[-1] == Cancelled(
        id="call_1.account.api_token.3", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )
    assert received(tmp_path) == [{"tool": "signup", "action": "cancel"}]
    assert_invariants(conversation)


class OneAtATime(ScriptedPrompter):
    """A scripted person who notes how many prompts were ever on screen at once.

    The first prompt waits until ``conversation`` holds two questions, so
    two servers are seen asking at once.
    """

    def __init__(self, conversation: Conversation) -> None:
        """No prompt yet."""
        super().__init__()
        self.conversation = conversation
        self.on_screen = 0
        self.most = 0

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer from the script after a pause, counting the prompts on screen."""
        self.on_screen += 1
        self.most = max(self.most, self.on_screen)
        try:
            for _ in range(600):
                if len(asked(self.conversation)) >= 2:
                    break
                await asyncio.sleep(0.05)
            return await super().ask_question(prompt)
        finally:
            self.on_screen -= 1


def test_two_servers_asking_at_once_are_prompted_one_at_a_time(tmp_path: Path) -> None:
    """Parallel calls to two servers both ask; the person sees one prompt at a time."""
    conversation = conversation_on_disk(tmp_path / "conversation")
    prompter = OneAtATime(conversation)
    for tool, env in (("a_deploy", "dev"), ("b_deploy", "prod")):
        prompter.answer({"ok": True}, tool=tool).answer({"env": env}, tool=tool)
    result = asyncio.run(
        play(
            conversation,
            [ops(tmp_path, "alpha"), ops(tmp_path, "beta")],
            [("call_a", "a_deploy", {"service": "x"}), ("call_b", "b_deploy", {"service": "y"})],
            tools={"a_deploy": ("alpha", "deploy"), "b_deploy": ("beta", "deploy")},
            prompter=prompter,
        )
    )
    assert [r.content for r in result.responses] == [
        "alpha: deployed x to dev",
        "beta: deployed y to prod",
    ]
    assert prompter.most == 1
    kinds = [type(p).__name__ for p in payloads(conversation, (InquiryRequest, Answered))]
    assert kinds[:2] == ["InquiryRequest", "InquiryRequest"]  # both asked before either answer
    sources = {r.source.name for r in asked(conversation)}
    assert sources == {"a_deploy", "b_deploy"}
    assert_invariants(conversation)


def test_a_server_that_crashes_mid_round_trip_fails_the_call_and_is_restarted(
    tmp_path: Path,
) -> None:
    """The server dies on the retry: the call fails naming it; the next call gets a new process."""
    conversation = conversation_on_disk(tmp_path / "conversation")
    prompter = ScriptedPrompter().answer({"sure": True})

    async def both() -> tuple[list[ToolCallResponse], list[ToolCallResponse], str]:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            coordinator = on_ops(toolbox, conversation, prompter, "crash", "pid")
            before = await coordinator_call(coordinator, conversation, "call_0", "pid")
            crashed = await coordinator_call(coordinator, conversation, "call_1", "crash")
            after = await coordinator_call(coordinator, conversation, "call_2", "pid")
            return crashed, after, before[0].content

    crashed, after, first_pid = asyncio.run(both())
    assert crashed[0].is_error
    assert "MCP server 'ops' closed the connection" in crashed[0].content
    assert not after[0].is_error
    assert after[0].content != first_pid  # a new server process
    assert [type(r).__name__ for r in responses(conversation)] == ["Answered"]
    assert_invariants(conversation)


def on_ops(
    toolbox: McpToolbox, conversation: Conversation, prompter: ScriptedPrompter, *tools: str
) -> ToolCoordinator:
    """A coordinator running ``tools`` of ``ops`` for ``prompter``, watched by ``toolbox``."""
    return ToolCoordinator(
        conversation,
        tools={name: toolbox.executor("ops", name) for name in tools},
        config=UNATTENDED,
        prompter=toolbox.prompter(prompter),
        on_step=toolbox.observe,
    )


async def coordinator_call(
    coordinator: ToolCoordinator, conversation: Conversation, call_id: str, tool: str
) -> list[ToolCallResponse]:
    """One assistant response making one call (a ``service`` argument for deploy); its response."""
    arguments: dict[str, JsonValue] = {"service": call_id} if tool == "deploy" else {}
    request = ToolCallRequest(id=call_id, name=tool, arguments=arguments)
    conversation.stream.append(ChatResponse.message("calling"))
    conversation.stream.append(request)
    return await coordinator.run([request])


def test_request_state_is_echoed_byte_for_byte_and_never_invented(tmp_path: Path) -> None:
    """The state comes back exactly, none when none was sent; sampling is refused, named."""
    prompter = ScriptedPrompter()
    for tool in ("stateful", "stateless"):
        prompter.answer({"go": True}, tool=tool, question="go")
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "stateful", {}),
        ("call_2", "stateless", {}),
        ("call_3", "sampler", {}),
        servers=[raw(tmp_path)],
        prompter=prompter,
    )
    assert [r.content for r in result.responses] == [
        "state echoed verbatim",
        "no state sent back",
        (
            "MCP server 'raw' asked, through tool 'sampler', for input this client cannot give: "
            "asks to sample the model (sampling/createMessage), which this client does not offer"
        ),
    ]
    assert_invariants(conversation)


class SlowPerson(ScriptedPrompter):
    """A scripted person who takes ``pause`` seconds over the question ``slow``."""

    def __init__(self, slow: str, pause: float) -> None:
        """Pause over ``slow``."""
        super().__init__()
        self.slow = slow
        self.pause = pause

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer from the script, slowly for the slow question."""
        if prompt.question.id == self.slow:
            await asyncio.sleep(self.pause)
        return await super().ask_question(prompt)


def test_an_expired_request_state_starts_the_call_over_with_the_answers_given(
    tmp_path: Path,
) -> None:
    """A state past its TTL is refused: round one again, answered from the call's answers."""
    prompter = SlowPerson(ENV, pause=1.5)
    prompter.answer({"ok": True}).answer({"env": "dev"})
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {"service": "api"}),
        servers=[ops(tmp_path, "ops", "--ttl", "1")],
        prompter=prompter,
    )
    assert result.responses[0].content == "ops: deployed api to dev"
    assert len(asked(conversation)) == 2  # nothing asked twice
    assert_invariants(conversation)


def test_a_call_continued_with_recorded_answers_resumes_without_asking_them_again(
    tmp_path: Path,
) -> None:
    """A call this process never saw, run with answers: re-run from round one, answers reused."""
    carried: dict[str, JsonValue | SecretValue] = {CONFIRM: {"ok": True}}

    async def resume() -> list[str]:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            executor = toolbox.executor("ops", "deploy")
            call = ToolCallRequest(id="call_1", name="deploy", arguments={"service": "api"})
            first = await executor.execute(call, carried)
            assert isinstance(first, NeedsInput)
            done = await executor.execute(call, {**carried, ENV: {"env": "dev"}})
            return [first.question.id, getattr(done, "content", "")]

    assert asyncio.run(resume()) == [ENV, "ops: deployed api to dev"]


def test_a_new_call_under_a_used_id_starts_afresh(tmp_path: Path) -> None:
    """A run with no answers is a new call, whatever call held its id before (abandoned)."""

    async def twice() -> tuple[str, str]:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            executor = toolbox.executor("ops", "deploy")
            call = ToolCallRequest(id="call_1", name="deploy", arguments={"service": "api"})
            first = await executor.execute(call, {})
            again = await executor.execute(call, {})
            assert isinstance(first, NeedsInput)
            assert isinstance(again, NeedsInput)
            return first.question.id, again.question.id

    assert asyncio.run(twice()) == (CONFIRM, CONFIRM)
    # The first call, when the second took its id; the second, when the toolbox closed.
    assert received(tmp_path) == [{"tool": "deploy", "confirm": "cancel", "env": "not asked"}] * 2


def test_a_server_that_cannot_start_fails_the_call_naming_it(tmp_path: Path) -> None:
    """A program that is not there: the call fails, telling the model which server and why."""
    missing = McpServer(name="gone", command=(str(tmp_path / "no-such-server"),), timeout=10)
    conversation, result = run_calls(
        tmp_path,
        ("call_1", "deploy", {}),
        servers=[missing],
    )
    (response,) = result.responses
    assert response.is_error
    assert "MCP server 'gone' could not be started: its program was not found" in response.content
    assert_invariants(conversation)


@pytest.mark.parametrize(
    ("described", "problem"),
    [
        ({"env": {"A=B": "x"}}, "McpServer.env['A=B']: a variable's name cannot hold '='"),
        ({"env": {"": "x"}}, "McpServer.env['']: a variable's name must not be empty"),
        ({"env": {"A": "x\0y"}}, "McpServer.env['A']: its value holds a NUL byte"),
        ({"command": ("python3", "a\0b")}, "McpServer.command[1] holds a NUL byte"),
        ({"stderr": Path("ops\0.log")}, "McpServer.stderr holds a NUL byte"),
    ],
    ids=["env-equals", "env-empty", "env-value-nul", "arg-nul", "stderr-nul"],
)
def test_a_server_the_os_could_not_start_is_refused_when_described(
    described: dict[str, Any], problem: str
) -> None:
    """What the OS would refuse to start a program with is refused by McpServer itself."""
    with pytest.raises(ValueError, match=f"^{re.escape(problem)}") as caught:
        McpServer(**({"name": "ops", "command": ("python3",)} | described))
    assert "x\0y" not in str(caught.value)  # a variable's value is never shown


def test_a_url_nothing_answers_at_fails_the_call_saying_so_without_credentials(
    tmp_path: Path,
) -> None:
    """Streamable HTTP, nothing listening: 'could not connect to' the url, credentials left out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://agent:pw-123@127.0.0.1:{port}/mcp?key=K-456"
    server = McpServer(name="web", url=url, timeout=10, start_timeout=10)
    conversation, result = run_calls(tmp_path, ("call_1", "deploy", {}), servers=[server])
    (response,) = result.responses
    assert response.is_error
    assert response.content == (
        f"MCP server 'web' could not connect to "
        f"http://127.0.0.1:{port}/mcp (query string not shown)"
    )
    assert_invariants(conversation, secrets=["pw-123", "K-456", "agent"])


class _NotFound(BaseHTTPRequestHandler):
    """A web server where no MCP server is: 404 to what a client posts, echoing the path."""

    def do_POST(self) -> None:
        """Not found, the request's whole path (query and all) in the page."""
        page = f"no MCP server at {self.path}".encode()
        self.send_response(404)
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *_: object) -> None:
        """Quiet."""


def test_a_url_where_no_mcp_server_answers_fails_the_handshake_without_credentials(
    tmp_path: Path,
) -> None:
    """Streamable HTTP to a plain 404 page: the handshake failed, reached at the url cut."""
    web = HTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    port = web.server_address[1]
    url = f"http://agent:pw-123@127.0.0.1:{port}/mcp?key=K-456"
    server = McpServer(name="web", url=url, timeout=10, start_timeout=10)
    try:
        conversation, result = run_calls(tmp_path, ("call_1", "deploy", {}), servers=[server])
    finally:
        web.shutdown()
        web.server_close()
    (response,) = result.responses
    assert response.is_error
    assert response.content.startswith(
        f"MCP server 'web' could not be reached at http://127.0.0.1:{port}/mcp "
        "(query string not shown): the handshake failed: "
    )
    assert_invariants(conversation, secrets=["pw-123", "K-456", "agent"])


def test_a_failure_echoing_the_url_reads_without_its_credentials() -> None:
    """Whatever words a failure to reach a url comes in, its credentials are not in them."""
    from coordinator.adapters.mcp._session import Connection  # noqa: PLC0415 - imports the SDK

    url = "https://agent:pw-123@mcp.example.invalid/mcp?key=K-456"

    async def failing() -> str:
        connection = Connection(McpServer(name="web", url=url))
        return connection._start_error(ExceptionGroup("", [ValueError(f"bad url {url}")])).message

    assert asyncio.run(failing()) == (
        "MCP server 'web' could not be reached at https://mcp.example.invalid/mcp "
        "(query string not shown): ValueError: bad url "
        "https://<redacted>@mcp.example.invalid/mcp?<redacted>"
    )


def test_a_failure_echoing_the_url_as_sent_reads_without_its_credentials() -> None:
    """A server echoing the request as httpx2 sent it (a space percent-encoded): still redacted."""
    from coordinator.adapters.mcp._session import Connection  # noqa: PLC0415 - imports the SDK

    url = "https://us er:pw 123@mcp.example.invalid/mcp?key=K 456"
    echoed = "unauthorized: https://us%20er:pw%20123@mcp.example.invalid/mcp?key=K%20456"

    async def failing() -> str:
        connection = Connection(McpServer(name="web", url=url))
        return connection._start_error(ValueError(echoed)).message

    message = asyncio.run(failing())
    assert message.endswith(
        "ValueError: unauthorized: https://<redacted>@mcp.example.invalid/mcp?<redacted>"
    )
    for part in ("us%20er", "pw%20123", "K%20456", "us er", "K 456"):
        assert part not in message


def test_a_server_that_does_not_answer_in_time_fails_the_call(tmp_path: Path) -> None:
    """A request past the server's timeout fails the call, saying how long it waited."""
    server = attrs.evolve(ops(tmp_path), timeout=1, start_timeout=60)
    conversation, result = run_calls(tmp_path, ("call_1", "slow", {}), servers=[server])
    (response,) = result.responses
    assert response.is_error
    assert response.content == "MCP server 'ops' did not run tool 'slow' within 1 s"
    assert_invariants(conversation)


def test_a_stderr_file_that_cannot_be_opened_fails_the_call_naming_it(tmp_path: Path) -> None:
    """A server's stderr file in a folder that is not there: the call fails, naming the file."""
    log = tmp_path / "missing" / "ops.log"
    server = attrs.evolve(ops(tmp_path), stderr=log)
    conversation, result = run_calls(tmp_path, ("call_1", "deploy", {}), servers=[server])
    (response,) = result.responses
    assert response.is_error
    assert response.content == (
        f"MCP server 'ops' could not be started: its stderr file {log} cannot be opened: "
        "No such file or directory"
    )
    assert_invariants(conversation)


def test_a_tool_the_server_does_not_offer_fails_naming_what_it_offers(tmp_path: Path) -> None:
    """A tool name the server does not list: the call fails, listing the server's tools."""
    conversation, result = run_calls(tmp_path, ("call_1", "nope", {}))
    (response,) = result.responses
    assert response.is_error
    assert response.content.startswith("MCP server 'ops' offers no tool 'nope' (it offers: ")
    assert "deploy" in response.content
    assert_invariants(conversation)


def test_executors_lists_every_tool_of_every_server(tmp_path: Path) -> None:
    """executors() starts each server and gives every tool it lists, under its own name."""

    async def listed() -> list[str]:
        async with McpToolbox([ops(tmp_path)]) as toolbox:
            return sorted(await toolbox.executors())

    assert asyncio.run(listed()) == [
        "crash",
        "deploy",
        "leaky_login",
        "legacy_deploy",
        "legacy_leaky_login",
        "legacy_login",
        "login",
        "pid",
        "register",
        "signup",
        "slow",
    ]


@contextlib.asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` (an MCP server's ASGI app) served over HTTP in this process: its MCP url."""
    import uvicorn  # noqa: PLC0415 - the MCP SDK's own dependency, for the HTTP tests alone

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    for _ in range(3000):  # uvicorn says it has started only by a flag
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await serving


def test_a_server_reached_over_streamable_http_asks_as_one_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """url: the same MRTR round trips over streamable HTTP (the server in this process)."""
    from mcp_servers import ops as ops_server  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)  # where the in-process server notes what it received
    conversation = conversation_on_disk(tmp_path / "conversation")
    prompter = ScriptedPrompter().answer({"ok": True}).answer({"env": "dev"})

    async def over_http() -> Play:
        async with served(ops_server("web", None).streamable_http_app()) as url:
            return await play(
                conversation,
                [McpServer(name="web", url=url, timeout=30)],
                [("call_1", "deploy", {"service": "api"})],
                tools={"deploy": ("web", "deploy")},
                prompter=prompter,
            )

    result = asyncio.run(over_http())
    assert result.responses[0].content == "web: deployed api to dev"
    assert len(asked(conversation)) == 2
    assert_invariants(conversation)
