"""One writer at a time: the lock file of a conversation directory.

A process that writes a conversation holds an exclusive ``flock`` on
``.inquiry.lock`` in its directory, a file holding the writer's pid on its
first line while it holds the lock. A second process that would write there
is refused with :class:`ConversationLockedError` rather than the last of two
writers silently winning. Released, the lock file names nobody (its first
line is emptied). The OS releases the lock when the descriptor is closed,
so a writer killed by any signal (``SIGKILL`` included) never blocks the
next one, and nothing is ever waited for: taking the lock either succeeds
at once or is refused.

Trust. A conversation directory is data from anywhere, and so is this file:
copied, unpacked or cloned with the conversation, or planted by another user
who may write the directory (a shared ``/tmp``). Its second line, an undo
record (:mod:`coordinator.store._append`), tells the next writer what to cut
from ``events.json``. So a writer uses the lock file only when it is a
regular file, with one link (a hard link, which ``tar`` and ``cp -a`` keep,
would make the record's writes land in another file), owned by the writer's
user, writable by nobody else, and opened for writing; anything else is
refused with :class:`LockFileError`, naming the file and why, before
anything is written. (A file of the writer's own that others may write, as
an older version left it under a ``002`` umask, is narrowed to ``go-w``
when it holds no record, and refused when it holds one.) A reader, which
writes nothing, acts on no record of a lock file it would not trust: it
warns and reads ``events.json`` as it is.

The pid a refusal names. The first line says who holds the lock, but anyone
may have written it: a refusal names that pid only when it is checked, that
is when the process runs as this user and holds a lock on this very file
(Linux's ``/proc/locks``); otherwise the holder is "another process (its
pid is not known)". Nothing the file says is ever signalled.

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

A writer that takes the lock afresh first looks at ``.inquiry.running``
beside it (:mod:`coordinator.store._running`), where a writer that died may
have left tools running: a non-file there is refused; the groups it lists
that check out as that writer's tools are stopped before this writer runs
any.

The lock file is never removed (removing a file someone may be locking
would let two writers hold two files of one name). It is an extra file to
any other reader of the directory (JP included), which ignores it; the store
ignores it when it loads. Its second line, when there is one, is the undo
record of an append in progress: written and synced before the append,
cleared after it.
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

from coordinator._errors import CoordinatorError, os_reason
from coordinator.store._atomic import write_all
from coordinator.store._files import LockFileError, file_kind, read_small_file
from coordinator.store._running import stop_leftovers

__all__ = [
    "LOCK_FILE",
    "ConversationLockedError",
    "LockFileError",
    "WriterLock",
    "acquire",
    "holder_of",
    "named_holder",
    "read_record",
    "release",
    "settle_log",
]

_LOG = logging.getLogger("coordinator")

LOCK_FILE = ".inquiry.lock"
#: The file whose appends the lock file's records and logs are about.
EVENTS = "events.json"
#: The most of a lock file read: a pid line, and an undo record or a log
#: (which ``coordinator.store._log.LOG_LIMIT`` keeps to a quarter of this).
_READ_AT_MOST = 1 << 20
#: The lock file's mode when created: others may read who writes it, nobody may write it.
_MODE = 0o644
#: The permission bits that let users other than the owner write a file.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
#: What creating the lock file may meet in a directory this writer may not write.
_CANNOT_CREATE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: Where Linux lists the processes, and the locks held (with the pid and the file of each).
_PROC = Path("/proc")
_PROC_LOCKS = _PROC / "locks"
#: The most digits a pid has (``pid_t`` is 32 bits): a longer number names no process.
_PID_DIGITS = 10


class ConversationLockedError(CoordinatorError):
    """Another process holds the conversation's writer lock: this save is refused.

    ``directory`` is the conversation's, ``pid`` the holder's when it is
    checked (see the module's docstring), ``None`` otherwise.
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

    ``header`` is the length of the pid line (an undo record, or a log,
    follows it: :mod:`coordinator.store._append`, :mod:`coordinator.store._log`);
    ``found`` is the lines a dead writer left there, until the store has
    repaired what they describe; ``log_bytes`` is the length of the log this
    process has written since the last checkpoint, and ``log_file`` the
    device and inode of the file it is about.
    """

    directory: Path
    fd: int
    key: tuple[int, int]
    owner: int
    header: int = 0
    found: bytes | None = None
    users: int = 0
    log_bytes: int = 0
    log_file: tuple[int, int] | None = None
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
        self.unsynced_clear = False  # the sync made whatever the file held before durable too
        if self.unsynced_entry:
            _sync_new_entry(self.directory)
            self.unsynced_entry = False

    def add_line(self, line: bytes, file: tuple[int, int], *, sync: bool) -> None:
        """Append ``line`` to the log after the pid line (about ``file``), synced if ``sync``."""
        write_all(self.fd, line, self.header + self.log_bytes)
        self.log_bytes += len(line)
        self.log_file = file
        if sync:
            os.fsync(self.fd)
            self.unsynced_clear = False
            if self.unsynced_entry:
                _sync_new_entry(self.directory)
                self.unsynced_entry = False

    def sync(self) -> None:
        """Make the log written so far durable."""
        os.fsync(self.fd)
        self.unsynced_clear = False

    def clear_record(self, *, durably: bool = False) -> None:
        """Remove the undo record or the log (synced when ``durably``: see ``unsynced_clear``)."""
        os.ftruncate(self.fd, self.header)
        self.found = None
        self.log_bytes = 0
        self.log_file = None
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
    (``None``); with it, ``None`` too when the lock file cannot be created
    for want of permission (no write there can succeed either). Raises
    :class:`ConversationLockedError` when another process holds it,
    :class:`LockFileError` when the lock file is not one a writer may trust
    (or ``.inquiry.running`` beside it is not a file), and ``OSError`` when
    it cannot be created.
    """
    path = directory / LOCK_FILE
    opened = _open(path, create=create)
    if opened is None:
        return None
    fd, created = opened
    try:
        key = _trusted(path, fd)
    except BaseException:
        os.close(fd)
        raise
    try:
        with _GUARD:
            while _PENDING:  # a use given up may be the last of the lock wanted here
                _release_now(_PENDING.popleft())
            lock, fresh = _take(directory, fd, key, created=created)
    finally:
        _settle_pending()
    if fresh:
        # Taken over, maybe from a writer that died: the tools it left running
        # are stopped before this one runs any (coordinator/store/_running.py).
        try:
            stop_leftovers(directory)
        except BaseException:
            # Refused, or interrupted (Ctrl-C while it waits for a group to go):
            # the caller never gets the lock to let go of, and this process would keep it.
            release(lock)
            raise
    return lock


def _take(
    directory: Path, fd: int, key: tuple[int, int], *, created: bool
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
            raise ConversationLockedError(directory, _checked(_holder(fd), os.fstat(fd))) from None
        lock = WriterLock(directory, fd, key, os.getpid(), users=1)
        _claim(lock, created=created)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    _HELD[key] = lock
    return lock, True


def _open(path: Path, *, create: bool) -> tuple[int, bool] | None:
    """The lock file open for writing, and whether it was created now; ``None`` if there is none.

    What cannot be opened for writing is refused: a lock this writer cannot
    take is no lock at all, and writing without one would let two writers in.
    """
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    if create:
        try:
            return os.open(path, flags | os.O_CREAT | os.O_EXCL, _MODE), True
        except FileExistsError:
            pass  # opened as it is, below, which says what is wrong with it
        except OSError as error:
            if error.errno in _CANNOT_CREATE:
                # A directory this writer may not create a file in (an existing
                # file is EEXIST whatever its mode): no lock, and no write of
                # this save can succeed there either, nor anyone's (it says so).
                return None
            raise
    try:
        return os.open(path, flags), False
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as error:
        raise LockFileError(path, _unopenable(path, error)) from None


def _unopenable(path: Path, error: OSError) -> str:
    """Why ``path`` could not be opened for writing, as a refusal says it."""
    try:
        status = path.lstat()
    except OSError:
        status = None
    mode = stat.S_IFREG if status is None else status.st_mode
    if stat.S_ISLNK(mode):
        return "is a symbolic link; cannot lock with it"
    if not stat.S_ISREG(mode):
        return f"is not a regular file but {file_kind(mode)}; cannot lock with it"
    if status is not None and status.st_uid != os.geteuid():
        return f"is owned by another user (uid {status.st_uid}); not writing with it ({_REMEDY})"
    return (
        f"cannot be opened for writing ({os_reason(error)}); not writing to this conversation "
        "without its lock (give the file back to its writer: chmod u+rw, or remove it)"
    )


def _trusted(path: Path, fd: int) -> tuple[int, int]:
    """The lock file's device and inode, once it is found to be one a writer may trust.

    Checked on the open descriptor: what is checked is what is locked and written.
    """
    status = os.fstat(fd)
    problem = _distrust(status)
    if problem is None and status.st_mode & _OTHERS_WRITE:
        if os.pread(fd, _READ_AT_MOST, 0).partition(b"\n")[2]:
            problem = (
                f"can be written by other users (mode {stat.S_IMODE(status.st_mode):04o}), "
                "and holds a record that any of them may have written"
            )
        else:
            # Ours, holding nothing to trust yet: narrowed, as a new one is made.
            os.fchmod(fd, stat.S_IMODE(status.st_mode) & ~_OTHERS_WRITE)
    if problem is not None:
        raise LockFileError(path, f"{problem}; not writing with it ({_REMEDY})")
    return status.st_dev, status.st_ino


#: What a refused lock file's error tells the person to do.
_REMEDY = "remove it if the conversation is yours, or save the conversation to another directory"


def _distrust(status: os.stat_result) -> str | None:
    """Why a lock file of ``status`` is not to be trusted, or ``None``."""
    if not stat.S_ISREG(status.st_mode):
        return f"is not a regular file but {file_kind(status.st_mode)}"
    if status.st_nlink != 1:
        return (
            f"has {status.st_nlink} links (another name shares its content, as a hard link "
            "that tar or cp -a kept)"
        )
    if status.st_uid != os.geteuid():
        return f"is owned by another user (uid {status.st_uid})"
    return None


def _claim(lock: WriterLock, *, created: bool) -> None:
    """Write this process's pid on the first line, keeping a dead writer's undo record."""
    content = os.pread(lock.fd, _READ_AT_MOST, 0)
    lock.found = _record_of(content)
    line = f"{lock.owner}\n".encode()
    lock.header = len(line)
    wanted = line + (lock.found or b"")
    if content != wanted:
        write_all(lock.fd, wanted, 0)
        os.ftruncate(lock.fd, len(wanted))
    # Not synced here: a record cleared before this writer came (by a writer
    # that never synced its removal) could come back after a power loss, but
    # nothing relies on its absence until the file it names is replaced,
    # which settles it first, or a record of this writer's is written, whose
    # sync covers it: one sync of the lock file where two were.
    lock.unsynced_clear = not created
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
    return int(first) if first.isdigit() and len(first) <= _PID_DIGITS else None


def _checked(pid: int | None, status: os.stat_result) -> int | None:
    """``pid`` when a process of this user by that pid holds a lock on the file of ``status``.

    What the lock file says is anyone's word; ``/proc/locks`` is the
    kernel's (Linux): ``N: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF``,
    the device in hexadecimal. Without it, no pid is checked, and none is named.
    """
    if pid is None:
        return None
    try:
        if (_PROC / str(pid)).stat().st_uid != os.geteuid():
            return None
        listing = _PROC_LOCKS.read_text(errors="replace")
    except (OSError, ValueError):
        return None
    device = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    for line in listing.splitlines():
        fields = line.split()
        # A process waiting for a lock is listed with "->" before the lock's kind.
        if fields[1:2] == ["FLOCK"] and fields[4:6] == [str(pid), device]:
            return pid
    return None


def holder_of(directory: Path) -> int | None:
    """The checked pid of the process holding ``directory``'s lock, for a refusal to name.

    ``None`` when there is no lock file, when it names nobody (its holder let
    go), or when what it names is not checked (see :func:`_checked`).
    """
    return read_small_file(directory / LOCK_FILE, lambda fd, status: _checked(_holder(fd), status))


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
    # Not settled: a record cleared unsynced names this very file, whole, should
    # it come back; only a writer replacing the file must settle it first, and does.
    try:
        settle_log(lock)
    except OSError as error:
        _LOG.debug("%s: its log was not checkpointed: %s", lock.directory, os_reason(error))
    with contextlib.suppress(OSError):
        _unname(lock)  # before closing: no other writer can have the file yet
    with contextlib.suppress(OSError):
        os.close(lock.fd)


def settle_log(lock: WriterLock) -> None:
    """Sync the file this process's log is about, then clear the log (see :mod:`~._log`).

    Left as it is when the file is not there any more, or is another: a
    later reader or writer reads the log for what it is worth.
    """
    if not lock.log_bytes or lock.log_file is None or lock.owner != os.getpid():
        return
    fd = os.open(lock.directory / EVENTS, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        status = os.fstat(fd)
        if (status.st_dev, status.st_ino) == lock.log_file:
            os.fsync(fd)
            lock.clear_record()
    finally:
        os.close(fd)


def _unname(lock: WriterLock) -> None:
    """Empty the pid line of the lock file this process is letting go of.

    Only this process's own pid is removed: a child forked from the writer
    ends without touching its parent's. An undo record still there (an
    append that could not be put back) stays where it is, byte for byte:
    the pid is overwritten with blanks rather than the record moved, so that
    a crash while letting go leaves a whole record. Not synced: after a power
    loss the pid may come back, as it would have stayed before.
    """
    if lock.owner != os.getpid():
        return
    content = os.pread(lock.fd, _READ_AT_MOST, 0)
    line = f"{lock.owner}\n".encode()
    if content == line:
        os.ftruncate(lock.fd, 0)
    elif content.startswith(line):
        write_all(lock.fd, b" " * (len(line) - 1), 0)


def read_record(directory: Path) -> bytes | None:
    """The lines after the pid line of ``directory``'s lock file, whole ones only (for readers).

    An undo record, or a log. A lock file a writer would not trust (see the
    module's docstring) is warned about when it holds any, which are then
    not acted on.
    """
    path = directory / LOCK_FILE
    return read_small_file(path, lambda fd, status: _record_to_read(path, fd, status))


def _record_to_read(path: Path, fd: int, status: os.stat_result) -> bytes | None:
    record = _record_of(os.pread(fd, _READ_AT_MOST, 0))
    if record is None:
        return None
    problem = _distrust(status)
    if problem is None and status.st_mode & _OTHERS_WRITE:
        problem = f"can be written by other users (mode {stat.S_IMODE(status.st_mode):04o})"
    if problem is None:
        return record
    _LOG.warning(
        "%s: %s; what it records is not acted on (events.json is read as it is)",
        path,
        problem,
    )
    return None


def _record_of(content: bytes) -> bytes | None:
    """The whole lines of ``content`` after its first (a torn last line is never acted on)."""
    _, _, rest = content.partition(b"\n")
    whole = rest[: rest.rfind(b"\n") + 1]
    return whole or None
