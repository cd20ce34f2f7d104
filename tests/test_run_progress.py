"""`inquiry run`'s progress and exit status tell the truth, read from the driver's step facts.

Without a terminal: through the answers file or `--no-tty`, captured in
process. (What a person sees at a terminal is in test_terminal_pty.py.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from conftest import PROJECT
from run_helpers import (
    LOOPING,
    TOUR_SCENARIO,
    TOUR_SECRET,
    assert_paired,
    cli,
    every_byte,
    local_tools,
    write,
)

from coordinator.cli._run_progress import CAUSE_LIMIT

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: Path, answers: str | None
) -> tuple[int, str, str]:
    """``inquiry run`` with ``answers`` as its answers file (``--no-tty`` when ``None``)."""
    directory = tmp_path / "conversation"
    chosen = ["--no-tty"]
    if answers is not None:
        chosen = ["--answers", str(write(tmp_path / "answers.toml", answers))]
    return cli("run", scenario, *chosen, "--conversation", directory, capsys=capsys)


def test_a_tool_whose_output_reads_like_a_skip_succeeded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The outcome is the machine's, not the response's text: a "skipped" success succeeded."""
    said = {
        "skipping": "Tool skipped by user.",
        "cancelling": "Tool input cancelled by user.",
        "interrupting": "Tool call was interrupted.",
    }
    tools = {
        name: f"import json, sys\nprint(json.dumps({{'type': 'success', 'content': {text!r}}}))\n"
        for name, text in said.items()
    }
    calls = ", ".join(f'{{ tool = "{name}" }}' for name in said)
    status, out, err = run(tmp_path, capsys, local_tools(tmp_path, tools, calls), answers=None)
    assert (status, err) == (0, "")
    for name, text in said.items():
        assert f"<- {name} succeeded: {text}" in out
    assert "tool calls: 3 (3 succeeded)" in out


def test_a_call_skipped_by_its_run_mode_or_the_person_is_no_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run mode skip and a person's n: each skip is said as what it is, and the status is 0."""
    success = 'print(\'{"type": "success", "content": "done"}\')\n'
    path = local_tools(
        tmp_path,
        {"skipped": success, "denied": success},
        '{ tool = "skipped" }, { tool = "denied" }',
        runs={"skipped": "skip", "denied": "ask"},
    )
    status, out, err = run(
        tmp_path, capsys, path, answers='[[permissions]]\ntool = "denied"\nreply = "n"\n'
    )
    assert (status, err) == (0, "")
    assert "<- skipped skipped by configuration" in out
    assert "! permission for denied, from the answers file: skip" in out
    assert "<- denied skipped by the user" in out
    assert "tool calls: 2 (1 skipped by configuration, 1 skipped by the user)" in out


def test_without_a_terminal_the_tour_fails_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--no-tty`: every call fails, nobody to answer or permit it; summary and exit 1 say so."""
    directory = tmp_path / "tour"
    status, out, err = cli(
        "run", TOUR_SCENARIO, "--no-tty", "--conversation", directory, capsys=capsys
    )
    assert status == 1
    assert "turns: 1 of 1 completed" in out
    assert "tool calls: 6 (6 failed)" in out
    assert err == (
        # deploy (run mode ask) was refused before it could ask for its token.
        "inquiry: 6 of 6 tool calls failed and 5 questions were not answered "
        "(the summary lists them)\n"
    )
    assert_paired(directory)


def test_a_run_mode_ask_tool_without_a_terminal_says_the_policy_refused_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nobody to ask permission of: `!` lines say the detached policy decided, once, and how."""
    _, out, _ = cli(
        "run", TOUR_SCENARIO, "--no-tty", "--conversation", tmp_path / "tour", capsys=capsys
    )
    lines = out.splitlines()
    deploy = lines.index('  -> deploy {"environment":"staging"}')
    assert lines[deploy + 1 : deploy + 3] == [
        (
            "  ! nobody can be asked here, so the detached policy decides permission to run "
            f"(run mode ask): deny ({PROJECT / 'docs' / 'headless.md'})"
        ),
        '  ! deploy: run mode "ask", and nobody to ask (deny): it is refused, and fails',
    ]
    assert out.count("the detached policy decides permission to run") == 1


def test_a_failing_tool_shows_its_cause_in_plain_words_bounded_and_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool failing with a long traceback quoting its secret: the cause line, plain and short."""
    failing = """
import json, sys
request = json.load(sys.stdin)
token = request["answers"].get("token")
if token is None:
    question = {"id": "token", "text": "Token?", "answer_type": {"type": "secret"}}
    print(json.dumps({"type": "needs_input", "question": question}))
    sys.exit(0)
for frame in range(60):
    print(f'  File "deploy.py", line {frame}, in step_{frame}', file=sys.stderr)
print("PermissionError: the token " + token + " was refused by staging", file=sys.stderr)
sys.exit(1)
"""
    path = local_tools(tmp_path, {"deploy": failing}, '{ tool = "deploy" }')
    status, out, err = run(
        tmp_path, capsys, path, answers=f'[[answers]]\nvalue = "{TOUR_SECRET}"\n'
    )
    assert status == 1
    assert err == "inquiry: 1 of 1 tool calls failed (the summary lists them)\n"
    lines = out.splitlines()
    ended = lines.index("  <- deploy failed")
    cause = lines[ended + 1]
    assert cause.startswith("    cause: Tool 'deploy' execution failed.; stderr: ")
    # The beginning and the end (the error itself) are kept, the middle cut and said to be.
    assert cause.endswith("PermissionError: the token <secret> was refused by staging")
    assert re.search(r" \[\.\.\. \d+ characters cut \.\.\.\] ", cause)
    assert len(cause) <= len("    cause: ") + CAUSE_LIMIT + len(" [... 9999 characters cut ...] ")
    assert '{"message"' not in out
    assert TOUR_SECRET not in out + err
    assert TOUR_SECRET.encode() not in every_byte(tmp_path / "conversation")


def test_a_question_asked_again_says_which_attempt_until_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool asking one question nine times: each re-ask is said, then the refusal and why."""
    path = local_tools(tmp_path, {"loop": LOOPING}, '{ tool = "loop" }')
    answers = '[[answers]]\ntool = "loop"\nvalue = true\n' * 8
    status, out, err = run(tmp_path, capsys, path, answers=answers)
    assert status == 1
    asked = [line for line in out.splitlines() if line.startswith("  ? loop asks proceed")]
    assert asked[0] == "  ? loop asks proceed (boolean): Proceed?"
    assert asked[1:8] == [
        f"  ? loop asks proceed (boolean; asked again, attempt {n} of 8): Proceed?"
        for n in range(2, 9)
    ]
    assert asked[8] == (
        "  ? loop asks proceed (boolean; asked again, attempt 9: more than the 8 allowed): "
        "Proceed?"
    )
    assert len(asked) == 9
    lines = out.splitlines()
    refused = lines.index(
        "    x loop · proceed: cancelled (attempts_exhausted): refused, no answer taken"
    )
    assert lines[refused + 1] == (
        "      cause: The tool 'loop' asked question 'proceed' (\"Proceed?\") again after 8 "
        "answers; stopping here so it cannot loop forever."
    )
    assert lines[refused + 2] == "  <- loop failed: its question proceed was not answered"
    assert err == (
        "inquiry: 1 of 1 tool calls failed and 1 question was not answered "
        "(the summary lists them)\n"
    )


# Asks `first`, then `second`, then succeeds; slow enough that its parallel
# twin's steps come between its own.
TWO_QUESTIONS = """
import json, sys, time
answers = json.load(sys.stdin)["answers"]
for name in ("first", "second"):
    if name not in answers:
        time.sleep(0.05)
        question = {"id": name, "text": name.title() + "?", "answer_type": {"type": "text"}}
        print(json.dumps({"type": "needs_input", "question": question}))
        sys.exit(0)
print(json.dumps({"type": "success", "content": "got " + answers["first"] + answers["second"]}))
"""


def test_parallel_calls_are_grouped_and_each_answer_follows_its_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two calls at once: a header names the call whenever the lines turn to the other one."""
    path = local_tools(tmp_path, {"ask": TWO_QUESTIONS}, '{ tool = "ask" }, { tool = "ask" }')
    status, out, err = run(tmp_path, capsys, path, answers='[[answers]]\nvalue = "x"\n' * 4)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    body = lines[lines.index("  -> ask #2 {}") + 1 : lines.index("summary")]
    assert body[0] in ("  [ask #1]", "  [ask #2]")
    current = None
    for index, line in enumerate(body):
        header = re.fullmatch(r"  \[(ask #\d)\]", line)
        if header:
            assert header.group(1) != current  # a header only where the call changes
            current = header.group(1)
            continue
        # Every line under a header is its call's.
        assert f" {current} " in line + " " or f"{current} ·" in line
        if line.lstrip().startswith("= "):
            name = line.split("· ")[1].split(":")[0]
            assert body[index - 1].startswith(f"  ? {current} asks {name} ")
    assert sum(line.startswith("  <- ask #") for line in body) == 2
