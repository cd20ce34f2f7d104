"""The tools a writer runs, noted beside its lock: the next writer stops what a dead one left.

Theory of operation: a local tool leads a process group of its own, which
its writer kills when it stops the tool (a cancel, a timeout, Ctrl-C). A
writer killed by SIGKILL (or a crash) stops nothing: its tools work on,
and a run that continues the turn would run the same open call beside the
one left running. So, while a tool runs, its writer notes the tool's group
in ``.inquiry.running`` beside the lock file (:class:`RunningTools`),
with what tells its leader from a process given the same pid later: the
leader's start time (``/proc/<pid>/stat``) and the boot it started in. When
a writer takes the directory's lock afresh (:func:`coordinator.store._lock.acquire`)
and the file names a holder that no longer runs, :func:`stop_leftovers`
kills (SIGKILL) every group it lists whose leader is still that same
process, waits for each group to be gone, and removes the file, before the
writer goes on; it logs a warning naming what it stopped.

Rules:

1. A group is killed only while its leader is the process that was
   noted: the same pid, start time and boot, checked just before the kill.
   A leader that exited has left its group, which its writer would not have
   stopped either; a pid in use again is another program's. The window left
   is the one between that check and the kill: nothing holds the pid
   meanwhile, but the leader, its writer dead, is reparented (to init, or a
   subreaper) and reaped as soon as it exits, and only then can its pid be
   given to another process. The pidfd taken before the check, where there
   is one, is how the kill waits for that leader to exit.
2. The holder's own groups are never touched while it runs (it may have let
   the lock go and still be at work), nor this process's.
3. Where there is no ``/proc`` (not Linux), nothing is noted, and so nothing
   stopped.
4. The file is bookkeeping: failing to write, read or remove it never fails
   a tool or a save. It is replaced without a sync: a crash of the machine
   ends the processes too, and a new boot voids the record.
5. Only a record this user wrote is acted on: one owned by another user
   (who may write the directory) is left alone, so that nobody can list a
   process group of this user's for the next writer to kill. Its pids must
   be pids (positive, within ``pid_t``), or it is no record at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

import orjson

from coordinator._errors import os_reason
from coordinator.store._atomic import temp_beside, write_all
from coordinator.store._files import read_small_file

__all__ = ["RUNNING_FILE", "RunningTools", "stop_leftovers"]

_LOG = logging.getLogger("coordinator")

RUNNING_FILE = ".inquiry.running"
#: The most of the file read: it lists the tools running at once.
_READ_AT_MOST = 1 << 20
#: Beyond the largest pid (``pid_t`` is 32 bits): a number noted from here on names no process.
_PID_BEYOND = 1 << 31
#: How long a killed group is waited for before the writer goes on regardless.
STOP_WAIT = 5.0
#: ``/proc/<pid>/stat`` fields, counted from the first after the name (field 3, the state).
_STATE, _PGRP, _START = 0, 5 - 3, 22 - 3
_PROC = Path("/proc")


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


class RunningTools:
    """The process groups of the tools this process runs for one conversation directory.

    :meth:`started` and :meth:`ended` are told of each tool's process (the
    leader of its group); the groups running are kept in the directory's
    :data:`RUNNING_FILE`, for the next writer should this one die.
    """

    def __init__(self, directory: Path) -> None:
        """Note the tools run for the conversation in ``directory``."""
        self._path = directory / RUNNING_FILE
        self._boot = _boot()
        self._pid = os.getpid()
        self._start = _start_time(self._pid)
        self._groups: dict[int, int] = {}

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
                    "groups": [{"pgid": g, "start": s} for g, s in self._groups.items()],
                }
            )
            # Not atomic_write: that syncs (rule 4 needs none, and a tool's start
            # waits for this) and writes through a link, where this file (anyone
            # who may write the directory may have made it one) must never be:
            # the temporary file is new (O_EXCL), and the rename replaces a link.
            temporary = temp_beside(self._path)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o644)
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


def stop_leftovers(directory: Path) -> None:
    """Stop the tools a dead writer of ``directory`` left running.

    Never raises of its own (an interruption, as Ctrl-C, goes through): what
    cannot be read or stopped is left as it is (logged at debug level).
    """
    path = directory / RUNNING_FILE
    record = _read(path)
    if record is None:
        return
    holder, boot, groups = record
    holder_pid, holder_start = holder
    if holder_pid == os.getpid():
        return  # this process's own tools (rule 2)
    same_boot = boot == _boot()
    if same_boot and _start_time(holder_pid) == holder_start:
        return  # the holder runs on: its tools are its own (rule 2)
    # Of another boot, every process noted is gone: the record is only removed.
    stopped = tuple(pgid for pgid, start in groups if same_boot and _stop(pgid, start))
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
            holder_pid,
            ", ".join(map(str, stopped)),
        )


def _read(path: Path) -> tuple[tuple[int, int], str, list[tuple[int, int]]] | None:
    """The record in ``path`` (holder, boot, groups), or ``None`` when there is none to use."""
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
        _LOG.debug("%s: written by another user (uid %d); left alone (rule 5)", path, owner)
        return None
    try:
        value: Any = orjson.loads(content)
        holder = (_pid(value["holder"]["pid"]), _int(value["holder"]["start"]))
        groups = [(_pid(group["pgid"]), _int(group["start"])) for group in value["groups"]]
        boot = _str(value["boot"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        _LOG.debug("%s: not a record of running tools (%r); left alone", path, error)
        return None
    return holder, boot, groups


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
        raise ValueError(value)  # else past _int, only to overflow in os.killpg (rule 5)
    return pid


def _stop(pgid: int, start: int) -> bool:
    """Kill the group ``pgid`` if its leader is the process that started at ``start``."""
    pinned = None
    # OverflowError too: a number beyond pid_t names no process to stop.
    with contextlib.suppress(OSError, OverflowError, AttributeError):
        # Taken before the check, so that once it passes, the pidfd is the
        # noted leader's, and the wait after the kill is for that leader's exit
        # (rule 1: it does not keep the pid from being reused).
        pinned = os.pidfd_open(pgid)
    try:
        if _start_time(pgid) != start:
            return False  # exited (its group is no longer the tool's), or another process now
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError as error:
            _LOG.debug("tool process group %d: not stopped: %s", pgid, os_reason(error))
            return False
        except OverflowError:
            _LOG.debug("tool process group %d: not stopped: no such pid", pgid)
            return False
        _wait_gone(pgid, pinned)
        return True
    finally:
        if pinned is not None:
            os.close(pinned)


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
            if fields[_PGRP] == str(pgid).encode() and fields[_STATE] not in (b"Z", b"X"):
                members.append(int(entry.name))
    return members
