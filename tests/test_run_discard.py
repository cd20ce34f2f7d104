"""``inquiry run --discard-turn``: discarding a turn a dead run left, deleting nothing.

The whole path as a person takes it, each command a real process: a run is
killed (SIGKILL) while its question waits at the terminal; ``inquiry check``
says the turn is blocked and offers the discard (never ``inquiry
sanitize``); ``inquiry run --discard-turn`` closes the open question and
call and says so; ``inquiry check`` then finds nothing unfinished, every
entry of the old turn still there, and the next run plays a new turn
without ``--new-turn``. Then the flag's rules, in process: with a scenario
it discards and plays; the scenario may be left out only with it; it is one
of three ways on; a live writer is refused, nothing written.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import pexpect
import pytest
from process_helpers import PATIENCE
from resume_scenario import resume_files, run_argv

from coordinator import (
    Conversation,
    EventEntry,
    find_incomplete_turn,
    load_conversation,
    save_conversation,
)
from coordinator.cli._check import EXIT_INCOMPLETE_TURN
from coordinator.cli._main import main
from coordinator.store import load_locked
from coordinator.stream import plan_sanitize
from machines import (
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import DISCARDED

if TYPE_CHECKING:
    from pathlib import Path


def inquiry(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``inquiry`` as a person runs it: a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "coordinator", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )


def killed_at_the_prompt(root: Path) -> tuple[Path, Path, Path]:
    """A run killed (SIGKILL) while c's ``go`` waits at the terminal: scenario, answers, DIR."""
    scenario, answers = resume_files(root)
    directory = root / "conversation"
    env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    run: pexpect.spawn[bytes] = pexpect.spawn(
        sys.executable,
        ["-m", "coordinator", *run_argv(scenario, answers, directory, "--tty")],
        env=env,
        dimensions=(50, 200),
        timeout=PATIENCE,
    )
    try:
        run.expect_exact("c: go?")
        run.kill(signal.SIGKILL)
    finally:
        run.close(force=True)
    return scenario, answers, directory


def test_a_killed_run_is_discarded_as_check_suggests_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    """Crash, check suggests the discard, discard, check is clean: every old entry kept."""
    scenario, answers, directory = killed_at_the_prompt(tmp_path)
    checked = inquiry("check", directory)
    assert checked.returncode == EXIT_INCOMPLETE_TURN
    assert "sanitize" not in checked.stdout
    suggested = f"or only discard it: inquiry run --discard-turn --conversation {directory}\n"
    assert suggested in checked.stdout
    as_json = json.loads(inquiry("check", "--json", directory).stdout)
    command = as_json["incomplete_turn"]["discard_with"]["command"]
    assert command == f"inquiry run --discard-turn --conversation {directory}"
    before = list(load_conversation(directory).stream)

    discarded = inquiry(*command.split()[1:])
    assert (discarded.returncode, discarded.stderr) == (0, "")
    assert discarded.stdout == (
        "discarded the unfinished turn 1: closed 1 question and 1 tool call, nothing deleted\n"
    )
    checked = inquiry("check", directory)
    assert checked.returncode == 0, checked.stdout
    assert "did not finish" not in checked.stdout
    conversation = load_conversation(directory)
    after = list(conversation.stream)
    assert after[: len(before)] == before  # nothing removed, nothing rewritten
    added = [entry.payload for entry in after[len(before) :] if isinstance(entry, EventEntry)]
    assert added == [
        Cancelled(id="call_1_2_1.go.1", reason=CancellationReason.DISCARDED),
        ToolCallResponse(id="call_1_2_1", content=DISCARDED, is_error=True),
    ]
    assert not plan_sanitize(conversation.stream).report.changed
    conversation.close()

    # The next run begins a new turn of its own accord.
    played = inquiry(*run_argv(scenario, answers, directory))
    assert played.returncode == 0, played.stderr
    again = load_conversation(directory)
    assert len(again.stream.turns()) == 3  # the discarded turn, then the scenario's two
    assert list(again.stream)[: len(after)] == after
    again.close()


def run_in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``inquiry`` in process: its status, stdout and stderr."""
    capsys.readouterr()
    out = io.StringIO()
    status = main(argv, out=out)
    return status, out.getvalue(), capsys.readouterr().err


def test_with_a_scenario_it_discards_then_plays_a_new_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run SCENARIO --discard-turn``: the turn closed and said so, then the scenario played."""
    scenario, answers, directory = killed_at_the_prompt(tmp_path)
    status, out, err = run_in_process(
        run_argv(scenario, answers, directory, "--discard-turn"), capsys
    )
    assert (status, err) == (0, "")
    assert (
        "discarded the unfinished turn 1: closed 1 question and 1 tool call, nothing deleted\n"
    ) in out
    conversation = load_conversation(directory)
    assert find_incomplete_turn(conversation.stream) is None
    assert len(conversation.stream.turns()) == 3
    conversation.close()
    # Nothing unfinished now: a discard is a no-op, said so, and the scenario plays again.
    status, out, _ = run_in_process(
        run_argv(scenario, answers, directory, "--discard-turn"), capsys
    )
    assert status == 0
    assert "nothing to discard: the conversation's last turn finished\n" in out


def test_the_scenario_may_be_left_out_only_with_discard_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No scenario: refused unless --discard-turn; options only a play uses are refused too."""
    scenario, answers, directory = killed_at_the_prompt(tmp_path)
    before = (directory / "events.json").read_bytes()
    status, _, err = run_in_process(["run", "--conversation", str(directory)], capsys)
    assert status == 2
    assert "a SCENARIO is required (only --discard-turn goes without one)" in err
    status, _, err = run_in_process(
        ["run", "--discard-turn", "--answers", str(answers), "--conversation", str(directory)],
        capsys,
    )
    assert status == 2
    assert "plays nothing: --answers goes with a SCENARIO" in err
    for other in ("--continue-turn", "--new-turn"):
        with pytest.raises(SystemExit, match="2"):
            main([*run_argv(scenario, answers, directory), "--discard-turn", other])
    assert (directory / "events.json").read_bytes() == before


def test_a_live_writer_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    """While another process holds the conversation's lock, the discard is refused, naming it."""
    _, _, directory = killed_at_the_prompt(tmp_path)
    before = (directory / "events.json").read_bytes()
    holder = load_locked(directory)
    try:
        refused = inquiry("run", "--discard-turn", "--conversation", directory)
    finally:
        holder.close()
    assert refused.returncode == 2
    assert str(os.getpid()) in refused.stderr
    assert refused.stdout == ""
    assert (directory / "events.json").read_bytes() == before


def test_a_directory_without_a_conversation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to discard where there is no conversation: exit 2, nothing created."""
    empty = tmp_path / "empty"
    empty.mkdir()
    status, out, err = run_in_process(
        ["run", "--discard-turn", "--conversation", str(empty)], capsys
    )
    assert status == 2
    assert out == ""
    assert str(empty) in err
    assert list(empty.iterdir()) == []


def test_an_embedders_turn_is_discarded_as_check_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No scenario recorded: check names the discard command and the embedder's call; it works."""
    directory = tmp_path / "embedded"
    conversation = Conversation.new(metadata={"title": "embedded"}, base_config={})
    for event in (
        TurnStart(),
        ChatRequest(content="Deploy."),
        ChatResponse.message("Deploying."),
        ToolCallRequest(id="toolu_1", name="deploy", arguments={}),
    ):
        conversation.stream.append(event)
    save_conversation(conversation, directory)
    conversation.close()
    status, out, _ = run_in_process(["check", str(directory)], capsys)
    assert status == EXIT_INCOMPLETE_TURN
    assert (
        f"  or discard it (what is open is closed, nothing deleted): inquiry run --discard-turn "
        f"--conversation {directory}; an embedder discards it with "
        "ToolCoordinator.discard_turn(find_incomplete_turn(conversation.stream)), "
        "the conversation held with `with conversation:`\n"
    ) in out
    status, out, err = run_in_process(
        ["run", "--discard-turn", "--conversation", str(directory)], capsys
    )
    assert (status, err) == (0, "")
    assert out == (
        "discarded the unfinished turn 1: closed 0 questions and 1 tool call, nothing deleted\n"
    )
    assert run_in_process(["check", str(directory)], capsys)[0] == 0
