"""Signals during ``inquiry run``: a stop from outside ends the run as cleanly as Ctrl-C.

Theory of operation: while the play loop runs, SIGINT (Ctrl-C while no
prompt is on screen; at a prompt the terminal reads Ctrl-C as a key) calls
the run's stop handler through the event loop, so the handler runs between
two steps of the coordinator, never inside one. The stop cancels the batch
in hand: the coordinator closes every open question and tool call (killing
the tools' process groups) and saves, and the loop plays no further turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["on_interrupt"]


@contextlib.contextmanager
def on_interrupt(handler: Callable[[], None]) -> Iterator[None]:
    """Call ``handler`` on SIGINT (Ctrl-C while no prompt is on screen) while inside."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
