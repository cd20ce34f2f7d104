"""RFD 082 Phase 3, at the machines: every test of the lifecycle that needs no I/O.

The end-to-end versions, through the driver and a real store, are in
``test_coordinator_*``; these pin the behaviour where it is decided.
"""

from __future__ import annotations

from typing import Any

import pytest

from machines import (
    Answered,
    CachedAnswer,
    CancellationReason,
    Cancelled,
    CompleteTool,
    DetachedMode,
    DetachedPolicy,
    IllegalTransitionError,
    InquiryFacts,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    InvalidAnswerError,
    Question,
    QueueQuestion,
    Redacted,
    RunMode,
    RunTool,
    SecretValue,
    ShowQuestion,
    StaticAnswer,
    Step,
    Target,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolCallState,
    TurnState,
)

APPLY = Question.boolean("apply", "Apply the patch?", default=True)
BRANCH = Question.select("branch", "Which branch?", ["main", "dev"])
MESSAGE = Question.text_input("message", "Commit message?")
PASSPHRASE = Question.secret("passphrase", "SSH passphrase?")
SECRET = "correct horse battery staple"
TOOL = InquirySource.tool("fs_modify_file")
USER_AT_TERMINAL = InquiryFacts(terminal=True)


def _call(turn: TurnState, call_id: str = "call_1", **kwargs: Any) -> tuple[ToolCall, Step]:
    return ToolCall.begin(
        turn=turn,
        request=ToolCallRequest(id=call_id, name="fs_modify_file", arguments={"path": "a"}),
        run_mode=kwargs.pop("run_mode", RunMode.UNATTENDED),
        terminal=kwargs.pop("terminal", True),
        # As the driver does: hand in what the turn remembers.
        remembered_permission=turn.remembered_permission("fs_modify_file"),
        **kwargs,
    )


def _ask(call: ToolCall, question: Question, facts: InquiryFacts = USER_AT_TERMINAL) -> Step:
    return call.needs_input(
        question, source=TOOL, accumulated_answers=dict(call.answers), facts=facts
    )


def _shown(call: ToolCall, question: Question) -> Step:
    """Ask ``question`` of the person at the terminal and put it on screen."""
    asked = _ask(call, question)
    shown = call.terminal_ready(cached_answer=None)
    return Step(
        records=asked.records + shown.records,
        effects=asked.effects + shown.effects,
        fired=asked.fired + shown.fired,
    )


def _ids(*steps: Step) -> list[tuple[str, str]]:
    return [
        (type(record).__name__, record.id)
        for step in steps
        for record in step.records
        if isinstance(record, InquiryRequest | Answered | Cancelled | Redacted)
    ]


def _run_effect(step: Step) -> RunTool:
    (effect,) = [e for e in step.effects if isinstance(e, RunTool)]
    return effect


def test_attempt_counter_within_a_tool_call() -> None:
    """The same question asked twice in one tool call gets ids .1 and .2, each paired."""
    turn = TurnState()
    call, _ = _call(turn)
    first = _shown(call, APPLY)
    answered_first = call.answer("call_1.apply.1", value=False)
    second = _shown(call, APPLY)
    answered_second = call.answer("call_1.apply.2", value=True)
    assert _ids(first, answered_first, second, answered_second) == [
        ("InquiryRequest", "call_1.apply.1"),
        ("Answered", "call_1.apply.1"),
        ("InquiryRequest", "call_1.apply.2"),
        ("Answered", "call_1.apply.2"),
    ]
    # Latest answer wins in what the tool receives.
    assert _run_effect(answered_second).answers == {"apply": True}


def test_cross_cycle_reuse_of_a_tool_call_id_continues_the_counter() -> None:
    """A tool-call id reused in a later cycle of the same turn continues at .2."""
    turn = TurnState()
    first_cycle, _ = _call(turn, "fs_modify_file_0")
    step_one = _ask(first_cycle, APPLY)
    second_cycle, _ = _call(turn, "fs_modify_file_0")
    step_two = _ask(second_cycle, APPLY)
    assert [i for kind, i in _ids(step_one, step_two) if kind == "InquiryRequest"] == [
        "fs_modify_file_0.apply.1",
        "fs_modify_file_0.apply.2",
    ]


def test_per_turn_reset_of_the_counter() -> None:
    """Two turns both start the counter at 1 for the same tool call and question."""
    ids = []
    for _ in range(2):
        call, _ = _call(TurnState())
        ids += [i for kind, i in _ids(_ask(call, APPLY)) if kind == "InquiryRequest"]
    assert ids == ["call_1.apply.1", "call_1.apply.1"]


def test_inquiry_id_survives_the_prompt_round_trip() -> None:
    """The id allocated with the request is what the prompt carries and the response uses."""
    call, _ = _call(TurnState())
    asked = _ask(call, APPLY)
    (queued,) = asked.effects
    shown = call.terminal_ready(cached_answer=None)
    (prompt,) = shown.effects
    assert isinstance(queued, QueueQuestion)
    assert isinstance(prompt, ShowQuestion)
    answered = call.answer(prompt.inquiry_id, value=True)
    request = asked.records[0]
    assert isinstance(request, InquiryRequest)
    assert queued.inquiry_id == prompt.inquiry_id == request.id
    assert answered.records == (Answered(id=request.id, answer=True),)


def test_secret_answered_at_the_prompter_is_redacted_and_reaches_the_tool() -> None:
    """A secret typed at the prompt is recorded as Redacted; the tool's next run gets it."""
    call, _ = _call(TurnState())
    _ask(call, PASSPHRASE)
    call.terminal_ready(cached_answer=None)
    step = call.answer("call_1.passphrase.1", SECRET)
    assert step.records == (Redacted(id="call_1.passphrase.1"),)
    delivered = _run_effect(step).answers["passphrase"]
    assert isinstance(delivered, SecretValue)
    assert delivered.reveal() == SECRET
    assert SECRET not in repr(step)


def test_secret_static_answer_is_redacted_and_reaches_the_tool() -> None:
    """A configured answer to a secret question is applied but recorded as Redacted."""
    call, _ = _call(TurnState())
    step = _ask(call, PASSPHRASE, InquiryFacts(terminal=False, static_answer=StaticAnswer(SECRET)))
    assert [type(r) for r in step.records] == [InquiryRequest, Redacted]
    delivered = _run_effect(step).answers["passphrase"]
    assert isinstance(delivered, SecretValue)
    assert delivered.reveal() == SECRET
    assert SECRET not in repr(step)


def test_a_configured_answer_never_shows_in_a_repr() -> None:
    """A static answer, a secret's included, is hidden from its repr and from its facts'."""
    facts = InquiryFacts(terminal=False, static_answer=StaticAnswer(SECRET))
    assert SECRET not in repr(facts.static_answer)
    assert SECRET not in repr(facts)
    assert SECRET not in str(facts)


def test_cache_bypass_for_secrets_on_write_and_read() -> None:
    """Remember is ignored for a secret answer, and a cached entry never answers a secret."""
    turn = TurnState()
    call, _ = _call(turn)
    _shown(call, PASSPHRASE)
    call.answer("call_1.passphrase.1", SECRET, remember=True)
    assert dict(turn.remembered_tool_answers) == {}
    # Read side: even a cached answer handed in is bypassed for a secret question.
    second, _ = _call(turn, "call_2")
    step = _ask(
        second, PASSPHRASE, InquiryFacts(terminal=True, cached_answer=CachedAnswer("stale"))
    )
    assert [type(r) for r in step.records] == [InquiryRequest]
    assert second.state is ToolCallState.AWAITING_INPUT


@pytest.mark.parametrize(
    ("question", "answer"), [(APPLY, False), (BRANCH, "dev"), (MESSAGE, "fix: it")]
)
def test_non_secret_answers_are_recorded_and_flow_through_the_cache(
    question: Question, answer: Any
) -> None:
    """Boolean, select and text answers are recorded as Answered and can be remembered."""
    turn = TurnState()
    call, _ = _call(turn)
    _shown(call, question)
    step = call.answer(f"call_1.{question.id}.1", answer, remember=True)
    assert step.records == (Answered(id=f"call_1.{question.id}.1", answer=answer),)
    cached = turn.remembered_tool_answer("fs_modify_file", question)
    assert cached is not None
    assert cached.value == answer
    # The next tool call asking the same question is answered from the cache, recorded.
    other, _ = _call(turn, "call_2")
    again = _ask(other, question, InquiryFacts(terminal=True, cached_answer=cached))
    assert again.records[1] == Answered(id=f"call_2.{question.id}.1", answer=answer)


def test_cancellation_reason_mapping() -> None:
    """A user cancellation is `user`; a backend failure is `backend_error`."""
    to_model = InquiryFacts(terminal=True, target=Target.ASSISTANT)
    call, _ = _call(TurnState(), terminal=False)
    _ask(call, APPLY, to_model)
    cancelled = call.cancel_input("call_1.apply.1")
    assert cancelled.records[0] == Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)
    assert cancelled.records[1] == ToolCallResponse(
        id="call_1", content="Tool input cancelled by user.", is_error=False
    )

    failing, _ = _call(TurnState(), terminal=False)
    _ask(failing, APPLY, to_model)
    failed = failing.fail_input("call_1.apply.1", "HTTP 500")
    assert failed.records[0] == Cancelled(
        id="call_1.apply.1", reason=CancellationReason.BACKEND_ERROR
    )
    response = failed.records[1]
    assert isinstance(response, ToolCallResponse)
    assert response.is_error
    assert "Apply the patch?" in response.content
    assert "HTTP 500" in response.content


def test_secret_routing_guard_without_a_terminal() -> None:
    """A secret with no terminal fails the tool and records no_prompt_backend."""
    call, _ = _call(TurnState(), terminal=False)
    step = _ask(call, PASSPHRASE, InquiryFacts(terminal=False))
    assert step.records[1] == Cancelled(
        id="call_1.passphrase.1", reason=CancellationReason.NO_PROMPT_BACKEND
    )
    assert call.state is ToolCallState.FAILED
    assert call.response is not None
    assert call.response.is_error
    assert not any(type(effect).__name__ == "AskAssistant" for effect in step.effects)


def test_secret_routing_guard_for_the_assistant() -> None:
    """A secret targeted at the assistant fails the tool and records assistant_routing_denied."""
    call, _ = _call(TurnState())
    step = _ask(call, PASSPHRASE, InquiryFacts(terminal=True, target=Target.ASSISTANT))
    assert step.records[1] == Cancelled(
        id="call_1.passphrase.1", reason=CancellationReason.ASSISTANT_ROUTING_DENIED
    )
    assert call.state is ToolCallState.FAILED
    assert not any(type(effect).__name__ == "AskAssistant" for effect in step.effects)


def _failure_told(record: object, question: Question, expected: str) -> str:
    """The call's error response, checked to name ``question`` and what was ``expected``."""
    assert isinstance(record, ToolCallResponse)
    assert record.is_error
    assert f"question '{question.id}'" in record.content
    assert expected in record.content
    return record.content


@pytest.mark.parametrize(
    ("question", "configured", "expected"),
    [
        (APPLY, "yes", "a boolean (true or false)"),
        (BRANCH, "feature", "one of 'main', 'dev'"),
        (MESSAGE, 42, "a string"),
    ],
)
def test_an_invalid_static_answer_is_not_applied(
    question: Question, configured: Any, expected: str
) -> None:
    """A static answer that does not fit is refused: invalid_static_answer and a tool error."""
    call, _ = _call(TurnState())
    step = _ask(
        call, question, InquiryFacts(terminal=True, static_answer=StaticAnswer(configured))
    )
    assert step.records[1] == Cancelled(
        id=f"call_1.{question.id}.1", reason=CancellationReason.INVALID_STATIC_ANSWER
    )
    assert str(configured) in _failure_told(step.records[2], question, expected)


def test_an_invalid_static_answer_to_a_secret_does_not_echo_it() -> None:
    """The tool error for a bad static secret names its type, never its value."""
    call, _ = _call(TurnState())
    step = _ask(call, PASSPHRASE, InquiryFacts(terminal=True, static_answer=StaticAnswer(987654)))
    response = step.records[-1]
    assert isinstance(response, ToolCallResponse)
    assert "987654" not in response.content
    assert "int" in response.content


@pytest.mark.parametrize(
    ("question", "given", "expected"),
    [
        (APPLY, "maybe", "a boolean (true or false)"),
        (BRANCH, "feature-secret-9", "one of 'main', 'dev'"),
        (MESSAGE, 42, "a string"),
        (PASSPHRASE, 987654, "a string"),
    ],
)
def test_an_answers_file_reply_that_does_not_fit_is_the_files_fault(
    question: Question, given: Any, expected: str
) -> None:
    """A misfit from the answers file: invalid_answers_file_entry, never remembered nor echoed."""
    turn = TurnState()
    call, _ = _call(turn)
    _shown(call, question)
    step = call.answer(f"call_1.{question.id}.1", given, remember=True, from_file=True)
    assert step.records[0] == Cancelled(
        id=f"call_1.{question.id}.1", reason=CancellationReason.INVALID_ANSWERS_FILE_ENTRY
    )
    assert str(given) not in _failure_told(step.records[1], question, expected)
    assert turn.remembered_tool_answers == {}
    # Not the file's, or not on screen: refused as before, and nothing changes.
    other, _ = _call(TurnState(), call_id="call_2")
    _shown(other, question)
    with pytest.raises(InvalidAnswerError):
        other.answer(f"call_2.{question.id}.1", given)


def test_a_tool_that_keeps_asking_stops_after_max_attempts() -> None:
    """After max_attempts answers, asking again fails the tool.

    RFD 082 records every question a tool asks: the one too many is recorded
    too, and closed at once as attempts_exhausted without being routed.
    """
    call, _ = _call(TurnState(), max_attempts=3)
    records: list[object] = []
    for attempt in range(1, 4):
        records += _shown(call, APPLY).records
        records += call.answer(f"call_1.apply.{attempt}", value=True).records
    final = _ask(call, APPLY)
    assert call.state is ToolCallState.FAILED
    assert final.effects == (CompleteTool(response=call.response),)  # type: ignore[arg-type]
    assert final.records == (
        InquiryRequest(
            id="call_1.apply.4", source=TOOL, question=InquiryQuestion.from_question(APPLY)
        ),
        Cancelled(id="call_1.apply.4", reason=CancellationReason.ATTEMPTS_EXHAUSTED),
        call.response,
    )
    assert call.response is not None
    assert "again after 3 answers" in call.response.content
    requests = [r.id for r in records if isinstance(r, InquiryRequest)]
    responses = [r.id for r in records if isinstance(r, Answered)]
    assert requests == responses == ["call_1.apply.1", "call_1.apply.2", "call_1.apply.3"]


def test_a_tool_that_keeps_asking_new_questions_stops_after_max_questions() -> None:
    """A tool making up a new question id each run is stopped too, the last one recorded."""
    call, _ = _call(TurnState(), max_questions=3)
    for number in range(1, 4):
        _shown(call, Question.boolean(f"q{number}", "Go on?"))
        call.answer(f"call_1.q{number}.1", value=True)
    final = _ask(call, Question.boolean("q4", "Go on?"))
    assert call.state is ToolCallState.FAILED
    assert [type(r).__name__ for r in final.records] == [
        "InquiryRequest",
        "Cancelled",
        "ToolCallResponse",
    ]
    assert final.records[1] == Cancelled(
        id="call_1.q4.1", reason=CancellationReason.ATTEMPTS_EXHAUSTED
    )
    response = final.records[2]
    assert isinstance(response, ToolCallResponse)
    assert "asked another question after 3 answers" in response.content


def test_no_static_answer_is_pre_seeded() -> None:
    """The first run of a tool gets no answers; a static answer arrives only after it asks."""
    call, begun = _call(TurnState())
    assert _run_effect(begun).answers == {}
    step = _ask(call, APPLY, InquiryFacts(terminal=True, static_answer=StaticAnswer(value=True)))
    assert _run_effect(step).answers == {"apply": True}


def test_a_queued_question_is_answered_by_what_was_remembered_meanwhile() -> None:
    """When its turn comes, a queued question checks the cache again and needs no prompt."""
    turn = TurnState()
    call, _ = _call(turn)
    _ask(call, APPLY)
    step = call.terminal_ready(cached_answer=CachedAnswer(value=True))
    assert step.records == (Answered(id="call_1.apply.1", answer=True),)
    assert isinstance(step.effects[0], RunTool)


def test_a_permission_is_answered_only_once_its_prompt_is_on_screen() -> None:
    """Queued for the terminal, a permission prompt refuses y and n; shown, it takes them."""
    call, _ = _call(TurnState(), run_mode=RunMode.ASK)
    assert call.state.value == "awaiting_permission"
    for answer in (call.permit, call.deny):
        with pytest.raises(IllegalTransitionError, match="in state 'awaiting_permission'"):
            answer()
    shown = call.terminal_ready(remembered_permission=None)
    assert call.state.value == "asking_permission"
    assert [type(effect).__name__ for effect in shown.effects] == ["ShowPermissionPrompt"]
    with pytest.raises(
        IllegalTransitionError, match="'terminal_ready' in state 'asking_permission'"
    ):
        call.terminal_ready(remembered_permission="y")
    assert [type(effect).__name__ for effect in call.permit().effects] == ["RunTool"]


def test_a_question_takes_the_persons_answer_only_once_it_is_on_screen() -> None:
    """Queued for the terminal, a question refuses an answer; shown, it refuses a second show."""
    call, _ = _call(TurnState())
    _ask(call, APPLY)
    with pytest.raises(IllegalTransitionError, match="'answer' in state 'routed'"):
        call.answer("call_1.apply.1", value=True)
    with pytest.raises(IllegalTransitionError, match="'fail' in state 'routed'"):
        call.fail_input("call_1.apply.1", "HTTP 500")
    shown = call.terminal_ready(cached_answer=None)
    assert [type(effect).__name__ for effect in shown.effects] == ["ShowQuestion"]
    # On screen, the question is not shown again nor answered from the cache meanwhile.
    with pytest.raises(IllegalTransitionError, match="'terminal_ready' in state 'shown'"):
        call.terminal_ready(cached_answer=CachedAnswer(value=False))
    assert call.answer("call_1.apply.1", value=True).records == (
        Answered(id="call_1.apply.1", answer=True),
    )


def test_the_models_answer_is_never_remembered_and_never_shown() -> None:
    """A question sent to the model refuses remember=True and a terminal slot."""
    turn = TurnState()
    call, _ = _call(turn)
    _ask(call, APPLY, InquiryFacts(terminal=True, target=Target.ASSISTANT))
    with pytest.raises(IllegalTransitionError, match="no row's guard holds"):
        call.answer("call_1.apply.1", value=True, remember=True)
    with pytest.raises(IllegalTransitionError, match="no row's guard holds"):
        call.terminal_ready(cached_answer=None)
    assert call.answer("call_1.apply.1", value=True).records[0] == Answered(
        id="call_1.apply.1", answer=True
    )
    assert dict(turn.remembered_tool_answers) == {}


def test_an_answer_that_does_not_fit_changes_nothing() -> None:
    """An answer of the wrong type is refused before the machine moves."""
    call, _ = _call(TurnState())
    _shown(call, BRANCH)
    with pytest.raises(InvalidAnswerError, match="one of 'main', 'dev'"):
        call.answer("call_1.branch.1", "feature")
    assert call.state is ToolCallState.AWAITING_INPUT
    assert call.answer("call_1.branch.1", "main").records[0] == Answered(
        id="call_1.branch.1", answer="main"
    )


def test_permission_y_and_n_are_remembered_only_when_asked() -> None:
    """Y and N remember the decision for the turn; y and n do not."""
    turn = TurnState()
    asked, _ = _call(turn, run_mode=RunMode.ASK)
    asked.terminal_ready(remembered_permission=None)
    asked.permit(remember=False)
    assert turn.remembered_permission("fs_modify_file") is None
    denied, _ = _call(turn, "call_2", run_mode=RunMode.ASK)
    denied.terminal_ready(remembered_permission=None)
    denied.deny(remember=True)
    assert turn.remembered_permission("fs_modify_file") == "n"
    third, step = _call(turn, "call_3", run_mode=RunMode.ASK)
    assert third.state is ToolCallState.SKIPPED
    assert step.records == (
        ToolCallResponse(
            id="call_3", content="Tool skipped by user (remembered).", is_error=False
        ),
    )
    assert isinstance(step.effects[0], CompleteTool)


def test_skip_really_skips_and_r_gives_a_reason() -> None:
    """Run mode skip never runs the tool; a skip with a reason tells the model why."""
    _, step = _call(TurnState(), run_mode=RunMode.SKIP)
    assert not any(isinstance(e, RunTool) for e in step.effects)
    assert step.records == (
        ToolCallResponse(id="call_1", content="Tool skipped by configuration.", is_error=False),
    )
    asked, _ = _call(TurnState(), run_mode=RunMode.ASK)
    asked.terminal_ready(remembered_permission=None)
    reason = asked.deny(reason="use git instead")
    assert reason.records == (
        ToolCallResponse(
            id="call_1", content="Tool skipped by user: use git instead", is_error=False
        ),
    )


def test_ask_without_a_terminal_follows_the_detached_policy() -> None:
    """Run mode ask with nobody to ask fails by default (RFD 049: deny); auto runs the tool."""
    call, step = _call(TurnState(), run_mode=RunMode.ASK, terminal=False)
    assert call.state is ToolCallState.FAILED
    (response,) = step.records
    assert isinstance(response, ToolCallResponse)
    assert response.is_error
    assert "detached policy for permissions is 'deny'" in response.content
    auto = DetachedPolicy(run=DetachedMode.AUTO)
    call, step = _call(TurnState(), run_mode=RunMode.ASK, terminal=False, detached=auto)
    assert call.state is ToolCallState.RUNNING
    assert isinstance(step.effects[0], RunTool)


def test_edited_arguments_are_what_the_tool_runs_with() -> None:
    """Arguments edited at the permission prompt replace the model's for every run."""
    call, _ = _call(TurnState(), run_mode=RunMode.ASK)
    call.terminal_ready(remembered_permission=None)
    step = call.permit(arguments={"path": "b"})
    assert _run_effect(step).arguments == {"path": "b"}
    asked = _ask(call, APPLY, InquiryFacts(terminal=True, static_answer=StaticAnswer(value=True)))
    assert _run_effect(asked).arguments == {"path": "b"}


def test_an_interrupt_closes_the_open_question_and_the_call() -> None:
    """Interrupting a call waiting for input withdraws its question and ends the call."""
    call, _ = _call(TurnState())
    _ask(call, APPLY)
    step = call.interrupt()
    assert step.records == (
        Cancelled(id="call_1.apply.1", reason=CancellationReason.WITHDRAWN),
        ToolCallResponse(id="call_1", content="Tool call was interrupted.", is_error=True),
    )
    running, _ = _call(TurnState(), "call_2")
    assert running.interrupt().records == (
        ToolCallResponse(id="call_2", content="Tool call was interrupted.", is_error=True),
    )


def test_a_response_for_a_question_that_is_not_open_is_refused() -> None:
    """Answering with an inquiry id that is not the open one raises and changes nothing."""
    call, _ = _call(TurnState())
    _ask(call, APPLY)
    with pytest.raises(Exception, match="is not the open one"):
        call.answer("call_1.apply.7", value=True)
    assert call.state is ToolCallState.AWAITING_INPUT
