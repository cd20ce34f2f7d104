"""Replacing a file so that it is always either the old or the new version.

The new bytes go to a temporary file in the same directory, are flushed and
fsynced, then renamed over the target, and the directory is fsynced so the
rename itself survives a crash. Temporary files are named after the start of
the file's name and the writing process; those left by a process that died
mid-write are removed by the next successful write (or save) to the same
directory.

A file its writer may not write (made read-only) is not replaced, though
renaming over it would succeed: ``PermissionError``, as writing it would.

A target that is a symbolic link is written through: the file the link leads
to (through every link in turn) is the one replaced, its temporary file beside
it, and the link itself stays as it was. Replacing the link would turn it into
a regular file and leave the file it named without the change.

A directory that may be written but not read (``-wx``) cannot be opened to be
synced: a file replaced in it is in place all the same, so that is logged as a
warning (the rename may not survive a power loss), not raised as a failure to
write. Any other failure to sync the directory, once the file is renamed, is
an :class:`UnsyncedError`, so that the caller never says the file was not
written when it was.

:func:`write_output` writes an output file the user named (``inquiry export
-o``): a regular file (or a new one) is replaced as above, but a device, a FIFO
or a pipe (``/dev/stdout``) is written to, never replaced by a regular file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import secrets
import stat
from typing import TYPE_CHECKING

from coordinator._errors import os_reason

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "UnsyncedError",
    "alive",
    "atomic_write",
    "remove_stale_temps",
    "short_name",
    "sync_directory",
    "temp_beside",
    "write_all",
    "write_output",
]

_LOG = logging.getLogger("coordinator")
#: What opening a directory to sync it may meet when it may be written but not read.
_UNREADABLE = frozenset({errno.EACCES, errno.EPERM})


class UnsyncedError(OSError):
    """A file was renamed into place, but its directory could not be synced after."""


_TEMP = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[0-9a-f]{16}\.tmp$")
#: How much of a file's name the name of a file made beside it keeps, in bytes.
_NAME_KEPT = 40


def short_name(name: str) -> str:
    """The start of ``name`` (at most 40 bytes), to name a file made beside it.

    A temporary or staging name holds the name it is for, to be recognized,
    and more besides: whole, a name near the 255 bytes a name may have would
    make it too long to create. A character cut in two stays the bytes it was
    (``os.fsdecode`` keeps them as escapes), so the cut name is the same
    every time.
    """
    return os.fsdecode(os.fsencode(name)[:_NAME_KEPT])


def atomic_write(path: Path, *chunks: bytes) -> None:
    """Replace ``path`` with ``chunks``, written one after the other, atomically and durably.

    Several chunks spare the caller joining them: for a stream of a million
    entries, appending a newline to its JSON would copy half a gigabyte.
    A symbolic link is written through (see the module's docstring).
    """
    path = _through_links(path)
    directory = path.parent
    temp = temp_beside(path)
    try:
        existing: int | None = path.stat().st_mode & 0o777
    except FileNotFoundError:
        existing = None
    if existing is not None and not os.access(path, os.W_OK):
        # Renaming over it needs only the directory's permission, but a file
        # made read-only is one its owner means to keep as it is.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    # A new file gets 0o666 narrowed by the process umask, as any new file does.
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if existing is None else existing
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        if existing is not None:
            temp.chmod(existing)  # keep an existing file's mode (umask may have narrowed it)
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    try:
        sync_directory(directory)
    except OSError as error:
        raise UnsyncedError(error.errno, error.strerror, str(directory)) from error
    remove_stale_temps(directory)


def temp_beside(path: Path) -> Path:
    """A new name, beside ``path``, for the temporary file that is to replace it.

    Named after the start of ``path``'s name and this process, as
    :func:`remove_stale_temps` knows such names: one a writer that died
    left behind is removed by the next write in its directory.
    """
    return path.with_name(f".{short_name(path.name)}.{os.getpid()}.{secrets.token_hex(8)}.tmp")


def write_all(fd: int, data: bytes, offset: int) -> None:
    """``pwrite`` all of ``data`` at ``offset`` (a write may take less than it is given)."""
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], offset + done)


def _through_links(path: Path) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or where its links lead."""
    if not path.is_symlink():
        return path
    return type(path)(os.path.realpath(path))


def sync_directory(directory: Path) -> None:
    """Sync ``directory`` (``fsync``), so that a rename or a new name in it survives a crash.

    A directory that cannot be opened for reading is warned about, not raised
    (see the module's docstring).
    """
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as error:
        if error.errno not in _UNREADABLE:
            raise
        _LOG.warning(
            "%s: cannot be synced (%s): what was just written there may not survive a power loss",
            directory,
            os_reason(error),
        )
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_output(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``: a regular file is replaced atomically, anything else written to.

    A FIFO nobody reads is not waited for: ``OSError`` (``ENXIO``). A
    directory is ``IsADirectoryError``.
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        status = None
    if status is None or stat.S_ISREG(status.st_mode):
        atomic_write(path, data)
        return
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        # Opened without waiting for a reader; written to as any output is, waiting for it.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with memoryview(data) as view:
            done = 0
            while done < len(view):
                done += os.write(fd, view[done:])
    finally:
        os.close(fd)


def remove_stale_temps(directory: Path) -> None:
    """Remove the temporary files that writers which died mid-write left in ``directory``.

    Cleaning up is not the write: a directory that cannot be listed (one that
    may be written but not read) is left as it is.
    """
    try:
        candidates = list(directory.iterdir())
    except OSError:
        return
    for candidate in candidates:
        match = _TEMP.match(candidate.name)
        if match is None:
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or alive(pid):
            continue  # possibly being written right now
        with contextlib.suppress(OSError):
            candidate.unlink()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is just not ours
    return True
