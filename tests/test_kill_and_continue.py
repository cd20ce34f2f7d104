"""A run killed while its tool works, then continued: a keyed side effect happens once.

The tool (``idempotent_tool.py``) pays once per idempotency key. Each
iteration starts ``inquiry run`` on a fresh conversation, kills it (SIGKILL)
either at a random moment of its tool's work before the payment, or just
after the payment and before the tool's response can be saved (the window
in which a finished tool's call is continued and run again), then continues
the turn (``--continue-turn``) until it completes. The killed run's tool
dies with it (its guard ends its group); the continued call runs again under
the same key, and the tool refuses to pay twice: across every iteration, one
payment per call, and the call whose payment was made before the kill did
run again. ``inquiry check`` and the continued run say the call may have
completed.

``INQUIRY_KILL_LOOPS`` sets the iterations (8 by default; the report of
issue 36 ran 100).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from process_helpers import PATIENCE, reaped, stop_signals_at_default, wait_for
from run_helpers import write

from coordinator import find_incomplete_turn, load_conversation
from coordinator.cli._check import EXIT_INCOMPLETE_TURN, MAY_HAVE_COMPLETED
from coordinator.cli._main import main

if TYPE_CHECKING:
    from collections.abc import Iterator

TOOL = Path(__file__).with_name("idempotent_tool.py")
#: Iterations of the loop; the default keeps the suite quick.
LOOPS = int(os.environ.get("INQUIRY_KILL_LOOPS", "8"))
#: The seed of every random moment: a failure is reproducible.
SEED = 36

SCENARIO = f"""
[defaults]
run = "unattended"

[tools.pay]
command = ["{sys.executable}", "{TOOL}"]

[[turns]]
message = "pay"
reply = "paid"

[[turns.cycles]]
calls = [{{ tool = "pay", arguments = {{ before = 0.3, after = 0.6 }} }}]
"""


@pytest.fixture
def ends() -> Iterator[contextlib.ExitStack]:
    """Where the runs are handed, to be reaped at the test's end, their pipes closed."""
    with contextlib.ExitStack() as stack:
        yield stack


def _lines(path: Path) -> list[str] | None:
    """The lines of ``path``; ``None`` while it holds none (for ``wait_for``)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return lines or None


@pytest.mark.timeout(max(120, 10 * LOOPS))  # each iteration starts Python twice, or more
def test_a_keyed_side_effect_happens_once_however_the_run_is_killed_and_continued(
    tmp_path: Path, ends: contextlib.ExitStack
) -> None:
    """One payment per call over every kill and continue; killed after paying, the call reran."""
    rng = random.Random(SEED)  # noqa: S311 - a reproducible schedule, not a secret
    scenario = write(tmp_path / "scenario.toml", SCENARIO)
    reran_after_paying = 0
    for iteration in range(LOOPS):
        directory = tmp_path / f"conversation{iteration}"
        workspace = directory / "workspace"
        argv = [sys.executable, "-m", "coordinator", "run", str(scenario), "-c", str(directory)]
        with stop_signals_at_default():
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ends.enter_context(reaped(process))
        after_paying = iteration % 2 == 1
        if after_paying:  # paid, its response not yet saved (the tool works 0.6 s more)
            wait_for(partial(_lines, workspace / "effects.log"), "the payment", process=process)
        else:
            wait_for(partial(_lines, workspace / "runs.log"), "the tool's start", process=process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=rng.uniform(0, 0.25))  # a moment of its work, before paying
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=PATIENCE)
        report = io.StringIO()
        assert main(["check", str(directory)], out=report) == EXIT_INCOMPLETE_TURN
        assert (
            f"    open: pay [call_1_1_1]: {MAY_HAVE_COMPLETED}; runs again\n" in report.getvalue()
        )
        continued = subprocess.run(
            [*argv, "--continue-turn"],
            capture_output=True,
            text=True,
            timeout=PATIENCE,
            check=False,
        )
        assert continued.returncode == 0, continued.stderr
        assert f"  -> pay [call_1_1_1] {MAY_HAVE_COMPLETED}; runs again\n" in continued.stdout
        assert find_incomplete_turn(load_conversation(directory).stream) is None
        payments = _lines(workspace / "effects.log") or []
        assert len(payments) == 1, f"iteration {iteration}: paid {len(payments)} times"
        if after_paying:
            runs = _lines(workspace / "runs.log") or []
            assert len(runs) >= 2, f"iteration {iteration}: the call paid for did not run again"
            reran_after_paying += 1
    assert reran_after_paying == LOOPS // 2


#: Asks `first`, then `second`; the first time it holds `first`'s answer, it
#: notes so and waits to be killed instead of asking on.
_TWO_QUESTIONS = """\
import json, pathlib, sys, time
request = json.load(sys.stdin)
answers = request["answers"]
marker = pathlib.Path("answered-first")
for name in ("first", "second"):
    if name not in answers:
        if name == "second" and not marker.exists():
            marker.write_text("1")
            time.sleep(600)
        question = {"id": name, "text": name + "?", "answer_type": {"type": "boolean"}}
        print(json.dumps({"type": "needs_input", "question": question}))
        sys.exit(0)
print(json.dumps({"type": "success", "content": json.dumps(answers, sort_keys=True)}))
"""


def test_a_continued_turn_counts_the_answers_file_entries_it_used_before_the_kill(
    tmp_path: Path, ends: contextlib.ExitStack
) -> None:
    """Killed after the file's first answer, continued: that entry is used, the next one is next.

    The note of unused entries names only the entry no prompt of either run
    took, and the second question takes the second entry, as the run that
    died would have given it.
    """
    tool = write(tmp_path / "two.py", _TWO_QUESTIONS)
    scenario = write(
        tmp_path / "scenario.toml",
        f"""\
        [tools.ask]
        command = ["{sys.executable}", "{tool}"]
        run = "unattended"

        [[turns]]
        message = "go"
        reply = "done"

        [[turns.cycles]]
        calls = [{{ tool = "ask" }}]
        """,
    )
    answers = write(
        tmp_path / "answers.toml",
        """\
        [[answers]]
        value = true
        [[answers]]
        value = false
        [[answers]]
        question = "never"
        value = true
        """,
    )
    directory = tmp_path / "conversation"
    argv = [
        *(sys.executable, "-m", "coordinator", "run", str(scenario)),
        *("-c", str(directory), "--answers", str(answers)),
    ]
    with stop_signals_at_default():
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ends.enter_context(reaped(process))
    marker = directory / "workspace" / "answered-first"
    wait_for(partial(_lines, marker), "the first answer", process=process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=PATIENCE)
    continued = subprocess.run(
        [*argv, "--continue-turn"], capture_output=True, text=True, timeout=PATIENCE, check=False
    )
    assert continued.returncode == 0, continued.stderr
    assert "note: entries of the answers file no prompt used: answers[2]\n" in continued.stdout
    assert '<- ask succeeded: {"first": true, "second": false}' in continued.stdout
