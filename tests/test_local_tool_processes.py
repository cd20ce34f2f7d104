"""Local tools as processes: what ends a call, what it leaves behind, and why one cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import pytest
from process_helpers import PATIENCE, is_running, kill_group, wait_for

import coordinator.adapters
from coordinator import LocalTool, LocalToolExecutor
from coordinator.adapters import _local_tools as local_tools
from coordinator.driver import Completed
from machines import ToolCallRequest

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterator

    from coordinator.driver import ExecutorResult

T = TypeVar("T")


CALL = ToolCallRequest(id="call_1", name="demo", arguments={})


def _within(work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, failing the test when it has none after ``PATIENCE`` seconds.

    That is far longer than any call below takes when it works; the bugs
    these tests guard against never end at all (the stray processes sleep
    for ever).

    Run on an event loop of its own in a thread: a call that never ends may
    also hold up its loop's closing (cancelled, it can go on waiting), which
    no timeout inside the loop can cut short.
    """
    outcome: dict[str, Any] = {}

    def play() -> None:
        try:
            outcome["result"] = asyncio.run(work)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    if thread.is_alive():
        pytest.fail(f"still running after {PATIENCE:g} s")
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["result"]
    return result


@pytest.fixture
def strays(tmp_path: Path) -> Iterator[Path]:
    """A file where tools write the pids of the processes they leave behind; killed at the end."""
    pids = tmp_path / "strays"
    pids.touch()
    yield pids
    for line in pids.read_text().split():
        pid = int(line)
        # The process, and the group it leads if it leads one (coreutils
        # `timeout` and its child): a child left in the tool's group leads none.
        kill_group(pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _noted(path: Path) -> str:
    """What a tool wrote to ``path`` so far."""
    return path.read_text() if path.exists() else ""


def _executor(tmp_path: Path, body: str, **kwargs: Any) -> LocalToolExecutor:
    script = tmp_path / "tool.py"
    script.write_text(textwrap.dedent(body))
    command = kwargs.pop("command", [sys.executable, str(script)])
    return LocalToolExecutor(LocalTool(name="demo", command=command, **kwargs), root=tmp_path)


def _stray(pids: Path, *, session: bool) -> str:
    """Python that starts a `sleep infinity` holding the tool's output, noting its pid."""
    return f"""
        import subprocess
        child = subprocess.Popen(["sleep", "infinity"], start_new_session={session})
        with open({str(pids)!r}, "a") as file:
            file.write(f"{{child.pid}}\\n")
    """


def _daemon_tool(tmp_path: Path, pids: Path, **kwargs: Any) -> LocalToolExecutor:
    """A tool that starts a daemon (its own session) and then runs for ever."""
    body = _stray(pids, session=True) + "\n        import time\n        time.sleep(10**6)\n"
    return _executor(tmp_path, body, **kwargs)


def _coreutils_timeout_tool(tmp_path: Path, pids: Path, **kwargs: Any) -> LocalToolExecutor:
    """A shell tool running a step under coreutils `timeout`, which leaves the process group."""
    script = f"timeout 100000 sleep infinity & echo $! >> '{pids}'; wait"
    return _executor(tmp_path, "", command=["sh", "-c", script], **kwargs)


LEAVERS = [
    pytest.param(_daemon_tool, id="daemon"),
    pytest.param(_coreutils_timeout_tool, id="coreutils-timeout"),
]


@pytest.mark.parametrize("make", LEAVERS)
def test_a_timeout_is_not_held_by_a_process_that_left_the_group(
    tmp_path: Path, strays: Path, make: Any
) -> None:
    """The tool is stopped at its timeout though a process outside its group holds its output."""
    # Long enough for the tool to start what holds its output on a loaded
    # machine: killed sooner, nothing would hold it, and the message would differ.
    executor = make(tmp_path, strays, timeout=2)
    result = _within(executor.execute(CALL, {}))
    assert result == Completed(
        content=orjson.dumps(
            {
                "message": "Tool 'demo' ran longer than 2 s and was stopped; a process it "
                "started outside its process group still held its output and may still be "
                "running."
            }
        ).decode(),
        is_error=True,
    )


@pytest.mark.parametrize("make", LEAVERS)
def test_a_cancel_is_not_held_by_a_process_that_left_the_group(
    tmp_path: Path, strays: Path, make: Any
) -> None:
    """Cancelling the call (Ctrl-C) returns at once and the tool itself is gone."""
    executor = make(tmp_path, strays, timeout=100_000)

    async def cancelled() -> None:
        task = asyncio.ensure_future(executor.execute(CALL, {}))
        while not _noted(strays):  # noqa: ASYNC110 - a file, not an event
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    _within(cancelled())


@pytest.mark.parametrize("session", [False, True], ids=["same-group", "own-session"])
def test_a_tool_that_exits_is_done_though_its_child_holds_the_output(
    tmp_path: Path, strays: Path, session: bool
) -> None:
    """A tool that exits at once with its outcome gets that outcome, not a timeout."""
    body = (
        _stray(strays, session=session)
        + """
        import json
        print(json.dumps({"type": "success", "content": "server started"}))
    """
    )
    executor = _executor(tmp_path, body, timeout=100_000)
    assert _within(executor.execute(CALL, {})) == Completed(content="server started")


DESCRIPTORS = Path("/proc/self/fd")


def _open_descriptors() -> int:
    return len(list(DESCRIPTORS.iterdir()))


@pytest.mark.skipif(not DESCRIPTORS.is_dir(), reason="counts descriptors in /proc")
def test_a_cancel_during_the_stop_closes_the_pipes(
    tmp_path: Path, strays: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while it waits for the rest of an ended tool's output, no pipe is left open.

    The test ends the tool itself, once the tool has said it runs: a short
    timeout in its place would, on a loaded machine, kill the tool before it
    started the process that holds its output (or noted its pid), and the
    state tested here would never come. What follows the tool's end is the
    same either way: the executor waits for the rest of the output.
    """
    # The wait for the rest of the output lasts until the cancel, however late it comes.
    monkeypatch.setattr(local_tools, "OUTPUT_GRACE", 100_000, raising=False)
    tool_pid = tmp_path / "tool-pid"
    body = (
        _stray(strays, session=True)
        + f"""
        import os, time
        with open({str(tool_pid)!r}, "w") as file:
            file.write(str(os.getpid()))
        time.sleep(10**6)
    """
    )
    executor = _executor(tmp_path, body, timeout=100_000)

    async def cancelled_in_the_stop() -> None:
        task = asyncio.ensure_future(executor.execute(CALL, {}))
        while not _noted(tool_pid):  # noqa: ASYNC110 - a file, not an event
            await asyncio.sleep(0.01)
        pid = int(_noted(tool_pid))
        os.kill(pid, signal.SIGKILL)
        while is_running(pid):  # noqa: ASYNC110 - a process, not an event
            await asyncio.sleep(0.01)
        assert not task.done()  # held by the process that holds the output
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    before = _open_descriptors()
    _within(cancelled_in_the_stop())
    assert _open_descriptors() == before
    gc.collect()  # an unclosed transport would warn here, failing the test


def test_a_cancel_while_the_stop_waits_for_the_exit_leaves_the_exit_to_be_seen() -> None:
    """Cancelled as it waits for a killed tool's exit, the wait leaves that exit to its process.

    Cancelling the exit's future itself would end the stop's own wait for the
    process at once, and leave it unreaped: the cause of the test above failing
    under load, one time in a few.
    """

    async def cancelled_at_the_exit() -> bool:
        pipes = local_tools._ToolPipes(limit=100)
        waiting = asyncio.ensure_future(local_tools._rest_of_output(pipes))
        await asyncio.sleep(0)  # now waiting for the exit
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        pipes.process_exited()  # the process's end, seen after all
        return pipes.exited.done() and not pipes.exited.cancelled()

    assert asyncio.run(cancelled_at_the_exit())


def test_a_tool_killed_by_a_signal_says_which(tmp_path: Path) -> None:
    """The error of a tool killed by a signal names the signal."""
    body = """
        import os, signal
        print("half done", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    """
    result = _within(_executor(tmp_path, body).execute(CALL, {}))
    assert result == Completed(
        content=orjson.dumps(
            {
                "message": "Tool 'demo' execution failed: killed by SIGTERM.",
                "stderr": "",
                "stdout": "half done\n",
            }
        ).decode(),
        is_error=True,
    )


def test_the_output_limit_counts_stdout_and_stderr_together(tmp_path: Path) -> None:
    """`max_output` bounds all the tool prints: 600 kB on each of two streams is past 1 MB."""
    body = """
        import sys
        sys.stdout.write("o" * 600_000)
        sys.stderr.write("e" * 600_000)
    """
    result = _within(_executor(tmp_path, body, max_output=1_000_000).execute(CALL, {}))
    assert result == Completed(
        content=orjson.dumps(
            {
                "message": "Tool 'demo' printed more than 1000000 bytes (stdout and stderr "
                "together) and was stopped."
            }
        ).decode(),
        is_error=True,
    )


def _start(tmp_path: Path, command: list[str], root: Path | None = None) -> ExecutorResult:
    executor = LocalToolExecutor(
        LocalTool(name="demo", command=command), root=root if root is not None else tmp_path
    )
    return _within(executor.execute(CALL, {}))


def _start_error(result: ExecutorResult) -> str:
    assert isinstance(result, Completed)
    assert result.is_error
    message: str = orjson.loads(result.content)["message"]
    return message


def test_a_missing_working_directory_is_named(tmp_path: Path) -> None:
    """A tool whose working directory is gone says so, naming the directory, not the program."""
    gone = tmp_path / "gone"
    message = _start_error(_start(tmp_path, ["true"], root=gone))
    assert message == (
        f"Tool 'demo' could not be started: its working directory {str(gone)!r} "
        "cannot be entered: No such file or directory."
    )


def test_a_missing_interpreter_is_named(tmp_path: Path) -> None:
    """A script whose #! line names a missing interpreter says which, not that the script is."""
    script = tmp_path / "tool"
    script.write_text("#!/nonexistent/interpreter -x\necho hi\n")
    script.chmod(0o755)
    message = _start_error(_start(tmp_path, [str(script)]))
    assert message == (
        "Tool 'demo' could not be started: the interpreter '/nonexistent/interpreter' "
        f"named by the #! line of {str(script)!r} is not found."
    )


@pytest.mark.parametrize(
    ("program", "problem"),
    [
        ("/nonexistent/program", "the program '/nonexistent/program' does not exist"),
        (
            "no-such-program-anywhere",
            "the program 'no-such-program-anywhere' is not found on PATH",
        ),
    ],
)
def test_a_missing_program_is_named(tmp_path: Path, program: str, problem: str) -> None:
    """A program that is not there is named, and where it was looked for."""
    message = _start_error(_start(tmp_path, [program]))
    assert message == f"Tool 'demo' could not be started: {problem}."


def test_a_nul_byte_in_the_command_is_a_start_failure(tmp_path: Path) -> None:
    """A NUL byte in the command fails the call like any start failure, naming the argument."""
    message = _start_error(_start(tmp_path, ["echo", "a\0b"]))
    assert message == (
        "Tool 'demo' could not be started: argument 1 of its command contains a NUL byte."
    )


# ------------------------------------------------------ the runner dies (the guard)

#: A runner of one local tool (``sys.argv[1]``, Python code) in ``sys.argv[2]``; the test kills it.
_RUNNER = """
import asyncio, sys
from pathlib import Path
import coordinator.adapters
from coordinator import LocalTool, LocalToolExecutor
from machines import ToolCallRequest
tool = LocalTool(name="t", command=[sys.executable, "-c", sys.argv[1]], timeout=600)
executor = LocalToolExecutor(tool, root=Path(sys.argv[2]))
asyncio.run(executor.execute(ToolCallRequest(id="c", name="t", arguments={}), {}))
"""

#: A tool that leaves a child in its group and works on, noting both pids.
_WITH_A_CHILD = """
import subprocess, time
child = subprocess.Popen(["sleep", "600"])
with open("pids", "w") as file:
    file.write(f"{__import__('os').getpid()} {child.pid}")
time.sleep(600)
"""


def _pids_in(path: Path) -> list[int] | None:
    text = _noted(path)
    return [int(pid) for pid in text.split()] if len(text.split()) == 2 else None


def test_a_runner_killed_by_sigkill_takes_its_tools_group_with_it(tmp_path: Path) -> None:
    """The tool and the child it left in its group end with the runner, not 600 s later."""
    with subprocess.Popen([sys.executable, "-c", _RUNNER, _WITH_A_CHILD, str(tmp_path)]) as runner:
        try:
            pids = wait_for(
                lambda: _pids_in(tmp_path / "pids"), "the tool's start", process=runner
            )
            runner.kill()
            runner.wait(timeout=PATIENCE)
            for pid in pids:
                wait_for(partial(_ended, pid), f"{pid}'s end")
        finally:
            runner.kill()
            for pid in _pids_in(tmp_path / "pids") or []:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


#: A parent of the guard, run with --poll (as where there is no PR_SET_PDEATHSIG): prints its pid.
_POLLED = """
import os, subprocess, sys, time
guard = subprocess.Popen(
    [sys.executable, "-I", "-S", sys.argv[1], str(os.getpid()), "--poll", "--", "sleep", "600"],
    start_new_session=True,
)
print(guard.pid, flush=True)
time.sleep(600)
"""


def test_a_guard_that_polls_ends_its_group_when_its_runner_dies(tmp_path: Path) -> None:
    """Without the parent-death signal, the guard looks at its parent and still ends the tool."""
    guard = Path(coordinator.adapters.__file__).with_name("_tool_guard.py")
    with subprocess.Popen(
        [sys.executable, "-c", _POLLED, str(guard)], stdout=subprocess.PIPE, cwd=tmp_path
    ) as parent:
        try:
            assert parent.stdout is not None
            leader = int(parent.stdout.readline())
            wait_for(lambda: _members(leader) or None, "the tool under the guard")
            members = _members(leader)
            parent.kill()
            parent.wait(timeout=PATIENCE)
            for pid in [leader, *members]:
                wait_for(partial(_ended, pid), f"{pid}'s end")
        finally:
            parent.kill()
            kill_group(leader)


def _ended(pid: int) -> bool | None:
    """True once process ``pid`` no longer runs (for ``wait_for``)."""
    return None if is_running(pid) else True


def _members(group: int) -> list[int]:
    """The running processes of process group ``group`` but its leader."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != group:
            with contextlib.suppress(OSError):
                if os.getpgid(int(entry.name)) == group and is_running(int(entry.name)):
                    found.append(int(entry.name))
    return found
