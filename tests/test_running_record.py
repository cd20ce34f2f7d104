"""The record of running tools (``.inquiry.running``): what the next writer trusts, and its file.

A writer that takes a conversation's lock afresh kills the tool process
groups a dead writer listed there. What it reads is anyone's who may write
the directory: a record another user owns, or one whose pids are no pids,
is left alone, and taking the lock goes through. Whatever interrupts the
stopping lets the lock go. The record is written whole, and a temporary
file its writer's death left behind is cleaned up as any other.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import CountingIds, FixedClock
from process_helpers import is_running, other_process_saves

import coordinator.store._lock
from coordinator import Conversation, load_conversation, save_conversation
from coordinator.store._lock import holder_of
from coordinator.store._running import RUNNING_FILE, RunningTools
from machines import ChatRequest, ChatResponse, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterator

#: What a pid cannot be: ``pid_t`` is 32 bits, and the OS calls overflow past it.
BEYOND_PID_T = [1 << 31, 1 << 40]


def _conversation(directory: Path) -> Path:
    """A conversation saved and let go (its lock file there, naming nobody)."""
    conversation = Conversation.new(base_config={}, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="hi"))
    save_conversation(conversation, directory)
    conversation.close()
    return directory


def _start_time(pid: int) -> int:
    """Process ``pid``'s start time, in clock ticks since boot (``/proc/<pid>/stat``)."""
    return int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[19])


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _noted(directory: Path, holder: int, *groups: tuple[int, int]) -> None:
    """Write the record of running tools a writer ``holder`` (started at 1) would have left."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    record = {
        "holder": {"pid": holder, "start": 1},
        "boot": boot,
        "groups": [{"pgid": pgid, "start": start} for pgid, start in groups],
    }
    (directory / RUNNING_FILE).write_text(json.dumps(record))


def _save_more(directory: Path) -> Conversation:
    """Load the conversation and save a message more (taking its lock afresh); still held."""
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("more"))
    save_conversation(conversation)
    return conversation


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading a group of its own, as a tool does (killed afterwards)."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


# ------------------------------------------------------ what is trusted


@pytest.mark.parametrize("pid", BEYOND_PID_T)
@pytest.mark.parametrize("where", ["pgid", "holder"])
def test_a_record_naming_a_number_beyond_any_pid_is_left_alone(
    tmp_path: Path, pid: int, where: str
) -> None:
    """No process can have it: the save goes through, the lock is let go after, the file stays."""
    directory = _conversation(tmp_path / "conv")
    if where == "pgid":
        _noted(directory, _dead_pid(), (pid, 1))
    else:
        _noted(directory, pid, (_dead_pid(), 1))
    conversation = _save_more(directory)
    assert holder_of(directory) == os.getpid()
    conversation.close()
    assert holder_of(directory) is None
    assert other_process_saves(directory) == "saved"
    assert (directory / RUNNING_FILE).exists()


def test_a_record_another_user_owns_is_left_alone(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """This user's group listed in a file another user owns is left; in one of ours, killed."""
    directory = _conversation(tmp_path / "conv")
    _noted(directory, _dead_pid(), (sleeper.pid, _start_time(sleeper.pid)))
    euid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: euid + 1)  # the file is now another user's
    _save_more(directory).close()
    assert is_running(sleeper.pid)
    assert (directory / RUNNING_FILE).exists()
    monkeypatch.undo()
    _save_more(directory).close()
    assert not is_running(sleeper.pid)
    assert not (directory / RUNNING_FILE).exists()


# ------------------------------------------------------ interrupted


def test_a_stop_interrupted_lets_the_lock_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a dead writer's tools are stopped: the save fails, nobody holds the lock."""
    directory = _conversation(tmp_path / "conv")

    def interrupted(_directory: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(coordinator.store._lock, "stop_leftovers", interrupted)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("interrupted"))
    with pytest.raises(KeyboardInterrupt):
        save_conversation(conversation)
    assert holder_of(directory) is None
    assert other_process_saves(directory) == "saved"
    monkeypatch.undo()
    _save_more(directory).close()  # and this process takes it afresh


# ------------------------------------------------------ the file


def test_the_record_is_written_whole_however_the_os_cuts_a_write(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write taking a few bytes only: the record still lists the group, then is removed."""
    directory = _conversation(tmp_path / "conv")
    real_pwrite = os.pwrite

    def short_pwrite(fd: int, data: Any, offset: int) -> int:
        return real_pwrite(fd, bytes(data[:5]), offset)

    monkeypatch.setattr(os, "pwrite", short_pwrite)
    running = RunningTools(directory)
    running.started(sleeper.pid)
    record = json.loads((directory / RUNNING_FILE).read_bytes())
    assert record["groups"] == [{"pgid": sleeper.pid, "start": _start_time(sleeper.pid)}]
    running.ended(sleeper.pid)
    assert sorted(path.name for path in directory.iterdir() if path.name.startswith(".")) == [
        ".inquiry.lock"
    ]


def test_a_record_its_writer_died_writing_is_cleaned_up_by_the_next_save(tmp_path: Path) -> None:
    """The temporary file of a writer killed before its rename is removed as any left is."""
    directory = _conversation(tmp_path / "conv")
    pid = os.fork()
    if pid == 0:  # the child: dies between writing the record and renaming it into place
        try:
            os.replace = lambda *_: os._exit(0)
            RunningTools(directory).started(os.getpid())
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    left = [path.name for path in directory.iterdir() if path.name.endswith(".tmp")]
    assert len(left) == 1
    assert left[0].startswith(f"..inquiry.running.{pid}.")
    _save_more(directory).close()
    assert not [path.name for path in directory.iterdir() if path.name.endswith(".tmp")]
