"""`inquiry run`: the tour end to end, appending, who answers, and how a run fails."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from process_helpers import PATIENCE, is_running, reaped, stop_signals_at_default, wait_for
from run_helpers import (
    TOUR_ANSWERS,
    TOUR_SCENARIO,
    TOUR_SECRET,
    TOUR_TOOLS,
    assert_paired,
    calls,
    cli,
    every_byte,
    outcomes,
    responses,
    seeded,
    write,
)

from coordinator import ScriptedPrompter, load_conversation, save_conversation
from coordinator.cli._answer_script import AnswerScript
from coordinator.driver._prompting import QuestionAnswer
from machines import Answered, CancellationReason, Cancelled, Redacted

if TYPE_CHECKING:
    from machines import ShowQuestion


def run_tour(conversation: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The main job: the tour, non-interactive, into ``conversation``."""
    return cli(
        "run",
        TOUR_SCENARIO,
        "--answers",
        TOUR_ANSWERS,
        "--conversation",
        conversation,
        capsys=capsys,
    )


def by_question(conversation_outcomes: dict[str, Any], question: str) -> list[Any]:
    """The responses to every inquiry of ``question`` (an id segment), in stream order."""
    return [r for inquiry_id, r in conversation_outcomes.items() if f".{question}." in inquiry_id]


def test_the_tour_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The tour completes: every path recorded as it should be, the secret nowhere on disk."""
    directory = tmp_path / "tour"
    status, out, err = run_tour(directory, capsys)
    assert (status, err) == (0, "")
    conversation = assert_paired(directory)
    found = outcomes(conversation)
    assert len(found) == 8
    # The person's Y answered the first call, the turn's memory the second.
    first, second = by_question(found, "apply_changes")
    assert first == Answered(id=first.id, answer=True)
    assert second == Answered(id=second.id, answer=True)
    assert "answered from this turn's memory" in out
    # The static answer, the model's answer, the person's select and text.
    assert by_question(found, "scope")[0].answer == "notes"
    assert by_question(found, "fix")[0].answer is True
    assert by_question(found, "bump")[0].answer == "minor"
    assert isinstance(by_question(found, "token")[0], Redacted)
    # Each answer names its tool and question; no internal id is shown.
    assert "= lint · fix: answered by the model: true" in out
    assert '= lint · scope: answered by configuration (a static answer): "notes"' in out
    assert "= deploy · token: redacted by the answers file: <secret>" in out
    assert "call_1_" not in out
    # The deploy tool received exactly the token, which is nowhere else.
    deployed = responses(conversation)["call_1_4_1"]
    assert "matched the expected fingerprint" in deployed.content
    assert TOUR_SECRET.encode() not in every_byte(directory)
    assert TOUR_SECRET not in out
    # The tools really worked in the workspace.
    notes = (directory / "workspace" / "notes.txt").read_text()
    assert "teh" not in notes
    assert "Project notes" in notes
    assert (directory / "workspace" / "VERSION").read_text() == "1.5.0\n"
    metadata = orjson.loads((directory / "metadata.json").read_bytes())
    assert metadata == {"title": "The inquiry coordinator tour"}
    assert (directory / "base_config.json").is_file()  # the current layout
    assert "tool calls: 6 (6 succeeded)" in out


def test_the_assistants_question_is_recorded_as_the_assistants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ask_user's question has the assistant as its source, and the person answered it."""
    directory = tmp_path / "tour"
    assert run_tour(directory, capsys)[0] == 0
    events = orjson.loads((directory / "events.json").read_bytes())
    (request,) = [
        e for e in events if e["type"] == "inquiry_request" and e["id"].startswith("call_1_5_1.")
    ]
    assert request["source"] == {"source": "assistant"}


def test_the_assistants_question_is_shown_as_its_own_and_its_call_is_hidden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ask_user (hidden, RFD 083): its question and answer shown, its call only with --verbose."""
    _, out, _ = run_tour(tmp_path / "plain", capsys)
    assert "? the assistant asks (boolean): Shall I open a pull request with these changes?" in out
    assert "= ask_user: answered by the answers file: false" in out
    assert "-> ask_user" not in out
    assert "<- ask_user" not in out
    assert "ask_user: succeeded" in out  # the summary still counts the call
    _, verbose, _ = cli(
        "run",
        TOUR_SCENARIO,
        "--answers",
        TOUR_ANSWERS,
        "--verbose",
        "--conversation",
        tmp_path / "verbose",
        capsys=capsys,
    )
    assert "? the assistant asks answer (boolean)" in verbose
    assert "= ask_user [call_1_5_1] · answer: answered" in verbose
    assert "-> ask_user [call_1_5_1]" in verbose
    body = '{"answer_type":"boolean","answer":false}'
    assert f"<- ask_user [call_1_5_1] succeeded: {body}" in verbose


def test_running_again_appends_a_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second run of the tour adds a second complete turn to the same conversation."""
    directory = tmp_path / "tour"
    assert run_tour(directory, capsys)[0] == 0
    status, out, err = run_tour(directory, capsys)
    assert (status, err) == (0, "")
    conversation = assert_paired(directory)
    assert len(conversation.stream.turns()) == 2
    assert "call_2_4_1" in calls(conversation)
    assert "holds 2 turns" in out
    # The workspace was refreshed, so the second run edited the seed again.
    assert (directory / "workspace" / "VERSION").read_text() == "1.5.0\n"
    assert TOUR_SECRET.encode() not in every_byte(directory)


def test_a_run_in_process_lets_go_of_its_lock_when_it_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once run_scenario returns, another writer may write at once, not when the collector runs."""
    directory = tmp_path / "tour"
    gc.disable()  # a conversation kept alive by a cycle would hold the lock till collected
    try:
        assert run_tour(directory, capsys)[0] == 0
        first_line = (directory / ".inquiry.lock").read_text().partition("\n")[0]
        assert first_line.strip() == ""  # nobody named as the holder
        other = load_conversation(directory)
        save_conversation(other, directory)  # would be refused were the lock still held
        other.close()
    finally:
        gc.enable()


def test_the_tour_runs_from_any_directory(tmp_path: Path) -> None:
    """Run as a program from elsewhere, the tour's relative paths still resolve."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator",
            "run",
            str(TOUR_SCENARIO),
            "--answers",
            str(TOUR_ANSWERS),
            "--conversation",
            "here",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert_paired(tmp_path / "here")
    assert TOUR_SECRET not in result.stdout + result.stderr


def test_an_unreadable_conversation_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conversation that cannot be read: one line on stderr, exit 2, nothing written."""
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "events.json").write_text("[{]")
    status, _, err = run_tour(directory, capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert str(directory / "events.json") in err
    assert sorted(p.name for p in directory.iterdir()) == ["events.json"]
    assert (directory / "events.json").read_text() == "[{]"


def test_a_conversation_path_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--conversation naming a file is an error (exit 2), and the file is untouched."""
    target = write(tmp_path / "file", "not a conversation")
    status, _, err = run_tour(target, capsys)
    assert status == 2
    assert "is not a directory" in err
    assert target.read_text() == "not a conversation"


def test_no_terminal_denies_every_prompt_nothing_configures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-tty (--no-interactive) without answers: the person's prompts are denied (RFD 049)."""
    directory = tmp_path / "tour"
    status, out, _ = cli(
        "run", TOUR_SCENARIO, "--no-tty", "--conversation", directory, capsys=capsys
    )
    assert status == 1  # every call failed: nobody could be asked
    conversation = assert_paired(directory)
    found = outcomes(conversation)
    bump = by_question(found, "bump")[0]
    assert bump == Cancelled(id=bump.id, reason=CancellationReason.NO_PROMPT_BACKEND)
    assert "token" not in str(found)  # deploy (run mode ask) never ran to ask for it
    deployed = responses(conversation)["call_1_4_1"]
    assert deployed.is_error
    assert "was not run" in deployed.content
    assert "person: nobody: --no-interactive" in out


def write_answers(tmp_path: Path, text: str) -> Path:
    """An answers file in ``tmp_path``."""
    return write(tmp_path / "answers.toml", text)


def scenario_with(tmp_path: Path, turns: str, *, extra: str = "") -> Path:
    """A scenario of the tour's tools (all asking permission), seeded like the tour."""
    seeded(tmp_path)
    return write(
        tmp_path / "scenario.toml",
        f"""
        [workspace]
        seed = "seed"
        [defaults]
        run = "ask"
        {TOUR_TOOLS}
        {extra}
        {turns}
        """,
    )


MODIFY = '{ tool = "fs_modify_file", arguments = { path = "notes.txt", pattern = "teh", replacement = "the" } }'  # noqa: E501 - one TOML line


RELEASE = """
[[turns]]
message = "Release."
[[turns.cycles]]
calls = [{ tool = "release" }]
"""
TO_THE_MODEL = '[tools.release.questions.bump]\ntarget = "assistant"'


def run_release(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    answers: str,
    *,
    extra: str = "",
) -> tuple[int, str, str, Path]:
    """One release call, with ``answers``: exit status, stdout, stderr, the conversation."""
    scenario = scenario_with(tmp_path, RELEASE, extra=extra)
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run",
        scenario,
        "--answers",
        write_answers(tmp_path, answers),
        "--conversation",
        directory,
        capsys=capsys,
    )
    return status, out, err, directory


def test_permission_replies_from_an_answers_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reply r skips with the reason, e runs with edited arguments, N skips the next call."""
    scenario = scenario_with(
        tmp_path,
        f"""
        [[turns]]
        message = "Fix it."
        [[turns.cycles]]
        calls = [{MODIFY}]
        [[turns.cycles]]
        calls = [{MODIFY}]
        [[turns.cycles]]
        calls = [{{ tool = "release" }}]
        [[turns.cycles]]
        calls = [{{ tool = "release" }}]
        """,
    )
    answers = write_answers(
        tmp_path,
        """
        [[permissions]]
        tool = "fs_modify_file"
        reply = "r"
        reason = "not before lunch"
        [[permissions]]
        tool = "fs_modify_file"
        reply = "e"
        arguments = { path = "notes.txt", pattern = "teh", replacement = "THE" }
        [[permissions]]
        tool = "release"
        reply = "N"
        [[answers]]
        value = true
        """,
    )
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert (status, err) == (0, "")
    conversation = assert_paired(directory)
    found = responses(conversation)
    assert found["call_1_1_1"].content == "Tool skipped by user: not before lunch"
    assert "'teh'" in found["call_1_2_1"].content
    assert "THE plan" in (directory / "workspace" / "notes.txt").read_text()
    assert found["call_1_3_1"].content == "Tool skipped by user."
    assert found["call_1_4_1"].content == "Tool skipped by user (remembered)."
    assert "with edited arguments" in out
    assert "! permission for fs_modify_file, from the answers file: skip: not before lunch" in out
    assert (
        "! permission for release, from the answers file: skip (remembered for this turn)" in out
    )
    assert "! permission for release: skip, from an earlier N in this turn" in out
    assert "2 skipped by the user" in out
    assert "1 skipped, remembered" in out


def test_a_scripted_cancellation_is_the_users(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cancel = true` records Cancelled(user), and the tool is told its input was cancelled."""
    status, out, _, directory = run_release(
        tmp_path,
        capsys,
        """
        [[permissions]]
        reply = "y"
        [[answers]]
        question = "bump"
        cancel = true
        """,
    )
    assert status == 1  # a question ended without an answer
    conversation = assert_paired(directory)
    (cancelled,) = outcomes(conversation).values()
    assert cancelled == Cancelled(id="call_1_1_1.bump.1", reason=CancellationReason.USER)
    assert responses(conversation)["call_1_1_1"].content == "Tool input cancelled by user."
    assert "x release · bump: cancelled (user)" in out


def test_an_answers_file_without_a_reply_leaves_it_to_the_detached_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prompt the answers file has no reply for is denied (RFD 049's default), then exit 1."""
    status, out, err, directory = run_release(tmp_path, capsys, '[[permissions]]\nreply = "y"\n')
    assert status == 1
    assert err.count("\n") == 1
    assert "1 question was not answered" in err
    assert "x release · bump: cancelled (no_prompt_backend): nobody to ask" in out
    (bump,) = outcomes(assert_paired(directory)).values()
    assert bump == Cancelled(id=bump.id, reason=CancellationReason.NO_PROMPT_BACKEND)


def test_a_missing_model_answer_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[[model]] entries that do not cover a question sent to the model: exit 1."""
    status, _, err, _ = run_release(
        tmp_path,
        capsys,
        """
        [[permissions]]
        reply = "y"
        [[model]]
        question = "headline"
        value = "never asked"
        """,
        extra=TO_THE_MODEL,
    )
    assert status == 1
    assert "[[model]]" in err
    assert "'bump'" in err


def test_a_scripted_backend_failure_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A [[model]] failure is a backend error on the record, and the tool call fails."""
    status, out, _, directory = run_release(
        tmp_path,
        capsys,
        """
        [[permissions]]
        reply = "y"
        [[model]]
        question = "bump"
        fail = "provider"
        message = "overloaded"
        """,
        extra=TO_THE_MODEL,
    )
    assert status == 1
    conversation = assert_paired(directory)
    (cancelled,) = outcomes(conversation).values()
    assert cancelled == Cancelled(id="call_1_1_1.bump.1", reason=CancellationReason.BACKEND_ERROR)
    failed = responses(conversation)["call_1_1_1"]
    assert failed.is_error
    assert "overloaded" in failed.content
    assert "1 failed" in out
    assert "x release · bump: cancelled (backend_error): the model could not answer" in out
    (cause,) = [line for line in out.splitlines() if line.startswith("      cause: ")]
    assert "overloaded" in cause


def test_a_conversation_changed_under_the_run_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the conversation cannot be saved (changed on disk): one line, exit 2."""
    meddler = write(
        tmp_path / "meddle.py",
        """
        import pathlib, sys
        sys.stdin.read()
        events = pathlib.Path("..", "events.json")
        events.write_bytes(events.read_bytes() + b" ")
        print('{"type": "success", "content": "meddled"}')
        """,
    )
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [tools.meddle]
        command = ["python3", "{meddler}"]
        run = "unattended"
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{{ tool = "meddle" }}]
        """,
    )
    directory = tmp_path / "conversation"
    status, _, err = cli("run", scenario, "--no-tty", "--conversation", directory, capsys=capsys)
    assert status == 2
    assert err.count("\n") == 1
    assert "changed on disk" in err
    assert (directory / "events.json").read_bytes().endswith(b" ")  # the other writer's work


def test_ctrl_c_while_a_tool_runs_closes_everything(tmp_path: Path) -> None:
    """SIGINT mid-run: the running call is answered as interrupted, saved, exit 3."""
    started = tmp_path / "started"
    slow = write(
        tmp_path / "slow.py",
        f"""
        import os, pathlib, sys, time
        sys.stdin.read()
        pathlib.Path({str(started)!r} + ".tmp").write_text(str(os.getpid()))
        os.replace({str(started)!r} + ".tmp", {str(started)!r})
        time.sleep(60)
        """,
    )
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [tools.slow]
        command = ["python3", "{slow}"]
        run = "unattended"
        [[turns]]
        message = "Wait."
        [[turns.cycles]]
        calls = [{{ tool = "slow" }}]
        [[turns]]
        message = "Never played."
        """,
    )
    directory = tmp_path / "conversation"
    with stop_signals_at_default():
        run = subprocess.Popen(
            [
                *(sys.executable, "-m", "coordinator", "run", str(scenario)),
                *("--no-tty", "--conversation", str(directory)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    with reaped(run) as process:
        # The tool is at work (its start written), not merely about to be started.
        tool = wait_for(
            lambda: started.read_text() if started.exists() else None,
            "the tool started",
            process=process,
        )
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 3, err  # a turn left incomplete
    assert not is_running(int(tool))  # the stop ended it
    assert "interrupted: 0 of 2 turns completed" in err
    conversation = assert_paired(directory)
    assert responses(conversation)["call_1_1_1"].content == "Tool call was interrupted."
    assert len(conversation.stream.turns()) == 1
    assert "summary" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--model", "m"], "--model, --base-url and --api-key-env go with --backend"),
        (["--backend", "anthropic"], "--model: is required"),
    ],
)
def test_backend_options_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    """Backend options that do not fit: one line naming the option, exit 2, nothing written."""
    directory = tmp_path / "conversation"
    status, _, err = cli(
        "run", TOUR_SCENARIO, "--conversation", directory, *arguments, capsys=capsys
    )
    assert status == 2
    assert message in err
    assert err.count("\n") == 1
    assert not directory.exists()


def test_a_scenario_backend_error_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad [backend] table: the scenario file and the key, exit 2, nothing written."""
    scenario = write(
        tmp_path / "scenario.toml",
        """
        [backend]
        provider = "anthropic"
        model = "m"
        temperature = 2
        [[turns]]
        message = "Hello."
        """,
    )
    directory = tmp_path / "conversation"
    status, _, err = cli("run", scenario, "--no-tty", "--conversation", directory, capsys=capsys)
    assert status == 2
    assert f"{scenario}: backend.temperature: unknown key" in err
    assert not directory.exists()


def test_tty_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--tty (--interactive) with no controlling terminal is refused before anything is written."""
    directory = tmp_path / "conversation"
    status, _, err = cli("run", TOUR_SCENARIO, "--tty", "--conversation", directory, capsys=capsys)
    assert status == 2
    assert "--interactive: no controlling terminal" in err
    assert not directory.exists()


def test_a_turn_without_tool_calls_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn of only a message and a reply is recorded as such."""
    scenario = write(
        tmp_path / "scenario.toml",
        """
        [[turns]]
        message = "Hello."
        reply = "Hi."
        """,
    )
    directory = tmp_path / "conversation"
    status, out, _ = cli("run", scenario, "--no-tty", "--conversation", directory, capsys=capsys)
    assert status == 0
    kinds = [e["type"] for e in orjson.loads((directory / "events.json").read_bytes())]
    assert kinds == ["turn_start", "chat_request", "chat_response"]
    assert "tool calls: 0 (none)" in out
    assert (directory / "workspace").is_dir()


# A local tool asking, in order, the questions its options list, then reporting
# the answers it got (a secret only by its length).
ASKER = """
import json, sys
request = json.load(sys.stdin)
answers = request["answers"]
for question in request["options"].get("questions", []):
    if question["id"] not in answers:
        print(json.dumps({"type": "needs_input", "question": question}))
        sys.exit(0)
shown = {k: len(v) if k == "token" else v for k, v in answers.items()}
print(json.dumps({"type": "success", "content": "answers: " + json.dumps(shown)}))
"""


def asker_scenario(tmp_path: Path, tools: str, turns: str) -> Path:
    """A scenario whose tools run ASKER (``command = ASK``), unattended."""
    asker = write(tmp_path / "asker.py", ASKER)
    tools = tools.replace("ASK", f'["python3", "{asker}"]')
    return write(
        tmp_path / "scenario.toml",
        '[defaults]\nrun = "unattended"\n' + textwrap.dedent(tools) + textwrap.dedent(turns),
    )


def test_values_at_the_json_limits_are_run_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The largest integers and deepest values a scenario accepts are written as given."""
    deep = "[" * 249 + "]" * 249  # with the arguments table, 250 levels: the most accepted
    scenario = asker_scenario(
        tmp_path,
        "[tools.t]\ncommand = ASK\noptions = { big = 18446744073709551615 }\n",
        f"""
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{{ tool = "t", arguments = {{ big = 18446744073709551615, small = -9223372036854775808, deep = {deep} }} }}]
        """,  # noqa: E501 - one TOML line
    )
    directory = tmp_path / "conversation"
    status, _, err = cli("run", scenario, "--no-tty", "--conversation", directory, capsys=capsys)
    assert (status, err) == (0, "")
    (request,) = calls(assert_paired(directory)).values()
    assert request.arguments["big"] == 2**64 - 1
    assert request.arguments["small"] == -(2**63)
    assert orjson.dumps(request.arguments["deep"]) == deep.encode()


BEYOND_64_BITS = "99999999999999999999999"
TOO_DEEP = "[" * 251 + "]" * 251


@pytest.mark.parametrize(
    ("static", "arguments", "answers", "key"),
    [
        ("", f"{{ a = {BEYOND_64_BITS} }}", "", "turns[0].cycles[0].calls[0].arguments.a"),
        (BEYOND_64_BITS, "{}", "", "tools.t.questions.q.answer"),
        ("", "{}", f"[[answers]]\nvalue = {TOO_DEEP}", "answers[0].value"),
        (
            "",
            "{}",
            f'[[permissions]]\nreply = "e"\narguments = {{ b = -{BEYOND_64_BITS} }}',
            "permissions[0].arguments.b",
        ),
    ],
)
def test_a_value_json_cannot_hold_is_refused_before_anything_is_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    static: str,
    arguments: str,
    answers: str,
    key: str,
) -> None:
    """An integer past 64 bits or a value nested too deeply: exit 2, the key named, no files."""
    scenario = asker_scenario(
        tmp_path,
        "[tools.t]\ncommand = ASK\n"
        + (f"[tools.t.questions.q]\nanswer = {static}\n" if static else ""),
        f"""
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{{ tool = "t", arguments = {arguments} }}]
        """,
    )
    answers_file = write(tmp_path / "answers.toml", answers)
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run", scenario, "--answers", answers_file, "--conversation", directory, capsys=capsys
    )
    assert status == 2
    assert out == ""
    origin = answers_file if answers else scenario
    assert err.startswith(f"inquiry: {origin}: {key}: is ")
    assert err.count("\n") == 1
    assert not directory.exists()


def test_progress_names_the_call_that_asked_without_reading_inquiry_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calls `a` and `a.q`: `a`'s question `q` (id `a.q.1`) is shown as `a`'s, not `a.q`'s."""
    scenario = asker_scenario(
        tmp_path,
        """
        [tools.x]
        command = ASK
        [[tools.x.options.questions]]
        id = "q"
        text = "Go on?"
        answer_type = { type = "boolean" }
        [tools.x.questions.q]
        answer = true
        [tools.y]
        command = ASK
        """,
        """
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{ tool = "x", id = "a" }, { tool = "y", id = "a.q" }]
        """,
    )
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--no-tty", "--verbose", "--conversation", directory, capsys=capsys
    )
    assert status == 0
    assert "? x [a] asks q (boolean): Go on? [a.q.1]" in out
    assert "= x [a] · q: answered by configuration (a static answer): true" in out
    assert "y [a.q] asks" not in out


def test_an_unnamed_call_gives_way_to_an_id_the_file_gave_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call named `call_1_1_2` beside an unnamed second call: the two get different ids."""
    scenario = asker_scenario(
        tmp_path,
        """
        [tools.y]
        command = ASK
        """,
        """
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{ tool = "y", id = "call_1_1_2" }, { tool = "y" }]
        """,
    )
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--no-tty", "--verbose", "--conversation", directory, capsys=capsys
    )
    assert status == 0
    assert "-> y #1 [call_1_1_2]" in out
    assert "-> y #2 [call_1_1_2_2]" in out
    saved = orjson.loads((directory / "events.json").read_bytes())
    ids = [entry["id"] for entry in saved if entry["type"] == "tool_call_request"]
    assert ids == ["call_1_1_2", "call_1_1_2_2"]


class _AlwaysRemember(ScriptedPrompter):
    """A person who asks to remember every answer, secrets included."""

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        answer = await super().ask_question(prompt)
        return QuestionAnswer(value=answer.value, remember=True)


def test_progress_says_remembered_only_when_the_turn_remembers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A boolean asked to be remembered is; a secret asked to be remembered is not, nor said to."""
    questions = (
        '[{ id = "ok", text = "OK?", answer_type = { type = "boolean" } }, '
        '{ id = "token", text = "Token?", answer_type = { type = "secret" } }]'
    )
    scenario = asker_scenario(
        tmp_path,
        f"[tools.t]\ncommand = ASK\noptions = {{ questions = {questions} }}\n",
        """
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{ tool = "t" }]
        [[turns.cycles]]
        calls = [{ tool = "t" }]
        """,
    )
    answers = write(
        tmp_path / "answers.toml",
        """
        [[answers]]
        question = "ok"
        value = true
        [[answers]]
        question = "token"
        value = "s3cret-one"
        [[answers]]
        question = "token"
        value = "s3cret-two"
        """,
    )

    def always_remember(script: AnswerScript) -> ScriptedPrompter:
        prompter = _AlwaysRemember()
        for answer in script.answers:
            prompter.answer(answer.value, tool=answer.tool, question=answer.question)
        return prompter

    monkeypatch.setattr(AnswerScript, "prompter", always_remember)
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 0
    assert out.count("= t · ok: answered by the person: true, remembered for this turn") == 1
    assert out.count("= t · ok: answered from this turn's memory (an earlier Y or N): true") == 1
    # Each secret was asked for (nothing remembered it), and neither is said to be remembered.
    assert out.count("= t · token: redacted by the person: <secret>\n") == 2
    assert "s3cret" not in out


def test_unused_answers_file_entries_are_named_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Permissions, answers and [[model]] entries no prompt took are listed by their keys."""
    status, out, _, _ = run_release(
        tmp_path,
        capsys,
        """
        [[permissions]]
        reply = "y"
        [[permissions]]
        tool = "nosuch"
        reply = "y"
        [[answers]]
        question = "headline"
        value = "Typos fixed"
        [[answers]]
        tool = "nosuch"
        value = true
        [[model]]
        question = "bump"
        value = "minor"
        [[model]]
        tool = "nosuch"
        value = true
        """,
        extra=TO_THE_MODEL,
    )
    assert status == 0
    last = out.splitlines()[-1]
    assert (
        last
        == "note: entries of the answers file no prompt used: permissions[1], answers[1], model[1]"
    )


@pytest.mark.parametrize("replacement", ["[[model]]", "--backend"])
def test_the_scenarios_backend_is_checked_even_when_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replacement: str
) -> None:
    """A typo in [backend] is refused (exit 2, no files) though [[model]] or --backend rule."""
    scenario = write(
        tmp_path / "scenario.toml",
        """
        [backend]
        providr = "anthropic"
        [[turns]]
        message = "Hello."
        """,
    )
    answers = write(tmp_path / "answers.toml", "[[model]]\nvalue = true\n")
    directory = tmp_path / "conversation"
    chosen = (
        ["--answers", answers]
        if replacement == "[[model]]"
        else ["--no-tty", "--backend", "openai", "--model", "m"]
    )
    status, _, err = cli("run", scenario, *chosen, "--conversation", directory, capsys=capsys)
    assert status == 2
    assert err.startswith(f"inquiry: {scenario}: backend.providr: unknown key")
    assert err.count("\n") == 1
    assert not directory.exists()


@pytest.mark.parametrize("with_stderr", [False, True], ids=["stdout", "stdout-and-stderr"])
def test_a_closed_standard_output_stops_the_run_quietly(tmp_path: Path, with_stderr: bool) -> None:
    """Output closed early (`| head`, or `2>&1 | head`): no traceback, exit 3, all saved.

    Whichever stream closed, the turn was left unfinished: 3, never 1 ("finished, and
    something failed"). With stderr in the same pipe, its one line goes nowhere.
    """
    go = tmp_path / "go"
    # The tool finishes only once the reader has gone: its result is then the
    # first line written to the closed pipe.
    slow = write(
        tmp_path / "slow.py",
        f"""
        import pathlib, sys, time
        sys.stdin.read()
        deadline = time.monotonic() + {PATIENCE}
        while not pathlib.Path({str(go)!r}).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        print('{{"type": "success", "content": "done"}}')
        """,
    )
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [tools.slow]
        command = ["python3", "{slow}"]
        run = "unattended"
        [[turns]]
        message = "Wait."
        [[turns.cycles]]
        calls = [{{ tool = "slow" }}]
        [[turns.cycles]]
        calls = [{{ tool = "slow" }}]
        [[turns]]
        message = "Never played."
        """,
    )
    directory = tmp_path / "conversation"
    run = subprocess.Popen(
        [
            *(sys.executable, "-m", "coordinator", "run", str(scenario)),
            *("--no-tty", "--conversation", str(directory)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if with_stderr else subprocess.PIPE,
        text=True,
    )
    with reaped(run) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if "-> slow" in line:
                break  # the reader has read enough
        process.stdout.close()
        go.touch()
        _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 3
    if not with_stderr:
        assert err == "inquiry: standard output was closed: stopped after 0 of 2 turns\n"
    conversation = assert_paired(directory)
    # The first cycle's call was answered and saved; the second cycle never began.
    assert list(responses(conversation)) == ["call_1_1_1"]
    assert len(conversation.stream.turns()) == 1


def test_a_conversation_name_that_is_not_utf8_is_printed_on_a_utf8_stdout(
    tmp_path: Path,
) -> None:
    """`inquiry run` into a directory whose name is not UTF-8 prints it with U+FFFD, exit 0."""
    scenario = asker_scenario(
        tmp_path,
        """
        [tools.y]
        command = ASK
        """,
        """
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{ tool = "y" }]
        """,
    )
    directory = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    script = Path(sys.executable).parent / "inquiry"
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "coordinator"]
    done = subprocess.run(
        [*launcher, "run", scenario, "--no-tty", "--conversation", directory],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert f"-> {tmp_path}/caf\ufffd (" in done.stdout.decode()
    assert (directory / "events.json").is_file()


SNOOP = """
    import json, os, sys
    names = sys.argv[1:]
    seen = {name: os.environ.get(name) for name in names}
    print(json.dumps({"type": "success", "content": json.dumps(seen, sort_keys=True)}))
"""

#: What the test's environment holds, by variable.
ENVIRONMENT = {
    "INQUIRY_TEST_TOKEN": "token-from-the-answers-file",
    "ANTHROPIC_API_KEY": "anthropic-key-value",
    "OPENAI_API_KEY": "openai-key-value",
    "INQUIRY_TEST_MODEL_KEY": "named-key-value",
    "INQUIRY_TEST_PLAIN": "plain-value",
}


@pytest.mark.parametrize(
    ("backend", "hidden"),
    [
        pytest.param(
            '[backend]\nprovider = "anthropic"\nmodel = "m"\n', "ANTHROPIC_API_KEY", id="scenario"
        ),
        pytest.param(
            "--backend openai --model m --api-key-env INQUIRY_TEST_MODEL_KEY",
            "INQUIRY_TEST_MODEL_KEY",
            id="command-line",
        ),
        pytest.param("", None, id="no-backend"),
    ],
)
def test_local_tools_never_see_the_runs_secrets(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    hidden: str | None,
) -> None:
    """Tools run without the answers file's value_env variables and the model's key variable.

    Only the key of the backend this run uses is left out: another provider's
    key may be the tool's own.
    """
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    snoop = write(tmp_path / "snoop.py", SNOOP)
    names = ", ".join(f'"{name}"' for name in ENVIRONMENT)
    in_scenario = backend if backend.startswith("[") else ""
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [defaults]
        run = "unattended"
        [tools.snoop]
        command = ["{sys.executable}", "{snoop}", {names}]
        [[turns]]
        message = "What do tools see?"
        [[turns.cycles]]
        calls = [{{ tool = "snoop" }}]
        """
        + in_scenario,
    )
    answers = write(
        tmp_path / "answers.toml",
        '[[answers]]\ntool = "deploy"\nquestion = "token"\nvalue_env = "INQUIRY_TEST_TOKEN"\n',
    )
    directory = tmp_path / "conversation"
    on_command_line = backend.split() if not backend.startswith("[") else []
    status, out, err = cli(
        "run",
        scenario,
        "--answers",
        answers,
        "--conversation",
        directory,
        *on_command_line,
        capsys=capsys,
    )
    assert (status, err) == (0, "")
    left_out = sorted(name for name in ("INQUIRY_TEST_TOKEN", hidden) if name is not None)
    seen = orjson.loads(responses(assert_paired(directory))["call_1_1_1"].content)
    assert seen == {
        name: None if name in left_out else value for name, value in ENVIRONMENT.items()
    }
    assert f"  tools run without {', '.join(left_out)} in their environment" in out
    for name in left_out:
        assert ENVIRONMENT[name] not in out
