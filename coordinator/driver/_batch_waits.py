"""What a batch of tool calls waits on: its events, and places for running tools.

Theory of operation: the driver runs each tool, prompt and request to the
model as an asyncio task of its own; the tasks report to the driver through
one queue of events, which the driver alone reads, and tools take a place
before they run, so that no more run at once than the batch allows. Both
are asyncio's own ideas (``asyncio.Queue``, ``asyncio.Semaphore``), cut to
what a batch needs: every run of a tool passes through both, and in a turn
of a thousand tool calls asyncio's general versions were a tenth of what
the driver spent on a question (some fifteen Python calls and three
coroutines a run, for counting unfinished items, bounding the queue and
waking its putters, and acquiring a free place through ``async with``).

Rules:

1. Events are taken in the order they were put; a reader that finds none
   waits on one future, which the next put wakes.
2. Places are taken in the order asked: a place given back goes to the
   first run still waiting, or back to the free ones, so none is free while
   a run waits, and a free place is taken at once. A waiting run that is
   cancelled leaves the line, and passes on a place it was handed meanwhile.
3. Both belong to one event loop, the batch's: they are made per batch.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["EventQueue", "ToolPlaces"]

T = TypeVar("T")


class EventQueue(Generic[T]):
    """``asyncio.Queue``'s ``put_nowait``, ``get`` and ``empty``, for one reader and no bound."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        """Start empty."""
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        """Add ``item``, waking the reader if it waits."""
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():  # done: woken already, or cancelled
            waiter.set_result(None)

    def empty(self) -> bool:
        """Whether no item waits."""
        return not self._items

    async def get(self) -> T:
        """The next item, once there is one."""
        items = self._items
        while not items:
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return items.popleft()


class ToolPlaces:
    """Places for running tools, given as an ``asyncio.Semaphore`` gives them.

    A run takes a free place with :meth:`take_now`, a plain call, or else
    waits for one with :meth:`take`; it gives it back with :meth:`give`
    when it ends, whatever happened.
    """

    __slots__ = ("_free", "_waiting")

    def __init__(self, places: int) -> None:
        """``places`` free places."""
        self._free = places
        self._waiting: deque[asyncio.Future[None]] = deque()

    def take_now(self) -> bool:
        """Take a place if one is free; whether it was taken.

        None is free while a run waits for one (:meth:`give` hands a place to
        the first run waiting), so a run that asks now takes no place before them.
        """
        if self._free:
            self._free -= 1
            return True
        return False

    async def take(self) -> None:
        """Wait for a place, after the runs that asked before."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a place as it was cancelled: the next run has it
            elif waiter in self._waiting:  # not yet passed over by give()
                self._waiting.remove(waiter)
            raise

    def give(self) -> None:
        """Give a place back: to the first run still waiting, or to the free ones."""
        waiting = self._waiting
        while waiting:
            waiter = waiting.popleft()
            if not waiter.done():  # done: cancelled while it waited
                waiter.set_result(None)
                return
        self._free += 1
