"""A conversation directory on disk.

Two layouts exist. The *current* one has ``base_config.json`` beside
``events.json`` and ``metadata.json``. The *legacy* one has no
``base_config.json``: the first entry of ``events.json`` is a ``config_delta``
holding the base configuration (in the oldest files flattened into the entry).
A conversation is saved in the layout it was loaded in. Files in the directory
that are not these three are never touched: a stream loaded from another file
of the directory (``backup.json``, say) is never saved over its
``events.json``.

Saving replaces each file atomically, and only when its bytes change. It
refuses to overwrite a file it could not read, and a file that changed on disk
after it was loaded (another writer's work would be lost). Every file is
checked, and every value made, before the first is written: a save that is
refused writes nothing. A file whose value in memory is still what was last
read from it or written to it is left alone, even if another program has
changed it since (it holds nothing of ours to lose). A file that is a
symbolic link is written through (:mod:`coordinator.store._atomic`).

How a file is written. ``metadata.json`` and ``base_config.json``, and
``events.json`` when anything but an append changed the stream, are replaced
whole and atomically. When the only change to the stream since this
conversation last wrote ``events.json`` is entries appended at its end, and
the file is as that write left it, just those entries are appended in place
(:mod:`coordinator.store._append`: the same bytes a rewrite would give, with
an undo record so that a crash leaves the old or the new version). A new
conversation appears whole or not at all (:mod:`coordinator.store._create`),
in a new directory or in place of an empty one. Written in place into a
directory that holds files (or an empty one that cannot be replaced, such as
the working directory), ``events.json`` comes last, and a directory holding
the lock file but no ``events.json`` is read as a conversation whose first
save did not finish: empty, with what of it was written, completed by the
next save.

Who writes. A save that writes takes the directory's writer lock
(:mod:`coordinator.store._lock`) and keeps it until the conversation is
closed (:meth:`Conversation.close`, or the end of ``with conversation:``),
garbage-collected, or its process ends; another process's save is refused
meanwhile, naming the holder. Loading takes no lock.

What is read. Every file is opened without blocking and must be a regular
file within the size limit (:mod:`coordinator.store._files`).
"""

from __future__ import annotations

import enum
import io
import logging
import os
import stat
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Self

import attrs
import orjson

from coordinator._errors import ConversationChangedError, StreamFormatError, os_reason
from coordinator.store._append import (
    UndoRecord,
    append,
    appended_bytes,
    repair,
    version_to_read,
)
from coordinator.store._atomic import UnsyncedError, alive, atomic_write, remove_stale_temps
from coordinator.store._create import create_directory
from coordinator.store._files import FileReader, open_regular, read_regular
from coordinator.store._lock import (
    LOCK_FILE,
    LockFileError,
    WriterLock,
    acquire,
    read_record,
    release,
    settle_log,
)
from coordinator.store._log import Durability, decode_log, log_append, log_version, repair_log
from coordinator.store._running import RUNNING_FILE
from coordinator.stream import ConfigDelta, ConversationStream, new_event_id
from coordinator.wire import (
    EntryDecodeError,
    IdRepairs,
    JsonTextError,
    decode_entries,
    decode_stream,
    encode_entries,
    invalid_utf8,
    loads_writable,
    read_file,
    unwritable_entry,
)
from machines import JsonValue, is_json, json_fault, json_type

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

__all__ = [
    "Conversation",
    "Durability",
    "Layout",
    "SaveResult",
    "dump_json",
    "load_conversation",
    "save_conversation",
]

_LOG = logging.getLogger("coordinator")

EVENTS = "events.json"
METADATA = "metadata.json"
BASE_CONFIG = "base_config.json"
#: How many times a file found changing while it was read is read again.
_READ_ATTEMPTS = 3


class Layout(enum.Enum):
    """How a conversation directory is laid out."""

    CURRENT = "current"
    LEGACY = "legacy"


@attrs.frozen
class _FileState:
    """What a file looked like when we last read or wrote it."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, stat: os.stat_result) -> _FileState:
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ino)


@attrs.frozen
class _StreamMark:
    """Which stream, at which revision and length, an ``events.json`` last held.

    The stream is held weakly, so that a stream replaced is not kept alive
    until the next save, and compared too, since one put in its place starts
    its own count. ``laid_out`` is whether the file's bytes are known to be
    exactly what the store writes for those entries (it wrote them, or found
    them there): only such a file is appended to.
    """

    stream: weakref.ref[ConversationStream]
    revision: int
    length: int
    laid_out: bool


@attrs.frozen
class _Targets:
    """A directory's three files, joined once: a save on the append path does little else."""

    directory: Path
    events: Path
    metadata: Path
    base_config: Path

    @classmethod
    def of(cls, directory: Path) -> _Targets:
        return cls(directory, directory / EVENTS, directory / METADATA, directory / BASE_CONFIG)


def _targets(conversation: Conversation, directory: Path) -> _Targets:
    """The files of ``directory``, as the conversation last joined them when it is the same."""
    known = conversation._targets
    if known is None or (known.directory is not directory and known.directory != directory):
        known = conversation._targets = _Targets.of(directory)
    return known


@attrs.define(eq=False)
class Conversation:
    """A conversation: its stream, metadata and base configuration.

    ``metadata`` is ``metadata.json`` (``None`` when there is none), kept as
    read. ``base_config`` is ``base_config.json`` in the current layout, and
    the first ``config_delta`` of the stream in the legacy one.

    Once a save of it has written to its directory, the conversation holds
    that directory's writer lock (another process's saves there are refused)
    until :meth:`close`, the end of ``with conversation:``, its collection, or
    the end of the process. ``with conversation:`` takes the lock at once.
    """

    stream: ConversationStream
    metadata: dict[str, JsonValue] | None = None
    layout: Layout = Layout.CURRENT
    _base_config: dict[str, JsonValue] | None = attrs.field(default=None, alias="base_config")
    path: Path | None = None
    id_repairs: IdRepairs = attrs.field(factory=IdRepairs)
    _files: dict[Path, _FileState] = attrs.field(factory=dict, init=False, repr=False)
    _events_mark: dict[Path, _StreamMark] = attrs.field(factory=dict, init=False, repr=False)
    # What we would write for metadata.json and base_config.json as they were
    # last read or written: while the value still serializes to this, the file
    # is left as it is (its own formatting included).
    _loaded_dumps: dict[Path, bytes] = attrs.field(factory=dict, init=False, repr=False)
    # The file the stream was read from when it is not its directory's
    # events.json; it is never saved over that events.json.
    _stream_file: Path | None = attrs.field(default=None, init=False, repr=False)
    # The writer lock this conversation holds, the directory it is for (device
    # and inode), and what releases it when the conversation is collected.
    _lock: WriterLock | None = attrs.field(default=None, init=False, repr=False)
    _lock_directory: tuple[int, int] | None = attrs.field(default=None, init=False, repr=False)
    _lock_release: weakref.finalize[Any, Any] | None = attrs.field(
        default=None, init=False, repr=False
    )
    _targets: _Targets | None = attrs.field(default=None, init=False, repr=False)

    @classmethod
    def new(
        cls,
        *,
        metadata: dict[str, JsonValue] | None = None,
        base_config: dict[str, JsonValue] | None = None,
        clock: Callable[[], datetime] | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> Conversation:
        """An empty conversation in the current layout."""
        return cls(
            ConversationStream(clock=clock, new_id=new_id),
            metadata=metadata,
            base_config=base_config,
        )

    @property
    def files(self) -> tuple[Path, ...]:
        """The files of this conversation where it was last loaded from or saved to.

        Its directory's three files, the store's own beside them (the lock
        file, the record of running tools), and the file its stream was read
        from when that is another (``backup.json``); none before it was
        loaded or saved. Nothing written on the conversation's behalf (an
        export) may replace one of them.
        """
        if self.path is None:
            return ()
        own = tuple(
            self.path / name for name in (EVENTS, METADATA, BASE_CONFIG, LOCK_FILE, RUNNING_FILE)
        )
        return own if self._stream_file is None else (self._stream_file, *own)

    @property
    def base_config(self) -> dict[str, JsonValue] | None:
        """The base configuration, wherever the layout keeps it."""
        if self.layout is Layout.CURRENT:
            return self._base_config
        first = self.stream[0] if len(self.stream) else None
        return dict(first.delta) if isinstance(first, ConfigDelta) else None

    def close(self) -> None:
        """Release the writer lock, if this conversation holds it.

        The conversation stays usable: its next save that writes takes the
        lock again (and is refused if another process has it meanwhile).
        """
        if self._lock_release is not None:
            self._lock_release()
        self._lock = self._lock_release = self._lock_directory = None

    def __enter__(self) -> Self:
        """Take the writer lock of the directory this conversation was loaded from or saved to.

        Raises :class:`~coordinator.store.ConversationLockedError` when
        another process holds it. A conversation never saved has no
        directory yet: its first save takes the lock. Nothing is written:
        what a dead writer left there (a torn append, a log) is put right by
        the first save.
        """
        if self.path is not None:
            _hold_lock(self, self.path, create=True, repair=False)
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the writer lock."""
        self.close()


def dump_json(value: Any) -> bytes:
    """JP's on-disk JSON: 2-space indent, one trailing newline."""
    return _json_body(value) + _NEWLINE


def _json_body(value: Any) -> bytes:
    """:func:`dump_json` without its newline (the store writes it separately)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def _file_body(target: Path, value: Any, *, first: int = 0) -> bytes:
    """What ``target`` must hold for ``value``; a value JSON cannot hold is refused, named.

    Records check their values, but a value built in memory can still be
    nested deeper than ``orjson`` writes (254 levels), and ``metadata`` is the
    caller's dict: rather than a bare ``TypeError``, say which file and entry.
    ``first`` is the index of ``value``'s first entry in the stream, when
    ``value`` is the entries to append.
    """
    try:
        return _json_body(value)
    except orjson.JSONEncodeError as error:
        problem = f"cannot be written ({error}); nothing was saved"
        index = unwritable_entry(value)
        raise StreamFormatError(
            target, problem, index=None if index is None else first + index
        ) from None


_NEWLINE = b"\n"


def _holds(current: bytes, body: bytes) -> bool:
    """Whether file bytes ``current`` are ``body`` and its newline (compared in place)."""
    return (
        len(current) == len(body) + 1 and current.endswith(_NEWLINE) and current.startswith(body)
    )


def _stat(path: Path) -> os.stat_result | None:
    """``path``'s status, through links; ``None`` when there is no such file.

    Any other failure (a directory that may not be searched, say) is an error
    naming the file, rather than an ``OSError`` the caller did not expect.
    """
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from error


def _state(path: Path) -> _FileState | None:
    status = _stat(path)
    return None if status is None else _FileState.of(status)


def _read_bytes(path: Path) -> bytes:
    """All of ``path``, as :func:`read_regular` reads it; a failure said as :func:`_open` says."""
    try:
        return read_regular(path, what="a conversation file")
    except FileNotFoundError:
        raise StreamFormatError(path, "does not exist") from None
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from error


def _open(path: Path) -> tuple[int, os.stat_result]:
    """``path`` open for reading: a regular file within the size limit, or an error naming it."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise StreamFormatError(path, "does not exist") from None
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from None


def _not_json(error: orjson.JSONDecodeError, handle: BinaryIO) -> str:
    """What is wrong with a text ``orjson`` refused, and where.

    ``orjson`` checks UTF-8 before parsing and puts that failure at the text's
    start, wherever the bad byte is: the byte is found and named instead.
    """
    return invalid_utf8(handle) or str(error)


def _read_json(path: Path, *, directory: Path | None = None) -> tuple[Any, _FileState]:
    """The JSON value of ``path`` and its state; for ``events.json``, ``directory`` is its own.

    ``events.json`` is read as its directory's undo record says, when it
    describes it (the version before an append that did not finish). Read
    without such a record and found not to be JSON, it is read again if it
    changed meanwhile: another process appended to it as it was read.
    """
    for attempt in range(1, _READ_ATTEMPTS + 1):
        fd, status = _open(path)
        try:
            limit, suffix, recorded = (
                (status.st_size, b"", False)
                if directory is None
                else _version_for(directory, fd, status, path)
            )
        except BaseException:
            os.close(fd)
            raise
        try:
            with io.BufferedReader(FileReader(fd, limit, suffix)) as handle:
                try:
                    value = read_file(handle)
                except orjson.JSONDecodeError as error:
                    if (
                        not recorded
                        and attempt < _READ_ATTEMPTS
                        and directory is not None
                        and _changing(fd, status, directory)
                    ):
                        continue
                    problem = f"is not valid JSON: {_not_json(error, handle)}"
                    raise StreamFormatError(path, problem) from None
                except JsonTextError as error:
                    # Nested too deeply, a repeated key, an integer beyond 64 bits:
                    # what a save would not write back as read.
                    raise StreamFormatError(path, error.problem, index=error.index) from None
        except OSError as error:
            raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from None
        return value, _FileState.of(status)
    raise AssertionError  # not reached: the last attempt returns or raises


def _changing(fd: int, status: os.stat_result, directory: Path) -> bool:
    """Whether the file open on ``fd`` was appended to since ``status`` (or is being)."""
    return os.fstat(fd).st_size != status.st_size or read_record(directory) is not None


def _version_for(
    directory: Path, fd: int, status: os.stat_result, path: Path
) -> tuple[int, bytes, bool]:
    """Which version of ``events.json`` (open on ``fd``) to read: its bytes up to, then what.

    As its directory's lock file says, when it holds an undo record or a log
    about this very file (see :mod:`~._append`, :mod:`~._log`); the last item
    is whether it did.
    """
    found = read_record(directory)
    lines = found.splitlines(keepends=True) if found is not None else []
    record = UndoRecord.decode(lines[0]) if lines else None
    if record is not None:
        if not record.describes(status):
            return status.st_size, b"", False
        limit, suffix = version_to_read(record, fd, status, path)
        if suffix and not alive(record.pid):
            _LOG.warning(
                "%s: an append by process %d was interrupted; reading the version before it "
                "(the next save puts that version back on disk)",
                path,
                record.pid,
            )
        return limit, suffix, True
    log = decode_log(lines, status)
    if not log:
        return status.st_size, b"", False
    limit, suffix = log_version(log, status, path)
    return limit, suffix, True


def _is_directory(path: Path) -> bool:
    status = _stat(path)
    return status is not None and stat.S_ISDIR(status.st_mode)


def _resolve(path: Path | str) -> tuple[Path, Path]:
    """The conversation directory and its ``events.json``, from either path."""
    path = Path(path)
    if _is_directory(path):
        return path, path / EVENTS
    return path.parent, path


def load_conversation(
    path: Path | str,
    *,
    clock: Callable[[], datetime] | None = None,
    new_id: Callable[[], str] | None = None,
) -> Conversation:
    """Load a conversation directory (or its ``events.json``).

    Raises :class:`StreamFormatError` naming the file, the entry and the
    problem when something cannot be read; nothing is written either way.

    A stream may be read from a file of another name (``backup.json``); its
    directory's ``metadata.json`` and ``base_config.json`` come with it. Such a
    conversation can be read, checked and exported, and saved to another
    directory, but never over its directory's ``events.json``, which holds
    another stream (see :func:`save_conversation`).
    """
    directory, events_path = _resolve(path)
    if events_path == directory / EVENTS and _stat(events_path) is None:
        return _without_events(directory, events_path, clock=clock, new_id=new_id)
    raw, events_state = _read_json(events_path, directory=directory)
    if type(raw) is not list:
        raise StreamFormatError(
            events_path, f"must hold an array of entries, not {json_type(raw)}"
        )
    try:
        stream, repairs = decode_stream(raw, origin=str(events_path), clock=clock, new_id=new_id)
    except EntryDecodeError as error:
        raise StreamFormatError(events_path, error.problem, index=error.index) from None

    conversation = _with_objects(
        directory, stream, {events_path: events_state}, id_repairs=repairs
    )
    if events_path.name != EVENTS:
        conversation._stream_file = events_path
    if not repairs.total:
        # Ids added at load are not on disk yet: the next save must write them.
        conversation._events_mark[events_path] = _StreamMark(
            weakref.ref(stream), stream.revision, len(stream), laid_out=False
        )
    return conversation


def _with_objects(
    directory: Path,
    stream: ConversationStream,
    states: dict[Path, _FileState],
    *,
    id_repairs: IdRepairs | None = None,
    layout: Layout | None = None,
) -> Conversation:
    """``stream`` with its directory's ``metadata.json`` and ``base_config.json``, as loaded."""
    metadata = _load_object(directory / METADATA, states)
    base_config = _load_object(directory / BASE_CONFIG, states)
    if layout is None:
        layout = Layout.LEGACY if base_config is None else Layout.CURRENT
    conversation = Conversation(
        stream,
        metadata=metadata,
        layout=layout,
        base_config=base_config,
        path=directory,
        id_repairs=id_repairs or IdRepairs(),
    )
    conversation._files.update(states)
    for loaded_path, value in (
        (directory / METADATA, metadata),
        (directory / BASE_CONFIG, base_config),
    ):
        if value is not None:
            conversation._loaded_dumps[loaded_path] = _json_body(value)
    return conversation


def _without_events(
    directory: Path,
    events_path: Path,
    *,
    clock: Callable[[], datetime] | None,
    new_id: Callable[[], str] | None,
) -> Conversation:
    """A directory without ``events.json``: not a conversation, or one whose first save was cut.

    The store writes a new conversation's ``events.json`` last, after taking
    the lock (whose file stays): a directory with the lock file and no
    ``events.json`` is such a conversation, read as the empty one it was
    being saved as, with whichever of its other files were written. It is
    in the current layout, as every new conversation is.
    """
    if os.path.lexists(events_path):
        raise StreamFormatError(events_path, "is a symbolic link to a file that does not exist")
    if not _is_directory(directory):
        raise StreamFormatError(events_path, "does not exist")
    if _stat(directory / LOCK_FILE) is None:
        raise StreamFormatError(directory, f"is not a conversation: it has no {EVENTS}")
    _LOG.warning(
        "%s: the first save of this conversation did not finish (it has no %s yet); "
        "read as the empty conversation it was, which the next save completes",
        directory,
        EVENTS,
    )
    stream = ConversationStream(clock=clock, new_id=new_id)
    return _with_objects(directory, stream, {}, layout=Layout.CURRENT)


def _load_object(path: Path, states: dict[Path, _FileState]) -> dict[str, JsonValue] | None:
    if _stat(path) is None:
        return None
    value, state = _read_json(path)
    if type(value) is not dict:
        raise StreamFormatError(path, f"must hold an object, not {json_type(value)}")
    states[path] = state
    return value


@attrs.frozen
class SaveResult:
    """Which files a save wrote, and which it left alone.

    A file is left alone when it already holds what the save would write, or
    when its value in memory has not changed since it was last read or
    written (another program's change to it since is then kept).
    ``appended`` are the files of ``written`` that had entries appended in
    place rather than being replaced (``events.json``, when that is all that
    changed).
    """

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]
    appended: tuple[Path, ...] = ()


def save_conversation(
    conversation: Conversation,
    path: Path | str | None = None,
    *,
    durability: Durability = Durability.FILES,
) -> SaveResult:
    """Save ``conversation`` to ``path`` (by default where it was last loaded from or saved to).

    ``path`` is the conversation directory or, as for loading, its ``events.json``.
    A save to another directory moves the conversation there, as "save as"
    does: the next save without a path goes there too. Each file is replaced
    atomically and only when its bytes change; a file that is a symbolic link
    is written through, the link kept. A file is only ever replaced when this
    conversation read or wrote it (or it holds just the bytes to write): an
    existing conversation at ``path`` that was not loaded is never
    overwritten. A conversation in the current layout without a base
    configuration gets an empty one (``{}``), since ``base_config.json`` is
    what marks the layout when it is loaded again. Every file is
    checked before the first is written, so a save that raises has written
    nothing (unless the OS fails one write after another succeeded, which the
    error then says). A file whose value in memory has not changed since it
    was last read or written is left alone, and does not stop the save even if
    another program has changed it since.

    When the only change to the stream since this conversation last wrote
    ``events.json`` is entries appended at its end, and the file is as it
    left it, those entries are appended in place: the same bytes, with the
    same crash guarantee (see :mod:`coordinator.store._append`). A new
    conversation's directory appears whole or not at all. A save that
    writes takes the directory's writer lock and keeps it (see
    :class:`Conversation`).

    ``durability`` says what the save guarantees when it returns
    (:class:`~coordinator.store._log.Durability`): by default every file is
    on disk as it should be, synced; a save that only appends entries can
    instead sync them into the lock file's log (``LOGGED``, one sync) or
    only write them there and into ``events.json`` (``WRITTEN``: it survives
    the process's death, not a power loss). The next default save, or
    letting go of the lock, syncs what such saves wrote.

    Raises :class:`~coordinator.store.ConversationLockedError` when another
    process holds the directory's writer lock (nothing is written),
    :class:`ConversationChangedError` if a file this save must write
    changed on disk since it was loaded, and :class:`StreamFormatError` rather
    than overwrite a file this conversation did not load or write (one it
    cannot read included), for a value JSON cannot hold (a NaN,
    a ``datetime`` in ``metadata``: the error names the file and the key), for
    a stream read from a file not named ``events.json`` (``backup.json``) saved
    into that same directory (its ``events.json`` holds another stream: save
    it to another directory), and when the OS refuses a write (the error names
    the file and the reason; the ``OSError`` is its ``__cause__``).
    """
    if path is None:
        if conversation.path is None:
            raise ValueError("this conversation was never loaded or saved: give a path")
        path = conversation.path
    directory = path if isinstance(path, Path) else Path(path)
    if directory.name == EVENTS and not _is_directory(directory):
        directory = directory.parent  # the events.json path, as load_conversation accepts
    _refuse_another_stream(conversation, directory)
    if not os.path.lexists(directory) or (
        _targets(conversation, directory).events not in conversation._files
        and _is_empty(directory)
    ):
        created = _create(conversation, directory)
        if created is not None:
            return created

    # Everything is decided before anything is written: a refusal leaves every file as it was.
    plans = _plans(conversation, directory, may_append=True)
    held = conversation._lock
    repairing = held is not None and held.found is not None
    lock = _lock_for(conversation, directory, plans)
    if lock is None or ((lock is not held or repairing) and _moved(plans)):
        # Appended to only under the lock, which holds the undo record or log;
        # and decided again if the lock was just taken (a dead writer's append
        # may have been put right meanwhile), should a file have changed.
        plans = _plans(conversation, directory, may_append=lock is not None)

    result = _carry_out(conversation, directory, plans, lock, durability)
    conversation.path = directory
    conversation._stream_file = None  # the stream is now this directory's events.json
    return result


def _carry_out(
    conversation: Conversation,
    directory: Path,
    plans: list[_Plan],
    lock: WriterLock | None,
    durability: Durability,
) -> SaveResult:
    """Write what ``plans`` say, in order, and remember what each file now holds."""
    written: list[Path] = []
    appended: list[Path] = []
    unchanged: list[Path] = []
    for planned in plans:
        plan = planned
        if plan.append is not None and lock is not None:
            status = _append(conversation, lock, plan, written, durability)
            if status is not None:
                written.append(plan.target)
                appended.append(plan.target)
                _remember(conversation, plan, status)
                continue
            # The file changed since it was planned (no lock keeps other programs out).
            plan = _plan_events(conversation, plan.target, may_append=False)
        if plan.write and plan.body is not None:
            if lock is not None and plan.target.name == EVENTS:
                # The file the log is about is synced before the log goes, and no
                # cleared record or log may come back to name the new file.
                settle_log(lock)
                lock.settle()
            _write(directory, plan.target, plan.body, written)
            written.append(plan.target)
        else:
            unchanged.append(plan.target)
        _remember(conversation, plan)
    if durability is Durability.FILES and lock is not None:
        settle_log(lock)  # every file on disk as it should be: what a log held too
    if not written:
        # Each write clears what dead writers left; a save with nothing to write must too.
        remove_stale_temps(directory)
    return SaveResult(tuple(written), tuple(unchanged), tuple(appended))


def _plans(conversation: Conversation, directory: Path, *, may_append: bool) -> list[_Plan]:
    """What the save does with each file: ``events.json`` first, or last when it is new.

    A new ``events.json`` comes last: written into a directory that exists,
    it is what makes the directory a whole conversation.
    """
    targets = _targets(conversation, directory)
    events = _plan_events(conversation, targets.events, may_append=may_append)
    plans: list[_Plan] = []
    if conversation.layout is Layout.CURRENT:
        base_config = conversation.base_config
        plans.append(
            _plan_object(
                conversation, targets.base_config, {} if base_config is None else base_config
            )
        )
    if conversation.metadata is not None:
        plans.append(_plan_object(conversation, targets.metadata, conversation.metadata))
    return [*plans, events] if events.seen is None else [events, *plans]


def _moved(plans: list[_Plan]) -> bool:
    """Whether a file changed since ``plans`` were made (before the lock was taken)."""
    return any(_state(plan.target) != plan.seen for plan in plans)


def _lock_for(
    conversation: Conversation, directory: Path, plans: list[_Plan]
) -> WriterLock | None:
    """The writer lock of ``directory``, taken when this save writes or the lock file exists.

    A save that writes nothing in a directory without a lock file creates
    none: it leaves the directory exactly as it was.
    """
    writes = any(plan.write or plan.append is not None for plan in plans)
    if writes:
        return _hold_lock(conversation, directory, create=True)
    if _stat(directory / LOCK_FILE) is None:
        return conversation._lock if conversation._lock_directory == _identity(directory) else None
    try:
        return _hold_lock(conversation, directory, create=False)
    except LockFileError as error:
        # Taken to repair what a dead writer left; a lock file no writer may
        # trust directs no repair, and a save that writes nothing needs no lock.
        _LOG.warning("%s (this save writes nothing, and repairs nothing)", error)
        return None


def _identity(directory: Path) -> tuple[int, int] | None:
    status = _stat(directory)
    return None if status is None else (status.st_dev, status.st_ino)


def _hold_lock(
    conversation: Conversation, directory: Path, *, create: bool, repair: bool = True
) -> WriterLock | None:
    """Make ``conversation`` hold ``directory``'s writer lock (see :mod:`~._lock`).

    With ``repair`` (a save), what a dead writer left there is put right
    first (an interrupted append undone, a log's entries put in the file);
    the conversation, if it had read the file as that writer left it, now
    knows the file as it is after. Without it (``with conversation:``, a
    claim), nothing is written: the first save repairs.
    """
    identity = _identity(directory)
    if conversation._lock is not None and conversation._lock_directory == identity:
        if repair and conversation._lock.found is not None:
            _repair(conversation, conversation._lock, directory / EVENTS)
        return conversation._lock
    try:
        lock = acquire(directory, create=create)
    except OSError as error:
        problem = f"cannot be written: {os_reason(error)}; nothing was saved"
        raise StreamFormatError(directory / LOCK_FILE, problem) from error
    if lock is None:
        return None
    try:
        if repair and lock.found is not None:
            _repair(conversation, lock, directory / EVENTS)
    except BaseException:
        release(lock)
        raise
    conversation.close()  # the lock of the directory it was in before, if any
    conversation._lock, conversation._lock_directory = lock, identity
    conversation._lock_release = weakref.finalize(conversation, release, lock)
    return lock


def _repair(conversation: Conversation, lock: WriterLock, events_path: Path) -> None:
    first = (lock.found or b"").partition(b"\n")[0]
    undo = UndoRecord.decode(first) is not None
    repaired = repair(lock, events_path) if undo else repair_log(lock, events_path)
    if repaired is None:
        return
    before, after = repaired
    if conversation._files.get(events_path) == _FileState.of(before):
        # This conversation read the file as the append left it, and so read
        # the version it now holds again (see version_to_read).
        conversation._files[events_path] = _FileState.of(after)


def _is_empty(directory: Path) -> bool:
    """Whether ``directory`` is a directory holding nothing (a new conversation may replace it)."""
    try:
        return next(directory.iterdir(), None) is None
    except OSError:
        return False


def _create(conversation: Conversation, directory: Path) -> SaveResult | None:
    """Save ``conversation`` as a new directory, whole or not at all (see :mod:`~._create`).

    ``None``, with nothing written, when ``directory`` is an empty directory
    that is written in place instead.
    """
    plans = _plans(conversation, directory, may_append=False)
    files = [(plan.target.name, (plan.body, _NEWLINE)) for plan in plans if plan.body is not None]
    try:
        lock = create_directory(directory, files)
    except OSError as error:
        problem = f"cannot be created: {os_reason(error)}; nothing was saved"
        raise StreamFormatError(directory, problem) from error
    if lock is None:
        return None
    conversation.close()
    conversation._lock, conversation._lock_directory = lock, _identity(directory)
    conversation._lock_release = weakref.finalize(conversation, release, lock)
    for plan in plans:
        _remember(conversation, plan)
    conversation.path = directory
    conversation._stream_file = None
    return SaveResult(tuple(plan.target for plan in plans), ())


def _refuse_another_stream(conversation: Conversation, directory: Path) -> None:
    """Refuse to save a stream read from ``backup.json`` (say) over its sibling ``events.json``.

    That file holds another stream, which the save would destroy; a copy
    saved to another directory is the way to keep both.
    """
    source = conversation._stream_file
    if source is None:
        return
    destination = directory / EVENTS
    if os.path.realpath(destination) == os.path.realpath(source):
        return  # a link named otherwise, to this very events.json
    if os.path.realpath(directory) != os.path.realpath(source.parent):
        return  # a copy, in another directory
    raise StreamFormatError(
        destination,
        f"is not the file this conversation's stream was read from ({source}); "
        "not overwriting it (save the conversation to another directory)",
    )


@attrs.define
class _Plan:
    """What a save does with one file, decided before any file is written.

    ``body`` is the file's JSON without its newline, ``None`` when the value in
    memory is what the file was last read or written as (the file is left
    alone, whatever another program has done to it since). ``write`` is
    whether the file is replaced; ``state`` is the file's, when it is left
    because it already holds ``body``. ``append`` is what to append instead,
    for ``events.json`` when only entries were added (``body`` is then
    ``None``). ``seen`` is the file's state when planned; ``mark`` is the
    stream's, for ``events.json``.
    """

    target: Path
    body: bytes | None
    seen: _FileState | None
    write: bool = False
    state: _FileState | None = None
    append: bytes | None = None
    mark: _StreamMark | None = None


def _plan_events(conversation: Conversation, target: Path, *, may_append: bool) -> _Plan:
    stream = conversation.stream
    state = _state(target)
    saved = conversation._events_mark.get(target)
    known = state is not None and target in conversation._files
    mark = _StreamMark(weakref.ref(stream), stream.revision, len(stream), laid_out=True)
    if known and saved is not None and saved.stream() is stream:
        if saved.revision == stream.revision:
            return _Plan(target, None, state)
        if (
            may_append
            and saved.laid_out
            and state == conversation._files[target]
            and stream.replaced_at <= saved.revision
            and 0 < saved.length < len(stream)
        ):
            added = _file_body(target, encode_entries(stream[saved.length :]), first=saved.length)
            return _Plan(target, None, state, append=appended_bytes(added), mark=mark)
    body = _file_body(target, encode_entries(stream))  # not encode_stream(), which copies
    plan = _plan_body(conversation, target, body, state, list)
    plan.mark = mark
    return plan


def _plan_object(conversation: Conversation, target: Path, value: Any) -> _Plan:
    _refuse_non_json(target, value)
    state = _state(target)
    body = _file_body(target, value)
    if (
        state is not None
        and target in conversation._files
        and conversation._loaded_dumps.get(target) == body
    ):
        return _Plan(target, None, state)  # the value is what was read: keep the file as it is
    return _plan_body(conversation, target, body, state, dict)


def _plan_body(
    conversation: Conversation,
    target: Path,
    body: bytes,
    state: _FileState | None,
    shape: type,
) -> _Plan:
    """Whether ``target`` must be replaced by ``body``, a value that changed in memory."""
    if state is None:
        return _Plan(target, body, state, write=True)
    if state == conversation._files.get(target):
        # The file is exactly what we last read or wrote.
        if len(body) + 1 == state.size and _holds(_read_bytes(target), body):
            return _Plan(target, body, state, state=state)
        return _Plan(target, body, state, write=True)
    current = _read_bytes(target)
    if _holds(current, body):
        return _Plan(target, body, state, state=state)  # another writer wrote just our bytes
    if target in conversation._files:
        raise ConversationChangedError(target)
    _refuse_foreign(target, current, shape, body)
    # Our very value, laid out otherwise: nothing lost.
    return _Plan(target, body, state, write=True)


def _write(directory: Path, target: Path, body: bytes, written: list[Path]) -> None:
    """Replace ``target`` with ``body``; an OS failure is said with the file's name.

    ``written`` are the files this save has written before, which the error names.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(target, body, _NEWLINE)
    except UnsyncedError as error:
        problem = (
            f"was written, but its directory could not be synced ({os_reason(error)}): "
            "the change may not survive a crash; the save stopped there"
        )
        raise StreamFormatError(target, problem) from error
    except OSError as error:
        raise StreamFormatError(target, _not_written(error, written)) from error


def _not_written(error: OSError, written: list[Path]) -> str:
    """Why a file cannot be written, and what this save wrote before (``written``)."""
    if written:
        names = ", ".join(path.name for path in written)
        saved = f"{names} {'was' if len(written) == 1 else 'were'} saved, the rest was not"
    else:
        saved = "nothing was saved"
    return f"cannot be written: {os_reason(error)}; {saved}"


def _append(
    conversation: Conversation,
    lock: WriterLock,
    plan: _Plan,
    written: list[Path],
    durability: Durability,
) -> os.stat_result | None:
    """Append ``plan``'s entries to its file; its new status, or ``None`` if it changed.

    Behind a log (:mod:`~._log`) when the save need not leave the file synced,
    or a log is there already (its checkpoint is the one sync a full save
    then needs); behind an undo record (:mod:`~._append`) otherwise, or when
    the entries are too much for a log.
    """
    seen, data = plan.seen, plan.append
    if seen is None or data is None:
        return None  # not planned as an append
    expected = (seen.size, seen.mtime_ns, seen.inode)
    try:
        if durability is not Durability.FILES or lock.log_bytes:
            status = log_append(lock, plan.target, expected, data, durability)
            if status is not None or lock.log_bytes:
                return status
        return append(lock, plan.target, expected, data)
    except OSError as error:
        # Put back as it was (or append() would have said otherwise): the same
        # bytes, under a new mtime, which must not pass for another's change.
        state = _state(plan.target)
        if state is not None:
            conversation._files[plan.target] = state
        raise StreamFormatError(plan.target, _not_written(error, written)) from error


def _remember(
    conversation: Conversation, plan: _Plan, status: os.stat_result | None = None
) -> None:
    """Record what ``plan.target`` now holds, so that the next save knows it is ours.

    ``status`` is the file's after an append.
    """
    if plan.body is None and plan.append is None:
        return  # left as it was: what we knew of it still holds
    target = plan.target
    if status is not None:
        state: _FileState | None = _FileState.of(status)
    else:
        state = _state(target) if plan.write else plan.state
    if state is None:
        conversation._files.pop(target, None)
    else:
        conversation._files[target] = state
    if plan.mark is not None:
        conversation._events_mark[target] = plan.mark
    elif plan.body is not None:
        conversation._loaded_dumps[target] = plan.body


def _refuse_non_json(target: Path, value: Any) -> None:
    """Refuse ``metadata`` or a base configuration JSON cannot hold, naming the file and key.

    ``orjson`` would write a NaN or an infinity as ``null``, and a ``datetime``
    or a ``UUID`` as a string, so that the file would read back as something
    else; a tuple, a set or a key that is not a string is not JSON either.
    Only the type is named, never the value.
    """
    if type(value) is dict and is_json(value):
        return
    if type(value) is not dict:
        problem = f"holds {json_type(value)}, not an object"
    else:
        problem = str(json_fault(value))
    raise StreamFormatError(target, f"cannot be written: {problem}; nothing was saved")


def _refuse_foreign(target: Path, current: bytes, shape: type, body: bytes) -> None:
    """Raise rather than overwrite ``target``, a file this conversation never read or wrote.

    Only a file holding the very value to be written (laid out otherwise)
    may be replaced: any other holds another conversation's record, which a
    save never destroys, whatever path it was given. The error says what is
    wrong with a file that cannot be read, too.
    """
    try:
        value, can_write = loads_writable(current)
    except orjson.JSONDecodeError as error:
        problem = _not_json(error, io.BytesIO(current))
        problem = f"is not valid JSON ({problem}); not overwriting it"
        raise StreamFormatError(target, problem) from None
    if not can_write:
        raise StreamFormatError(target, "is nested too deeply to read; not overwriting it")
    if type(value) is not shape:
        raise StreamFormatError(
            target, f"holds {json_type(value)}, not {json_type(shape())}; not overwriting it"
        )
    if _json_body(value) == body:
        return
    if isinstance(value, list):
        # Said first: a stream whose entries cannot be read is not ours either.
        try:
            decode_entries(value, new_id=new_event_id, origin=str(target))
        except EntryDecodeError as error:
            raise StreamFormatError(
                target, f"{error.problem}; not overwriting it", index=error.index
            ) from None
    raise StreamFormatError(
        target,
        "holds what this conversation was not loaded from; not overwriting it "
        "(load that conversation to change it, or save this one to another directory)",
    )
