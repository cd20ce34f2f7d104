"""Prompt timeouts (issue 41, part 2): a prompt on screen for longer than its prompt_timeout.

Through :class:`~coordinator.ToolCoordinator` with a fake clock (its
``sleep``, handed in): what a question, a permission and a delivery
become once their time passes (closed as ``timed_out``, or handed to the
detached policy), where the limit comes from (the question's, the tool's,
the default), that an answer given in time is taken and the timer let go,
and that the prompter is cancelled and given back the terminal. One test
waits for real, briefly. A local tool's own execution limit never counts
the person's time, which a real tool and a slow person show.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

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
from run_helpers import local_tools, write
from test_rfd082_reasons import Unknown, rfd082_response
from test_terminal_pty import Session

from coordinator import EventEntry, LocalTool, LocalToolExecutor, load_conversation
from coordinator._recorded_routes import RecordedRoute, recorded_park, recorded_route
from coordinator.driver import (
    QuestionAnswer,
    ScriptedPrompter,
    ToolCoordinator,
    parse_tools_config,
)
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    InquiryRequest,
    Question,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator import Conversation
    from machines import ShowDeliveryPrompt, ShowPermissionPrompt, ShowQuestion

APPLY = Question.boolean("apply", "Overwrite config.ini?", default=False)


class FakeClock:
    """The driver's ``sleep``: notes how long it was asked to wait, and passes that time at once.

    With ``stopped``, time never passes: every wait lasts until it is cancelled.
    """

    def __init__(self, *, stopped: bool = False) -> None:
        """A clock whose time passes as soon as it is waited for (unless ``stopped``)."""
        self.stopped = stopped
        self.waits: list[float] = []
        self.cancelled = 0

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        self.waits.append(seconds)
        if not self.stopped:
            return
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


class Silent(ScriptedPrompter):
    """A person who never answers: each prompt is shown, then waits until it is cancelled."""

    def __init__(self) -> None:
        """Nobody answers anything."""
        super().__init__()
        self.let_go = 0

    async def _wait(self) -> Any:
        try:
            await asyncio.Event().wait()
        finally:
            self.let_go += 1  # the prompt is taken off the screen

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> Any:
        """Shown; never answered."""
        self.shown.append(prompt)
        return await self._wait()

    async def ask_question(self, prompt: ShowQuestion) -> Any:
        """Shown; never answered."""
        self.shown.append(prompt)
        return await self._wait()

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> Any:
        """Shown; never answered."""
        self.shown.append(prompt)
        return await self._wait()


def play(
    tmp_path: Path,
    config: dict[str, Any],
    *,
    prompter: ScriptedPrompter,
    clock: FakeClock | None = None,
    question: Question | None = APPLY,
) -> tuple[Conversation, list[ToolCallResponse], AskingTool, ToolCoordinator]:
    """One call of ``fs`` (asking ``question``) under ``config``, the person at the prompt."""
    conversation = conversation_on_disk(tmp_path / "c")
    tool = AskingTool([question] if question else [])
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(tool)},
        config=parse_tools_config(config),
        prompter=prompter,
        sleep=clock.sleep if clock is not None else None,
    )
    responses = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    assert_invariants(conversation, parked=coordinator.parked)
    return conversation, responses, tool, coordinator


def _decided(conversation: Conversation, decision: str) -> RecordedRoute | None:
    assert conversation.path is not None
    saved = load_conversation(conversation.path)
    (entry,) = [
        e
        for e in saved.stream
        if isinstance(e, EventEntry) and isinstance(e.payload, ToolCallResponse)
    ]
    return recorded_route(entry.metadata, decision)


def test_a_question_on_screen_past_its_timeout_is_closed_as_timed_out(tmp_path: Path) -> None:
    """Closed Cancelled(timed_out), route timed_out; the tool told why; the prompt taken down."""
    clock, silent = FakeClock(), Silent()
    config = {"tools": {"fs": {"run": "unattended", "prompt_timeout": "30s"}}}
    conversation, (response,), tool, _ = play(tmp_path, config, prompter=silent, clock=clock)
    assert clock.waits == [30.0]
    assert silent.let_go == 1
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.TIMED_OUT)
    ]
    assert recorded_routes(tmp_path / "c") == [RecordedRoute(route="timed_out")]
    assert tool.runs == [{}]
    assert response.is_error
    assert "nobody answered it" in response.content
    assert "(30 s) ran out" in response.content


@pytest.mark.parametrize(
    ("config", "seconds"),
    [
        ({"defaults": {"prompt_timeout": "2m"}}, 120.0),
        (
            {"defaults": {"prompt_timeout": "2m"}, "tools": {"fs": {"prompt_timeout": "1h"}}},
            3600.0,
        ),
        (
            {
                "defaults": {"prompt_timeout": "2m"},
                "tools": {
                    "fs": {
                        "prompt_timeout": "1h",
                        "questions": {"apply": {"prompt_timeout": "250ms"}},
                    }
                },
            },
            0.25,
        ),
    ],
    ids=["default", "tool", "question"],
)
def test_a_questions_timeout_is_its_own_else_its_tools_else_the_default(
    tmp_path: Path, config: dict[str, Any], seconds: float
) -> None:
    """The limit resolves question, tool, default; none configured: the prompt waits for ever."""
    config.setdefault("tools", {}).setdefault("fs", {})["run"] = "unattended"
    clock = FakeClock()
    play(tmp_path, config, prompter=Silent(), clock=clock)
    assert clock.waits == [seconds]


def test_without_a_timeout_nothing_is_timed(tmp_path: Path) -> None:
    """No prompt_timeout anywhere: the clock is never asked, the person's answer is taken."""
    clock = FakeClock()
    config = {"tools": {"fs": {"run": "unattended"}}}
    conversation, _, _, _ = play(
        tmp_path, config, prompter=ScriptedPrompter().answer(value=True), clock=clock
    )
    assert clock.waits == []
    assert payloads(conversation, Answered) == [Answered(id="call_1.apply.1", answer=True)]


def test_an_answer_in_time_is_taken_and_the_timer_let_go(tmp_path: Path) -> None:
    """The person answers before the time passes: their answer, and the wait is cancelled."""
    clock = FakeClock(stopped=True)
    config = {"tools": {"fs": {"run": "unattended", "prompt_timeout": "5m"}}}
    conversation, (response,), _, _ = play(
        tmp_path, config, prompter=ScriptedPrompter().answer(value=True), clock=clock
    )
    assert (clock.waits, clock.cancelled) == ([300.0], 1)
    assert payloads(conversation, Answered) == [Answered(id="call_1.apply.1", answer=True)]
    assert recorded_routes(tmp_path / "c") == [RecordedRoute(route="person")]
    assert not response.is_error


def test_on_prompt_timeout_detached_lets_the_policy_take_the_default(tmp_path: Path) -> None:
    """Past its time, handed to the detached policy as if nobody were there: defaults."""
    config = {
        "tools": {
            "fs": {
                "run": "unattended",
                "prompt_timeout": "10s",
                "on_prompt_timeout": "detached",
                "detached": "defaults",
            }
        }
    }
    conversation, (response,), _, _ = play(tmp_path, config, prompter=Silent(), clock=FakeClock())
    assert payloads(conversation, Answered) == [Answered(id="call_1.apply.1", answer=False)]
    assert recorded_routes(tmp_path / "c") == [RecordedRoute(route="default", detached="defaults")]
    assert response.content == "answers: apply=False"


def test_on_prompt_timeout_detached_parks_a_question_already_on_screen(tmp_path: Path) -> None:
    """Past its time with park: parked; its request, saved before it was shown, is marked."""
    config = {
        "defaults": {"prompt_timeout": "10s", "on_prompt_timeout": "detached"},
        "tools": {"fs": {"run": "unattended", "detached": "park"}},
    }
    silent = Silent()
    _, responses, _, coordinator = play(tmp_path, config, prompter=silent, clock=FakeClock())
    assert responses == []
    assert [p.inquiry_id for p in coordinator.parked] == ["call_1.apply.1"]
    assert len(silent.shown) == 1
    saved = load_conversation(tmp_path / "c")
    (request,) = [
        e
        for e in saved.stream
        if isinstance(e, EventEntry) and isinstance(e.payload, InquiryRequest)
    ]
    assert recorded_park(request.metadata) is not None


def test_a_permission_prompt_past_its_timeout_does_not_run_the_tool(tmp_path: Path) -> None:
    """Closed: the call fails, not run, its permission recorded as timed out."""
    config = {"tools": {"fs": {"run": "ask", "prompt_timeout": "1m"}}}
    conversation, (response,), tool, _ = play(
        tmp_path, config, prompter=Silent(), clock=FakeClock(), question=None
    )
    assert tool.runs == []
    assert response.is_error
    assert "was not run" in response.content
    assert _decided(conversation, "permission") == RecordedRoute(route="timed_out")


def test_a_permission_prompt_past_its_timeout_may_go_to_the_policy(tmp_path: Path) -> None:
    """on_prompt_timeout detached and run = auto: it runs, as the detached policy decides."""
    config = {
        "tools": {
            "fs": {
                "run": "ask",
                "prompt_timeout": "1m",
                "on_prompt_timeout": "detached",
                "detached": {"run": "auto"},
            }
        }
    }
    conversation, (response,), tool, _ = play(
        tmp_path, config, prompter=Silent(), clock=FakeClock(), question=None
    )
    assert tool.runs == [{}]
    assert not response.is_error
    assert _decided(conversation, "permission") == RecordedRoute(
        route="detached_policy", detached="auto"
    )


def test_a_delivery_prompt_past_its_timeout_withholds_the_result(tmp_path: Path) -> None:
    """Closed: the result is not delivered, the call fails, its delivery recorded as timed out."""
    config = {"tools": {"fs": {"run": "unattended", "result": "ask", "prompt_timeout": "1m"}}}
    conversation, (response,), tool, _ = play(
        tmp_path, config, prompter=Silent(), clock=FakeClock(), question=None
    )
    assert tool.runs == [{}]
    assert response.is_error
    assert "answers: " not in response.content
    assert "The result was not delivered." in response.content
    assert _decided(conversation, "delivery") == RecordedRoute(route="timed_out")


def test_a_real_short_timeout(tmp_path: Path) -> None:
    """With the real clock: a question nobody answers for 100 ms is closed as timed out."""
    config = {"tools": {"fs": {"run": "unattended", "prompt_timeout": "100ms"}}}
    conversation, (response,), _, _ = play(tmp_path, config, prompter=Silent())
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.TIMED_OUT)
    ]
    assert "(0.1 s) ran out" in response.content


#: A local tool that asks once, then reports what it was told.
_ASKS_ONCE = """
import json, sys
request = json.load(sys.stdin)
if "go" not in request["answers"]:
    question = {"id": "go", "text": "Go?", "answer_type": {"type": "boolean"}}
    print(json.dumps({"type": "needs_input", "question": question}))
else:
    print(json.dumps({"type": "success", "content": f"go={request['answers']['go']}"}))
"""


class Slow(ScriptedPrompter):
    """A person who takes ``delay`` seconds (real ones) to answer yes."""

    def __init__(self, delay: float) -> None:
        """Answer after ``delay`` seconds."""
        super().__init__()
        self.delay = delay

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Think, then answer yes."""
        self.shown.append(prompt)
        await asyncio.sleep(self.delay)
        return QuestionAnswer(value=True)


def test_a_tools_own_time_limit_never_counts_the_time_a_person_takes(tmp_path: Path) -> None:
    """A local tool limited to 1 s whose question takes the person 1.5 s: it succeeds."""
    program = write(tmp_path / "asks.py", _ASKS_ONCE)
    tool = LocalTool(name="asks", command=[sys.executable, str(program)], timeout=1.0)
    conversation = conversation_on_disk(tmp_path / "c")
    coordinator = ToolCoordinator(
        conversation,
        tools={"asks": LocalToolExecutor(tool, root=tmp_path)},
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
        prompter=Slow(1.5),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "asks"))))
    assert response == ToolCallResponse(id="call_1", content="go=True", is_error=False)


def test_timed_out_reads_as_unknown_in_a_reader_of_rfd_082(tmp_path: Path) -> None:
    """Our timed_out lands in RFD 082's Unknown, kept verbatim."""
    config = {"tools": {"fs": {"run": "unattended", "prompt_timeout": "1s"}}}
    play(tmp_path, config, prompter=Silent(), clock=FakeClock())
    raw = json.loads((tmp_path / "c" / "events.json").read_text())
    (response,) = [rfd082_response(e) for e in raw if e["type"] == "inquiry_response"]
    assert response == ("cancelled", "call_1.apply.1", Unknown("timed_out"))


def test_a_prompt_at_a_real_terminal_times_out_and_gives_the_terminal_back(
    tmp_path: Path,
) -> None:
    """In a pty, nobody types for 1 s: the prompt comes down, timed out, and the run ends."""
    scenario = local_tools(
        tmp_path,
        {"asks": _ASKS_ONCE},
        '{ tool = "asks" }',
        extra='[tools.asks.questions.go]\nprompt_timeout = "1s"\n',
    )
    run = Session(tmp_path, scenario, ())
    try:
        run.expect("[y/n/Y/N] >")
        run.expect("cancelled (timed_out): nobody answered it in time")
        assert run.finish() == 1
    finally:
        run.close()
    conversation = load_conversation(tmp_path / "conversation")
    assert payloads(conversation, Cancelled) == [
        Cancelled(id="call_1_1_1.go.1", reason=CancellationReason.TIMED_OUT)
    ]
