"""Benchmark 5: start-up, as a whole process, installed as a wheel installs it (issue 37).

Each command is timed as a user who ran ``pip install`` runs it: the
packages in an environment's ``site-packages``, their bytecode compiled (as
pip compiles a wheel's modules), started by the ``inquiry`` script pip
writes. That environment is made for the run in a temporary directory
(``python -m venv --without-pip``, a copy of ``coordinator`` and
``machines``, ``compileall``); the dependencies are found through a
``.pth`` line naming the running environment's ``site-packages``. A line
that only names a path runs no code, where an editable install's ``.pth``
runs its finder, which imports ``pathlib`` and ``importlib.util`` into every
process of the environment, the baseline's included.

The baseline is ``python -c pass`` in the same environment, and each round
runs it and every command once, taking turns: a run's ratio is a command's
time against the baseline's in the same round. ``--version`` and ``--help``
import nothing of the engine (target 2x); ``check`` reads the smallest real
conversation (a generated one when no fixtures are installed) through the
store (target 4x). Two floors stand beside them, with no target: a program
of ``argparse`` alone printing its version (the least any ``argparse``
command's ``--version`` costs), and ``import orjson, attrs,
cattrs.preconf.orjson``, the dependencies a command that reads a
conversation cannot do without.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import attrs
from bench_support import (
    PROJECT,
    Metric,
    Sizes,
    fixture_dirs,
    generated_entries,
    paired,
    write_conversation,
)

__all__ = ["run"]

#: The script pip writes for the ``inquiry`` entry point (``pyproject.toml``).
_SCRIPT = """#!{python}
import sys
from coordinator.cli._main import main
if __name__ == "__main__":
    sys.exit(main())
"""

#: A command-line program of ``argparse`` alone, with a version to print.
_ARGPARSE_ALONE = (
    "import argparse; parser = argparse.ArgumentParser(prog='inquiry'); "
    "parser.add_argument('--version', action='version', version='%(prog)s 0'); "
    "parser.parse_args()"
)


@attrs.frozen
class _Row:
    """A command timed against the baseline, and the target on their ratio."""

    metric: str
    command: list[str]
    target: float | None
    note: str


def _installed(root: Path) -> Path:
    """An environment under ``root`` holding the project as a wheel installs it; its bin dir."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=300
    )
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    site = Path(purelib)
    for package in ("coordinator", "machines"):
        shutil.copytree(
            PROJECT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
        compileall.compile_dir(site / package, quiet=1)
    ours = sysconfig.get_paths()
    (site / "dependencies.pth").write_text(
        "".join(f"{path}\n" for path in dict.fromkeys((ours["purelib"], ours["platlib"]))),
        encoding="utf-8",
    )
    script = root / "bin" / "inquiry"
    script.write_text(_SCRIPT.format(python=python), encoding="utf-8")
    script.chmod(0o755)
    return root / "bin"


def _seconds(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, check=False, stdout=subprocess.DEVNULL, env=env, timeout=120)
    seconds = time.perf_counter() - start
    # Exit 3 or 4: the conversation's last turn did not finish (a generated stream cut mid-turn).
    if done.returncode not in (0, 3, 4):
        raise subprocess.CalledProcessError(done.returncode, command)
    return seconds


def run(sizes: Sizes) -> list[Metric]:
    """The start-up metrics."""
    with tempfile.TemporaryDirectory(prefix="inquiry-bench-startup-") as temp:
        scratch = Path(temp)
        fixtures = fixture_dirs()
        if fixtures:
            smallest = min(fixtures, key=lambda path: (path / "events.json").stat().st_size)
        else:
            smallest = write_conversation(scratch / "small", generated_entries(100))
        bin_dir = _installed(scratch / "venv")
        python, inquiry = str(bin_dir / "python"), str(bin_dir / "inquiry")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        baseline = [python, "-c", "pass"]
        rows = [
            _Row("startup.version", [inquiry, "--version"], 2, "inquiry --version"),
            _Row("startup.help", [inquiry, "--help"], 2, "inquiry --help"),
            _Row(
                "startup.check",
                [inquiry, "check", str(smallest)],
                4,
                f"inquiry check {smallest.name} (reads it through the store)",
            ),
            _Row(
                "startup.floor.argparse_version",
                [python, "-c", _ARGPARSE_ALONE, "--version"],
                None,
                "the floor of --version: a program of argparse alone printing its version",
            ),
            _Row(
                "startup.floor.dependencies",
                [python, "-c", "import orjson, attrs, cattrs.preconf.orjson"],
                None,
                "the floor of check: importing the runtime dependencies it reads with",
            ),
        ]
        for command in (baseline, *(row.command for row in rows)):
            _seconds(command, env)  # untimed: the first run reads the files from disk
        measured: dict[str, list[float]] = {"baseline": [], **{row.metric: [] for row in rows}}
        # A process lasts some tens of milliseconds: three runs a run of the others'.
        for _ in range(sizes.runs * 3):
            measured["baseline"].append(_seconds(baseline, env))
            for row in rows:
                measured[row.metric].append(_seconds(row.command, env))
    return [
        Metric.from_runs(
            metric=row.metric,
            runs=paired(measured[row.metric], measured["baseline"], scale=1e3),
            unit="ms",
            target=row.target,
            note=f"{row.note}, installed with bytecode compiled, vs python -c pass",
        )
        for row in rows
    ]
