"""Stopping ``inquiry run``: Ctrl-C, a second Ctrl-C at a prompt, SIGTERM and SIGHUP alike.

Theory of operation: a run has one :class:`Stop`. Whatever asks the run to
stop calls :meth:`Stop.request`: SIGINT (Ctrl-C while no prompt is on
screen; at a prompt the terminal reads Ctrl-C as a key, and the terminal
prompter asks for the stop on the second Ctrl-C within its window, or on a
Ctrl-C read as its prompt ended), SIGTERM and SIGHUP (a stop from outside:
``kill``, a service manager, a closed terminal), and standard output's
reader leaving. :func:`stop_signals` routes the three signals to it through
the event loop, so the request runs between two steps of the coordinator,
never inside one.

SIGQUIT (Ctrl-Backslash, ``kill -QUIT``) is no stop: it ends the run at once
(RFD 092), from wherever the process is. Nothing more is saved, and nothing
is closed: the conversation is as a crash leaves it, every record appended
so far on disk (the coordinator saves before any prompt or tool starts),
and ``inquiry run --continue-turn`` takes its turn up; the tools it left
running are stopped by the next writer. :func:`stop_signals` only sets back
what :attr:`Stop.before_quit` names first (the terminal a prompt holds in
raw mode), then lets SIGQUIT kill the process, so its parent sees it die of
that signal. At a prompt the terminal reads Ctrl-Backslash as a key, and the
terminal prompter raises SIGQUIT itself.

The play loop (:mod:`coordinator.cli._run_play`) gives the stop its action:
cancel the batch in hand. The coordinator then closes every open question
(as withdrawn: nobody answered or cancelled it) and tool call (answered as
interrupted), kills the
tools' process groups, and saves; the loop plays no further turn and saves
again. The run then exits with ``128 + N`` for signal ``N`` (SIGTERM 143,
SIGHUP 129), as a shell reports a process that signal ended, and with 3 (a
turn left incomplete) for Ctrl-C or a closed output
(:mod:`coordinator.cli._run_result`).

Rules:

1. Only the first request acts and names the stop; later ones (a second
   SIGTERM, Ctrl-C during the stop) change nothing.
2. A signal this process was started ignoring (``nohup`` ignores SIGHUP)
   stays ignored.
3. Outside the play loop the signals keep their usual meaning: before the
   run writes anything, SIGTERM ends it at once, and there is nothing to close.
4. SIGQUIT acts from its handler, at once, not through the event loop: a
   loop busy with a step must not hold it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

__all__ = ["QUIT_SIGNAL", "STOP_SIGNALS", "Stop", "stop_signals"]

#: The signals that stop a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The signal that ends a run at once (none on Windows).
QUIT_SIGNAL: signal.Signals | None = getattr(signal, "SIGQUIT", None)


class Stop:
    """A run's stop: requested at most once, by a signal or by the run itself."""

    def __init__(self) -> None:
        """Not requested yet; the action does nothing until the play loop sets it."""
        self._requested = False
        #: The signal other than SIGINT that asked for the stop, if one did.
        self.signal: signal.Signals | None = None
        #: What stopping does, given why: set by the play loop.
        self.action: Callable[[str], None] = lambda _: None
        #: What to set back before SIGQUIT ends the process (the terminal).
        self.before_quit: Callable[[], None] = lambda: None

    def requested(self) -> bool:
        """Whether the run has been asked to stop."""
        return self._requested

    def request(self, why: str = "interrupted", *, by: signal.Signals | None = None) -> None:
        """Stop the run, saying ``why``; ``by``: the signal that asked, if one did."""
        if self._requested:
            return
        self._requested = True
        if by is not None and by is not signal.SIGINT:
            self.signal = by
        self.action(why)

    def on_signal(self, number: signal.Signals) -> None:
        """A stop signal arrived."""
        why = "interrupted" if number is signal.SIGINT else f"stopped by {number.name}"
        self.request(why, by=number)

    def on_quit(self, number: int, frame: FrameType | None) -> None:
        """SIGQUIT arrived: set back :attr:`before_quit`, then die of it (rule 4)."""
        del frame
        # Whatever fails here, the process still quits: that is what was asked.
        with contextlib.suppress(Exception):
            self.before_quit()
        signal.signal(number, signal.SIG_DFL)
        signal.raise_signal(number)


@contextlib.contextmanager
def stop_signals(stop: Stop) -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGHUP request ``stop``, and SIGQUIT quits at once.

    A signal the process was started ignoring stays ignored.
    """
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    # SIGQUIT's handler before this one (None: not set from Python), once replaced.
    replaced: list[Callable[[int, FrameType | None], Any] | int | None] = []
    try:
        for number in STOP_SIGNALS:
            if signal.getsignal(number) is signal.SIG_IGN:
                continue  # nohup, say: the caller asked for it to be ignored
            try:
                loop.add_signal_handler(number, stop.on_signal, number)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                break
            installed.append(number)
        if QUIT_SIGNAL is not None and installed:  # in the main thread, as a handler must be
            previous = signal.getsignal(QUIT_SIGNAL)
            if previous is not signal.SIG_IGN:
                signal.signal(QUIT_SIGNAL, stop.on_quit)
                replaced.append(previous)
        yield
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
        if QUIT_SIGNAL is not None and replaced:
            previous = replaced[0]
            signal.signal(QUIT_SIGNAL, signal.SIG_DFL if previous is None else previous)
