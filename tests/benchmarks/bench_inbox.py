"""The web inbox: listing 1,000 waiting conversations, and how fast a live question arrives.

As many conversations as the run's largest batch of tool calls (1,000 in a
full run, a handful with ``--quick``); each figure the median of its runs.

- ``inbox.list_1000``: the server's time to list 1,000 conversations with a
  parked question each (read, found waiting, rendered as the page), the
  first time (nothing known yet); its baseline, loading the same 1,000
  conversations and nothing more. Ceiling: one second.
- ``inbox.list_1000_again``: the same listing when nothing changed since
  (each ``events.json`` is looked at, not read); the same baseline.
- ``inbox.live_question``: from a run's question being offered on its
  live channel to the inbox holding it, over the run's real Unix socket;
  its baseline, one line there and back over a socket pair. Ceiling: 100 ms.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import Metric, Sizes

from coordinator import load_conversation
from coordinator.adapters.inbox import Inbox, LocalSource
from coordinator.adapters.inbox._app import _environment
from coordinator.adapters.live import LiveChannel, LiveRuns
from machines import Question

PROJECT = Path(__file__).resolve().parents[2]
#: Runs of the listing (each over every conversation), and of the live question.
_RUNS = 3
_LIVE_RUNS = 5


def _parked_once(root: Path) -> Path:
    """One conversation a real run parked (the park example's), to copy."""
    first = root / "c0000"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "run",
            str(PROJECT / "examples" / "park" / "scenario.toml"),
            "--no-interactive",
            "--conversation",
            str(first),
        ],
        check=False,
        capture_output=True,
    )
    return first


def _render(inbox: Inbox) -> str:
    return (
        _environment()
        .get_template("inbox.html")
        .render(inbox=inbox, csrf="0" * 64, root="root", message=None, refused=False)
    )


async def _live_latency(directory: Path, repeats: int) -> float:
    times = []
    runs = LiveRuns(directory)
    watching = asyncio.get_running_loop().create_task(runs.watch())
    async with LiveChannel.open(directory=directory, title="bench") as channel:
        await runs.changed(0, timeout=5.0)  # connected: the run said who it is
        for index in range(repeats):
            seen = runs.version
            key = f"q{index}"
            started = time.perf_counter()
            channel.offer(key, "call", "tool", Question.text_input("q", "Which?"))
            while not any(q.asked.key == key for q in runs.questions()):
                seen = await runs.changed(seen, timeout=1.0)
            times.append(time.perf_counter() - started)
    watching.cancel()
    return statistics.median(times)


def _round_trip(repeats: int) -> float:
    times = []
    left, right = socket.socketpair()
    with left, right:
        for _ in range(repeats):
            started = time.perf_counter()
            left.sendall(b'{"asked": {}}\n')
            right.recv(64)
            right.sendall(b"\n")
            left.recv(64)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(sizes: Sizes) -> list[Metric]:
    """Every inbox metric."""
    count = max(sizes.tool_calls)
    with tempfile.TemporaryDirectory(prefix="inq-bench-") as temp:
        root = Path(temp) / "root"
        root.mkdir()
        first = _parked_once(root)
        for index in range(1, count):
            shutil.copytree(first, root / f"c{index:04d}", symlinks=True)
        loads, cold, warm = [], [], []
        for _ in range(_RUNS):
            started = time.perf_counter()
            for directory in sorted(root.iterdir()):
                load_conversation(directory).close()
            loads.append(time.perf_counter() - started)
            source = LocalSource(root)  # nothing known yet
            started = time.perf_counter()
            page = _render(asyncio.run(source.waiting()))
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            _render(asyncio.run(source.waiting()))
            warm.append(time.perf_counter() - started)
            assert page.count("<section") >= count, "every conversation listed"
        live = Path(tempfile.mkdtemp(prefix="inq-bl-"))
        try:
            latency = asyncio.run(_live_latency(live, _LIVE_RUNS))
        finally:
            shutil.rmtree(live, ignore_errors=True)
    floor = _round_trip(100)
    loaded = statistics.median(loads)
    return [
        Metric(
            metric=f"inbox.list_{count}",
            value=statistics.median(cold),
            baseline=loaded,
            unit="s",
            ceiling=1.0,
            note=f"list and render {count} conversations with parked questions, first time",
        ),
        Metric(
            metric=f"inbox.list_{count}_again",
            value=statistics.median(warm),
            baseline=loaded,
            unit="s",
            ceiling=1.0,
            note="the same listing when nothing changed (each events.json looked at, not read)",
        ),
        Metric(
            metric="inbox.live_question",
            value=latency * 1e3,
            baseline=floor * 1e3,
            unit="ms",
            ceiling=100.0,
            note="a question offered on a run's live channel, until the inbox holds it",
        ),
    ]
