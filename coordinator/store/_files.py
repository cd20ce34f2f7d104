"""Opening a conversation file so that what is not a file cannot hang or swamp a reader.

A conversation directory is data from anywhere: ``events.json`` may be a link
to ``/dev/zero`` (an endless read), a FIFO (a read that waits for a writer
forever), a directory, or a file larger than any conversation. Every file the
store reads is opened here, without blocking (``O_NONBLOCK``, so that opening
a FIFO returns at once), and its status is taken from the open descriptor
(``fstat``, so that what is checked is what is read, whatever the path is
changed to meanwhile). Anything but a regular file is refused, and so is a
regular file larger than :func:`max_file_size`: one line naming the file and
what it is.

The limit is 1 GiB unless the environment variable ``INQUIRY_MAX_FILE_SIZE``
says otherwise (a whole number of bytes). A million-entry conversation is
about half a gigabyte, and the store holds what it reads in memory: the limit
is there so that a hostile or broken file is refused before it is read, not
to bound what a real conversation may hold.

A file is read up to the size ``fstat`` gave, through :class:`FileReader`: a
file that grows while it is read is read as it was when opened.

The files ``inquiry run`` is given to read (the scenario, the answers file)
are read the same way, by :func:`read_regular`, under the same limit: a
scenario that is a link to ``/dev/zero`` or a FIFO is refused at once rather
than read for ever or waited on. A file copied in pieces rather than held in
memory (a workspace seed's) is opened by :func:`open_file`: checked, not
limited.

The store's own small files (the lock file, the record of running tools)
are read by :func:`read_small_file`: never through a link, and without
refusing anything aloud, since a reader of them only wants to know what they
say, if anything.
"""

from __future__ import annotations

import io
import os
import stat
from typing import TYPE_CHECKING, TypeVar

from coordinator._errors import ConfigError, StreamFormatError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from _typeshed import WriteableBuffer

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "MAX_FILE_SIZE_VARIABLE",
    "FileReader",
    "LockFileError",
    "file_kind",
    "max_file_size",
    "open_file",
    "open_regular",
    "read_regular",
    "read_small_file",
]

_T = TypeVar("_T")

#: The environment variable that sets the largest conversation file read, in bytes.
MAX_FILE_SIZE_VARIABLE = "INQUIRY_MAX_FILE_SIZE"
#: The largest conversation file read when the environment does not say: 1 GiB.
DEFAULT_MAX_FILE_SIZE = 1 << 30
#: The most of a wrong value an error quotes.
_QUOTED = 40

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class LockFileError(StreamFormatError):
    """A file of the store's own that no writer may trust: nothing was written.

    The lock file, or the record of running tools beside it, is not what
    the store makes (see :mod:`coordinator.store._lock`); the message names
    it and says why.
    """


def max_file_size() -> int:
    """The largest conversation file the store reads, in bytes (see the module's docstring)."""
    text = os.environ.get(MAX_FILE_SIZE_VARIABLE)
    if text is None:
        return DEFAULT_MAX_FILE_SIZE
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        shown = text if text.isprintable() and len(text) <= _QUOTED else ascii(text[:_QUOTED])
        raise ConfigError(
            "the environment",
            MAX_FILE_SIZE_VARIABLE,
            f"must be a whole number of bytes, not {shown!r}",
        )
    return value


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, said for a person (``a FIFO``)."""
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, *, what: str = "a conversation file") -> tuple[int, os.stat_result]:
    """Open ``path`` for reading, and its status: only a regular file within the size limit.

    Raises ``OSError`` as opening does (``FileNotFoundError`` included), and
    :class:`StreamFormatError` naming the file for anything else that is
    refused; ``what`` is what the file is, as the size refusal says it
    (``a conversation file``). The caller closes the descriptor.
    """
    fd, status = open_file(path)
    try:
        _refuse_larger(path, status, what)
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def open_file(path: Path) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading, without waiting, and its status: only a regular file.

    As :func:`open_regular`, whatever the file's size.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        _refuse_irregular(path, status)
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def read_regular(path: Path, *, what: str) -> bytes:
    """All of ``path``, opened as :func:`open_regular` opens it, up to the size it had then.

    Raises as :func:`open_regular` does, and ``OSError`` as reading does.
    """
    fd, status = open_regular(path, what=what)
    with FileReader(fd, status.st_size) as reader:
        return reader.readall()


def read_small_file(path: Path, read: Callable[[int, os.stat_result], _T]) -> _T | None:
    """``read`` of ``path`` open for reading and of its status; ``None`` unless it is a file.

    For the store's own files beside a conversation, which anyone who may
    write the directory may have replaced with anything: opened never blocking
    (a FIFO would wait for a writer for ever) and never through a link (which
    could lead to any file, another user's or a device), and handed to
    ``read`` only when what was opened is a regular file, as ``fstat`` says of
    the descriptor (what is checked is what is read). A file that cannot be
    opened is ``None`` too; ``OSError`` from ``fstat`` or ``read`` is raised.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        return read(fd, status) if stat.S_ISREG(status.st_mode) else None
    finally:
        os.close(fd)


def _refuse_irregular(path: Path, status: os.stat_result) -> None:
    """Refuse what is not a regular file."""
    if not stat.S_ISREG(status.st_mode):
        kind = file_kind(status.st_mode)
        raise StreamFormatError(path, f"is not a regular file but {kind}; not reading it")


def _refuse_larger(path: Path, status: os.stat_result, what: str) -> None:
    """Refuse a file larger than the limit."""
    limit = max_file_size()
    if status.st_size > limit:
        raise StreamFormatError(
            path,
            f"is {status.st_size} bytes, more than the {limit} {what} may "
            f"be (set {MAX_FILE_SIZE_VARIABLE} to allow more); not reading it",
        )


class FileReader(io.RawIOBase):
    """The first ``limit`` bytes of the file open on ``fd``, then ``suffix``.

    Seekable, so that a reader may go back to the start. It owns ``fd``:
    closing it closes the descriptor. The suffix is how a reader sees the
    version of ``events.json`` before an interrupted append (see
    :mod:`coordinator.store._append`) without writing it.
    """

    def __init__(self, fd: int, limit: int, suffix: bytes = b"") -> None:
        """Read ``fd`` up to ``limit``, then ``suffix``."""
        super().__init__()
        self._fd = fd
        self._limit = limit
        self._suffix = suffix
        self._position = 0

    @property
    def fd(self) -> int:
        """The descriptor read."""
        return self._fd

    def readable(self) -> bool:
        """It is."""
        return True

    def seekable(self) -> bool:
        """It is."""
        return True

    def tell(self) -> int:
        """Where the next read starts."""
        return self._position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move to ``offset`` from the start, the current position or the end."""
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._position}.get(
            whence, self._limit + len(self._suffix)
        )
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: WriteableBuffer) -> int:
        """Fill ``buffer`` from the current position; 0 at the end."""
        with memoryview(buffer) as view, view.cast("B") as target:
            wanted = len(target)
            if self._position < self._limit:
                # Straight into the caller's buffer: no copy of the file's bytes.
                room = target[: min(wanted, self._limit - self._position)]
                count = os.preadv(self._fd, [room], self._position)
                if not count:
                    # Cut short since it was opened: it ends here, without the suffix,
                    # so that what is read fails to parse and is read again.
                    self._limit, self._suffix = self._position, b""
            else:
                start = self._position - self._limit
                data = self._suffix[start : start + wanted]
                count = len(data)
                target[:count] = data
            self._position += count
            return count

    def readall(self) -> bytes:
        """Everything from the current position to the end, in one read of the file."""
        data = b""
        if self._position < self._limit:
            data = os.pread(self._fd, self._limit - self._position, self._position)
            self._position += len(data)
            if self._position < self._limit:  # cut short since it was opened (see readinto)
                self._limit, self._suffix = self._position, b""
        start = self._position - self._limit
        rest = self._suffix[start:]
        self._position += len(rest)
        return data + rest

    def close(self) -> None:
        """Close the descriptor (once)."""
        if not self.closed:
            os.close(self._fd)
        super().close()
