"""The guard a local tool runs under: the tool's process group ends when its runner does.

A runner killed by SIGKILL (or a crash) stops nothing itself: without the
guard, its tools would work on, finish their side effects after the run
that asked for them had died, and a continued run would run the same call
again. So :class:`~coordinator.adapters._local_tools.LocalToolExecutor`
never starts a tool directly; it starts this file::

    python -I -S _tool_guard.py RUNNER [--poll] -- ARGV...

in a new session, so that the guard leads the tool's process group. The
guard:

1. asks the kernel for :data:`DEATH_SIGNAL` when its parent ends (Linux:
   ``prctl(PR_SET_PDEATHSIG)``), then checks that its parent is still
   ``RUNNER`` (it may have died before the request was made);
2. forks the tool, which asks for SIGKILL when the guard ends (a guard
   killed alone takes its tool with it), checks that the guard is its
   parent, and execs ``ARGV`` (searched on the ``PATH`` of its environment).
   An exec that fails writes :data:`FAILURE_MARK` and its errno on stderr,
   where the tool printed nothing, and the guard exits with
   :data:`EXEC_FAILED`: the runner, finding both, says the tool could not be
   started, as it would have (a pipe of its own for this would cost every
   running tool one more file descriptor in the runner);
3. waits for the tool and ends as it did: the same exit status, or killed by
   the same signal, so that the runner sees the tool's own ending;
4. when the runner ends (the signal comes, and its parent is no longer
   ``RUNNER``), kills its whole process group with SIGKILL: itself, the
   tool, and every process the tool left in its group.

What is out of reach (best effort, said in ``docs/guarantees.md``): a
process that left the group (``setsid``, a daemon's double fork, coreutils
``timeout``) is not the group's any longer. Where there is no
``PR_SET_PDEATHSIG`` (macOS) the guard is started with ``--poll`` and looks
at its parent every :data:`POLL` seconds instead: a tool may work on that
long after its runner died.

The parent-death signal comes when the *thread* that started the guard
ends; a runner whose event loop runs in a thread that ends while its tools
run is still alive, and the guard, seeing its parent is still ``RUNNER``,
waits on (the signal comes again when the thread it is handed to ends).

Signals: the guard ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT (sent to
the group, they reach the tool, which decides; the guard then ends as the
tool did); the tool starts with the dispositions the guard started with
(an ignored signal stays ignored, as it would without the guard), SIGPIPE
and SIGXFSZ at their defaults (Python ignores them at start).

Only the standard library: the guard starts on every run of every tool
(``-I -S``: no site, none of the environment's Python settings, nothing of
this package imported; it costs about 10 ms a run).
"""

from __future__ import annotations

import os
import signal
import sys
import time

__all__ = ["DEATH_SIGNAL", "EXEC_FAILED", "FAILURE_MARK", "POLL", "main"]

#: What the guard asks the kernel to send it when its parent ends.
DEATH_SIGNAL = signal.SIGUSR1
#: The guard's exit status when the tool could not be started.
EXEC_FAILED = 127
#: What starts the guard's stderr, then the errno in digits, when the tool could not be
#: started (a NUL first: no tool's text output begins so).
FAILURE_MARK = b"\0inquiry tool guard: exec failed, errno "
#: How often a guard without ``PR_SET_PDEATHSIG`` looks at its parent, in seconds.
POLL = 0.2

_PR_SET_PDEATHSIG = 1
#: Sent to the group, these reach the tool: the guard ignores them and ends as the tool does.
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: Ignored by Python at start; a program it starts gets them back at their defaults.
_RESTORED = (signal.SIGPIPE, signal.SIGXFSZ)


def _death_signal(number: int) -> bool:
    """Ask for ``number`` when the parent ends (Linux); whether the kernel will send it."""
    try:
        import ctypes  # noqa: PLC0415 - only where it is used: the guard starts on every tool run

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0) == 0)
    except (ImportError, OSError, AttributeError):
        return False


def _end_group(runner: int) -> None:
    """Kill the guard's whole group if its runner has ended (its parent is no longer it)."""
    if os.getppid() != runner:
        os.killpg(0, signal.SIGKILL)


def _start_tool(argv: list[str], ignored: set[signal.Signals], *, watched: bool) -> int:
    """Fork the tool (see the module's docstring, step 2); its pid."""
    guard = os.getpid()
    child = os.fork()
    if child:
        return child
    try:
        if watched:
            _death_signal(signal.SIGKILL)
        if os.getppid() != guard:
            os._exit(EXEC_FAILED)  # the guard is gone already: so is the run
        for number in (*_PASSED_ON, DEATH_SIGNAL, *_RESTORED):
            signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)
        os.execvpe(argv[0], argv, os.environ)  # noqa: S606 - the tool's argv, as configured
    except OSError as error:
        os.write(2, FAILURE_MARK + str(error.errno or 0).encode())
    finally:
        os._exit(EXEC_FAILED)


def _end_as(status: int) -> None:
    """End this process as the tool ended (``status`` from ``waitpid``)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            import resource  # noqa: PLC0415 - only when a tool was killed by a signal

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the tool's core, not the guard's
        except (ImportError, OSError, ValueError):
            pass
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # a signal that does not end a process by default
    os._exit(os.waitstatus_to_exitcode(status))


def main(arguments: list[str]) -> None:
    """Guard the tool ``arguments`` name (see the module's docstring); never returns."""
    runner, rest = int(arguments[0]), arguments[1:]
    poll = rest[0] == "--poll"
    argv = rest[2:] if poll else rest[1:]
    ignored = {number for number in _PASSED_ON if signal.getsignal(number) == signal.SIG_IGN}
    signal.signal(DEATH_SIGNAL, lambda *_: _end_group(runner))
    watched = not poll and _death_signal(DEATH_SIGNAL)
    _end_group(runner)  # ended before the kernel was asked to say so
    for number in _PASSED_ON:
        signal.signal(number, signal.SIG_IGN)
    child = _start_tool(argv, ignored, watched=watched)
    while True:
        if watched:
            _, status = os.waitpid(child, 0)  # the death signal's handler runs meanwhile
            _end_as(status)
        found, status = os.waitpid(child, os.WNOHANG)
        if found:
            _end_as(status)
        _end_group(runner)
        time.sleep(POLL)


if __name__ == "__main__":
    main(sys.argv[1:])
