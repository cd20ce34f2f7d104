"""The tools a writer runs, noted beside its lock, and what the next writer checks of them.

Theory of operation: a local tool runs under a guard that leads its process
group and kills that group when the writer dies
(:mod:`coordinator.adapters._tool_guard`), so a writer killed by SIGKILL
takes its tools with it. The guard acts a moment after the death, though,
and a writer that takes over at once (``inquiry run --continue-turn`` right
after a kill) must not run a call beside the run it replaces. So, while a
tool runs, its writer notes the tool's group in ``.inquiry.running`` beside
the lock file (:class:`RunningTools`), and a writer that takes the lock
afresh (:func:`coordinator.store._lock.acquire`) and finds a record of a
writer that no longer runs waits for those groups to be gone, killing
(SIGKILL) a group still there: :func:`stop_leftovers`.

The file is anyone's who may write the directory (copied, unpacked or
cloned with the conversation, or planted), so what it says directs nothing
by itself. A group is stopped only when its leader checks out as a tool of
the very run that wrote the record: the run gives its tools a token in
their environment (:data:`TOKEN_VARIABLE`, a random value of its own) and
notes only the token's SHA-256; the leader must run as this user (whose
``/proc/<pid>/environ`` only this user and root may read), hold that token
in its environment, lead its own group, in a session and group that are not
this process's, and have started when the record says, in this boot.
Nobody else knows the token: a forged record names processes whose
environment does not hold it, and is left alone. What is said is what
happened: a group is reported stopped only when a process of it was
running and was killed (a tool that had exited is not "stopped").

Rules:

1. The check is made just before the kill, with the leader pinned by a
   pidfd where there is one: between the two, the leader (its writer dead,
   reparented to init or a subreaper) can only exit, and its pid be given
   to another process once it is reaped; the kill is then of a group the
   pidfd shows has lost its leader, and is not made.
2. The holder's own groups are never touched while it runs (it may have let
   the lock go and still be at work), nor this process's group or session.
3. Where there is no ``/proc`` (not Linux), nothing is noted, and so nothing
   stopped here: the guard's watch is all there is.
4. The file is bookkeeping: failing to write or remove it never fails a tool
   or a save. It is replaced without a sync: a crash of the machine ends the
   processes too, and a new boot voids the record. It is written by its
   owner alone (mode ``0600``: the token's hash is nobody else's business).
5. Something that is not a regular file where the record should be (a
   directory, a FIFO, a link) is an error: the writer refuses to go on
   (:class:`~coordinator.store._files.LockFileError`, naming it), rather
   than silently stop nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import select
import signal
import stat
import time
from pathlib import Path
from typing import Any

import attrs
import orjson

from coordinator._errors import os_reason
from coordinator.store._atomic import temp_beside, write_all
from coordinator.store._files import LockFileError, file_kind, read_small_file

__all__ = ["RUNNING_FILE", "TOKEN_VARIABLE", "RunningTools", "stop_leftovers"]

_LOG = logging.getLogger("coordinator")

RUNNING_FILE = ".inquiry.running"
#: The environment variable that carries a run's token to each of its tools.
TOKEN_VARIABLE = "INQUIRY_RUN_TOKEN"  # noqa: S105 - its name; the value is made per run
#: The most of the file read: it lists the tools running at once.
_READ_AT_MOST = 1 << 20
#: The most of a process's environment read for the token.
_ENVIRON_AT_MOST = 1 << 20
#: Beyond the largest pid (``pid_t`` is 32 bits): a number noted from here on names no process.
_PID_BEYOND = 1 << 31
#: How long a killed group is waited for before the writer goes on regardless.
STOP_WAIT = 5.0
#: ``/proc/<pid>/stat`` fields, counted from the first after the name (field 3, the state).
_STATE, _PGRP, _SESSION, _START = 0, 5 - 3, 6 - 3, 22 - 3
_PROC = Path("/proc")
#: The states of a process that has ended (a zombie, not yet reaped) or is ending.
_ENDED = (b"Z", b"X")


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the name, or ``None`` (no such process)."""
    try:
        content = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The name, in parentheses, may hold anything, spaces and ")" included.
    return content.rpartition(b")")[2].split()


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), if it exists."""
    fields = _stat_fields(pid)
    try:
        return None if fields is None else int(fields[_START])
    except (IndexError, ValueError):
        return None


def _boot() -> str | None:
    """This boot's id (none without ``/proc``)."""
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip() or None
    except OSError:
        return None


def _digest(token: bytes) -> str:
    return hashlib.sha256(token).hexdigest()


class RunningTools:
    """The process groups of the tools this process runs for one conversation directory.

    :attr:`environment` is what each tool's environment gets (the run's
    token); :meth:`started` and :meth:`ended` are told of each tool's
    process (the leader of its group); the groups running are kept in the
    directory's :data:`RUNNING_FILE`, for the next writer should this one die.
    """

    def __init__(self, directory: Path) -> None:
        """Note the tools run for the conversation in ``directory``."""
        self._path = directory / RUNNING_FILE
        self._boot = _boot()
        self._pid = os.getpid()
        self._start = _start_time(self._pid)
        token = secrets.token_hex(16)
        self._token = _digest(token.encode())
        self.environment: dict[str, str] = {TOKEN_VARIABLE: token}
        self._groups: dict[int, int] = {}

    def __repr__(self) -> str:
        """The record's place, never the token."""
        return f"RunningTools({str(self._path)!r})"

    def started(self, pid: int) -> None:
        """The tool process ``pid`` (which leads its own group) has started."""
        if self._boot is None or self._start is None:
            return  # nothing could tell its leader from another later (rule 3)
        start = _start_time(pid)
        if start is not None:
            self._groups[pid] = start
            self._write()

    def ended(self, pid: int) -> None:
        """The tool process ``pid`` has exited, or been killed."""
        if self._groups.pop(pid, None) is not None:
            self._write()

    def _write(self) -> None:
        try:
            if not self._groups:
                self._path.unlink(missing_ok=True)
                return
            body = orjson.dumps(
                {
                    "holder": {"pid": self._pid, "start": self._start},
                    "boot": self._boot,
                    "token": self._token,
                    "groups": [{"pgid": g, "start": s} for g, s in self._groups.items()],
                }
            )
            # Not atomic_write: that syncs (rule 4 needs none, and a tool's start
            # waits for this) and writes through a link, where this file (anyone
            # who may write the directory may have made it one) must never be:
            # the temporary file is new (O_EXCL), and the rename replaces a link.
            temporary = temp_beside(self._path)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o600)
            try:
                try:
                    write_all(fd, body, 0)
                finally:
                    os.close(fd)
                temporary.replace(self._path)
            except BaseException:
                with contextlib.suppress(OSError):
                    temporary.unlink()
                raise
        except OSError as error:
            _LOG.debug("%s: not written: %s", self._path, os_reason(error))


@attrs.frozen
class _Record:
    """What ``.inquiry.running`` says: its writer, the boot, the token's hash, the groups."""

    holder: int
    holder_start: int
    boot: str
    token: str
    groups: tuple[tuple[int, int], ...]


def stop_leftovers(directory: Path) -> None:
    """Stop the tools a dead writer of ``directory`` left running, as its record shows them.

    Raises :class:`LockFileError` when something that is not a regular
    file is where the record should be (rule 5); otherwise never raises of
    its own (an interruption, as Ctrl-C, goes through): what cannot be read
    or checked is left as it is (logged at debug level).
    """
    path = directory / RUNNING_FILE
    _refuse_non_file(path)
    record = _read(path)
    if record is None:
        return
    if record.holder == os.getpid():
        return  # this process's own tools (rule 2)
    same_boot = record.boot == _boot()
    if same_boot and _start_time(record.holder) == record.holder_start:
        return  # the holder runs on: its tools are its own (rule 2)
    # Of another boot, every process noted is gone: the record is only removed.
    stopped = tuple(
        pgid for pgid, start in record.groups if same_boot and _stop(pgid, start, record.token)
    )
    with contextlib.suppress(OSError):
        path.unlink()
    if stopped:
        count = len(stopped)
        _LOG.warning(
            "%s: stopped %d tool process group%s a writer that died (pid %d) left running "
            "(led by pid %s), before going on",
            directory,
            count,
            "" if count == 1 else "s",
            record.holder,
            ", ".join(map(str, stopped)),
        )


def _refuse_non_file(path: Path) -> None:
    """Rule 5: refuse what is where the record should be, unless it is a regular file (or none)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise LockFileError(path, f"cannot be looked at: {os_reason(error)}") from error
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else file_kind(mode)
        raise LockFileError(
            path,
            f"is not a regular file but {kind}; not writing to this conversation (the record "
            "of running tools must be a file of its own: remove what is there)",
        )


def _read(path: Path) -> _Record | None:
    """The record in ``path``, or ``None`` when there is none to use."""
    try:
        found = read_small_file(
            path, lambda fd, status: (status.st_uid, os.read(fd, _READ_AT_MOST))
        )
    except OSError:
        return None
    if found is None:
        return None
    owner, content = found
    if owner != os.geteuid():
        _LOG.debug("%s: written by another user (uid %d); left alone", path, owner)
        return None
    try:
        value: Any = orjson.loads(content)
        return _Record(
            holder=_pid(value["holder"]["pid"]),
            holder_start=_int(value["holder"]["start"]),
            boot=_str(value["boot"]),
            token=_str(value["token"]),
            groups=tuple((_pid(group["pgid"]), _int(group["start"])) for group in value["groups"]),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        _LOG.debug("%s: not a record of running tools (%r); left alone", path, error)
        return None


def _str(value: object) -> str:
    if type(value) is not str:
        raise TypeError(value)
    return value


def _int(value: object) -> int:
    if type(value) is not int or value <= 0:
        raise ValueError(value)
    return value


def _pid(value: object) -> int:
    pid = _int(value)
    if pid >= _PID_BEYOND:
        raise ValueError(value)  # else past _int, only to overflow in os.killpg
    return pid


def _checks_out(pgid: int, start: int, token: str) -> bool:
    """Whether process ``pgid`` is a running tool of the run whose token hashes to ``token``.

    See the module's docstring: this user's, leading its group, outside this
    process's group and session, started at ``start``, its environment
    holding the token.
    """
    fields = _stat_fields(pgid)
    if fields is None or len(fields) <= _START or fields[_STATE] in _ENDED:
        return False  # gone, or ended: its group is no tool's to stop
    session = os.getsid(0)
    try:
        leads = int(fields[_PGRP]) == pgid
        outside = pgid not in (os.getpgrp(), session) and int(fields[_SESSION]) != session
        started = int(fields[_START]) == start
        ours = (_PROC / str(pgid)).stat().st_uid == os.geteuid()
    except (OSError, ValueError):
        return False
    return leads and outside and started and ours and _holds_token(pgid, token)


def _holds_token(pid: int, token: str) -> bool:
    """Whether process ``pid``'s environment holds :data:`TOKEN_VARIABLE` with the token hashed."""
    try:
        with (_PROC / str(pid) / "environ").open("rb") as environ:
            variables = environ.read(_ENVIRON_AT_MOST).split(b"\0")
    except OSError:
        return False  # another user's, or gone
    prefix = f"{TOKEN_VARIABLE}=".encode()
    return any(
        secrets.compare_digest(_digest(variable[len(prefix) :]), token)
        for variable in variables
        if variable.startswith(prefix)
    )


def _stop(pgid: int, start: int, token: str) -> bool:
    """Kill the group ``pgid`` if its leader checks out (see ``_checks_out``); whether it was."""
    pinned = None
    # OverflowError too: a number beyond pid_t names no process to stop.
    with contextlib.suppress(OSError, OverflowError, AttributeError):
        # Taken before the check, so that once it passes, the pidfd is the
        # checked leader's, and the wait after the kill is for that leader's exit.
        pinned = os.pidfd_open(pgid)
    try:
        if not _checks_out(pgid, start, token):
            return False
        if pinned is not None and not _still_there(pinned):
            return False  # exited (and reaped) between the check and now (rule 1)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (OSError, OverflowError) as error:
            _LOG.debug("tool process group %d: not stopped: %s", pgid, error)
            return False
        _wait_gone(pgid, pinned)
        return True
    finally:
        if pinned is not None:
            os.close(pinned)


def _still_there(pinned: int) -> bool:
    """Whether the process of the pidfd ``pinned`` has not been reaped."""
    try:
        signal.pidfd_send_signal(pinned, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists; whether this process may signal it, the kill will say
    return True


def _wait_gone(pgid: int, pinned: int | None) -> None:
    """Wait (at most :data:`STOP_WAIT`) until no process of group ``pgid`` runs."""
    deadline = time.monotonic() + STOP_WAIT
    if pinned is not None:
        with contextlib.suppress(OSError, ValueError):
            select.select([pinned], [], [], STOP_WAIT)  # readable once the leader has exited
    while time.monotonic() < deadline:
        if not _members(pgid):
            return
        time.sleep(0.01)
    _LOG.debug("tool process group %d: still running %g s after it was killed", pgid, STOP_WAIT)


def _members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that run (a zombie does not)."""
    members = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            fields = _stat_fields(int(entry.name))
            if fields is None or len(fields) <= _PGRP:
                continue
            if fields[_PGRP] == str(pgid).encode() and fields[_STATE] not in _ENDED:
                members.append(int(entry.name))
    return members
