"""Serving the inbox: the address, the token, the live runs followed, and uvicorn.

Theory of operation: :func:`serve` binds the address first (port 0 picks a
free one), so that the address it prints, with the token, is the one
served; then it follows the user's live runs (:class:`~coordinator.adapters.live.LiveRuns`)
while uvicorn serves the application, until the task is cancelled or the
process is told to stop (Ctrl-C, SIGTERM). uvicorn logs no requests: an
address may carry the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import TYPE_CHECKING

import uvicorn

from coordinator.adapters.inbox._app import InboxSettings, make_app, new_token
from coordinator.adapters.inbox._source import LocalSource
from coordinator.adapters.live import LiveRuns

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["bind", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket at ``host``:``port`` (``OSError`` when it cannot be had)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


async def serve(
    root: Path,
    *,
    sock: socket.socket,
    live: Path | None,
    token: str | None = None,
    ready: Callable[[str], None],
    root_label: str,
) -> None:
    """Serve the inbox of ``root`` on ``sock`` (and ``live``'s runs, when given).

    ``ready`` is told the address to open, token included, once it is served.
    """
    token = token or new_token()
    host, port = sock.getsockname()[:2]
    runs = LiveRuns(live) if live is not None else None
    settings = InboxSettings(
        source=LocalSource(root, runs), token=token, host=host, port=port, root_label=root_label
    )
    config = uvicorn.Config(
        make_app(settings),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    watching = asyncio.get_running_loop().create_task(runs.watch()) if runs else None
    serving = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                break
            await asyncio.sleep(0.01)
        if server.started:
            ready(f"http://{shown}:{port}/?token={token}")
        await serving
    finally:
        server.should_exit = True
        if not serving.done():
            with contextlib.suppress(asyncio.CancelledError):
                await serving
        if watching is not None:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
