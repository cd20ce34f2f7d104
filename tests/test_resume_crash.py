"""A real ``inquiry run`` killed (SIGKILL) at random moments, then ``--continue-turn``.

The scenario's tools count their runs in the workspace (``resume_tool.py``
appends ``start <tag>`` to ``runs.log`` each time it starts). It is killed
during tool runs, between them, while a question waits for the person at a
terminal (a pty), while one waits for the model (the fake API made slow),
and in the middle of a save of ``events.json`` (paused there by
``resume_programs.py``) — dozens of times with a fixed seed, the moments tied
to the run's progress (after a random one of its tools' starts), and most of
them required to land mid-turn. After each
kill, ``--continue-turn`` (itself killed again now and then) completes the
scenario, and then: no tool call whose response was on disk at a kill ran
again, every request has its one response, no inquiry id repeats within a
turn, both turns of the scenario are there whole, and no secret is on disk.
``inquiry check`` exits 3 exactly when a kill left the last turn blocked (4
when it left it unfinished with nothing open, as a SIGTERM does), and
``inquiry run`` without ``--continue-turn`` refuses such a conversation.

A killed run's tools die with it (their guard ends their group), and a
next writer stops what checks out as a dead run's tool before the call runs
again (no two runs of one call at once).

Two writers: while a continued run holds the conversation (its question on
screen), a second ``inquiry run --continue-turn`` and an ``inquiry sanitize``
are refused, naming it; the first then completes, and nothing is lost.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pexpect
import pytest
from coordinator_harness import assert_invariants
from fake_api import KEY, PROVIDER_KITS, FakeAPI
from process_helpers import PATIENCE, is_running, reaped, stop_signals_at_default, wait_for
from resume_scenario import (
    A_WORKS,
    CALLS,
    MODEL,
    SECRET,
    TAGS,
    TOOL,
    resume_files,
    run_argv,
    runs,
)
from run_helpers import answering, write

from coordinator import Conversation, find_incomplete_turn, load_conversation, save_conversation
from coordinator.cli._check import EXIT_AWAITING_MODEL, EXIT_INCOMPLETE_TURN
from coordinator.cli._main import main
from coordinator.store._running import RUNNING_FILE, TOKEN_VARIABLE
from coordinator.stream import EventEntry, ResumePhase
from machines import (
    Answered,
    Cancelled,
    InquiryRequest,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from fake_api import Recorded, Reply

HERE = Path(__file__).resolve().parent
PAUSING = HERE / "resume_programs.py"
#: The seed of every random choice here: a failure is reproducible.
SEED = 24


class Crashes:
    """A scenario, its answers and a conversation directory; runs of it, killed and continued.

    Every run it starts is reaped, its pipes closed, when ``ends`` closes
    (at the end of the test, whatever happened).
    """

    def __init__(
        self,
        root: Path,
        ends: contextlib.ExitStack,
        *,
        model: str = MODEL,
        backend: list[str] | None = None,
        a_works: float = A_WORKS,
    ) -> None:
        """Write the scenario (``a``'s tool working ``a_works`` s) and answers under ``root``."""
        self.scenario, self.answers = resume_files(root, model=model, a_works=a_works)
        self.directory = root / "conversation"
        self.ends = ends
        self.backend = backend or []
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        #: Each kill's view of the finished calls: tag -> runs counted then.
        self.finished_at_kills: list[dict[str, int]] = []
        self.blocked_kills = 0
        self.unfinished_kills = 0

    def argv(self, *extra: str) -> list[str]:
        """``inquiry run`` of the scenario into the directory, the person (and model) scripted."""
        return run_argv(self.scenario, self.answers, self.directory, *self.backend, *extra)

    def start(self, *extra: str, pause: tuple[str, int] | None = None) -> subprocess.Popen[bytes]:
        """Start a run (paused in a save with ``pause``), its output kept in files."""
        if pause is None:
            command = [sys.executable, "-m", "coordinator", *self.argv(*extra)]
        else:
            command = [sys.executable, str(PAUSING), pause[0], str(pause[1]), *self.argv(*extra)]
        with stop_signals_at_default():  # one is stopped by SIGTERM
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env
            )
        return self.ends.enter_context(reaped(process))

    def runs(self) -> Counter[str]:
        """How many times each tag's tool started, as ``runs.log`` counts them."""
        return runs(self.directory)

    def started(self, process: subprocess.Popen[bytes], count: int) -> bool:
        """Wait until tools have started ``count`` times in all; false if the run ended first."""

        def seen() -> bool | None:
            if self.runs().total() >= count:
                return True
            # Ended: whether they did just before the end.
            return self.runs().total() >= count if process.poll() is not None else None

        return wait_for(seen, f"tools started {count} times")

    def killed(self, process: subprocess.Popen[bytes]) -> None:
        """Kill ``process`` now (SIGKILL), and note what a kill must leave alone."""
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=PATIENCE)
        self.note_the_kill()

    def note_the_kill(self) -> None:
        """The calls finished at this kill, and check the readers' view of what it left."""
        if not (self.directory / "events.json").exists():
            return  # killed before the conversation existed
        stream = load_conversation(self.directory).stream
        calls = {
            entry.payload.id: str(entry.payload.arguments["tag"])
            for entry in stream
            if isinstance(entry, EventEntry) and isinstance(entry.payload, ToolCallRequest)
        }
        done = {
            calls[entry.payload.id]
            for entry in stream
            if isinstance(entry, EventEntry) and isinstance(entry.payload, ToolCallResponse)
        }
        counted = self.runs()
        self.finished_at_kills.append({tag: counted[tag] for tag in done})
        incomplete = find_incomplete_turn(stream)
        blocked = incomplete is not None and incomplete.blocked
        self.blocked_kills += blocked
        self.unfinished_kills += incomplete is not None
        status = main(["check", str(self.directory)], out=io.StringIO())
        if incomplete is None:
            assert status == 0
        else:
            assert status == (EXIT_INCOMPLETE_TURN if blocked else EXIT_AWAITING_MODEL)

    def refused_without_the_flag(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unfinished turn: inquiry run without --continue-turn refuses, writing nothing."""
        before = (self.directory / "events.json").read_bytes()
        capsys.readouterr()
        assert main(self.argv(), out=io.StringIO()) == 2
        err = capsys.readouterr().err
        assert "--continue-turn" in err
        assert (self.directory / "events.json").read_bytes() == before

    def continue_until_done(self, rng: random.Random, *, kill_again: float = 0.0) -> None:
        """Run ``--continue-turn`` until it completes, killing it again now and then."""
        for _ in range(6):
            process = self.start("--continue-turn")
            if rng.random() < kill_again:
                time.sleep(rng.uniform(0.2, 0.9))
                if process.poll() is None:
                    self.killed(process)
                    continue
            _, err = process.communicate(timeout=PATIENCE)
            assert process.returncode == 0, err.decode()
            return
        pytest.fail("--continue-turn never completed")

    def assert_whole(self, *, ran: tuple[str, ...] = TAGS) -> None:
        """Both turns whole, each call answered once, nothing finished ran again, no secret.

        ``ran``: the tags whose tools must have run (a call a stop closed never may).
        """
        conversation = load_conversation(self.directory)
        assert find_incomplete_turn(conversation.stream) is None
        assert len(conversation.stream.turns()) == 2
        responses = Counter(
            entry.payload.id
            for entry in conversation.stream
            if isinstance(entry, EventEntry) and isinstance(entry.payload, ToolCallResponse)
        )
        assert sorted(responses) == [*CALLS]
        assert set(responses.values()) == {1}
        assert_invariants(conversation, [SECRET])  # paired, ids unique per turn, no secret
        counted = self.runs()
        for finished in self.finished_at_kills:
            assert {tag: counted[tag] for tag in finished} == finished, "a finished tool ran again"
        assert all(counted[tag] >= 1 for tag in ran)


@pytest.fixture
def ends() -> Iterator[contextlib.ExitStack]:
    """Where a test's runs are handed, to be reaped at its end, their pipes closed."""
    with contextlib.ExitStack() as stack:
        yield stack


@pytest.fixture
def rng() -> random.Random:
    """The seeded source of every random moment."""
    return random.Random(SEED)  # noqa: S311 - a reproducible schedule, not a secret


#: How often the scenario's tools start in a whole run: a, b, c thrice (go, pin, done), d
#: twice (fix, done), e.
TOOL_STARTS = 8
#: Of the five kills of a round, at least this many must leave the turn blocked (a tool
#: working, or a question open): the test cannot pass without killing a turn mid-way.
BLOCKED_AT_LEAST = 3


@pytest.mark.parametrize("round_", range(3))
def test_killed_at_random_moments_the_run_is_continued_whole(
    tmp_path: Path,
    ends: contextlib.ExitStack,
    rng: random.Random,
    capsys: pytest.CaptureFixture[str],
    round_: int,
) -> None:
    """Five kills a round at random moments of the turns (tools running, between steps).

    The moments are tied to the run's progress, not to the clock (a loaded
    machine starts Python slowly): a random one of the tools' starts, then a
    random moment more. Most kills must find the turn blocked.
    """
    rng.seed(SEED + round_)
    blocked = 0
    for attempt in range(5):
        crashes = Crashes(tmp_path / f"{attempt}", ends)
        process = crashes.start()
        if crashes.started(process, rng.randint(1, TOOL_STARTS)):
            time.sleep(rng.uniform(0, 0.1))
        if process.poll() is None:
            crashes.killed(process)
        else:
            process.communicate(timeout=PATIENCE)
        if crashes.unfinished_kills:
            crashes.refused_without_the_flag(capsys)
        blocked += crashes.blocked_kills
        crashes.continue_until_done(rng, kill_again=0.3)
        crashes.assert_whole()
    assert blocked >= BLOCKED_AT_LEAST, f"only {blocked} of 5 kills landed mid-turn"


def test_stopped_by_a_signal_mid_tool_the_turn_is_refused_then_continued_whole(
    tmp_path: Path,
    ends: contextlib.ExitStack,
    rng: random.Random,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGTERM while a tool works: closed and saved, nothing open; refused; continued whole.

    The signal is sent once ``a``'s tool has started, and ``a`` works until
    the stop ends it (the first cycle's other tool, ``b``, may start first,
    or not at all before the stop: either is the run's right).
    """
    crashes = Crashes(tmp_path, ends, a_works=PATIENCE)
    process = crashes.start()
    a = _started(crashes.directory, "a", process)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 128 + signal.SIGTERM, err.decode()
    assert not is_running(a)  # the stop ended a's tool
    incomplete = find_incomplete_turn(load_conversation(crashes.directory).stream)
    assert incomplete is not None
    assert incomplete.phase is ResumePhase.AWAITING_FOLLOW_UP
    assert main(["check", str(crashes.directory)], out=io.StringIO()) == EXIT_AWAITING_MODEL
    crashes.refused_without_the_flag(capsys)
    crashes.continue_until_done(rng)
    crashes.assert_whole(ran=("a", "c", "d", "e"))  # the turn's later cycles, then turn 2
    assert crashes.runs()["a"] == 1  # its call was closed by the stop: not run again


def test_killed_in_the_middle_of_saves_the_run_is_continued_whole(
    tmp_path: Path, ends: contextlib.ExitStack, rng: random.Random
) -> None:
    """Paused in a save of events.json (written not synced, not renamed, half appended), killed."""
    # A whole run passes these points some 20, 18 and 1 times (resume_programs.py counts them).
    points = [("fsync", n) for n in rng.sample(range(1, 19), 3)]
    points += [("pwrite", n) for n in rng.sample(range(1, 17), 3)] + [("replace", 1)]
    for number, pause in enumerate(points):
        crashes = Crashes(tmp_path / str(number), ends)
        process = crashes.start(pause=pause)
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        if line.startswith("paused"):
            crashes.killed(process)
        else:  # the run finished before that save: nothing to continue, nothing broken
            process.communicate(timeout=PATIENCE)
        crashes.continue_until_done(rng)
        crashes.assert_whole()


def _pty(crashes: Crashes, *extra: str) -> pexpect.spawn[bytes]:
    """A run at a pseudo-terminal (the person types; the answers file plays only the model).

    Closed (killed if it still runs) at the end of the test.
    """
    env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    run: pexpect.spawn[bytes] = pexpect.spawn(
        sys.executable,
        ["-m", "coordinator", *crashes.argv("--tty", "--verbose", *extra)],
        env=env,
        dimensions=(50, 200),
        timeout=PATIENCE,
    )
    crashes.ends.callback(run.close, force=True)
    return run


@pytest.mark.parametrize("prompt", ["c: go?", "c: pin?"])
def test_killed_while_a_question_waits_for_the_person_it_is_adopted(
    tmp_path: Path, ends: contextlib.ExitStack, prompt: str
) -> None:
    """Killed at the prompt: continued, the same question is answered under its recorded id."""
    crashes = Crashes(tmp_path, ends)
    run = _pty(crashes)
    if prompt == "c: pin?":
        run.expect_exact("c: go?")
        run.expect_exact("[y/n/Y/N] >")
        run.send("y\r")
    run.expect_exact(prompt)
    waiting = "call_1_2_1.go.1" if prompt == "c: go?" else "call_1_2_1.pin.1"
    run.kill(signal.SIGKILL)
    run.close()
    crashes.note_the_kill()
    incomplete = find_incomplete_turn(load_conversation(crashes.directory).stream)
    assert incomplete is not None
    (call,) = incomplete.waiting
    assert call.waiting is not None
    assert call.waiting.id == waiting
    crashes.continue_until_done(random.Random(SEED))  # noqa: S311 - not a secret
    crashes.assert_whole()
    conversation = load_conversation(crashes.directory)
    ids = [
        payload.id
        for entry in conversation.stream
        if isinstance(entry, EventEntry)
        and isinstance(payload := entry.payload, InquiryRequest | Answered | Cancelled | Redacted)
        and payload.id.startswith("call_1_2_1.")
    ]
    # Adopted: the waiting request got its one response under its own id, and nothing was re-asked.
    assert ids.count(waiting) == 2
    assert "call_1_2_1.go.2" not in ids
    assert "call_1_2_1.pin.2" not in ids


def test_killed_while_the_model_is_asked_its_question_is_adopted(
    tmp_path: Path, ends: contextlib.ExitStack
) -> None:
    """Killed while the model works on a question: continued, the model answers it."""
    kit = PROVIDER_KITS[0]
    answer = answering(kit)
    first = threading.Event()

    def slow(request: Recorded) -> Reply:
        if not first.is_set():
            first.set()
            return answer(request).held()  # the first request: the run is killed meanwhile
        return answer(request)

    with FakeAPI(slow) as api:
        backend = [
            "--backend",
            kit.name,
            "--model",
            "m",
            "--base-url",
            api.base_url + kit.url_suffix,
        ]
        crashes = Crashes(tmp_path, ends, model="", backend=backend)
        crashes.env[f"{kit.name.upper()}_API_KEY"] = KEY
        process = crashes.start()
        assert api.wait_for_requests(1, timeout=PATIENCE)
        crashes.killed(process)
        api.release()  # to no one: the run that asked is gone
        incomplete = find_incomplete_turn(load_conversation(crashes.directory).stream)
        assert incomplete is not None
        assert [call.waiting.id for call in incomplete.waiting if call.waiting] == [
            "call_1_3_1.fix.1"
        ]
        crashes.continue_until_done(random.Random(SEED))  # noqa: S311 - not a secret
    crashes.assert_whole()
    assert len(api.requests) == 2


def test_a_second_writer_of_a_continued_run_is_refused_and_nothing_is_lost(
    tmp_path: Path, ends: contextlib.ExitStack, capsys: pytest.CaptureFixture[str]
) -> None:
    """While --continue-turn waits at its prompt, another run and a sanitize are refused."""
    crashes = Crashes(tmp_path, ends)
    first = _pty(crashes)
    first.expect_exact("c: go?")
    first.kill(signal.SIGKILL)
    first.close()
    crashes.note_the_kill()
    continued = _pty(crashes, "--continue-turn")
    continued.expect_exact("c: go?")
    continued.expect_exact("[y/n/Y/N] >")
    before = (crashes.directory / "events.json").read_bytes()
    capsys.readouterr()
    assert main(crashes.argv("--continue-turn"), out=io.StringIO()) == 2
    assert f"another process (pid {continued.pid})" in capsys.readouterr().err
    assert main(["sanitize", str(crashes.directory)], out=io.StringIO()) == 2
    assert f"(pid {continued.pid})" in capsys.readouterr().err
    assert (crashes.directory / "events.json").read_bytes() == before
    continued.send("y\r")
    continued.expect_exact("c: pin?")
    continued.expect_exact("(hidden) >")
    continued.send(SECRET + "\r")
    continued.expect(pexpect.EOF)
    continued.close()
    assert continued.exitstatus == 0
    crashes.assert_whole()


#: One turn, one call of a tool that works a minute, holding a lock that shows an overlap.
SLOW = f"""
[defaults]
run = "unattended"

[tools.work]
command = ["{sys.executable}", "{TOOL}"]

[[turns]]
message = "one"
reply = "done"

[[turns.cycles]]
calls = [{{ tool = "work", arguments = {{ tag = "slow", sleep = 60, hold = true }} }}]
"""


def _started(directory: Path, tag: str, process: subprocess.Popen[bytes]) -> int:
    """Wait until the tool of ``tag`` has started in ``directory``'s workspace: its pid."""

    def pid() -> int | None:
        pids = _tool_pids(directory / "workspace" / "runs.log", tag)
        return pids[0] if pids else None

    return wait_for(pid, f"the tool of {tag} started", process=process)


def _tool_pids(log: Path, tag: str | None = None) -> list[int]:
    """The pids of the tools ``log`` saw start (of ``tag``'s, when given), in order."""
    text = log.read_text() if log.exists() else ""
    return [
        int(words[2])
        for words in map(str.split, text.splitlines())
        if len(words) == 3 and words[0] == "start" and tag in (None, words[1])
    ]


def test_a_killed_runs_tool_dies_with_it_and_its_call_runs_again_alone(
    tmp_path: Path, ends: contextlib.ExitStack
) -> None:
    """SIGKILL while a tool works: its tool dies with it; --continue-turn runs the call, alone.

    The tool's guard ends its group when the run dies: it does not work on to
    finish its side effect after the run that asked for it has gone, and the
    continued run, finding nothing left, says it stopped nothing.
    """
    scenario = write(tmp_path / "scenario.toml", SLOW)
    directory = tmp_path / "conversation"
    argv = [sys.executable, "-m", "coordinator", "run", str(scenario), "-c", str(directory)]
    process = ends.enter_context(
        reaped(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    )
    leftover = None
    try:
        leftover = _started(directory, "slow", process)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=PATIENCE)
        wait_for(lambda: True if not is_running(leftover) else None, "the tool's end")
        continued = subprocess.run(
            [*argv, "--continue-turn"],
            env=dict(os.environ, RESUME_TOOL_NO_SLEEP="1"),  # the call, run again, is quick
            capture_output=True,
            text=True,
            timeout=PATIENCE,
            check=False,
        )
        assert continued.returncode == 0, continued.stderr
        assert "stopped" not in continued.stderr
        assert "overlap" not in (directory / "workspace" / "runs.log").read_text()
        assert runs(directory) == {"slow": 2}
        assert find_incomplete_turn(load_conversation(directory).stream) is None
    finally:
        if leftover is not None and is_running(leftover):
            os.kill(leftover, signal.SIGKILL)


def _start_time(pid: int) -> int:
    """Process ``pid``'s start time, in clock ticks since boot (``/proc/<pid>/stat``)."""
    return int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[19])


def _noted(
    directory: Path, holder: int, holder_start: int, token: str, *groups: tuple[int, int]
) -> None:
    """Write the record of running tools a writer ``holder`` of run ``token`` would have left."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    record = {
        "holder": {"pid": holder, "start": holder_start},
        "boot": boot,
        "token": hashlib.sha256(token.encode()).hexdigest(),
        "groups": [{"pgid": pgid, "start": start} for pgid, start in groups],
    }
    (directory / RUNNING_FILE).write_text(json.dumps(record))


def _take_over(directory: Path) -> None:
    """Take the conversation's writer lock afresh, as the next writer does, then let it go."""
    with load_conversation(directory):
        pass


def test_only_the_noted_tool_of_a_dead_writer_is_stopped(tmp_path: Path) -> None:
    """Noted with the run's token: stopped; noted with another start, or a live holder's: left."""
    directory = tmp_path / "conversation"
    conversation = Conversation.new(base_config={})
    save_conversation(conversation, directory)
    conversation.close()
    dead = subprocess.Popen(["true"])
    dead.wait()
    token = "the run's own"
    env = dict(os.environ, **{TOKEN_VARIABLE: token})
    sleepers = [
        subprocess.Popen(["sleep", "60"], start_new_session=True, env=env) for _ in range(3)
    ]
    try:
        mine, reused, holders = sleepers
        _noted(
            directory,
            dead.pid,
            1,
            token,
            (mine.pid, _start_time(mine.pid)),
            (reused.pid, _start_time(reused.pid) + 1),  # the pid noted is another process now
        )
        _take_over(directory)
        assert not is_running(mine.pid)
        assert is_running(reused.pid)
        assert not (directory / RUNNING_FILE).exists()
        # The holder still runs (it let the lock go): its tools are its own.
        _noted(
            directory,
            holders.pid,
            _start_time(holders.pid),
            token,
            (reused.pid, _start_time(reused.pid)),
        )
        _take_over(directory)
        assert is_running(reused.pid)
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


def _tool_ended(pid: int) -> bool | None:
    """True once ``pid`` is no longer a run of ``resume_tool.py`` (``None`` while it is)."""
    try:
        ours = TOOL.name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return None if ours and is_running(pid) else True


@pytest.fixture(autouse=True)
def _no_stray_processes(tmp_path: Path) -> Iterator[None]:
    """The tools the killed runs left finish on their own (a short sleep at most): awaited."""
    yield
    for log in tmp_path.rglob("runs.log"):
        for pid in _tool_pids(log):
            wait_for(functools.partial(_tool_ended, pid), f"the tool {pid} ended")
