"""Benchmark: a turn costs the same at turn 10,000 as at turn 1 (issue 37).

A turn is what an agent's loop does once per user message: a ``turn_start``,
the user's ``chat_request``, the model's ``chat_response`` and four tool
calls, run by the :class:`~coordinator.ToolCoordinator` (each asks one
question, closed by a static answer), then the model's closing
``chat_response``. It is played on a conversation that already holds 0, 999
or 9,999 turns of history (realistic generated turns, loaded as a file would
be, so the stream's turn marker comes from a load), so the measured turns are
turns 1, 1,000 and 10,000. *In memory* the conversation has no directory;
*durable* it was loaded from one, so the coordinator saves it before the
tools run and after the batch, and the turn ends with a save: each save is an
append.

Each size is measured in several runs, the sizes taking turns run by run (a
slow spell of the shared machine falls on each of them); a run times a block
of turns in one event loop, each turn on top of the one before, and the
ratio of a run is its time a turn against turn 1's in the same round. Each
conversation first plays one turn untimed: the process's first turn pays for
what it sets up once, and the first save after a load writes the whole file
(to know its bytes are laid out as the store writes them, so that later saves
append): a load's cost, not a turn's. The baseline is turn 1, in the same
round. Nothing of the engine may grow with
the history: the target is 1.2x (issue 34's budget: the durable question flat
in the conversation's size).
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
from pathlib import Path

import attrs
from bench_support import Metric, Sizes, generated_turns, paired, write_conversation
from bench_tools import AskInTurn

from coordinator import (
    BuiltinExecutor,
    Conversation,
    ToolCoordinator,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from coordinator.wire import decode_stream
from machines import ChatRequest, ChatResponse, Question, ToolCallRequest, TurnStart

__all__ = ["run"]

TOOL = "fs_modify_file"
CALLS = 4
APPLY = Question.boolean("apply_changes", "Apply the patch?", default=True)
CONFIG = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {TOOL: {"questions": {"apply_changes": {"answer": True}}}},
    }
)


@attrs.define
class _Session:
    """A conversation with its history, the coordinator over it, and the next turn's number."""

    conversation: Conversation
    coordinator: ToolCoordinator
    number: int
    durable: bool


def _session(history: int, directory: Path | None) -> _Session:
    """A conversation holding ``history`` turns, in memory or loaded from ``directory``.

    Its next turn is turn ``history + 1`` (the untimed one, see the module docstring).
    """
    entries = generated_turns(history)
    if directory is None:
        stream, _ = decode_stream(entries)
        conversation = Conversation(stream, metadata={"title": "history"}, base_config={})
    else:
        conversation = load_conversation(write_conversation(directory, entries))
    coordinator = ToolCoordinator(
        conversation, tools={TOOL: BuiltinExecutor(AskInTurn([APPLY]))}, config=CONFIG
    )
    return _Session(conversation, coordinator, history + 1, durable=directory is not None)


async def _play(session: _Session, turns: int) -> float:
    """Seconds for ``turns`` turns played one after another on ``session``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for _ in range(turns):
        number = session.number
        stream = session.conversation.stream
        stream.append(TurnStart())
        stream.append(ChatRequest(content=f"Apply the patches of step {number}."))
        stream.append(ChatResponse.message("Applying them."))
        calls = [
            ToolCallRequest(id=f"t{number}_{index}", name=TOOL, arguments={"path": f"{index}.rs"})
            for index in range(CALLS)
        ]
        for call in calls:
            stream.append(call)
        responses = await session.coordinator.run(calls)
        if len(responses) != CALLS or any(response.is_error for response in responses):
            raise AssertionError("a benchmark turn did not complete")
        stream.append(ChatResponse.message("Applied."))
        if session.durable:
            save_conversation(session.conversation)
        session.number += 1
    return loop.time() - start


def run(sizes: Sizes) -> list[Metric]:
    """Every history metric."""
    histories = sizes.history_turns
    block = sizes.history_block
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-history-") as temp:
        root = Path(temp)
        sessions = {
            (durable, history): _session(history, root / f"history-{history}" if durable else None)
            for durable in (False, True)
            for history in histories
        }
        samples: dict[tuple[bool, int], list[float]] = {key: [] for key in sessions}
        try:
            for session in sessions.values():
                asyncio.run(_play(session, 1))  # untimed: see the module docstring
            for _ in range(sizes.runs):
                for key, session in sessions.items():
                    gc.collect()  # a sample does not pay for the garbage of the one before
                    samples[key].append(asyncio.run(_play(session, block)) / block)
        finally:
            for session in sessions.values():
                session.conversation.close()
    first = min(histories)
    played = sizes.runs * block

    def timed(history: int) -> str:
        # The turns timed on a conversation of ``history`` turns (after the untimed one).
        return f"{history + 2:,}-{history + 1 + played:,}"

    metrics: list[Metric] = []
    for durable in (False, True):
        kind = "durable" if durable else "in_memory"
        for history in histories:
            if history == first:
                continue
            metrics.append(
                Metric.from_runs(
                    metric=f"history.turn_{kind}.{history + 1}_vs_{first + 1}",
                    runs=paired(samples[durable, history], samples[durable, first], scale=1e6),
                    unit="us/turn",
                    target=1.2,
                    note=(
                        f"{'durable' if durable else 'in memory'}: a turn of {CALLS} tool calls "
                        "with a question each (static answers), "
                        f"{'saved as it goes' if durable else 'never saved'}: turns "
                        f"{timed(history)} vs {timed(first)} ({block} turns a run)"
                    ),
                )
            )
    return metrics
