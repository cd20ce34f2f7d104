"""`inquiry run` stopped from outside: SIGTERM and SIGHUP close, kill and save; SIGQUIT quits.

Each test starts a real `inquiry run` process whose local tool (and a child
the tool starts in its process group) would run for a minute, waits until
both are running, sends the signal, and checks what is left behind: the
stream complete, the tools' process group gone, the documented exit status.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import (
    PATIENCE,
    is_running,
    kill_group,
    reaped,
    stop_signals_at_default,
    wait_for,
)
from run_helpers import assert_paired, responses, write

from coordinator.cli._run_result import signal_status
from coordinator.cli._run_signals import Stop, stop_signals
from machines.wording import INTERRUPTED

#: A tool that starts a child in its own process group, notes both pids, and sleeps.
LONG_TOOL = """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(sys.argv[1] + ".tmp", "w") as pids:
        pids.write(f"{os.getpid()} {child.pid} {os.getpgid(0)}")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(60)
"""


def _pids(path: Path) -> list[int] | None:
    """The pids the tool wrote (itself, its child, its group), once it has."""
    return [int(word) for word in path.read_text().split()] if path.exists() else None


def _long_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    """`inquiry run` of the long tool and a turn never played: the run, pids file, conversation."""
    pids = tmp_path / "pids"
    tool = write(tmp_path / "long.py", LONG_TOOL)
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [defaults]
        run = "unattended"
        [tools.long]
        command = ["{sys.executable}", "{tool}", "{pids}"]
        timeout = 600
        [[turns]]
        message = "Run the long tool."
        [[turns.cycles]]
        calls = [{{ tool = "long" }}]
        [[turns]]
        message = "Never played."
        """,
    )
    conversation = tmp_path / "conversation"
    argv: list[str | Path] = [sys.executable, "-m", "coordinator", "run", scenario, "--no-tty"]
    argv += ["-c", conversation]
    with stop_signals_at_default():
        run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return run, pids, conversation


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_the_run_cleanly(tmp_path: Path, number: signal.Signals) -> None:
    """The call is answered, every request paired, the tool's group killed, status 128+N."""
    run, pids, conversation = _long_run(tmp_path)
    with reaped(run):
        tool_pid, child_pid, group = wait_for(lambda: _pids(pids), "the tool started", process=run)
        try:
            run.send_signal(number)
            out, err = run.communicate(timeout=PATIENCE)
            assert not is_running(tool_pid)
            assert not is_running(child_pid)
            with pytest.raises(ProcessLookupError):
                # Nothing of the group is left to signal (a zombie child, if any, is
                # the init process's to reap, and takes no signal).
                _signal_running(group)
        finally:
            # Should the stop have failed, nothing of the tool outlives the test.
            kill_group(group)
    assert run.returncode == signal_status(number) == 128 + number, err
    assert f"inquiry: stopped by {number.name}: 0 of 2 turns completed" in err
    assert f"  stopped by {number.name}: closing every open tool call and question" in out
    saved = assert_paired(conversation)
    assert [r.content for r in responses(saved).values()] == [INTERRUPTED]
    assert len(saved.stream.turns()) == 1  # the second turn was never started


def _signal_running(group: int) -> None:
    """Signal 0 to the group, failing as if it were empty when only zombies are left."""
    members = [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and _in_group(int(entry.name), group)
    ]
    if not any(is_running(pid) for pid in members):
        raise ProcessLookupError(group)
    os.killpg(group, 0)


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except ProcessLookupError:
        return False


def test_sigquit_ends_the_run_at_once_leaving_it_as_a_crash_would(tmp_path: Path) -> None:
    """SIGQUIT mid-tool: the run dies of SIGQUIT, nothing closed or saved after (RFD 092)."""
    run, pids, conversation = _long_run(tmp_path)
    with reaped(run):
        _, _, group = wait_for(lambda: _pids(pids), "the tool started", process=run)
        try:
            run.send_signal(signal.SIGQUIT)
            out, _ = run.communicate(timeout=PATIENCE)
        finally:
            # The tools of a run that quit are the next writer's to stop; here, the test's.
            kill_group(group)
    assert run.returncode == -signal.SIGQUIT
    assert "stopped by" not in out
    events = (conversation / "events.json").read_text()
    assert '"tool_call_request"' in events
    assert '"tool_call_response"' not in events  # as on disk before the signal


def test_the_play_loop_holds_sigquit_and_gives_it_back() -> None:
    """Inside stop_signals SIGQUIT is the stop's quit; after, whatever it was before."""
    stop = Stop()

    async def main() -> object:
        with stop_signals(stop):
            return signal.getsignal(signal.SIGQUIT)

    # Not started ignoring SIGQUIT (a background job of a script is), which the
    # play loop would rightly keep ignoring.
    with stop_signals_at_default():
        before = signal.getsignal(signal.SIGQUIT)
        assert asyncio.run(main()) == stop.on_quit
        assert signal.getsignal(signal.SIGQUIT) == before
