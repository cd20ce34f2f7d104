"""Benchmark 3: one turn with many parallel tool calls, through the async driver.

Each tool is an in-process built-in that asks three questions, one per run:
the first two have static answers in the configuration, the third was
remembered earlier in the turn (answered once, with "remember", in a warm-up
batch). So every question is answered without waiting for anyone, and a call
runs its tool four times.

The baseline is the tools' own work: the same tools run the same number of
times with the same answers, in parallel on the same event loop, with no
coordinator. Overhead per question is what the coordinator adds, divided by
the number of questions; it should not grow with the number of calls. It
is counted in CPU time (``time.process_time``: this process's, user and
kernel), as issue 34's budget is: on a machine shared with other work, the
wall time of a run that uses no disk or network also counts the moments the
process waited for a core. Both
sizes answer the same number of questions in a timed run (ten turns of the
small size, one of the large), so the cyclic collector, whose work grows
with what a run keeps, has the same to do at either: timing one turn of
each, the large one paid for a full collection the small one never reached.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import TYPE_CHECKING, Any

from bench_support import Metric, Sizes, paired
from bench_tools import AskInTurn

from coordinator import (
    BuiltinExecutor,
    Conversation,
    ScriptedPrompter,
    ToolCoordinator,
    parse_tools_config,
)
from machines import ChatRequest, ChatResponse, JsonValue, Question, ToolCallRequest, TurnStart

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping


__all__ = ["run"]

TOOL = "fs_modify_file"
QUESTIONS = (
    Question.boolean("apply_changes", "Apply the patch?", default=True),
    Question.select("strategy", "How?", ["merge", "rebase"]),
    Question.boolean("run_tests", "Run the tests afterwards?"),
)
CONFIG = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {
            TOOL: {
                "questions": {
                    "apply_changes": {"answer": True},
                    "strategy": {"answer": "rebase"},
                }
            }
        },
    }
)
ANSWERS: dict[str, JsonValue] = {"apply_changes": True, "strategy": "rebase", "run_tests": True}


def _conversation(calls: int) -> tuple[Conversation, list[ToolCallRequest], ToolCallRequest]:
    conversation = Conversation.new()
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="apply every patch"))
    stream.append(ChatResponse.message("On it."))
    warm_up = ToolCallRequest(id="warm_up", name=TOOL, arguments={})
    stream.append(warm_up)
    requests = [
        ToolCallRequest(id=f"toolu_{index:06d}", name=TOOL, arguments={"path": f"src/{index}.rs"})
        for index in range(calls)
    ]
    return conversation, requests, warm_up


async def _engine(calls: int, turns: int) -> float:
    """CPU seconds for ``turns`` batches of ``calls`` tool calls (their warm-up batches untimed).

    Each batch is a turn of its own conversation. Every conversation is made
    and warmed up first; then the batches run one after another, timed
    together, and every conversation is kept to the end (as an agent keeps
    its conversations): the objects the collector looks after, and so its
    work, are those of ``turns * calls`` calls either way.
    """
    executor = BuiltinExecutor(AskInTurn(QUESTIONS))
    batches = []
    for _ in range(turns):
        conversation, requests, warm_up = _conversation(calls)
        prompter = ScriptedPrompter().answer(True, remember=True, question="run_tests")
        coordinator = ToolCoordinator(
            conversation, tools={TOOL: executor}, config=CONFIG, prompter=prompter
        )
        await coordinator.run([warm_up])  # the person answers run_tests once, "remember"
        for request in requests:
            conversation.stream.append(request)
        batches.append((coordinator, requests))
    start = time.process_time()
    done = [await coordinator.run(requests) for coordinator, requests in batches]
    seconds = time.process_time() - start
    if any(
        len(responses) != calls or any(response.is_error for response in responses)
        for responses in done
    ):
        raise AssertionError("a benchmark turn did not complete")
    return seconds


async def _baseline(calls: int, turns: int) -> float:
    """CPU seconds for the same tool runs, ``calls`` in parallel, ``turns`` times, without us."""
    executor = BuiltinExecutor(AskInTurn(QUESTIONS))
    requests = [_conversation(calls)[1] for _ in range(turns)]
    ids = [question.id for question in QUESTIONS]
    stages = [{key: ANSWERS[key] for key in ids[:count]} for count in range(len(ids) + 1)]

    async def one(request: ToolCallRequest) -> None:
        for answers in stages:
            await executor.execute(request, answers)

    start = time.process_time()
    for batch in requests:
        await asyncio.gather(*(one(request) for request in batch))
    return time.process_time() - start


def _runs_in_turns(
    sides: Mapping[str, Callable[[int, int], Coroutine[Any, Any, float]]],
    sizes: Mapping[int, int],
    repeats: int,
) -> dict[tuple[str, int], list[float]]:
    """``repeats`` runs of each side at each size, by (side, calls): the i-th ran in round i.

    ``sizes`` maps a batch's calls to how many batches a run times. Each run
    times itself, inside its event loop (setting up the conversations and
    their warm-up batches is not timed). The runs take turns, as the other
    benchmarks' do (see ``bench_support.paired_costs``): a slow spell of the
    machine then falls on every side and size, not on whichever was running.
    """
    measured: dict[tuple[str, int], list[float]] = {
        (side, calls): [] for side in sides for calls in sizes
    }
    for _ in range(repeats):
        for side, make in sides.items():
            for calls, turns in sizes.items():
                gc.collect()
                measured[side, calls].append(asyncio.run(make(calls, turns)))
    return measured


def run(sizes: Sizes) -> list[Metric]:
    """Every turn metric."""
    small, large = min(sizes.tool_calls), max(sizes.tool_calls)
    # The same number of questions at either size: ten turns of 100 calls, one of 1,000.
    turns = {small: large // small, large: 1}
    questions = {calls: calls * turns[calls] * len(QUESTIONS) for calls in turns}
    measured = _runs_in_turns({"engine": _engine, "baseline": _baseline}, turns, sizes.runs)
    engine = {calls: measured["engine", calls] for calls in turns}
    baseline = {calls: measured["baseline", calls] for calls in turns}
    overhead = {
        calls: [
            (ours - bare) / questions[calls]
            for ours, bare in zip(engine[calls], baseline[calls], strict=True)
        ]
        for calls in turns
    }
    bare_per_question = [bare / questions[large] for bare in baseline[large]]
    return [
        Metric.from_runs(
            metric=f"turn.parallel_calls.{large}",
            runs=paired(engine[large], baseline[large], scale=1e3),
            unit="ms",
            note=(
                f"in memory: {large} calls x 3 questions (static, static, cached) vs the bare "
                "tool runs, CPU time"
            ),
        ),
        Metric.from_runs(
            metric=f"turn.overhead_per_question.{large}",
            runs=paired(overhead[large], bare_per_question, scale=1e6),
            unit="us/question",
            # Issue 34's budget, on the value: engine CPU a question at 1,000 parallel calls.
            ceiling=100,
            note=(
                f"in memory: engine CPU a question at {large} parallel calls (routes: static, "
                "static, cached), vs the tool's own work a question"
            ),
        ),
        Metric.from_runs(
            metric=f"turn.overhead_per_question.{large}_vs_{small}",
            runs=paired(overhead[large], overhead[small], scale=1e6),
            unit="us/question",
            target=1.2,
            note=(
                f"per question in a turn of {large} calls vs in {turns[small]} turns of "
                f"{small} (the same questions)"
            ),
        ),
    ]
