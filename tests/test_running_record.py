"""The record of running tools (``.inquiry.running``): what the next writer checks, and its file.

A writer that takes a conversation's lock afresh stops the tool process
groups a dead writer listed there, but only a group whose leader checks
out as a tool of that very run: this user's, leading its group outside the
writer's own group and session, started when noted, its environment holding
the run's token (whose hash alone the record holds). What the file names
otherwise (an unrelated process, the writer's own group, a number beyond
any pid, a tool that has exited) is left alone and never said to be
stopped. Something that is not a file where the record should be is an
error. Whatever interrupts the stopping lets the lock go; the record is
written whole, and a temporary file its writer's death left behind is
cleaned up as any other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import CountingIds, FixedClock
from process_helpers import PATIENCE, is_running, other_process_saves

import coordinator.store._files
import coordinator.store._lock
import coordinator.store._running
from coordinator import Conversation, StreamFormatError, load_conversation, save_conversation
from coordinator.store._lock import holder_of
from coordinator.store._running import RUNNING_FILE, TOKEN_VARIABLE, RunningTools
from machines import ChatRequest, ChatResponse, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterator

#: What a pid cannot be: ``pid_t`` is 32 bits, and the OS calls overflow past it.
BEYOND_PID_T = [1 << 31, 1 << 40]
#: The token a run gives its tools, in the tests' records (its hash is what is noted).
TOKEN = "0123456789abcdef0123456789abcdef"


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


def _noted(directory: Path, holder: int, *groups: tuple[int, int], token: str = TOKEN) -> None:
    """Write the record a writer ``holder`` (started at 1) of run ``token`` would have left."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    record = {
        "holder": {"pid": holder, "start": 1},
        "boot": boot,
        "token": hashlib.sha256(token.encode()).hexdigest(),
        "groups": [{"pgid": pgid, "start": start} for pgid, start in groups],
    }
    (directory / RUNNING_FILE).write_text(json.dumps(record))


def _save_more(directory: Path) -> Conversation:
    """Load the conversation and save a message more (taking its lock afresh); still held."""
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("more"))
    save_conversation(conversation)
    return conversation


def _sleeper(token: str | None) -> subprocess.Popen[bytes]:
    """A process leading a group of its own, as a tool's guard does, given ``token`` (if any)."""
    env = dict(os.environ)
    env.pop(TOKEN_VARIABLE, None)
    if token is not None:
        env[TOKEN_VARIABLE] = token
    return subprocess.Popen(["sleep", "60"], start_new_session=True, env=env)


@pytest.fixture
def tool() -> Iterator[subprocess.Popen[bytes]]:
    """A run's tool: its own group, the run's token in its environment (killed afterwards)."""
    process = _sleeper(TOKEN)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated ``setsid sleep`` of this user's: no run's token (killed afterwards)."""
    process = _sleeper(None)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


# ------------------------------------------------------ what is stopped


def test_a_dead_runs_tool_that_checks_out_is_stopped_and_said_to_be(
    tmp_path: Path, tool: subprocess.Popen[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    """Its leader as noted, its token in its environment: killed, the record removed, said."""
    directory = _conversation(tmp_path / "conv")
    _noted(directory, _dead_pid(), (tool.pid, _start_time(tool.pid)))
    _save_more(directory).close()
    assert not is_running(tool.pid)
    assert not (directory / RUNNING_FILE).exists()
    assert "stopped 1 tool process group a writer that died" in caplog.text
    assert f"(led by pid {tool.pid})" in caplog.text


def test_a_forged_record_naming_an_unrelated_process_signals_nothing(
    tmp_path: Path, stranger: subprocess.Popen[bytes], caplog: pytest.LogCaptureFixture
) -> None:
    """Pid, start time and boot id are anyone's to read: without the run's token, left alone."""
    directory = _conversation(tmp_path / "conv")
    _noted(directory, _dead_pid(), (stranger.pid, _start_time(stranger.pid)))
    _save_more(directory).close()
    assert is_running(stranger.pid)
    assert "stopped" not in caplog.text


def test_a_record_with_another_runs_token_signals_nothing(
    tmp_path: Path, tool: subprocess.Popen[bytes]
) -> None:
    """A tool of another run (its token is not the one the record hashes) is that run's."""
    directory = _conversation(tmp_path / "conv")
    _noted(directory, _dead_pid(), (tool.pid, _start_time(tool.pid)), token="another run")
    _save_more(directory).close()
    assert is_running(tool.pid)


#: Saves a conversation in ``sys.argv[1]``, plants a record naming its own group (of which it
#: is the leader, in a session of its own, the token in its environment as a tool's is), then
#: takes the lock afresh: it must live on.
_NAMES_ITSELF = """
import hashlib, json, os, sys
from pathlib import Path
from coordinator import Conversation, load_conversation, save_conversation
from machines import ChatResponse
directory = Path(sys.argv[1])
conversation = Conversation.new(base_config={})
save_conversation(conversation, directory)
conversation.close()
me = os.getpid()
start = int(Path(f"/proc/{me}/stat").read_bytes().rpartition(b")")[2].split()[19])
record = {
    "holder": {"pid": int(sys.argv[2]), "start": 1},
    "boot": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
    "token": hashlib.sha256(b"a token").hexdigest(),
    "groups": [{"pgid": me, "start": start}],
}
(directory / ".inquiry.running").write_text(json.dumps(record))
again = load_conversation(directory)
again.stream.append(ChatResponse.message("after"))
save_conversation(again)
print("alive", flush=True)
"""


def test_a_record_naming_the_writers_own_group_does_not_kill_it(tmp_path: Path) -> None:
    """A record listing the group (and session) the writer leads: the writer lives on."""
    done = subprocess.run(
        [sys.executable, "-c", _NAMES_ITSELF, str(tmp_path / "conv"), str(_dead_pid())],
        env=dict(os.environ, **{TOKEN_VARIABLE: "a token"}),
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "alive\n"


def test_a_tool_that_had_exited_is_not_said_to_be_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its leader ended (a zombie nobody reaped yet): nothing is killed, nothing said."""
    directory = _conversation(tmp_path / "conv")
    env = dict(os.environ, **{TOKEN_VARIABLE: TOKEN})
    ended = subprocess.Popen(["true"], start_new_session=True, env=env)
    try:
        start = _start_time(ended.pid)
        while is_running(ended.pid):
            os.sched_yield()  # until it has exited, left unreaped
        _noted(directory, _dead_pid(), (ended.pid, start))
        with caplog.at_level(logging.WARNING):
            _save_more(directory).close()
    finally:
        ended.wait()
    assert "stopped" not in caplog.text
    assert not (directory / RUNNING_FILE).exists()


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
    tmp_path: Path, tool: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """This user's tool, listed in a file another user owns: left; in one of ours, stopped."""
    directory = _conversation(tmp_path / "conv")
    _noted(directory, _dead_pid(), (tool.pid, _start_time(tool.pid)))
    real_read_small_file = coordinator.store._files.read_small_file

    def owned_by_another(path: Path, read: Any) -> Any:
        def as_another(fd: int, status: os.stat_result) -> Any:
            return read(fd, os.stat_result((*status[:4], status.st_uid + 1, *status[5:])))

        return real_read_small_file(path, as_another)

    monkeypatch.setattr(coordinator.store._running, "read_small_file", owned_by_another)
    _save_more(directory).close()
    assert is_running(tool.pid)
    assert (directory / RUNNING_FILE).exists()
    monkeypatch.undo()
    _save_more(directory).close()
    assert not is_running(tool.pid)
    assert not (directory / RUNNING_FILE).exists()


# ------------------------------------------------------ not a file


@pytest.mark.parametrize("kind", ["directory", "fifo", "link"])
def test_a_non_file_where_the_record_should_be_is_refused(tmp_path: Path, kind: str) -> None:
    """A directory, FIFO or link named .inquiry.running would stop nothing: the writer refuses."""
    directory = _conversation(tmp_path / "conv")
    path = directory / RUNNING_FILE
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(tmp_path / "elsewhere")
    before = (directory / "events.json").read_bytes()
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("refused"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value).startswith(f"{path}: is not a regular file but ")
    assert (directory / "events.json").read_bytes() == before
    assert holder_of(directory) is None  # refused, the lock let go
    if kind == "directory":
        path.rmdir()
    else:
        path.unlink()
    save_conversation(conversation)


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
    tmp_path: Path, tool: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write taking a few bytes only: the record still lists the group, then is removed."""
    directory = _conversation(tmp_path / "conv")
    real_pwrite = os.pwrite

    def short_pwrite(fd: int, data: Any, offset: int) -> int:
        return real_pwrite(fd, bytes(data[:5]), offset)

    monkeypatch.setattr(os, "pwrite", short_pwrite)
    running = RunningTools(directory)
    running.started(tool.pid)
    record = json.loads((directory / RUNNING_FILE).read_bytes())
    assert record["groups"] == [{"pgid": tool.pid, "start": _start_time(tool.pid)}]
    running.ended(tool.pid)
    assert sorted(path.name for path in directory.iterdir() if path.name.startswith(".")) == [
        ".inquiry.lock"
    ]


def test_the_record_holds_the_tokens_hash_and_only_its_owner_reads_it(
    tmp_path: Path, tool: subprocess.Popen[bytes]
) -> None:
    """The token a tool gets is never in the file, nor in the repr; the file is mode 0600."""
    directory = _conversation(tmp_path / "conv")
    running = RunningTools(directory)
    token = running.environment[TOKEN_VARIABLE]
    running.started(tool.pid)
    path = directory / RUNNING_FILE
    record = json.loads(path.read_bytes())
    assert record["token"] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in path.read_text()
    assert token not in repr(running)
    assert path.stat().st_mode & 0o777 == 0o600
    running.ended(tool.pid)


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


def test_the_tool_guard_needs_nothing_of_the_package(tmp_path: Path) -> None:
    """Run as a file with -I -S, the guard imports no module of this project."""
    guard = Path(coordinator.__file__).parent / "adapters" / "_tool_guard.py"
    program = textwrap.dedent(
        f"""
        import runpy, sys
        runpy.run_path({str(guard)!r}, run_name="not_main")
        print(sorted(name for name in sys.modules if name.startswith(("coordinator", "machines"))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=PATIENCE,
        cwd=tmp_path,
    )
    assert done.stdout == "[]\n"
