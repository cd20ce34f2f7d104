"""Creating a conversation directory whole or not at all.

The first save of a new conversation builds its directory beside where it
goes, as ``.<start of name>.<pid>.<random>.new`` (the start of the name, so
that the staging name stays short whatever the name's length): the lock file
is created and locked there, every file is written and synced, the directory
is synced, and then it is renamed into place and its parent synced. A crash
at any moment leaves the target as it was (absent, or an empty directory),
or the whole conversation; the staging directory a dead writer left is
removed by the next creation of a directory of that name in the same parent.

The target may be absent, or an empty directory (``mkdir conv; inquiry run
... -c conv``): ``rename(2)`` replaces an empty directory with another in
one step (Linux and macOS both do), so the conversation appears there whole
too. The new directory gets the empty one's permission bits; a target that
is a link to an empty directory is replaced where the link leads, the link
kept. A process that had the empty directory as its working directory is
left in a directory that no longer has a name, as after any ``rm -r``.

An empty directory is written in place instead, as any existing directory
is, when replacing it would change more than its contents or cannot be
done: it is this process's working directory, another user's, one this
process may not write, a mount point, or its parent may not be written.
There the store writes ``events.json`` last, and reads a directory with its
lock file but no ``events.json`` as a conversation whose first save did not
finish (see :mod:`coordinator.store._store`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator._errors import StreamFormatError, os_reason
from coordinator.store._atomic import alive, short_name, sync_directory
from coordinator.store._lock import WriterLock, acquire, holder_of, named_holder, release

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["create_directory"]

_LOG = logging.getLogger("coordinator")

_STAGING = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{16}\.new$")
#: What the OS answers when an empty directory cannot be replaced by another
#: (its parent not writable, a mount point, another file system, ...): the
#: store then writes in place, as in any existing directory.
_CANNOT_REPLACE = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.EBUSY, errno.EXDEV, errno.EINVAL}
)


def create_directory(
    directory: Path, files: Sequence[tuple[str, Sequence[bytes]]]
) -> WriterLock | None:
    """Make ``directory`` (absent, or an empty directory) appear holding ``files``; its lock, held.

    Each file is a name and the chunks of its content. ``None``, with
    nothing written, when ``directory`` is an empty directory that is not to
    be replaced (see the module's docstring): the caller writes in place.
    Raises ``OSError`` as the OS refuses (nothing is then created), and
    :class:`StreamFormatError` when another process created the directory
    first.
    """
    replacing = os.path.lexists(directory)
    if replacing:
        target = Path(os.path.realpath(directory))
        mode = _replaceable_mode(target)
        if mode is None:
            return None
    else:
        target, mode = directory, None
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(parent, target.name)
    staging = parent / f".{short_name(target.name)}.{os.getpid()}.{secrets.token_hex(8)}.new"
    try:
        staging.mkdir()
    except OSError as error:
        if replacing and error.errno in _CANNOT_REPLACE:
            return None
        raise
    lock = _staged(staging, files, mode)
    try:
        moved = _move(staging, target, directory, replacing=replacing)
    except BaseException:
        release(lock)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if not moved:
        release(lock)
        shutil.rmtree(staging, ignore_errors=True)
        return None
    lock.directory = directory
    lock.unsynced_entry = False  # its name was synced with the staging directory's files
    try:
        sync_directory(parent)
    except OSError as error:
        # The conversation is in place: only its durability is in doubt.
        _LOG.warning(
            "%s: cannot be synced (%s): the new conversation %s may not survive a power loss",
            parent,
            os_reason(error),
            target.name,
        )
    return lock


def _staged(
    staging: Path, files: Sequence[tuple[str, Sequence[bytes]]], mode: int | None
) -> WriterLock:
    """Lock ``staging`` and write ``files`` in it, durably; removed again if that fails.

    ``mode`` is the permission bits of the empty directory it will replace.
    """
    lock: WriterLock | None = None
    try:
        lock = _lock(staging)
        for name, chunks in files:
            _write_new(staging / name, chunks)
        if mode is not None:
            staging.chmod(mode)  # the empty directory's bits, not the umask's
        sync_directory(staging)
    except BaseException:
        if lock is not None:
            release(lock)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return lock


def _replaceable_mode(target: Path) -> int | None:
    """The permission bits of ``target``, an empty directory that may be replaced; else ``None``.

    Not replaced: anything but an empty directory (it holds what a creation
    must not remove), this process's working directory (it would be left in
    a directory without a name), another user's directory (the new one would
    be this user's), one this process may not write (the new one could be
    written), a mount point (it cannot be).
    """
    try:
        status = target.stat()
        if (
            not stat.S_ISDIR(status.st_mode)
            or status.st_uid != os.geteuid()
            or not os.access(target, os.W_OK | os.X_OK)
            or os.path.samestat(status, Path.cwd().stat())
            or target.is_mount()
            or next(target.iterdir(), None) is not None
        ):
            return None
    except OSError:
        return None
    return stat.S_IMODE(status.st_mode)


def _lock(staging: Path) -> WriterLock:
    """The lock of the new directory, taken before anything is written in it."""
    lock = acquire(staging, create=True)
    if lock is None:  # a new directory of ours that cannot hold a file: what the OS says
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(staging))
    return lock


def _move(staging: Path, target: Path, directory: Path, *, replacing: bool) -> bool:
    """Rename the staging directory onto ``target``; whether it was (see ``_CANNOT_REPLACE``).

    Another creator's directory is never replaced: the refusal names it by
    the pid its lock file holds, when it still holds it. ``directory`` is
    the target as the caller named it, for the error.
    """
    try:
        staging.rename(target)
    except OSError as error:
        if error.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise StreamFormatError(
                directory,
                f"was created by {named_holder(holder_of(target))} while this conversation "
                "was being saved; nothing was saved (load it, or save to another directory)",
            ) from None
        if replacing and error.errno in _CANNOT_REPLACE:
            return False
        raise
    return True


def _write_new(path: Path, chunks: Sequence[bytes]) -> None:
    """Write a new file, durably."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())


def _remove_stale_staging(parent: Path, name: str) -> None:
    """Remove what dead writers left while creating ``name`` in ``parent``.

    Staging names keep only the start of the name: a dead writer's staging
    for another name that starts alike is removed too, which is as well.
    """
    try:
        candidates = list(parent.iterdir())
    except OSError:
        return  # a parent that cannot be listed keeps them; they are hidden and harmless
    start = short_name(name)
    for candidate in candidates:
        match = _STAGING.match(candidate.name)
        if match is None or match["name"] != start:
            continue
        pid = int(match["pid"])
        if pid != os.getpid() and not alive(pid):
            with contextlib.suppress(OSError):
                shutil.rmtree(candidate)
