"""RFD 082 Phase 3, end to end: through the driver, scripted prompter and backend, a real store.

After every test: each inquiry request has exactly one response within its
turn, and the saved conversation holds no secret answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
)

from coordinator import Conversation, load_conversation
from coordinator.adapters._builtins import AskUser
from coordinator.driver._backend import BackendErrorKind
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import Ask, BuiltinExecutor, BuiltinOutcome, Success
from coordinator.driver._prompting import ScriptedPrompter
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatRequest,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    Redacted,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import SKIPPED_BY_USER

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

APPLY = Question.boolean("apply", "Apply the patch?", default=True)
PASSPHRASE = Question.secret("passphrase", "SSH passphrase?")
SECRET = "correct horse battery staple"


def _requests(conversation: Conversation) -> list[str]:
    return [r.id for r in payloads(conversation, InquiryRequest)]


def _responses(conversation: Conversation) -> list[object]:
    return payloads(conversation, (Answered, Cancelled, Redacted))


def test_attempt_counter_within_a_tool_call(tmp_path: Path) -> None:
    """A tool asking the same question twice in one call gets .1 and .2, both paired."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([APPLY], reask=1)
    prompter = ScriptedPrompter().answer(value=False).answer(value=True)
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(tool)}, config=UNATTENDED, prompter=prompter
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert _requests(conversation) == ["call_1.apply.1", "call_1.apply.2"]
    assert _responses(conversation) == [
        Answered(id="call_1.apply.1", answer=False),
        Answered(id="call_1.apply.2", answer=True),
    ]
    assert tool.runs[-1] == {"apply": True}  # latest answer wins
    assert_invariants(conversation)


def test_cross_cycle_reuse_of_a_tool_call_id(tmp_path: Path) -> None:
    """A provider reusing a tool-call id in a later cycle of the turn gets .2, not a collision."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    for _ in range(2):
        run(coordinator.run(assistant_calls(conversation, ("fs_modify_file_0", "fs"))))
    assert _requests(conversation) == ["fs_modify_file_0.apply.1", "fs_modify_file_0.apply.2"]
    assert_invariants(conversation)


def test_per_turn_reset(tmp_path: Path) -> None:
    """A new turn starts the attempt counter at 1 again."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="again"))
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert _requests(conversation) == ["call_1.apply.1", "call_1.apply.1"]
    assert_invariants(conversation)


def test_inquiry_id_survives_the_prompt_round_trip(tmp_path: Path) -> None:
    """The id given to the request is the one the prompt carries and the response uses."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    (shown,) = prompter.shown
    assert shown.inquiry_id == _requests(conversation)[0]  # type: ignore[union-attr]
    assert _responses(conversation) == [Answered(id=shown.inquiry_id, answer=True)]  # type: ignore[union-attr]
    assert_invariants(conversation)


def test_secret_from_the_prompter(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A secret typed at the prompt is Redacted on disk and reaches the tool's next run."""
    caplog.set_level(logging.DEBUG)
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([PASSPHRASE])
    prompter = ScriptedPrompter().answer(SECRET)
    coordinator = ToolCoordinator(
        conversation, tools={"ssh": executor(tool)}, config=UNATTENDED, prompter=prompter
    )
    responses = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert _responses(conversation) == [Redacted(id="call_1.passphrase.1")]
    assert tool.runs[-1] == {"passphrase": SECRET}
    assert SECRET not in repr(responses)
    assert SECRET not in caplog.text
    assert_invariants(conversation, [SECRET])


def test_secret_static_answer(tmp_path: Path) -> None:
    """A configured answer to a secret question reaches the tool and is recorded as Redacted."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([PASSPHRASE])
    config = parse_tools_config(
        {"tools": {"ssh": {"run": "unattended", "questions": {"passphrase": {"answer": SECRET}}}}}
    )
    coordinator = ToolCoordinator(conversation, tools={"ssh": executor(tool)}, config=config)
    run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert _responses(conversation) == [Redacted(id="call_1.passphrase.1")]
    assert tool.runs == [{}, {"passphrase": SECRET}]  # asked first: nothing pre-seeded
    assert_invariants(conversation, [SECRET])


def test_cache_bypass_for_secrets_on_write_and_read(tmp_path: Path) -> None:
    """Remembering a secret is ignored: the next tool call asking it is prompted again."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(SECRET, remember=True).answer(SECRET)
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": executor(AskingTool([PASSPHRASE]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"), ("call_2", "ssh"))))
    assert len(prompter.shown) == 2
    assert dict(coordinator.turn_state.remembered_tool_answers) == {}
    assert_invariants(conversation, [SECRET])


def test_non_secret_answers_flow_through_the_cache(tmp_path: Path) -> None:
    """A remembered boolean answers the same question of a later call, recorded as Answered."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True, remember=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "fs"))))
    assert len(prompter.shown) == 1
    assert _responses(conversation) == [
        Answered(id="call_1.apply.1", answer=True),
        Answered(id="call_2.apply.1", answer=True),
    ]
    assert_invariants(conversation)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        (BackendErrorKind.CANCELLED, CancellationReason.USER),
        (BackendErrorKind.PROVIDER, CancellationReason.BACKEND_ERROR),
        (BackendErrorKind.MISSING_STRUCTURED_DATA, CancellationReason.BACKEND_ERROR),
        (BackendErrorKind.ANSWER_EXTRACTION, CancellationReason.BACKEND_ERROR),
        (BackendErrorKind.OTHER, CancellationReason.BACKEND_ERROR),
    ],
)
def test_cancellation_reason_mapping(
    tmp_path: Path, kind: BackendErrorKind, reason: CancellationReason
) -> None:
    """Each backend failure kind lands as the reason RFD 082's table gives it."""
    conversation = conversation_on_disk(tmp_path)
    backend = ScriptedInquiryBackend().fail(kind, "the provider said no")
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=parse_tools_config({"defaults": {"run": "unattended", "detached": "auto"}}),
        backend=backend,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert _responses(conversation) == [Cancelled(id="call_1.apply.1", reason=reason)]
    if reason is CancellationReason.USER:
        assert response == ToolCallResponse(
            id="call_1", content="Tool input cancelled by user.", is_error=False
        )
    else:
        assert response.is_error
        assert "the provider said no" in response.content
    assert_invariants(conversation)


def test_a_cancelled_prompt_is_a_user_cancellation(tmp_path: Path) -> None:
    """Ctrl-C at the prompt records Cancelled(user) and tells the model the input was cancelled."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().cancel()
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert _responses(conversation) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    assert response.content == "Tool input cancelled by user."
    assert_invariants(conversation)


def test_secret_routing_guard_without_a_terminal(tmp_path: Path) -> None:
    """No terminal: a secret fails its tool (no_prompt_backend); nothing goes to the model."""
    conversation = conversation_on_disk(tmp_path)
    backend = ScriptedInquiryBackend().respond("leaked")
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": executor(AskingTool([PASSPHRASE]))},
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
        backend=backend,
        terminal=False,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert _responses(conversation) == [
        Cancelled(id="call_1.passphrase.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]
    assert response.is_error
    assert backend.tasks == []
    assert_invariants(conversation)


def test_secret_routing_guard_for_the_assistant(tmp_path: Path) -> None:
    """A secret targeted at the assistant fails with assistant_routing_denied; nothing is sent."""
    conversation = conversation_on_disk(tmp_path)
    backend = ScriptedInquiryBackend().respond("leaked")
    config = parse_tools_config(
        {
            "tools": {
                "ssh": {"run": "unattended", "questions": {"passphrase": {"target": "assistant"}}}
            }
        }
    )
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": executor(AskingTool([PASSPHRASE]))},
        config=config,
        backend=backend,
        prompter=ScriptedPrompter(),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert _responses(conversation) == [
        Cancelled(id="call_1.passphrase.1", reason=CancellationReason.ASSISTANT_ROUTING_DENIED)
    ]
    assert response.is_error
    assert backend.tasks == []
    assert_invariants(conversation)


def test_the_assistant_source_path(tmp_path: Path) -> None:
    """A built-in that declares the assistant as source is recorded so; others as the tool."""
    conversation = conversation_on_disk(tmp_path)
    tools = {
        "ask_user": BuiltinExecutor(AskUser()),
        "synthetic": executor(AskingTool([APPLY], source=InquirySource.assistant())),
        "fs": executor(AskingTool([APPLY])),
    }
    prompter = ScriptedPrompter().answer("dev").answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools=tools,
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
        prompter=prompter,
    )
    requests = [
        ToolCallRequest(
            id="call_1",
            name="ask_user",
            arguments={
                "question": "Which branch?",
                "answer_type": "select",
                "options": ["main", "dev"],
            },
        ),
        ToolCallRequest(id="call_2", name="synthetic", arguments={}),
        ToolCallRequest(id="call_3", name="fs", arguments={}),
    ]
    for request in requests:
        conversation.stream.append(request)
    responses = run(coordinator.run(requests))
    sources = {r.id.split(".")[0]: r.source for r in payloads(conversation, InquiryRequest)}
    assert sources["call_1"].kind is SourceKind.ASSISTANT
    assert sources["call_2"].kind is SourceKind.ASSISTANT
    assert sources["call_3"] == InquirySource.tool("fs")
    assert responses[0].content == '{"answer_type":"select","answer":"dev"}'
    assert_invariants(conversation)


def test_an_invalid_static_answer_is_recorded_and_explained(tmp_path: Path) -> None:
    """A misfit static answer: invalid_static_answer recorded, the model told what was wrong."""
    conversation = conversation_on_disk(tmp_path)
    config = parse_tools_config(
        {"tools": {"fs": {"run": "unattended", "questions": {"apply": {"answer": "yes"}}}}}
    )
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([APPLY]))}, config=config
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert _responses(conversation) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.INVALID_STATIC_ANSWER)
    ]
    assert response.is_error
    assert "question 'apply'" in response.content
    assert '"yes"' in response.content
    assert "a boolean" in response.content
    assert_invariants(conversation)


def test_a_tool_asking_once_too_often_has_that_question_recorded_and_closed(
    tmp_path: Path,
) -> None:
    """The question past max_attempts is on disk, cancelled as attempts_exhausted, never asked."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY], reask=5))},
        config=UNATTENDED,
        prompter=prompter,
        max_attempts=2,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert len(prompter.shown) == 2
    assert _requests(conversation) == ["call_1.apply.1", "call_1.apply.2", "call_1.apply.3"]
    assert _responses(conversation)[-1] == Cancelled(
        id="call_1.apply.3", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )
    assert response.is_error
    assert "again after 2 answers" in response.content
    reloaded = load_conversation(tmp_path)
    assert payloads(reloaded, (Cancelled, ToolCallResponse))[-2:] == [
        Cancelled(id="call_1.apply.3", reason=CancellationReason.ATTEMPTS_EXHAUSTED),
        response,
    ]
    assert_invariants(conversation)


def test_a_tool_asking_too_many_questions_is_stopped(tmp_path: Path) -> None:
    """Past max_questions the next question is recorded, closed, and the call fails."""
    conversation = conversation_on_disk(tmp_path)
    questions = [Question.boolean(f"step_{n}", f"Do step {n}?") for n in range(1, 6)]
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool(questions))},
        config=UNATTENDED,
        prompter=prompter,
        max_questions=2,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert len(prompter.shown) == 2
    assert _requests(conversation) == ["call_1.step_1.1", "call_1.step_2.1", "call_1.step_3.1"]
    assert _responses(conversation)[-1] == Cancelled(
        id="call_1.step_3.1", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )
    assert response.is_error
    assert "asked another question after 2 answers" in response.content
    assert_invariants(conversation)


def test_a_resumed_turn_never_reuses_recorded_ids(tmp_path: Path) -> None:
    """A coordinator started on a turn that already holds call_1.apply.1 continues at .2."""
    conversation = conversation_on_disk(tmp_path)
    first = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    run(first.run(assistant_calls(conversation, ("call_1", "fs"))))
    reloaded = load_conversation(tmp_path)
    second = ToolCoordinator(
        reloaded,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    run(second.run(assistant_calls(reloaded, ("call_1", "fs"))))
    assert _requests(reloaded) == ["call_1.apply.1", "call_1.apply.2"]
    assert_invariants(reloaded)


class _AsksForever(AskingTool):
    """Asks its question on every run; gives up by itself only after 100 runs."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        del arguments
        self.runs.append(dict(answers))
        if len(self.runs) > 100:
            return Success("the engine never stopped me")
        return Ask(self.questions[0])


def test_a_remembered_question_asked_again_and_again_still_stops(tmp_path: Path) -> None:
    """A tool re-asking a question the turn remembers stops at max_attempts, not fed for ever."""
    conversation = conversation_on_disk(tmp_path)
    tool = _AsksForever([APPLY])
    prompter = ScriptedPrompter().answer(value=True, remember=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(tool)},
        config=UNATTENDED,
        prompter=prompter,
        max_attempts=3,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response.is_error
    assert "the engine never stopped me" not in response.content
    assert len(prompter.shown) == 1  # then remembered
    assert len(tool.runs) == 4  # the first run, then one per answer: remembered twice
    assert _responses(conversation)[-1] == Cancelled(
        id="call_1.apply.4", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )
    assert_invariants(conversation)


_PERMISSION_NAMED = Question.boolean("__permission__", "Overwrite the file?")
_ASK_FIRST = parse_tools_config({"tools": {"fs": {"run": "ask"}}})


def test_a_remembered_permission_never_answers_a_question(tmp_path: Path) -> None:
    """A person's Y on the permission prompt is no answer to the tool's own question."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().permit(remember=True).answer(value=False).answer(value=False)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([_PERMISSION_NAMED]))},
        config=_ASK_FIRST,
        prompter=prompter,
    )
    for call_id in ("call_1", "call_2"):
        run(coordinator.run(assistant_calls(conversation, (call_id, "fs"))))
    shown = [type(prompt).__name__ for prompt in prompter.shown]
    assert shown == ["ShowPermissionPrompt", "ShowQuestion", "ShowQuestion"]
    assert _responses(conversation) == [
        Answered(id="call_1.__permission__.1", answer=False),
        Answered(id="call_2.__permission__.1", answer=False),
    ]
    assert dict(coordinator.turn_state.remembered_tool_answers) == {}
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {
        "fs.__permission__": "y"
    }
    assert_invariants(conversation)


def test_a_remembered_answer_never_permits_a_tool(tmp_path: Path) -> None:
    """A person's Y to a question, even one named __permission__, leaves the next call asking."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().permit().answer(value=True, remember=True).deny()
    tool = AskingTool([_PERMISSION_NAMED])
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(tool)}, config=_ASK_FIRST, prompter=prompter
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    (second,) = run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    shown = [type(prompt).__name__ for prompt in prompter.shown]
    assert shown == ["ShowPermissionPrompt", "ShowQuestion", "ShowPermissionPrompt"]
    assert second.content == SKIPPED_BY_USER
    assert len(tool.runs) == 2  # call_1 only: asked, then answered
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {}
    assert_invariants(conversation)
