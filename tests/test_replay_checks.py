"""Replayed answers held to their question (issue 36, item 5) when a turn is continued.

A turn a dead process left may hold answers no run of ours would record (a
file edited, another writer, an older build): a select value outside its
options, a boolean recorded as text, a secret recorded as answered (a real
run records a secret only as redacted). Continuing replays each question's
latest recorded answer to its call; here each is held to its recorded
question exactly as a live answer is, and one that does not fit is not
replayed: the tool asks again, the person answers, and it is said, once,
naming the question and why (never the value), in the turn's view, in
``inquiry check``, in ``inquiry run --continue-turn`` and in the log.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

import attrs
import pytest
from coordinator_harness import AskingTool, assert_invariants
from test_continue_turn import Continued, deploy_call, left_on_disk, recorded

from coordinator import ScriptedPrompter, find_incomplete_turn, load_conversation
from coordinator.cli._main import main
from machines import Answered, JsonValue, Question

if TYPE_CHECKING:
    from pathlib import Path

TARGET = Question.select("target", "Deploy where?", ["staging", "production"])
CONFIRM = Question.boolean("confirm", "Deploy now?")
TOKEN = Question.secret("token", "The deploy token?")
RECORDED_SECRET = "tok-on-disk-5a1"


@attrs.frozen
class Case:
    """A question, the answer recorded for it that does not fit, what the person types, and why."""

    question: Question
    on_disk: JsonValue
    typed: JsonValue
    why: str


CASES = [
    pytest.param(
        Case(TARGET, "moon", "staging", "it must be one of 'staging', 'production'"), id="select"
    ),
    pytest.param(
        Case(CONFIRM, "yes; rm -rf ~", True, "it must be a boolean (true or false)"),
        id="boolean",
    ),
    pytest.param(
        Case(TOKEN, RECORDED_SECRET, "tok-typed-9c", "a secret is never recorded as answered"),
        id="secret",
    ),
]


def answered_badly(path: Path, question: Question, recorded_answer: JsonValue) -> Path:
    """A turn whose deploy call's question was answered ``recorded_answer``, then the run died."""
    inquiry_id = f"call_1.{question.id}.1"
    return left_on_disk(
        path,
        deploy_call("call_1"),
        recorded(inquiry_id, question),
        Answered(id=inquiry_id, answer=recorded_answer),
    )


@pytest.mark.parametrize("case", CASES)
def test_a_recorded_answer_that_does_not_fit_is_asked_again_and_said_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, case: Case
) -> None:
    """Not replayed: the tool asks again, the person's answer is what it gets, and it is logged."""
    question, on_disk, typed, why = case.question, case.on_disk, case.typed, case.why
    path = answered_badly(tmp_path / "c", question, on_disk)
    incomplete = find_incomplete_turn(load_conversation(path).stream)
    assert incomplete is not None
    ((question_id, said),) = incomplete.open[0].unfit
    assert question_id == question.id
    assert why in said
    assert str(on_disk) not in said
    tool = AskingTool([question])
    with caplog.at_level(logging.WARNING, logger="coordinator"):
        done = Continued(path, {"deploy": tool}, prompter=ScriptedPrompter().answer(value=typed))
    assert tool.runs == [{}, {question.id: typed}]  # the recorded value never reached the tool
    assert f"call_1.{question.id}.2" in {
        getattr(payload, "id", None) for payload in done.appended
    }  # asked again, the next attempt
    logged = [r.getMessage() for r in caplog.records if "is not replayed" in r.getMessage()]
    assert len(logged) == 1
    assert question.id in logged[0]
    assert str(on_disk) not in logged[0]
    secrets = [str(typed)] if question.answer_type.is_secret else []
    assert_invariants(done.conversation, secrets)


def test_an_answer_that_fits_is_replayed_as_before(tmp_path: Path) -> None:
    """The recorded answer fits: replayed to the tool, nobody asked, nothing said."""
    path = answered_badly(tmp_path / "c", TARGET, "production")
    tool = AskingTool([TARGET])
    done = Continued(path, {"deploy": tool}, prompter=ScriptedPrompter())
    assert tool.runs == [{"target": "production"}]
    assert done.incomplete.open[0].unfit == ()


@pytest.mark.parametrize("case", CASES)
def test_check_names_the_answer_not_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case
) -> None:
    """The check command says it in one line naming the question and why, never the value."""
    question, on_disk, why = case.question, case.on_disk, case.why
    path = answered_badly(tmp_path / "c", question, on_disk)
    out = io.StringIO()
    assert main(["check", str(path)], out=out) == 3
    lines = [line for line in out.getvalue().splitlines() if "is not replayed" in line]
    assert len(lines) == 1
    assert f"its recorded answer to {question.id} is not replayed" in lines[0]
    assert why in lines[0]
    assert str(on_disk) not in out.getvalue() + capsys.readouterr().err
