"""One writer at a time: the lock file of a conversation directory.

A process that writes a conversation holds an exclusive ``flock`` on
``.inquiry.lock`` in its directory, a file holding the writer's pid on its
first line while it holds the lock. A second process that would write there
is refused with :class:`ConversationLockedError`, which names that pid,
rather than the last of two writers silently winning. Released, the lock
file names nobody (its first line is emptied), so that a pid read from it
after the writer has gone is never a process that merely reused the number;
a writer killed by a signal cannot empty it, and the next writer's pid
replaces its own. The OS releases the lock when the descriptor is closed,
so a writer killed by any signal (``SIGKILL`` included) never blocks the
next one, and nothing is ever waited for: taking the lock either succeeds
at once or is refused.

When it is taken and released (the store decides, see
:mod:`coordinator.store._store`): by the first save of a conversation that
writes (or whose directory already has a lock file), or explicitly by
``with conversation:``; released by ``Conversation.close()``, at the end of
the ``with`` block, when the conversation is garbage-collected, or when the
process ends. Readers take no lock. Within one process, every conversation
object over the same directory shares one lock (counted), so loading a
conversation twice in a process is not refused; what keeps two such objects
from overwriting each other is the store's check of each file against what
it last read or wrote. A child forked from a writer does not inherit its
lock: the first lock it takes drops what it inherited.

A writer that takes the lock afresh first stops the tools a writer that
died left running, as ``.inquiry.running`` beside the lock file lists them
(:mod:`coordinator.store._running`): a tool's call continued by this writer
must not run beside the one left working.

The lock file is never removed (removing a file someone may be locking
would let two writers hold two files of one name). It is an extra file to
any other reader of the directory (JP included), which ignores it; the store
ignores it when it loads. Its second line, when there is one, is the undo
record of an append in progress (:mod:`coordinator.store._append`): written
and synced before the append, cleared after it. A lock file that cannot be
created or opened (a directory or file the writer may not write) means no
lock: such a save writes nothing in that directory, or fails writing, as it
did before.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import logging
import os
import stat
import threading
from pathlib import Path

import attrs

from coordinator._errors import CoordinatorError, StreamFormatError, os_reason
from coordinator.store._atomic import alive, write_all
from coordinator.store._files import file_kind, read_small_file
from coordinator.store._running import stop_leftovers

__all__ = [
    "LOCK_FILE",
    "ConversationLockedError",
    "WriterLock",
    "acquire",
    "holder_of",
    "named_holder",
    "read_record",
    "release",
]

_LOG = logging.getLogger("coordinator")

LOCK_FILE = ".inquiry.lock"
#: The most of a lock file read: a pid line and one undo record.
_READ_AT_MOST = 1 << 16
#: What opening the lock file may meet that means "no lock here", not an error.
_NO_LOCK = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


class ConversationLockedError(CoordinatorError):
    """Another process holds the conversation's writer lock: this save is refused.

    ``directory`` is the conversation's, ``pid`` the holder's (``None`` when
    its lock file does not say).
    """

    def __init__(self, directory: Path, pid: int | None) -> None:
        """Name the directory and the holder."""
        self.directory = directory
        self.pid = pid
        super().__init__(
            f"{directory}: is being written by {named_holder(pid)}; not writing to it "
            "(wait for it to finish, or save this conversation to another directory)"
        )


@attrs.define(eq=False)
class WriterLock:
    """The lock this process holds on one conversation directory.

    ``header`` is the length of the pid line (an undo record follows it);
    ``found`` is the undo record a dead writer left, until the store has
    repaired what it describes; ``writable`` is false when the lock file
    could only be opened for reading (locked, but holding no record).
    """

    directory: Path
    fd: int
    key: tuple[int, int]
    owner: int
    header: int = 0
    writable: bool = True
    found: bytes | None = None
    users: int = 0
    # A record was cleared without a sync: it could reappear after a power
    # loss, so it is synced away before the file it describes is replaced.
    unsynced_clear: bool = False
    # The lock file was created by this writer and its name is not yet synced
    # into the directory: nothing relies on it until an undo record is
    # written, so the directory is synced then (a save that writes no record,
    # as every save of a new conversation, pays no sync for its lock).
    unsynced_entry: bool = False

    def write_record(self, record: bytes) -> None:
        """Put ``record`` (one line) after the pid line, durably."""
        write_all(self.fd, record, self.header)
        os.ftruncate(self.fd, self.header + len(record))
        os.fsync(self.fd)
        if self.unsynced_entry:
            _sync_new_entry(self.directory)
            self.unsynced_entry = False

    def clear_record(self, *, durably: bool = False) -> None:
        """Remove the undo record (synced only when ``durably``: see ``unsynced_clear``)."""
        os.ftruncate(self.fd, self.header)
        self.found = None
        if durably:
            os.fsync(self.fd)
        self.unsynced_clear = not durably

    def settle(self) -> None:
        """Make a record's removal durable, if it is not yet."""
        if self.unsynced_clear:
            os.fsync(self.fd)
            self.unsynced_clear = False


_HELD: dict[tuple[int, int], WriterLock] = {}
_GUARD = threading.Lock()
# Releases waiting for _GUARD. A release may come from a finalizer, which the
# garbage collector can run anywhere, even in this module while it holds
# _GUARD: it must never wait for the guard (that would deadlock), so it
# queues the release and carries out what is queued only if the guard is
# free; whoever holds the guard carries it out on letting go.
_PENDING: collections.deque[WriterLock] = collections.deque()


def acquire(directory: Path, *, create: bool) -> WriterLock | None:
    """Take (or share, within this process) the writer lock of ``directory``.

    Without ``create``, a directory with no lock file has nothing to take
    (``None``). ``None`` too when the lock file cannot be opened for want of
    permission (see the module's docstring). Raises
    :class:`ConversationLockedError` when another process holds it, and
    :class:`StreamFormatError` when the lock file is a link or not a file.
    """
    path = directory / LOCK_FILE
    opened = _open(path, create=create)
    if opened is None:
        return None
    fd, writable, created = opened
    try:
        key = _key(path, fd)
    except BaseException:
        os.close(fd)
        raise
    try:
        with _GUARD:
            while _PENDING:  # a use given up may be the last of the lock wanted here
                _release_now(_PENDING.popleft())
            lock, fresh = _take(directory, fd, key, writable=writable, created=created)
    finally:
        _settle_pending()
    if fresh:
        # Taken over, maybe from a writer that died: the tools it left running
        # are stopped before this one runs any (coordinator/store/_running.py).
        try:
            stop_leftovers(directory)
        except BaseException:
            # Interrupted (Ctrl-C while it waits for a group to go): the caller
            # never gets the lock to let go of, and this process would keep it.
            release(lock)
            raise
    return lock


def _take(
    directory: Path, fd: int, key: tuple[int, int], *, writable: bool, created: bool
) -> tuple[WriterLock, bool]:
    """Share the lock this process holds on ``key``, or take it with ``fd`` (then fresh).

    ``fd`` is closed unless it becomes the lock's.
    """
    try:
        _drop_inherited()
        held = _HELD.get(key)
        if held is not None:
            held.users += 1
            os.close(fd)
            return held, False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConversationLockedError(directory, _holder(fd)) from None
        lock = WriterLock(directory, fd, key, os.getpid(), writable=writable, users=1)
        _claim(lock, created=created)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    _HELD[key] = lock
    return lock, True


def _key(path: Path, fd: int) -> tuple[int, int]:
    """The lock file's device and inode; refused unless it is a regular file."""
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        kind = file_kind(status.st_mode)
        raise StreamFormatError(path, f"is not a regular file but {kind}; cannot lock with it")
    return status.st_dev, status.st_ino


def release(lock: WriterLock) -> None:
    """Give up one use of ``lock``; the last closes it, which releases it.

    Safe to call from a finalizer (see ``_PENDING``).
    """
    _PENDING.append(lock)
    _settle_pending()


def _settle_pending() -> None:
    """Carry out the queued releases, unless someone holds the guard (who then does)."""
    while _PENDING:
        if not _GUARD.acquire(blocking=False):
            return
        try:
            while _PENDING:
                _release_now(_PENDING.popleft())
        finally:
            _GUARD.release()


def _release_now(lock: WriterLock) -> None:
    lock.users -= 1
    if lock.users > 0 or _HELD.get(lock.key) is not lock:
        return
    del _HELD[lock.key]
    with contextlib.suppress(OSError):
        lock.settle()
    with contextlib.suppress(OSError):
        _unname(lock)  # before closing: no other writer can have the file yet
    with contextlib.suppress(OSError):
        os.close(lock.fd)


def _unname(lock: WriterLock) -> None:
    """Empty the pid line of the lock file this process is letting go of.

    Only this process's own pid is removed: a child forked from the writer
    ends without touching its parent's. An undo record still there (an
    append that could not be put back) stays where it is, byte for byte:
    the pid is overwritten with blanks rather than the record moved, so that
    a crash while letting go leaves a whole record. Not synced: after a power
    loss the pid may come back, as it would have stayed before.
    """
    if not lock.writable or lock.owner != os.getpid():
        return
    content = os.pread(lock.fd, _READ_AT_MOST, 0)
    line = f"{lock.owner}\n".encode()
    if content == line:
        os.ftruncate(lock.fd, 0)
    elif content.startswith(line):
        write_all(lock.fd, b" " * (len(line) - 1), 0)


def read_record(directory: Path) -> bytes | None:
    """The undo record in ``directory``'s lock file, if a whole one is there (for readers)."""
    return read_small_file(
        directory / LOCK_FILE, lambda fd, _: _record_of(os.pread(fd, _READ_AT_MOST, 0))
    )


def _record_of(content: bytes) -> bytes | None:
    """The second line of ``content``, when it is whole (a torn record was never acted on)."""
    _, _, rest = content.partition(b"\n")
    record, newline, _ = rest.partition(b"\n")
    return record + newline if newline and record else None


def _open(path: Path, *, create: bool) -> tuple[int, bool, bool] | None:
    """The lock file open (descriptor, opened for writing, created now), or ``None``."""
    flags = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        if create:
            try:
                return os.open(path, flags | os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), True, True
            except FileExistsError:
                pass
        return os.open(path, flags | os.O_RDWR), True, False
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise StreamFormatError(path, "is a symbolic link; cannot lock with it") from None
        if error.errno not in _NO_LOCK:
            raise
    try:
        return os.open(path, flags | os.O_RDONLY), False, False  # flock needs no write access
    except OSError:
        return None


def _claim(lock: WriterLock, *, created: bool) -> None:
    """Write this process's pid on the first line, keeping a dead writer's undo record."""
    content = os.pread(lock.fd, _READ_AT_MOST, 0)
    lock.found = _record_of(content)
    line = f"{lock.owner}\n".encode()
    lock.header = len(line)
    if not lock.writable:
        return
    wanted = line + (lock.found or b"")
    if content != wanted:
        write_all(lock.fd, wanted, 0)
        os.ftruncate(lock.fd, len(wanted))
        if not created:
            # Synced, so that no record cleared before this writer came can
            # come back. A file created now held none: its pid line is for
            # the living (the OS shows it to them unsynced), and after a
            # power loss no process holds the lock whatever the file says.
            os.fsync(lock.fd)
    lock.unsynced_entry = created


def _sync_new_entry(directory: Path) -> None:
    """Make the new lock file's name durable (the undo record just written in it is relied on)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as error:
        # A directory that may be written but not read cannot be synced.
        _LOG.debug("%s: cannot be synced: %s", directory, os_reason(error))
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _holder(fd: int) -> int | None:
    """The pid on the lock file's first line, if it holds one (a lock let go holds none)."""
    first = os.pread(fd, 32, 0).partition(b"\n")[0]
    return int(first) if first.isdigit() else None


def holder_of(directory: Path) -> int | None:
    """The pid ``directory``'s lock file names, when it names a live process.

    For a refusal that names whoever made the directory: ``None`` when there
    is no lock file, when its holder let go of it (it names nobody), or when
    the process it names is gone (killed, it could not let go).
    """
    pid = read_small_file(directory / LOCK_FILE, lambda fd, _: _holder(fd))
    return pid if pid is not None and alive(pid) else None


def named_holder(pid: int | None) -> str:
    """The holder of a lock as an error names it."""
    return (
        "another process (its pid is not known)" if pid is None else f"another process (pid {pid})"
    )


def _drop_inherited() -> None:
    """Forget the locks a forked child inherited: they are its parent's."""
    pid = os.getpid()
    for key, lock in list(_HELD.items()):
        if lock.owner != pid:
            del _HELD[key]
            with contextlib.suppress(OSError):
                os.close(lock.fd)
