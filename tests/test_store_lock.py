"""One writer at a time: the writer lock of a conversation directory.

A process that saves a conversation holds ``.inquiry.lock`` (an OS lock,
``flock``) until the conversation is closed, collected, or the process ends.
Another process that would write there (a save, ``inquiry sanitize``,
``inquiry run``) is refused, naming the holder's pid, and writes nothing; a
holder killed with SIGKILL blocks nobody. Readers need no lock; a lock file
is an extra file any reader ignores.
"""

from __future__ import annotations

import gc
import io
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import orjson
import pytest
from conftest import CountingIds, FixedClock
from process_helpers import CRASH_PROGRAMS, PATIENCE, other_process_saves
from run_helpers import TOUR_ANSWERS, TOUR_SCENARIO, cli

from coordinator import (
    Conversation,
    ConversationChangedError,
    StreamFormatError,
    load_conversation,
    save_conversation,
)
from coordinator.cli._check import EXIT_BEING_WRITTEN, EXIT_INCOMPLETE_TURN
from coordinator.cli._main import main
from coordinator.store import ConversationLockedError
from coordinator.store._lock import LOCK_FILE
from machines import ChatRequest, ChatResponse, ToolCallRequest, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def _conversation(directory: Path) -> Path:
    """A conversation needing a sanitize (an open tool call), saved and let go."""
    conversation = Conversation.new(
        metadata={"title": "shared"}, base_config={}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="hi"))
    conversation.stream.append(ToolCallRequest(id="call_1", name="fs", arguments={}))
    save_conversation(conversation, directory)
    conversation.close()
    return directory


def _files(directory: Path) -> dict[str, bytes]:
    """Every file of the directory but the lock file, with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != LOCK_FILE}


def _line(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().decode().strip()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A conversation and a real process holding its writer lock (killed afterwards)."""
    directory = _conversation(tmp_path / "conv")
    process = subprocess.Popen(
        [sys.executable, str(CRASH_PROGRAMS), "hold", str(directory)], stdout=subprocess.PIPE
    )
    with process:
        try:
            assert _line(process) == f"holding {process.pid}"
            yield directory, process
        finally:
            process.kill()
            process.wait(timeout=PATIENCE)


# ------------------------------------------------------------ two processes


def test_a_second_writer_is_refused_naming_the_holder_and_nothing_is_lost(
    holder: tuple[Path, subprocess.Popen[bytes]],
) -> None:
    """Another process's save raises ConversationLockedError with the pid; no file changes."""
    directory, process = holder
    before = _files(directory)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("mine"))
    with pytest.raises(ConversationLockedError) as caught:
        save_conversation(conversation)
    assert caught.value.pid == process.pid
    assert str(caught.value) == (
        f"{directory}: is being written by another process (pid {process.pid}); not writing "
        "to it (wait for it to finish, or save this conversation to another directory)"
    )
    assert _files(directory) == before
    assert orjson.loads(before["events.json"])[-1]["message"] == "held"


@pytest.mark.parametrize("command", ["sanitize", "run"])
def test_inquiry_sanitize_and_run_are_refused_while_another_writes(
    holder: tuple[Path, subprocess.Popen[bytes]],
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """`inquiry sanitize` and `inquiry run` on a held conversation: one line, exit 2, no write.

    Nothing reaches stdout: a script reading it sees no path of a save that never happened.
    """
    directory, process = holder
    before = _files(directory)
    if command == "sanitize":
        status, out, err = cli("sanitize", directory, capsys=capsys)
    else:
        arguments = ("--answers", TOUR_ANSWERS, "--no-tty", "-c", directory)
        status, out, err = cli("run", TOUR_SCENARIO, *arguments, capsys=capsys)
    assert status == 2
    assert out == ""  # nothing on stdout when it refuses
    (line,) = err.splitlines()
    assert line.startswith(f"inquiry: {directory}: is being written by another process ")
    assert f"(pid {process.pid})" in line
    assert _files(directory) == before
    assert not (directory / "workspace").exists()


def test_readers_need_no_lock(
    holder: tuple[Path, subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    """check, export and a plain load work while another process writes."""
    directory, _ = holder
    assert len(load_conversation(directory).stream) == 4
    assert cli("check", directory, capsys=capsys)[0] == EXIT_BEING_WRITTEN
    status, markdown, _ = cli("export", directory, capsys=capsys)
    assert status == 0
    assert markdown.startswith("# shared")


def test_check_says_a_live_writer_is_at_work_not_that_its_turn_died(
    holder: tuple[Path, subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Check of a conversation a live process writes: its pid, exit 5, no sanitize offered."""
    directory, process = holder
    before = _files(directory)
    status, out, _ = cli("check", directory, capsys=capsys)
    assert status == EXIT_BEING_WRITTEN == 5
    assert f"being written by pid {process.pid}" in out
    assert f"in progress, being written by pid {process.pid}" in out
    assert "did not finish" not in out
    assert "sanitize" not in out
    assert "--continue-turn" not in out
    status, out, _ = cli("check", directory, "--json", capsys=capsys)
    assert status == EXIT_BEING_WRITTEN
    assert orjson.loads(out)["being_written_by"] == process.pid
    assert _files(directory) == before
    process.kill()
    process.wait(timeout=PATIENCE)
    status, out, _ = cli("check", directory, "--json", capsys=capsys)
    assert status == EXIT_INCOMPLETE_TURN  # the run is dead now: its turn did not finish
    assert orjson.loads(out)["being_written_by"] is None


def test_check_trusts_no_lock_whose_holder_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock file naming a pid nobody's lock backs names nobody: the turn as it stands."""
    directory = _conversation(tmp_path / "conv")
    (directory / LOCK_FILE).write_text(f"{os.getppid()}\n")
    status, out, _ = cli("check", directory, capsys=capsys)
    assert status == EXIT_INCOMPLETE_TURN
    assert "being written" not in out
    assert "did not finish" in out


def test_a_holder_killed_with_sigkill_does_not_block_the_next_writer(
    holder: tuple[Path, subprocess.Popen[bytes]],
) -> None:
    """The OS releases the lock of a killed process: the next save goes through."""
    directory, process = holder
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=PATIENCE)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("after the kill"))
    save_conversation(conversation)
    messages = [entry.get("message") for entry in orjson.loads(_files(directory)["events.json"])]
    assert messages[-2:] == ["held", "after the kill"]


# --------------------------------------------------- when it is held, released


def test_a_conversation_holds_the_lock_from_its_first_save_until_closed(tmp_path: Path) -> None:
    """Saved: others are refused; closed: they may write; its next save takes it back."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("first"))
    save_conversation(conversation)
    assert other_process_saves(directory).startswith(
        f"refused {directory}: is being written by another process (pid {os.getpid()})"
    )
    conversation.close()
    assert other_process_saves(directory) == "saved"
    mine = load_conversation(directory)
    mine.stream.append(ChatResponse.message("again"))
    save_conversation(mine)
    assert other_process_saves(directory).startswith("refused ")
    del mine
    gc.collect()
    assert other_process_saves(directory) == "saved"


def test_a_with_block_takes_the_lock_and_releases_it(tmp_path: Path) -> None:
    """`with conversation:` claims the directory before any change, and lets go at its end."""
    directory = _conversation(tmp_path / "conv")
    with load_conversation(directory) as conversation:
        assert other_process_saves(directory).startswith("refused ")
        conversation.stream.append(ChatResponse.message("inside"))
        save_conversation(conversation)
    assert other_process_saves(directory) == "saved"


def test_with_is_refused_while_another_process_writes(
    holder: tuple[Path, subprocess.Popen[bytes]],
) -> None:
    """Claiming a held conversation fails at once, naming the holder."""
    directory, process = holder
    with (
        pytest.raises(ConversationLockedError, match=f"pid {process.pid}"),
        load_conversation(directory),
    ):
        pass


def test_conversations_in_one_process_share_its_lock(tmp_path: Path) -> None:
    """Two objects over one directory in a process both save; the lock goes with the last."""
    directory = _conversation(tmp_path / "conv")
    first = load_conversation(directory)
    first.stream.append(ChatResponse.message("first"))
    save_conversation(first)
    second = load_conversation(directory)
    second.stream.append(ChatResponse.message("second"))
    save_conversation(second)
    first.close()
    assert other_process_saves(directory).startswith("refused ")  # second holds it still
    second.close()
    assert other_process_saves(directory) == "saved"


def test_a_conversation_of_the_same_process_is_kept_from_overwriting_by_the_file_check(
    tmp_path: Path,
) -> None:
    """Sharing the lock, two objects are still kept apart: the stale one is told to reload."""
    directory = _conversation(tmp_path / "conv")
    first = load_conversation(directory)
    stale = load_conversation(directory)
    first.stream.append(ChatResponse.message("first"))
    save_conversation(first)
    stale.stream.append(ChatResponse.message("stale"))
    with pytest.raises(ConversationChangedError):
        save_conversation(stale)
    messages = [entry.get("message") for entry in orjson.loads(_files(directory)["events.json"])]
    assert messages[-1] == "first"


def test_a_forked_child_does_not_inherit_the_lock(tmp_path: Path) -> None:
    """A child forked from the writer is another process: its save is refused."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("parent"))
    save_conversation(conversation)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        child = load_conversation(directory)
        child.stream.append(ChatResponse.message("child"))
        try:
            save_conversation(child)
            os.write(write, b"saved")
        except ConversationLockedError as error:
            os.write(write, str(error).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as answer:
        said = answer.read().decode()
    assert said.startswith(f"{directory}: is being written by another process (pid {os.getpid()})")
    conversation.close()


# ------------------------------------------------------- the lock file itself


def test_a_save_that_writes_nothing_creates_no_lock_file(tmp_path: Path) -> None:
    """A conversation saved unchanged into a directory JP made leaves it exactly as it was."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "events.json").write_bytes(b"[]\n")
    save_conversation(load_conversation(directory))
    assert sorted(path.name for path in directory.iterdir()) == ["events.json"]


def test_a_save_refused_before_writing_creates_no_lock_file(tmp_path: Path) -> None:
    """Refused for a value JSON cannot hold: not even the lock file is written."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "events.json").write_bytes(b"[]\n")
    conversation = load_conversation(directory)
    conversation.metadata = {"when": float("nan")}
    with pytest.raises(StreamFormatError):
        save_conversation(conversation)
    assert sorted(path.name for path in directory.iterdir()) == ["events.json"]


def test_the_lock_file_holds_the_writers_pid_and_is_ignored_by_readers(tmp_path: Path) -> None:
    """Its first line is the pid while held, none once let go; readers never look at it."""
    directory = _conversation(tmp_path / "conv")
    assert _named_pid(directory) is None  # _conversation let it go
    conversation = load_conversation(directory)
    with conversation:
        assert (directory / LOCK_FILE).read_bytes() == f"{os.getpid()}\n".encode()
    assert _named_pid(directory) is None
    out = io.StringIO()
    assert main(["check", str(directory), "--json"], out=out) == EXIT_INCOMPLETE_TURN
    assert orjson.loads(out.getvalue())["entries"] == 3


def test_a_lock_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    """A link named .inquiry.lock is not followed (it could lock, or write, anything)."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "events.json").write_bytes(b"[]\n")
    (tmp_path / "elsewhere").write_bytes(b"keep\n")
    (directory / LOCK_FILE).symlink_to(tmp_path / "elsewhere")
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("hi"))
    with pytest.raises(StreamFormatError, match=r"\.inquiry\.lock: is a symbolic link"):
        save_conversation(conversation)
    assert (tmp_path / "elsewhere").read_bytes() == b"keep\n"
    assert (directory / "events.json").read_bytes() == b"[]\n"


def _named_pid(directory: Path) -> str | None:
    """The first line of the lock file, when it holds anything but blanks."""
    first = (directory / LOCK_FILE).read_bytes().partition(b"\n")[0].decode()
    return first.strip() or None


#: A writer that saves (taking the lock) and then ends as ``sys.argv[2]`` says.
_ENDING_WRITER = """
import sys
from coordinator import load_conversation, save_conversation
from machines import ChatResponse
conversation = load_conversation(sys.argv[1])
conversation.stream.append(ChatResponse.message("then ended"))
save_conversation(conversation)
with open(sys.argv[1] + "/.inquiry.lock", "rb") as lock:
    print(lock.read().decode().partition("\\n")[0], flush=True)
if sys.argv[2] == "raises":
    raise RuntimeError("the writer failed")
"""


@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_a_writer_that_ended_leaves_no_pid_in_the_lock_file(tmp_path: Path, ending: str) -> None:
    """Ended normally or by an exception: the lock file names no pid a kill could hit."""
    directory = _conversation(tmp_path / "conv")
    done = subprocess.run(
        [sys.executable, "-c", _ENDING_WRITER, str(directory), ending],
        capture_output=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == (0 if ending == "returns" else 1), done.stderr
    held = done.stdout.decode().strip()
    assert held.isdigit()  # while it held the lock, it was named
    assert _named_pid(directory) is None
    messages = [entry.get("message") for entry in orjson.loads(_files(directory)["events.json"])]
    assert messages[-1] == "then ended"


def test_inquiry_run_that_ended_leaves_no_pid_in_the_lock_file(tmp_path: Path) -> None:
    """The README's crash demo reads the pid: after the run, there is none to kill."""
    directory = tmp_path / "conv"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "coordinator", "run", str(TOUR_SCENARIO)),
            *("--answers", str(TOUR_ANSWERS), "--no-tty", "-c", str(directory)),
        ],
        capture_output=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert (directory / LOCK_FILE).exists()
    assert _named_pid(directory) is None


#: Hold the lock of sys.argv[1] as a writer that has not written its pid yet.
_SILENT_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1] + "/.inquiry.lock", os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("holding", flush=True)
sys.stdin.read()
"""


def test_a_holder_whose_pid_is_not_in_the_lock_file_is_said_unknown(tmp_path: Path) -> None:
    """The lock is held, its file names nobody: the refusal says the pid is not known."""
    directory = _conversation(tmp_path / "conv")
    with subprocess.Popen(
        [sys.executable, "-c", _SILENT_HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as process:
        try:
            assert _line(process) == "holding"
            conversation = load_conversation(directory)
            conversation.stream.append(ChatResponse.message("mine"))
            with pytest.raises(ConversationLockedError) as caught:
                save_conversation(conversation)
        finally:
            process.communicate(timeout=PATIENCE)
    assert caught.value.pid is None
    assert str(caught.value).startswith(
        f"{directory}: is being written by another process (its pid is not known); "
    )


def test_a_forked_child_that_ends_leaves_its_parents_pid(tmp_path: Path) -> None:
    """A child forked from a writer ends (running its finalizers): the parent is still named."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("parent"))
    save_conversation(conversation)
    pid = os.fork()
    if pid == 0:  # the child: drops what it inherited, as any ending does
        try:
            del conversation
            gc.collect()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert _named_pid(directory) == str(os.getpid())
    conversation.close()
    assert _named_pid(directory) is None
