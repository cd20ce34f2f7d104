"""What the tests that start other processes share: patience, a clean end, a pid's life.

A test that starts another process waits for what it needs to have happened
(a line printed, a file written, a pid noted), never for a fixed time, and
gives up only after :data:`PATIENCE`, a bound meant to hold at a load
average of ten on two cores: there a Python program takes seconds to start,
where it takes a tenth of one on an idle machine. Whatever happens, the
process is reaped and its pipes are closed before the test ends
(:func:`reaped`): a pipe left to the collector raises an unclosed-file
warning in whichever later test happens to be running, which
``filterwarnings = error`` turns into that test's failure.

A process that a test will stop with a signal is started inside
:func:`stop_signals_at_default`: a process inherits the signals its parent
ignores, and ``inquiry run`` keeps ignoring what it was started ignoring
(as under ``nohup``, on purpose). The suite run as a background job of a
script (its shell ignores SIGINT and SIGQUIT there) or under ``nohup``
(SIGHUP) would hand that on, and the run, rightly deaf to the signal, would work on until
the test gave up: the very timeouts issue 40 saw, for SIGINT and SIGHUP
and never for SIGTERM, and the SIGQUIT tests' (Ctrl-Backslash at a
pseudo-terminal too) when the suite was so started for issue 39.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, AnyStr, TypeVar

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "CRASH_PROGRAMS",
    "PATIENCE",
    "is_running",
    "kill_group",
    "other_process_saves",
    "reaped",
    "stop_signals_at_default",
    "wait_for",
]

T = TypeVar("T")

#: The programs the crash and lock tests run as other processes.
CRASH_PROGRAMS = Path(__file__).with_name("crash_programs.py")
#: How long a test waits for another process before it fails, in seconds.
PATIENCE = 60
#: How often :func:`wait_for` looks again, in seconds.
_POLL = 0.005


def other_process_saves(directory: Path) -> str:
    """What a save from another process says: ``saved`` or ``refused <error>``."""
    done = subprocess.run(
        [sys.executable, str(CRASH_PROGRAMS), "save", str(directory)],
        capture_output=True,
        check=True,
        timeout=PATIENCE,
    )
    return done.stdout.decode().strip()


def is_running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return False
    return fields[0] not in (b"Z", b"X")


def kill_group(group: int) -> None:
    """SIGKILL what is left of process group ``group``, one a test's tool leads.

    Never the test run's own group: under pytest-xdist that is pytest's and
    every worker's, and a process that was not given a session of its own
    (a test's mistake, or a tool's) would otherwise take the whole run down
    with it; 0 and below name the caller's group, or every process, to
    ``killpg``. A group already gone, or not ours, is left alone.
    """
    if group <= 0 or group == os.getpgrp():
        pytest.fail(f"process group {group} is the test run's own (or all): not killing it")
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


@contextlib.contextmanager
def stop_signals_at_default() -> Iterator[None]:
    """While inside, SIGINT, SIGQUIT, SIGTERM and SIGHUP are not ignored: a child inherits none.

    Those this process ignores are set to their default, and ignored again
    on leaving; a handler this process has is left alone (a program started
    gets the default for it anyway).
    """
    ignored = [
        number
        for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(number) is signal.SIG_IGN
    ]
    for number in ignored:
        signal.signal(number, signal.SIG_DFL)
    try:
        yield
    finally:
        for number in ignored:
            signal.signal(number, signal.SIG_IGN)


@contextlib.contextmanager
def reaped(process: subprocess.Popen[AnyStr]) -> Iterator[subprocess.Popen[AnyStr]]:
    """``process``, killed on leaving if it still runs, then reaped, its pipes closed.

    What a test's failure or a timeout (``communicate``'s raises and kills
    nothing) would leave behind: a process running on, and pipes for the
    collector to find.
    """
    with process:  # on leaving: closes the pipes, then waits for the process
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


def wait_for(
    found: Callable[[], T | None],
    what: str,
    *,
    process: subprocess.Popen[Any] | None = None,
) -> T:
    """Look with ``found`` until it finds something (not ``None``); what it found.

    Fails the test naming ``what`` was awaited after :data:`PATIENCE`
    seconds, or as soon as ``process`` ends, whatever it did, before it was
    found.
    """
    deadline = time.monotonic() + PATIENCE
    while True:
        result = found()
        if result is not None:
            return result
        if process is not None and process.poll() is not None:
            result = found()  # it may have come just before the end
            if result is not None:
                return result
            pytest.fail(f"the process ended (status {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {PATIENCE} s")
        time.sleep(_POLL)
