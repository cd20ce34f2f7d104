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
from typing import TYPE_CHECKING, Any

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
from machines.wording import INTERRUPTED

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


def _coordinator(
    tmp_path: Path,
    *,
    prompter: ScriptedPrompter | None = None,
    backend: InquiryBackend | None = None,
    config: ToolsConfig = UNATTENDED,
    tool: AskingTool | None = None,
    max_attempts: int = 8,
) -> tuple[Conversation, ToolCoordinator]:
    """A conversation on disk, and a coordinator running tool ``fs`` (by default asking APPLY)."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(tool or AskingTool([APPLY]))},
        config=config,
        prompter=prompter,
        backend=backend,
        max_attempts=max_attempts,
    )
    return conversation, coordinator


def _play(conversation: Conversation, coordinator: ToolCoordinator, *, same_batch: bool) -> None:
    """Calls ``call_1`` and ``call_2`` of tool ``fs`` in one turn: in one batch, or one each."""
    if same_batch:
        run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "fs"))))
    else:
        run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
        run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))


def _two_calls(
    tmp_path: Path, *, same_batch: bool = False, **kwargs: Any
) -> tuple[Conversation, ToolCoordinator]:
    """:func:`_coordinator` with ``kwargs``, then :func:`_play`."""
    conversation, coordinator = _coordinator(tmp_path, **kwargs)
    _play(conversation, coordinator, same_batch=same_batch)
    return conversation, coordinator


def _nothing_remembered(conversation: Conversation, coordinator: ToolCoordinator) -> None:
    """The turn remembers no answer and no permission; every request has its response."""
    assert dict(coordinator.turn_state.remembered_tool_answers) == {}
    assert dict(coordinator.turn_state.remembered_permission_decisions) == {}
    assert_invariants(conversation)


def _questions_shown(prompter: ScriptedPrompter) -> list[str]:
    """The inquiry ids of the questions the person was shown, in order."""
    return [prompt.inquiry_id for prompt in prompter.shown if isinstance(prompt, ShowQuestion)]


def _asked_again(
    conversation: Conversation,
    coordinator: ToolCoordinator,
    prompter: ScriptedPrompter,
    cancelled: list[Cancelled],
) -> None:
    """Both calls' questions shown; the first closed as ``cancelled`` says; the second answered.

    The second was answered yes by the person, and its tool ran with that;
    the turn remembers nothing.
    """
    assert _questions_shown(prompter) == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == cancelled
    assert payloads(conversation, Answered)[-1] == Answered(id="call_2.apply.1", answer=True)
    assert payloads(conversation, ToolCallResponse)[-1] == ToolCallResponse(
        id="call_2", content="answers: apply=True", is_error=False
    )
    _nothing_remembered(conversation, coordinator)


def _asked_of_the_model_again(
    conversation: Conversation,
    coordinator: ToolCoordinator,
    backend: ScriptedInquiryBackend,
    cancelled: list[Cancelled],
) -> None:
    """Both calls' questions went to the model; the first closed as ``cancelled`` says.

    The second was answered yes by the model; the turn remembers nothing.
    """
    assert [task.inquiry_id for task in backend.tasks] == ["call_1.apply.1", "call_2.apply.1"]
    assert payloads(conversation, Cancelled) == cancelled
    assert payloads(conversation, Answered)[-1] == Answered(id="call_2.apply.1", answer=True)
    _nothing_remembered(conversation, coordinator)


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


class StopsTheBatch(ScriptedPrompter):
    """A prompter whose first prompt stays on screen until ``stop`` (the batch's) takes it down."""

    def __init__(self) -> None:
        """Nothing to stop yet: :func:`_coordinator` makes the batch's coordinator after."""
        super().__init__()
        self.stop: Callable[[], None] = lambda: None

    async def _first(self, prompt: ShowQuestion | ShowPermissionPrompt) -> None:
        self.shown.append(prompt)
        self.stop()
        await asyncio.Event().wait()  # cancelled as the batch stops

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Stop the batch at the first prompt; then answer from the script."""
        if not self.shown:
            await self._first(prompt)
        return await super().ask_question(prompt)

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Stop the batch at the first prompt; then answer from the script."""
        if not self.shown:
            await self._first(prompt)
        return await super().ask_permission(prompt)


class ModelStopsTheBatch(ScriptedInquiryBackend):
    """A model at work on the first question until ``stop`` (the batch's) cancels the request."""

    def __init__(self) -> None:
        """Nothing to stop yet."""
        super().__init__()
        self.stop: Callable[[], None] = lambda: None

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Stop the batch at the first question; then answer from the script."""
        if not self.tasks:
            self.tasks.append(task)
            self.stop()
            await asyncio.Event().wait()  # cancelled as the batch stops
        return await super().answer(task)


USER = CancellationReason.USER
BACKEND_ERROR = CancellationReason.BACKEND_ERROR
#: The first call's question, closed as the user's cancellation.
FIRST_CANCELLED = Cancelled(id="call_1.apply.1", reason=USER)
#: A question its batch's stop closed: nobody cancelled it, it was withdrawn.
FIRST_WITHDRAWN = Cancelled(id="call_1.apply.1", reason=CancellationReason.WITHDRAWN)


# ------------------------------------------------------------ at the terminal


@WHEN
@pytest.mark.parametrize(
    "first",
    [
        pytest.param(lambda: ScriptedPrompter().cancel(), id="cancelled"),
        pytest.param(FailsOnce, id="prompter-failed"),
        pytest.param(
            lambda: ScriptedPrompter().answer(value="maybe", remember=True),
            id="answer-that-does-not-fit-with-remember",
        ),
    ],
)
def test_a_question_left_unanswered_at_the_terminal_is_asked_again(
    tmp_path: Path, same_batch: bool, first: Callable[[], ScriptedPrompter]
) -> None:
    """Ctrl-C, a failing prompter (RFD 082: a cancel), a refused answer: never remembered."""
    prompter = first().answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    _asked_again(conversation, coordinator, prompter, [FIRST_CANCELLED])


@WHEN
@pytest.mark.parametrize("first", [True, False], ids=["y", "n"])
def test_a_y_or_n_answer_is_not_remembered(tmp_path: Path, same_batch: bool, first: bool) -> None:
    """Lower-case y or n answers one call: the next call's question is asked again."""
    prompter = ScriptedPrompter().answer(value=first).answer(value=True)
    conversation, coordinator = _two_calls(tmp_path, same_batch=same_batch, prompter=prompter)
    assert payloads(conversation, Answered)[0] == Answered(id="call_1.apply.1", answer=first)
    _asked_again(conversation, coordinator, prompter, [])


def test_an_interrupted_question_is_asked_again_in_the_next_batch(tmp_path: Path) -> None:
    """The batch stopped while a question was on screen: the next batch's call is asked it."""
    prompter = StopsTheBatch()
    prompter.answer(value=True)
    conversation, coordinator = _coordinator(tmp_path, prompter=prompter)
    prompter.stop = coordinator.cancel
    _play(conversation, coordinator, same_batch=False)
    assert payloads(conversation, ToolCallResponse)[0] == ToolCallResponse(
        id="call_1", content=INTERRUPTED, is_error=True
    )
    _asked_again(conversation, coordinator, prompter, [FIRST_WITHDRAWN])


def test_attempts_exhausted_is_not_remembered(tmp_path: Path) -> None:
    """A question asked past the limit is refused, not remembered: the next call's is asked."""
    # The tool asks `apply` again once after its first answer: with one attempt
    # allowed, that second asking is refused.
    prompter = ScriptedPrompter().answer(value=True).answer(value=True)
    conversation, coordinator = _two_calls(
        tmp_path, prompter=prompter, tool=AskingTool([APPLY], reask=1), max_attempts=1
    )
    exhausted = Cancelled(id="call_1.apply.2", reason=CancellationReason.ATTEMPTS_EXHAUSTED)
    _asked_again(conversation, coordinator, prompter, [exhausted])


# ------------------------------------------------------------ the model


@pytest.mark.parametrize("kind", list(BackendErrorKind), ids=lambda kind: kind.value)
def test_a_question_the_model_failed_is_asked_of_it_again(
    tmp_path: Path, kind: BackendErrorKind
) -> None:
    """The model failed (or its request was cancelled): the next call's question goes to it."""
    backend = ScriptedInquiryBackend().fail(kind).respond(value=True)
    conversation, coordinator = _two_calls(tmp_path, backend=backend, config=TO_THE_MODEL)
    cancelled = [Cancelled(id="call_1.apply.1", reason=kind.reason)]
    _asked_of_the_model_again(conversation, coordinator, backend, cancelled)


@pytest.mark.parametrize("first", [True, "maybe"], ids=["answer", "answer-that-does-not-fit"])
def test_the_models_answer_is_never_remembered(tmp_path: Path, first: JsonValue) -> None:
    """The model's answer, fitting or not, answers its call only: the next call's goes to it."""
    backend = ScriptedInquiryBackend().respond(value=first).respond(value=True)
    conversation, coordinator = _two_calls(tmp_path, backend=backend, config=TO_THE_MODEL)
    cancelled = [] if first is True else [Cancelled(id="call_1.apply.1", reason=BACKEND_ERROR)]
    _asked_of_the_model_again(conversation, coordinator, backend, cancelled)


def test_a_question_interrupted_while_the_model_works_is_asked_of_it_again(tmp_path: Path) -> None:
    """The batch stopped while the model worked on a question: the next call's goes to it."""
    backend = ModelStopsTheBatch()
    backend.respond(value=True)
    conversation, coordinator = _coordinator(tmp_path, backend=backend, config=TO_THE_MODEL)
    backend.stop = coordinator.cancel
    _play(conversation, coordinator, same_batch=False)
    _asked_of_the_model_again(conversation, coordinator, backend, [FIRST_WITHDRAWN])


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
    conversation, coordinator = _two_calls(tmp_path, prompter=prompter, config=config)
    assert prompter.shown == []
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.INVALID_STATIC_ANSWER),
        Cancelled(id="call_2.apply.1", reason=CancellationReason.INVALID_STATIC_ANSWER),
    ]
    assert payloads(conversation, Answered) == []
    _nothing_remembered(conversation, coordinator)


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
    assert [prompt.tool_call_id for prompt in prompter.shown] == ["call_1", "call_2"]
    assert prompter.remaining == 0
    assert payloads(conversation, ToolCallResponse)[-1] == ToolCallResponse(
        id="call_2", content="answers: ", is_error=False
    )
    _nothing_remembered(conversation, coordinator)


def test_an_interrupted_permission_prompt_is_asked_again_in_the_next_batch(tmp_path: Path) -> None:
    """The batch stopped while a permission prompt was on screen: the next call asks again."""
    prompter = StopsTheBatch()
    prompter.permit()
    conversation, coordinator = _coordinator(
        tmp_path, prompter=prompter, config=parse_tools_config({}), tool=AskingTool([])
    )
    prompter.stop = coordinator.cancel
    _play(conversation, coordinator, same_batch=False)
    assert [prompt.tool_call_id for prompt in prompter.shown] == ["call_1", "call_2"]
    assert payloads(conversation, ToolCallResponse) == [
        ToolCallResponse(id="call_1", content=INTERRUPTED, is_error=True),
        ToolCallResponse(id="call_2", content="answers: ", is_error=False),
    ]
    _nothing_remembered(conversation, coordinator)


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
    _nothing_remembered(conversation, coordinator)
