"""ToolCoordinator.continue_turn: a dead process's turn is continued, nothing finished run again.

Each test writes to disk the turn a dead process left (the records exactly as
this engine writes them), loads it as a new process would, finds the
incomplete turn and continues it. The cases are RFD 023's, read with RFD
082: the question that waited is adopted (answered under its recorded id)
when the tool, run again, asks exactly it, and superseded (closed as
``interrupted``, the new one the next attempt) otherwise; a secret is never
replayed; a call whose last question was declined ends without running;
permission is not asked again of a call that had run. After each: every
request paired, no id repeated in the turn, no secret on disk.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from conftest import CountingIds, FixedClock
from coordinator_harness import UNATTENDED, AskingTool, assert_invariants, executor, payloads, run

from coordinator import (
    Conversation,
    ScriptedPrompter,
    ToolCoordinator,
    find_incomplete_turn,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from coordinator.driver import PermissionBy, Permit, QuestionAnswer, Resolution, StepFacts
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import INPUT_CANCELLED, secret_without_terminal

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.driver import Prompter
    from coordinator.stream import IncompleteTurn

TARGET = Question.select("target", "Deploy where?", ["staging", "production"])
TOKEN = Question.secret("token", "The deploy token?")
SECRET = "tok-9f8e7d"


def recorded(inquiry_id: str, question: Question, tool: str = "deploy") -> InquiryRequest:
    """The request this engine records for ``question`` of ``tool``."""
    return InquiryRequest(
        id=inquiry_id,
        source=InquirySource.tool(tool),
        question=InquiryQuestion.from_question(question),
    )


def deploy_call(call_id: str = "call_1") -> ToolCallRequest:
    """A deploy call."""
    return ToolCallRequest(id=call_id, name="deploy", arguments={"environment": "staging"})


def left_on_disk(path: Path, *events: Event) -> Path:
    """Save a conversation holding a turn of ``events`` (as a dead process left it)."""
    conversation = Conversation.new(
        metadata={"title": "crashed"}, clock=FixedClock(), new_id=CountingIds()
    )
    opening: tuple[Event, ...] = (
        TurnStart(),
        ChatRequest(content="Ship it."),
        ChatResponse.message("Deploying."),
    )
    for event in (*opening, *events):
        conversation.stream.append(event)
    save_conversation(conversation, path)
    conversation.close()
    return path


def waiting_for_the_secret(path: Path) -> Path:
    """RFD 023 §6.4's turn: call_2 finished; call_1's target answered, its token waiting."""
    return left_on_disk(
        path,
        deploy_call("call_1"),
        ToolCallRequest(id="call_2", name="lint", arguments={}),
        recorded("call_1.target.1", TARGET),
        Answered(id="call_1.target.1", answer="staging"),
        ToolCallResponse(id="call_2", content="lint: clean", is_error=False),
        recorded("call_1.token.1", TOKEN),
    )


class Continued:
    """A conversation loaded from ``path``, its incomplete turn continued by a new coordinator."""

    def __init__(
        self,
        path: Path,
        tools: dict[str, AskingTool],
        *,
        prompter: Prompter | None = None,
        config: object = UNATTENDED,
        max_attempts: int = 8,
    ) -> None:
        """Load, find the incomplete turn, continue it under the writer lock."""
        self.tools = tools
        self.steps: list[StepFacts] = []
        self.conversation = load_conversation(path)
        self.before = len(self.conversation.stream)
        incomplete = find_incomplete_turn(self.conversation.stream)
        assert incomplete is not None
        self.incomplete: IncompleteTurn = incomplete
        self.coordinator = ToolCoordinator(
            self.conversation,
            tools={name: executor(tool) for name, tool in tools.items()},
            config=config,  # type: ignore[arg-type]
            prompter=prompter,
            max_attempts=max_attempts,
            on_step=self.steps.append,
        )
        with self.conversation:
            self.responses = run(self.coordinator.continue_turn(incomplete))

    @property
    def appended(self) -> list[object]:
        """The payloads the continuation appended, in order."""
        return [entry.payload for entry in self.conversation.stream[self.before :]]  # type: ignore[union-attr]


def test_the_waiting_secret_is_adopted_and_answered_under_its_recorded_id(tmp_path: Path) -> None:
    """Asked exactly again: no new request; its one response goes under call_1.token.1."""
    deploy, lint = AskingTool([TARGET, TOKEN]), AskingTool([])
    prompter = ScriptedPrompter().answer(value=SECRET)
    done = Continued(
        waiting_for_the_secret(tmp_path), {"deploy": deploy, "lint": lint}, prompter=prompter
    )
    assert done.appended == [
        Redacted(id="call_1.token.1"),
        ToolCallResponse(
            id="call_1", content="answers: target='staging', token='<secret>'", is_error=False
        ),
    ]
    assert lint.runs == []  # finished: kept as recorded, never run again
    assert [run["target"] for run in deploy.runs] == ["staging", "staging"]
    assert deploy.runs[-1]["token"] == SECRET  # revealed to the tool, and only to it
    assert [response.id for response in done.responses] == ["call_1"]
    assert_invariants(done.conversation, [SECRET])


def test_a_changed_question_supersedes_the_waiting_one_and_asks_the_next_attempt(
    tmp_path: Path,
) -> None:
    """Asked otherwise now: the old request is closed interrupted, the new one is .2."""
    changed = Question.secret("token", "The production token?")
    prompter = ScriptedPrompter().answer(value=SECRET)
    done = Continued(
        waiting_for_the_secret(tmp_path),
        {"deploy": AskingTool([TARGET, changed]), "lint": AskingTool([])},
        prompter=prompter,
    )
    assert done.appended[:3] == [
        Cancelled(id="call_1.token.1", reason=CancellationReason.INTERRUPTED),
        recorded("call_1.token.2", changed),
        Redacted(id="call_1.token.2"),
    ]
    assert isinstance(done.appended[3], ToolCallResponse)
    assert not done.appended[3].is_error
    assert_invariants(done.conversation, [SECRET])


def test_without_a_terminal_the_adopted_secret_is_cancelled_under_its_id(tmp_path: Path) -> None:
    """The same secret, nobody to ask: no_prompt_backend under the recorded id, the call fails."""
    done = Continued(
        waiting_for_the_secret(tmp_path),
        {"deploy": AskingTool([TARGET, TOKEN]), "lint": AskingTool([])},
    )
    assert done.appended == [
        Cancelled(id="call_1.token.1", reason=CancellationReason.NO_PROMPT_BACKEND),
        ToolCallResponse(
            id="call_1", content=secret_without_terminal("deploy", TOKEN), is_error=True
        ),
    ]
    assert_invariants(done.conversation)


def test_ctrl_c_at_the_adopted_prompt_is_the_persons_cancellation(tmp_path: Path) -> None:
    """Cancelled at the prompt: user, under the recorded id; the tool is told so."""
    done = Continued(
        waiting_for_the_secret(tmp_path),
        {"deploy": AskingTool([TARGET, TOKEN]), "lint": AskingTool([])},
        prompter=ScriptedPrompter().cancel(),
    )
    assert done.appended == [
        Cancelled(id="call_1.token.1", reason=CancellationReason.USER),
        ToolCallResponse(id="call_1", content=INPUT_CANCELLED, is_error=False),
    ]


def jp_recorded(inquiry_id: str, question: Question, tool: str = "deploy") -> InquiryRequest:
    """The request JP records for ``question``: without ``question.id``."""
    request = recorded(inquiry_id, question, tool)
    return InquiryRequest(
        id=request.id,
        source=request.source,
        question=InquiryQuestion(
            text=request.question.text,
            answer_type=request.question.answer_type,
            default=request.question.default,
            context=request.question.context,
        ),
    )


def test_a_waiting_jp_question_asked_exactly_again_is_adopted_whatever_its_id(
    tmp_path: Path,
) -> None:
    """No question.id recorded, an id that says nothing: asked the same, it is adopted."""
    path = left_on_disk(tmp_path, deploy_call(), jp_recorded("inq-0007", TOKEN))
    deploy = AskingTool([TOKEN])
    done = Continued(path, {"deploy": deploy}, prompter=ScriptedPrompter().answer(value=SECRET))
    assert done.appended == [
        Redacted(id="inq-0007"),
        ToolCallResponse(id="call_1", content="answers: token='<secret>'", is_error=False),
    ]
    assert deploy.runs[-1]["token"] == SECRET
    assert_invariants(done.conversation, [SECRET])


def test_a_waiting_jp_question_asked_otherwise_is_superseded(tmp_path: Path) -> None:
    """Recorded without its id, asked now with another text: closed interrupted, asked anew."""
    changed = Question.secret("token", "The production token?")
    path = left_on_disk(tmp_path, deploy_call(), jp_recorded("inq-0007", TOKEN))
    done = Continued(
        path, {"deploy": AskingTool([changed])}, prompter=ScriptedPrompter().answer(value=SECRET)
    )
    assert done.appended[:3] == [
        Cancelled(id="inq-0007", reason=CancellationReason.INTERRUPTED),
        recorded("call_1.token.1", changed),
        Redacted(id="call_1.token.1"),
    ]
    assert_invariants(done.conversation, [SECRET])


def test_a_jp_calls_answered_questions_are_asked_again_not_read_from_their_ids(
    tmp_path: Path,
) -> None:
    """JP's target answered as call_1.target.1: the id is not parsed for 'target': asked again."""
    path = left_on_disk(
        tmp_path,
        deploy_call(),
        jp_recorded("call_1.target.1", TARGET),
        Answered(id="call_1.target.1", answer="staging"),
        jp_recorded("call_1.token.1", TOKEN),
    )
    deploy = AskingTool([TARGET, TOKEN])
    prompter = ScriptedPrompter().answer(value="production").answer(value=SECRET)
    done = Continued(path, {"deploy": deploy}, prompter=prompter)
    assert deploy.runs[0] == {}  # nothing replayed from an id-less record
    assert done.appended[:3] == [
        Cancelled(id="call_1.token.1", reason=CancellationReason.INTERRUPTED),
        recorded("call_1.target.2", TARGET),
        Answered(id="call_1.target.2", answer="production"),
    ]
    permissions = [step.permission for step in done.steps if step.permission is not None]
    assert [permission.by for permission in permissions] == [PermissionBy.EARLIER_RUN]
    assert_invariants(done.conversation, [SECRET])


def test_a_redacted_secret_is_asked_again_as_the_next_attempt(tmp_path: Path) -> None:
    """Killed after the secret was given, mid-run: target replayed, the secret asked as .2."""
    path = left_on_disk(
        tmp_path,
        deploy_call(),
        recorded("call_1.target.1", TARGET),
        Answered(id="call_1.target.1", answer="staging"),
        recorded("call_1.token.1", TOKEN),
        Redacted(id="call_1.token.1"),
    )
    deploy = AskingTool([TARGET, TOKEN])
    done = Continued(path, {"deploy": deploy}, prompter=ScriptedPrompter().answer(value=SECRET))
    assert done.appended[:2] == [recorded("call_1.token.2", TOKEN), Redacted(id="call_1.token.2")]
    assert deploy.runs[0] == {"target": "staging"}  # replayed; the secret never was
    assert_invariants(done.conversation, [SECRET])


@pytest.mark.parametrize(
    ("reason", "content", "is_error"),
    [
        (CancellationReason.USER, INPUT_CANCELLED, False),
        (CancellationReason.NO_PROMPT_BACKEND, secret_without_terminal("deploy", TOKEN), True),
        (CancellationReason.BACKEND_ERROR, "Tool call was interrupted.", True),
    ],
)
def test_a_call_whose_last_question_was_declined_ends_without_running(
    tmp_path: Path, reason: CancellationReason, content: str, is_error: bool
) -> None:
    """Killed between the cancellation and the call's response: the response, and no run."""
    path = left_on_disk(
        tmp_path,
        deploy_call(),
        recorded("call_1.token.1", TOKEN),
        Cancelled(id="call_1.token.1", reason=reason),
    )
    deploy = AskingTool([TOKEN])
    done = Continued(path, {"deploy": deploy}, prompter=ScriptedPrompter())
    assert done.appended == [ToolCallResponse(id="call_1", content=content, is_error=is_error)]
    assert deploy.runs == []


def test_permission_is_asked_again_only_of_a_call_nothing_shows_ran(tmp_path: Path) -> None:
    """Run mode ask: the call that asked before the stop runs; the one never asked is prompted."""
    path = left_on_disk(
        tmp_path,
        deploy_call("call_1"),
        ToolCallRequest(id="call_3", name="release", arguments={}),
        recorded("call_1.target.1", TARGET),
        Answered(id="call_1.target.1", answer="staging"),
    )
    prompter = ScriptedPrompter().permit().answer(value="production")
    tools = {"deploy": AskingTool([TARGET]), "release": AskingTool([TARGET])}
    done = Continued(
        path, tools, prompter=prompter, config=parse_tools_config({"defaults": {"run": "ask"}})
    )
    shown = [(type(prompt).__name__, prompt.tool_call_id) for prompt in prompter.shown]
    assert shown == [("ShowPermissionPrompt", "call_3"), ("ShowQuestion", "call_3")]
    permissions = {step.tool_call_id: step.permission for step in done.steps if step.permission}
    assert permissions["call_1"] is not None
    assert permissions["call_1"].by is PermissionBy.EARLIER_RUN
    assert permissions["call_3"].by is PermissionBy.PERSON
    assert [r.id for r in payloads(done.conversation, InquiryRequest)] == [
        "call_1.target.1",
        "call_3.target.1",
    ]
    assert_invariants(done.conversation)


def test_stray_open_questions_are_closed_as_interrupted(tmp_path: Path) -> None:
    """An open question no open call can be said to have asked is closed, never answered."""
    path = left_on_disk(
        tmp_path,
        deploy_call("call_1"),
        deploy_call("call_2"),
        recorded("call_1.target.1", TARGET),
    )
    done = Continued(path, {"deploy": AskingTool([])})
    assert done.appended[0] == Cancelled(
        id="call_1.target.1", reason=CancellationReason.INTERRUPTED
    )
    assert sorted(r.id for r in done.responses) == ["call_1", "call_2"]
    assert_invariants(done.conversation)


def test_the_attempt_budget_counts_what_was_recorded(tmp_path: Path) -> None:
    """Asked once before the stop, with one attempt allowed: asked again, it is refused."""
    path = left_on_disk(
        tmp_path,
        deploy_call(),
        recorded("call_1.target.1", TARGET),
        Answered(id="call_1.target.1", answer="staging"),
    )
    tool = AskingTool([TARGET], reask=1)
    done = Continued(path, {"deploy": tool}, prompter=ScriptedPrompter(), max_attempts=1)
    assert done.appended[:2] == [
        recorded("call_1.target.2", TARGET),
        Cancelled(id="call_1.target.2", reason=CancellationReason.ATTEMPTS_EXHAUSTED),
    ]
    assert_invariants(done.conversation)


def test_the_observer_is_told_of_the_adoption_and_of_a_supersession(tmp_path: Path) -> None:
    """Adopted: the question's facts name the recorded id; superseded: resolved as interrupted."""
    prompter = ScriptedPrompter().answer(value=SECRET)
    adopted = Continued(
        waiting_for_the_secret(tmp_path / "a"),
        {"deploy": AskingTool([TARGET, TOKEN]), "lint": AskingTool([])},
        prompter=prompter,
    )
    asked = [step.question for step in adopted.steps if step.question is not None]
    assert asked[0].inquiry_id == "call_1.token.1"
    assert [fired.trigger for fired in adopted.steps[1].fired][:2] == ["needs_input", "adopt"]
    superseded = Continued(
        waiting_for_the_secret(tmp_path / "s"),
        {"deploy": AskingTool([TARGET]), "lint": AskingTool([])},
    )
    (closing,) = [step for step in superseded.steps if step.question and step.question.resolution]
    assert closing.question is not None
    assert closing.question.resolution is Resolution.INTERRUPTED
    assert closing.question.inquiry_id == "call_1.token.1"


def test_later_batches_of_the_turn_carry_its_state_on(tmp_path: Path) -> None:
    """A Y given to the adopted question answers the same question of the next batch's call."""
    apply = Question.boolean("apply", "Apply?")
    path = left_on_disk(tmp_path, deploy_call(), recorded("call_1.apply.1", apply))
    tool = AskingTool([apply])
    done = Continued(
        path, {"deploy": tool}, prompter=ScriptedPrompter().answer(value=True, remember=True)
    )
    conversation = done.conversation
    conversation.stream.append(ChatResponse.message("Again."))
    conversation.stream.append(deploy_call("call_2"))
    with conversation:
        run(done.coordinator.run([deploy_call("call_2")]))
    assert payloads(conversation, Answered)[-1] == Answered(id="call_2.apply.1", answer=True)
    assert len(tool.runs) == 4  # two per call, the second answered from the turn's memory
    assert_invariants(conversation)


def test_a_turn_waiting_for_the_model_is_left_to_the_model_loop(tmp_path: Path) -> None:
    """Nothing open: continue_turn appends nothing and returns no response."""
    path = left_on_disk(
        tmp_path, deploy_call(), ToolCallResponse(id="call_1", content="ok", is_error=False)
    )
    done = Continued(path, {"deploy": AskingTool([])})
    assert (done.responses, done.appended) == ([], [])


def test_an_incomplete_turn_of_another_state_is_refused(tmp_path: Path) -> None:
    """Found, then the stream changed: continuing it would answer what is no longer so."""
    conversation = load_conversation(left_on_disk(tmp_path, deploy_call()))
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    conversation.stream.append(ToolCallResponse(id="call_1", content="x", is_error=False))
    coordinator = ToolCoordinator(conversation, tools={}, config=UNATTENDED)
    with pytest.raises(ValueError, match="another state of the conversation"):
        run(coordinator.continue_turn(incomplete))


def test_a_stuck_turn_cannot_be_continued(tmp_path: Path) -> None:
    """A request whose id a later cycle asked again cannot be closed by appending: refused."""
    path = left_on_disk(
        tmp_path,
        deploy_call("fs_0"),
        ChatResponse.message("Again."),
        deploy_call("fs_0"),
        ToolCallResponse(id="fs_0", content="ok", is_error=False),
    )
    conversation = load_conversation(path)
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    coordinator = ToolCoordinator(conversation, tools={}, config=UNATTENDED)
    with pytest.raises(ValueError, match="only sanitized"):
        run(coordinator.continue_turn(incomplete))
    assert len(conversation.stream) == incomplete.turn.stop  # nothing appended


class _HoldsTheQuestion:
    """A person who looks at the disk when asked, and answers only then."""

    def __init__(self, path: Path) -> None:
        """Look at the conversation in ``path``."""
        self.path = path
        self.seen: list[object] = []

    async def ask_question(self, prompt: object) -> QuestionAnswer:
        """What the disk holds now, noted; then the answer."""
        del prompt
        await asyncio.sleep(0.05)  # the other tool finishes meanwhile
        self.seen = [entry.payload for entry in load_conversation(self.path).stream]  # type: ignore[union-attr]
        return QuestionAnswer(value="staging")

    async def ask_permission(self, prompt: object) -> Permit:
        """Never asked: the calls run unattended."""
        raise AssertionError(prompt)


def test_a_finished_calls_response_is_on_disk_while_another_waits(tmp_path: Path) -> None:
    """A call that finished is saved as finished before the driver waits on: not run again."""
    path = left_on_disk(
        tmp_path, deploy_call("call_1"), ToolCallRequest(id="call_2", name="lint", arguments={})
    )
    conversation = load_conversation(path)
    person = _HoldsTheQuestion(path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(AskingTool([TARGET])), "lint": executor(AskingTool([]))},
        config=UNATTENDED,
        prompter=person,
    )
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    with conversation:
        run(coordinator.continue_turn(incomplete))
    lint_done = [p for p in person.seen if isinstance(p, ToolCallResponse) and p.id == "call_2"]
    assert len(lint_done) == 1
