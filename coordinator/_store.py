"""A conversation directory on disk.

Two layouts exist. The *current* one has ``base_config.json`` beside
``events.json`` and ``metadata.json``. The *legacy* one has no
``base_config.json``: the first entry of ``events.json`` is a ``config_delta``
holding the base configuration (in the oldest files flattened into the entry).
A conversation is saved in the layout it was loaded in. Files in the directory
that are not these three are never touched.

Saving replaces each file atomically, and only when its bytes change. It
refuses to overwrite a file it could not read, and a file that changed on disk
after it was loaded (another writer's work would be lost).
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from coordinator._atomic import atomic_write, remove_stale_temps
from coordinator._entries import ConfigDelta
from coordinator._errors import ConversationChangedError, StreamFormatError
from coordinator._event_ids import new_event_id
from coordinator._gc import collector_paused
from coordinator._json_read import loads_writable, read_file, writable
from coordinator._stream import ConversationStream
from coordinator._stream_codec import EntryDecodeError, IdRepairs, decode_entries
from machines import JsonValue

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

__all__ = [
    "Conversation",
    "Layout",
    "SaveResult",
    "dump_json",
    "load_conversation",
    "save_conversation",
]

EVENTS = "events.json"
METADATA = "metadata.json"
BASE_CONFIG = "base_config.json"


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


@attrs.define(eq=False)
class Conversation:
    """A conversation: its stream, metadata and base configuration.

    ``metadata`` is ``metadata.json`` (``None`` when there is none), kept as
    read. ``base_config`` is ``base_config.json`` in the current layout, and
    the first ``config_delta`` of the stream in the legacy one.
    """

    stream: ConversationStream
    metadata: dict[str, JsonValue] | None = None
    layout: Layout = Layout.CURRENT
    _base_config: dict[str, JsonValue] | None = attrs.field(default=None, alias="base_config")
    path: Path | None = None
    id_repairs: IdRepairs = attrs.field(factory=IdRepairs)
    _files: dict[Path, _FileState] = attrs.field(factory=dict, init=False, repr=False)
    _events_revision: dict[Path, int] = attrs.field(factory=dict, init=False, repr=False)
    # What we would write for metadata.json and base_config.json as they were
    # read: while the value still serializes to this, the file is left as it is
    # (its own formatting included).
    _loaded_dumps: dict[Path, bytes] = attrs.field(factory=dict, init=False, repr=False)

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
    def base_config(self) -> dict[str, JsonValue] | None:
        """The base configuration, wherever the layout keeps it."""
        if self.layout is Layout.CURRENT:
            return self._base_config
        first = self.stream[0] if len(self.stream) else None
        return dict(first.delta) if isinstance(first, ConfigDelta) else None


def dump_json(value: Any) -> bytes:
    """JP's on-disk JSON: 2-space indent, one trailing newline."""
    return _json_body(value) + _NEWLINE


def _json_body(value: Any) -> bytes:
    """:func:`dump_json` without its newline (the store writes it separately)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def _file_body(target: Path, value: Any) -> bytes:
    """What ``target`` must hold for ``value``; a value JSON cannot hold is refused, named.

    Records check their values, but a value built in memory can still be
    nested deeper than ``orjson`` writes (254 levels), and ``metadata`` is the
    caller's dict: rather than a bare ``TypeError``, say which file and entry.
    """
    try:
        return _json_body(value)
    except orjson.JSONEncodeError as error:
        problem = f"cannot be written ({error}); nothing was saved"
        raise StreamFormatError(target, problem, index=_unwritable_entry(value)) from None


def _unwritable_entry(value: Any) -> int | None:
    """The index of the first entry ``orjson`` cannot write, when ``value`` is a stream."""
    if type(value) is not list:
        return None
    return next((i for i, entry in enumerate(value) if not writable([entry])), None)


_NEWLINE = b"\n"


def _holds(current: bytes, body: bytes) -> bool:
    """Whether file bytes ``current`` are ``body`` and its newline (compared in place)."""
    return (
        len(current) == len(body) + 1 and current.endswith(_NEWLINE) and current.startswith(body)
    )


def _read_json(path: Path) -> tuple[Any, _FileState]:
    try:
        with path.open("rb") as handle:
            # Parsing allocates an object per JSON value and makes no cycles (see coordinator._gc).
            with collector_paused():
                value, can_write = read_file(handle)
            state = _FileState.of(os.fstat(handle.fileno()))
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {error.strerror or error}") from None
    except orjson.JSONDecodeError as error:
        raise StreamFormatError(path, f"is not valid JSON: {error}") from None
    if not can_write:
        _refuse_too_deep(path, value)
    return value, state


def _refuse_too_deep(path: Path, value: Any) -> None:
    """Refuse JSON nested deeper than can be written back (orjson writes 254 levels, reads 1024).

    Loading such a file would only defer the failure to the first save, as a
    bare ``TypeError``; the entry at fault is named when there is one.
    """
    index = _unwritable_entry(value)
    problem = "is nested too deeply to be written back"
    raise StreamFormatError(path, problem if index is None else f"entry {problem}", index=index)


def _kind(value: object) -> str:
    names: dict[type, str] = {dict: "an object", list: "an array"}
    return names.get(type(value), type(value).__name__)


def _resolve(path: Path | str) -> tuple[Path, Path]:
    """The conversation directory and its ``events.json``, from either path."""
    path = Path(path)
    if path.is_dir():
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
    """
    directory, events_path = _resolve(path)
    if not events_path.exists():
        raise StreamFormatError(events_path, "does not exist")
    raw, events_state = _read_json(events_path)
    if type(raw) is not list:
        raise StreamFormatError(events_path, f"must hold an array of entries, not {_kind(raw)}")
    try:
        stream, repairs = ConversationStream.from_wire(
            raw, origin=str(events_path), clock=clock, new_id=new_id
        )
    except EntryDecodeError as error:
        raise StreamFormatError(events_path, error.problem, index=error.index) from None

    states = {events_path: events_state}
    metadata = _load_object(directory / METADATA, states)
    base_config = _load_object(directory / BASE_CONFIG, states)
    conversation = Conversation(
        stream,
        metadata=metadata,
        layout=Layout.LEGACY if base_config is None else Layout.CURRENT,
        base_config=base_config,
        path=directory,
        id_repairs=repairs,
    )
    conversation._files.update(states)
    for loaded_path, value in (
        (directory / METADATA, metadata),
        (directory / BASE_CONFIG, base_config),
    ):
        if value is not None:
            conversation._loaded_dumps[loaded_path] = _json_body(value)
    if not repairs.total:
        # Ids added at load are not on disk yet: the next save must write them.
        conversation._events_revision[events_path] = stream.revision
    return conversation


def _load_object(path: Path, states: dict[Path, _FileState]) -> dict[str, JsonValue] | None:
    if not path.exists():
        return None
    value, state = _read_json(path)
    if type(value) is not dict:
        raise StreamFormatError(path, f"must hold an object, not {_kind(value)}")
    states[path] = state
    return value


@attrs.frozen
class SaveResult:
    """Which files a save wrote, and which it left alone because nothing changed."""

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]


def save_conversation(conversation: Conversation, path: Path | str | None = None) -> SaveResult:
    """Save ``conversation`` to ``path`` (by default where it was loaded from).

    ``path`` is the conversation directory or, as for loading, its ``events.json``.
    Each file is replaced atomically and only when its bytes change. Raises
    :class:`ConversationChangedError` if a file changed on disk since it was
    loaded, and :class:`StreamFormatError` rather than overwrite a file it
    cannot read.
    """
    if path is None:
        if conversation.path is None:
            raise ValueError("this conversation was never loaded or saved: give a path")
        path = conversation.path
    directory = Path(path)
    if directory.name == EVENTS and not directory.is_dir():
        directory = directory.parent  # the events.json path, as load_conversation accepts
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    unchanged: list[Path] = []

    files = _files(conversation, directory)
    # A value that cannot be written is refused before any file is written:
    # events.json is the first written, and the small files are checked now.
    for target, value, _, _ in files[1:]:
        _file_body(target, value())
    for target, value, revision, shape in files:
        if _save_file(conversation, target, value, revision, shape):
            written.append(target)
        else:
            unchanged.append(target)
        if revision is not None:
            conversation._events_revision[target] = revision
    if not written:
        # Each write clears what dead writers left; a save with nothing to write must too.
        remove_stale_temps(directory)
    conversation.path = directory
    return SaveResult(tuple(written), tuple(unchanged))


def _files(
    conversation: Conversation, directory: Path
) -> list[tuple[Path, Callable[[], Any], int | None, type]]:
    """Each file to save: where, its value (made on demand), the stream revision, its shape."""
    stream = conversation.stream
    files: list[tuple[Path, Callable[[], Any], int | None, type]] = [
        (directory / EVENTS, stream.to_wire, stream.revision, list)
    ]
    if conversation.layout is Layout.CURRENT and conversation.base_config is not None:
        config = conversation.base_config
        files.append((directory / BASE_CONFIG, lambda: config, None, dict))
    if conversation.metadata is not None:
        metadata = conversation.metadata
        files.append((directory / METADATA, lambda: metadata, None, dict))
    return files


def _save_file(
    conversation: Conversation,
    target: Path,
    value: Callable[[], Any],
    revision: int | None,
    shape: type,
) -> bool:
    known = conversation._files.get(target)
    try:
        state: _FileState | None = _FileState.of(target.stat())
    except FileNotFoundError:
        state = None

    if state is not None and state == known:
        # The file is exactly what we last read or wrote.
        if revision is not None and conversation._events_revision.get(target) == revision:
            return False
        body = _file_body(target, value())
        if body == conversation._loaded_dumps.get(target):
            return False  # the value is what was read: keep the file as it is
        if len(body) + 1 == state.size and _holds(target.read_bytes(), body):
            return False
    elif state is not None:
        current = target.read_bytes()
        body = _file_body(target, value())
        if _holds(current, body):
            conversation._files[target] = state
            return False
        if known is not None:
            raise ConversationChangedError(target)
        _refuse_unreadable(target, current, shape)
    else:
        body = _file_body(target, value())

    atomic_write(target, body, _NEWLINE)
    conversation._files[target] = _FileState.of(target.stat())
    conversation._loaded_dumps.pop(target, None)
    return True


def _refuse_unreadable(target: Path, current: bytes, shape: type) -> None:
    """Raise rather than overwrite a file that is not what it should be."""
    try:
        value, can_write = loads_writable(current)
    except orjson.JSONDecodeError as error:
        raise StreamFormatError(
            target, f"is not valid JSON ({error}); not overwriting it"
        ) from None
    if not can_write:
        raise StreamFormatError(target, "is nested too deeply to read; not overwriting it")
    if type(value) is not shape:
        raise StreamFormatError(
            target, f"holds {_kind(value)}, not {_kind(shape())}; not overwriting it"
        )
    if isinstance(value, list):
        # A stream whose entries cannot be read is not ours to replace either.
        try:
            decode_entries(value, new_id=new_event_id, origin=str(target))
        except EntryDecodeError as error:
            raise StreamFormatError(
                target, f"{error.problem}; not overwriting it", index=error.index
            ) from None
