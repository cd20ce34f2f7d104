"""Benchmark 2: an inquiry's lifecycle, against a plain dict-lookup state table.

Three lifecycles, each appending its records to an in-memory stream:

- ``routed``: asked, routed to the user, shown, answered;
- ``cached``: asked, answered from the turn cache;
- ``static``: asked, answered from a static answer in the configuration.

The baseline runs the same lifecycle as a ``dict`` of ``(state, trigger) ->
state`` lookups building the same records (same ids, same question, same
answer) and appending them the same way; the issue's target (at most 10x)
is on these. ``.machine_only`` variants append to a list on both sides,
which leaves the machines' own cost bare: every step is a row fired by
the table's own loop (``TableMachine.fire``, one machine per table for every
model), so they are shown for information, without a target. Flatness
compares the per-inquiry cost in a turn of many inquiries with that in a
turn of ten (the same total number of inquiries either way).
The two sides of each comparison take turns, run by run, as every
benchmark's do: a slow spell of a shared machine then falls on both.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from bench_support import Metric, Run, Sizes, paired, paired_times

from coordinator import ConversationStream
from machines import (
    Answered,
    CachedAnswer,
    Inquiry,
    InquiryFacts,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    StaticAnswer,
    TurnState,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["run"]

QUESTION = Question.boolean("apply_changes", "Apply the patch?", default=True)
SOURCE = InquirySource.tool("fs_modify_file")
TOOL = "fs_modify_file"

#: The facts each lifecycle starts from.
FACTS = {
    "routed": InquiryFacts(terminal=True),
    "cached": InquiryFacts(terminal=True, cached_answer=CachedAnswer(value=True)),
    "static": InquiryFacts(terminal=True, static_answer=StaticAnswer(True)),
}


def _sink(kind: str) -> Callable[[], Callable[[Any], object]]:
    """A fresh place for records: an in-memory stream, or a plain list."""
    if kind == "stream":
        return lambda: ConversationStream().append
    return lambda: [].append


# ------------------------------------------------------------------- engine


def engine_turn(path: str, call_ids: list[str], append: Callable[[Any], object]) -> None:
    """One turn of inquiries through the inquiry machine."""
    facts = FACTS[path]
    turn = TurnState()
    for call_id in call_ids:
        inquiry, step = Inquiry.ask(
            turn=turn,
            tool_call_id=call_id,
            tool_name=TOOL,
            question=QUESTION,
            source=SOURCE,
            facts=facts,
        )
        for record in step.records:
            append(record)
        if path == "routed":
            inquiry.terminal_ready(None)
            for record in inquiry.answer(True).records:
                append(record)


# ----------------------------------------------------------------- baseline

#: The same lifecycle as a plain state table.
TABLE: dict[tuple[str, str], str] = {
    ("new", "ask"): "requested",
    ("requested", "cached"): "cached",
    ("requested", "static"): "static",
    ("requested", "to_user"): "routed",
    ("cached", "use_cached"): "answered",
    ("static", "use_static"): "answered",
    ("routed", "terminal_ready"): "shown",
    ("shown", "answer"): "answered",
}


def baseline_turn(path: str, call_ids: list[str], append: Callable[[Any], object]) -> None:
    """One turn of the same inquiries through :data:`TABLE`."""
    facts = FACTS[path]
    attempts: dict[tuple[str, str], int] = {}
    for call_id in call_ids:
        state = TABLE["new", "ask"]
        key = (call_id, QUESTION.id)
        attempt = attempts[key] = attempts.get(key, 0) + 1
        inquiry_id = f"{call_id}.{QUESTION.id}.{attempt}"
        question = InquiryQuestion.from_question(QUESTION)
        append(InquiryRequest(id=inquiry_id, source=SOURCE, question=question))
        if facts.cached_answer is not None:
            state = TABLE[TABLE[state, "cached"], "use_cached"]
            append(Answered(id=inquiry_id, answer=facts.cached_answer.value))
        elif facts.static_answer is not None:
            state = TABLE[TABLE[state, "static"], "use_static"]
            append(Answered(id=inquiry_id, answer=facts.static_answer.value))
        else:
            state = TABLE[TABLE[state, "to_user"], "terminal_ready"]
            state = TABLE[state, "answer"]
            append(Answered(id=inquiry_id, answer=True))


# ------------------------------------------------------------------- timing


#: What a set of runs compared is keyed by: a side, or a turn size.
_Side = TypeVar("_Side", bound=Hashable)


def _turns(
    turn: Callable[[str, list[str], Callable[[Any], object]], None],
    *,
    path: str,
    sink: str,
    size: int,
    total: int,
) -> tuple[Run, int]:
    """A run of ``total // size`` turns of ``size`` inquiries, and how many inquiries it asks.

    Every turn's records are kept until the run is over, as a conversation
    keeps them (and as the readers' growth rows keep what each pass returns):
    the cyclic collector, whose work grows with what is kept, then has as
    much to look after at every size. Dropping each small turn's records at
    once, as this did, left the collector nothing to do on the small side,
    and the largest turn alone paid for keeping 100k inquiries' records.
    """
    call_ids = [f"toolu_{index:08d}" for index in range(size)]
    turns = max(1, total // size)
    fresh = _sink(sink)
    kept: list[Callable[[Any], object]] = []

    def work() -> None:
        for _ in range(turns):
            append = fresh()
            turn(path, call_ids, append)
            kept.append(append)  # the bound append keeps its stream or list

    return (work, kept.clear), turns * size


def _per_inquiry(runs: dict[_Side, tuple[Run, int]], repeats: int) -> dict[_Side, list[float]]:
    """Seconds per inquiry of each run, run by run; the runs take turns (see ``paired_times``)."""
    times = paired_times({side: run for side, (run, _) in runs.items()}, repeats=repeats)
    return {
        side: [seconds / runs[side][1] for seconds in measured] for side, measured in times.items()
    }


def run(sizes: Sizes) -> list[Metric]:
    """Every inquiry metric."""
    metrics: list[Metric] = []
    small, large = min(sizes.inquiries), max(sizes.inquiries)
    middle = sorted(sizes.inquiries)[len(sizes.inquiries) // 2]
    sides = {"engine": engine_turn, "baseline": baseline_turn}
    for path in FACTS:
        for sink in ("stream", "list"):
            suffix = "" if sink == "stream" else ".machine_only"
            per = _per_inquiry(
                {
                    side: _turns(turn, path=path, sink=sink, size=middle, total=middle * 10)
                    for side, turn in sides.items()
                },
                sizes.runs,
            )
            metrics.append(
                Metric.from_runs(
                    metric=f"inquiry.{path}{suffix}",
                    runs=paired(per["engine"], per["baseline"], scale=1e6),
                    unit="us/inquiry",
                    target=10 if sink == "stream" else None,
                    note=f"turns of {middle} inquiries, records to a {sink}",
                )
            )
    for path in FACTS:
        at = _per_inquiry(
            {
                size: _turns(engine_turn, path=path, sink="stream", size=size, total=large)
                for size in (small, large)
            },
            sizes.runs,
        )
        metrics.append(
            Metric.from_runs(
                metric=f"inquiry.flat.{path}.{large}_vs_{small}",
                runs=paired(at[large], at[small], scale=1e6),
                unit="us/inquiry",
                target=1.2,
                note=f"per inquiry in a turn of {large} vs turns of {small}",
            )
        )
    return metrics
