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

Without ``--continue-turn``, :func:`refuse_unfinished` stops a run on a
conversation whose last turn did not finish (RFD 023: a tool call or
question open, or no model response after the user's message or the last
tool result) before anything is written: a new turn is never stacked on an
unfinished one silently. Its one line says how to go on, with a command that
repeats the run's own arguments (the scenario, ``--answers``, the
conversation: pasted as it is, the questions the answers file answers are
answered; :mod:`coordinator.cli._command_lines`): continue it (when it is a
turn of this scenario, which alone ``--continue-turn`` can continue), or
discard it (``--discard-turn`` closes what is open, deletes nothing, and
plays the scenario in a new turn: :mod:`coordinator.cli._run_discard`), or
begin a new turn after it (``--new-turn``, when nothing is open). A turn of this very scenario
that holds all it plays is no obstacle: a scenario turn without a reply never
gets the model's follow-up, but the scenario has nothing left to play in it.

Rules:

1. The conversation is continued under its writer lock, taken before it is
   read (:func:`~coordinator.store.load_locked`): a second writer (another
   ``inquiry run``, ``inquiry sanitize``) is refused, naming this one, and
   nothing is lost.
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
from coordinator.cli._check import MAY_HAVE_COMPLETED, TURN_MARKER, quoted_text
from coordinator.cli._command_lines import command_line
from coordinator.cli._run_play import call_ids
from coordinator.cli._run_result import RunError
from coordinator.cli._run_workspace import WORKSPACE, check_seed, seed_workspace
from coordinator.store import refuse_other_writer, save_conversation
from coordinator.stream import EventEntry, IncompleteTurn, find_incomplete_turn
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
    from coordinator.cli._run_result import RunOptions
    from coordinator.cli._scenario import Scenario, TurnPlan
    from coordinator.driver import ToolCoordinator
    from coordinator.store import Conversation
    from coordinator.stream import OpenCall, Turn
    from machines import JsonValue

__all__ = [
    "FROM_THE_START",
    "TURN_MARKER",
    "Continuation",
    "assistant_tools",
    "continue_from",
    "refuse_unfinished",
    "start_from",
    "turn_marker",
]


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
            number = stream.turn_count
            await self.take_up(coordinator, progress, number, plan)
            return number, self.cycles
        stream.append(TurnStart(), metadata=turn_marker(scenario, index))
        stream.append(ChatRequest(content=plan.message))
        number = stream.turn_count
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
            # Printed with the call's id: the continued run names what the stopped one left.
            progress.emit(f"  -> {call.tool_call.name} [{call.tool_call.id}] {_how(call)}")
            for question_id, why in call.unfit:
                # Said once, naming the question and why, never the value (issue 36).
                progress.emit(
                    f"  ! {call.tool_call.name} · {question_id}: its recorded answer is not "
                    f"replayed ({why})"
                )
        for stray in incomplete.stray:
            progress.emit(f"  x {stray.id}: no open call asked it; closed (interrupted)")
        for call in incomplete.waiting:
            request = call.waiting.entry.payload if call.waiting is not None else None
            if isinstance(request, InquiryRequest):
                progress.taken_up(call.tool_call.id, request)
        await coordinator.continue_turn(incomplete)


def _how(call: OpenCall) -> str:
    """What continuing does with ``call``, in the words the continue line prints."""
    if call.permission_parked and call.recorded.waiting is None:
        return "its permission to run was parked: it is asked again"
    answered = f", with its answers to {', '.join(sorted(call.replay))}" if call.replay else ""
    how = "runs again" + answered if call.ran else "runs (nothing recorded of it)"
    if call.declined is not None:
        how = "ends as its last question was closed, without running again"
    elif call.waiting is None:
        how = f"{MAY_HAVE_COMPLETED}; runs again{answered}"
    waiting = call.recorded.waiting
    if waiting is not None:
        # Recorded without its question id (JP's): named by its text, never by its id.
        named = waiting.question_id or quoted_text(waiting.request.question.text)
        held = "was parked" if waiting.parked else "was waiting"
        how += f"; {named} {held} for an answer"
    return how


#: A run that starts with the scenario's first turn, its workspace seeded.
FROM_THE_START = Continuation(turn=0, seeds=True)


def start_from(
    conversation: Conversation,
    *,
    created: bool,
    scenario: Scenario,
    options: RunOptions,
    continue_turn: bool,
    new_turn: bool = False,
    discarding: bool = False,
) -> Continuation:
    """Where the play starts: where the scenario stood (``--continue-turn``), or its first turn.

    Without ``continue_turn``, a conversation whose last turn did not finish
    is refused (:func:`refuse_unfinished`); ``new_turn`` lets one that has
    nothing open be followed by a new turn. ``discarding``: the last turn is
    discarded before the play begins (``--discard-turn``), and is followed.
    """
    if continue_turn:
        return continue_from(conversation, created=created, scenario=scenario, options=options)
    if not created and not discarding:
        refuse_unfinished(conversation, scenario, options, new_turn=new_turn)
    return FROM_THE_START


def refuse_unfinished(
    conversation: Conversation, scenario: Scenario, options: RunOptions, *, new_turn: bool
) -> None:
    """Raise :class:`RunError` (exit 2) when the last turn did not finish; nothing is written.

    Another process writing the conversation is named instead (its turn
    looks unfinished only because it is being played). Not refused: a last
    turn of this scenario holding all it plays, and, with ``new_turn``, one
    with nothing open. ``--continue-turn`` is offered only for a turn of
    this scenario: of any other it would only say there is nothing to
    continue (:func:`continue_from`).
    """
    incomplete = find_incomplete_turn(
        conversation.stream, assistant_tools=assistant_tools(scenario)
    )
    if incomplete is None:
        return
    refuse_other_writer(conversation)  # naming the writer, when one is at work there
    played = _played_turn(incomplete.turn, scenario)
    if not incomplete.blocked and (new_turn or (played is not None and played.whole)):
        return
    shown = shown_path(options.conversation)
    said = f"{shown}: its last turn did not finish ({incomplete.status})"
    if incomplete.blocked and new_turn:
        said += " and something is open in it, so --new-turn cannot follow it"
    beginning = f"`{command_line(options, '--new-turn')}`"
    if incomplete.blocked:
        discard = f"`{command_line(options, '--discard-turn')}`"
        ways = [
            (
                "discard it (what is open is closed, nothing deleted) and begin a new turn "
                f"with {discard}"
            )
        ]
    else:
        ways = [f"leave it unfinished and begin a new turn with {beginning}"]
    if played is not None:
        ways.insert(0, f"continue it with `{command_line(options, '--continue-turn')}`")
    else:
        said += (
            f"; it was not played from {shown_path(scenario.path)} as it is now, "
            "so it cannot be continued"
        )
    raise RunError(f"{said}; {', or '.join(ways)}; nothing was written")


def continue_from(
    conversation: Conversation, *, created: bool, scenario: Scenario, options: RunOptions
) -> Continuation:
    """Where ``scenario`` stood in ``conversation``, read under its lock (``load_locked``).

    Raises :class:`RunError` when its last turn is not one the scenario
    plays (rule 2).
    """
    if created:
        return FROM_THE_START
    stream = conversation.stream
    turn = stream.current_turn()
    if turn is None:
        return FROM_THE_START
    incomplete = find_incomplete_turn(stream, assistant_tools=assistant_tools(scenario))
    played = _played_turn(turn, scenario)
    if played is None:
        shown = shown_path(options.conversation)
        beginning = f"`{command_line(options, '--new-turn')}`"
        if incomplete is None:
            how = "run without --continue-turn to begin a new turn"
        elif incomplete.blocked:
            how = (
                "discard it (what is open is closed, nothing deleted) and begin a new turn "
                f"with `{command_line(options, '--discard-turn')}`"
            )
        else:
            how = f"begin a new turn after it with {beginning}"
        raise RunError(
            f"{shown}: its last turn was not played from {shown_path(scenario.path)} as it is "
            "now (it has no such turn, or the turn holds other messages or tool calls); "
            f"nothing to continue from it: {how}"
        )
    # Without a reply, a turn holding every cycle is taken up still when it did
    # not finish (RFD 023): what is open in it is continued.
    if played.replied or (played.whole and incomplete is None):
        return Continuation(turn=played.index + 1)
    return Continuation(turn=played.index, begun=True, cycles=played.cycles, incomplete=incomplete)


@attrs.frozen(kw_only=True)
class _PlayedTurn:
    """What of scenario turn ``index`` (0 for the first) a conversation's turn holds.

    ``cycles`` of its cycles were played, and its reply if ``replied``;
    ``whole``: every cycle, and the reply when it has one, so the scenario
    has nothing left to play in it.
    """

    index: int
    cycles: int
    replied: bool
    whole: bool


def _played_turn(turn: Turn, scenario: Scenario) -> _PlayedTurn | None:
    """How far ``turn`` holds the scenario turn it is marked with (``None``: not as played)."""
    index = _marked_turn(turn, scenario)
    if index is None:
        return None
    plan = scenario.turns[index]
    played = _played(turn, plan, turn.index + 1)
    if played is None:
        return None
    cycles, replied = played
    whole = cycles == len(plan.cycles) and (replied or plan.reply is None)
    return _PlayedTurn(index=index, cycles=cycles, replied=replied, whole=whole)


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
