"""The inquiry machine driven on its own, through its public API, as an embedder would.

``machines.Inquiry`` is public: a framework with its own tool loop can record
and resolve one question without the ``ToolCoordinator``. These tests use only
what ``machines`` exports, and check what such an embedder observes: the
records to append (in order), the effects to carry out, what the tool is
handed, and the turn's caches.
"""

from __future__ import annotations

import pytest

from machines import (
    Answered,
    AskAssistant,
    CancellationReason,
    Cancelled,
    Effect,
    Event,
    IllegalTransitionError,
    Inquiry,
    InquiryFacts,
    InquiryRequest,
    InquirySource,
    InquiryState,
    InvalidAnswerError,
    Question,
    QueueQuestion,
    Redacted,
    SecretValue,
    ShowQuestion,
    StaticAnswer,
    Target,
    TurnState,
)

APPLY = Question.boolean("apply", "Apply the patch?", default=True)
TOKEN = Question.secret("token", "Deploy token?")
BRANCH = Question.select("branch", "Which branch?", ["main", "dev"])


def ask(
    turn: TurnState, question: Question, facts: InquiryFacts, *, call: str = "c1"
) -> tuple[Inquiry, list[Event], list[Effect]]:
    """Ask ``question`` for tool ``patch``'s call ``call``; the step's records and effects."""
    inquiry, step = Inquiry.ask(
        turn=turn,
        tool_call_id=call,
        tool_name="patch",
        question=question,
        source=InquirySource.tool("patch"),
        facts=facts,
    )
    return inquiry, list(step.records), list(step.effects)


def state(inquiry: Inquiry) -> InquiryState:
    """Where ``inquiry`` is now (a call, so that a type checker does not narrow it for good)."""
    return inquiry.state


def test_a_question_for_the_person_is_recorded_queued_shown_and_answered() -> None:
    """Inquiry.ask records the request and queues it; terminal_ready shows it; answer closes it."""
    turn = TurnState()
    inquiry, records, effects = ask(turn, APPLY, InquiryFacts(terminal=True))
    assert inquiry.id == "c1.apply.1"
    assert [type(r) for r in records] == [InquiryRequest]
    (request,) = records
    assert isinstance(request, InquiryRequest)
    assert request.question.text == "Apply the patch?"
    assert effects == [
        QueueQuestion(
            tool_call_id="c1", inquiry_id="c1.apply.1", tool_name="patch", question=APPLY
        )
    ]
    assert state(inquiry) is InquiryState.ROUTED

    shown = inquiry.terminal_ready(None)
    assert shown.records == ()
    assert [type(e) for e in shown.effects] == [ShowQuestion]

    answered = inquiry.answer(False)
    assert answered.records == (Answered(id="c1.apply.1", answer=False),)
    assert inquiry.closed
    assert state(inquiry) is InquiryState.ANSWERED
    assert inquiry.delivered is False
    assert inquiry.response == Answered(id="c1.apply.1", answer=False)
    assert turn.remembered_tool_answer("patch", APPLY) is None  # not asked to remember


def test_an_answer_remembered_answers_the_next_ask_from_the_turn_cache() -> None:
    """remember=True fills the turn's answer cache; the next ask is closed at once, as .2."""
    turn = TurnState()
    first, _, _ = ask(turn, APPLY, InquiryFacts(terminal=True))
    first.terminal_ready(None)
    first.answer(True, remember=True)
    cached = turn.remembered_tool_answer("patch", APPLY)
    assert cached is not None
    assert turn.remembered_permission("patch") is None  # the permission cache is apart

    again, records, effects = ask(turn, APPLY, InquiryFacts(terminal=True, cached_answer=cached))
    assert again.id == "c1.apply.2"
    assert records == [records[0], Answered(id="c1.apply.2", answer=True)]
    assert effects == []
    assert again.closed
    assert again.delivered is True


def test_a_static_answer_closes_the_question_in_its_first_step() -> None:
    """A configured answer that fits is recorded as the answer, with no prompt."""
    inquiry, records, effects = ask(
        TurnState(), BRANCH, InquiryFacts(terminal=False, static_answer=StaticAnswer("dev"))
    )
    assert [type(r) for r in records] == [InquiryRequest, Answered]
    assert records[1] == Answered(id="c1.branch.1", answer="dev")
    assert effects == []
    assert inquiry.delivered == "dev"


def test_a_secret_is_delivered_to_the_tool_and_recorded_redacted() -> None:
    """The tool gets the SecretValue; the stream gets Redacted; nothing prints the secret."""
    inquiry, _, _ = ask(TurnState(), TOKEN, InquiryFacts(terminal=True))
    inquiry.terminal_ready(None)
    step = inquiry.answer(SecretValue("hunter2-token"))
    assert step.records == (Redacted(id="c1.token.1"),)
    assert isinstance(inquiry.delivered, SecretValue)
    assert inquiry.delivered.reveal() == "hunter2-token"
    assert "hunter2-token" not in repr(step) + repr(inquiry.delivered) + str(inquiry.delivered)


def test_a_question_for_the_model_that_fails_is_cancelled_with_the_backend_error() -> None:
    """Routed to the assistant: AskAssistant; fail closes it as backend_error for the tool."""
    inquiry, _, effects = ask(
        TurnState(), BRANCH, InquiryFacts(terminal=False, target=Target.ASSISTANT)
    )
    assert [type(e) for e in effects] == [AskAssistant]
    step = inquiry.fail("the provider timed out")
    assert step.records == (Cancelled(id="c1.branch.1", reason=CancellationReason.BACKEND_ERROR),)
    assert inquiry.failure is not None
    assert "the provider timed out" in inquiry.failure


def test_a_persons_cancel_is_recorded_as_user_and_is_no_tool_failure() -> None:
    """Inquiry.cancel closes the question as the user's; the tool is not told of an error."""
    inquiry, _, _ = ask(TurnState(), APPLY, InquiryFacts(terminal=True))
    inquiry.terminal_ready(None)
    step = inquiry.cancel()
    assert step.records == (Cancelled(id="c1.apply.1", reason=CancellationReason.USER),)
    assert inquiry.failure is None
    assert state(inquiry) is InquiryState.CANCELLED


def test_a_bad_answer_is_refused_and_changes_nothing() -> None:
    """An answer of the wrong type raises before the machine moves; a right one still closes it."""
    inquiry, _, _ = ask(TurnState(), BRANCH, InquiryFacts(terminal=True))
    inquiry.terminal_ready(None)
    with pytest.raises(InvalidAnswerError):
        inquiry.answer("feature")  # not an option
    assert state(inquiry) is InquiryState.SHOWN
    assert inquiry.answer("main").records == (Answered(id="c1.branch.1", answer="main"),)


def test_a_trigger_out_of_turn_is_refused_and_records_nothing() -> None:
    """Answering before the question is shown is illegal: no record, state unchanged."""
    inquiry, _, _ = ask(TurnState(), APPLY, InquiryFacts(terminal=True))
    with pytest.raises(IllegalTransitionError):
        inquiry.answer(True)
    assert state(inquiry) is InquiryState.ROUTED
    assert inquiry.terminal_ready(None).records == ()
