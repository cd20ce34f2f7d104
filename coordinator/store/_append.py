r"""Appending entries to ``events.json`` in place, with an undo record.

A save whose only change since the last one is entries appended to the
stream writes just those entries, so that saving before each question costs
what the question adds, not the whole conversation. The file after the
append is byte for byte what a full rewrite would have written: JP's layout
is a 2-space-indented array whose last three bytes are ``\n]\n``, and an
entry is written the same at any index, so the new entries' text replaces
those three bytes (``,`` then the entries, then ``\n]\n`` again). The store
appends only to a file it wrote itself (or found holding exactly its bytes)
and that is, by size, mtime and inode, as it left it.

Theory of operation. The append changes bytes from ``size - 3`` on and
nothing before. Before it, an undo record (the file's device and inode, its
size before, its size after, the SHA-256 of the bytes written, the writer's
pid) is written to the lock file, after its pid line, and synced; then the
bytes are written and the file synced; then the record is cleared. The
writer holds the conversation's lock throughout, so no other writer comes
between. After a crash at any moment, the record says what to do:

- the record is torn (killed while writing it): the append never began; the
  file is as it was;
- the file has the size after and the written bytes' hash: the append is
  whole (killed after syncing it), this is the new version;
- the file's size is between the two: the append is partial (or its bytes
  did not all reach the disk); the old version is the file's first
  ``size - 3`` bytes and ``\n]\n``, bytes the append never touches;
- anything else (the file is shorter than it was, or longer than the append
  made it): the file is not as the append could have left it, and it is
  refused, naming the record, rather than read as either version.

A reader (who holds no lock) reads the version the record says, in memory,
writing nothing (:func:`version_to_read`). The next writer, at its first
save, repairs the file on disk (:func:`repair`): it puts the three bytes back and
truncates the file to its old size, or keeps a whole append, then clears the
record. So a torn append is never read as a broken file and never silently
taken for a whole one: it is undone. It is undone only once its writer is
gone, since a writer's lock is released only when it dies or closes.

A record whose device and inode are not those of ``events.json`` describes
a file since replaced (a full rewrite renames a new file into place): it is
ignored by readers and cleared by the next writer. A writer syncs a
cleared record away before any full rewrite, so that a stale record can never
come back after a power loss and name a later file that reuses the inode.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs
import orjson

from coordinator._errors import StreamFormatError, os_reason
from coordinator.store._atomic import write_all
from coordinator.store._lock import LOCK_FILE

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.store._lock import WriterLock

__all__ = [
    "TAIL",
    "UndoRecord",
    "append",
    "appendable",
    "appended_bytes",
    "repair",
    "version_to_read",
]

_LOG = logging.getLogger("coordinator")

#: How a file laid out as JP writes an array ends: where an append begins.
TAIL = b"\n]\n"


@attrs.frozen
class UndoRecord:
    """What an append in progress does to which file (see the module's docstring).

    A line of the lock file, ``{KEY: {...its fields...}}``; a
    :class:`~coordinator.store._log.LogLine` is one with the appended bytes
    as well.
    """

    #: What the line's one key is.
    KEY: ClassVar[str] = "append"

    device: int
    inode: int
    size: int
    new_size: int
    digest: str
    pid: int

    @classmethod
    def of(cls, status: os.stat_result, appended: bytes, **more: Any) -> Self:
        """The record of this process appending ``appended`` to the file of ``status``."""
        return cls(
            device=status.st_dev,
            inode=status.st_ino,
            size=status.st_size,
            new_size=status.st_size - len(TAIL) + len(appended),
            digest=hashlib.sha256(appended).hexdigest(),
            pid=os.getpid(),
            **more,
        )

    @property
    def start(self) -> int:
        """Where the append's bytes begin: every byte before is the old version's."""
        return self.size - len(TAIL)

    def encode(self) -> bytes:
        """The record as a line of the lock file."""
        return orjson.dumps({self.KEY: self._fields()}) + b"\n"

    def _fields(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def decode(cls, line: bytes) -> Self | None:
        """The record ``line`` holds, or ``None`` when it holds none that makes sense."""
        try:
            raw: Any = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        fields = raw.get(cls.KEY) if type(raw) is dict else None
        names = [field.name for field in attrs.fields(cls)]
        if type(fields) is not dict or sorted(fields) != sorted(names):
            return None
        values = {name: fields[name] for name in names}
        numbers = [value for name, value in values.items() if name not in _TEXTS]
        if any(type(value) is not int or value < 0 for value in numbers):
            return None
        if any(type(values[name]) is not str for name in _TEXTS if name in values):
            return None
        record = cls._made(values)
        return (
            record
            if len(TAIL) <= record.size < record.new_size and record.holds_together()
            else None
        )

    @classmethod
    def _made(cls, values: dict[str, Any]) -> Self:
        """The record of the values a line holds, checked for their types."""
        return cls(**values)

    def holds_together(self) -> bool:
        """Whether what the record says holds together (the sizes aside)."""
        return True

    def describes(self, status: os.stat_result) -> bool:
        """Whether this record is about the file of ``status``."""
        return (self.device, self.inode) == (status.st_dev, status.st_ino)


#: The fields of a record (or log line) that are text, not numbers.
_TEXTS = ("digest", "data")


def appended_bytes(entries_json: bytes) -> bytes:
    r"""What replaces a file's last three bytes to add the entries of ``entries_json``.

    ``entries_json`` is the new entries as a 2-space-indented array
    (``[\n  {...}\n]``): its items are laid out as they are inside the
    whole file's array.
    """
    return b"," + entries_json[1:] + b"\n"


def append(
    lock: WriterLock, path: Path, expected: tuple[int, int, int], data: bytes
) -> os.stat_result | None:
    """Append ``data`` (from :func:`appended_bytes`) to ``path`` under ``lock``; its new status.

    ``None``, with nothing written, when the file is not ``expected``
    (size, mtime in nanoseconds, inode) or does not end as JP's layout does:
    the caller then plans a full rewrite. An ``OSError`` while writing is
    raised once the file is put back as it was; should putting it back fail
    too, the undo record stays for the next writer, and the error says so.
    """
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        status = appendable(fd, expected)
        if status is None:
            return None
        record = UndoRecord.of(status, data)
        lock.write_record(record.encode())
        try:
            write_all(fd, data, record.start)
            os.fsync(fd)
        except OSError as error:
            _put_back(lock, fd, record, path, error)
            raise
        lock.clear_record()
        return os.fstat(fd)
    finally:
        os.close(fd)


def appendable(fd: int, expected: tuple[int, int, int]) -> os.stat_result | None:
    """The status of the file open on ``fd``, when it may be appended to; else ``None``.

    It must be a regular file that is ``expected`` (size, mtime in
    nanoseconds, inode), checked on the open file just before the append,
    and end as JP's layout does.
    """
    status = os.fstat(fd)
    if (
        not stat.S_ISREG(status.st_mode)
        or (status.st_size, status.st_mtime_ns, status.st_ino) != expected
        or status.st_size < len(TAIL)
        or os.pread(fd, len(TAIL), status.st_size - len(TAIL)) != TAIL
    ):
        return None
    return status


def _put_back(lock: WriterLock, fd: int, record: UndoRecord, path: Path, error: OSError) -> None:
    """Undo a failed append at once; if that fails too, say so (the record stays)."""
    try:
        _undo(fd, record)
        lock.clear_record()
    except OSError as again:
        problem = (
            f"cannot be written ({os_reason(error)}), nor put back as it was "
            f"({os_reason(again)}): the next load reads it as it was before this "
            f"save, and the next save puts that back (the undo record is in {LOCK_FILE})"
        )
        raise StreamFormatError(path, problem) from error


def _undo(fd: int, record: UndoRecord) -> None:
    """Put the file back as it was before the append ``record`` describes, durably."""
    write_all(fd, TAIL, record.start)
    os.ftruncate(fd, record.size)
    os.fsync(fd)


def version_to_read(
    record: UndoRecord, fd: int, status: os.stat_result, path: Path
) -> tuple[int, bytes]:
    """Which version of the file ``record`` describes to read: how many bytes, then what.

    ``(size, b"")`` for the file as it is (a whole append); ``(start,
    TAIL)`` for the version before a partial one. Raises
    :class:`StreamFormatError` for a file no append could have left.
    """
    size = status.st_size
    if size == record.new_size:
        written = os.pread(fd, size - record.start, record.start)
        if hashlib.sha256(written).hexdigest() == record.digest:
            return size, b""
    if record.start <= size <= record.new_size:
        return record.start, TAIL
    raise StreamFormatError(
        path,
        f"an append to it (by process {record.pid}) was interrupted, and it is not as "
        f"that append could have left it ({size} bytes, where {record.start} to "
        f"{record.new_size} were expected); not reading it (the undo record is in "
        f"{LOCK_FILE}: remove its second line if the file is as it should be)",
    )


def repair(lock: WriterLock, path: Path) -> tuple[os.stat_result, os.stat_result] | None:
    """Undo (or keep) the append a dead writer left, as :func:`version_to_read` reads it.

    Called with the lock just taken and its record found. Returns the
    file's status before and after, or ``None`` when the record was about
    no file there (stale, now cleared). Raises :class:`StreamFormatError`
    as :func:`version_to_read` does, leaving the file and the record.
    """
    record = UndoRecord.decode((lock.found or b"").partition(b"\n")[0])
    try:
        fd = None if record is None else os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        fd = None
    except OSError as error:
        problem = f"an append to it was interrupted, and it cannot be put back: {os_reason(error)}"
        raise StreamFormatError(path, problem) from error
    if record is None or fd is None:
        lock.clear_record(durably=True)
        return None
    try:
        before = os.fstat(fd)
        if not record.describes(before):
            lock.clear_record(durably=True)
            return None
        _, suffix = version_to_read(record, fd, before, path)
        if suffix:
            _undo(fd, record)
            _LOG.warning(
                "%s: an append by process %d was interrupted; it was undone", path, record.pid
            )
        lock.clear_record(durably=True)
        return before, os.fstat(fd)
    finally:
        os.close(fd)
