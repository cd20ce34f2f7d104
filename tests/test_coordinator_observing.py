"""What on_step tells an observer: typed facts read from the rows that fired, never from text."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assistant_calls,
    conversation_on_disk,
    executor,
    run,
)

from coordinator import EventEntry
from coordinator.driver import CallOutcome, PermissionBy, Resolution, _tool_coordinator
from coordinator.driver._backend import BackendErrorKind
from coordinator.driver._config import parse_tools_config
from coordinator.driver._observing import (
    Delivery,
    FiredRow,
    Permission,
    StepFacts,
    fired_row,
    step_facts,
)
from coordinator.driver._prompting import ScriptedPrompter
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    INQUIRY_MACHINE,
    INQUIRY_ROWS,
    TOOL_CALL_MACHINE,
    TOOL_CALL_ROWS,
    Answered,
    CancellationReason,
    Cancelled,
    Fired,
    InquiryFacts,
    InquiryRequest,
    InquirySource,
    InquiryState,
    Question,
    Redacted,
    Row,
    RunMode,
    Step,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolCallState,
    TurnState,
)

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from coordinator.driver._backend import InquiryBackend
    from coordinator.driver._config import ToolsConfig
    from coordinator.driver._executors import Executor
    from coordinator.driver._prompting import Prompter

APPLY = Question.boolean("apply", "Apply?")
TOKEN = Question.secret("token", "Token?")
ASK = parse_tools_config({"defaults": {"run": "ask"}})


def _typed(machine: str, row: Row[Any, Any]) -> FiredRow:
    return fired_row(Fired(machine=machine, row=row, records=(), effects=()))


def _asking_call() -> ToolCall:
    """A call whose tool asked a question routed to the person (an inquiry to report on)."""
    call, _ = ToolCall.begin(
        turn=TurnState(),
        request=ToolCallRequest(id="c1", name="fs", arguments={}),
        run_mode=RunMode.UNATTENDED,
        terminal=True,
        remembered_permission=None,
    )
    call.needs_input(
        APPLY,
        source=InquirySource.tool("fs"),
        accumulated_answers={},
        facts=InquiryFacts(terminal=True),
    )
    return call


def _facts_of(machine: str, row: Row[Any, Any]) -> StepFacts:
    """The facts of a step in which only ``row`` fired."""
    fired = Fired(machine=machine, row=row, records=(), effects=())
    return step_facts(_asking_call(), Step(records=(), effects=(), fired=(fired,)), [])


@pytest.mark.parametrize("row", TOOL_CALL_ROWS, ids=lambda row: row.id)
def test_a_tool_call_rows_outcome_and_permission_are_told_as_its_columns_say(
    row: Row[ToolCallState, Any],
) -> None:
    """The step's outcome, permission and delivery are the row's columns, policy mode included."""
    facts = _facts_of(TOOL_CALL_MACHINE.name, row)
    assert facts.outcome is row.outcome
    ruling = row.permission
    expected = (
        None if ruling is None else Permission(run=ruling.run, by=ruling.by, detached=row.detached)
    )
    assert facts.permission == expected
    delivery = row.delivery
    assert facts.delivery == (
        None
        if delivery is None
        else Delivery(delivered=delivery.delivered, by=delivery.by, detached=row.detached)
    )
    assert facts.question is None


@pytest.mark.parametrize("row", INQUIRY_ROWS, ids=lambda row: row.id)
def test_an_inquiry_rows_resolution_is_told_as_its_column_says(
    row: Row[InquiryState, Any],
) -> None:
    """The step's question resolution is the row's resolution column; nothing else is told."""
    facts = _facts_of(INQUIRY_MACHINE.name, row)
    assert facts.question is not None
    assert facts.question.resolution is row.resolution
    assert facts.question.detached is row.detached
    assert (facts.outcome, facts.permission) == (None, None)


def test_a_fired_row_is_the_tables_own_row_typed() -> None:
    """Machine, trigger, source, destination and guard come from the table, not from a string."""
    row = next(r for r in TOOL_CALL_ROWS if r.guard is not None and r.guard.name == "skip")
    typed = _typed("tool_call", row)
    assert typed.row is row
    assert (typed.trigger, typed.source, typed.dest, typed.guard) == (
        "begin",
        ToolCallState.NEW,
        ToolCallState.SKIPPED,
        "skip",
    )


class _Observed:
    """Runs one batch with an observer; the steps it was told of, by tool call."""

    def __init__(
        self,
        tmp_path: Path,
        tools: dict[str, Executor],
        calls: list[tuple[str, str]],
        *,
        config: ToolsConfig = UNATTENDED,
        prompter: Prompter | None = None,
        backend: InquiryBackend | None = None,
        max_attempts: int = 8,
    ) -> None:
        self.steps: list[StepFacts] = []
        self.conversation = conversation_on_disk(tmp_path)
        self.coordinator = ToolCoordinator(
            self.conversation,
            tools=tools,
            config=config,
            prompter=prompter,
            backend=backend,
            max_attempts=max_attempts,
            on_step=self.steps.append,
        )
        self.responses = run(self.coordinator.run(assistant_calls(self.conversation, *calls)))

    def of(self, call_id: str) -> list[StepFacts]:
        return [step for step in self.steps if step.tool_call_id == call_id]

    def ended(self, call_id: str) -> StepFacts:
        (last,) = [step for step in self.of(call_id) if step.outcome is not None]
        return last

    def closed(self) -> list[StepFacts]:
        return [s for s in self.steps if s.question is not None and s.question.resolution]


def test_every_appended_entry_is_told_once_with_the_row_that_emitted_it(tmp_path: Path) -> None:
    """The steps' entries are exactly the coordinator's appends, in order, each with its row."""
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([APPLY]))},
        [("c1", "fs")],
        prompter=ScriptedPrompter().answer(value=True),
        config=UNATTENDED,
    )
    told = [recorded.entry for step in observed.steps for recorded in step.entries]
    appended = list(observed.conversation.stream)[-len(told) :]
    assert told == appended
    rows = [
        (type(r.entry.payload).__name__, r.row.machine, r.row.dest)
        for step in observed.steps
        for r in step.entries
    ]
    assert rows == [
        ("InquiryRequest", "inquiry", InquiryState.REQUESTED),
        ("Answered", "inquiry", InquiryState.ANSWERED),
        ("ToolCallResponse", "tool_call", ToolCallState.SUCCEEDED),
    ]


def test_an_unattended_call_runs_by_configuration_and_succeeds(tmp_path: Path) -> None:
    """Permission by configuration, then the outcome succeeded from the row guarded 'ok'."""
    observed = _Observed(tmp_path, {"fs": executor(AskingTool([]))}, [("c1", "fs")])
    first, last = observed.of("c1")
    assert first.permission == Permission(run=True, by=PermissionBy.CONFIGURATION)
    assert first.call_state is ToolCallState.RUNNING
    assert last.outcome is CallOutcome.SUCCEEDED
    assert last.fired[-1].guard == "ok"
    assert last.records == (observed.responses[0],)


def test_each_way_a_call_is_skipped_or_fails_is_told_apart(tmp_path: Path) -> None:
    """Skipped by configuration, by the person (with the reason), remembered; unavailable."""
    config = parse_tools_config({"defaults": {"run": "ask"}, "tools": {"off": {"run": "skip"}}})
    prompter = ScriptedPrompter().deny(remember=True, reason="not today", tool="fs")
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([])), "off": executor(AskingTool([]))},
        [("c1", "fs"), ("c2", "fs"), ("c3", "off"), ("c4", "gone")],
        config=config,
        prompter=prompter,
    )
    by_person = observed.ended("c1")
    assert by_person.outcome is CallOutcome.SKIPPED_BY_USER
    assert by_person.permission == Permission(
        run=False, by=PermissionBy.PERSON, remember=True, reason="not today"
    )
    remembered = observed.ended("c2")
    assert remembered.outcome is CallOutcome.SKIPPED_REMEMBERED
    assert remembered.permission == Permission(run=False, by=PermissionBy.REMEMBERED)
    # "Final state skipped, via the row whose guard is 'remembered_n'": read, not parsed.
    assert (remembered.call_state, remembered.fired[-1].guard) == (
        ToolCallState.SKIPPED,
        "remembered_n",
    )
    assert observed.ended("c3").outcome is CallOutcome.SKIPPED_BY_CONFIGURATION
    assert observed.ended("c3").permission == Permission(run=False, by=PermissionBy.CONFIGURATION)
    assert observed.ended("c4").outcome is CallOutcome.UNAVAILABLE
    assert observed.ended("c4").permission is None


def test_a_person_lets_a_call_run_with_edited_arguments_and_y_is_remembered(
    tmp_path: Path,
) -> None:
    """Y with edited arguments: told as the person's, remembered; the next call runs by memory."""
    prompter = ScriptedPrompter().permit(remember=True, arguments={"path": "b"})
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([]))},
        [("c1", "fs"), ("c2", "fs")],
        config=ASK,
        prompter=prompter,
    )
    (decided,) = [step for step in observed.of("c1") if step.permission is not None]
    assert decided.permission == Permission(
        run=True, by=PermissionBy.PERSON, remember=True, arguments={"path": "b"}
    )
    (again,) = [step for step in observed.of("c2") if step.permission is not None]
    assert again.permission == Permission(run=True, by=PermissionBy.REMEMBERED)


def test_a_cancelled_permission_prompt_is_told_as_cancelled(tmp_path: Path) -> None:
    """Ctrl-C at the permission prompt: the person's skip, marked cancelled."""
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([]))},
        [("c1", "fs")],
        config=ASK,
        prompter=ScriptedPrompter().cancel_permission(),
    )
    ended = observed.ended("c1")
    assert ended.permission == Permission(run=False, by=PermissionBy.PERSON, cancelled=True)
    assert ended.outcome is CallOutcome.SKIPPED_BY_USER


def test_who_asked_each_question_and_how_each_was_resolved(tmp_path: Path) -> None:
    """Person (remembered), memory, configuration, model: each request told with its call."""
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {
                "conf": {"questions": {"apply": {"answer": False}}},
                "bot": {"questions": {"apply": {"target": "assistant"}}},
            },
        }
    )
    observed = _Observed(
        tmp_path,
        {name: executor(AskingTool([APPLY])) for name in ("fs", "conf", "bot")},
        [("c1", "fs"), ("c2", "conf"), ("c3", "bot"), ("c4", "fs")],
        config=config,
        prompter=ScriptedPrompter().answer(value=True, remember=True),
        backend=ScriptedInquiryBackend().respond(value=True),
    )
    asked_by = {
        recorded.entry.payload.id: step.tool_call_id
        for step in observed.steps
        for recorded in step.entries
        if isinstance(recorded.entry.payload, InquiryRequest)
    }
    assert sorted(asked_by.values()) == ["c1", "c2", "c3", "c4"]
    resolved = {
        step.tool_call_id: (step.question.resolution, step.question.remembered)
        for step in observed.closed()
        if step.question is not None
    }
    assert resolved == {
        "c1": (Resolution.PERSON, True),
        "c2": (Resolution.CONFIGURATION, False),
        "c3": (Resolution.MODEL, False),
        "c4": (Resolution.REMEMBERED, False),
    }
    for step in observed.closed():
        assert step.question is not None
        assert asked_by[step.question.inquiry_id or ""] == step.tool_call_id


def test_refused_cancelled_and_failed_questions_say_why(tmp_path: Path) -> None:
    """No terminal for a secret, Ctrl-C, a failing model: resolution, reason and failure told."""
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {"bot": {"questions": {"apply": {"target": "assistant"}}}},
        }
    )
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([APPLY])), "bot": executor(AskingTool([APPLY]))},
        [("c1", "fs"), ("c2", "bot")],
        config=config,
        prompter=ScriptedPrompter().cancel(),
        backend=ScriptedInquiryBackend().fail(BackendErrorKind.OTHER, "slow down"),
    )
    cancelled = observed.ended("c1")
    assert cancelled.outcome is CallOutcome.CANCELLED
    assert cancelled.question is not None
    assert cancelled.question.resolution is Resolution.CANCELLED
    assert cancelled.records[0] == Cancelled(
        id=cancelled.question.inquiry_id or "", reason=CancellationReason.USER
    )
    failed = observed.ended("c2")
    assert failed.outcome is CallOutcome.FAILED
    assert failed.question is not None
    assert failed.question.resolution is Resolution.FAILED
    assert "slow down" in (failed.question.failure or "")

    refused = _Observed(
        tmp_path / "secret", {"vault": executor(AskingTool([TOKEN]))}, [("c1", "vault")]
    )
    ended = refused.ended("c1")
    assert ended.question is not None
    assert ended.question.resolution is Resolution.REFUSED
    assert [type(r) for r in ended.records] == [InquiryRequest, Cancelled, ToolCallResponse]
    assert ended.outcome is CallOutcome.FAILED


def test_a_reask_is_told_as_attempt_n_of_the_limit(tmp_path: Path) -> None:
    """The same question asked again: attempts 1, 2, 3 of 2, the third refused, the call failed."""
    observed = _Observed(
        tmp_path,
        {"fs": executor(AskingTool([APPLY], reask=5))},
        [("c1", "fs")],
        prompter=ScriptedPrompter().answer(value=True).answer(value=True),
        max_attempts=2,
    )
    asked = [
        (step.question.attempt, step.question.max_attempts, step.question.number)
        for step in observed.of("c1")
        if step.question is not None and InquiryRequest in map(type, step.records)
    ]
    assert asked == [(1, 2, 1), (2, 2, 2), (3, 2, 3)]
    last = observed.ended("c1")
    assert last.question is not None
    assert last.question.resolution is Resolution.REFUSED
    assert last.records[1] == Cancelled(
        id=last.question.inquiry_id or "", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )


def test_a_secret_answer_is_told_as_the_persons_never_remembered(tmp_path: Path) -> None:
    """Redacted, answered by the person, not remembered even when asked; no value in the facts."""
    observed = _Observed(
        tmp_path,
        {"vault": executor(AskingTool([TOKEN]))},
        [("c1", "vault")],
        prompter=ScriptedPrompter().answer("hunter2-Zq8v", remember=True),
    )
    (closed,) = observed.closed()
    assert closed.question is not None
    assert (closed.question.resolution, closed.question.remembered) == (Resolution.PERSON, False)
    assert isinstance(closed.records[0], Redacted)
    assert "hunter2-Zq8v" not in repr(observed.steps)


def test_an_interrupted_call_is_told_as_interrupted(tmp_path: Path) -> None:
    """cancel() while a tool runs: the row the interrupt fired, outcome interrupted."""
    steps: list[StepFacts] = []
    conversation = conversation_on_disk(tmp_path)

    class Hangs(AskingTool):
        async def run(self, arguments: Any, answers: Any) -> Any:
            coordinator.cancel()
            return await super().run(arguments, answers)

    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(Hangs([]))},
        config=UNATTENDED,
        on_step=steps.append,
    )
    run(coordinator.run(assistant_calls(conversation, ("c1", "fs"))))
    last = steps[-1]
    assert last.outcome is CallOutcome.INTERRUPTED
    assert last.fired[-1].trigger == "interrupt"


def test_without_an_observer_no_facts_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The facts cost nothing when nobody asks for them: the builder is never called."""

    def refuse(*_: object) -> StepFacts:
        raise AssertionError("facts built with no observer")

    monkeypatch.setattr(_tool_coordinator, "step_facts", refuse)
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "fs"))))
    assert not response.is_error
    kinds = [type(e.payload) for e in conversation.stream if isinstance(e, EventEntry)]
    assert kinds[-3:] == [InquiryRequest, Answered, ToolCallResponse]
