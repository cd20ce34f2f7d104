"""Benchmark: continuing a turn of N finished tool calls reads them, it does not run them again.

A turn on disk holds N finished calls, one per model response (each asked its
question, got its answer and its response), and one more call whose question
waited when the process died. Continuing it is what a restart does with
``--continue-turn``: load the conversation, find the incomplete turn, and
``continue_turn`` (the open call runs again, adopts its waiting question,
which a static answer closes, and the turn is saved). That costs reading the
N finished calls, so its time per finished call stays flat from N = 100 to
N = 1,000; and it is compared with what a restart without resume would pay
for the same calls, running all of them again through the coordinator (the
tool itself does nothing: the cheapest re-run there is).
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bench_support import Metric, Sizes, paired

from coordinator import (
    Ask,
    BuiltinExecutor,
    BuiltinTool,
    Conversation,
    Success,
    ToolCoordinator,
    find_incomplete_turn,
    load_conversation,
    parse_tools_config,
    save_conversation,
)
from machines import (
    Answered,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coordinator.driver import BuiltinOutcome

__all__ = ["run"]

TOOL = "apply_patch"
APPLY = Question.boolean("apply", "Apply the patch?")
CONFIG = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {TOOL: {"questions": {"apply": {"answer": True}}}},
    }
)


class AskOnce(BuiltinTool):
    """Asks ``apply``, then succeeds."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """The question, or success."""
        del arguments
        return Success("applied") if "apply" in answers else Ask(APPLY)


def _call(index: int) -> ToolCallRequest:
    return ToolCallRequest(id=f"toolu_{index:06d}", name=TOOL, arguments={"path": f"{index}.rs"})


def _asked(call: ToolCallRequest) -> InquiryRequest:
    return InquiryRequest(
        id=f"{call.id}.apply.1",
        source=InquirySource.tool(TOOL),
        question=InquiryQuestion.from_question(APPLY),
    )


def _left_by_a_crash(directory: Path, finished: int) -> Path:
    """A turn of ``finished`` calls done and one whose question waits, saved in ``directory``."""
    conversation = Conversation.new(metadata={"title": "crashed"}, base_config={})
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="apply every patch"))
    for index in range(finished + 1):
        call = _call(index)
        stream.append(ChatResponse.message(f"Patch {index}."))
        stream.append(call)
        stream.append(_asked(call))
        if index < finished:
            stream.append(Answered(id=f"{call.id}.apply.1", answer=True))
            stream.append(ToolCallResponse(id=call.id, content="applied", is_error=False))
    save_conversation(conversation, directory)
    conversation.close()
    return directory


async def _continue(directory: Path, finished: int) -> float:
    """Seconds to load the conversation, find its incomplete turn and continue it."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    conversation = load_conversation(directory)
    with conversation:
        incomplete = find_incomplete_turn(conversation.stream)
        if incomplete is None:
            raise AssertionError("the benchmark turn is not incomplete")
        coordinator = ToolCoordinator(
            conversation, tools={TOOL: BuiltinExecutor(AskOnce())}, config=CONFIG
        )
        (response,) = await coordinator.continue_turn(incomplete)
    seconds = loop.time() - start
    if response.is_error or len(incomplete.finished) != finished:
        raise AssertionError("the benchmark turn did not continue as it should")
    return seconds


async def _rerun(directory: Path, calls: int) -> float:
    """Seconds to run ``calls`` such calls again in a new turn, saved as they go."""
    conversation = load_conversation(directory)
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content="apply every patch, again"))
    stream.append(ChatResponse.message("From the start."))
    requests = [_call(index) for index in range(calls)]
    for request in requests:
        stream.append(request)
    coordinator = ToolCoordinator(
        conversation, tools={TOOL: BuiltinExecutor(AskOnce())}, config=CONFIG
    )
    loop = asyncio.get_running_loop()
    with conversation:
        start = loop.time()
        responses = await coordinator.run(requests)
        seconds = loop.time() - start
    if len(responses) != calls or any(response.is_error for response in responses):
        raise AssertionError("the re-run did not complete")
    return seconds


def run(sizes: Sizes) -> list[Metric]:
    """Every resume metric."""
    small, large = min(sizes.tool_calls), max(sizes.tool_calls)
    measured: dict[str, list[float]] = {"small": [], "large": [], "rerun": []}
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-resume-") as temp:
        root = Path(temp)
        for repeat in range(sizes.runs):
            # The runs take turns, and each is given a fresh copy: continuing appends to it.
            for name, finished in (("small", small), ("large", large)):
                directory = _left_by_a_crash(root / f"{name}-{repeat}", finished)
                gc.collect()
                measured[name].append(asyncio.run(_continue(directory, finished)))
            directory = _left_by_a_crash(root / f"rerun-{repeat}", 0)
            gc.collect()
            measured["rerun"].append(asyncio.run(_rerun(directory, large)))
    per_call = {
        name: [seconds / calls for seconds in measured[name]]
        for name, calls in (("small", small), ("large", large))
    }
    return [
        Metric.from_runs(
            metric=f"resume.continue_per_finished_call.{large}_vs_{small}",
            runs=paired(per_call["large"], per_call["small"], scale=1e6),
            unit="us/call",
            target=1.5,
            note=(
                f"load + find_incomplete_turn + continue_turn, per finished call, at {large} "
                f"finished calls vs {small}"
            ),
        ),
        Metric.from_runs(
            metric=f"resume.continue_vs_rerun.{large}",
            runs=paired(measured["large"], measured["rerun"], scale=1e3),
            unit="ms",
            target=0.5,
            note=(
                f"durable: continuing a turn of {large} finished calls (load, find the turn, "
                "continue it) vs running those calls again, saved as they go"
            ),
        ),
    ]
