"""What the machines share between steps and questions never mixes one up with another.

A step's work is made once where it can be (the recorded form of a question a
tool asks again, a row's note when it runs no action, a payload passed on
rather than copied): these tests hold what is recorded and run to what each
question and call was on its own.
"""

from __future__ import annotations

import gc
from types import MappingProxyType
from typing import Any

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
        # often lands where the last one was, under the same id().
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


def test_a_payload_given_as_a_read_only_mapping_fires_as_keywords_do() -> None:
    """fire_with(payload) and fire(**payload): the same rows, records and state."""

    def begun() -> ToolCall:
        return ToolCall(
            turn=TurnState(),
            request=ToolCallRequest(id="call_1", name="deploy", arguments={}),
            run_mode=RunMode.UNATTENDED,
            terminal=False,
        )

    payload: dict[str, Any] = {"remembered": None, "available": True}
    by_keywords, by_mapping = begun(), begun()
    TOOL_CALL_MACHINE.fire(by_keywords, "begin", **payload)
    TOOL_CALL_MACHINE.fire_with(by_mapping, "begin", MappingProxyType(payload))
    assert by_mapping.state is by_keywords.state
    assert by_mapping.buffer.take() == by_keywords.buffer.take()


def test_rows_that_run_nothing_note_each_step_apart() -> None:
    """Two questions through an action-less row: each step notes its own rows, in order."""
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
    rows = [[fired.row for fired in step.fired] for step in steps]
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
