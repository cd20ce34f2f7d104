"""docs/resume.md: the crash-and-continue story runs as the page tells it.

The page's four `sh` commands are run as written (through bash, from a copy
of the tour at the same relative path, ``.venv/bin/inquiry`` being this
environment's command, the conversation directory moved from
``/tmp/inquiry-crash`` into the test's own): the tour at a pseudo-terminal,
answered up to the deploy token; the kill through the lock file's pid;
``inquiry check``, which exits 3 and prints the page's lines; the continued
run, which completes the turn with nothing finished run again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pexpect
from coordinator_harness import assert_invariants
from process_helpers import PATIENCE
from run_helpers import PROJECT, TOUR_SECRET, outcomes

from coordinator import find_incomplete_turn, load_conversation
from machines import Redacted

if TYPE_CHECKING:
    from pathlib import Path

PAGE = PROJECT / "docs" / "resume.md"
SECTION = "## Crash and continue, in four commands"
DOCUMENTED = "/tmp/inquiry-crash"  # noqa: S108 - the page's example path, replaced here


def _blocks() -> tuple[list[str], str]:
    """The section's `sh` commands, in order, and the output block it shows."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) : text.index("\n## ", text.index(SECTION) + 1)]
    blocks = re.findall(r"^```(\w*)\n(.*?)\n```$", section, re.MULTILINE | re.DOTALL)
    commands = [body for language, body in blocks if language == "sh"]
    (shown,) = [body for language, body in blocks if not language]
    return commands, shown


def test_the_page_kills_the_tour_and_continues_it(tmp_path: Path) -> None:
    """Killed at the token prompt: check exits 3 as shown; --continue-turn completes the turn."""
    commands, shown = _blocks()
    assert len(commands) == 4
    shutil.copytree(PROJECT / "examples" / "tour", tmp_path / "examples" / "tour")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "inquiry").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m coordinator "$@"\n')
    (bin_dir / "inquiry").chmod(0o755)
    directory = tmp_path / "inquiry-crash"
    run, kill, check, carry_on = (
        command.replace(DOCUMENTED, str(directory)) for command in commands
    )
    env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")

    tour = pexpect.spawn(
        "bash", ["-c", run], cwd=str(tmp_path), env=env, dimensions=(50, 200), timeout=PATIENCE
    )
    try:
        tour.expect_exact("[y/n/Y/N] >")
        tour.send("Y\r")  # apply, and remember it for the second edit
        tour.expect_exact("up/down or a number")
        tour.send("\r")  # the bump offered
        tour.expect_exact("The changelog headline")
        tour.expect_exact(">")
        tour.send("\r")  # the headline offered
        tour.expect_exact("[y/Y/n/N/p/r/e] >")
        tour.send("y\r")  # run deploy
        tour.expect_exact("The deploy token for staging?")
        tour.expect_exact("(hidden) >")
        subprocess.run(["bash", "-c", kill], cwd=tmp_path, check=True, timeout=PATIENCE)
        tour.expect(pexpect.EOF)
    finally:
        tour.close(force=True)
    assert tour.signalstatus == 9
    version = (directory / "workspace" / "VERSION").read_text()

    checked = subprocess.run(
        ["bash", "-c", check],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert checked.returncode == 3, checked.stderr
    for line in shown.replace(DOCUMENTED, str(directory)).splitlines():
        assert f"{line}\n" in checked.stdout

    continued = subprocess.run(
        ["bash", "-c", carry_on],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert (continued.returncode, continued.stderr) == (0, "")
    conversation = load_conversation(directory)
    assert find_incomplete_turn(conversation.stream) is None
    assert_invariants(conversation, [TOUR_SECRET])
    answers = outcomes(conversation)
    assert answers["call_1_4_1.token.1"] == Redacted(id="call_1_4_1.token.1")  # adopted
    assert "call_1_4_1.token.2" not in answers
    assert (directory / "workspace" / "VERSION").read_text() == version  # not released twice
    done = subprocess.run(
        ["bash", "-c", check], cwd=tmp_path, capture_output=True, check=False, timeout=PATIENCE
    )
    assert done.returncode == 0
