"""Benchmark 6: side by side with the peers users would pick instead.

The peers (LangGraph, python-statemachine; pinned in ``peers/requirements.txt``)
are never the project's dependencies: they live in an environment of their
own, ``tests/benchmarks/peers/.venv`` (``INQUIRY_PEERS_VENV`` to put it
elsewhere), built here on first use with the interpreter running the
benchmarks, the pinned peers and the project's own runtime dependencies (read
from ``pyproject.toml``). It is built again when either list changes (a stamp
in the environment records what it was built from). The measuring itself is
``peers/measure.py``, run by that environment's interpreter with the checkout
on ``PYTHONPATH``, so both sides run the same code in one process, taking
turns; see that module for what each side does.

When the environment cannot be built (no network, say), the group is skipped
with the reason on standard error, and the other groups run as usual.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from bench_support import PROJECT, Metric

if TYPE_CHECKING:
    from bench_support import Sizes

__all__ = ["PEERS", "PeersUnavailableError", "environment", "run"]

PEERS = Path(__file__).resolve().parent / "peers"
REQUIREMENTS = PEERS / "requirements.txt"
MEASURE = PEERS / "measure.py"
_STAMP = "inquiry-peers.stamp"
#: Seconds a build may take (pip downloads the peers and their dependencies).
_BUILD_TIMEOUT = 900


class PeersUnavailableError(Exception):
    """The peers' environment could not be built; the message says why."""


def _venv_dir() -> Path:
    return Path(os.environ.get("INQUIRY_PEERS_VENV", PEERS / ".venv"))


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _project_dependencies() -> list[str]:
    with (PROJECT / "pyproject.toml").open("rb") as file:
        return list(tomllib.load(file)["project"]["dependencies"])


def _wanted() -> str:
    """What the environment is built from: the interpreter, the pins, the project's needs."""
    recipe = "\n".join(
        [sys.version, REQUIREMENTS.read_text(encoding="utf-8"), *_project_dependencies()]
    )
    return hashlib.sha256(recipe.encode()).hexdigest()


def _step(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_BUILD_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PeersUnavailableError(f"{what}: {error}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PeersUnavailableError(f"{what} failed: {' / '.join(said) or done.returncode}")


def environment() -> Path:
    """The interpreter of the peers' environment, built first if need be."""
    venv = _venv_dir()
    wanted = _wanted()
    stamp = venv / _STAMP
    python = _python(venv)
    try:
        if python.is_file() and stamp.read_text(encoding="utf-8") == wanted:
            return python
    except OSError:
        pass  # no stamp: not built, or not finished
    sys.stderr.write(
        f"peers: building their environment in {venv} (pinned in {REQUIREMENTS.name}); "
        "once, or when a pin changes\n"
    )
    _step([sys.executable, "-m", "venv", "--clear", str(venv)], f"making a venv in {venv}")
    _step(
        [
            str(python),
            *("-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
            *("-r", str(REQUIREMENTS), *_project_dependencies()),
        ],
        "installing the peers",
    )
    stamp.write_text(wanted, encoding="utf-8")
    return python


def run(sizes: Sizes) -> list[Metric]:
    """Every peer metric; none, with the reason on standard error, without the peers."""
    try:
        python = environment()
    except PeersUnavailableError as error:
        sys.stderr.write(f"peers: skipped: {error}\n")
        return []
    bench = Path(__file__).resolve().parent
    command = [
        str(python),
        str(MEASURE),
        *("--threads", str(sizes.peer_threads), "--questions", str(sizes.peer_questions)),
        *("--models", str(sizes.peer_models), "--runs", str(sizes.runs)),
        *(argument for turns in sizes.peer_history for argument in ("--history", str(turns))),
    ]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(PROJECT), str(bench)])}
    done = subprocess.run(command, capture_output=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peers/measure.py failed:\n{done.stderr.decode(errors='replace')}")
    return [Metric.from_json(orjson.loads(line)) for line in done.stdout.splitlines()]
