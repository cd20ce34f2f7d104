r"""Appending entries behind a log in the lock file: one sync where an append takes two.

An append in place (:mod:`coordinator.store._append`) syncs twice: its undo
record, then the file. That is what a save must do when it is to leave every
file on disk as it should be. A save that only has to keep its entries
(RFD 082's: a question's request before it is shown, its answer before the
tool runs again) can do with one: the entries go, with their bytes, into a
log after the lock file's pid line, which is synced, and into
``events.json``, which is not (:class:`Durability`).

The log. One line per save, each
``{"logged": {"device", "inode", "size", "new_size", "digest", "pid", "data"}}``:
``data`` is what the save appends (:func:`~coordinator.store._append.appended_bytes`:
``,``, the entries, ``\n]\n``) as a JSON string, ``size`` and ``new_size``
the file's sizes before and after it, ``digest`` the SHA-256 of ``data``;
the file is named by device and inode. Each line continues the one before
(its ``size`` is the other's ``new_size``).

The base. The first line's ``size`` is a size ``events.json`` had on disk,
synced: a save that wrote it whole, or an append, or a checkpoint synced it.
While the log lasts, nothing writes the file before ``size - 3``. Whatever a
crash leaves after that, the version to read is the file's bytes before it,
then each line's data in turn (the last three bytes of each replaced by the
next's): the file's own content when every write reached it, and the last
save whose line reached the disk when they did not.

Writing (:func:`log_append`, a save of appended entries only):

1. the line is appended to the lock file; a log's first line is synced at
   once (until it is on disk, nothing tells a reader where a torn tail
   begins);
2. the data is written into ``events.json`` at ``size - 3``, not synced: the
   file, as every process sees it, is always the whole new version, byte for
   byte what a full rewrite writes (JP reads it as it is);
3. a later line of a :attr:`Durability.LOGGED` save is synced now (with the
   data written first, a process killed between line and data has next to
   no time to be killed in); a :attr:`Durability.WRITTEN` save's is not.

A checkpoint (:func:`checkpoint`) syncs ``events.json`` and then clears the
log (not synced: a log that comes back after a power loss names the very
bytes the file then holds). A full save (:attr:`Durability.FILES`) made while
a log is there writes its entries as a line (unsynced) and checkpoints: one
sync. So does letting go of the lock, and a save whose line would take the
log past :data:`LOG_LIMIT`.

After a crash, readers read the version the log gives, in memory, writing
nothing; the next writer, at its first save, repairs the file on disk
(:func:`repair_log`): the log's version written at its base, the file cut
to its size, synced, the log cleared. What a log line holds is acted on
only as :mod:`coordinator.store._lock` trusts the lock file, and only when
it fits the file it names: the same device and inode, a chain of sizes the
file is long enough to hold, each line's data its digest's and shaped as
an append's. A line that does not fit ends the log there (a line torn by a
crash, or one after it); a log whose base the file is shorter than is
refused, never repaired.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs
import orjson

from coordinator._errors import StreamFormatError
from coordinator.store._append import TAIL, UndoRecord, appendable
from coordinator.store._atomic import write_all

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.store._lock import WriterLock

__all__ = [
    "LOG_LIMIT",
    "Durability",
    "LogLine",
    "checkpoint",
    "decode_log",
    "log_append",
    "log_version",
    "repair_log",
]

_LOG = logging.getLogger("coordinator")

#: The most a log holds, in bytes of its lines: a save past it checkpoints instead.
LOG_LIMIT = 256 * 1024


class Durability(enum.Enum):
    """What a save guarantees once it returns (``docs/storage.md`` lists each sync).

    ``FILES`` (the default): every file of the conversation is on disk as it
    should be, synced. ``LOGGED``: the entries appended are synced into the
    lock file's log, and in ``events.json`` as every process sees it; a power
    loss leaves a file the next load and save put right. ``WRITTEN``: as
    ``LOGGED``, without a sync when the log already has a line: the save
    survives the process's death, not a power loss. Only a save that just
    appends entries to the stream can be other than ``FILES``; any other
    change is saved as ``FILES`` saves it.
    """

    FILES = "files"
    LOGGED = "logged"
    WRITTEN = "written"


@attrs.frozen
class LogLine(UndoRecord):
    """One save's entries in the log: an undo record's fields, and the bytes appended."""

    KEY: ClassVar[str] = "logged"

    data: bytes

    def _fields(self) -> dict[str, Any]:
        return {**super()._fields(), "data": self.data.decode()}

    @classmethod
    def _made(cls, values: dict[str, Any]) -> Self:
        return cls(**{**values, "data": values["data"].encode()})

    def holds_together(self) -> bool:
        """Its sizes, digest and bytes agree, and the bytes are shaped as an append's."""
        return (
            self.new_size == self.start + len(self.data)
            and hashlib.sha256(self.data).hexdigest() == self.digest
            and _shaped_as_an_append(self.data)
        )


def _shaped_as_an_append(data: bytes) -> bool:
    """Whether ``data`` is what an append writes: a comma, entries, and the array's end."""
    if not data.startswith(b",") or not data.endswith(TAIL):
        return False
    try:
        value = orjson.loads(b"[" + data[1:])
    except orjson.JSONDecodeError:
        return False
    return type(value) is list and bool(value)


def decode_log(lines: list[bytes], status: os.stat_result) -> tuple[LogLine, ...]:
    """The log ``lines`` hold about the file of ``status``: up to a line that does not fit."""
    log: list[LogLine] = []
    for raw in lines:
        line = LogLine.decode(raw)
        if line is None or not line.describes(status):
            break
        if log and line.size != log[-1].new_size:
            break
        log.append(line)
    return tuple(log)


def _joined(log: tuple[LogLine, ...] | list[LogLine]) -> bytes:
    """What the log puts in the file from its base's start on."""
    return b"".join(line.data[: -len(TAIL)] for line in log[:-1]) + log[-1].data


def log_version(log: tuple[LogLine, ...], status: os.stat_result, path: Path) -> tuple[int, bytes]:
    """The version of the file to read: how many of its bytes, then what (the log's data).

    Raises :class:`StreamFormatError` when the file is shorter than the log's
    base: no save that logged could have left it so.
    """
    start = log[0].start
    if status.st_size < start:
        raise StreamFormatError(
            path,
            f"holds {status.st_size} bytes, fewer than the {start} its log (by process "
            f"{log[0].pid}) goes on from; not reading it (the log is in the lock file: "
            "remove its lines after the first if the file is as it should be)",
        )
    return start, _joined(log)


def log_append(
    lock: WriterLock,
    path: Path,
    expected: tuple[int, int, int],
    data: bytes,
    durability: Durability,
) -> os.stat_result | None:
    """Append ``data`` to ``path`` behind a log line (see the module's docstring); its new status.

    ``None``, with nothing written, when the file is not ``expected`` (size,
    mtime in nanoseconds, inode), does not end as JP's layout does, or the
    line would take the log past :data:`LOG_LIMIT`: the caller then saves
    as :attr:`Durability.FILES` does. With ``FILES``, the line is followed by
    a checkpoint. Raises ``OSError`` as writing does (the log then says what
    the file holds, or the line was never whole).
    """
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        status = appendable(fd, expected)
        if status is None:
            return None
        line = LogLine.of(status, data, data=data)
        encoded = line.encode()
        if lock.log_bytes + len(encoded) > LOG_LIMIT:
            if not lock.log_bytes:
                return None  # too much for a log at all: an append, which syncs twice
            checkpoint(lock, fd)  # the log is full: made durable, and begun again
        # A log's first line, the base, is on disk before the file's tail is
        # touched; a later line is synced after the data is written, so that a
        # process killed between the two has hardly a moment to be killed in.
        first = not lock.log_bytes
        lock.add_line(encoded, (status.st_dev, status.st_ino), sync=first)
        write_all(fd, data, line.start)
        if durability is Durability.FILES:
            checkpoint(lock, fd)
        elif durability is Durability.LOGGED and not first:
            lock.sync()
        return os.fstat(fd)
    finally:
        os.close(fd)


def checkpoint(lock: WriterLock, fd: int) -> None:
    """Sync the file open on ``fd``, then clear the log that led to it (unsynced)."""
    os.fsync(fd)
    lock.clear_record()


def repair_log(lock: WriterLock, path: Path) -> tuple[os.stat_result, os.stat_result] | None:
    """Put on disk the version the log a dead writer left (``lock.found``) gives.

    Returns the file's status before and after, or ``None`` when the log
    was about no file there (stale, or no log at all: cleared). Raises
    :class:`StreamFormatError` as :func:`log_version` does, leaving the file
    and the log.
    """
    lines = (lock.found or b"").splitlines(keepends=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        lock.clear_record(durably=True)
        return None
    try:
        before = os.fstat(fd)
        log = decode_log(lines, before)
        if not log:
            lock.clear_record(durably=True)
            return None
        start, suffix = log_version(log, before, path)
        if before.st_size != start + len(suffix) or os.pread(fd, len(suffix), start) != suffix:
            write_all(fd, suffix, start)
            os.ftruncate(fd, start + len(suffix))
            _LOG.warning(
                "%s: the entries a writer that died (process %d) had saved were not all in it; "
                "they were put back from its log",
                path,
                log[0].pid,
            )
        os.fsync(fd)
        lock.clear_record(durably=True)
        return before, os.fstat(fd)
    finally:
        os.close(fd)
