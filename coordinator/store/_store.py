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
"""

from __future__ import annotations

import enum
import io
import os
import stat
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import attrs
import orjson

from coordinator._errors import ConversationChangedError, StreamFormatError, os_reason
from coordinator.store._atomic import atomic_write, remove_stale_temps
from coordinator.stream._entries import ConfigDelta
from coordinator.stream._event_ids import new_event_id
from coordinator.stream._gc import collector_paused
from coordinator.stream._stream import ConversationStream
from coordinator.wire._json_read import (
    JsonTextError,
    invalid_utf8,
    loads_writable,
    read_file,
    unwritable_entry,
)
from coordinator.wire._stream_codec import (
    EntryDecodeError,
    IdRepairs,
    decode_entries,
    decode_stream,
    encode_entries,
)
from machines import JsonValue
from machines._json import is_json, json_fault, json_type

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
    # Which stream, at which revision, each events.json last held: the stream
    # itself is compared too, since one put in its place starts its own count.
    # Held weakly, so that a stream replaced is not kept alive until the next save.
    _events_revision: dict[Path, tuple[weakref.ref[ConversationStream], int]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    # What we would write for metadata.json and base_config.json as they were
    # last read or written: while the value still serializes to this, the file
    # is left as it is (its own formatting included).
    _loaded_dumps: dict[Path, bytes] = attrs.field(factory=dict, init=False, repr=False)
    # The file the stream was read from when it is not its directory's
    # events.json; it is never saved over that events.json.
    _stream_file: Path | None = attrs.field(default=None, init=False, repr=False)

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

        Its directory's three files, and the file its stream was read from when
        that is another (``backup.json``); none before it was loaded or saved.
        """
        if self.path is None:
            return ()
        own = tuple(self.path / name for name in (EVENTS, METADATA, BASE_CONFIG))
        return own if self._stream_file is None else (self._stream_file, *own)

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
        raise StreamFormatError(target, problem, index=unwritable_entry(value)) from None


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
    try:
        return path.read_bytes()
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from error


def _not_json(error: orjson.JSONDecodeError, handle: BinaryIO) -> str:
    """What is wrong with a text ``orjson`` refused, and where.

    ``orjson`` checks UTF-8 before parsing and puts that failure at the text's
    start, wherever the bad byte is: the byte is found and named instead.
    """
    return invalid_utf8(handle) or str(error)


def _read_json(path: Path) -> tuple[Any, _FileState]:
    try:
        with path.open("rb") as handle:
            try:
                # Parsing allocates an object per JSON value and makes no cycles
                # (see coordinator.stream._gc).
                with collector_paused():
                    value = read_file(handle)
            except orjson.JSONDecodeError as error:
                problem = f"is not valid JSON: {_not_json(error, handle)}"
                raise StreamFormatError(path, problem) from None
            except JsonTextError as error:
                # Nested too deeply, a repeated key, an integer beyond 64 bits:
                # what a save would not write back as read.
                raise StreamFormatError(path, error.problem, index=error.index) from None
            state = _FileState.of(os.fstat(handle.fileno()))
    except FileNotFoundError:
        raise StreamFormatError(path, "does not exist") from None
    except OSError as error:
        raise StreamFormatError(path, f"cannot be read: {os_reason(error)}") from None
    return value, state


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
    raw, events_state = _read_json(events_path)
    if type(raw) is not list:
        raise StreamFormatError(
            events_path, f"must hold an array of entries, not {json_type(raw)}"
        )
    try:
        stream, repairs = decode_stream(raw, origin=str(events_path), clock=clock, new_id=new_id)
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
    if events_path.name != EVENTS:
        conversation._stream_file = events_path
    conversation._files.update(states)
    for loaded_path, value in (
        (directory / METADATA, metadata),
        (directory / BASE_CONFIG, base_config),
    ):
        if value is not None:
            conversation._loaded_dumps[loaded_path] = _json_body(value)
    if not repairs.total:
        # Ids added at load are not on disk yet: the next save must write them.
        conversation._events_revision[events_path] = (weakref.ref(stream), stream.revision)
    return conversation


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
    """

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]


def save_conversation(conversation: Conversation, path: Path | str | None = None) -> SaveResult:
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

    Raises :class:`ConversationChangedError` if a file this save must write
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
    directory = Path(path)
    if directory.name == EVENTS and not _is_directory(directory):
        directory = directory.parent  # the events.json path, as load_conversation accepts
    _refuse_another_stream(conversation, directory)

    # Everything is decided before anything is written: a refusal leaves every file as it was.
    plans = [_plan_events(conversation, directory / EVENTS)]
    if conversation.layout is Layout.CURRENT:
        base_config = conversation.base_config
        plans.append(
            _plan_object(
                conversation, directory / BASE_CONFIG, {} if base_config is None else base_config
            )
        )
    if conversation.metadata is not None:
        plans.append(_plan_object(conversation, directory / METADATA, conversation.metadata))

    written: list[Path] = []
    unchanged: list[Path] = []
    for plan in plans:
        if plan.write and plan.body is not None:
            _write(directory, plan.target, plan.body, written)
            written.append(plan.target)
        else:
            unchanged.append(plan.target)
        _remember(conversation, plan)
    if not written:
        # Each write clears what dead writers left; a save with nothing to write must too.
        remove_stale_temps(directory)
    conversation.path = directory
    conversation._stream_file = None  # the stream is now this directory's events.json
    return SaveResult(tuple(written), tuple(unchanged))


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
    because it already holds ``body``. ``revision`` is the stream's revision,
    for ``events.json``.
    """

    target: Path
    body: bytes | None
    write: bool = False
    state: _FileState | None = None
    revision: int | None = None


def _plan_events(conversation: Conversation, target: Path) -> _Plan:
    stream = conversation.stream
    state = _state(target)
    saved = conversation._events_revision.get(target)
    if (
        state is not None
        and target in conversation._files
        and saved is not None
        and saved[0]() is stream
        and saved[1] == stream.revision
    ):
        return _Plan(target, None)
    body = _file_body(target, encode_entries(stream))  # not encode_stream(), which copies
    plan = _plan_body(conversation, target, body, state, list)
    plan.revision = stream.revision
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
        return _Plan(target, None)  # the value is what was read: keep the file as it is
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
        return _Plan(target, body, write=True)
    if state == conversation._files.get(target):
        # The file is exactly what we last read or wrote.
        if len(body) + 1 == state.size and _holds(_read_bytes(target), body):
            return _Plan(target, body, state=state)
        return _Plan(target, body, write=True)
    current = _read_bytes(target)
    if _holds(current, body):
        return _Plan(target, body, state=state)  # another writer wrote just our bytes
    if target in conversation._files:
        raise ConversationChangedError(target)
    _refuse_foreign(target, current, shape, body)
    return _Plan(target, body, write=True)  # our very value, laid out otherwise: nothing lost


def _write(directory: Path, target: Path, body: bytes, written: list[Path]) -> None:
    """Replace ``target`` with ``body``; an OS failure is said with the file's name.

    ``written`` are the files this save has written before, which the error names.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(target, body, _NEWLINE)
    except OSError as error:
        if written:
            names = ", ".join(path.name for path in written)
            saved = f"{names} {'was' if len(written) == 1 else 'were'} saved, the rest was not"
        else:
            saved = "nothing was saved"
        problem = f"cannot be written: {os_reason(error)}; {saved}"
        raise StreamFormatError(target, problem) from error


def _remember(conversation: Conversation, plan: _Plan) -> None:
    """Record what ``plan.target`` now holds, so that the next save knows it is ours."""
    if plan.body is None:
        return  # left as it was: what we knew of it still holds
    target = plan.target
    state = _state(target) if plan.write else plan.state
    if state is None:
        conversation._files.pop(target, None)
    else:
        conversation._files[target] = state
    if plan.revision is not None:
        conversation._events_revision[target] = (
            weakref.ref(conversation.stream),
            plan.revision,
        )
    else:
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
