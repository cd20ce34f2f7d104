"""``inquiry run --continue-turn`` and ``inquiry check`` on a turn a dead run left.

Each test writes the conversation a run of the scenario left when it died
(its turns marked with the scenario turn they play, as ``inquiry run`` marks
them), then runs the command in process: ``check`` says what blocks the turn
and exits 3 (4 when nothing is open and the turn waits for the model);
``run`` without ``--continue-turn`` refuses every unfinished turn, writing
nothing, in one line whose command can be pasted as it is;
``run --continue-turn`` continues the turn, finished calls untouched, then
plays the rest of the scenario; a turn the scenario does not play is not
continued. The real kills are in ``test_resume_crash.py``.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import assert_invariants
from resume_scenario import SECRET, TOOL, resume_files, run_argv, runs
from run_helpers import every_byte, write

from coordinator import EventEntry, find_incomplete_turn, load_conversation, save_conversation
from coordinator.cli._check import EXIT_AWAITING_MODEL, EXIT_INCOMPLETE_TURN
from coordinator.cli._command_lines import command_line
from coordinator.cli._main import main
from coordinator.cli._run_continue import TURN_MARKER, turn_marker
from coordinator.cli._run_result import RunOptions
from coordinator.cli._scenario import load_scenario
from coordinator.store import Conversation
from coordinator.store._lock import LOCK_FILE
from machines import (
    Answered,
    AnswerType,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    JsonValue,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from pathlib import Path


class Left:
    """The scenario, its answers, and a conversation directory a dead run left."""

    def __init__(self, root: Path) -> None:
        """Write the scenario and its answers under ``root``."""
        self.scenario, self.answers = resume_files(root)
        self.directory = root / "conversation"

    def argv(self, *extra: str) -> list[str]:
        """``inquiry run`` of the scenario into the directory, the person and model scripted."""
        return run_argv(self.scenario, self.answers, self.directory, *extra)

    def died_in(self, turn: int, *events: Event, marked: bool = True) -> None:
        """Save the conversation with scenario turn ``turn`` (0: the first) begun as ``events``."""
        conversation = Conversation.new(metadata={"title": "left"}, base_config={})
        metadata = turn_marker(load_scenario(self.scenario), turn) if marked else None
        conversation.stream.append(TurnStart(), metadata=metadata)
        for event in events:
            conversation.stream.append(event)
        save_conversation(conversation, self.directory)
        conversation.close()
        (self.directory / "workspace").mkdir()

    def files(self) -> dict[str, bytes]:
        """Every file of the conversation but the lock file."""
        return {
            path.name: path.read_bytes()
            for path in self.directory.iterdir()
            if path.is_file() and path.name != LOCK_FILE
        }


def work(call_id: str, tag: str, **arguments: JsonValue) -> ToolCallRequest:
    """A call of the scenario's tool, as the scenario makes it."""
    return ToolCallRequest(id=call_id, name="work", arguments={"tag": tag, **arguments})


#: The first cycle of the scenario's first turn, as played: its message and two calls.
FIRST_CYCLE: tuple[Event, ...] = (
    ChatRequest(content="one"),
    ChatResponse.message("Two at once."),
    work("call_1_1_1", "a", sleep=0.15),
    work("call_1_1_2", "b"),
)
ASKS: JsonValue = [["go", "boolean"], ["pin", "secret"]]
GO = InquiryRequest(
    id="call_1_2_1.go.1",
    source=InquirySource.tool("work"),
    question=InquiryQuestion(text="c: go?", answer_type=AnswerType.boolean(), id="go"),
)


def done(call_id: str, tag: str) -> ToolCallResponse:
    """The response the tool gave ``call_id``."""
    return ToolCallResponse(id=call_id, content=f"done {tag}", is_error=False)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``inquiry`` in process: its status, stdout and stderr."""
    capsys.readouterr()
    out = io.StringIO()
    status = main(argv, out=out)
    return status, out.getvalue(), capsys.readouterr().err


def waiting_for_go(left: Left) -> None:
    """Died while c's go waited: a and b finished, c asked go."""
    left.died_in(
        0,
        *FIRST_CYCLE,
        done("call_1_1_1", "a"),
        done("call_1_1_2", "b"),
        work("call_1_2_1", "c", asks=ASKS),
        GO,
    )


def test_a_blocked_last_turn_is_refused_without_continue_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2, one line saying how to continue or discard, and nothing written."""
    left = Left(tmp_path)
    waiting_for_go(left)
    before = left.files()
    status, _, err = run(left.argv(), capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert "its last turn did not finish (waiting-for-input (work))" in err
    assert "--continue-turn" in err
    assert f"{shlex.join(['inquiry', *left.argv('--discard-turn')])}`" in err
    assert "sanitize" not in err
    assert left.files() == before
    assert runs(left.directory) == {}


def test_the_refusals_command_pasted_as_is_continues_with_the_answers_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line repeats the scenario, --answers and the conversation: pasted, go is answered."""
    left = Left(tmp_path)
    waiting_for_go(left)
    _, _, err = run(left.argv(), capsys)
    commands = re.findall(r"`([^`]*)`", err)
    continuing = shlex.split(commands[0])
    assert continuing == ["inquiry", *left.argv("--continue-turn")]
    status, out, err = run(continuing[1:], capsys)
    assert (status, err) == (0, "")
    assert "    = work · go: answered by the answers file: true\n" in out  # not cancelled
    assert find_incomplete_turn(load_conversation(left.directory).stream) is None


def test_check_says_what_blocks_the_turn_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Which calls finished, which are open, which question waits; in text and JSON."""
    left = Left(tmp_path)
    waiting_for_go(left)
    status, out, _ = run(["check", str(left.directory)], capsys)
    assert status == EXIT_INCOMPLETE_TURN
    assert (
        "  last turn (turn 1) did not finish: waiting-for-input (work) "
        "(RFD 023 phase: executing)\n"
    ) in out
    assert "    finished (kept, not run again): work [call_1_1_1], work [call_1_1_2]\n" in out
    assert "    open: work [call_1_2_1]: ran before, runs again\n" in out
    assert "      waits for go (boolean): 'c: go?' [call_1_2_1.go.1]\n" in out
    assert (
        f"  continue it: inquiry run SCENARIO [--answers FILE] --conversation {left.directory} "
        f"--continue-turn; or discard it (what is open is closed, nothing deleted) and play a "
        f"new turn: inquiry run SCENARIO [--answers FILE] --conversation {left.directory} "
        f"--discard-turn, or only discard it: inquiry run --discard-turn --conversation "
        f"{left.directory}\n"
    ) in out
    status, out, _ = run(["check", "--json", str(left.directory)], capsys)
    assert status == EXIT_INCOMPLETE_TURN
    report = json.loads(out)["incomplete_turn"]
    assert report["turn"] == 1  # as the text says: turns count from 1
    assert (report["status"], report["phase"], report["blocked"]) == (
        "waiting-for-input (work)",
        "executing",
        True,
    )
    assert [call["id"] for call in report["finished_calls"]] == ["call_1_1_1", "call_1_1_2"]
    (open_call,) = report["open_calls"]
    assert open_call["waiting"]["inquiry_id"] == "call_1_2_1.go.1"
    assert open_call["asked"] == {"go": 1}
    assert report["discard_with"] == {
        "command": f"inquiry run --discard-turn --conversation {left.directory}",
        "embedder": "ToolCoordinator.discard_turn(find_incomplete_turn(conversation.stream)), "
        "the conversation held with `with conversation:`",
    }


def test_check_describes_a_question_jp_recorded_by_its_text_escaped_and_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No question.id (as JP records): check quotes its text, never a piece of its id."""
    left = Left(tmp_path)
    text = "Token for \x1b[31mprod\x1b[0m? " + "x" * 200
    jp_asked = InquiryRequest(
        id="call_1_2_1.token.1",
        source=InquirySource.tool("work"),
        question=InquiryQuestion(text=text, answer_type=AnswerType.secret()),
    )
    left.died_in(0, ChatRequest(content="one"), work("call_1_2_1", "c"), jp_asked)
    status, out, _ = run(["check", str(left.directory)], capsys)
    assert status == EXIT_INCOMPLETE_TURN
    (line,) = [line for line in out.splitlines() if "waits for" in line]
    assert line.startswith("      waits for 'Token for \\x1b[31mprod\\x1b[0m? xxx")
    assert "(secret; recorded without a question id) [call_1_2_1.token.1]" in line
    assert "waits for token" not in out
    assert "\x1b" not in out  # escaped: no escape sequence reaches the terminal
    assert "x" * 100 not in line  # bounded
    report = json.loads(run(["check", "--json", str(left.directory)], capsys)[1])
    (open_call,) = report["incomplete_turn"]["open_calls"]
    assert open_call["waiting"]["question_id"] is None
    assert open_call["waiting"]["text"] == text


def test_continue_turn_finishes_the_turn_then_plays_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The waiting go adopted, a and b not run again, cycles 3 on, the reply, turn 2."""
    left = Left(tmp_path)
    waiting_for_go(left)
    status, out, err = run(left.argv("--continue-turn"), capsys)
    assert (status, err) == (0, "")
    assert "continued: waiting-for-input (work); 2 tool calls finished before the stop" in out
    assert "    = work · go: answered by the answers file: true\n" in out  # the waiting one, named
    assert "turns: 2 of 2 completed" in out
    counted = runs(left.directory)
    assert (counted["a"], counted["b"]) == (0, 0)  # finished before the stop: kept as recorded
    conversation = load_conversation(left.directory)
    assert find_incomplete_turn(conversation.stream) is None
    assert_invariants(conversation, [SECRET])
    payloads = [entry.payload for entry in conversation.stream if isinstance(entry, EventEntry)]
    assert payloads.count(GO) == 1  # adopted: not recorded again
    assert Answered(id="call_1_2_1.go.1", answer=True) in payloads
    assert payloads[-1] == ChatResponse.message("done two")
    second = conversation.stream.turns()[1].entries[0]
    assert isinstance(second, EventEntry)
    assert second.metadata == {TURN_MARKER: {"scenario": "scenario.toml", "turn": 2}}
    assert SECRET.encode() not in every_byte(left.directory)


def test_a_turn_that_waits_for_the_model_is_refused_then_continued_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Died right after the user's message was saved: check 4, run refused, continued whole."""
    left = Left(tmp_path)
    left.died_in(0, ChatRequest(content="one"))
    status, out, _ = run(["check", str(left.directory)], capsys)
    assert status == EXIT_AWAITING_MODEL
    assert "interrupted (pending LLM response)" in out
    assert "--continue-turn" in out
    before = left.files()
    status, _, err = run(left.argv(), capsys)
    assert status == 2
    assert "its last turn did not finish (interrupted (pending LLM response))" in err
    assert left.files() == before
    status, out, err = run(left.argv("--continue-turn"), capsys)
    assert (status, err) == (0, "")
    assert "continued after 0 of 3 cycles" in out
    assert sorted(runs(left.directory)) == ["a", "b", "c", "d", "e"]
    assert len(load_conversation(left.directory).stream.turns()) == 2
    assert run(["check", str(left.directory)], capsys)[0] == 0


def test_a_turn_only_missing_its_follow_up_is_refused_then_continued_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every call answered, no model response after: check 4, refused; continued, cycles 2 on."""
    left = Left(tmp_path)
    left.died_in(0, *FIRST_CYCLE, done("call_1_1_1", "a"), done("call_1_1_2", "b"))
    status, out, _ = run(["check", str(left.directory)], capsys)
    assert status == EXIT_AWAITING_MODEL
    assert (
        "interrupted (pending follow-up) (RFD 023 phase: awaiting_follow_up); not blocked" in out
    )
    assert (
        f"  continue it: inquiry run SCENARIO [--answers FILE] --conversation {left.directory} "
        "--continue-turn; or leave it unfinished and begin a new turn: inquiry run SCENARIO "
        f"[--answers FILE] --conversation {left.directory} --new-turn\n"
    ) in out
    before = left.files()
    status, _, err = run(left.argv(), capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert "its last turn did not finish (interrupted (pending follow-up))" in err
    assert "--continue-turn" in err
    assert "--new-turn" in err
    assert left.files() == before
    status, out, err = run(left.argv("--continue-turn"), capsys)
    assert (status, err) == (0, "")
    assert "continued after 1 of 3 cycles" in out
    assert runs(left.directory) == {"c": 3, "d": 2, "e": 1}  # a and b kept as recorded
    conversation = load_conversation(left.directory)
    assert find_incomplete_turn(conversation.stream) is None
    assert len(conversation.stream.turns()) == 2
    assert_invariants(conversation, [SECRET])


def test_new_turn_begins_a_turn_after_an_unfinished_one_only_when_nothing_is_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--new-turn after a blocked turn is refused (discard offered); after a sanitize, it plays."""
    left = Left(tmp_path)
    waiting_for_go(left)
    before = left.files()
    status, _, err = run(left.argv("--new-turn"), capsys)
    assert status == 2
    assert f"{shlex.join(['inquiry', *left.argv('--discard-turn')])}`" in err
    assert (
        "did not finish (waiting-for-input (work)) and something is open in it, "
        "so --new-turn cannot follow it; continue it with `"
    ) in err
    assert left.files() == before
    assert run(["sanitize", str(left.directory)], capsys)[0] == 0
    assert run(["check", str(left.directory)], capsys)[0] == EXIT_AWAITING_MODEL
    assert run(left.argv(), capsys)[0] == 2  # closed, still unfinished: not stacked silently
    assert run(left.argv("--new-turn"), capsys)[0] == 0
    assert len(load_conversation(left.directory).stream.turns()) == 3
    with pytest.raises(SystemExit, match="2"):  # one or the other
        main(left.argv("--new-turn", "--continue-turn"))


def test_a_scenario_turn_without_a_reply_played_whole_is_followed_by_a_new_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No reply: RFD 023 calls the turn unfinished (check 4), but it has nothing left to play."""
    scenario = write(
        tmp_path / "quiet.toml",
        f"""
        [defaults]
        run = "unattended"

        [tools.work]
        command = ["{sys.executable}", "{TOOL}"]

        [[turns]]
        message = "one"

        [[turns.cycles]]
        calls = [{{ tool = "work", arguments = {{ tag = "q" }} }}]
        """,
    )
    directory = tmp_path / "conversation"
    argv = ["run", str(scenario), "--conversation", str(directory)]
    assert run(argv, capsys)[0] == 0
    assert run(["check", str(directory)], capsys)[0] == EXIT_AWAITING_MODEL
    assert run(argv, capsys)[0] == 0
    assert runs(directory) == {"q": 2}


def test_a_turn_the_scenario_does_not_play_is_not_continued(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No marker, or a turn holding other calls: exit 2, nothing written, nothing guessed."""
    unmarked = Left(tmp_path / "unmarked")
    unmarked.died_in(0, *FIRST_CYCLE, marked=False)
    other = Left(tmp_path / "other")
    other.died_in(0, ChatRequest(content="one"), work("call_1_1_1", "z"))
    for left in (unmarked, other):
        before = left.files()
        status, _, err = run(left.argv("--continue-turn"), capsys)
        assert status == 2
        assert "its last turn was not played from" in err
        assert f"{shlex.join(['inquiry', *left.argv('--discard-turn')])}`" in err
        assert "sanitize" not in err
        assert left.files() == before
        assert runs(left.directory) == {}


@pytest.mark.parametrize("blocked", [True, False], ids=["blocked", "not-blocked"])
def test_a_refusal_offers_continue_turn_only_for_a_turn_the_scenario_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], blocked: bool
) -> None:
    """No marker: the refusal says it cannot be continued, and its other way on works."""
    left = Left(tmp_path)
    asking = (work("call_1_2_1", "c", asks=ASKS), GO) if blocked else ()
    left.died_in(
        0, *FIRST_CYCLE, done("call_1_1_1", "a"), done("call_1_1_2", "b"), *asking, marked=False
    )
    status, _, err = run(left.argv(), capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert "--continue-turn" not in err  # it would only say there is nothing to continue
    assert f"it was not played from {left.scenario} as it is now, so it cannot be continued" in err
    commands = [shlex.split(command) for command in re.findall(r"`([^`]*)`", err)]
    (beginning,) = commands
    # Blocked: discarded (nothing deleted) and followed; else followed as it is.
    assert beginning == ["inquiry", *left.argv("--discard-turn" if blocked else "--new-turn")]
    before = list(load_conversation(left.directory).stream)
    assert run(beginning[1:], capsys)[0] == 0
    after = list(load_conversation(left.directory).stream)
    assert after[: len(before)] == before
    assert len(load_conversation(left.directory).stream.turns()) == 3


def test_continue_turn_when_everything_was_played_does_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole run, then --continue-turn: no turn, no tool, the stream as it was."""
    left = Left(tmp_path)
    assert run(left.argv(), capsys)[0] == 0
    before = (left.directory / "events.json").read_bytes()
    counted = runs(left.directory)
    status, out, _ = run(left.argv("--continue-turn"), capsys)
    assert status == 0
    assert "turns: 0 of 0 completed" in out
    assert (left.directory / "events.json").read_bytes() == before
    assert runs(left.directory) == counted


def test_continue_turn_on_a_missing_conversation_plays_the_whole_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed before the conversation existed: --continue-turn plays it from its first turn."""
    left = Left(tmp_path)
    status, out, _ = run(left.argv("--continue-turn"), capsys)
    assert status == 0
    assert "turns: 2 of 2 completed" in out
    assert_invariants(load_conversation(left.directory), [SECRET])


def test_check_help_names_its_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    """0 done, 2 unreadable, 3 blocked, 4 waiting for the model: all in --help."""
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 when the last turn finished" in shown
    for status in ("2 when", "3 when", "4 when"):
        assert status in shown


def test_continue_turn_tells_a_repaired_event_id_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An event id repeated in events.json: --continue-turn warns about it once, not twice."""
    left = Left(tmp_path)
    waiting_for_go(left)
    events = left.directory / "events.json"
    raw = json.loads(events.read_bytes())
    raw[2]["event_id"] = raw[1]["event_id"]
    events.write_text(json.dumps(raw, indent=2) + "\n")
    status, _, err = run(left.argv("--continue-turn"), capsys)
    assert status == 0
    assert err.count("repeats event id") == 1, err


def test_the_refusals_command_repeats_every_option_given_quoted_for_a_shell(
    tmp_path: Path,
) -> None:
    """Paths with spaces quoted, the prompting and the backend repeated: a shell reads it back."""
    options = RunOptions(
        scenario=tmp_path / "my scenario.toml",
        conversation=tmp_path / "the conversation",
        answers=tmp_path / "answers.toml",
        interactive=False,
        backend={"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
        verbose=True,
    )
    assert shlex.split(command_line(options, "--continue-turn")) == [
        "inquiry",
        "run",
        str(tmp_path / "my scenario.toml"),
        "--answers",
        str(tmp_path / "answers.toml"),
        "--no-tty",
        "--backend",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--verbose",
        "--conversation",
        str(tmp_path / "the conversation"),
        "--continue-turn",
    ]


def test_continue_turn_into_a_directory_that_is_no_conversation_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory holding other files: refused, exit 2, not even a lock file left there."""
    left = Left(tmp_path)
    left.directory.mkdir()
    (left.directory / "notes.txt").write_text("mine\n")
    status, _, err = run(left.argv("--continue-turn"), capsys)
    assert status == 2
    assert "is not a conversation" in err
    assert sorted(path.name for path in left.directory.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    "url",
    [
        "https://me:hunter2@api.example/v1",
        "https://api.example/v1?key=SECRETKEY",
        "https://api.example/v1#tok=abc",
    ],
)
def test_the_refusals_command_writes_a_base_url_with_credentials_as_a_placeholder(
    tmp_path: Path, url: str
) -> None:
    """A user name, password, query or fragment is never repeated: the URL reads BASE_URL."""
    options = RunOptions(
        scenario=tmp_path / "scenario.toml",
        conversation=tmp_path / "conversation",
        backend={"provider": "openai", "model": "m", "base_url": url},
    )
    words = shlex.split(command_line(options, "--continue-turn"))
    assert words[words.index("--base-url") + 1] == "BASE_URL"
    for secret in ("hunter2", "SECRETKEY", "tok=abc"):
        assert secret not in " ".join(words)


@pytest.mark.parametrize("joined", [False, True], ids=["--base-url URL", "--base-url=URL"])
def test_a_refused_run_never_prints_its_base_urls_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], joined: bool
) -> None:
    """The refusal repeats the command, but not the user info, query or fragment of its URL."""
    left = Left(tmp_path)
    waiting_for_go(left)
    url = "https://me:hunter2@api.example/v1?key=SECRETKEY#tok=abc"
    given = [f"--base-url={url}"] if joined else ["--base-url", url]
    status, out, err = run(left.argv("--backend", "openai", "--model", "m", *given), capsys)
    assert status == 2
    assert "--base-url BASE_URL" in err  # the person sees what to put back
    for secret in ("me:hunter2", "hunter2", "key=SECRETKEY", "SECRETKEY", "tok=abc"):
        assert secret not in out + err
