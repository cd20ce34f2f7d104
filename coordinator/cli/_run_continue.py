"""``inquiry run --continue-turn``: where a scenario stood in a conversation, and going on.

Theory of operation: every turn ``inquiry run`` begins carries a marker in
its ``turn_start``'s ``metadata``, which JP keeps verbatim:
``{"inquiry_run": {"scenario": "<file name>", "turn": <n>}}``, the scenario
turn it plays (1 for the first). When a run dies (``kill -9``, a crash, a
power loss), the conversation holds a prefix of what it did. With
``--continue-turn``, :func:`continue_from` takes the conversation's writer
lock, reads the conversation again under it, finds its last turn
(:func:`~coordinator.stream.find_incomplete_turn`) and the scenario turn its
marker names, and checks that what the turn holds is what that scenario turn
plays: the user's message, then each cycle's message and tool calls (ids,
tools, arguments), in order. That gives where the scenario stood: how many
of the turn's cycles were played, and whether its closing reply was. The
play loop then continues the turn's open tool calls
(:meth:`~coordinator.ToolCoordinator.continue_turn`: finished calls are kept,
never run again), plays the turn's remaining cycles and its reply, and the
scenario's later turns, as if never interrupted.

Without ``--continue-turn``, :func:`refuse_blocked` stops a run on a
conversation whose last turn is blocked (an open tool call or question)
before anything is written: a new turn is never stacked on a broken one.

Rules:

1. The conversation is continued under its writer lock, taken before it is
   read again: a second writer (another ``inquiry run``, ``inquiry
   sanitize``) is refused, naming this one, and nothing is lost.
2. A last turn that is not the named scenario turn as it is played (no
   marker, another scenario, or a scenario changed since) is not continued:
   exit 2, saying so. Nothing is guessed.
3. A conversation that holds none of the scenario yet (no conversation, or
   no turn) is played from the scenario's first turn, workspace seeded. A
   continued scenario's workspace is left as its tools left it: seeding it
   again would undo what the finished tools did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from coordinator._text import shown_path
from coordinator.cli._check import quoted_text
from coordinator.cli._run_play import call_ids
from coordinator.cli._run_result import RunError
from coordinator.cli._run_workspace import WORKSPACE, check_seed, seed_workspace
from coordinator.store._lock import LOCK_FILE
from coordinator.store._store import load_conversation, save_conversation
from coordinator.stream._entries import EventEntry
from coordinator.stream._incomplete import IncompleteTurn, find_incomplete_turn
from machines import (
    ChatRequest,
    ChatResponse,
    Event,
    InquiryRequest,
    ToolCallRequest,
    TurnStart,
)

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.cli._run_progress import Progress
    from coordinator.cli._scenario import Scenario, TurnPlan
    from coordinator.driver._tool_coordinator import ToolCoordinator
    from coordinator.store._store import Conversation
    from coordinator.stream._stream import Turn
    from machines import JsonValue

__all__ = [
    "FROM_THE_START",
    "TURN_MARKER",
    "Continuation",
    "assistant_tools",
    "continue_from",
    "refuse_blocked",
    "start_from",
    "turn_marker",
]

#: The ``turn_start`` metadata key under which ``inquiry run`` notes the scenario turn.
TURN_MARKER = "inquiry_run"


def turn_marker(scenario: Scenario, index: int) -> dict[str, JsonValue]:
    """The ``turn_start`` metadata of scenario turn ``index`` (0 for the first)."""
    return {TURN_MARKER: {"scenario": shown_path(scenario.path.name), "turn": index + 1}}


def assistant_tools(scenario: Scenario) -> frozenset[str]:
    """The scenario's tools whose questions are the assistant's (``ask_user``, by any name)."""
    return frozenset(name for name, tool in scenario.tools.items() if tool.builtin == "ask_user")


@attrs.frozen(kw_only=True)
class Continuation:
    """Where a scenario stood in a conversation, and so where a continued run starts.

    ``turn`` is the scenario turn to start at (0 for the first; the number of
    turns when everything was played). ``begun``: the conversation's last
    turn is that scenario turn, of which ``cycles`` were played; the run
    continues it (``incomplete``, when it did not finish) rather than begin
    it. ``seeds``: nothing of the scenario was played yet, so the workspace
    is seeded as for a new run.
    """

    turn: int
    begun: bool = False
    cycles: int = 0
    incomplete: IncompleteTurn | None = None
    seeds: bool = False

    def check_seed(self, scenario: Scenario, path: Path) -> None:
        """Refuse a seed that cannot be copied, before anything is written (when it will be)."""
        if self.seeds:
            check_seed(scenario, path / WORKSPACE, path)

    def seed(self, scenario: Scenario, path: Path) -> None:
        """Seed the workspace of the conversation at ``path``, unless the scenario is continued."""
        if self.seeds:
            seed_workspace(scenario, path / WORKSPACE, path)

    async def enter(
        self,
        index: int,
        scenario: Scenario,
        conversation: Conversation,
        coordinator: ToolCoordinator,
        progress: Progress,
    ) -> tuple[int, int]:
        """Enter scenario turn ``index``: its number in the conversation, and cycles played.

        A turn begun by the run that died is continued (:meth:`take_up`);
        any other is begun: its ``turn_start`` (with the marker) and the
        user's message are appended, and saved.
        """
        plan = scenario.turns[index]
        stream = conversation.stream
        if self.begun and index == self.turn:
            number = len(stream.turns())
            await self.take_up(coordinator, progress, number, plan)
            return number, self.cycles
        stream.append(TurnStart(), metadata=turn_marker(scenario, index))
        stream.append(ChatRequest(content=plan.message))
        number = len(stream.turns())
        progress.user(number, plan.message)
        save_conversation(conversation)
        return number, 0

    async def take_up(
        self, coordinator: ToolCoordinator, progress: Progress, number: int, plan: TurnPlan
    ) -> None:
        """Continue the begun turn's open tool calls (conversation turn ``number``)."""
        progress.user(number, plan.message)
        incomplete = self.incomplete
        if incomplete is None or not incomplete.blocked:
            progress.emit(f"  continued after {self.cycles} of {len(plan.cycles)} cycles")
            return
        finished = len(incomplete.finished)
        progress.emit(
            f"  continued: {incomplete.status}; {finished} tool call"
            f"{'' if finished == 1 else 's'} finished before the stop (kept, not run again)"
        )
        progress.cycle_of([call.tool_call for call in incomplete.open])
        for call in incomplete.open:
            answered = (
                f", with its answers to {', '.join(sorted(call.replay))}" if call.replay else ""
            )
            how = "runs again" + answered if call.ran else "runs (nothing recorded of it)"
            # Printed with the call's id: the continued run names what the stopped one left.
            if call.declined is not None:
                how = "ends as its last question was closed, without running again"
            waiting = call.recorded.waiting
            if waiting is not None:
                # Recorded without its question id (JP's): named by its text, never by its id.
                named = waiting.question_id or quoted_text(waiting.request.question.text)
                how += f"; {named} was waiting for an answer"
            progress.emit(f"  -> {call.tool_call.name} [{call.tool_call.id}] {how}")
        for stray in incomplete.stray:
            progress.emit(f"  x {stray.id}: no open call asked it; closed (interrupted)")
        for call in incomplete.waiting:
            request = call.waiting.entry.payload if call.waiting is not None else None
            if isinstance(request, InquiryRequest):
                progress.taken_up(call.tool_call.id, request)
        await coordinator.continue_turn(incomplete)


#: A run that starts with the scenario's first turn, its workspace seeded.
FROM_THE_START = Continuation(turn=0, seeds=True)


def start_from(
    conversation: Conversation,
    *,
    created: bool,
    scenario: Scenario,
    path: Path,
    continue_turn: bool,
) -> tuple[Conversation, Continuation]:
    """Where the play starts: where the scenario stood (``--continue-turn``), or its first turn.

    Without ``continue_turn``, a conversation whose last turn is blocked is
    refused (:func:`refuse_blocked`).
    """
    if continue_turn:
        return continue_from(conversation, created=created, scenario=scenario, path=path)
    if not created:
        refuse_blocked(conversation, scenario, path)
    return conversation, FROM_THE_START


def refuse_blocked(conversation: Conversation, scenario: Scenario, path: Path) -> None:
    """Raise :class:`RunError` (exit 2) when the last turn is blocked; nothing is written.

    Another process writing the conversation is named instead (its turn
    looks blocked only because it is being played).
    """
    incomplete = find_incomplete_turn(
        conversation.stream, assistant_tools=assistant_tools(scenario)
    )
    if incomplete is None or not incomplete.blocked:
        return
    if (path / LOCK_FILE).exists():
        with conversation:  # refused, naming the writer, when one is at work there
            pass
    shown = shown_path(path)
    raise RunError(
        f"{shown}: its last turn did not finish ({incomplete.status}); continue it with "
        f"`inquiry run {shown_path(scenario.path)} --conversation {shown} --continue-turn`, "
        f"or discard it with `inquiry sanitize {shown}`; nothing was written"
    )


def continue_from(
    conversation: Conversation, *, created: bool, scenario: Scenario, path: Path
) -> tuple[Conversation, Continuation]:
    """The conversation read again under its writer lock, and where ``scenario`` stood in it.

    Raises :class:`~coordinator.store.ConversationLockedError` when another
    process writes it, and :class:`RunError` when its last turn is not one
    the scenario plays (rule 2).
    """
    if created:
        return conversation, Continuation(turn=0, seeds=True)
    with conversation:
        locked = load_conversation(path)
        locked.__enter__()  # the lock stays with the conversation the run goes on with
    stream = locked.stream
    turn = stream.current_turn()
    if turn is None:
        return locked, Continuation(turn=0, seeds=True)
    incomplete = find_incomplete_turn(stream, assistant_tools=assistant_tools(scenario))
    index = _marked_turn(turn, scenario)
    played = None if index is None else _played(turn, scenario.turns[index], turn.index + 1)
    if index is None or played is None:
        discard = f", or discard it with `inquiry sanitize {shown_path(path)}`"
        raise RunError(
            f"{shown_path(path)}: its last turn was not played from "
            f"{shown_path(scenario.path)} as it is now (it has no such turn, or the turn "
            "holds other messages or tool calls); nothing to continue from it: run without "
            f"--continue-turn to begin a new turn{discard if incomplete is not None else ''}"
        )
    cycles, replied = played
    plan = scenario.turns[index]
    finished = replied or (
        plan.reply is None and cycles == len(plan.cycles) and incomplete is None
    )
    if finished:
        return locked, Continuation(turn=index + 1)
    return locked, Continuation(turn=index, begun=True, cycles=cycles, incomplete=incomplete)


def _marked_turn(turn: Turn, scenario: Scenario) -> int | None:
    """The scenario turn the turn's marker names (0 for the first), if it names one of them."""
    first = turn.entries[0] if turn.entries else None
    if not (isinstance(first, EventEntry) and isinstance(first.payload, TurnStart)):
        return None
    marker: Any = first.metadata.get(TURN_MARKER)
    number = marker.get("turn") if isinstance(marker, dict) else None
    if type(number) is not int or not 1 <= number <= len(scenario.turns):
        return None
    return number - 1


def _played(turn: Turn, plan: TurnPlan, number: int) -> tuple[int, bool] | None:
    """How many of ``plan``'s cycles ``turn`` holds, and whether its reply (``None``: not plan).

    Only what the play loop appends is compared (the user's message, each
    cycle's message and calls, the reply); what the coordinator recorded in
    between (questions, answers, tool results) is its own.
    """
    appended: list[Event] = [
        entry.payload
        for entry in turn.events
        if isinstance(entry.payload, ChatRequest | ChatResponse | ToolCallRequest)
    ]
    if not appended or appended[0] != ChatRequest(content=plan.message):
        return None
    position, cycles = 1, 0
    for cycle_number, cycle in enumerate(plan.cycles, 1):
        if position == len(appended):
            break
        expected: list[Event] = [ChatResponse.message(cycle.message)] if cycle.message else []
        ids = call_ids(cycle, f"{number}_{cycle_number}")
        expected += [
            ToolCallRequest(id=call_id, name=call.tool, arguments=dict(call.arguments))
            for call, call_id in zip(cycle.calls, ids, strict=True)
        ]
        if appended[position : position + len(expected)] != expected:
            return None
        position += len(expected)
        cycles += 1
    replied = (
        plan.reply is not None
        and cycles == len(plan.cycles)
        and appended[position:] == [ChatResponse.message(plan.reply)]
    )
    if position + replied != len(appended):
        return None  # more than the plan plays
    return cycles, replied
