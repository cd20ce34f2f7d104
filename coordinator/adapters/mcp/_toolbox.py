"""MCP tools as executors: every question a server asks is an inquiry of the calling tool call.

Theory of operation: the driver runs a tool with the answers gathered so far
and expects one question (:class:`~coordinator.driver.NeedsInput`) or the
result (:class:`~coordinator.driver.Completed`); it asks the question (the
cache, a static answer, the person, the model: RFD 082, unchanged) and runs
the tool again with the answer. An MCP call is one conversation with the
server that outlives each run, so :class:`McpToolbox` keeps each open call
(by tool-call id) between runs:

- **2026-07-28 (MRTR).** The call returns ``input_required``: its
  ``inputRequests`` are filled one question at a time
  (:mod:`coordinator.adapters.mcp._forms`), the run returning after each
  question; once every request of the round has its reply, the call is sent
  again with the same arguments, the replies, and the server's
  ``requestState`` byte for byte (none when it sent none). Until the result.
- **Legacy (2025-11-25 and before).** The call stays in flight on a
  connection of its own, and each ``elicitation/create`` the server sends
  meanwhile waits, unanswered, while its questions are asked. A tool that
  asks this way on a 2026-07-28 connection (the SDK's ``ctx.elicit``) is
  refused there (no back-channel); its call is made again, from the start,
  on a legacy connection, and so is every later call of that tool.

The source of each question is the calling tool (``InquirySource.tool``),
decided here: nothing a server sends can change it. Prompts are one at a
time across parallel calls and servers because each question goes through
the driver, which shows one at a time, even when the SDK hands several
requests over at once.

A call the driver closes without running it again (the person cancelled a
question, an interrupt, the model failed to answer) is *abandoned*: its
open request is answered ``cancel`` (:meth:`McpToolbox.observe`, from the
driver's ``on_step``; at the latest :meth:`McpToolbox.aclose`), the
result discarded. A call this process never saw, run with answers (a turn
continued after a crash), is made again from its first round, and each
answer it already has (by question id) answers the question it was given
for the first time that question comes up: ``requestState`` does not
survive the server process it was minted by, nor ours. The same happens
when a server refuses an echoed ``requestState`` (it expired: the SDK's
``MCPServer`` gives one ten minutes).

Rules:

1. One executor per tool; calls keyed by tool-call id. A run with no
   answers is always a new call.
2. Whatever ends a call (result, error, abandonment, closing), its open
   request gets a reply and its legacy connection is released or closed.
3. An answer to a secret question is revealed only in the reply sent to the
   server, and never logged.
4. A server's header values (a token) are secrets of the run: whatever the
   server sends back (a result, an error, a question) has each masked,
   ``<secret>``, before the driver sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from typing import TYPE_CHECKING, Any, Self

import attrs

from coordinator.adapters.mcp._exchange import (
    CANCEL_REPLY,
    ErrorKind,
    InputRequired,
    Reply,
    Request,
    ServerError,
    Unaskable,
)
from coordinator.adapters.mcp._forms import UrlFill, fill_for, legacy_key
from coordinator.driver import Completed, NeedsInput
from machines import InquirySource

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterable, Mapping

    from coordinator.adapters.mcp._forms import Fill
    from coordinator.adapters.mcp._servers import McpServer
    from coordinator.adapters.mcp._session import Connection
    from coordinator.driver import (
        ExecutorResult,
        PermissionAnswer,
        Prompter,
        QuestionAnswer,
        StepFacts,
    )
    from machines import ShowPermissionPrompt, ShowQuestion, ToolAnswer, ToolCallRequest

__all__ = ["McpToolExecutor", "McpToolbox"]

_LOG = logging.getLogger("coordinator.mcp")

#: What a header's value reads as wherever a server echoes it (as the driver masks a secret).
_MASK = "<secret>"
#: How often one call is made again from its first round because the server
#: refused its ``requestState``, before the call fails.
_RESTARTS = 3
#: Rounds that ask nothing (``requestState`` only) are sent again after a
#: pause growing from the first to the second, until the server's timeout.
_POLL_FIRST, _POLL_MOST = 0.05, 0.25


class _Server:
    """One server's connections: one shared (2026-07-28), and legacy ones, one per call."""

    def __init__(self, config: McpServer) -> None:
        self.config = config
        self.shared: Connection | None = None
        self.idle: list[Connection] = []
        self.connections: set[Connection] = set()
        #: The server speaks only the legacy era.
        self.legacy_only = False
        #: Its tools that ask through ``elicitation/create`` (refused on a modern connection).
        self.legacy_tools: set[str] = set()
        self.offered: dict[str, str] | None = None
        self.lock = asyncio.Lock()
        #: Its header values (and the variables in them), masked in what it sends back.
        self.secrets = config.header_secrets(os.environ)

    def masked(self, text: str) -> str:
        """``text`` with each of the server's header values in it masked."""
        for secret in self.secrets:
            text = text.replace(secret, _MASK)
        return text

    def masked_json(self, value: Any) -> Any:
        """A JSON value with every string in it (keys too) masked as :meth:`masked` does."""
        if isinstance(value, str):
            return self.masked(value)
        if isinstance(value, list):
            return [self.masked_json(item) for item in value]
        if isinstance(value, dict):
            return {self.masked(key): self.masked_json(item) for key, item in value.items()}
        return value

    @property
    def named(self) -> str:
        return f"MCP server '{self.config.name}'"

    async def _open(self, *, legacy: bool) -> Connection:
        # The SDK is imported when a server is first reached, never before.
        from coordinator.adapters.mcp._session import Connection  # noqa: PLC0415

        connection = Connection(self.config, legacy=legacy)
        self.connections.add(connection)
        try:
            await connection.open()
            if self.offered is None:
                self.offered = await connection.tools()
        except BaseException:
            await self.drop(connection)
            raise
        return connection

    async def modern(self) -> Connection | None:
        """The shared 2026-07-28 connection; ``None`` when the server speaks only legacy."""
        async with self.lock:
            if self.legacy_only:
                return None
            if self.shared is None or not self.shared.alive:
                if self.shared is not None:
                    await self.drop(self.shared)
                connection = await self._open(legacy=False)
                if connection.legacy:
                    self.legacy_only = True
                    self.idle.append(connection)
                    return None
                self.shared = connection
            return self.shared

    async def legacy(self) -> Connection:
        """A legacy connection for one call alone: its questions are that call's."""
        while self.idle:
            connection = self.idle.pop()
            if connection.alive:
                return connection
            await self.drop(connection)
        return await self._open(legacy=True)

    async def release(self, connection: Connection, *, reusable: bool) -> None:
        """A legacy call is over: keep its connection for the next, or close it."""
        connection.elicit = None
        if reusable and connection.alive:
            self.idle.append(connection)
        else:
            await self.drop(connection)

    async def drop(self, connection: Connection) -> None:
        self.connections.discard(connection)
        if connection in self.idle:
            self.idle.remove(connection)
        await connection.close()

    def not_offered(self, tool: str) -> ServerError | None:
        offered = self.offered or {}
        if tool in offered:
            return None
        names = ", ".join(sorted(offered)) or "none"
        return ServerError(f"{self.named} offers no tool '{tool}' (it offers: {names})")

    async def close(self) -> None:
        connections = list(self.connections)
        self.connections.clear()
        self.idle.clear()
        self.shared = None
        await asyncio.gather(*(connection.close() for connection in connections))


@attrs.frozen
class _Asked:
    """A legacy ``elicitation/create``, waiting for its reply."""

    request: Request
    reply: asyncio.Future[Reply | str]


class _Call:
    """One tool call's conversation with its server, kept between the driver's runs."""

    def __init__(
        self,
        *,
        request: ToolCallRequest,
        server: _Server,
        tool: str,
        carried: Mapping[str, ToolAnswer],
    ) -> None:
        self.id = request.id
        self.name = request.name
        self.arguments = dict(request.arguments)
        self.server = server
        self.tool = tool
        #: Answers this call had before it asked anything here (a continued turn):
        #: each answers its question the first time that question comes up.
        self.carried: dict[str, ToolAnswer] = dict(carried)
        self.fill: Fill | None = None
        #: The question id the driver was last given; ``None`` while running.
        self.awaiting: str | None = None
        self.legacy = server.legacy_only or tool in server.legacy_tools
        self.abandoned = False
        # 2026-07-28
        self.round: deque[Request | Unaskable] = deque()
        self.responses: dict[str, Reply] = {}
        self.state: str | None = None
        self.restarts = 0
        # legacy
        self.connection: Connection | None = None
        self.task: asyncio.Task[Completed | InputRequired] | None = None
        self.inbox: asyncio.Queue[_Asked] = asyncio.Queue()
        self.pending: asyncio.Future[Reply | str] | None = None

    def __repr__(self) -> str:
        """Which call of which tool; never an answer."""
        return f"_Call(id={self.id!r}, tool={self.tool!r}, awaiting={self.awaiting!r})"

    # ----------------------------------------------------------- advancing

    async def advance(self, answers: Mapping[str, ToolAnswer]) -> ExecutorResult:
        """Take the answer to the question last asked; go on to the next question or the result."""
        if self.fill is not None and self.awaiting is not None and self.awaiting in answers:
            self.fill.take(answers[self.awaiting])
        self.awaiting = None
        while True:
            if self.fill is not None:
                question = self.fill.question()
                if question is not None:
                    if question.id in self.carried:
                        self.fill.take(self.carried.pop(question.id))
                        continue
                    self.awaiting = question.id
                    return NeedsInput(
                        question=question,
                        source=InquirySource.tool(self.name),
                        accumulated_answers=dict(answers),
                    )
                self._deliver(self.fill.reply())
                self.fill = None
            step = await (self._next_legacy() if self.legacy else self._next_modern(answers))
            if isinstance(step, Completed):
                return step
            self.fill = self._fill(step)

    def _fill(self, step: Request | Unaskable) -> Fill:
        step = self._masked(step)
        if isinstance(step, Unaskable):
            why = step.why
        else:
            config = self.server.config
            fill = fill_for(
                step, server=config.name, tool=self.name, secret_fields=config.secret_fields
            )
            if not isinstance(fill, str):
                return fill
            why = f"a request that cannot be answered: {fill}"
        if self.pending is not None and not self.pending.done():
            self.pending.set_result(why)  # refused at the protocol level
        raise ServerError(
            f"{self.server.named} asked, through tool '{self.tool}', for input this client "
            f"cannot give: {why}"
        )

    def _masked(self, step: Request | Unaskable) -> Request | Unaskable:
        """What the server asked, its header values masked (never the link: the person's)."""
        server = self.server
        if not server.secrets:
            return step
        if isinstance(step, Unaskable):
            return attrs.evolve(step, why=server.masked(step.why))
        schema = server.masked_json(step.schema) if step.schema is not None else None
        return attrs.evolve(step, message=server.masked(step.message), schema=schema)

    def _deliver(self, reply: Reply) -> None:
        if self.legacy:
            if self.pending is not None and not self.pending.done():
                self.pending.set_result(reply)
            self.pending = None
        elif self.fill is not None:
            self.responses[self.fill.key] = reply

    async def _next_modern(
        self, answers: Mapping[str, ToolAnswer]
    ) -> Request | Unaskable | Completed:
        """The next request of this round, or the next round's first, or the result."""
        if self.round:
            return self.round.popleft()
        connection = await self.server.modern()
        if connection is None:
            self.legacy = True
            return await self._next_legacy()
        if (problem := self.server.not_offered(self.tool)) is not None:
            raise problem
        outcome = await self._send(connection, answers)
        if outcome is None:  # the tool asks the legacy way: its call is made again so
            return await self._next_legacy()
        if isinstance(outcome, Completed):
            return outcome
        self.round = deque(outcome.requests)
        return self.round.popleft()

    async def _send(
        self, connection: Connection, answers: Mapping[str, ToolAnswer]
    ) -> Completed | InputRequired | None:
        """Send the call (with this round's replies) until it ends or asks; ``None``: go legacy.

        A round asking nothing (``requestState`` only) is sent again after a
        growing pause, until the server's timeout.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.server.config.timeout
        pause = _POLL_FIRST
        while True:
            try:
                outcome = await connection.call(
                    self.tool, self.arguments, responses=self.responses, state=self.state
                )
            except ServerError as error:
                if not self._start_over(error, answers):
                    raise
                if self.legacy:
                    return None
                continue
            self.responses = {}
            if isinstance(outcome, Completed):
                return outcome
            self.state = outcome.state
            if outcome.requests:
                return outcome
            if loop.time() > deadline:
                raise ServerError(
                    f"{self.server.named} kept answering tool '{self.tool}' with nothing to ask "
                    f"and no result for {self.server.config.timeout:g} s",
                    ErrorKind.TIMEOUT,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _POLL_MOST)

    def _start_over(self, error: ServerError, answers: Mapping[str, ToolAnswer]) -> bool:
        """Whether the call is made again from its first round; the answers so far carried."""
        if error.kind is ErrorKind.NEEDS_LEGACY:
            self.server.legacy_tools.add(self.tool)
            self.legacy = True
        elif error.kind is ErrorKind.INVALID_STATE and self.state is not None:
            self.restarts += 1
            if self.restarts > _RESTARTS:
                return False
        else:
            return False
        self.state, self.responses = None, {}
        self.carried = dict(answers)
        return True

    async def _next_legacy(self) -> Request | Completed:
        """The next ``elicitation/create`` of the call in flight, or its result."""
        if self.task is None:
            connection = await self.server.legacy()
            if (problem := self.server.not_offered(self.tool)) is not None:
                await self.server.release(connection, reusable=True)
                raise problem
            self.connection = connection
            connection.elicit = self._on_elicit
            self.task = asyncio.get_running_loop().create_task(
                connection.call(self.tool, self.arguments)
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.server.config.timeout
        while True:
            while not self.inbox.empty():
                asked = self.inbox.get_nowait()
                if not asked.reply.done():  # done: the SDK gave up on it (the server went away)
                    return self._asked(asked)
            if self.task.done():
                return await self._finished()
            if (left := deadline - loop.time()) <= 0:
                noted = self.connection.stdout.noted() if self.connection is not None else ""
                raise ServerError(
                    f"{self.server.named} did not answer within {self.server.config.timeout:g} s "
                    f"while running tool '{self.tool}'{noted}",
                    ErrorKind.TIMEOUT,
                )
            getter = loop.create_task(self.inbox.get())
            try:
                await asyncio.wait(
                    {getter, self.task}, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled() and not getter.result().reply.done():
                return self._asked(getter.result())

    def _asked(self, asked: _Asked) -> Request:
        self.pending = asked.reply
        return asked.request

    async def _finished(self) -> Completed:
        task, connection = self.task, self.connection
        if task is None or connection is None:  # pragma: no cover - only after the call began
            raise AssertionError("a legacy call finished before it began")
        self.task = None
        self.connection = None
        try:
            outcome = task.result()
        except BaseException:
            await self.server.release(connection, reusable=False)
            raise
        await self.server.release(connection, reusable=True)
        if isinstance(outcome, InputRequired):  # pragma: no cover - the SDK refuses it first
            raise ServerError(f"{self.server.named} sent input_required on a legacy connection")
        return outcome

    async def _on_elicit(self, request: Request) -> Reply | str:
        """A legacy ``elicitation/create`` of this call: wait for its reply."""
        if self.abandoned:
            return CANCEL_REPLY
        keyed = attrs.evolve(request, key=legacy_key(request))
        reply: asyncio.Future[Reply | str] = asyncio.get_running_loop().create_future()
        self.inbox.put_nowait(_Asked(keyed, reply))
        return await reply

    # ----------------------------------------------------------- abandoning

    def abandon(self) -> Coroutine[Any, Any, None] | None:
        """Tell the server ``cancel`` for what is open; what is left to do, if anything."""
        if self.abandoned:
            return None
        self.abandoned = True
        if self.legacy:
            waiting = [self.pending] if self.pending is not None else []
            while not self.inbox.empty():
                waiting.append(self.inbox.get_nowait().reply)
            for reply in waiting:
                if not reply.done():
                    reply.set_result(CANCEL_REPLY)
            self.pending = None
            return self._wind_down() if self.task is not None else None
        if self.awaiting is None or self.fill is None:
            return None
        cancelled = {self.fill.key: CANCEL_REPLY} | {
            request.key: CANCEL_REPLY for request in self.round
        }
        return self._cancel_round({**self.responses, **cancelled})

    async def _wind_down(self) -> None:
        """Let the legacy call end (each further request is cancelled); close its connection."""
        task, connection = self.task, self.connection
        self.task = self.connection = None
        if task is None or connection is None:  # pragma: no cover - checked by abandon
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self.server.config.timeout)
        except BaseException:  # noqa: BLE001 - its result is discarded, whatever it is
            task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await self.server.release(connection, reusable=False)

    async def _cancel_round(self, responses: Mapping[str, Reply]) -> None:
        """Send the round once more, ``cancel`` for each request still open; ignore the result."""
        connection = self.server.shared
        if connection is None or not connection.alive:
            return
        try:
            await connection.call(self.tool, self.arguments, responses=responses, state=self.state)
        except ServerError as error:
            _LOG.debug("cancelling call %s: %s", self.id, error.kind.value)


class McpToolExecutor:
    """The executor of one tool of one MCP server (made by :meth:`McpToolbox.executor`)."""

    def __init__(self, toolbox: McpToolbox, server: str, tool: str) -> None:
        """Run ``tool`` of ``server`` through ``toolbox``."""
        self._toolbox = toolbox
        self.server = server
        self.tool = tool

    def __repr__(self) -> str:
        """The server and the tool."""
        return f"McpToolExecutor(server={self.server!r}, tool={self.tool!r})"

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Run the call on to its next question or its result; a failure is the model's to read."""
        return await self._toolbox.run(call, answers, server=self.server, tool=self.tool)


class McpToolbox:
    """The MCP servers of a run, their tools as executors, and the calls between runs.

    Servers are started (or reached) when a tool of theirs is first called.
    Use it as an async context manager, or call :meth:`aclose`, which
    cancels every call still open and stops every server. Give the driver
    :meth:`observe` as (or inside) its ``on_step``, so an abandoned call's
    server hears ``cancel`` at once, and wrap the prompter with
    :meth:`prompter`, so the person sees the whole link of a URL request.
    """

    def __init__(self, servers: Iterable[McpServer]) -> None:
        """Know ``servers`` (by name, which must be unique); start none yet."""
        self._servers: dict[str, _Server] = {}
        for server in servers:
            if server.name in self._servers:
                raise ValueError(f"two MCP servers are called {server.name!r}")
            self._servers[server.name] = _Server(server)
        self._calls: dict[str, _Call] = {}
        self._winding: set[asyncio.Task[None]] = set()
        self._closed = False

    def __repr__(self) -> str:
        """The servers' names."""
        return f"McpToolbox(servers={sorted(self._servers)})"

    async def __aenter__(self) -> Self:
        """Use the toolbox; :meth:`aclose` on the way out."""
        return self

    async def __aexit__(self, *_: object) -> None:
        """Cancel what is open and stop the servers."""
        await self.aclose()

    def executor(self, server: str, tool: str) -> McpToolExecutor:
        """The executor of ``tool`` on ``server`` (whether it offers it is checked when called)."""
        if server not in self._servers:
            raise KeyError(f"no MCP server {server!r} (servers: {', '.join(self._servers)})")
        return McpToolExecutor(self, server, tool)

    async def executors(self) -> dict[str, McpToolExecutor]:
        """Every tool every server offers, under its own name (each server is started to list)."""
        found: dict[str, McpToolExecutor] = {}
        for name, server in self._servers.items():
            if server.offered is None:
                await server.modern()  # lists its tools, whichever era it speaks
            for tool in server.offered or {}:
                if tool in found:
                    raise ValueError(
                        f"tool {tool!r} is offered by MCP servers {found[tool].server!r} and "
                        f"{name!r}: name the one meant with executor()"
                    )
                found[tool] = McpToolExecutor(self, name, tool)
        return found

    def prompter(self, prompter: Prompter) -> Prompter:
        """``prompter``, showing the person the whole link of a URL request (never recorded)."""
        return _LinkShowingPrompter(prompter, self)

    def observe(self, step: StepFacts) -> None:
        """Watch the driver's steps: a call that ended while its question was open is abandoned."""
        if step.outcome is not None:
            call = self._calls.get(step.tool_call_id)
            if call is not None and call.awaiting is not None:
                self._forget(call, abandon=True)

    async def run(
        self,
        call: ToolCallRequest,
        answers: Mapping[str, ToolAnswer],
        *,
        server: str,
        tool: str,
    ) -> ExecutorResult:
        """Run ``call`` of ``tool`` (on ``server``) with ``answers``: its next question, or end."""
        if self._closed:
            return Completed(content="The MCP servers of this run were stopped.", is_error=True)
        state = self._calls.get(call.id)
        continues = (
            state is not None
            and bool(answers)
            and state.awaiting is not None
            and state.tool == tool
            and state.server is self._servers[server]
            and state.arguments == dict(call.arguments)
        )
        if state is not None and not continues:
            self._forget(state, abandon=True)
            state = None
        if state is None:
            state = _Call(request=call, server=self._servers[server], tool=tool, carried=answers)
            self._calls[call.id] = state
        try:
            result = await state.advance(answers)
        except asyncio.CancelledError:
            self._forget(state, abandon=True)
            raise
        except ServerError as error:
            self._forget(state, abandon=True)
            return Completed(content=state.server.masked(error.message), is_error=True)
        if isinstance(result, Completed):
            self._forget(state, abandon=False)
            return attrs.evolve(result, content=state.server.masked(result.content))
        return result

    def link(self, tool_call_id: str, question_id: str) -> str | None:
        """The whole link of the URL request ``question_id`` of a call, while it is asked."""
        call = self._calls.get(tool_call_id)
        if call is None or call.awaiting != question_id or not isinstance(call.fill, UrlFill):
            return None
        return call.fill.url

    def _forget(self, call: _Call, *, abandon: bool) -> None:
        if self._calls.get(call.id) is call:
            del self._calls[call.id]
        if not abandon:
            return
        work = call.abandon()
        if work is not None:
            task = asyncio.get_running_loop().create_task(work)
            self._winding.add(task)
            task.add_done_callback(self._winding.discard)

    async def aclose(self) -> None:
        """Cancel every open call (its server told ``cancel``), then stop every server."""
        self._closed = True
        for call in list(self._calls.values()):
            self._forget(call, abandon=True)
        if self._winding:
            await asyncio.gather(*self._winding, return_exceptions=True)
        await asyncio.gather(*(server.close() for server in self._servers.values()))


class _LinkShowingPrompter:
    """A prompter that adds a URL request's whole link to what the person is shown."""

    def __init__(self, prompter: Prompter, toolbox: McpToolbox) -> None:
        self._prompter = prompter
        self._toolbox = toolbox

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        return await self._prompter.ask_permission(prompt)

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        link = self._toolbox.link(prompt.tool_call_id, prompt.question.id)
        if link is not None:
            # Only the person's copy: the recorded question names the link without its query.
            shown = f"The whole link (shown here, never recorded): {link}"
            context = f"{prompt.question.context}\n{shown}" if prompt.question.context else shown
            prompt = attrs.evolve(prompt, question=attrs.evolve(prompt.question, context=context))
        return await self._prompter.ask_question(prompt)
