"""What a turn never remembers: every way a question or a permission prompt ends unanswered.

The turn remembers an answer only when the person asked for it (``Y`` or
``N`` at a question, ``Y`` or ``N`` at a permission prompt). Everything else
that ends a question or a prompt (a cancel, a failure of the prompter or of
the model, an interrupt, an answer that does not fit, a static answer that
does not fit, a question asked too often, a question closed when a turn is
continued) and every answer given without ``remember`` (``y``, ``n``, ``r``,
``e``, the model's) leaves the turn's memory as it was. So a second call of
the same tool asking the same question is asked again, as the first was.

Each test plays the first call one way, then a second call of the same tool
in the same turn (in the same batch, where its prompt waits its turn and is
checked against the memory when the terminal frees, or in the next batch,
where its question is resolved against it at once), and checks that the
second was asked, and that the turn remembers nothing. The tests go through
:class:`~coordinator.ToolCoordinator` with the scripted prompter and model,
never through a machine directly: what they pin is what a user sees.
``docs/testing.md`` lists the planted bugs each one catches.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from conftest import CountingIds, FixedClock
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

from coordinator import (
    Conversation,
    ToolCoordinator,
    find_incomplete_turn,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from coordinator.driver._backend import BackendErrorKind
from coordinator.driver._prompting import (
    PermissionAnswer,
    QuestionAnswer,
    ScriptedPrompter,
)
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    ShowPermissionPrompt,
    ShowQuestion,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import INPUT_CANCELLED, INTERRUPTED

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from coordinator.driver._backend import InquiryBackend, InquiryTask
    from coordinator.driver._config import ToolsConfig

APPLY = Question.boolean("apply", "Apply the patch?")
#: The two ways the second call meets the first call's outcome.
WHEN = pytest.mark.parametrize("same_batch", [True, False], ids=["same-batch", "next-batch"])
#: Every question goes to the model.
TO_THE_MODEL = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {"fs": {"questions": {"apply": {"target": "assistant"}}}},
    }
)


def _two_calls(
    tmp_path: Path,
    *,
    same_batch: bool,
    prompter: ScriptedPrompter | None = None,
    backend: InquiryBackend | None = None,
    config: ToolsConfig = UNATTENDED,
    tool: AskingTool | None = None,
    max_attempts: int = 8,
) -> tuple[Conversation, ToolCoordinator]:
    """Calls ``call_1`` and ``call_2`` of tool ``fs`` in one turn: in one batch, or one each."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(tool or AskingTool([APPLY]))},
        config=config,
        prompter=prompter,
        backend=backend,
        max_attempts=max_attempts,
    )
    if same_batch:
        run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "fs"))))
    else:
        run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
        run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    return conversation, coordinator


def _nothing_remembered(coordinator: ToolCoordinator) -> None:
    assert dict(coordinator.turn_state.remembered_tool_answers) == {}
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {}


def _questions_shown(prompter: ScriptedPrompter) -> list[str]:
    """The inquiry ids of the questions the person was shown, in order."""
    return [prompt.inquiry_id for prompt in prompter.shown if isinstance(prompt, ShowQuestion)]


def _second_answered_by_the_person(conversation: Conversation, prompter: ScriptedPrompter) -> None:
    """The second call's question was shown, answered as scripted, and its tool ran with it."""
    assert _questions_shown(prompter)[-1] == "call_2.apply.1"
    assert payloads(conversation, Answered)[-1] == Answered(id="call_2.apply.1", answer=True)
    assert payloads(conversation, ToolCallResponse)[-1] == ToolCallResponse(
        id="call_2", content="answers: apply=True", is_error=False
    )


# ------------------------------------------------------------ at the terminal


class FailsOnce(ScriptedPrompter):
    """A prompter whose first prompt fails as a broken terminal would (not a cancel)."""

    def __init__(self) -> None:
        """Nothing failed yet."""
        super().__init__()
        self.failed = False

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Fail the first question; then answer from the script."""
        if not self.failed:
            self.failed = True
            self.shown.append(prompt)
            raise OSError("the terminal went away")
        return await super().ask_question(prompt)

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Fail the first permission prompt; then answer from the script."""
        if not self.failed:
            self.failed = True
            self.shown.append(prompt)
            raise OSError("the terminal went away")
        return await super().ask_permission(prompt)


@WHEN
def test_a_question_the_person_cancelled_is_asked_again(tmp_path: Path, same_batch: bool) -> None:
    """Ctrl-C at a yes/no question: never remembered as a no; the next call's is asked."""
    prompter = ScriptedPrompter().cancel().answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


@WHEN
def test_a_question_the_prompter_failed_on_is_asked_again(
    tmp_path: Path, same_batch: bool
) -> None:
    """A prompter error is a cancel (RFD 082): nothing remembered; the next call's is asked."""
    prompter = FailsOnce().answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


@WHEN
def test_an_answer_that_does_not_fit_is_not_remembered_though_asked(
    tmp_path: Path, same_batch: bool
) -> None:
    """A prompter's "maybe" to a yes/no question with remember: refused, and not remembered."""
    prompter = ScriptedPrompter().answer(value="maybe", remember=True).answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


@WHEN
@pytest.mark.parametrize("first", [True, False], ids=["y", "n"])
def test_a_y_or_n_answer_is_not_remembered(tmp_path: Path, same_batch: bool, first: bool) -> None:
    """Lower-case y or n answers one call: the next call's question is asked again."""
    prompter = ScriptedPrompter().answer(value=first).answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Answered)[0] == Answered(id="call_1.apply.1", answer=first)
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


def test_an_interrupted_question_is_asked_again_in_the_next_batch(tmp_path: Path) -> None:
    """The batch stopped while a question was on screen: the next batch's call is asked it."""

    class StopsAtTheFirst(ScriptedPrompter):
        async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
            if not self.shown:
                self.shown.append(prompt)
                coordinator.cancel()
                await asyncio.Event().wait()  # on screen until the stop takes it down
            return await super().ask_question(prompt)

    prompter = StopsAtTheFirst().answer(value=True)
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    (first,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert first == ToolCallResponse(id="call_1", content=INPUT_CANCELLED, is_error=False)
    run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


def test_attempts_exhausted_is_not_remembered(tmp_path: Path) -> None:
    """A question asked past the limit is refused, not remembered: the next call's is asked."""
    # The tool asks `apply` again once after its first answer: with one attempt
    # allowed, that second asking is refused.
    tool = AskingTool([APPLY], reask=1)
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    conversation, coordinator = _two_calls(
        tmp_path, same_batch=False, prompter=prompter, tool=tool, max_attempts=1
    )
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.2", reason=CancellationReason.ATTEMPTS_EXHAUSTED)
    ]
    _second_answered_by_the_person(conversation, prompter)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


# ------------------------------------------------------------ the model


@pytest.mark.parametrize(
    "kind",
    [
        BackendErrorKind.CANCELLED,
        BackendErrorKind.PROVIDER,
        BackendErrorKind.MISSING_STRUCTURED_DATA,
        BackendErrorKind.ANSWER_EXTRACTION,
        BackendErrorKind.OTHER,
    ],
    ids=lambda kind: kind.value,
)
def test_a_question_the_model_failed_is_asked_of_it_again(
    tmp_path: Path, kind: BackendErrorKind
) -> None:
    """The model failed (or its request was cancelled): the next call's question goes to it."""
    backend = ScriptedInquiryBackend().fail(kind).respond(value=True)
    conversation, coordinator = _two_calls(
        tmp_path, same_batch=False, backend=backend, config=TO_THE_MODEL
    )
    assert [task.inquiry_id for task in backend.tasks] == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=kind.reason)
    ]
    assert payloads(conversation, Answered) == [Answered(id="call_2.apply.1", answer=True)]
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


@pytest.mark.parametrize("first", [True, "maybe"], ids=["answer", "answer-that-does-not-fit"])
def test_the_models_answer_is_never_remembered(tmp_path: Path, first: JsonValue) -> None:
    """The model's answer, fitting or not, answers its call only: the next call's goes to it."""
    backend = ScriptedInquiryBackend().respond(value=first).respond(value=True)
    conversation, coordinator = _two_calls(
        tmp_path, same_batch=False, backend=backend, config=TO_THE_MODEL
    )
    assert [task.inquiry_id for task in backend.tasks] == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Answered)[-1] == Answered(id="call_2.apply.1", answer=True)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


def test_a_question_interrupted_while_the_model_works_is_asked_of_it_again(tmp_path: Path) -> None:
    """The batch stopped while the model worked on a question: the next call's goes to it."""

    class StopsAtTheFirst(ScriptedInquiryBackend):
        async def answer(self, task: InquiryTask) -> JsonValue:
            if not self.tasks:
                self.tasks.append(task)
                coordinator.cancel()
                await asyncio.Event().wait()  # at work until the stop cancels the request
            return await super().answer(task)

    backend = StopsAtTheFirst().respond(value=True)
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=TO_THE_MODEL,
        backend=backend,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert [task.inquiry_id for task in backend.tasks] == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    ]
    assert payloads(conversation, Answered) == [Answered(id="call_2.apply.1", answer=True)]
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


# ------------------------------------------------------------ configuration


def test_a_static_answer_that_does_not_fit_is_refused_every_time(tmp_path: Path) -> None:
    """A configured "maybe" for a yes/no question: refused for each call, never remembered."""
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {"fs": {"questions": {"apply": {"answer": "maybe"}}}},
        }
    )
    prompter = ScriptedPrompter()  # a terminal is there, and never needed
    conversation, coordinator = _two_calls(
        tmp_path, same_batch=False, prompter=prompter, config=config
    )
    assert prompter.shown == []
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.INVALID_STATIC_ANSWER),
        Cancelled(id="call_2.apply.1", reason=CancellationReason.INVALID_STATIC_ANSWER),
    ]
    assert payloads(conversation, Answered) == []
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


# ------------------------------------------------------------ permission


@WHEN
@pytest.mark.parametrize(
    "first",
    [
        pytest.param(lambda: ScriptedPrompter().permit(), id="y"),
        pytest.param(lambda: ScriptedPrompter().permit(arguments={"path": "b"}), id="e"),
        pytest.param(lambda: ScriptedPrompter().deny(), id="n"),
        pytest.param(lambda: ScriptedPrompter().deny(reason="not now"), id="r"),
        pytest.param(lambda: ScriptedPrompter().cancel_permission(), id="cancelled"),
        pytest.param(FailsOnce, id="prompter-failed"),
    ],
)
def test_a_permission_given_or_refused_without_remember_is_asked_again(
    tmp_path: Path, same_batch: bool, first: Callable[[], ScriptedPrompter]
) -> None:
    """y, e, n, r, Ctrl-C or a failing prompt: the next call of the tool asks permission again."""
    prompter = first().permit()
    conversation, coordinator = _two_calls(
        tmp_path,
        same_batch=same_batch,
        prompter=prompter,
        config=parse_tools_config({}),
        tool=AskingTool([]),
    )
    asked = [prompt.tool_call_id for prompt in prompter.shown]
    assert asked == ["call_1", "call_2"]
    assert prompter.remaining == 0
    assert payloads(conversation, ToolCallResponse)[-1] == ToolCallResponse(
        id="call_2", content="answers: ", is_error=False
    )
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


def test_an_interrupted_permission_prompt_is_asked_again_in_the_next_batch(tmp_path: Path) -> None:
    """The batch stopped while a permission prompt was on screen: the next call asks again."""

    class StopsAtTheFirst(ScriptedPrompter):
        async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
            if not self.shown:
                self.shown.append(prompt)
                coordinator.cancel()
                await asyncio.Event().wait()  # on screen until the stop takes it down
            return await super().ask_permission(prompt)

    prompter = StopsAtTheFirst().permit()
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([]))}, prompter=prompter
    )
    (first,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert first == ToolCallResponse(id="call_1", content=INTERRUPTED, is_error=True)
    (second,) = run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert [prompt.tool_call_id for prompt in prompter.shown] == ["call_1", "call_2"]
    assert second == ToolCallResponse(id="call_2", content="answers: ", is_error=False)
    _nothing_remembered(coordinator)
    assert_invariants(conversation)


# ------------------------------------------------------------ a turn continued


def test_questions_closed_when_a_turn_is_continued_are_not_remembered(tmp_path: Path) -> None:
    """Continued: a stray question and one its call no longer asks, both closed; asked anew."""
    apply_now = Question.boolean("apply", "Apply the patch now?")  # the same id, asked otherwise
    conversation = Conversation.new(
        metadata={"title": "t"}, clock=FixedClock(), new_id=CountingIds()
    )
    request = InquiryQuestion.from_question(APPLY)
    source = InquirySource.tool("fs")
    for event in (
        TurnStart(),
        ChatRequest(content="Patch it."),
        ChatResponse.message("On it."),
        ToolCallRequest(id="call_0", name="fs", arguments={}),
        ToolCallRequest(id="call_1", name="fs", arguments={}),
        InquiryRequest(id="call_0.apply.1", source=source, question=request),
        ToolCallResponse(id="call_0", content="failed", is_error=True),  # its question: stray
        InquiryRequest(id="call_1.apply.1", source=source, question=request),
    ):
        conversation.stream.append(event)
    save_conversation(conversation, tmp_path)
    conversation.close()
    conversation = load_conversation(tmp_path)
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([apply_now]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    with conversation:
        run(coordinator.continue_turn(incomplete))
        assert payloads(conversation, Cancelled) == [
            Cancelled(id="call_0.apply.1", reason=CancellationReason.INTERRUPTED),
            Cancelled(id="call_1.apply.1", reason=CancellationReason.INTERRUPTED),
        ]
        run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert _questions_shown(prompter) == ["call_1.apply.2", "call_2.apply.1"]
    assert payloads(conversation, Answered) == [
        Answered(id="call_1.apply.2", answer=True),
        Answered(id="call_2.apply.1", answer=True),
    ]
    _nothing_remembered(coordinator)
    assert_invariants(conversation)
