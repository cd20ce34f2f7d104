"""``inquiry serve``: the web inbox, until Ctrl-C.

Theory of operation: the root is checked (a directory), the address bound
(so that a port taken is said at once, exit 2), the user's live directory
checked (unless ``--no-live``), and then the inbox served
(:func:`coordinator.adapters.inbox.serve`), its address printed with the
token, the only line on stdout. Ctrl-C or SIGTERM stops it: exit 0.
An address that is not loopback is served when asked for, with a warning
on stderr: whoever reaches it with the token answers the runs' questions.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from coordinator._errors import os_reason
from coordinator._text import shown_path, shown_text
from coordinator.adapters.inbox import bind, serve
from coordinator.adapters.live import LiveDirectoryError, live_directory

if TYPE_CHECKING:
    import argparse

__all__ = ["serve_inbox"]

_OK = 0
_UNUSABLE = 2


def _say(problem: str) -> None:
    sys.stderr.write(f"inquiry: {shown_text(problem)}\n")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_inbox(args: argparse.Namespace, out: TextIO) -> int:
    """Serve the inbox of ``args.root`` on ``args.host``:``args.port``; the exit status."""
    root = Path(args.root)
    if not root.is_dir():
        _say(f"{shown_path(root)}: is not a directory of conversations")
        return _UNUSABLE
    live = None
    if not args.no_live:
        try:
            live = live_directory()
        except LiveDirectoryError as error:
            _say(f"{error} (or serve with --no-live)")
            return _UNUSABLE
    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        _say(f"{args.host}:{args.port}: cannot be listened on: {os_reason(error)}")
        return _UNUSABLE
    if not _loopback(args.host):
        _say(
            f"warning: {args.host} is not this machine alone: whoever reaches it with the "
            "token can answer your runs' questions"
        )

    def ready(address: str) -> None:
        out.write(f"inquiry serve: the inbox of {shown_path(os.path.realpath(root))}\n")
        out.write(f"  open {address}\n")
        out.flush()

    try:
        asyncio.run(serve(root, sock=sock, live=live, ready=ready, root_label=shown_path(root)))
    except KeyboardInterrupt:
        return _OK
    finally:
        sock.close()
    return _OK
