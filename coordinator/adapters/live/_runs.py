"""The inbox's end of the live channel: every live run of the user, and their questions.

Theory of operation: :class:`LiveRuns` looks in the user's live directory
(:mod:`._spool`) every :data:`LOOK_EVERY` seconds for runs it is not
connected to yet, and connects to each: the run says who it is and puts
its waiting questions, then each change, on the connection; a run that
ends closes it, and its questions go with it. Whoever shows them waits
with :meth:`LiveRuns.changed` for the next change (the count of changes
so far goes up by one for each), so a new question reaches the page as
soon as the run has said it. :meth:`LiveRuns.answer` sends an answer to
the run that asked and returns its word: taken, or refused and why.

A socket that refuses the connection is a run that ended without
removing it: it is passed over (looked at again later), never removed
here. A run that says what is not the protocol is dropped, said once in
the log.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING

import attrs

from coordinator.adapters.live._messages import (
    LINE_LIMIT,
    Answer,
    Asked,
    Gone,
    MessageError,
    Reply,
    RunHello,
    decode,
    encode,
)
from coordinator.adapters.live._spool import run_sockets

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue

__all__ = ["LOOK_EVERY", "LiveQuestion", "LiveRuns", "NoLongerAskedError"]

_LOG = logging.getLogger("coordinator")

#: How often the directory is looked at for runs that started since (seconds).
LOOK_EVERY = 0.2
#: How long a socket that refused a connection is left alone (seconds).
_RETRY_AFTER = 2.0
#: How long a run has to take or refuse an answer (seconds).
_REPLY_WITHIN = 10.0


class NoLongerAskedError(Exception):
    """The run that asked is gone, or no longer asks the question."""


@attrs.frozen(kw_only=True)
class LiveQuestion:
    """A question a live run waits on: the run (its socket's name, pid, conversation) and it."""

    run: str
    pid: int
    conversation: str | None
    title: str | None
    asked: Asked


@attrs.define
class _Run:
    name: str
    writer: asyncio.StreamWriter
    hello: RunHello | None = None
    questions: dict[str, Asked] = attrs.Factory(dict)
    replies: dict[int, asyncio.Future[Reply]] = attrs.Factory(dict)


class LiveRuns:
    """Connections to the user's live runs, kept while :meth:`watch` runs."""

    def __init__(self, directory: Path) -> None:
        """Watch the runs whose sockets are in ``directory``."""
        self.directory = directory
        self._runs: dict[str, _Run] = {}
        self._connecting: set[str] = set()
        self._version = 0
        self._changed = asyncio.Event()
        self._asks = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def version(self) -> int:
        """How many changes were seen so far."""
        return self._version

    def questions(self) -> list[LiveQuestion]:
        """Every question the live runs wait on now."""
        return [
            LiveQuestion(
                run=run.name,
                pid=run.hello.pid,
                conversation=run.hello.conversation,
                title=run.hello.title,
                asked=asked,
            )
            for run in self._runs.values()
            if run.hello is not None
            for asked in run.questions.values()
        ]

    async def changed(self, seen: int, *, timeout: float) -> int:  # noqa: ASYNC109 - a bounded wait
        """Wait until the count of changes passes ``seen`` (at most ``timeout`` s); the count."""
        while self._version <= seen:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout)
            except TimeoutError:
                break
        return self._version

    def _bump(self) -> None:
        self._version += 1
        self._changed.set()

    async def watch(self) -> None:
        """Look for runs and keep their connections, until cancelled."""
        try:
            while True:
                self.look()
                await asyncio.sleep(LOOK_EVERY)
        finally:
            for task in list(self._tasks):
                task.cancel()
            for run in self._runs.values():
                run.writer.close()

    def look(self) -> None:
        """Connect to the runs whose sockets appeared since the last look."""
        for path in run_sockets(self.directory):
            name = path.name
            if name in self._runs or name in self._connecting:
                continue
            self._connecting.add(name)
            task = asyncio.get_running_loop().create_task(self._follow(name, path))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _follow(self, name: str, path: Path) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=LINE_LIMIT)
        except OSError:
            # A run gone without removing its socket: looked at again, but not at every look.
            await asyncio.sleep(_RETRY_AFTER)
            self._connecting.discard(name)
            return
        run = _Run(name=name, writer=writer)
        self._runs[name] = run
        self._connecting.discard(name)
        try:
            while line := await reader.readline():
                self._take(run, decode(line))
        except (MessageError, ValueError, ConnectionError) as error:
            _LOG.warning("live inbox: run %s was dropped: %s", name, error)
        finally:
            writer.close()
            del self._runs[name]
            for waiting in run.replies.values():
                if not waiting.done():
                    waiting.set_exception(NoLongerAskedError("the run has ended"))
            self._bump()

    def _take(self, run: _Run, message: object) -> None:
        if isinstance(message, RunHello):
            run.hello = message
        elif run.hello is None:
            raise MessageError("a run must say who it is first")
        elif isinstance(message, Asked):
            run.questions[message.key] = message
        elif isinstance(message, Gone):
            run.questions.pop(message.key, None)
        elif isinstance(message, Reply):
            waiting = run.replies.pop(message.ask, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(message)
            return
        else:
            raise MessageError("a run sends no answers")
        self._bump()

    async def answer(self, run_name: str, key: str, value: JsonValue) -> Reply:
        """Send ``value`` to run ``run_name`` for question ``key``; the run's reply."""
        run = self._runs.get(run_name)
        if run is None or key not in run.questions:
            raise NoLongerAskedError("the run no longer asks it: it was answered, or has ended")
        ask = next(self._asks)
        waiting: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        run.replies[ask] = waiting
        run.writer.write(encode(Answer(ask=ask, key=key, value=value)))
        try:
            await run.writer.drain()
            return await asyncio.wait_for(waiting, _REPLY_WITHIN)
        except (ConnectionError, TimeoutError):
            raise NoLongerAskedError("the run did not reply: it may have ended") from None
        finally:
            run.replies.pop(ask, None)
