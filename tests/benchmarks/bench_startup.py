"""Benchmark 5: start-up, as a whole process.

``inquiry check`` on the smallest real conversation (a generated one when no
fixtures are installed) against ``python -c "import orjson"``: what a user
waits for, beyond starting Python and the one dependency every run needs.

Measured twice. First in the environment as it is: where it sets
``PYTHONDONTWRITEBYTECODE`` (as some containers and CI images do), every
run compiles the project's modules again, which an installed package does
not. Then with compiled bytecode kept, in a cache of its own
(``PYTHONPYCACHEPREFIX`` in a temporary directory, so the tree is left
untouched), filled by one untimed run of each command first: what a user
with ``.pyc`` files waits for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import Metric, Sizes, fixture_dirs, generated_entries, write_conversation

__all__ = ["run"]


def _best_process(command: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, check=False, stdout=subprocess.DEVNULL, env=env)
        # Exit 3: the conversation's last turn is blocked (a generated stream cut mid-turn is).
        if done.returncode not in (0, 3):
            raise subprocess.CalledProcessError(done.returncode, command)
        best = min(best, time.perf_counter() - start)
    return best


def _cached_bytecode(cache: Path) -> dict[str, str]:
    """This environment, writing and reading compiled bytecode under ``cache``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _inquiry() -> list[str]:
    script = Path(sys.executable).with_name("inquiry")
    if script.is_file():
        return [str(script)]
    command = "import sys; from coordinator.cli._main import main; sys.exit(main())"
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
        baseline_command = [sys.executable, "-c", "import orjson"]
        check_command = [*_inquiry(), "check", str(smallest)]
        baseline = _best_process(baseline_command, runs)
        value = _best_process(check_command, runs)
        cached = _cached_bytecode(Path(temp) / "pycache")
        for command in (baseline_command, check_command):
            _best_process(command, 1, cached)  # compiles and keeps the bytecode
        cached_baseline = _best_process(baseline_command, runs, cached)
        cached_value = _best_process(check_command, runs, cached)
    as_is = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "not set"
    return [
        Metric(
            metric="startup.inquiry_check",
            value=value * 1e3,
            baseline=baseline * 1e3,
            unit="ms",
            note=(
                f"inquiry check {smallest.name} vs python -c 'import orjson'"
                f" (PYTHONDONTWRITEBYTECODE {as_is})"
            ),
        ),
        Metric(
            metric="startup.inquiry_check.bytecode_cached",
            value=cached_value * 1e3,
            baseline=cached_baseline * 1e3,
            unit="ms",
            note="the same, with compiled bytecode kept from an untimed first run",
        ),
    ]
