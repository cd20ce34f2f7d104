"""Stopping ``inquiry run``: Ctrl-C, a second Ctrl-C at a prompt, SIGTERM and SIGHUP alike.

Theory of operation: a run has one :class:`Stop`. Whatever asks the run to
stop calls :meth:`Stop.request`: SIGINT (Ctrl-C while no prompt is on
screen; at a prompt the terminal reads Ctrl-C as a key, and the terminal
prompter asks for the stop on the second Ctrl-C within its window), SIGTERM
and SIGHUP (a stop from outside: ``kill``, a service manager, a closed
terminal), and standard output's reader leaving. :func:`stop_signals`
routes the three signals to it through the event loop, so the request runs
between two steps of the coordinator, never inside one.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["STOP_SIGNALS", "Stop", "stop_signals"]

#: The signals that stop a run cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stop:
    """A run's stop: requested at most once, by a signal or by the run itself."""

    def __init__(self) -> None:
        """Not requested yet; the action does nothing until the play loop sets it."""
        self._requested = False
        #: The signal other than SIGINT that asked for the stop, if one did.
        self.signal: signal.Signals | None = None
        #: What stopping does, given why: set by the play loop.
        self.action: Callable[[str], None] = lambda _: None

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


@contextlib.contextmanager
def stop_signals(stop: Stop) -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGHUP request ``stop`` (an ignored one stays so)."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    try:
        for number in STOP_SIGNALS:
            if signal.getsignal(number) is signal.SIG_IGN:
                continue  # nohup, say: the caller asked for it to be ignored
            try:
                loop.add_signal_handler(number, stop.on_signal, number)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                break
            installed.append(number)
        yield
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
