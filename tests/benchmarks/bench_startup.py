"""Benchmark 5: start-up, as a whole process.

``inquiry check`` on the smallest real conversation (a generated one when no
fixtures are installed) against ``python -c "import orjson"``: what a user
waits for, beyond starting Python and the one dependency every run needs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import Metric, Sizes, fixture_dirs, generated_entries, write_conversation

__all__ = ["run"]


def _best_process(command: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def _inquiry() -> list[str]:
    script = Path(sys.executable).with_name("inquiry")
    if script.is_file():
        return [str(script)]
    command = "import sys; from coordinator._cli import main; sys.exit(main())"
    return [sys.executable, "-c", command]


def run(sizes: Sizes) -> list[Metric]:
    """The start-up metric."""
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-") as temp:
        fixtures = fixture_dirs()
        if fixtures:
            smallest = min(fixtures, key=lambda path: (path / "events.json").stat().st_size)
        else:
            smallest = write_conversation(Path(temp) / "small", generated_entries(100))
        runs = sizes.startup_runs
        baseline = _best_process([sys.executable, "-c", "import orjson"], runs)
        value = _best_process([*_inquiry(), "check", str(smallest)], runs)
    return [
        Metric(
            metric="startup.inquiry_check",
            value=value * 1e3,
            baseline=baseline * 1e3,
            unit="ms",
            note=f"inquiry check {smallest.name} vs python -c 'import orjson'",
        )
    ]
