"""`inquiry run` as a process: at a pseudo-terminal with its output piped, and as CI runs it.

RFD 104: whether a run may prompt is whether ``/dev/tty`` opens (unless a
flag or ``JP_NONINTERACTIVE``/``INQUIRY_NONINTERACTIVE`` says otherwise),
never whether stdout is a terminal; a prompt is never written to stdout.
RFD 049: with nobody to ask, the detached policy decides, ``deny`` unless
configured. Each pty test starts `inquiry run` in a pseudo-terminal (through
``bash -c`` where its output is piped or redirected), waits for what it
expects on the terminal, and checks what stdout carried and what the
conversation recorded. Each CI-like run starts `inquiry run` in a new session
(no controlling terminal) with stdin closed, as a CI job does.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import orjson
import pexpect
import pytest
from coordinator_harness import payloads, recorded_routes
from run_helpers import assert_paired, modify, outcomes, responses
from run_helpers import tour_scenario as scenario

from coordinator import load_conversation
from coordinator._recorded_routes import RecordedRoute
from machines import Answered, CancellationReason, Cancelled, ToolCallResponse

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

BOOLEAN = "[y/n/Y/N] >"
DELIVERY = "[y/n/p] >"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("NONINTERACTIVE")}
    return env | {"PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"} | extra


def _bytes(read: object) -> bytes:
    """What pexpect read (``before``/``after``), as bytes; nothing for its EOF marker."""
    return read if isinstance(read, bytes) else b""


class Terminal:
    """A shell command in a pseudo-terminal of its own; what it wrote there, kept."""

    def __init__(self, tmp_path: Path, command: str, **env: str) -> None:
        """Start ``command`` with ``bash -c`` in ``tmp_path``."""
        self.child = pexpect.spawn(
            "bash",
            ["-c", command],
            cwd=str(tmp_path),
            env=_env(**env),
            dimensions=(50, 200),
            timeout=30,
        )
        self.screen = b""

    def expect(self, text: str) -> None:
        """Wait until ``text`` has been written to the terminal."""
        self.child.expect_exact(text.encode())
        self.screen += _bytes(self.child.before) + _bytes(self.child.after)

    def type(self, keys: str) -> None:
        """Type ``keys``."""
        self.child.send(keys)

    def finish(self) -> int:
        """Wait for the command to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self.screen += _bytes(self.child.before)
        self.child.close()
        assert self.child.exitstatus is not None
        return self.child.exitstatus

    def close(self) -> None:
        """Stop it if it still runs."""
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    """The terminals a test starts, each stopped at its end."""
    started: list[Terminal] = []
    yield started
    for each in started:
        each.close()


def inquiry(scenario_path: Path, directory: Path, *options: str) -> str:
    """The `inquiry run` command line, as the shell reads it."""
    argv = [sys.executable, "-m", "coordinator", "run", str(scenario_path), "-c", str(directory)]
    return shlex.join([*argv, *options])


# ------------------------------------------------------------ at a terminal


@pytest.mark.parametrize("into", ["| cat > progress.txt", "> progress.txt"], ids=["piped", "file"])
def test_a_run_whose_output_is_piped_still_asks_at_the_terminal(
    tmp_path: Path, terminal: list[Terminal], into: str
) -> None:
    """Output piped (or redirected): the prompt is on the terminal, and none reaches stdout."""
    directory = tmp_path / "conversation"
    command = f"{inquiry(scenario(tmp_path, modify('teh', 'the')), directory)} {into}"
    run = Terminal(tmp_path, command)
    terminal.append(run)
    run.expect("Apply this change to notes.txt?")
    run.expect(BOOLEAN)
    run.type("y\r")
    assert run.finish() == 0
    progress = (tmp_path / "progress.txt").read_text()
    assert "person: you, at the controlling terminal" in progress
    assert "= fs_modify_file · apply_changes: answered by the person: true" in progress
    assert "[y/n/Y/N]" not in progress  # no prompt in the data channel
    assert "Apply this change" in progress  # the question is said in the progress, once
    assert b"turn 1 \xc2\xb7 user" not in run.screen  # the progress is not on the terminal
    assert recorded_routes(directory) == [RecordedRoute(route="person")]


def test_a_variable_makes_a_terminal_run_not_interactive(
    tmp_path: Path, terminal: list[Terminal]
) -> None:
    """JP_NONINTERACTIVE=1 at a terminal: nothing is asked, the policy (deny) decides."""
    directory = tmp_path / "conversation"
    run = Terminal(
        tmp_path,
        inquiry(scenario(tmp_path, modify("teh", "the")), directory),
        JP_NONINTERACTIVE="1",
    )
    terminal.append(run)
    assert run.finish() == 1
    assert b"person: nobody: JP_NONINTERACTIVE=1" in run.screen
    assert BOOLEAN.encode() not in run.screen
    (cancelled,) = outcomes(assert_paired(directory)).values()
    assert cancelled.reason is CancellationReason.NO_PROMPT_BACKEND
    assert recorded_routes(directory) == [RecordedRoute(route="denied", detached="deny")]


def test_a_queued_question_is_answered_by_a_y_given_meanwhile(
    tmp_path: Path, terminal: list[Terminal]
) -> None:
    """Two calls ask at once; Y at the first: the second, queued, is answered from memory."""
    directory = tmp_path / "conversation"
    calls = f"{modify('teh', 'the')}, {modify('Projekt', 'Project')}"
    run = Terminal(tmp_path, inquiry(scenario(tmp_path, calls), directory, "--verbose"))
    terminal.append(run)
    run.expect(BOOLEAN)
    # Both tools asked before the answer: the other call's question waits in the queue.
    _wait_for_both_questions(directory)
    run.type("Y\r")
    assert run.finish() == 0
    # One question on screen (verbose: its ids); the other never shown.
    assert run.screen.count("apply_changes · call_1_1_".encode()) == 1
    found = outcomes(assert_paired(directory))
    assert [type(response) for response in found.values()] == [Answered, Answered]
    routes = recorded_routes(directory)
    assert sorted(str(route) for route in routes) == ["person", "remembered"]


def _wait_for_both_questions(directory: Path) -> None:
    """Until both calls' requests are on disk (each is saved before it is queued), 20 s at most."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        events = orjson.loads((directory / "events.json").read_bytes())
        if sum(e["type"] == "inquiry_request" for e in events) == 2:
            return
        time.sleep(0.05)
    pytest.fail("the second call never asked its question")


def test_the_person_withholds_a_result_at_the_terminal(
    tmp_path: Path, terminal: list[Terminal]
) -> None:
    """Result mode ask: the result is shown, n withholds it; the model is told so."""
    extra = "[tools.fs_modify_file.questions.apply_changes]\nanswer = true\n"
    path = scenario(tmp_path, modify("teh", "the"), extra=extra)
    text = path.read_text().replace(
        "[tools.fs_modify_file]\n", '[tools.fs_modify_file]\nresult = "ask"\n'
    )
    path.write_text(text)
    directory = tmp_path / "conversation"
    run = Terminal(tmp_path, inquiry(path, directory))
    terminal.append(run)
    run.expect("its result reaches the model if you say so")
    run.expect("Replaced 2 occurrences")
    run.expect(DELIVERY)
    run.type("n\r")
    assert run.finish() == 0
    assert b"result of fs_modify_file: withheld by the person" in run.screen
    (response,) = payloads(load_conversation(directory), ToolCallResponse)
    assert response.content == "Result delivery skipped by user."


def test_a_background_job_of_the_terminal_is_not_promptable(
    tmp_path: Path, terminal: list[Terminal]
) -> None:
    """In its terminal's background (``&`` with job control), a prompt would stop the job."""
    probe = shlex.join(
        [
            sys.executable,
            "-c",
            "from coordinator.adapters import resolve_promptability as r; print(r(None, {}).why)",
        ]
    )
    run = Terminal(tmp_path, f"set -m; {probe} & wait; {probe}")
    terminal.append(run)
    assert run.finish() == 0
    background, foreground = (
        line for line in run.screen.decode().splitlines() if "terminal" in line
    )
    assert background == "the run is a background job of its terminal (a prompt would stop it)"
    assert foreground == "/dev/tty is a terminal to ask at"


# ------------------------------------------------------------ as CI runs it


CI_CALLS = (
    f'{modify("teh", "the")}, {{ tool = "deploy", arguments = {{ environment = "staging" }} }}'
)


def ci_run(tmp_path: Path, *options: str, extra: str = "") -> subprocess.CompletedProcess[str]:
    """`inquiry run` with no controlling terminal (a new session) and stdin closed."""
    path = scenario(tmp_path, CI_CALLS, extra=extra)
    path.write_text(path.read_text().replace("[tools.deploy]\n", '[tools.deploy]\nrun = "ask"\n'))
    argv = [sys.executable, "-m", "coordinator", "run", str(path), "-c", "conversation"]
    return subprocess.run(
        [*argv, *options],
        cwd=tmp_path,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("extra", "asked", "deployed"),
    [
        pytest.param("", CancellationReason.NO_PROMPT_BACKEND, False, id="nothing-configured"),
        pytest.param('detached = "deny"', CancellationReason.NO_PROMPT_BACKEND, False, id="deny"),
        pytest.param('detached = "defaults"', None, False, id="defaults"),
        pytest.param('detached = "auto"', CancellationReason.BACKEND_ERROR, True, id="auto"),
    ],
)
def test_a_ci_run_follows_the_detached_policy(
    tmp_path: Path, extra: str, asked: CancellationReason | None, deployed: bool
) -> None:
    """No terminal, stdin closed: nothing configured never answers for the person nor runs ask."""
    done = ci_run(tmp_path, extra=extra)
    assert done.returncode == 1, done.stderr
    assert "person: nobody: no controlling terminal" in done.stdout
    conversation = assert_paired(tmp_path / "conversation")
    applied = outcomes(conversation)["call_1_1_1.apply_changes.1"]
    if asked is None:  # defaults: the question's own default (true)
        assert applied == Answered(id=applied.id, answer=True)
    else:  # deny: refused; auto: put to the model, of which the run has none
        assert applied == Cancelled(id=applied.id, reason=asked)
    deploy = responses(conversation)["call_1_1_2"]
    assert deploy.is_error
    assert ("was not run" in deploy.content) is not deployed
    mode = extra.partition('"')[2].rstrip('"') or "deny"
    assert f"the detached policy decides permission to run (run mode ask): {mode}" in done.stdout


def test_interactive_in_a_ci_run_fails_at_once(tmp_path: Path) -> None:
    """--interactive asserts a person is there: without a terminal, exit 2 and nothing written."""
    done = ci_run(tmp_path, "--interactive")
    assert done.returncode == 2
    assert done.stderr.startswith("inquiry: --interactive: no controlling terminal (/dev/tty")
    assert not (tmp_path / "conversation").exists()
