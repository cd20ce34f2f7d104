"""Run the benchmarks: ``python tests/benchmarks/run.py [--json] [--quick] [--only NAME]``.

Prints a table of metric, value, baseline, ratio, target and whether the
target is met; with ``--json``, one JSON object per metric per line, with
``metric``, ``value``, ``baseline`` and ``ratio`` first. ``--quick`` runs
small sizes (a smoke run of a few seconds); ``--only`` runs one group
(``store``, ``inquiry``, ``turn``, ``history``, ``readers``, ``startup``,
``resume``, ``peers``), and ``--skip`` leaves one out; either may be given more than
once. Every baseline is measured in the same run as its metric. The
``peers`` group builds the peers' own environment on its first run (see
``bench_peers.py``), and is skipped, saying why, when it cannot.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import TYPE_CHECKING

import orjson
from bench_support import Sizes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from bench_support import Metric

__all__ = ["GROUPS", "main"]

FULL = Sizes(
    streams=(10_000, 100_000, 1_000_000),
    memory_stream=100_000,
    inquiries=(10, 1_000, 100_000),
    tool_calls=(100, 1_000),
    reader_streams=(10_000, 100_000, 1_000_000),
    repeats=5,
    startup_runs=15,
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
    repeats=1,
    startup_runs=1,
    freed_pause=0.1,
    peer_threads=3,
    peer_questions=10,
    peer_models=50,
    history_turns=(0, 99, 999),
    history_samples=3,
    history_block=2,
)


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


def _table(metrics: Sequence[Metric]) -> str:
    header = ("metric", "value", "baseline", "unit", "ratio", "target", "ok")
    rows = [header]
    for metric in metrics:
        verdict = {True: "pass", False: "FAIL", None: "-"}[metric.passed]
        bounds = [f"<= {metric.target:g}"] if metric.target is not None else []
        if metric.ceiling is not None:
            bounds.append(f"value <= {metric.ceiling:g}")
        target = ", ".join(bounds) or "-"
        rows.append(
            (
                metric.metric,
                _figure(metric.value),
                _figure(metric.baseline),
                metric.unit,
                f"{metric.ratio:.2f}",
                target,
                verdict,
            )
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen groups and print their metrics; exit 0 whatever the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="one JSON object per metric")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", action="append", choices=sorted(GROUPS), help="one group")
    parser.add_argument("--skip", action="append", choices=sorted(GROUPS), help="not this group")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    chosen = set(args.only or GROUPS) - set(args.skip or ())
    out = sys.stdout
    if not args.json:
        out.write(f"Python {platform.python_version()} on {platform.machine()}\n")
        out.flush()  # before any group's word on standard error
    metrics: list[Metric] = []
    for name, measure in GROUPS.items():
        if name not in chosen:
            continue
        group = measure(sizes)
        metrics.extend(group)
        if args.json:
            for metric in group:
                out.write(orjson.dumps(metric.as_json()).decode() + "\n")
            out.flush()
    if not args.json:
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
