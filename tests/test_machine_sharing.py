"""One machine per table drives every model: nothing of one question or call reaches another.

Each table runs on one ``transitions`` machine, shared by every model it
drives; a model holds its own state, buffer and facts. These tests hold what
is recorded and run to what each question and call was on its own, however
many come and go.
"""

from __future__ import annotations

import copy
import gc
import importlib
import pkgutil
from collections import deque
from typing import Any

import attrs
from machine_drivers import DRIVERS, NEEDS_INPUT

import machines
from machines import (
    INQUIRY_MACHINE,
    TOOL_CALL_MACHINE,
    Answered,
    AnswerType,
    Inquiry,
    InquiryFacts,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    RunMode,
    RunTool,
    StaticAnswer,
    ToolCall,
    ToolCallRequest,
    ToolCallState,
    TurnState,
)


def _ask(question: Question, turn: TurnState, call: str = "call_1") -> InquiryRequest:
    inquiry, step = Inquiry.ask(
        turn=turn,
        tool_call_id=call,
        tool_name="deploy",
        question=question,
        source=InquirySource.tool("deploy"),
        facts=InquiryFacts(terminal=False, static_answer=StaticAnswer(value=True)),
    )
    request = step.records[0]
    assert isinstance(request, InquiryRequest)
    assert inquiry.id == request.id
    return request


def test_each_question_is_recorded_as_it_was_asked_when_question_objects_come_and_go() -> None:
    """Questions made and dropped one after another (memory reused): each records its own."""
    turn = TurnState()
    for number in range(600):
        # Made here and dropped at the next turn of the loop: a new question
        # often lands where the last one was.
        question = Question.boolean(f"q{number}", f"Apply patch {number}?", default=number > 9)
        request = _ask(question, turn)
        assert request.question == InquiryQuestion.from_question(question)
        assert request.question.text == f"Apply patch {number}?"
        del question, request
        if number % 100 == 0:
            gc.collect()


def test_the_same_question_asked_again_is_recorded_the_same_every_time() -> None:
    """A tool's one question object, asked by many calls: every request records it whole."""
    question = Question.select(
        "strategy", "How?", ["merge", "rebase"], default="rebase", context="two ways"
    )
    turn = TurnState()
    requests = [_ask(question, turn, call=f"call_{n}") for n in range(5)]
    assert [request.id for request in requests] == [f"call_{n}.strategy.1" for n in range(5)]
    expected = InquiryQuestion(
        text="How?",
        answer_type=AnswerType.select(["merge", "rebase"]),
        default="rebase",
        id="strategy",
        context="two ways",
    )
    assert all(request.question == expected for request in requests)


def test_a_secret_question_asked_again_is_recorded_as_asked() -> None:
    """A secret question's recorded form is made for each request (none is kept for it)."""
    question = Question.secret("token", "Token?", context="for the registry")
    turn = TurnState()
    first, second = _ask(question, turn, "call_1"), _ask(question, turn, "call_2")
    assert first.question == second.question == InquiryQuestion.from_question(question)


def test_the_answers_a_tool_runs_with_are_the_calls_own() -> None:
    """Answers handed to needs_input and changed afterwards by the caller change nothing."""
    call, _ = ToolCall.begin(
        turn=TurnState(),
        request=ToolCallRequest(id="call_1", name="deploy", arguments={}),
        run_mode=RunMode.UNATTENDED,
        terminal=False,
        remembered_permission=None,
    )
    accumulated: dict[str, Any] = {"earlier": "yes"}
    step = call.needs_input(
        Question.boolean("apply", "Apply?"),
        source=InquirySource.tool("deploy"),
        accumulated_answers=accumulated,
        facts=InquiryFacts(terminal=False, static_answer=StaticAnswer(value=True)),
    )
    accumulated["later"] = "changed"
    accumulated["earlier"] = "no"
    assert call.answers == {"earlier": "yes", "apply": True}
    (run,) = step.effects
    assert isinstance(run, RunTool)
    assert run.answers == {"earlier": "yes", "apply": True}
    assert [type(record) for record in step.records] == [InquiryRequest, Answered]


def test_each_model_notes_its_own_rows() -> None:
    """Two questions through the same rows (one with no action): each step notes its own."""
    steps = []
    for call in ("call_1", "call_2"):
        inquiry = Inquiry(
            turn=TurnState(),
            tool_call_id=call,
            tool_name="deploy",
            question=Question.boolean("apply", "Apply?"),
            source=InquirySource.tool("deploy"),
            facts=InquiryFacts(terminal=False, static_answer=StaticAnswer(value=True)),
        )
        INQUIRY_MACHINE.fire(inquiry, "ask")
        steps.append(inquiry.buffer.take())
    rows = [[fired.row.id for fired in step.fired] for step in steps]
    assert (
        rows[0]
        == rows[1]
        == [
            "ask:new->requested",
            "resolve:requested->static[static]",
            "use_static:static->answered[plain]",
        ]
    )
    for call, step in zip(("call_1", "call_2"), steps, strict=True):
        request, answered = step.records
        assert isinstance(request, InquiryRequest)
        assert isinstance(answered, Answered)
        assert request.id == answered.id == f"{call}.apply.1"


def _module_values() -> dict[tuple[str, str], Any]:
    """A copy of every mutable container held at module level in ``machines``."""
    values = {}
    for info in pkgutil.iter_modules(machines.__path__, "machines."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not name.startswith("__") and isinstance(
                value, dict | list | set | deque | bytearray
            ):
                values[info.name, name] = copy.deepcopy(value)
    return values


def _run_every_kind() -> None:
    """Ask every kind of question, and begin every kind of call and ask it each question.

    Each question is a new object, as a tool's questions often are: what a
    machine kept of one it had seen would show as a change.
    """
    inquiries, calls = DRIVERS["inquiry"], DRIVERS["tool_call"]
    for case in inquiries.cases():
        inquiry = case.make()
        inquiry.question = attrs.evolve(inquiry.question)
        INQUIRY_MACHINE.fire(inquiry, "ask")
    for case in calls.cases():
        for begin in calls.payloads(case.make(), "begin"):
            for number in range(len(NEEDS_INPUT)):
                call = case.make()
                TOOL_CALL_MACHINE.fire(call, "begin", **begin)
                if call.state is not ToolCallState.RUNNING:
                    break
                asked = calls.payloads(call, "needs_input")[number]
                asked["question"] = attrs.evolve(asked["question"])
                TOOL_CALL_MACHINE.fire(call, "needs_input", **asked)


def test_running_the_machines_changes_nothing_at_module_level() -> None:
    """Every kind of question and call, run through its table, leaves no state in machines/."""
    before = _module_values()
    machines_before = [copy.deepcopy(vars(m)) for m in (INQUIRY_MACHINE, TOOL_CALL_MACHINE)]
    _run_every_kind()
    assert _module_values() == before
    # The shared machines keep nothing of the models they drove.
    assert [vars(m) for m in (INQUIRY_MACHINE, TOOL_CALL_MACHINE)] == machines_before
