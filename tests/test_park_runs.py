"""Park across processes: ``inquiry run`` parks, ``inquiry check`` tells, another run continues.

The first ``inquiry run`` has nobody to ask and the detached policy
``park``: it parks the question, lets the rest of the batch finish, stops
with exit status 3, and prints what waits and the one command that
continues. ``inquiry check`` lists the parked question (id, tool, text,
type, since when) and exits 3; ``inquiry export`` says it was parked. A
second process continues the turn: the answers file answers it (or a
person at a pseudo-terminal, for a secret), recorded as parked then
answered, and no finished tool runs again (the tools count their runs in
the workspace).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from process_helpers import PATIENCE
from resume_scenario import TOOL, runs
from run_helpers import TOUR_SECRET, TOUR_TOOLS, every_byte, seeded, write
from test_terminal_pty import Session

from coordinator import EventEntry, load_conversation
from coordinator._recorded_routes import RecordedRoute, recorded_route
from machines import Answered, Redacted

PARKING = f"""
[defaults]
run = "unattended"
detached = "park"

[tools.quick]
command = ["{sys.executable}", "{TOOL}"]

[tools.asks]
command = ["{sys.executable}", "{TOOL}"]

[[turns]]
message = "one"
reply = "done one"

[[turns.cycles]]
calls = [
    {{ tool = "quick", arguments = {{ tag = "a" }} }},
    {{ tool = "asks", arguments = {{ tag = "b", asks = [["go", "boolean"]] }} }},
]

[[turns.cycles]]
calls = [{{ tool = "quick", arguments = {{ tag = "c" }} }}]
"""

ANSWERS = """
[[answers]]
tool = "asks"
question = "go"
value = true
"""


def inquiry(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``inquiry`` in a process of its own, no terminal: its status and output."""
    return subprocess.run(
        [sys.executable, "-m", "coordinator", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        stdin=subprocess.DEVNULL,
        check=False,
        start_new_session=True,  # no controlling terminal: nobody can be asked
    )


def _routes(directory: Path) -> dict[str, RecordedRoute | None]:
    saved = load_conversation(directory)
    return {
        entry.payload.id: recorded_route(entry.metadata)
        for entry in saved.stream
        if isinstance(entry, EventEntry) and isinstance(entry.payload, Answered | Redacted)
    }


def test_a_parked_turn_is_continued_by_another_process_and_no_finished_tool_runs_again(
    tmp_path: Path,
) -> None:
    """Parked (exit 3, what waits, the command); checked (3); continued (0); a and c ran once."""
    scenario = write(tmp_path / "scenario.toml", PARKING)
    answers = write(tmp_path / "answers.toml", ANSWERS)
    directory = tmp_path / "conversation"
    first = inquiry("run", scenario, "--conversation", directory)
    assert first.returncode == 3, first.stderr
    assert "~ asks · go: parked (nobody to ask: detached policy park)" in first.stdout
    assert "the turn waits: 1 prompt was parked for an answer given later" in first.stdout
    assert "    asks · go (boolean): b: go?" in first.stdout
    command = f"inquiry run {scenario} --conversation {directory} --continue-turn"
    assert f"continue it with `{command}`" in first.stderr
    assert runs(directory) == {"a": 1, "b": 1}  # c, in the next cycle, never started

    checked = inquiry("check", directory)
    assert checked.returncode == 3
    assert "did not finish: parked (asks)" in checked.stdout
    (waits,) = [line for line in checked.stdout.splitlines() if "waits for go" in line]
    assert "waits for go (boolean): 'b: go?' [call_1_1_2.go.1], parked since " in waits
    summary = json.loads(inquiry("check", directory, "--json").stdout)
    (open_call,) = summary["incomplete_turn"]["open_calls"]
    assert open_call["parked"]["prompt"] == "tool"
    exported = inquiry("export", directory).stdout
    assert "_The question was parked by the detached policy at" in exported

    second = inquiry(
        "run", scenario, "--answers", answers, "--conversation", directory, "--continue-turn"
    )
    assert second.returncode == 0, second.stderr
    assert "go was parked for an answer" in second.stdout
    # a finished before: never again. b stopped to ask; continued, it runs again and
    # asks exactly the parked question (taken up under its id), then runs with the answer.
    assert runs(directory) == {"a": 1, "b": 3, "c": 1}
    assert _routes(directory)["call_1_1_2.go.1"] == RecordedRoute(
        route="parked_then_answered", by="answers_file"
    )
    assert inquiry("check", directory).returncode == 0
    assert "parked then answered (by answers file)" in inquiry("check", directory).stdout


def test_a_parked_secret_is_given_at_a_terminal_when_the_turn_is_continued(
    tmp_path: Path,
) -> None:
    """Parked without a terminal; continued in a pty: typed, redacted, never on disk."""
    seeded(tmp_path)
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [workspace]
        seed = "seed"
        [defaults]
        run = "unattended"
        detached = "park"
        {TOUR_TOOLS}
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{{ tool = "deploy", arguments = {{ environment = "staging" }} }}]
        """,
    )
    directory = tmp_path / "conversation"
    first = inquiry("run", scenario, "--conversation", directory)
    assert first.returncode == 3, first.stderr
    assert "deploy · token (secret): The deploy token for staging?" in first.stdout
    run = Session(tmp_path, scenario, ("--verbose", "--continue-turn"))
    try:
        run.expect("token was parked for an answer")
        run.expect("(hidden) >")
        run.type(TOUR_SECRET + "\r")
        run.expect("matched the expected fingerprint")
        assert run.finish() == 0
    finally:
        run.close()
    assert TOUR_SECRET not in run.screen
    assert TOUR_SECRET.encode() not in every_byte(directory)
    assert _routes(directory) == {
        "call_1_1_1.token.1": RecordedRoute(route="parked_then_answered", by="person")
    }


PARK_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "park" / "scenario.toml"


def test_the_park_example_runs_as_the_readme_says(tmp_path: Path) -> None:
    """The park example: 2 parked, exit 3; check 3; continued at a terminal, no release redone."""
    directory = tmp_path / "conversation"
    first = inquiry("run", PARK_EXAMPLE, "--no-interactive", "--conversation", directory)
    assert first.returncode == 3, first.stderr
    assert "the turn waits: 2 prompts were parked" in first.stdout
    assert inquiry("check", directory).returncode == 3
    run = Session(tmp_path, PARK_EXAMPLE, ("--continue-turn",))
    try:
        # The two parked calls are run again at once, each in its own tool
        # process: whichever asks first is on screen first, so both orders hold.
        replies = {b"[y/n/Y/N] >": "y\r", b"(hidden) >": TOUR_SECRET + "\r"}
        prompts = list(replies)
        for _ in replies:
            shown = prompts[run.child.expect_exact(prompts)]
            prompts.remove(shown)
            run.type(replies[shown])
        assert run.finish() == 0
    finally:
        run.close()
    workspace = directory / "workspace"
    assert (workspace / "VERSION").read_text().strip() == "1.4.3"  # released once, not again
    assert "the" in (workspace / "notes.txt").read_text()
    assert inquiry("check", directory).returncode == 0
