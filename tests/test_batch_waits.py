"""A batch's event queue and its places for running tools, as asyncio's own would behave."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from coordinator.driver._batch_waits import EventQueue, ToolPlaces

if TYPE_CHECKING:
    from collections.abc import Coroutine

T = TypeVar("T")


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _run(scenario: Coroutine[Any, Any, T]) -> T:
    # A place or an event that never comes fails the test instead of hanging it.
    return asyncio.run(asyncio.wait_for(scenario, timeout=30))


def test_places_go_to_the_runs_waiting_in_the_order_they_asked() -> None:
    """One place: the runs waiting for it get it one after another, first asked first."""

    async def scenario() -> list[str]:
        places = ToolPlaces(1)
        ran: list[str] = []

        async def run(name: str) -> None:
            if not places.take_now():
                await places.take()
            ran.append(name)
            await asyncio.sleep(0)
            places.give()

        assert places.take_now()
        tasks = [asyncio.create_task(run(name)) for name in "abc"]
        await _settle()
        assert ran == []
        places.give()
        await asyncio.gather(*tasks)
        assert places.take_now()  # every place given back is free again
        assert not places.take_now()
        return ran

    assert _run(scenario()) == ["a", "b", "c"]


def test_a_run_cancelled_while_it_waits_leaves_the_line_and_holds_no_place() -> None:
    """Cancelled while waiting: the next in line gets the place; none is lost or added."""

    async def scenario() -> None:
        places = ToolPlaces(1)
        assert places.take_now()
        first = asyncio.create_task(places.take())
        second = asyncio.create_task(places.take())
        await _settle()
        first.cancel()
        await _settle()
        assert first.cancelled()
        places.give()
        await second  # handed the place
        assert not places.take_now()
        places.give()
        assert places.take_now()
        assert not places.take_now()

    _run(scenario())


def test_a_place_given_back_as_the_only_run_waiting_is_cancelled_is_free_again() -> None:
    """Cancelled, and the place given back before the run saw it: to no one; it is free."""

    async def scenario() -> None:
        places = ToolPlaces(1)
        assert places.take_now()
        waiting = asyncio.create_task(places.take())
        await _settle()
        waiting.cancel()
        places.give()
        await _settle()
        assert waiting.cancelled()
        assert places.take_now()
        assert not places.take_now()

    _run(scenario())


def test_a_run_cancelled_once_handed_a_place_passes_it_on() -> None:
    """Handed a place and cancelled before it ran: the place goes to the next run waiting."""

    async def scenario() -> None:
        places = ToolPlaces(1)
        assert places.take_now()
        first = asyncio.create_task(places.take())
        second = asyncio.create_task(places.take())
        await _settle()
        places.give()  # to the first, which is cancelled before it resumes
        first.cancel()
        await _settle()
        assert first.cancelled()
        await second
        assert not places.take_now()

    _run(scenario())


def test_a_run_that_asks_while_others_wait_waits_behind_them() -> None:
    """A free place is not taken at once past runs already waiting for one."""

    async def scenario() -> None:
        places = ToolPlaces(1)
        assert places.take_now()
        waiting = asyncio.create_task(places.take())
        await _settle()
        places.give()  # handed to the waiting run, not made free
        assert not places.take_now()
        await waiting

    _run(scenario())


def test_events_come_out_in_order_and_a_reader_waits_for_the_next() -> None:
    """Put before or while the reader waits: taken in the order put."""

    async def scenario() -> list[int]:
        events: EventQueue[int] = EventQueue()
        assert events.empty()
        events.put_nowait(1)
        events.put_nowait(2)
        assert not events.empty()
        taken = [await events.get(), await events.get()]
        reader = asyncio.create_task(events.get())
        await _settle()
        assert not reader.done()
        events.put_nowait(3)
        events.put_nowait(4)
        taken.append(await reader)
        taken.append(await events.get())
        assert events.empty()
        return taken

    assert _run(scenario()) == [1, 2, 3, 4]


def test_a_reader_cancelled_while_it_waits_leaves_nothing_behind() -> None:
    """The next put after a cancelled get is kept for the next reader, and nothing raises."""

    async def scenario() -> int:
        events: EventQueue[int] = EventQueue()
        reader = asyncio.create_task(events.get())
        await _settle()
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        events.put_nowait(7)
        return await events.get()

    assert _run(scenario()) == 7
