"""The test run itself: nothing can hide in it.

A missing folder of real conversations skips their tests locally, saying
why, and fails them under ``CI=true``; a hung test fails, naming itself; the
hypothesis profile is chosen by ``INQUIRY_HYPOTHESIS``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from conftest import PROJECT
from process_helpers import is_running, kill_group, reaped, wait_for

if TYPE_CHECKING:
    from pathlib import Path


def _pytest(*args: str, cwd: Path = PROJECT, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"CI", "INQUIRY_JP_FIXTURES", "INQUIRY_HYPOTHESIS"}
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_missing_real_conversations_fail_under_ci(tmp_path: Path) -> None:
    """With CI=true, a test of the real conversations fails when they are absent, saying where."""
    missing = tmp_path / "nowhere"
    result = _pytest(
        "tests/test_fidelity.py",
        "tests/test_cli_check.py",
        CI="true",
        INQUIRY_JP_FIXTURES=str(missing),
    )
    assert result.returncode == 1
    assert f"CI=true: the real JP conversations not found at {missing}" in result.stdout
    assert f"CI=true: the JP conversation 17728322628-* not found at {missing}" in result.stdout
    assert " skipped" not in result.stdout.splitlines()[-1]


def test_missing_real_conversations_skip_locally_saying_why(tmp_path: Path) -> None:
    """Outside CI, their tests skip, and the summary says why."""
    missing = tmp_path / "nowhere"
    result = _pytest("tests/test_fidelity.py", INQUIRY_JP_FIXTURES=str(missing))
    assert result.returncode == 0
    reason = f"the real JP conversations not found at {missing} (set INQUIRY_JP_FIXTURES)"
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED [1]")]
    assert len(skipped) == 6
    assert all(line.endswith(reason) for line in skipped)


def test_a_hung_test_fails_naming_itself(tmp_path: Path) -> None:
    """A test that never ends is stopped by the per-test timeout and reported by name."""
    (tmp_path / "test_hangs.py").write_text(
        "import time\n\ndef test_waits_for_ever() -> None:\n    time.sleep(600)\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 1\n")
    result = _pytest("test_hangs.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "Timeout" in result.stdout
    assert "FAILED test_hangs.py::test_waits_for_ever" in result.stdout


def test_the_project_gives_every_test_a_timeout(pytestconfig: pytest.Config) -> None:
    """The project's pytest configuration sets the per-test limit the hung test above met."""
    assert float(pytestconfig.getini("timeout")) >= 60


def test_an_unknown_hypothesis_profile_is_refused() -> None:
    """INQUIRY_HYPOTHESIS names ci or deep; anything else stops the run, saying so."""
    result = _pytest("tests/test_turn_state.py", INQUIRY_HYPOTHESIS="deeep")
    assert result.returncode != 0
    assert "INQUIRY_HYPOTHESIS='deeep': expected one of ['ci', 'deep']" in (
        result.stdout + result.stderr
    )


def test_kill_group_ends_a_tools_group_and_never_the_runs_own() -> None:
    """`kill_group`: a session's group is killed; the run's own (every xdist worker's) never."""
    with reaped(subprocess.Popen(["sleep", "60"], start_new_session=True)) as sleeper:
        kill_group(sleeper.pid)
        wait_for(lambda: sleeper.poll() is not None or None, "the sleeper's end")
        assert not is_running(sleeper.pid)
    for group in (os.getpgrp(), 0, -1):
        with pytest.raises(pytest.fail.Exception, match="is the test run's own"):
            kill_group(group)
