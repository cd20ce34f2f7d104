"""Creating a conversation directory whole or not at all.

The first save of a new conversation to a directory that does not exist yet
builds it beside where it goes, as ``.<name>.<pid>.<random>.new``: the lock
file is created and locked there, every file is written and synced, the
directory is synced, and then it is renamed into place and its parent
synced. A crash at any moment leaves either no directory at the target, or
the whole conversation; the staging directory a dead writer left is removed
by the next creation of a directory of that name in the same parent.

A directory that already exists (empty, or holding other files) cannot be
replaced that way without changing what the user made (its inode, which a
shell may be in): there the store writes in place, ``events.json`` last, and
reads a directory with its lock file but no ``events.json`` as a conversation
whose first save did not finish (see :mod:`coordinator.store._store`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
from typing import TYPE_CHECKING

from coordinator._errors import StreamFormatError, os_reason
from coordinator.store._atomic import alive, sync_directory
from coordinator.store._lock import WriterLock, acquire, release

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["create_directory"]

_LOG = logging.getLogger("coordinator")

_STAGING = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{16}\.new$")


def create_directory(directory: Path, files: Sequence[tuple[str, Sequence[bytes]]]) -> WriterLock:
    """Make ``directory`` (which does not exist) appear holding ``files``; its lock, held.

    Each file is a name and the chunks of its content. Raises ``OSError`` as
    the OS refuses (nothing is then created), and :class:`StreamFormatError`
    when another process created the directory first.
    """
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(parent, directory.name)
    staging = parent / f".{directory.name}.{os.getpid()}.{secrets.token_hex(8)}.new"
    staging.mkdir()
    lock: WriterLock | None = None
    try:
        lock = _lock(staging)
        for name, chunks in files:
            _write_new(staging / name, chunks)
        sync_directory(staging)
        _move(staging, directory)
    except BaseException:
        if lock is not None:
            release(lock)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    lock.directory = directory
    try:
        sync_directory(parent)
    except OSError as error:
        # The conversation is in place: only its durability is in doubt.
        _LOG.warning(
            "%s: cannot be synced (%s): the new conversation %s may not survive a power loss",
            parent,
            os_reason(error),
            directory.name,
        )
    return lock


def _lock(staging: Path) -> WriterLock:
    """The lock of the new directory, taken before anything is written in it."""
    lock = acquire(staging, create=True)
    if lock is None:  # a new directory of ours that cannot hold a file: what the OS says
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(staging))
    return lock


def _move(staging: Path, directory: Path) -> None:
    """Rename the staging directory into place; another creator's directory is never replaced."""
    try:
        staging.rename(directory)
    except OSError as error:
        if error.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise StreamFormatError(
                directory,
                "was created by another process while this conversation was being "
                "saved; nothing was saved (load it, or save to another directory)",
            ) from None
        raise


def _write_new(path: Path, chunks: Sequence[bytes]) -> None:
    """Write a new file, durably."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())


def _remove_stale_staging(parent: Path, name: str) -> None:
    """Remove what dead writers left while creating ``name`` in ``parent``."""
    try:
        candidates = list(parent.iterdir())
    except OSError:
        return  # a parent that cannot be listed keeps them; they are hidden and harmless
    for candidate in candidates:
        match = _STAGING.match(candidate.name)
        if match is None or match["name"] != name:
            continue
        pid = int(match["pid"])
        if pid != os.getpid() and not alive(pid):
            with contextlib.suppress(OSError):
                shutil.rmtree(candidate)
