"""One connection to one MCP server, over the official SDK (imported here and in _stdio).

Theory of operation: the SDK's transports and sessions live in anyio task
groups, which must be entered and left by the same task. So a
:class:`Connection` is *owned* by one task (:meth:`Connection.open` starts
it): the task enters the transport and the session, negotiates the protocol
era, says it is ready, and holds them until :meth:`Connection.close` tells
it to leave. Any task may send requests on the session meanwhile.

The era is negotiated once per connection. ``auto`` asks ``server/discover``
(2026-07-28, where a tool's questions come back as ``input_required``
results) and falls back to ``initialize`` (2025-11-25 and before, where a
tool asks by sending ``elicitation/create`` while its call is in flight);
``legacy`` goes straight to ``initialize``. On a legacy connection the SDK
calls :attr:`Connection.elicit` for each ``elicitation/create``, possibly
several at once; on a modern one there is none to answer.

A server started over stdio is reached through this package's own
transport (:mod:`coordinator.adapters.mcp._stdio`), which bounds each
message and reads past what is not one; one over HTTP through the SDK's,
each message bounded alike, and every request carrying the server's
``headers`` (:func:`_http_transport`; their ``${NAME}`` references are
read from the environment when the connection opens). Either way
``McpServer.max_reply`` is the bound, and a connection a fault ended says
why in the error of each call it fails.

The client declares the elicitation capability (form and URL) and nothing
else: no sampling, no roots. Errors leave here as
:class:`~coordinator.adapters.mcp._exchange.ServerError`, in words the
model can be told, never with an answer's value in them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import httpx2
import mcp_types as types
import orjson
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from coordinator._errors import os_reason
from coordinator._text import redact, shown_links, shown_path, shown_url, unshown_url_parts
from coordinator.adapters.mcp._exchange import (
    ErrorKind,
    InputRequired,
    Reply,
    Request,
    ServerError,
    Unaskable,
)
from coordinator.adapters.mcp._servers import HeaderVariableError
from coordinator.adapters.mcp._stdio import StdoutReport, stdio_transport
from coordinator.driver import Completed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from mcp.client.session import ClientRequestContext, ClientSession

    from coordinator.adapters.mcp._servers import McpServer
    from machines import JsonValue

__all__ = ["Connection", "result_text"]

_LOG = logging.getLogger("coordinator.mcp")

#: How long a server may take to stop once its stdin is closed (the SDK then
#: terminates its process group, then kills it: four seconds in all).
_CLOSE_WAIT = 10.0
#: An HTTP server's client: the SDK's own timeouts (seconds), a read long
#: enough for a stream the server holds open.
_HTTP_TIMEOUT, _HTTP_READ_TIMEOUT = 30.0, 300.0


class Connection:
    """A session with one server, held by its own task.

    ``legacy`` forces the 2025-11-25 handshake; otherwise the era is
    negotiated. ``elicit`` answers the server's ``elicitation/create``
    requests (legacy connections only); set it before a call that may ask.
    """

    def __init__(self, server: McpServer, *, legacy: bool = False) -> None:
        """A connection to ``server``, not yet open."""
        self.server = server
        self.mode = "legacy" if legacy else "auto"
        self.elicit: Callable[[Request], Awaitable[Reply | str]] | None = None
        self.broken = False
        #: What the server's stdout held besides messages, and the fault that ended it, if any.
        self.stdout = StdoutReport(server=server.name)
        self._session: ClientSession | None = None
        #: The headers sent to a server reached by url (their variables read once).
        self._headers: dict[str, str] = {}
        #: The HTTP under the SDK's transport, for the status a server refused a request with.
        self._http: _BoundedBodies | None = None
        self._closing = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        """Which server, and whether the connection is usable."""
        return f"Connection(server={self.server.name!r}, mode={self.mode!r}, alive={self.alive})"

    @property
    def alive(self) -> bool:
        """Whether requests can still be sent."""
        return (
            self._session is not None
            and not self.broken
            and self._task is not None
            and not self._task.done()
        )

    @property
    def legacy(self) -> bool:
        """Whether the era negotiated is before 2026-07-28 (questions come as requests)."""
        version = self._session.protocol_version if self._session is not None else None
        return version not in MODERN_PROTOCOL_VERSIONS

    @property
    def protocol_version(self) -> str | None:
        """The protocol version negotiated."""
        return self._session.protocol_version if self._session is not None else None

    def _named(self) -> str:
        return f"MCP server '{self.server.name}'"

    # --------------------------------------------------------------- life

    async def open(self) -> None:
        """Start the server (or reach it) and negotiate; :class:`ServerError` when it cannot."""
        try:
            self._headers = self.server.sent_headers(os.environ)
        except HeaderVariableError as error:
            raise ServerError(f"{error}: it cannot be reached", ErrorKind.CLOSED) from None
        try:
            errlog = self._errlog()
        except OSError as error:
            raise ServerError(
                f"{self._named()} could not be started: its stderr file "
                f"{shown_path(error.filename or '')} cannot be opened: {os_reason(error)}",
                ErrorKind.CLOSED,
            ) from None
        self._task = asyncio.get_running_loop().create_task(
            self._own(errlog), name=f"mcp server {self.server.name}"
        )
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.server.start_timeout)
        except TimeoutError:
            await self.close()
            raise ServerError(
                f"{self._named()} did not start within {self.server.start_timeout:g} s",
                ErrorKind.CLOSED,
            ) from None

    async def _own(self, errlog: TextIO) -> None:
        """Hold the transport and the session from opening to closing, in this one task."""
        try:
            with errlog:
                async with Client(
                    self._transport(errlog),
                    mode=self.mode,
                    elicitation_callback=self._on_elicit,
                    read_timeout_seconds=None,
                    cache=None,
                    client_info=types.Implementation(name="inquiry-coordinator", version="0.1.0"),
                ) as client:
                    self._session = client.session
                    self._ready.set_result(None)
                    await self._closing.wait()
        except BaseException as error:  # an ExceptionGroup of the SDK's task groups, say
            self.broken = True
            if not self._ready.done():
                self._ready.set_exception(self._start_error(error))
            if isinstance(error, asyncio.CancelledError):
                raise
            _LOG.debug("%s ended: %s", self._named(), type(_leaf(error)).__name__)
        finally:
            self.broken = True

    def _transport(self, errlog: TextIO) -> Any:
        server = self.server
        if server.url is not None:
            self._http = _BoundedBodies(server.max_reply)
            return _http_transport(server.url, self._http, self._headers)
        return stdio_transport(server, errlog, self.stdout, self._on_fault)

    def _on_fault(self) -> None:
        """The transport ended the connection (a reply too long, or broken): stop the server."""
        self.broken = True
        self._closing.set()

    def _errlog(self) -> TextIO:
        """Where the server's stderr goes: the file named for it, appended to, or nowhere."""
        path = self.server.stderr
        if path is not None:
            return path.open("a", encoding="utf-8")
        return open(os.devnull, "w", encoding="utf-8")  # noqa: PTH123 - closed by _own

    def _start_error(self, error: BaseException) -> ServerError:
        leaf = _leaf(error)
        url = self.server.url
        if url is not None:
            return self._reach_error(leaf, url)
        cwd = self.server.cwd
        if self.stdout.fault is not None:
            why = f"it {self.stdout.fault}, and the connection was closed"
        elif isinstance(leaf, FileNotFoundError) and cwd is not None and not cwd.is_dir():
            why = f"its working directory {shown_path(cwd)} is not there"
        elif isinstance(leaf, FileNotFoundError):
            why = f"its program was not found ({shown_path(self.server.command[0])})"
        elif isinstance(leaf, PermissionError):
            why = f"its program may not be run ({shown_path(self.server.command[0])})"
        else:
            why = _failure(leaf, "starting")
        return ServerError(f"{self._named()} could not be started: {why}", ErrorKind.CLOSED)

    def _reach_error(self, leaf: BaseException, url: str) -> ServerError:
        """Why a server at ``url`` could not be reached, the url shown without its credentials."""
        shown = shown_url(url)
        if isinstance(leaf, httpx2.TimeoutException):
            text = f"could not connect to {shown}: it did not answer in time"
        elif isinstance(leaf, httpx2.ConnectError):
            # Refused, no such host, unreachable: httpx2 (the SDK's client) says only "All
            # connection attempts failed", which names neither what nor where.
            text = f"could not connect to {shown}"
        elif isinstance(leaf, httpx2.TransportError):
            text = f"could not connect to {shown}: the connection failed ({type(leaf).__name__})"
        elif self._http is not None and self._http.refused is not None:
            # The SDK says only "Server returned an error response": the
            # status is what tells a person the headers (a token) are wrong.
            text = (
                f"could not be reached at {shown}: it refused the request "
                f"(HTTP {self._http.refused}{_configured(self.server.headers)})"
            )
        else:
            # The server's or a library's own words may echo the whole url, as
            # configured or as sent: httpx2 percent-encodes a space, a quote
            # or a letter beyond ASCII in it.
            why = redact(_failure(leaf, "connecting"), *unshown_url_parts(url), *_sent_parts(url))
            text = f"could not be reached at {shown}: {why}"
        return ServerError(f"{self._named()} {text}", ErrorKind.CLOSED)

    async def close(self) -> None:
        """Leave the session and stop the server (its process group, if it lingers)."""
        self._closing.set()
        task = self._task
        if task is None or task.done():
            if not self._ready.done():
                self._ready.cancel()
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_WAIT)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        except Exception:  # noqa: BLE001 - _own keeps its own errors; nothing to add here
            _LOG.debug("closing %s failed", self._named())
        if self._ready.done() and not self._ready.cancelled():
            self._ready.exception()  # seen: a start that failed after open() gave up on it

    # ----------------------------------------------------------- requests

    def _require_session(self) -> ClientSession:
        if self._session is None or not self.alive:
            raise ServerError(f"{self._named()} is not running", ErrorKind.CLOSED)
        return self._session

    async def tools(self) -> dict[str, str]:
        """The tools the server offers: name -> description."""
        session = self._require_session()
        offered: dict[str, str] = {}
        cursor: str | None = None
        for _ in range(1000):  # a server handing out cursors for ever is not followed for ever
            try:
                listed = await asyncio.wait_for(
                    session.list_tools(params=types.PaginatedRequestParams(cursor=cursor)),
                    self.server.timeout,
                )
            except TimeoutError:
                raise self._timeout("list its tools") from None
            except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
                raise self._failure(error, "list its tools") from None
            offered.update((tool.name, tool.description or "") for tool in listed.tools)
            cursor = listed.next_cursor
            if not cursor:
                break
        return offered

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, JsonValue],
        *,
        responses: Mapping[str, Reply] | None = None,
        state: str | None = None,
    ) -> Completed | InputRequired:
        """Call ``tool`` once: its result, or the answers it needs (a modern round).

        On a legacy connection the call stays in flight while the server
        asks; no read timeout applies then, since the person's time counts.
        """
        session = self._require_session()
        inputs: dict[str, types.InputResponse] | None = None
        if responses:
            inputs = {
                key: types.ElicitResult(action=reply.action, content=reply.revealed())
                for key, reply in responses.items()
            }
        try:
            result = await session.call_tool(
                tool,
                dict(arguments),
                read_timeout_seconds=None if self.legacy else self.server.timeout,
                input_responses=inputs,
                request_state=state,
                allow_input_required=True,
            )
        except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
            raise self._failure(error, f"run tool '{tool}'") from None
        except RuntimeError as error:  # the SDK's check of a result against the tool's schema
            raise ServerError(
                f"{self._named()} returned a result for tool '{tool}' that the MCP SDK "
                f"refused: {error}"
            ) from None
        if isinstance(result, types.InputRequiredResult):
            requests = tuple(
                _request(key, request) for key, request in (result.input_requests or {}).items()
            )
            return InputRequired(requests=requests, state=result.request_state)
        return Completed(content=result_text(result), is_error=result.is_error)

    def _timeout(self, what: str) -> ServerError:
        return ServerError(
            f"{self._named()} did not {what} within {self.server.timeout:g} s"
            f"{self.stdout.noted()}",
            ErrorKind.TIMEOUT,
        )

    def _failure(self, error: BaseException, what: str) -> ServerError:
        if not isinstance(error, MCPError) or error.code == types.CONNECTION_CLOSED:
            return self._closed(error, what)
        if error.code == types.REQUEST_TIMEOUT:
            return self._timeout(what)
        data = error.data
        if (
            error.code == types.INVALID_PARAMS
            and isinstance(data, dict)
            and data.get("reason") == "invalid_request_state"
        ):
            return ServerError(f"{self._named()}: {error.message}", ErrorKind.INVALID_STATE)
        if (
            error.code == types.INVALID_REQUEST
            and "elicitation/create" in error.message
            and "back-channel" in error.message
        ):
            return ServerError(f"{self._named()}: {error.message}", ErrorKind.NEEDS_LEGACY)
        return ServerError(
            f"{self._named()} could not {what}: {error.message} (error {error.code})"
        )

    def _closed(self, error: BaseException, what: str) -> ServerError:
        """The connection ended under a request: why, as far as is known."""
        self.broken = True
        named = self._named()
        if self.stdout.fault is not None:
            text = (
                f"{named} {self.stdout.fault} while asked to {what}: "
                "the connection was closed, and the call did not complete"
            )
        elif isinstance(error, MCPError) and error.message != _CLOSED:
            # The SDK's HTTP transport says why (an event over max_reply, a
            # redirect it would not follow, whose location may hold a token).
            text = (
                f"{named}: the connection failed while trying to {what} "
                f"({shown_links(error.message)}); the call did not complete"
            )
        else:
            text = (
                f"{named} closed the connection while trying to {what} "
                "(it may have crashed); the call did not complete"
            )
        return ServerError(text, ErrorKind.CLOSED)

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """A legacy ``elicitation/create``: answered by :attr:`elicit`, or refused."""
        del context  # the server's request id: not a key a person could configure
        handler = self.elicit
        if handler is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="no tool call of this client is waiting for input on this connection",
            )
        reply = await handler(_elicitation("", params))
        if isinstance(reply, str):
            return types.ErrorData(code=types.INVALID_PARAMS, message=reply)
        return types.ElicitResult(action=reply.action, content=reply.revealed())


#: The statuses a server refuses a request with for its credentials (a header missing or wrong).
_REFUSALS = frozenset({401, 403})


def _configured(headers: Mapping[str, str]) -> str:
    """What a refusal says of the headers sent: their names (never a value), or that none were."""
    if not headers:
        return "; no headers are configured for it"
    return f"; headers sent: {', '.join(sorted(headers))}"


#: What the SDK says of a connection that ended, when it knows nothing more.
_CLOSED = "Connection closed"


class ReplyTooLargeError(httpx2.StreamError):
    """An HTTP server's reply ran past ``max_reply``: the SDK fails the request it answered.

    A :class:`httpx2.StreamError`, the error the SDK's transport turns into
    the failure of the request whose body it was reading.
    """


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body read to ``limit`` bytes at most; past them, :class:`ReplyTooLargeError`."""

    def __init__(self, body: httpx2.AsyncByteStream, limit: int) -> None:
        self._body = body
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._body:
            read += len(chunk)
            if read > self._limit:
                raise ReplyTooLargeError(
                    f"the reply is larger than {self._limit:,} bytes (its max_reply)"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._body.aclose()


class _BoundedBodies(httpx2.AsyncBaseTransport):
    """HTTP whose JSON response bodies (one MCP message each) are bounded.

    An event stream is not: it carries many messages, each bounded by the
    SDK's own ``max_sse_event_size``.
    """

    def __init__(self, limit: int) -> None:
        self._http = httpx2.AsyncHTTPTransport()
        self.limit = limit
        #: The status of the last request refused as unauthorized or forbidden, if any.
        self.refused: int | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._http.handle_async_request(request)
        if response.status_code in _REFUSALS:
            self.refused = response.status_code
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith("application/json") or not isinstance(
            response.stream, httpx2.AsyncByteStream
        ):
            return response
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_BoundedBody(response.stream, self.limit),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._http.aclose()


@contextlib.asynccontextmanager
async def _http_transport(
    url: str, http: _BoundedBodies, headers: Mapping[str, str]
) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport over ``http``: ``headers`` on every request.

    The SDK follows a redirect only within the endpoint's origin, so the
    headers (a token, say) never go to another host.
    """
    client = httpx2.AsyncClient(
        timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT),
        transport=http,
        headers=dict(headers),
    )
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=http.limit) as streams,
    ):
        yield streams


def _elicitation(key: str, params: types.ElicitRequestParams) -> Request:
    if isinstance(params, types.ElicitRequestURLParams):
        return Request(key=key, mode="url", message=params.message, url=params.url)
    return Request(key=key, mode="form", message=params.message, schema=params.requested_schema)


def _request(key: str, request: types.InputRequest) -> Request | Unaskable:
    if isinstance(request, types.ElicitRequest):
        return _elicitation(key, request.params)
    if isinstance(request, types.CreateMessageRequest):
        why = "asks to sample the model (sampling/createMessage), which this client does not offer"
    else:
        why = f"asks for {request.method}, which this client does not offer"
    return Unaskable(key=key, why=why)


def result_text(result: types.CallToolResult) -> str:
    """What the model is told of a tool's result: its text, and what else it holds, named."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block.resource, types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[resource: {block.resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content, default=str).decode())
    return "\n".join(parts)


def _failure(leaf: BaseException, doing: str) -> str:
    """What ``leaf`` says went wrong while ``doing`` (starting, connecting) the session."""
    if isinstance(leaf, MCPError):
        return f"the handshake failed: {leaf.message} (error {leaf.code})"
    if isinstance(leaf, asyncio.CancelledError):
        return f"it was stopped while {doing}"
    return f"{type(leaf).__name__}: {leaf}"


def _sent_parts(url: str) -> tuple[str, ...]:
    """The parts of ``url`` not shown, as httpx2 sends them (percent-encoded where it must)."""
    try:
        return unshown_url_parts(str(httpx2.URL(url)))
    except httpx2.InvalidURL:
        return ()


def _leaf(error: BaseException) -> BaseException:
    """The first exception inside nested exception groups (the SDK's task groups nest them)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
