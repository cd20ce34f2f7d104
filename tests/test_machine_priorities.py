"""What the table tests cannot see: the order of overlapping rows, final and transient states.

The table tests make each row fire with facts that satisfy its guard alone,
so they hold whatever order overlapping rows are in. Here the order is
pinned by RFD 082's text (cache, static answer, routing guards, routing;
before them all, the tool call's limit on asking again), not read from the
table: swapping two rows whose guards can both hold fails a test.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
from machine_drivers import QUESTIONS, VALID

from machines import (
    INQUIRY_MACHINE,
    INQUIRY_ROWS,
    TOOL_CALL_MACHINE,
    Answered,
    CachedAnswer,
    CancellationReason,
    Cancelled,
    DetachedMode,
    Inquiry,
    InquiryFacts,
    InquiryRequest,
    InquirySource,
    InquiryState,
    MachineError,
    Question,
    Redacted,
    Row,
    RunMode,
    SecretValue,
    StaticAnswer,
    TableMachine,
    Target,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolCallState,
    TurnState,
)

#: RFD 082's order of resolution, by guard name: the first that holds decides.
RESOLVE_ORDER = (
    "exhausted",
    "cached",
    "static",
    "secret_for_assistant",
    "to_user",
    "to_assistant",
    "nobody",
)
_RESOLVE = {row.guard.name: row for row in INQUIRY_ROWS if row.trigger == "resolve" and row.guard}
#: With nobody to ask, the order the detached policy's rows are tried in (RFD 049):
#: a secret is a person's whatever the mode; an exclusive question never goes to the model.
#: park first: a secret is parked for a person, not refused, when the policy is park.
POLICY_ORDER = ("park", "secret", "exclusive_auto", "auto", "default", "no_default", "deny")
_POLICY = {
    row.guard.name: row for row in INQUIRY_ROWS if row.trigger == "apply_policy" and row.guard
}


def _inquiry(question: Question, facts: InquiryFacts) -> Inquiry:
    return Inquiry(
        turn=TurnState(),
        tool_call_id="call_1",
        tool_name="deploy",
        question=question,
        source=InquirySource.tool("deploy"),
        facts=facts,
    )


def _ask(question: Question, facts: InquiryFacts) -> tuple[Inquiry, list[object]]:
    inquiry = _inquiry(question, facts)
    inquiry.fire("ask")
    step = inquiry.buffer.take()
    return inquiry, list(step.records)


@attrs.frozen
class _Facts:
    kind: str
    cached: bool
    static: str
    target: Target
    terminal: bool
    exhausted: bool

    def build(self) -> InquiryFacts:
        static = {
            "none": None,
            "valid": StaticAnswer(VALID[self.kind]),
            "invalid": StaticAnswer(["not", "an", "answer"]),
        }[self.static]
        return InquiryFacts(
            terminal=self.terminal,
            target=self.target,
            static_answer=static,
            cached_answer=CachedAnswer(VALID[self.kind]) if self.cached else None,
            exhausted="asked too often" if self.exhausted else None,
        )


_EVERY_FACT = [
    _Facts(*combination)
    for combination in itertools.product(
        ("boolean", "secret"),
        (False, True),
        ("none", "valid", "invalid"),
        tuple(Target),
        (False, True),
        (False, True),
    )
]


@pytest.mark.parametrize("facts", _EVERY_FACT, ids=repr)
def test_the_first_resolution_in_rfd_082s_order_is_the_one_taken(facts: _Facts) -> None:
    """Whatever facts hold together, a question resolves by the first that holds in RFD order."""
    inquiry = _inquiry(QUESTIONS[facts.kind], facts.build())
    INQUIRY_MACHINE.fire(inquiry, "ask", chain=False)
    holding = [name for name in RESOLVE_ORDER if _RESOLVE[name].guard.test(inquiry, {})]  # type: ignore[union-attr]
    assert holding, "some resolution applies to every question"
    INQUIRY_MACHINE.fire(inquiry, "resolve", chain=False)
    step = inquiry.buffer.take()
    resolved = [fired.row for fired in step.fired if fired.row.trigger == "resolve"]
    assert resolved == [_RESOLVE[holding[0]]]


@pytest.mark.parametrize(
    ("kind", "mode", "exclusive"),
    list(itertools.product(("boolean", "text", "secret"), tuple(DetachedMode), (False, True))),
)
def test_the_detached_policy_takes_the_first_of_its_rows_that_holds(
    kind: str, mode: DetachedMode, exclusive: bool
) -> None:
    """Nobody to ask: park first, then a secret refused, exclusive before auto, each its rows."""
    question = attrs.evolve(QUESTIONS[kind], exclusive=exclusive)
    inquiry = _inquiry(question, InquiryFacts(terminal=False, detached=mode))
    INQUIRY_MACHINE.fire(inquiry, "ask", chain=False)
    INQUIRY_MACHINE.fire(inquiry, "resolve", chain=False)
    assert inquiry.state is InquiryState.DETACHED
    holding = [name for name in POLICY_ORDER if _POLICY[name].guard.test(inquiry, {})]  # type: ignore[union-attr]
    inquiry.buffer.take()
    INQUIRY_MACHINE.fire(inquiry, "apply_policy", chain=False)
    fired = [each.row for each in inquiry.buffer.take().fired]
    assert fired == [_POLICY[holding[0]]]


def test_a_question_asked_too_often_is_closed_even_when_remembered() -> None:
    """Exhaustion comes before the cache: a remembered question asked again still stops."""
    facts = InquiryFacts(
        terminal=True, cached_answer=CachedAnswer(value=True), exhausted="asked too often"
    )
    inquiry, records = _ask(QUESTIONS["boolean"], facts)
    assert inquiry.state is InquiryState.CANCELLED
    assert records[1:] == [
        Cancelled(id="call_1.apply.1", reason=CancellationReason.ATTEMPTS_EXHAUSTED)
    ]
    assert inquiry.delivered is None


def test_a_remembered_answer_comes_before_a_static_one() -> None:
    """The cache comes before configuration: the person's remembered answer is the one given."""
    facts = InquiryFacts(
        terminal=True,
        cached_answer=CachedAnswer(value=False),
        static_answer=StaticAnswer(value=True),
    )
    inquiry, records = _ask(QUESTIONS["boolean"], facts)
    assert records[1:] == [Answered(id="call_1.apply.1", answer=False)]
    assert inquiry.delivered is False


def test_a_static_secret_is_applied_before_the_routing_guard_refuses_the_model() -> None:
    """A secret targeted at the assistant with a static answer is answered from configuration."""
    facts = InquiryFacts(
        terminal=False, target=Target.ASSISTANT, static_answer=StaticAnswer(value="s3cret")
    )
    inquiry, records = _ask(QUESTIONS["secret"], facts)
    assert records[1:] == [Redacted(id="call_1.passphrase.1")]
    assert isinstance(inquiry.delivered, SecretValue)
    assert inquiry.delivered.reveal() == "s3cret"


# ------------------------------------------------------ final and transient


def test_the_tables_declare_their_final_states() -> None:
    """Each machine lists its final states; they are exactly the states no row leaves."""
    for machine in (INQUIRY_MACHINE, TOOL_CALL_MACHINE):
        left = {row.source for row in machine.rows}
        assert machine.final == frozenset(machine.states) - left
    assert INQUIRY_MACHINE.final == {
        InquiryState.ANSWERED,
        InquiryState.REDACTED,
        InquiryState.CANCELLED,
        InquiryState.PARKED,
    }
    assert TOOL_CALL_MACHINE.final == {
        ToolCallState.SUCCEEDED,
        ToolCallState.FAILED,
        ToolCallState.SKIPPED,
        ToolCallState.WITHHELD,
        ToolCallState.CANCELLED,
        ToolCallState.PARKED,
    }


def _machine(rows: tuple[Row[InquiryState, Inquiry], ...], final: Any) -> None:
    TableMachine(
        name="broken",
        states=InquiryState,
        start=InquiryState.NEW,
        rows=rows,
        final=final,
        rules="",
    )


def test_a_table_whose_final_states_are_wrong_is_refused() -> None:
    """A final state with a row out of it, or a non-final state with no rows, is refused."""
    with pytest.raises(MachineError, match=r"final states with rows out of them: \['requested'\]"):
        _machine(INQUIRY_ROWS, (*INQUIRY_MACHINE.final, InquiryState.REQUESTED))
    with pytest.raises(MachineError, match=r"no rows that are not final: \['redacted'\]"):
        _machine(INQUIRY_ROWS, INQUIRY_MACHINE.final - {InquiryState.REDACTED})


def test_the_transient_states_are_those_only_automatic_rows_leave() -> None:
    """Nothing waits in the states only automatic rows leave (both machines' detached states)."""
    assert INQUIRY_MACHINE.transient == {
        InquiryState.REQUESTED,
        InquiryState.CACHED,
        InquiryState.STATIC,
        InquiryState.DETACHED,
    }
    # awaiting_input is left automatically when its question closes, and waits meanwhile.
    assert TOOL_CALL_MACHINE.transient == {
        ToolCallState.PERMISSION_DETACHED,
        ToolCallState.DELIVERY_DETACHED,
        ToolCallState.DELIVERED,
        ToolCallState.DISCARDING,
    }


def test_a_transient_state_no_guard_leaves_raises_instead_of_waiting_for_ever() -> None:
    """With a routing row missing, a question no row can route raises; it is never stuck."""
    to_assistant = _RESOLVE["to_assistant"]
    rows = tuple(row for row in INQUIRY_ROWS if row is not to_assistant)
    machine = TableMachine(
        name="inquiry",
        states=InquiryState,
        start=InquiryState.NEW,
        rows=rows,
        final=INQUIRY_MACHINE.final,
        rules="",
    )
    inquiry = _inquiry(QUESTIONS["boolean"], InquiryFacts(terminal=True, target=Target.ASSISTANT))
    with pytest.raises(MachineError, match="stuck in transient state 'requested'"):
        machine.fire(inquiry, "ask")


# -------------------------------------------------------- failed steps


def _failing_wording(*_: object) -> str:
    raise RuntimeError("the wording failed")


def test_an_inquiry_step_that_raises_midway_buffers_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The request recorded before the failure is not left in the buffer for the next step."""
    monkeypatch.setattr("machines._inquiry_machine.invalid_static_answer", _failing_wording)
    inquiry = _inquiry(
        QUESTIONS["boolean"], InquiryFacts(terminal=True, static_answer=StaticAnswer(value="no"))
    )
    with pytest.raises(RuntimeError, match="the wording failed"):
        inquiry.fire("ask")
    assert len(inquiry.buffer) == 0
    assert inquiry.buffer.take().records == ()


def test_a_tool_call_step_that_raises_midway_leaves_the_next_step_clean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A question that fails while it resolves leaves the call running and its next step whole."""
    call, _ = ToolCall.begin(
        turn=TurnState(),
        request=ToolCallRequest(id="call_1", name="deploy", arguments={}),
        run_mode=RunMode.UNATTENDED,
        terminal=True,
        remembered_permission=None,
    )
    monkeypatch.setattr("machines._inquiry_machine.invalid_static_answer", _failing_wording)
    with pytest.raises(RuntimeError, match="the wording failed"):
        call.needs_input(
            QUESTIONS["boolean"],
            source=InquirySource.tool("deploy"),
            accumulated_answers={},
            facts=InquiryFacts(terminal=True, static_answer=StaticAnswer(value="no")),
        )
    assert call.state is ToolCallState.RUNNING
    assert len(call.buffer) == 0
    step = call.completed("done", is_error=False)
    assert [type(record) for record in step.records] == [ToolCallResponse]
    assert not any(isinstance(record, InquiryRequest) for record in step.records)
