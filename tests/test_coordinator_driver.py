"""The async driver: parallel tools, one prompt at a time, persistence, cancellation."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import orjson
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

from coordinator import Conversation
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import BuiltinOutcome, BuiltinTool, Completed, ExecutorResult
from coordinator.driver._prompting import (
    PermissionAnswer,
    PromptCancelled,
    QuestionAnswer,
    ScriptedPrompter,
)
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatRequest,
    InquiryRequest,
    JsonValue,
    Question,
    Redacted,
    ShowPermissionPrompt,
    ShowQuestion,
    ToolAnswer,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from coordinator.driver._backend import InquiryTask
    from coordinator.driver._executors import Executor

APPLY = Question.boolean("apply", "Apply the patch?", default=True)
BRANCH = Question.select("branch", "Which branch?", ["main", "dev"])
MESSAGE = Question.text_input("message", "Commit message?")
PASSPHRASE = Question.secret("passphrase", "SSH passphrase?")
SECRET = "correct horse battery staple"


class OnePromptAtATime(ScriptedPrompter):
    """A scripted prompter that fails the test if two prompts are ever on screen at once."""

    def __init__(self) -> None:
        """Track how many prompts are showing."""
        super().__init__()
        self.showing = 0
        self.most = 0

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer after yielding, so overlapping prompts would be seen."""
        self.showing += 1
        self.most = max(self.most, self.showing)
        await asyncio.sleep(0)
        try:
            return await super().ask_question(prompt)
        finally:
            self.showing -= 1


def test_parallel_tools_with_interleaving_questions(tmp_path: Path) -> None:
    """Three tools asking two questions each: all paired, prompts one at a time, plan order."""
    conversation = conversation_on_disk(tmp_path)
    prompter = OnePromptAtATime()
    for tool in ("a", "b", "c"):
        prompter.answer("dev", tool=tool, question="branch")
        prompter.answer(f"message from {tool}", tool=tool, question="message")
    tools = {name: executor(AskingTool([BRANCH, MESSAGE])) for name in ("a", "b", "c")}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED, prompter=prompter)
    calls = assistant_calls(conversation, ("call_a", "a"), ("call_b", "b"), ("call_c", "c"))
    responses = run(coordinator.run(calls))
    assert [r.id for r in responses] == ["call_a", "call_b", "call_c"]
    assert responses[1].content == "answers: branch='dev', message='message from b'"
    assert prompter.most == 1
    requests = [r.id for r in payloads(conversation, InquiryRequest)]
    # The questions of different tools interleave on the stream.
    assert requests[:3] == ["call_a.branch.1", "call_b.branch.1", "call_c.branch.1"]
    assert len(requests) == 6
    assert_invariants(conversation)


def test_the_request_is_on_disk_before_the_question_is_shown(tmp_path: Path) -> None:
    """When a prompt appears, its inquiry request is already in events.json."""
    conversation = conversation_on_disk(tmp_path)
    seen_on_disk: list[list[str]] = []

    class Checking(ScriptedPrompter):
        async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
            events = orjson.loads((tmp_path / "events.json").read_bytes())
            seen_on_disk.append([e["id"] for e in events if e["type"] == "inquiry_request"])
            return await super().ask_question(prompt)

    prompter = Checking().answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert seen_on_disk == [["call_1.apply.1"]]
    assert_invariants(conversation)


def test_the_request_is_on_disk_before_the_model_is_asked(tmp_path: Path) -> None:
    """When the backend is asked, the request is on disk and absent from what it is shown."""
    conversation = conversation_on_disk(tmp_path)
    tasks: list[tuple[list[str], InquiryTask]] = []

    class Checking(ScriptedInquiryBackend):
        async def answer(self, task: InquiryTask) -> JsonValue:
            events = orjson.loads((tmp_path / "events.json").read_bytes())
            tasks.append(([e["type"] for e in events], task))
            return await super().answer(task)

    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        backend=Checking().respond(value=True),
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    ((kinds, task),) = tasks
    assert "inquiry_request" in kinds
    view_kinds = [entry.kind for entry in task.view.events]
    assert "inquiry_request" not in view_kinds
    assert view_kinds[-1] == "tool_call_request"
    assert task.inquiry_id == "call_1.apply.1"
    assert_invariants(conversation)


class Blocking(ScriptedPrompter):
    """A prompter that never answers (someone walked away from the terminal)."""

    def __init__(self) -> None:
        """Note when a prompt is showing."""
        super().__init__()
        self.showing = asyncio.Event()

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Wait forever."""
        self.shown.append(prompt)
        self.showing.set()
        await asyncio.Event().wait()
        raise AssertionError  # pragma: no cover


def test_an_explicit_cancel_closes_every_question_and_call(tmp_path: Path) -> None:
    """cancel() while a prompt waits: the question is withdrawn, every call answered."""
    conversation = conversation_on_disk(tmp_path)
    prompter = Blocking()
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY])), "slow": SlowExecutor()},
        config=UNATTENDED,
        prompter=prompter,
    )

    async def scenario() -> list[ToolCallResponse]:
        batch = asyncio.create_task(
            coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "slow")))
        )
        await prompter.showing.wait()
        coordinator.cancel()
        return await batch

    responses = run(scenario())
    # Nobody answered or cancelled the question: its call was stopped (not `user`).
    assert [r.content for r in responses] == [
        "Tool call was interrupted.",
        "Tool call was interrupted.",
    ]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.WITHDRAWN)
    ]
    assert_invariants(conversation)


def test_a_cancel_with_no_batch_running_does_not_stop_the_next_one(tmp_path: Path) -> None:
    """A stale stop is dropped: the next batch runs its tools to the end."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([])
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(tool)}, config=UNATTENDED)
    coordinator.cancel()
    responses = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert [r.is_error for r in responses] == [False]
    assert tool.runs == [{}]
    assert_invariants(conversation)


class SlowExecutor:
    """An executor that takes longer than any test waits."""

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Sleep, then finish (never reached in the tests)."""
        del call, answers
        await asyncio.sleep(3600)
        return Completed(content="done")  # pragma: no cover


def test_cancelling_the_task_closes_everything_and_saves(tmp_path: Path) -> None:
    """Cancelling the awaiting task pairs everything, saves it, then raises CancelledError."""
    conversation = conversation_on_disk(tmp_path)
    prompter = Blocking()
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )

    async def scenario() -> None:
        batch = asyncio.create_task(
            coordinator.run(assistant_calls(conversation, ("call_1", "fs")))
        )
        await prompter.showing.wait()
        batch.cancel()
        await batch

    with pytest.raises(asyncio.CancelledError):
        run(scenario())
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    assert [e["type"] for e in saved][-3:] == [
        "inquiry_request",
        "inquiry_response",
        "tool_call_response",
    ]
    assert saved[-2]["reason"] == "withdrawn"
    assert_invariants(conversation)


def test_a_queued_question_takes_what_was_remembered_meanwhile(tmp_path: Path) -> None:
    """Two calls ask the same question; Y on the first answers the queued second unprompted."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer(value=True, remember=True)
    tools = {"fs": executor(AskingTool([APPLY]))}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED, prompter=prompter)
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "fs"))))
    assert len(prompter.shown) == 1
    assert payloads(conversation, Answered) == [
        Answered(id="call_1.apply.1", answer=True),
        Answered(id="call_2.apply.1", answer=True),
    ]
    assert_invariants(conversation)


def test_permission_prompts_y_remembered_and_n_with_a_reason(tmp_path: Path) -> None:
    """Y runs and remembers (no second prompt for that tool); r skips with the reason."""
    conversation = conversation_on_disk(tmp_path)
    prompter = (
        ScriptedPrompter().permit(remember=True, tool="fs").deny(reason="not now", tool="rm")
    )
    tools = {"fs": executor(AskingTool([])), "rm": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, prompter=prompter)
    calls = assistant_calls(conversation, ("call_1", "fs"), ("call_2", "rm"), ("call_3", "fs"))
    responses = run(coordinator.run(calls))
    assert [r.content for r in responses] == [
        "answers: ",
        "Tool skipped by user: not now",
        "answers: ",
    ]
    assert [type(p).__name__ for p in prompter.shown] == ["ShowPermissionPrompt"] * 2
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {
        "fs.__permission__": "y"
    }
    assert_invariants(conversation)


def test_edited_arguments_reach_the_tool(tmp_path: Path) -> None:
    """Arguments edited at the permission prompt are what the tool runs with."""
    conversation = conversation_on_disk(tmp_path)
    seen: list[Mapping[str, JsonValue]] = []

    class Echo(BuiltinTool):
        async def run(
            self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
        ) -> BuiltinOutcome:
            seen.append(arguments)
            return await AskingTool([]).run(arguments, answers)

    prompter = ScriptedPrompter().permit(arguments={"path": "safe.txt"})
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(Echo())}, prompter=prompter)
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert seen == [{"path": "safe.txt"}]
    assert_invariants(conversation)


def test_a_cancelled_permission_prompt_skips_the_tool(tmp_path: Path) -> None:
    """Ctrl-C at the permission prompt skips the tool without remembering anything."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().cancel_permission()
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([]))}, prompter=prompter
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response == ToolCallResponse(
        id="call_1", content="Tool skipped by user.", is_error=False
    )
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {}
    assert_invariants(conversation)


def test_ask_without_a_terminal_follows_the_detached_policy(tmp_path: Path) -> None:
    """With no terminal, run mode ask fails the call (deny); with detached auto, it runs."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([])
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(tool)})
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response.is_error
    assert "detached policy for permissions is 'deny'" in response.content
    assert tool.runs == []
    auto = parse_tools_config({"defaults": {"detached": {"run": "auto"}}})
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(tool)}, config=auto)
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert response.content == "answers: "


def test_skip_never_runs_the_tool(tmp_path: Path) -> None:
    """Run mode skip answers the call without running the tool."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([])
    config = parse_tools_config({"tools": {"fs": {"run": "skip"}}})
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(tool)}, config=config)
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response.content == "Tool skipped by configuration."
    assert tool.runs == []


def test_an_unknown_tool_is_answered_as_unavailable(tmp_path: Path) -> None:
    """A call to a tool with no executor fails at once, telling the model so."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(conversation, tools={})
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "nope"))))
    assert response.is_error
    assert response.content.startswith("Tool 'nope' is not available.")
    assert_invariants(conversation)


def test_a_crashing_executor_fails_only_its_call(tmp_path: Path) -> None:
    """An executor that raises gives its call an error response; the others run."""
    conversation = conversation_on_disk(tmp_path)

    class Crashing:
        async def execute(
            self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
        ) -> ExecutorResult:
            del call, answers
            raise OSError("disk on fire")

    tools: dict[str, Executor] = {"bad": Crashing(), "good": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED)
    responses = run(coordinator.run(assistant_calls(conversation, ("c1", "bad"), ("c2", "good"))))
    assert responses[0] == ToolCallResponse(
        id="c1", content="Tool 'bad' failed: OSError: disk on fire", is_error=True
    )
    assert responses[1].content == "answers: "
    assert_invariants(conversation)


def test_a_secret_echoed_by_its_tool_is_masked(tmp_path: Path) -> None:
    """A tool that prints the secret it was given has it masked before anything is recorded."""
    conversation = conversation_on_disk(tmp_path)
    # AskingTool reports every answer it received, the secret included.
    prompter = ScriptedPrompter().answer(SECRET)
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": executor(AskingTool([PASSPHRASE]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert response.content == "answers: passphrase='<secret>'"
    assert payloads(conversation, Redacted) == [Redacted(id="call_1.passphrase.1")]
    assert_invariants(conversation, [SECRET])


def test_a_batch_needs_its_requests_in_the_current_turn(tmp_path: Path) -> None:
    """Running a tool call whose request was never appended is refused, naming it."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(conversation, tools={})
    stray = ToolCallRequest(id="call_9", name="fs", arguments={})
    with pytest.raises(ValueError, match="tool call 'call_9' \\(fs\\) is not waiting"):
        run(coordinator.run([stray]))
    assert len(conversation.stream) == 2


def test_a_conversation_without_a_store_is_not_saved(tmp_path: Path) -> None:
    """A conversation never loaded or saved stays in memory only."""
    conversation = Conversation.new()
    conversation.stream.append(ChatRequest(content="hi"))
    calls = assistant_calls(conversation, ("call_1", "fs"))
    coordinator = ToolCoordinator(conversation, tools={"fs": executor(AskingTool([]))})
    run(coordinator.run(calls))
    assert coordinator.autosave is False
    assert list(tmp_path.iterdir()) == []


def test_a_terminal_needs_a_prompter() -> None:
    """Claiming a terminal without a prompter is refused at construction."""
    with pytest.raises(ValueError, match="needs a prompter"):
        ToolCoordinator(Conversation.new(), tools={}, terminal=True)


class RefusingPrompter(ScriptedPrompter):
    """Cancels every permission prompt and question."""

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Cancel."""
        self.shown.append(prompt)
        raise PromptCancelled

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Cancel."""
        self.shown.append(prompt)
        raise PromptCancelled


def test_permission_prompts_queue_in_arrival_order(tmp_path: Path) -> None:
    """Two permission prompts are shown one after the other, in the order the calls came."""
    conversation = conversation_on_disk(tmp_path)
    prompter = RefusingPrompter()
    tools = {"a": executor(AskingTool([])), "b": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, prompter=prompter)
    run(coordinator.run(assistant_calls(conversation, ("c1", "a"), ("c2", "b"))))
    assert [p.tool_name for p in prompter.shown] == ["a", "b"]
    assert_invariants(conversation)
