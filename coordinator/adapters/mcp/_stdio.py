"""A server started over stdio: its process, and its stdout read as MCP messages, bounded.

The SDK's transport (``mcp.client.stdio.stdio_client``) trusts the server's
stdout: it holds a line of any length, joining it again for each chunk read
(a 300 MB reply had a run at 433 MB and still reading two minutes on), logs
a traceback for each line that is not JSON-RPC (a server printing progress
on its stdout wrote 71 MB of them in ten seconds), and a byte that is not
UTF-8 ends its reader without a word, so the call waiting for its reply
fails as a timeout.
So :func:`stdio_transport` is a transport of its own, through the SDK's
public transport interface (:class:`mcp.client.Transport`), the same as the
SDK's in everything else: the process is started with the SDK's short
environment and in a session of its own, one JSON-RPC message is one line
of UTF-8 each way, and it is stopped as the SDK stops one (stdin closed, a
grace period, then its process group terminated, then killed).

Theory of operation: stdout is read as bytes, a chunk at a time, and cut
into lines; each line is one of

1. **a message**: valid UTF-8, and a JSON-RPC message. Handed to the session.
2. **too long**: more than ``max_reply`` bytes before its newline. Reading
   it stops there, so no more than ``max_reply`` bytes of it are ever held:
   a *fault*.
3. **broken**: not valid UTF-8, but a JSON-RPC message once its bad bytes
   are replaced. The server meant it as a message (a reply, likely) and
   broke it: a *fault*.
4. **noise**: anything else (a library's progress line, a banner in
   Latin-1, a JSON log line; a line that does not open with ``{`` is not
   even parsed, since every JSON-RPC message is an object). Ignored and
   counted; the first line of noise,
   and the first that is not UTF-8, are each logged once per connection as
   a warning naming the server, never the line, which may echo a secret.
   A blank line is nothing at all.

A fault ends the connection: the session is told its stream has ended, so
every request in flight on it fails at once with ``CONNECTION_CLOSED``
rather than waiting out its timeout; :attr:`StdoutReport.fault` says why,
in words the model can be told (the connection's error uses them), and
``on_fault`` is called so that the connection stops the server. Whatever
the server writes after a fault, and while it is being stopped, is read and
dropped, so that a server blocked on a full pipe can still see its stdin
close and exit.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Final, TextIO, TypeAlias

import anyio
import attrs
import mcp_types as types
from mcp.client.stdio import (
    FORCE_KILL_TIMEOUT,
    PROCESS_TERMINATION_TIMEOUT,
    get_default_environment,
)
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from anyio.abc import ByteReceiveStream, Process

    from coordinator.adapters.mcp._servers import McpServer

from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["StdoutReport", "stdio_transport"]

_LOG = logging.getLogger("coordinator.mcp")

#: How long the writer may take to send what the session handed it, once the connection closes.
_FLUSH_WAIT: Final = 0.5
#: How often a stopping server is looked at, to see whether it has exited.
_EXIT_POLL: Final = 0.01


#: What the session is given (the shape of the SDK's ``TransportStreams``).
_Streams: TypeAlias = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@attrs.define
class StdoutReport:
    """What a server's stdout held besides MCP messages, for the warnings and the errors."""

    #: The server's name, as the warnings say it.
    server: str
    #: Lines that were not MCP messages (ignored), the lines not UTF-8 among them.
    noise: int = 0
    not_utf8: int = 0
    #: Why the connection was ended (a reply too long, or broken); ``None`` while it is not.
    fault: str | None = None

    def noted(self) -> str:
        """What a failed call's error adds about the noise: ``""`` when there was none."""
        if not self.noise:
            return ""
        lines = "line" if self.noise == 1 else "lines"
        return f" (it also wrote {self.noise} {lines} on its stdout that are not MCP messages)"


class _Lines:
    """The server's stdout cut into lines, each classified (see the module's docstring)."""

    def __init__(
        self,
        report: StdoutReport,
        deliver: MemoryObjectSendStream[SessionMessage | Exception],
        *,
        limit: int,
    ) -> None:
        self.report = report
        self.deliver = deliver
        self.limit = limit
        self.parts: list[bytes] = []  # the line read so far, before its newline
        self.size = 0

    async def feed(self, chunk: bytes) -> bool:
        """Take ``chunk``; ``False`` once a fault has ended the connection."""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:end]
            if self.size + len(piece) > self.limit:
                return self._too_long()
            line = b"".join([*self.parts, piece]) if self.parts else piece
            self.parts, self.size = [], 0
            if not await self._line(line):
                return False
            start = end + 1
        rest = chunk[start:]
        if self.size + len(rest) > self.limit:
            return self._too_long()
        if rest:
            self.parts.append(rest)
            self.size += len(rest)
        return True

    def _too_long(self) -> bool:
        self.parts, self.size = [], 0
        self.report.fault = f"sent a message larger than {self.limit:,} bytes (its max_reply)"
        return False

    async def _line(self, line: bytes) -> bool:
        opening = line.lstrip()[:1]
        if not opening:
            return True
        try:
            text: str | None = line.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        # Every JSON-RPC message is an object: a line that opens otherwise is noise, unparsed.
        message = _message(text) if opening == b"{" and text is not None else None
        if message is not None:
            await self.deliver.send(SessionMessage(message))
            return True
        if text is None and opening == b"{":  # a message, its bad bytes replaced: a broken one
            readable = line.decode("utf-8", errors="replace")
            if _message(readable) is not None:
                self.report.fault = "sent a message that is not valid UTF-8"
                return False
        self._noise(not_utf8=text is None)
        return True

    def _noise(self, *, not_utf8: bool) -> None:
        report = self.report
        report.noise += 1
        if not_utf8:
            report.not_utf8 += 1
            if report.not_utf8 == 1:
                _LOG.warning(
                    "MCP server '%s' wrote a line on its stdout that is not UTF-8: it is no "
                    "MCP message and is ignored, as every such line is (said once)",
                    report.server,
                )
        elif report.noise - report.not_utf8 == 1:
            _LOG.warning(
                "MCP server '%s' wrote a line on its stdout that is not an MCP message: it is "
                "ignored, as every such line is (said once)",
                report.server,
            )


def _message(text: str) -> types.JSONRPCMessage | None:
    """``text`` as a JSON-RPC message; ``None`` when it is not one."""
    try:
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError:
        return None


@contextlib.asynccontextmanager
async def stdio_transport(
    server: McpServer,
    errlog: TextIO,
    report: StdoutReport,
    on_fault: Callable[[], None],
) -> AsyncIterator[_Streams]:
    """Start ``server``'s command; the session's streams to and from it, while it runs.

    Its stderr goes to ``errlog``; what its stdout holds besides messages
    goes to ``report``, and ``on_fault`` is called once a fault ends the
    connection.
    """
    process = await anyio.open_process(
        list(server.command),
        env=get_default_environment() | dict(server.env),
        stderr=errlog,
        cwd=server.cwd,
        start_new_session=True,  # so a stop reaches whatever the server started
    )
    # No await between the start and the task group: a cancellation there would leave it running.
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    lines = _Lines(report, to_session, limit=server.max_reply)
    written = anyio.Event()

    async def read() -> None:
        stdout = _pipe(process.stdout)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with to_session:
                async for chunk in stdout:
                    if not await lines.feed(chunk):
                        break
        if report.fault is not None:
            on_fault()
        await _drain(stdout)

    async def write() -> None:
        stdin = process.stdin
        if stdin is None:  # pragma: no cover - started with a pipe
            raise AssertionError("the server was started without a stdin pipe")
        try:
            async with from_session:
                async for outgoing in from_session:
                    text = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(f"{text}\n".encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server may still run: the session must see the connection end, not wait.
            await to_session.aclose()
        finally:
            written.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield from_server, to_server
        finally:
            # Stopping must finish even when the caller is cancelled, or the server would
            # outlive it; every wait inside is bounded.
            with anyio.CancelScope(shield=True):
                from_server.close()  # the reader, blocked on the session, goes on to drain
                to_server.close()
                with anyio.move_on_after(_FLUSH_WAIT):
                    await written.wait()
                await _stop(process)
                for stream in (from_server, to_server, to_session, from_session):
                    await stream.aclose()
            tasks.cancel_scope.cancel()


def _pipe(stream: ByteReceiveStream | None) -> ByteReceiveStream:
    if stream is None:  # pragma: no cover - started with a pipe
        raise AssertionError("the server was started without a stdout pipe")
    return stream


async def _drain(stdout: ByteReceiveStream) -> None:
    """Read and drop what the server still writes, until its stdout closes."""
    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ),
    ):
        while True:
            await stdout.receive()


async def _stop(process: Process) -> None:
    """Close the server's stdin, give it the SDK's grace period, then stop its process group."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        await _exited(process, FORCE_KILL_TIMEOUT)
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
    if process.returncode is not None:  # reaped, its pipes closed: nothing of it left open
        with anyio.move_on_after(FORCE_KILL_TIMEOUT), contextlib.suppress(OSError):
            await process.aclose()
    else:  # pragma: no cover - a process SIGKILL did not end (stuck in the kernel)
        _LOG.warning("MCP server process %d is still running after it was killed", process.pid)


async def _exited(process: Process, wait: float) -> bool:
    """Whether the server exits within ``wait`` seconds (its return code, looked at)."""
    with anyio.move_on_after(wait):
        # Its return code, not wait(): asyncio's also waits for the pipes to
        # close, which a process the server started may hold open.
        while process.returncode is None:  # noqa: ASYNC110 - no event says it exited
            await anyio.sleep(_EXIT_POLL)
        return True
    return False
