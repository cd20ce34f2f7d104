"""ToolCoordinator.discard_turn: an unfinished turn closed as discarded, nothing erased.

Each test leaves on disk what a process dying at some point of a turn leaves
(the live engine runs until every kind of thing is open, and its directory is
copied then, as a crash would leave it), loads the copy as a new process
would, and discards the turn: each open question (at the prompt, queued for
it, at the model, parked, stray) is closed ``Cancelled(discarded)`` and each
open tool call (running, or waiting for a question) gets one error response
saying its turn was discarded, appended after everything the turn held. The
turn is then finished, re-saves byte for byte, and ``sanitize`` finds nothing
to repair.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from typing import TYPE_CHECKING, Any

import pytest
from conftest import CountingIds, FixedClock
from coordinator_harness import (
    AskingTool,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
)

from coordinator import (
    Conversation,
    ToolCoordinator,
    export_markdown,
    find_incomplete_turn,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from coordinator._recorded_routes import DISCARDED_ROUTE, recorded_park, recorded_route
from coordinator.driver import BuiltinOutcome, BuiltinTool, Resolution
from coordinator.stream import EventEntry, pair_events, plan_sanitize
from machines import (
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import DISCARDED

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.driver import (
        DeliveryAnswer,
        DiscardedTurn,
        InquiryTask,
        PermissionAnswer,
        QuestionAnswer,
    )
    from machines import JsonValue, ShowDeliveryPrompt, ShowPermissionPrompt, ShowQuestion

APPLY = Question.boolean("apply", "Apply the patch?", default=False)
BRANCH = Question.select("branch", "Which branch?", ["main", "dev"])
#: Every tool runs unattended; ``guess`` asks the model, ``later`` parks what nobody answers.
CONFIG = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {
            "guess": {"questions": {"branch": {"target": "assistant"}}},
            "later": {"detached": "park"},
        },
    }
)


async def _forever() -> Any:
    await asyncio.Event().wait()


class Held:
    """A prompter and a model that hold what they are handed until the run is stopped."""

    def __init__(self) -> None:
        """Nothing shown, nothing asked yet."""
        self.shown: list[str] = []
        self.asked: list[str] = []

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """Hold the prompt."""
        del prompt
        return await _forever()  # type: ignore[no-any-return]

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Show the question, and hold it."""
        self.shown.append(prompt.inquiry_id)
        return await _forever()  # type: ignore[no-any-return]

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        """Hold the prompt."""
        del prompt
        return await _forever()  # type: ignore[no-any-return]

    async def answer(self, task: InquiryTask) -> JsonValue:
        """Take the question for the model, and hold it."""
        self.asked.append(task.inquiry_id)
        return await _forever()  # type: ignore[no-any-return]


class Slow(BuiltinTool):
    """A tool that runs until it is stopped."""

    def __init__(self) -> None:
        """Not started."""
        self.started = False

    async def run(self, arguments: Any, answers: Any) -> BuiltinOutcome:
        """Start, and never finish."""
        del arguments, answers
        self.started = True
        return await _forever()  # type: ignore[no-any-return]


async def _until(reached: Any) -> None:
    for _ in range(2000):
        if reached():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the run never got there")  # pragma: no cover - a hang's message


def crashed_everywhere(tmp_path: Path) -> Path:
    """A turn left with every kind of thing open: what a process killed then leaves on disk.

    ``park_1`` parked its question (an earlier batch, nobody to ask); then, in
    the next model response, ``ask_1``'s question is at the prompt, ``queued_1``'s
    queued for it, ``guess_1``'s at the model, ``slow_1`` running, and
    ``done_1`` finished.
    """
    live, left = tmp_path / "live", tmp_path / "left"
    conversation = conversation_on_disk(live, "Ship it.")
    parked = assistant_calls(conversation, ("park_1", "later"))
    tools = {
        "later": AskingTool([APPLY]),
        "ask": AskingTool([APPLY]),
        "queued": AskingTool([APPLY]),
        "guess": AskingTool([BRANCH]),
        "slow": Slow(),
        "done": AskingTool([]),
    }
    executors = {name: executor(tool) for name, tool in tools.items()}
    run(ToolCoordinator(conversation, tools=executors, config=CONFIG).run(parked))
    requests = assistant_calls(
        conversation,
        ("ask_1", "ask"),
        ("queued_1", "queued"),
        ("guess_1", "guess"),
        ("slow_1", "slow"),
        ("done_1", "done"),
    )
    held = Held()

    async def die_midway() -> None:
        coordinator = ToolCoordinator(
            conversation, tools=executors, config=CONFIG, prompter=held, backend=held
        )
        batch = asyncio.create_task(coordinator.run(requests))
        await _until(lambda: held.shown and held.asked and tools["slow"].started)  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)  # done_1's response is saved before anything waits
        shutil.copytree(live, left)
        batch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await batch

    run(die_midway())
    conversation.close()
    return left


class Discarded:
    """The conversation at ``path`` loaded as a new process would, its last turn discarded."""

    def __init__(self, path: Path) -> None:
        """Load, find the unfinished turn, discard it under the writer lock."""
        self.path = path
        self.before_bytes = (path / "events.json").read_bytes()
        self.conversation = load_conversation(path)
        self.before = list(self.conversation.stream)
        incomplete = find_incomplete_turn(self.conversation.stream)
        assert incomplete is not None
        assert incomplete.blocked
        self.coordinator = ToolCoordinator(self.conversation, tools={}, config=CONFIG)
        with self.conversation:
            self.result: DiscardedTurn = self.coordinator.discard_turn(incomplete)

    @property
    def appended(self) -> list[object]:
        """The payloads the discard appended, in order."""
        return [entry.payload for entry in self.conversation.stream[len(self.before) :]]  # type: ignore[union-attr]


def test_every_open_question_and_call_is_closed_as_discarded_and_nothing_before_changes(
    tmp_path: Path,
) -> None:
    """Prompted, queued, model's and parked questions close as discarded; every open call too."""
    left = crashed_everywhere(tmp_path)
    loaded = load_conversation(left)
    incomplete = find_incomplete_turn(loaded.stream)
    assert incomplete is not None
    open_ids = {call.tool_call.id for call in incomplete.open}
    assert open_ids == {"park_1", "ask_1", "queued_1", "guess_1", "slow_1"}
    waiting = {call.tool_call.id: call.recorded.waiting for call in incomplete.open}
    assert waiting["park_1"] is not None
    assert waiting["park_1"].parked
    assert waiting["ask_1"] is not None
    assert waiting["queued_1"] is not None  # queued: its request is on disk before it is shown
    assert waiting["guess_1"] is not None
    loaded.close()

    discarded = Discarded(left)
    appended = discarded.appended
    closes = [record for record in appended if isinstance(record, Cancelled)]
    responses = [record for record in appended if isinstance(record, ToolCallResponse)]
    assert {close.reason for close in closes} == {CancellationReason.DISCARDED}
    assert {close.id for close in closes} == {
        waiting[call_id].request.id  # type: ignore[union-attr]
        for call_id in ("park_1", "ask_1", "queued_1", "guess_1")
    }
    assert {response.id for response in responses} == open_ids
    assert all(r.content == DISCARDED and r.is_error for r in responses)
    assert len(appended) == len(closes) + len(responses)
    # Each question is closed before its call's response.
    order = [getattr(record, "id", None) for record in appended]
    for call_id in ("park_1", "ask_1", "queued_1", "guess_1"):
        assert order.index(waiting[call_id].request.id) < order.index(call_id)  # type: ignore[union-attr]
    assert discarded.result.turn == 1
    assert discarded.result.questions == tuple(closes)
    assert set(discarded.result.tool_calls) == set(responses)
    # Nothing that was there is removed or rewritten: the old stream is a prefix.
    assert list(discarded.conversation.stream)[: len(discarded.before)] == discarded.before
    discarded.conversation.close()


def test_a_discarded_turn_is_finished_reloads_and_resaves_byte_for_byte(tmp_path: Path) -> None:
    """After a discard the turn is finished, pairs fully, re-saves unchanged, needs no sanitize."""
    left = crashed_everywhere(tmp_path)
    Discarded(left).conversation.close()
    saved = (left / "events.json").read_bytes()
    again = load_conversation(left)
    assert find_incomplete_turn(again.stream) is None
    pairing = pair_events(again.stream)
    assert pairing.inquiries.pending == ()
    assert pairing.inquiries.orphaned == ()
    assert pairing.tool_calls.pending == ()
    assert pairing.tool_calls.orphaned == ()
    assert not plan_sanitize(again.stream).report.changed
    save_conversation(again, tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / "events.json").read_bytes() == saved
    again.close()


def test_every_close_records_the_discarded_route(tmp_path: Path) -> None:
    """Each response a discard appends says in its metadata that the turn was discarded."""
    left = crashed_everywhere(tmp_path)
    discarded = Discarded(left)
    entries = discarded.conversation.stream[len(discarded.before) :]
    for entry in entries:
        assert isinstance(entry, EventEntry)
        route = recorded_route(entry.metadata)
        assert route is not None
        assert route.route == DISCARDED_ROUTE
    assert Resolution.DISCARDED.value == DISCARDED_ROUTE
    discarded.conversation.close()


def test_a_parked_request_keeps_its_park_mark_and_gets_one_response(tmp_path: Path) -> None:
    """The parked request is not rewritten (its mark stays): one discarded response closes it."""
    left = crashed_everywhere(tmp_path)
    discarded = Discarded(left)
    marked = [
        entry
        for entry in discarded.conversation.stream
        if isinstance(entry, EventEntry)
        and isinstance(entry.payload, InquiryRequest)
        and recorded_park(entry.metadata) is not None
    ]
    assert len(marked) == 1
    closing = [
        payload
        for payload in payloads(discarded.conversation, Cancelled)
        if payload.id == marked[0].payload.id  # type: ignore[union-attr]
    ]
    assert closing == [Cancelled(id=marked[0].payload.id, reason=CancellationReason.DISCARDED)]  # type: ignore[union-attr]
    discarded.conversation.close()


def test_the_next_run_begins_a_new_turn_and_remembers_no_discarded_answer(
    tmp_path: Path,
) -> None:
    """After a discard, run() plays in a new turn: the same question is asked anew."""
    left = crashed_everywhere(tmp_path)
    discarded = Discarded(left)
    conversation = discarded.conversation
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="Again."))
    requests = assistant_calls(conversation, ("ask_3", "ask"))
    tool = AskingTool([APPLY])
    coordinator = ToolCoordinator(
        conversation, tools={"ask": executor(tool)}, config=CONFIG, terminal=False
    )
    (response,) = run(coordinator.run(requests))
    # Nobody to ask and the default policy deny: refused, never answered from the old turn.
    assert response.is_error
    assert tool.runs == [{}]
    assert coordinator.turn_state.remembered_tool_answers == {}
    conversation.close()


def left_on_disk(path: Path, *events: Any) -> Path:
    """Save a turn of ``events`` after a user message and a model response."""
    conversation = Conversation.new(
        metadata={"title": "left"}, clock=FixedClock(), new_id=CountingIds()
    )
    for event in (
        TurnStart(),
        ChatRequest(content="Go."),
        ChatResponse.message("Going."),
        *events,
    ):
        conversation.stream.append(event)
    save_conversation(conversation, path)
    conversation.close()
    return path


def _request(inquiry_id: str, question: Question, tool: str) -> InquiryRequest:
    return InquiryRequest(
        id=inquiry_id,
        source=InquirySource.tool(tool),
        question=InquiryQuestion.from_question(question),
    )


def test_a_stray_question_is_closed_as_discarded(tmp_path: Path) -> None:
    """A question no open call is known to have asked is closed too, and the turn finished."""
    left = left_on_disk(
        tmp_path / "stray",
        ToolCallRequest(id="c1", name="ask", arguments={}),
        ToolCallResponse(id="c1", content="done", is_error=False),
        _request("q-1", APPLY, "ask"),
    )
    discarded = Discarded(left)
    assert discarded.appended == [Cancelled(id="q-1", reason=CancellationReason.DISCARDED)]
    assert discarded.result.tool_calls == ()
    assert find_incomplete_turn(discarded.conversation.stream) is None
    discarded.conversation.close()


def test_a_turn_with_nothing_open_is_left_as_it_is(tmp_path: Path) -> None:
    """A turn waiting only for the model has nothing to close: nothing is appended."""
    path = tmp_path / "waiting"
    conversation = Conversation.new(
        metadata={"title": "w"}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="Hello?"))
    save_conversation(conversation, path)
    before = (path / "events.json").read_bytes()
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    with conversation:
        result = ToolCoordinator(conversation, tools={}).discard_turn(incomplete)
    assert (result.turn, result.questions, result.tool_calls) == (1, (), ())
    assert (path / "events.json").read_bytes() == before
    conversation.close()


def test_a_stale_incomplete_turn_is_refused_and_nothing_is_appended(tmp_path: Path) -> None:
    """An incomplete turn read from another state of the conversation is refused."""
    left = left_on_disk(tmp_path / "stale", ToolCallRequest(id="c1", name="ask", arguments={}))
    conversation = load_conversation(left)
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    conversation.stream.append(ToolCallResponse(id="c1", content="late", is_error=False))
    length = len(conversation.stream)
    with pytest.raises(ValueError, match="another state of the conversation"):
        ToolCoordinator(conversation, tools={}).discard_turn(incomplete)
    assert len(conversation.stream) == length
    conversation.close()


def test_the_export_says_what_the_discard_closed(tmp_path: Path) -> None:
    """The Markdown export names each discarded question and call as discarded."""
    left = crashed_everywhere(tmp_path)
    discarded = Discarded(left)
    text = export_markdown(discarded.conversation.stream)
    assert text.count("the turn was discarded rather than continued") == 4
    assert text.count("and the turn was discarded: the tool did not finish.") == 5
    discarded.conversation.close()


def test_a_call_whose_permission_was_parked_gets_one_discarded_response(tmp_path: Path) -> None:
    """A parked permission (the call never ran): its call is closed, no question invented."""
    path = tmp_path / "gate"
    conversation = conversation_on_disk(path, "Open the gate.")
    requests = assistant_calls(conversation, ("gate_1", "gate"))
    gate = AskingTool([])
    config = parse_tools_config({"tools": {"gate": {"run": "ask", "detached": "park"}}})
    coordinator = ToolCoordinator(
        conversation, tools={"gate": executor(gate)}, config=config, terminal=False
    )
    assert run(coordinator.run(requests)) == []
    conversation.close()
    discarded = Discarded(path)
    assert discarded.appended == [ToolCallResponse(id="gate_1", content=DISCARDED, is_error=True)]
    assert gate.runs == []
    assert find_incomplete_turn(discarded.conversation.stream) is None
    discarded.conversation.close()
