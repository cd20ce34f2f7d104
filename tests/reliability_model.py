"""A model of the coordinator's world, driven at random by hypothesis.

:class:`CoordinatorModel` is a ``RuleBasedStateMachine``: each example builds
a conversation on disk and a :class:`~coordinator.ToolCoordinator`, then runs
random batches of parallel tool calls. The tools ask random questions (every
answer type; targets, static answers valid and invalid, remembered answers,
re-asks) as their arguments tell them to; a prompter, a backend and the tools
themselves answer, cancel, fail, crash or interrupt at random points. Turns
begin, and the coordinator is thrown away and the conversation reloaded from
disk (a crash and resume), at random too.

Everything in the world is in-process and deterministic given hypothesis's
choices, so a failure shrinks to a short, replayable program. The rules of
``DESIGN.md`` are checked after every step by the test modules that subclass
the model (``test_reliability_model.py``, ``test_reliability_secrets.py``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coordinator_harness import conversation_on_disk
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from coordinator import Conversation, load_conversation
from coordinator.driver._backend import BackendErrorKind, InquiryBackendError
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    Failure,
)
from coordinator.driver._executors import Success as ToolSuccess
from coordinator.driver._prompting import (
    Deny,
    PermissionAnswer,
    Permit,
    PromptCancelled,
    QuestionAnswer,
)
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    ChatRequest,
    ChatResponse,
    JsonValue,
    Question,
    ShowPermissionPrompt,
    ShowQuestion,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coordinator.driver._backend import InquiryTask
    from coordinator.driver._config import ToolsConfig
    from coordinator.driver._executors import Executor

#: Tools with an executor; ``gone`` has none (the model called a tool that left).
TOOLS = ("t0", "t1")
#: Every question a tool may ask, by id; ``branch`` options vary by call.
QUESTION_IDS = ("confirm", "branch", "note", "token")
SECRET_QUESTIONS = frozenset({"token"})
CALL_IDS = ("c0", "c1", "c2")  # few, so ids are reused across cycles and turns
OPTION_SETS = (("main", "dev"), ("dev", "release"))
#: The loggers of the engine (and of asyncio, which reports failed tasks).
ENGINE_LOGGERS = ("coordinator", "machines", "asyncio")
#: A number meant as a secret but configured where a string is expected.
MISFIT_SECRET = 987654321987

# Weighted by repetition: mostly the happy path, every misfortune now and then.
QUESTION_ACTIONS = (
    *["answer"] * 4,
    *["remember"] * 3,
    "invalid",
    "cancel",
    "crash",
    "interrupt",
    "cancel_task",
)
PERMISSION_ACTIONS = (
    *["permit"] * 3,
    "permit_remember",
    "deny",
    "deny_remember",
    "deny_reason",
    "cancel",
    "crash",
    "interrupt",
    "cancel_task",
)
BACKEND_ACTIONS = (
    *["respond"] * 4,
    "invalid",
    "fail",
    "fail",
    "cancelled",
    "raise_cancelled",
    "crash",
    "interrupt",
    "cancel_task",
)
TOOL_ENDS = (*["success"] * 6, "failure", "raise", "interrupt", "cancel_task")


def question_for(question_id: str, plan: Mapping[str, Any], said: str) -> Question:
    """The question ``question_id`` as a tool following ``plan`` asks it now."""
    context = f"so far: {said}" if plan["echo"] else None
    if question_id == "confirm":
        return Question.boolean("confirm", "Apply the change?", default=True, context=context)
    if question_id == "branch":
        options = OPTION_SETS[plan["options"]]
        return Question.select("branch", "Which branch?", options, context=context)
    if question_id == "note":
        return Question.text_input("note", "A note for the log?", context=context)
    return Question.secret("token", "Your access token?", context=context)


def plans() -> st.SearchStrategy[dict[str, Any]]:
    """What one tool call does: the questions it asks, re-asks, how it ends."""
    return st.fixed_dictionaries(
        {
            "ask": st.lists(st.sampled_from(QUESTION_IDS), unique=True, max_size=3),
            "reask": st.integers(0, 2),
            "end": st.sampled_from(TOOL_ENDS),
            "echo": st.booleans(),
            "options": st.integers(0, len(OPTION_SETS) - 1),
        }
    )


class World:
    """What the prompter, backend and tools share: the coordinator, the run, the secrets."""

    def __init__(self) -> None:
        """An empty world; a batch fills in the coordinator and its task."""
        self.coordinator: ToolCoordinator | None = None
        self.task: asyncio.Task[list[ToolCallResponse]] | None = None
        self.counter = 0
        #: Every secret answer given in this example, typed or configured.
        self.secrets: list[str] = []
        #: Secrets a tool received this turn (what the coordinator knows to mask).
        self.delivered: list[str] = []
        #: ``(tool, question id) -> values`` answered with "remember" (``Y``/``N``).
        self.remembered: dict[tuple[str, str], list[JsonValue]] = {}
        #: ``tool -> decisions`` given with "remember" at a permission prompt.
        self.remembered_permissions: dict[str, list[str]] = {}
        self.prompts_on_screen = 0
        self.interrupted = False
        #: Every object the library handed to the prompter, backend or a tool.
        self.handed_out: list[object] = []

    def fresh(self, prefix: str) -> str:
        """A distinctive value no other part of the conversation can contain."""
        self.counter += 1
        return f"{prefix}{self.counter:03d}Qz7Xw"

    def new_secret(self) -> str:
        """A new secret answer, remembered so the checks can look for it."""
        secret = self.fresh("sEcReT")
        self.secrets.append(secret)
        return secret

    def blurt(self) -> str:
        """What a broken component says when it fails: the secrets it has seen."""
        return "broken; it had seen " + ", ".join(self.delivered or ["nothing"])

    async def interrupt(self, how: str) -> None:
        """Stop the batch as ``how`` says, then wait to be torn down."""
        self.interrupted = True
        if how == "cancel_task":
            assert self.task is not None
            self.task.cancel()
        else:
            assert self.coordinator is not None
            self.coordinator.cancel()
        await asyncio.Event().wait()


class PlannedTool(BuiltinTool):
    """A built-in tool that does what its call's arguments (a plan) say."""

    def __init__(self, name: str, world: World) -> None:
        """A tool called ``name`` in ``world``."""
        self.name = name
        self.world = world
        self.reasked: Counter[str] = Counter()

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask the plan's next unanswered question, re-ask, or end as planned."""
        plan: Mapping[str, Any] = arguments
        for key in SECRET_QUESTIONS & answers.keys():
            value = answers[key]
            assert isinstance(value, str), "a secret reaches its tool revealed"
            self.world.delivered.append(value)
        said = ", ".join(f"{key}={value}" for key, value in sorted(answers.items()))
        for question_id in plan["ask"]:
            if question_id not in answers:
                return Ask(question_for(question_id, plan, said))
        if plan["ask"] and self.reasked[plan["key"]] < plan["reask"]:
            self.reasked[plan["key"]] += 1
            return Ask(question_for(plan["ask"][0], plan, said))
        end = plan["end"]
        if end == "success":
            return ToolSuccess(f"answers: {said}")
        if end == "failure":
            return Failure(f"failed with {said}")
        if end == "raise":
            raise RuntimeError(f"crashed with {said}")
        await self.world.interrupt(end)
        raise AssertionError  # pragma: no cover - torn down while waiting


class PlannedPrompter:
    """The person at the terminal, replying from a list of actions (then answering)."""

    def __init__(self, world: World) -> None:
        """Reply in ``world``; the batch sets the actions."""
        self.world = world
        self.questions: list[tuple[str, int]] = []
        self.permissions: list[str] = []

    async def _show(self) -> None:
        self.world.prompts_on_screen += 1
        assert self.world.prompts_on_screen == 1, "two prompts on screen at once"
        await asyncio.sleep(0)  # let anything that would overlap run

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Permit, deny, cancel, crash or interrupt, as the next action says."""
        self.world.handed_out.append(prompt)
        await self._show()
        try:
            action = self.permissions.pop(0) if self.permissions else "permit"
            remember = action.endswith("_remember")
            if action.startswith(("permit", "deny")) and remember:
                decision = "y" if action.startswith("permit") else "n"
                self.world.remembered_permissions.setdefault(prompt.tool_name, []).append(decision)
            if action.startswith("permit"):
                return Permit(remember=remember)
            if action == "deny_reason":
                return Deny(reason="not now")
            if action.startswith("deny"):
                return Deny(remember=remember)
            if action == "cancel":
                raise PromptCancelled
            if action == "crash":
                raise RuntimeError(self.world.blurt())
            await self.world.interrupt(action)
            raise AssertionError  # pragma: no cover
        finally:
            self.world.prompts_on_screen -= 1

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer (maybe remembered, maybe invalid), cancel, crash or interrupt."""
        self.world.handed_out.append(prompt)
        await self._show()
        try:
            action, pick = self.questions.pop(0) if self.questions else ("answer", 0)
            if action in ("answer", "remember"):
                value = answer_for(self.world, prompt.question, pick)
                remember = action == "remember"
                if remember and not prompt.question.answer_type.is_secret:
                    key = (prompt.tool_name, prompt.question.id)
                    self.world.remembered.setdefault(key, []).append(value)
                return QuestionAnswer(value=value, remember=remember)
            if action == "invalid":
                # Garbage typed at a secret prompt is as secret as a good answer.
                garbage = (
                    self.world.new_secret() if prompt.question.answer_type.is_secret else pick
                )
                return QuestionAnswer(value=[garbage])
            if action == "cancel":
                raise PromptCancelled
            if action == "crash":
                raise RuntimeError(self.world.blurt())
            await self.world.interrupt(action)
            raise AssertionError  # pragma: no cover
        finally:
            self.world.prompts_on_screen -= 1


def answer_for(world: World, question: Question, pick: int) -> JsonValue:
    """A valid answer to ``question`` (``pick`` chooses which)."""
    answer_type = question.answer_type
    if answer_type.is_secret:
        return world.new_secret()
    if answer_type.option_values:
        options = answer_type.option_values
        return options[pick % len(options)]
    if question.id == "confirm":
        return pick % 2 == 0
    return f"note {pick}"


class PlannedBackend:
    """The model answering questions, from a list of actions (then answering)."""

    def __init__(self, world: World) -> None:
        """Reply in ``world``; the batch sets the actions."""
        self.world = world
        self.actions: list[tuple[str, int]] = []

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Respond, respond wrongly, fail, be cancelled, crash or interrupt."""
        self.world.handed_out.append(task)
        assert not task.question.answer_type.is_secret, "a secret was routed to the model"
        await asyncio.sleep(0)
        action, pick = self.actions.pop(0) if self.actions else ("respond", 0)
        if action == "respond":
            return answer_for(self.world, task.question, pick)
        if action == "invalid":
            return {"not": "an answer"}
        if action == "fail":
            kinds = [kind for kind in BackendErrorKind if kind is not BackendErrorKind.CANCELLED]
            raise InquiryBackendError(kinds[pick % len(kinds)], self.world.blurt())
        if action == "cancelled":
            raise InquiryBackendError(BackendErrorKind.CANCELLED, "the user pressed Ctrl-C")
        if action == "raise_cancelled":
            raise asyncio.CancelledError
        if action == "crash":
            raise RuntimeError(self.world.blurt())
        await self.world.interrupt(action)
        raise AssertionError  # pragma: no cover


class CapturedLogs(logging.Handler):
    """Every log record at every level, formatted as a handler would write it."""

    def __init__(self) -> None:
        """Capture from DEBUG up."""
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the formatted record, traceback included."""
        self.lines.append(self.format(record))


class CoordinatorModel(RuleBasedStateMachine):
    """Random turns of parallel tool calls through a real coordinator and store."""

    def __init__(self) -> None:
        """A temporary directory, captured logs, and an empty world."""
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="inquiry-model-"))
        self.world = World()
        self.logs = CapturedLogs()
        # Every level of the engine's own loggers; handlers see other libraries' too.
        self._levels = {name: logging.getLogger(name).level for name in ENGINE_LOGGERS}
        for name in ENGINE_LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger().addHandler(self.logs)
        self.conversation: Conversation = conversation_on_disk(self.directory)
        self.config: ToolsConfig = parse_tools_config({})
        self.terminal = True
        self.coordinator: ToolCoordinator | None = None
        self.prompter = PlannedPrompter(self.world)
        self.backend = PlannedBackend(self.world)
        self.tools: dict[str, Executor] = {
            name: BuiltinExecutor(PlannedTool(name, self.world)) for name in TOOLS
        }
        #: What each batch was given and gave back: (requests, responses or None).
        self.batches: list[tuple[list[ToolCallRequest], list[ToolCallResponse] | None]] = []
        self.errors: list[BaseException] = []
        self.plan_keys = 0

    def teardown(self) -> None:
        """Remove the directory and the log handler."""
        logging.getLogger().removeHandler(self.logs)
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)
        shutil.rmtree(self.directory, ignore_errors=True)

    # ------------------------------------------------------------- setup

    @initialize(
        terminal=st.booleans(),
        run_modes=st.lists(
            st.sampled_from(["unattended", "unattended", "unattended", "ask", "skip"]),
            min_size=len(TOOLS),
            max_size=len(TOOLS),
        ),
        questions=st.dictionaries(
            st.tuples(st.sampled_from(TOOLS), st.sampled_from(QUESTION_IDS)),
            st.tuples(
                st.sampled_from(["user", "user", "assistant"]),
                st.sampled_from(["none", "none", "valid", "invalid"]),
            ),
            max_size=4,
        ),
    )
    def configure(
        self,
        terminal: bool,
        run_modes: list[str],
        questions: dict[tuple[str, str], tuple[str, str]],
    ) -> None:
        """Choose whether a person is there, how tools run, and each question's config."""
        self.terminal = terminal
        tools: dict[str, dict[str, Any]] = {
            name: {"run": mode, "questions": {}}
            for name, mode in zip(TOOLS, run_modes, strict=True)
        }
        for (tool, question_id), (target, static) in questions.items():
            config: dict[str, Any] = {"target": target}
            if static != "none":
                config["answer"] = self._static_answer(question_id, valid=static == "valid")
            tools[tool]["questions"][question_id] = config
        self.config = parse_tools_config({"tools": tools})
        self.coordinator = self._new_coordinator(self.conversation)

    def _static_answer(self, question_id: str, *, valid: bool) -> JsonValue:
        if question_id in SECRET_QUESTIONS:
            if valid:
                return self.world.new_secret()
            self.world.secrets.append(str(MISFIT_SECRET))
            return MISFIT_SECRET
        valid_answers: dict[str, JsonValue] = {"confirm": False, "branch": "dev", "note": "n/a"}
        return valid_answers[question_id] if valid else {"confirm": "yes"}.get(question_id, 7)

    def _new_coordinator(self, conversation: Conversation) -> ToolCoordinator:
        return ToolCoordinator(
            conversation,
            tools=self.tools,
            config=self.config,
            prompter=self.prompter if self.terminal else None,
            backend=self.backend,
        )

    # ------------------------------------------------------------- rules

    @rule(
        calls=st.lists(
            st.tuples(st.sampled_from([*TOOLS, *TOOLS, *TOOLS, "gone"]), plans()),
            min_size=1,
            max_size=3,
        ),
        call_ids=st.permutations(CALL_IDS),
        questions=st.lists(
            st.tuples(st.sampled_from(QUESTION_ACTIONS), st.integers(0, 3)), max_size=6
        ),
        permissions=st.lists(st.sampled_from(PERMISSION_ACTIONS), max_size=3),
        backend=st.lists(
            st.tuples(st.sampled_from(BACKEND_ACTIONS), st.integers(0, 3)), max_size=4
        ),
    )
    def batch(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        call_ids: list[str],
        questions: list[tuple[str, int]],
        permissions: list[str],
        backend: list[tuple[str, int]],
    ) -> None:
        """The model calls tools in parallel; everyone behaves as the actions say."""
        assert self.coordinator is not None
        self.prompter.questions = list(questions)
        self.prompter.permissions = list(permissions)
        self.backend.actions = list(backend)
        self.world.interrupted = False
        self.conversation.stream.append(ChatResponse.message("Let me use some tools."))
        requests = []
        for call_id, (tool, plan) in zip(call_ids, calls, strict=False):
            self.plan_keys += 1
            arguments = {**plan, "key": f"plan{self.plan_keys}"}
            request = ToolCallRequest(id=call_id, name=tool, arguments=arguments)
            self.conversation.stream.append(request)
            requests.append(request)
        coordinator = self.coordinator
        world = self.world

        async def run() -> list[ToolCallResponse] | None:
            world.coordinator = coordinator
            world.task = asyncio.get_running_loop().create_task(coordinator.run(requests))
            try:
                return await world.task
            except asyncio.CancelledError as error:
                self.errors.append(error)
                return None

        responses = asyncio.run(run())
        self.batches.append((requests, responses))
        self.check_batch(requests, responses)

    @rule(message=st.sampled_from(["go on", "next please"]))
    def new_turn(self, message: str) -> None:
        """The user starts a new turn."""
        self.conversation.stream.append(TurnStart())
        self.conversation.stream.append(ChatRequest(content=message))
        self.world.delivered = []  # the coordinator forgets the turn's secrets too

    @rule()
    def crash_and_resume(self) -> None:
        """The process is gone; a new one loads the conversation and carries on."""
        self.conversation = load_conversation(self.directory)
        self.coordinator = self._new_coordinator(self.conversation)
        self.world.delivered = []  # gone with the process

    # ------------------------------------------------------------ checks

    def check_batch(
        self, requests: list[ToolCallRequest], responses: list[ToolCallResponse] | None
    ) -> None:
        """Hook for subclasses: what must hold of one batch's outcome."""
