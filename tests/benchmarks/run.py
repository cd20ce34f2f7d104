"""Run the benchmarks: ``python tests/benchmarks/run.py [--runs N] [--json | --markdown]``.

Every row is measured in ``--runs`` runs (5 by default), ours and its
baseline taking turns in this one process, each run's baseline measured
beside it; a row's figures are the medians of its runs, and its ratio's
range (the least and the greatest of the runs' ratios) says how far they
spread. A row with a target passes when its median ratio is within it (and
its median value within its ceiling, where it has one). Printed as a table;
with ``--json``, one JSON object per metric per line, with ``metric``,
``value``, ``baseline`` and ``ratio`` first (then ``ratio_min``,
``ratio_max``, ``runs``, and each run's pair under ``pairs``); with
``--markdown``, the README's table and ``docs/performance.md``'s, headed by
the run's date, commit, machine and load average: refreshing the two is this
one command, then a paste.

``--quick`` runs small sizes and two runs of each row: a smoke run of every
group in seconds, its figures too small to judge by. ``--only`` runs one
group (``store``, ``inquiry``, ``turn``, ``history``, ``readers``,
``startup``, ``resume``, ``peers``), and ``--skip`` leaves one out; either
may be given more than once. The ``peers`` group builds the peers' own
environment on its first run (see ``bench_peers.py``), and is skipped,
saying why, when it cannot.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
from typing import TYPE_CHECKING

import attrs
import orjson
from bench_support import PROJECT, Sizes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from bench_support import Metric

__all__ = ["GROUPS", "HEADLINES", "main"]

#: How many runs of each row a full run makes, unless ``--runs`` says otherwise.
RUNS = 5

FULL = Sizes(
    streams=(10_000, 100_000, 1_000_000),
    memory_stream=100_000,
    inquiries=(10, 1_000, 100_000),
    tool_calls=(100, 1_000),
    reader_streams=(10_000, 100_000, 1_000_000),
    runs=RUNS,
    freed_pause=5.0,
    peer_threads=100,
    peer_questions=10,
    peer_models=1_000,
)
#: A smoke run: every metric, in seconds; its figures are too small to judge by.
QUICK = Sizes(
    streams=(1_000, 4_000),
    memory_stream=1_000,
    inquiries=(10, 200),
    tool_calls=(5, 20),
    reader_streams=(500, 1_000, 2_000),
    runs=2,
    freed_pause=0.1,
    peer_threads=3,
    peer_questions=10,
    peer_models=50,
    peer_history=(3, 10),
    history_turns=(0, 99, 999),
    history_block=2,
)

#: The README's rows: each metric, and what it measures, in memory or durable,
#: by which routes. The budget (issue 34) is the first four.
HEADLINES = {
    "turn.overhead_per_question.1000": (
        "engine CPU per question, 1,000 parallel tool calls; in memory; routes: static, "
        "static, remembered"
    ),
    "peers.langgraph.per_question": (
        "a question asked and answered, against LangGraph's `interrupt()` + "
        "`Command(resume=...)`; in memory (`InMemorySaver`); route: the person (scripted)"
    ),
    "store.load_save.largest_fixture": (
        "load + save of the largest real JP conversation, every validator on, against raw "
        "`orjson` + base64; durable (fsync)"
    ),
    "store.question_save.scaling.100k_vs_1k": (
        "the save before a question is shown, 100k entries vs 1k; durable (an append, fsync)"
    ),
    "history.turn_durable.10000_vs_1": (
        "a turn at turn 10,000 vs turn 1 (four tool calls, a question each); durable, saved "
        "as it goes; route: static"
    ),
    "history.turn_in_memory.10000_vs_1": "the same turn; in memory",
    "peers.langgraph_sqlite.per_question.300": (
        "a question asked and answered on a conversation of 300 turns, against LangGraph "
        "with `SqliteSaver`, its state carrying the records; durable; route: the person "
        "(scripted)"
    ),
    "peers.langgraph_sqlite.per_question.1000": "the same, 1,000 turns",
    "startup.version": "`inquiry --version`, against `python -c pass` (installed, bytecode)",
    "startup.help": "`inquiry --help`, the same",
    "startup.check": "`inquiry check` on the smallest real conversation, the same",
    "resume.continue_vs_rerun.1000": (
        "continuing a crashed turn of 1,000 finished calls, against running them again; durable"
    ),
}


def _store(sizes: Sizes) -> list[Metric]:
    import bench_store  # noqa: PLC0415 - each group loads only what it measures

    return bench_store.run(sizes)


def _inquiry(sizes: Sizes) -> list[Metric]:
    import bench_inquiry  # noqa: PLC0415 - each group loads only what it measures

    return bench_inquiry.run(sizes)


def _turn(sizes: Sizes) -> list[Metric]:
    import bench_turn  # noqa: PLC0415 - each group loads only what it measures

    return bench_turn.run(sizes)


def _history(sizes: Sizes) -> list[Metric]:
    import bench_history  # noqa: PLC0415 - each group loads only what it measures

    return bench_history.run(sizes)


def _readers(sizes: Sizes) -> list[Metric]:
    import bench_readers  # noqa: PLC0415 - each group loads only what it measures

    return bench_readers.run(sizes)


def _resume(sizes: Sizes) -> list[Metric]:
    import bench_resume  # noqa: PLC0415 - each group loads only what it measures

    return bench_resume.run(sizes)


def _startup(sizes: Sizes) -> list[Metric]:
    import bench_startup  # noqa: PLC0415 - each group loads only what it measures

    return bench_startup.run(sizes)


def _inbox(sizes: Sizes) -> list[Metric]:
    import bench_inbox  # noqa: PLC0415 - each group loads only what it measures

    return bench_inbox.run(sizes)


def _peers(sizes: Sizes) -> list[Metric]:
    import bench_peers  # noqa: PLC0415 - each group loads only what it measures

    return bench_peers.run(sizes)


#: The benchmark groups, in the order they run.
GROUPS: dict[str, Callable[[Sizes], list[Metric]]] = {
    "store": _store,
    "inquiry": _inquiry,
    "turn": _turn,
    "history": _history,
    "readers": _readers,
    "startup": _startup,
    "resume": _resume,
    "inbox": _inbox,
    "peers": _peers,
}


def _figure(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _ratio(metric: Metric) -> str:
    least, greatest = metric.ratio_range
    return f"{metric.ratio:.2f} ({least:.2f}-{greatest:.2f})"


def _bounds(metric: Metric, *, at_most: str = "<=", times: str = "x") -> str:
    bounds = [f"{at_most} {metric.target:g}{times}"] if metric.target is not None else []
    if metric.ceiling is not None:
        bounds.append(f"value {at_most} {metric.ceiling:g} {metric.unit}")
    return ", ".join(bounds) or "-"


_VERDICT = {True: "pass", False: "FAIL", None: "-"}


def _table(metrics: Sequence[Metric]) -> str:
    header = ("metric", "value", "baseline", "unit", "ratio (range)", "runs", "target", "ok")
    rows = [header]
    rows.extend(
        (
            metric.metric,
            _figure(metric.value),
            _figure(metric.baseline),
            metric.unit,
            _ratio(metric),
            str(len(metric.ratios)),
            _bounds(metric),
            _VERDICT[metric.passed],
        )
        for metric in metrics
    )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


# ------------------------------------------------------------------ markdown


@attrs.define
class RunFacts:
    """When and where a run was made, for the tables' heading."""

    date: str
    commit: str
    machine: str
    python: str
    runs: int
    #: The one-minute load average as the run began, then after each group.
    load: list[float]

    @classmethod
    def now(cls, runs: int) -> RunFacts:
        """This machine, this checkout, the load average as the run begins."""
        done = subprocess.run(
            ["git", "-C", str(PROJECT), "describe", "--always", "--dirty=+changes"],
            capture_output=True,
            text=True,
            check=False,
        )
        return cls(
            date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            commit=done.stdout.strip() or "unknown",
            machine=f"{_processor()}, {os.cpu_count()} cores",
            python=f"Python {platform.python_version()}",
            runs=runs,
            load=[os.getloadavg()[0]],
        )

    def heading(self) -> str:
        """One line: date, commit, machine, Python, runs, and the load average the run saw."""
        return (
            f"From one run of `tests/benchmarks/run.py` ({self.runs} runs a row), "
            f"{self.date}, commit `{self.commit}`, on {self.machine}, {self.python}; "
            f"load average {self.load[0]:.1f} as it began, {max(self.load):.1f} at most "
            f"after a group, {self.load[-1]:.1f} as it ended."
        )


def _processor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:  # noqa: PTH123 - a plain read
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _verdict_mark(metric: Metric) -> str:
    return {True: " ✅", False: " ❌", None: ""}[metric.passed]


def _markdown_row(metric: Metric, what: str) -> str:
    least, greatest = metric.ratio_range
    low, high = metric.value_range
    dash, times = "\N{EN DASH}", "\N{MULTIPLICATION SIGN}"
    value = f"{_figure(metric.value)} {metric.unit} ({_figure(low)}{dash}{_figure(high)})"
    # Three figures, not two decimals: a median of 0.104 must not read as the target's 0.10.
    ratio = f"{metric.ratio:.3g}{times} ({least:.3g}{dash}{greatest:.3g})"
    target = _bounds(metric, at_most="≤", times=times)
    return f"| {what} | {value} | {ratio} | {target}{_verdict_mark(metric)} |"


def markdown(metrics: Sequence[Metric], facts: RunFacts) -> str:
    """The README's table, then ``docs/performance.md``'s (every row), under the run's facts."""
    head = (
        "| what | value: median (range) | ratio: median (range) | target |\n"
        "| --- | --- | --- | --- |"
    )
    by_name = {metric.metric: metric for metric in metrics}
    readme = [
        _markdown_row(by_name[name], what) for name, what in HEADLINES.items() if name in by_name
    ]
    every = [_markdown_row(metric, f"`{metric.metric}`: {metric.note}") for metric in metrics]
    heading = facts.heading()
    return "\n".join(
        [
            "<!-- README.md, How fast -->",
            heading,
            "",
            head,
            *readme,
            "",
            "<!-- docs/performance.md, The figures -->",
            heading,
            "",
            head,
            *every,
            "",
        ]
    )


# ---------------------------------------------------------------------- main


def _runs(text: str) -> int:
    runs = int(text)
    if runs < 1:
        raise argparse.ArgumentTypeError(f"{runs}: a row needs at least one run")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen groups and print their metrics; exit 0 whatever the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object per metric")
    output.add_argument(
        "--markdown", action="store_true", help="the README's and docs/performance.md's tables"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument(
        "--runs", type=_runs, help=f"runs of each row (default {RUNS}; 2 with --quick)"
    )
    parser.add_argument("--only", action="append", choices=sorted(GROUPS), help="one group")
    parser.add_argument("--skip", action="append", choices=sorted(GROUPS), help="not this group")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.runs is not None:
        sizes = attrs.evolve(sizes, runs=args.runs)
    chosen = set(args.only or GROUPS) - set(args.skip or ())
    facts = RunFacts.now(sizes.runs)
    out = sys.stdout
    if not (args.json or args.markdown):
        out.write(f"{facts.python} on {platform.machine()}, {sizes.runs} runs a row\n")
        out.flush()  # before any group's word on standard error
    metrics: list[Metric] = []
    for name, measure in GROUPS.items():
        if name not in chosen:
            continue
        group = measure(sizes)
        facts.load.append(os.getloadavg()[0])
        metrics.extend(group)
        if args.json:
            for metric in group:
                out.write(orjson.dumps(metric.as_json()).decode() + "\n")
            out.flush()
    if args.markdown:
        out.write(markdown(metrics, facts))
    elif not args.json:
        out.write(_table(metrics) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader stopped reading (``--json | head``): nothing is left to
        # say, and Python's flush of stdout at exit must not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # as a shell reports a process ended by SIGPIPE
