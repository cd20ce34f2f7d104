"""Nobody at the terminal: the detached policy of RFD 049, cell by cell, through the driver.

Each cell of the table is one prompt kind (``run``: permission to run a tool
of run mode ``ask``; ``deliver``: whether a result of result mode ``ask``
reaches the model; ``tool``: a tool's question for the person), one mode of
the tool's detached policy (``auto``, ``defaults``, ``deny``), an exclusive
question or not, and who is at the prompt (a person; nobody; an answers file
without a reply for it). Each asserts what the conversation records (the
records, and the route each response's metadata gives) and what the tool
and the model are told. The tests go through :class:`~coordinator.ToolCoordinator`
with the scripted prompter and backend: what they pin is what a user sees.
Process-level runs (a pty, a run with no controlling terminal) are in
``tests/test_headless_runs.py``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from coordinator_harness import (
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    recorded_routes,
    run,
)
from test_prompt_timeouts import FakeClock, Silent

from coordinator import Conversation, EventEntry, load_conversation
from coordinator._recorded_routes import RecordedRoute, recorded_route
from coordinator.driver import ParkedPrompt
from coordinator.driver._backend import InquiryTask
from coordinator.driver._config import parse_tools_config
from coordinator.driver._prompting import ScriptedPrompter
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    DetachedMode,
    InquiryRequest,
    JsonValue,
    PromptKind,
    Question,
    ShowDeliveryPrompt,
    ShowQuestion,
    ToolCallResponse,
)
from machines.wording import DELIVERY_CANCELLED, INTERRUPTED, RESULT_WITHHELD

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.driver import StepFacts

APPLY = Question.boolean("apply", "Overwrite config.ini?", default=False)
NOTE = Question.text_input("note", "A note for the log?")

#: Who is at the prompt. Too late: a person who does not answer within the prompt's
#: prompt_timeout, with on_prompt_timeout = "detached" (then the policy decides).
PERSON, NOBODY, FILE_WITHOUT_REPLY = "person", "nobody", "answers file without a reply"
TOO_LATE = "a person who answers too late"
AT_THE_PROMPT = (PERSON, NOBODY, FILE_WITHOUT_REPLY, TOO_LATE)
KINDS = ("run", "deliver", "tool")


@attrs.frozen
class Played:
    """What one cell's run left: the conversation, what the tool ran with, who was asked."""

    conversation: Conversation
    #: ``None`` when the call was parked (it waits for a later answer).
    answered: ToolCallResponse | None
    tool: AskingTool
    prompter: ScriptedPrompter | None
    asked_model: list[InquiryTask]
    parked: tuple[ParkedPrompt, ...] = ()

    @property
    def response(self) -> ToolCallResponse:
        """The call's response (it has one: it was not parked)."""
        assert self.answered is not None, "the call was parked"
        return self.answered

    def routes(self) -> list[RecordedRoute | None]:
        """The route each inquiry response records, as read back from disk."""
        assert self.conversation.path is not None
        return recorded_routes(self.conversation.path)

    def decided(self, decision: str) -> RecordedRoute | None:
        """The route the tool call's response records for ``decision``, read back from disk."""
        assert self.conversation.path is not None
        saved = load_conversation(self.conversation.path)
        entries = [
            e
            for e in saved.stream
            if isinstance(e, EventEntry) and isinstance(e.payload, ToolCallResponse)
        ]
        return recorded_route(entries[0].metadata, decision) if entries else None


class Model(ScriptedInquiryBackend):
    """The model: answers ``True``, and keeps what it was asked."""

    def __init__(self) -> None:
        """Answer every question put to it with true."""
        super().__init__()
        self.tasks: list[InquiryTask] = []

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Note the task, then answer."""
        self.tasks.append(task)
        return True


def play(
    tmp_path: Path,
    *,
    kind: str,
    mode: DetachedMode,
    at_the_prompt: str,
    exclusive: bool = False,
    question: Question = APPLY,
) -> Played:
    """One call of a tool whose ``kind`` of prompt needs a person, under policy ``mode``."""
    tool_config: dict[str, Any] = {"detached": mode.value}
    if kind == "run":
        tool_config["run"] = "ask"
    else:
        tool_config["run"] = "unattended"
    if kind == "deliver":
        tool_config["result"] = "ask"
    if exclusive:
        tool_config["questions"] = {question.id: {"exclusive": True}}
    clock = FakeClock()
    if at_the_prompt == TOO_LATE:
        tool_config |= {"prompt_timeout": "1m", "on_prompt_timeout": "detached"}
    config = parse_tools_config({"tools": {"fs": tool_config}})
    tool = AskingTool([question] if kind == "tool" else [])
    prompter: ScriptedPrompter | None = None
    if at_the_prompt == PERSON:
        prompter = ScriptedPrompter().permit().deliver().answer(value=True)
    elif at_the_prompt == FILE_WITHOUT_REPLY:
        prompter = ScriptedPrompter(from_file=True)
    elif at_the_prompt == TOO_LATE:
        prompter = Silent()
    model = Model()
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(tool)},
        config=config,
        prompter=prompter,
        backend=model,
        sleep=clock.sleep,
    )
    responses = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert_invariants(conversation, parked=coordinator.parked)
    answered = responses[0] if responses else None
    return Played(conversation, answered, tool, prompter, model.tasks, coordinator.parked)


CELLS = [
    pytest.param(kind, mode, exclusive, at, id=f"{kind}-{mode.value}-{ex}-{at.replace(' ', '_')}")
    for kind, mode, (exclusive, ex), at in itertools.product(
        KINDS,
        tuple(DetachedMode),
        ((False, "plain"), (True, "exclusive")),
        AT_THE_PROMPT,
    )
]


@pytest.mark.parametrize(("kind", "mode", "exclusive", "at_the_prompt"), CELLS)
def test_every_cell_of_the_detached_policy(
    tmp_path: Path, kind: str, mode: DetachedMode, exclusive: bool, at_the_prompt: str
) -> None:
    """Kind x mode x exclusive x who is at the prompt: what is recorded, and who is told what."""
    played = play(tmp_path, kind=kind, mode=mode, at_the_prompt=at_the_prompt, exclusive=exclusive)
    if at_the_prompt == PERSON:
        _the_person_decides(played, kind)
        return
    # Nobody answered: an answers file without a reply, or a person too late, was
    # asked; then the policy decided.
    asked = played.prompter.shown if played.prompter is not None else []
    assert len(asked) == (0 if at_the_prompt == NOBODY else 1)
    {"run": _run_by_policy, "deliver": _delivery_by_policy, "tool": _question_by_policy}[kind](
        played, mode, exclusive=exclusive
    )


def _the_person_decides(played: Played, kind: str) -> None:
    """A person at the prompt: asked, and what they said decides; no policy is named."""
    assert played.prompter is not None
    assert len(played.prompter.shown) == 1
    assert played.asked_model == []
    assert not played.response.is_error
    assert played.response.content.startswith("answers: ")
    person = RecordedRoute(route="person")
    if kind == "tool":
        assert payloads(played.conversation, Answered) == [
            Answered(id="call_1.apply.1", answer=True)
        ]
        assert played.routes() == [person]
    else:
        assert played.decided("permission" if kind == "run" else "delivery") == person


def _parked(played: Played, kind: PromptKind) -> None:
    """Parked: no response, the request marked so on disk, and the batch says what waits."""
    assert played.answered is None
    (parked,) = played.parked
    assert (parked.tool_call_id, parked.kind) == ("call_1", kind)
    assert played.asked_model == []
    assert played.routes() == []
    assert played.decided("permission") is None


def _run_by_policy(played: Played, mode: DetachedMode, *, exclusive: bool) -> None:
    """Permission nobody can give: auto runs the tool; park keeps it for later; else refused."""
    del exclusive  # RFD 049's table: detached.run = auto approves; a question's mark is its own
    if mode is DetachedMode.PARK:
        _parked(played, PromptKind.RUN)
        assert played.tool.runs == []  # never started: it waits for its permission
        return
    route = RecordedRoute(route="detached_policy", detached=mode.value)
    assert played.decided("permission") == route
    if mode is DetachedMode.AUTO:
        assert played.tool.runs == [{}]
        assert played.response == ToolCallResponse(
            id="call_1", content="answers: ", is_error=False
        )
        return
    # defaults (a permission has no default) and deny: the tool never runs, the call fails.
    assert played.tool.runs == []
    assert played.response.is_error
    assert "was not run: it asks permission before it runs" in played.response.content
    assert f"detached policy for permissions is '{mode.value}'" in played.response.content


def _delivery_by_policy(played: Played, mode: DetachedMode, *, exclusive: bool) -> None:
    """A result nobody can confirm: auto delivers it; the others withhold it, failing.

    ``detached = "park"`` parks what can wait; a result is held in memory
    only, so its delivery is denied.
    """
    del exclusive
    assert played.tool.runs == [{}]  # the tool ran: only its result waited
    policy = DetachedMode.DENY if mode is DetachedMode.PARK else mode
    assert played.decided("delivery") == RecordedRoute(
        route="detached_policy", detached=policy.value
    )
    if mode is DetachedMode.AUTO:
        assert played.response == ToolCallResponse(
            id="call_1", content="answers: ", is_error=False
        )
        return
    assert played.response.is_error
    assert "answers: " not in played.response.content  # the result never reaches the model
    assert "The result was not delivered." in played.response.content


def _question_by_policy(played: Played, mode: DetachedMode, *, exclusive: bool) -> None:
    """A question for the person, nobody to ask: the model (auto), its default, or refused."""
    (request,) = payloads(played.conversation, InquiryRequest)
    assert request.question.exclusive is (True if exclusive else None)  # recorded only when true
    if mode is DetachedMode.AUTO and not exclusive:
        assert [task.question.id for task in played.asked_model] == ["apply"]
        assert payloads(played.conversation, Answered) == [
            Answered(id="call_1.apply.1", answer=True)
        ]
        assert played.routes() == [RecordedRoute(route="model", detached="auto")]
        assert played.response.content == "answers: apply=True"
        return
    if mode is DetachedMode.PARK:
        _parked(played, PromptKind.TOOL)
        assert played.parked[0].inquiry_id == request.id == "call_1.apply.1"
        assert played.tool.runs == [{}]  # asked once; it stopped to ask, and waits
        return
    assert played.asked_model == []  # never the model: exclusive, or not auto
    if mode is DetachedMode.DEFAULTS:
        assert payloads(played.conversation, Answered) == [
            Answered(id="call_1.apply.1", answer=False)
        ]
        assert played.routes() == [RecordedRoute(route="default", detached="defaults")]
        assert played.response.content == "answers: apply=False"
        return
    assert payloads(played.conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]
    assert played.routes() == [RecordedRoute(route="denied", detached=mode.value)]
    assert played.tool.runs == [{}]  # asked once, never run again with an answer
    assert played.response.is_error
    told = played.response.content
    assert 'asked "Overwrite config.ini?"' in told
    assert f"its detached policy for questions is '{mode.value}'" in told
    assert ("it is exclusive" in told) == (mode is DetachedMode.AUTO)


def test_defaults_without_a_default_refuses_the_question(tmp_path: Path) -> None:
    """Policy defaults and a question with no default: refused, and the tool is told why."""
    played = play(
        tmp_path, kind="tool", mode=DetachedMode.DEFAULTS, at_the_prompt=NOBODY, question=NOTE
    )
    assert payloads(played.conversation, Cancelled) == [
        Cancelled(id="call_1.note.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]
    assert played.routes() == [RecordedRoute(route="denied", detached="defaults")]
    assert "which takes a default, and it has none" in played.response.content


def test_nothing_configured_denies_every_kind(tmp_path: Path) -> None:
    """RFD 049's default is deny: with no configuration, nothing runs, answers or delivers."""
    conversation = conversation_on_disk(tmp_path)
    runs = AskingTool([])
    tools = {"asks": executor(AskingTool([APPLY])), "runs": executor(runs)}
    model = Model()
    config = parse_tools_config({"tools": {"asks": {"run": "unattended"}}})
    coordinator = ToolCoordinator(conversation, tools=tools, config=config, backend=model)
    responses = run(coordinator.run(assistant_calls(conversation, ("c1", "asks"), ("c2", "runs"))))
    assert model.tasks == []  # the model never answered the person's question
    assert runs.runs == []  # the tool of run mode ask never ran
    assert [response.is_error for response in responses] == [True, True]
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="c1.apply.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]


@pytest.mark.parametrize(
    ("for_permissions", "for_questions"),
    [(DetachedMode.AUTO, DetachedMode.DENY), (DetachedMode.DENY, DetachedMode.AUTO)],
    ids=["run-auto-tool-deny", "run-deny-tool-auto"],
)
def test_a_question_is_decided_by_the_policy_for_questions_not_for_permissions(
    tmp_path: Path, for_permissions: DetachedMode, for_questions: DetachedMode
) -> None:
    """``detached.tool`` alone decides a question nobody can answer; ``detached.run`` never."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([APPLY])
    detached = {"run": for_permissions.value, "tool": for_questions.value}
    config = parse_tools_config({"tools": {"fs": {"run": "unattended", "detached": detached}}})
    model = Model()
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(tool)}, config=config, backend=model
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "fs"))))
    assert_invariants(conversation)
    if for_questions is DetachedMode.AUTO:
        assert [task.question.id for task in model.tasks] == ["apply"]
        assert payloads(conversation, Answered) == [Answered(id="c1.apply.1", answer=True)]
        assert response.content == "answers: apply=True"
        return
    assert model.tasks == []
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="c1.apply.1", reason=CancellationReason.NO_PROMPT_BACKEND)
    ]
    assert response.is_error


def test_a_secret_is_refused_whatever_the_mode(tmp_path: Path) -> None:
    """A secret is a person's only: nobody to ask, every mode but park refuses it (no policy)."""
    secret = Question.secret("token", "Deploy token?")
    for mode in DetachedMode:
        if mode is DetachedMode.PARK:
            continue  # it waits for a person: tests/test_park.py
        played = play(
            tmp_path / mode.value,
            kind="tool",
            mode=mode,
            at_the_prompt=NOBODY,
            question=secret,
        )
        assert played.asked_model == []
        assert payloads(played.conversation, Cancelled) == [
            Cancelled(id="call_1.token.1", reason=CancellationReason.NO_PROMPT_BACKEND)
        ]
        assert played.routes() == [RecordedRoute(route="refused")]


@pytest.mark.parametrize("configured", [True, False])
def test_configuration_overrides_the_tools_exclusive_mark_both_ways(
    tmp_path: Path, configured: bool
) -> None:
    """A tool's exclusive question goes to the model once configured not exclusive, and back."""
    marked = attrs.evolve(APPLY, exclusive=not configured)
    tool_config: dict[str, Any] = {
        "run": "unattended",
        "detached": "auto",
        "questions": {"apply": {"exclusive": configured}},
    }
    conversation = conversation_on_disk(tmp_path)
    model = Model()
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([marked]))},
        config=parse_tools_config({"tools": {"fs": tool_config}}),
        backend=model,
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    (request,) = payloads(conversation, InquiryRequest)
    assert request.question.exclusive is (True if configured else None)
    assert len(model.tasks) == (0 if configured else 1)


# ------------------------------------------------------------ result delivery


@pytest.mark.parametrize(
    ("reply", "content", "is_error"),
    [
        ("deliver", "answers: ", False),
        ("withhold", RESULT_WITHHELD, False),
        ("cancel_delivery", DELIVERY_CANCELLED, False),
    ],
)
def test_the_person_delivers_withholds_or_cancels_a_result(
    tmp_path: Path, reply: str, content: str, is_error: bool
) -> None:
    """Result mode ask: the model gets the result, is told it was withheld, or cancelled."""
    conversation = conversation_on_disk(tmp_path)
    prompter = getattr(ScriptedPrompter(), reply)()
    config = parse_tools_config({"tools": {"fs": {"run": "unattended", "result": "ask"}}})
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([]))}, config=config, prompter=prompter
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response == ToolCallResponse(id="call_1", content=content, is_error=is_error)
    (shown,) = prompter.shown
    assert isinstance(shown, ShowDeliveryPrompt)
    assert (shown.content, shown.is_error) == ("answers: ", False)  # what the person saw
    saved = load_conversation(tmp_path)
    (entry,) = [
        e
        for e in saved.stream
        if isinstance(e, EventEntry) and isinstance(e.payload, ToolCallResponse)
    ]
    delivery = recorded_route(entry.metadata, "delivery")
    assert delivery == (None if reply == "cancel_delivery" else RecordedRoute(route="person"))


def test_a_prompter_without_delivery_prompts_cancels_the_delivery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A prompter written before result delivery cannot ask it: cancelled, and logged."""

    class Older:
        async def ask_permission(self, prompt: object) -> Any:
            raise AssertionError(prompt)

        async def ask_question(self, prompt: ShowQuestion) -> Any:
            raise AssertionError(prompt)

    conversation = conversation_on_disk(tmp_path)
    config = parse_tools_config({"tools": {"fs": {"run": "unattended", "result": "ask"}}})
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([]))}, config=config, prompter=Older()
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert response.content == DELIVERY_CANCELLED
    assert "cannot ask whether a result may reach the model" in caplog.text


# ----------------------------------------------------------------- withdrawn


class HoldsTheModel(ScriptedInquiryBackend):
    """A model that never answers until cancelled; it notes that it was."""

    def __init__(self) -> None:
        """Nothing asked yet."""
        super().__init__()
        self.asked = asyncio.Event()
        self.cancelled = False

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Wait until cancelled."""
        del task
        self.asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")  # pragma: no cover


class Asked:
    """An observer: set once ``count`` questions have been recorded (each, once it is asked)."""

    def __init__(self, count: int) -> None:
        """Wait for ``count`` requests."""
        self.count = count
        self.recorded = 0
        self.all = asyncio.Event()

    def __call__(self, facts: StepFacts) -> None:
        """Count the requests a step recorded."""
        self.recorded += sum(isinstance(record, InquiryRequest) for record in facts.records)
        if self.recorded >= self.count:
            self.all.set()


def _both_asking(
    conversation: Conversation, prompter: ScriptedPrompter, asked: Asked
) -> ToolCoordinator:
    """A coordinator whose tool asks APPLY of the person, ``asked`` watching its steps."""
    return ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
        prompter=prompter,
        on_step=asked,
    )


class HoldsThePrompt(ScriptedPrompter):
    """A person who never answers the first question on screen."""

    def __init__(self) -> None:
        """Nothing shown yet."""
        super().__init__()
        self.showing = asyncio.Event()

    async def ask_question(self, prompt: ShowQuestion) -> Any:
        """Note the prompt, and hold it."""
        self.shown.append(prompt)
        self.showing.set()
        await asyncio.Event().wait()


def test_a_question_at_the_model_when_the_batch_stops_is_withdrawn(tmp_path: Path) -> None:
    """Cancel while the model works: its request is cancelled, the question withdrawn, once."""
    conversation = conversation_on_disk(tmp_path)
    model = HoldsTheModel()
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {"fs": {"questions": {"apply": {"target": "assistant"}}}},
        }
    )
    coordinator = ToolCoordinator(
        conversation, tools={"fs": executor(AskingTool([APPLY]))}, config=config, backend=model
    )

    async def scenario() -> list[ToolCallResponse]:
        batch = asyncio.create_task(coordinator.run(assistant_calls(conversation, ("c1", "fs"))))
        await model.asked.wait()
        coordinator.cancel()
        return await batch

    (response,) = run(scenario())
    assert model.cancelled  # the model's answer in progress was cancelled
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="c1.apply.1", reason=CancellationReason.WITHDRAWN)
    ]
    assert response == ToolCallResponse(id="c1", content=INTERRUPTED, is_error=True)
    assert recorded_routes(tmp_path) == [RecordedRoute(route="withdrawn")]
    assert_invariants(conversation)


def test_questions_on_screen_and_in_the_queue_are_withdrawn_when_the_batch_stops(
    tmp_path: Path,
) -> None:
    """One question at the prompt, one queued behind it: both withdrawn, never `user`."""
    conversation = conversation_on_disk(tmp_path)
    prompter = HoldsThePrompt()
    asked = Asked(2)
    coordinator = _both_asking(conversation, prompter, asked)

    async def scenario() -> list[ToolCallResponse]:
        calls = assistant_calls(conversation, ("c1", "fs"), ("c2", "fs"))
        batch = asyncio.create_task(coordinator.run(calls))
        await prompter.showing.wait()
        await asked.all.wait()  # the second question queues behind the first
        coordinator.cancel()
        return await batch

    responses = run(scenario())
    assert len(prompter.shown) == 1
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="c1.apply.1", reason=CancellationReason.WITHDRAWN),
        Cancelled(id="c2.apply.1", reason=CancellationReason.WITHDRAWN),
    ]
    assert [response.content for response in responses] == [INTERRUPTED, INTERRUPTED]
    assert_invariants(conversation)


# ----------------------------------------------------- remembered meanwhile


class SlowPerson(ScriptedPrompter):
    """A person who answers only once every other call's question has queued behind theirs."""

    def __init__(self, asked: Asked) -> None:
        """Answer once ``asked`` is set."""
        super().__init__()
        self.asked = asked

    async def ask_question(self, prompt: ShowQuestion) -> Any:
        """Answer once the other questions wait in the queue."""
        await self.asked.all.wait()
        return await super().ask_question(prompt)


def test_a_y_given_while_a_question_waited_answers_it_recorded_as_remembered(
    tmp_path: Path,
) -> None:
    """Y at the first prompt; the second, queued meanwhile, is answered from memory, once."""
    conversation = conversation_on_disk(tmp_path)
    asked = Asked(2)
    prompter = SlowPerson(asked).answer(value=True, remember=True)
    coordinator = _both_asking(conversation, prompter, asked)
    run(coordinator.run(assistant_calls(conversation, ("c1", "fs"), ("c2", "fs"))))
    assert len(prompter.shown) == 1  # the queued question was never shown
    assert payloads(conversation, Answered) == [
        Answered(id="c1.apply.1", answer=True),
        Answered(id="c2.apply.1", answer=True),
    ]
    assert recorded_routes(tmp_path) == [
        RecordedRoute(route="person"),
        RecordedRoute(route="remembered"),
    ]
