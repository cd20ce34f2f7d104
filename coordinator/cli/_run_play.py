"""The play loop of ``inquiry run``: a scenario's turns, appended and run through the coordinator.

Theory of operation: for each turn, :func:`play` appends a ``turn_start``
and the user's ``chat_request`` and saves; for each cycle the assistant's
``chat_response`` and its ``tool_call_request`` entries, then awaits
:meth:`~coordinator.ToolCoordinator.run`, which resolves every question and
records every step (saving before every question), telling each to the
progress (:meth:`~coordinator.cli._run_progress.Progress.step`). A closing
reply, when the scenario gives one, ends the turn, and the turn is saved.
What the progress counted (failed calls, unanswered questions) goes into the
:class:`~coordinator.cli._run_result.RunResult` with the turns completed.

Where the loop starts, and how each turn is entered, is
:class:`~coordinator.cli._run_continue.Continuation`'s: a new turn is begun
(its ``turn_start`` noting the scenario turn, so that a run that dies can be
continued), and with ``--continue-turn`` the turn a dead run began has its
open tool calls continued and only its remaining cycles played.

A stop (:mod:`coordinator.cli._run_signals`: Ctrl-C, SIGTERM, SIGHUP, or
standard output closed under the run) cancels the batch in hand: the
coordinator closes and saves every open tool call and question, and no
further turn is played.

A batch that parked a prompt (the detached policy ``park``) ends with the
turn blocked on it: nothing more is played (a model is never sent a turn
with a call open), what waits is printed, and the run ends with exit
status 3; ``--continue-turn`` takes it up later.

Rules:

1. Whatever is printed about a cycle is printed before it is appended: should
   the printing stop the run (its output closed), no call is left in the
   stream without its response.
2. A call's id is the scenario's, or ``call_<turn>_<cycle>_<n>``, never two
   alike in a cycle (:func:`call_ids`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from coordinator._errors import os_reason
from coordinator._text import shown_path
from coordinator.cli._run_result import RunError, RunResult
from coordinator.cli._run_signals import stop_signals
from coordinator.store import save_conversation
from machines import ChatResponse, ToolCallRequest

if TYPE_CHECKING:
    from coordinator.cli._run_continue import Continuation
    from coordinator.cli._run_progress import Output, Progress
    from coordinator.cli._run_signals import Stop
    from coordinator.cli._scenario import Cycle, Scenario
    from coordinator.driver import ToolCoordinator
    from coordinator.store import Conversation

__all__ = ["call_ids", "play"]


async def play(
    scenario: Scenario,
    conversation: Conversation,
    coordinator: ToolCoordinator,
    progress: Progress,
    output: Output | None,
    *,
    stop: Stop,
    start: Continuation,
    between_prompts: contextlib.AbstractContextManager[None] | None = None,
) -> RunResult:
    """Play the turns of ``scenario`` from ``start`` (until ``stop`` is requested); how it went.

    ``between_prompts``: entered while the stop signals are routed to ``stop``
    (the terminal prompter's, which keeps keys typed away from a prompt from
    being echoed), so that every way out of the play, a SIGTERM's too, leaves it.
    """

    def stopping(why: str) -> None:
        # Cancelled first: after a hangup, printing may fail, and the stop must not.
        coordinator.cancel()
        progress.emit(f"  {why}: closing every open tool call and question")

    stop.action = stopping
    if output is not None:
        # The reader has gone: stop as on Ctrl-C (the coordinator closes and
        # saves what is open), printing nothing more.
        output.on_close = stop.request

    completed = 0
    with stop_signals(stop), between_prompts or contextlib.nullcontext():
        try:
            for index in range(start.turn, len(scenario.turns)):
                if stop.requested():
                    break
                completed += await _play_turn(
                    index, scenario, conversation, coordinator, progress, stop=stop, start=start
                )
                save_conversation(conversation)
                if coordinator.parked:
                    break  # the turn waits for an answer given later: nothing goes on
        except OSError as error:
            where = shown_path(conversation.path) if conversation.path else "the conversation"
            raise RunError(f"{where}: cannot be written: {os_reason(error)}") from None
    parked = len(coordinator.parked)
    if parked:
        progress.parked(coordinator.parked)
    closed = output is not None and output.closed
    return RunResult(
        turns=len(scenario.turns) - start.turn,
        completed=completed,
        problems=tuple(progress.problems),
        tool_calls=len(progress.outcomes),
        failed_calls=progress.failed_calls,
        unanswered=progress.unanswered,
        interrupted=stop.requested() and not closed and stop.signal is None,
        output_closed=closed,
        stopped_by=stop.signal,
        parked=parked,
    )


async def _play_turn(
    index: int,
    scenario: Scenario,
    conversation: Conversation,
    coordinator: ToolCoordinator,
    progress: Progress,
    *,
    stop: Stop,
    start: Continuation,
) -> bool:
    """Play scenario turn ``index`` (begun, or continued: ``start``); whether it completed.

    It did not when the run was stopped, or a prompt was parked.
    """
    plan = scenario.turns[index]
    # Begun, or continued where a dead run left it (coordinator/cli/_run_continue.py).
    number, played = await start.enter(index, scenario, conversation, coordinator, progress)
    if stop.requested() or coordinator.parked:
        return False
    for cycle_number, cycle in enumerate(plan.cycles[played:], played + 1):
        await _play_cycle(cycle, f"{number}_{cycle_number}", coordinator, progress, stop)
        if stop.requested() or coordinator.parked:
            return False
    if plan.reply is not None:
        conversation.stream.append(ChatResponse.message(plan.reply))
        progress.assistant(plan.reply)
    return True


def call_ids(cycle: Cycle, numbering: str) -> list[str]:
    """Each call's id: its own, or ``call_<numbering>_<n>`` (``_2``, ``_3`` on if another has it).

    An id the file gives may look like one made here; the made one gives way,
    so that no two calls of a cycle share an id and progress can tell them apart.
    """
    taken = {call.id for call in cycle.calls if call.id is not None}
    ids: list[str] = []
    for index, call in enumerate(cycle.calls, 1):
        if call.id is not None:
            ids.append(call.id)
            continue
        made, suffix = f"call_{numbering}_{index}", 1
        while made in taken:
            suffix += 1
            made = f"call_{numbering}_{index}_{suffix}"
        taken.add(made)
        ids.append(made)
    return ids


async def _play_cycle(
    cycle: Cycle,
    numbering: str,
    coordinator: ToolCoordinator,
    progress: Progress,
    stop: Stop,
) -> None:
    """One assistant response: its message, its calls (ids ``call_<numbering>_<n>``), run."""
    requests = [
        ToolCallRequest(id=call_id, name=call.tool, arguments=dict(call.arguments))
        for call, call_id in zip(cycle.calls, call_ids(cycle, numbering), strict=True)
    ]
    progress.cycle_of(requests)
    # Printed before anything is appended: should the printing stop the run
    # (its output closed), no call is left in the stream without its response.
    if cycle.message is not None:
        progress.assistant(cycle.message)
    for request in requests:
        progress.call(request)
    if stop.requested():
        return
    stream = coordinator.conversation.stream
    if cycle.message is not None:
        stream.append(ChatResponse.message(cycle.message))
    for request in requests:
        stream.append(request)
    try:
        await coordinator.run(requests)
    finally:
        progress.cycle_done()
