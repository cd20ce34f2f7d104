"""Drive the machines through their tables, for the transition-table tests.

For each machine this module knows how to build a fresh model under every
combination of facts that matters to its guards (``variants``), and which
payloads each trigger can carry in a given situation (``payloads``). With
those, :func:`realize` searches for a run that takes a given path through the
table: that is how every simple path generated from the table is run, without
a hand-written script per path.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from machines import (
    INQUIRY_MACHINE,
    TOOL_CALL_MACHINE,
    CachedAnswer,
    CancellationReason,
    Cancelled,
    DetachedMode,
    DetachedPolicy,
    Fired,
    Inquiry,
    InquiryFacts,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    InquiryState,
    OnTimeout,
    Question,
    RecordedCall,
    RecordedQuestion,
    ResultMode,
    Row,
    RunMode,
    SecretValue,
    StaticAnswer,
    TableMachine,
    Target,
    ToolCall,
    ToolCallRequest,
    TurnState,
)

QUESTIONS: dict[str, Question] = {
    "boolean": Question.boolean("apply", "Apply the patch?", default=True),
    "select": Question.select("branch", "Which branch?", ["main", "dev"]),
    "text": Question.text_input("message", "Commit message?"),
    "secret": Question.secret("passphrase", "SSH passphrase?"),
}
VALID: dict[str, Any] = {
    "boolean": True,
    "select": "dev",
    "text": "fix: things",
    "secret": "correct horse battery staple",
}
INVALID: dict[str, Any] = {"boolean": "yes", "select": "feature", "text": 42, "secret": 1234}


@attrs.frozen(kw_only=True)
class InquiryCase:
    """The facts an inquiry can start from."""

    answer_type: str = "boolean"
    cached: bool = False
    static: str = "none"  # none | valid | invalid
    target: Target = Target.USER
    terminal: bool = True
    exhausted: bool = False  # the tool call may not ask it again
    detached: DetachedMode = DetachedMode.DENY  # the tool's policy for questions
    exclusive: bool = False
    on_timeout: OnTimeout = OnTimeout.CLOSE

    @property
    def question(self) -> Question:
        """The question of this case's answer type (exclusive, if the case says so)."""
        question = QUESTIONS[self.answer_type]
        return attrs.evolve(question, exclusive=True) if self.exclusive else question

    def facts(self) -> InquiryFacts:
        """The facts the driver would hand in."""
        static = {
            "none": None,
            "valid": StaticAnswer(VALID[self.answer_type]),
            "invalid": StaticAnswer(INVALID[self.answer_type]),
        }[self.static]
        cached = CachedAnswer(VALID[self.answer_type]) if self.cached else None
        return InquiryFacts(
            terminal=self.terminal,
            target=self.target,
            static_answer=static,
            cached_answer=cached,
            exhausted="asked too often" if self.exhausted else None,
            detached=self.detached,
            on_timeout=self.on_timeout,
        )

    def make(self, turn: TurnState | None = None) -> Inquiry:
        """A new inquiry (state ``new``) for this case, in a turn holding ``RECORDED_IDS``."""
        return Inquiry(
            turn=turn or TurnState(recorded_ids=RECORDED_IDS),
            tool_call_id="call_1",
            tool_name="fs_modify_file",
            question=self.question,
            source=InquirySource.tool("fs_modify_file"),
            facts=self.facts(),
        )


def inquiry_cases() -> list[InquiryCase]:
    """Every combination of facts the inquiry guards distinguish."""
    return [
        InquiryCase(answer_type=a, cached=c, static=s, target=t, terminal=term)
        for a, c, s, t, term in itertools.product(
            ("boolean", "secret"),
            (False, True),
            ("none", "valid", "invalid"),
            tuple(Target),
            (False, True),
        )
    ] + [
        InquiryCase(exhausted=True),
        InquiryCase(answer_type="secret", exhausted=True),
        # Exclusive (a person's only) and configured for the assistant (RFD 083).
        InquiryCase(target=Target.ASSISTANT, exclusive=True),
        # Each detached mode, for a question with a default and one without: nobody
        # to ask, or an answers file on screen without a reply.
        *(
            InquiryCase(answer_type=a, terminal=terminal, detached=mode, exclusive=exclusive)
            for a, terminal, mode, exclusive in itertools.product(
                ("boolean", "text"), (False, True), tuple(DetachedMode), (False, True)
            )
        ),
        # A secret parked (nobody to ask, or nobody answers it on screen), or refused.
        *(
            InquiryCase(answer_type="secret", terminal=terminal, detached=mode)
            for terminal, mode in itertools.product(
                (False, True), (DetachedMode.PARK, DetachedMode.DENY)
            )
        ),
        # On screen past its timeout, handed to each mode of the detached policy.
        *(
            InquiryCase(
                answer_type=a, detached=mode, exclusive=exclusive, on_timeout=OnTimeout.DETACHED
            )
            for a, mode, exclusive in itertools.product(
                ("boolean", "text", "secret"), tuple(DetachedMode), (False, True)
            )
        ),
    ]


def inquiry_payloads(model: Inquiry, trigger: str) -> list[dict[str, Any]]:
    """The payloads ``trigger`` can carry for ``model``."""
    kind = model.question.answer_type.kind.value
    if trigger == "terminal_ready":
        return [{"cached": None}, {"cached": CachedAnswer(VALID[kind])}]
    if trigger == "answer":
        answers = [
            model.checked_answer(VALID[kind], remember=remember, from_file=from_file)
            for remember, from_file in itertools.product((False, True), (False, True))
        ]
        if model.state is InquiryState.SHOWN:
            # The answers file's reply that does not fit: the machine's to refuse.
            answers.append(model.checked_answer(INVALID[kind], remember=False, from_file=True))
        return answers
    if trigger == "fail":
        return [{"error": "the provider returned 500"}]
    if trigger == "answer_later":
        answer = model.checked_answer(VALID[kind], remember=False)
        return [{"inquiry_id": RECORDED_APPLY.request.id, **answer}]
    return _INQUIRY_PAYLOADS.get(trigger, [{}])


#: A prompt's timeout, as the tool is told it.
TIMEOUT = "5 s"
#: Payloads that do not depend on the model.
_INQUIRY_PAYLOADS: dict[str, list[dict[str, Any]]] = {
    "adopt": [{"inquiry_id": "call_1.apply.1", "parked": parked} for parked in (False, True)],
    "supersede": [{"inquiry_id": "call_1.apply.1"}],
    "discard": [{"inquiry_id": "call_1.apply.1"}],
    "time_out": [{"after": TIMEOUT}],
}


#: The request a resumed call's ``apply`` question was recorded under before the restart.
RECORDED_APPLY = RecordedQuestion(
    request=InquiryRequest(
        id="call_1.apply.1",
        source=InquirySource.tool("fs_modify_file"),
        question=InquiryQuestion.from_question(QUESTIONS["boolean"]),
    ),
    question_id="apply",
)
#: Every inquiry id a resumed turn already holds (a tool call's turn is seeded with them).
RECORDED_IDS = frozenset({"call_1.apply.1", "call_1.branch.1"})

#: What the stream may hold of a call left open when its turn stopped, by name.
RECORDED: dict[str, RecordedCall] = {
    "ran": RecordedCall(answers={"branch": "dev"}, asked={"branch": 1}),
    "waiting": RecordedCall(
        answers={"branch": "dev"}, asked={"branch": 1, "apply": 1}, waiting=RECORDED_APPLY
    ),
    "declined_by_user": RecordedCall(
        asked={"apply": 1},
        declined=(RECORDED_APPLY, Cancelled(id="call_1.apply.1", reason=CancellationReason.USER)),
    ),
    "declined": RecordedCall(
        asked={"apply": 1},
        declined=(
            RECORDED_APPLY,
            Cancelled(id="call_1.apply.1", reason=CancellationReason.NO_PROMPT_BACKEND),
        ),
    ),
    "parked": RecordedCall(
        answers={"branch": "dev"},
        asked={"branch": 1, "apply": 1},
        waiting=attrs.evolve(RECORDED_APPLY, parked=True),
    ),
}


@attrs.frozen(kw_only=True)
class ToolCallCase:
    """The facts a tool call can start from."""

    run_mode: RunMode = RunMode.ASK
    terminal: bool = True
    max_attempts: int = 8
    detached: DetachedPolicy = attrs.field(factory=DetachedPolicy)
    result_mode: ResultMode = ResultMode.UNATTENDED
    on_timeout: OnTimeout = OnTimeout.CLOSE
    permission_parked: bool = False

    def make(self, turn: TurnState | None = None) -> ToolCall:
        """A new tool call (state ``new``) for this case, in a turn holding ``RECORDED_IDS``.

        The turn holds them as a continued turn would: ids allocated anew skip
        them, whether the call is begun or resumed.
        """
        return ToolCall(
            turn=turn or TurnState(recorded_ids=RECORDED_IDS),
            request=ToolCallRequest(
                id="call_1", name="fs_modify_file", arguments={"path": "README.md"}
            ),
            run_mode=self.run_mode,
            terminal=self.terminal,
            max_attempts=self.max_attempts,
            detached=self.detached,
            result_mode=self.result_mode,
            on_timeout=self.on_timeout,
            permission_parked=self.permission_parked,
        )


def tool_call_cases() -> list[ToolCallCase]:
    """Every combination of facts the tool-call guards distinguish."""
    return (
        [
            ToolCallCase(run_mode=mode, terminal=terminal, max_attempts=attempts)
            for mode, terminal, attempts in itertools.product(
                tuple(RunMode), (False, True), (1, 8)
            )
        ]
        + [
            # The detached policy's modes for permission (nobody to ask, or nobody answers
            # the prompt) and for a result's delivery (result mode ask): a call let run by
            # the policy meets each delivery mode, and one refused ends there.
            ToolCallCase(run_mode=mode, terminal=terminal, detached=policy, result_mode=result)
            for mode, terminal, policy, result in itertools.product(
                tuple(RunMode), (False, True), _POLICIES, tuple(ResultMode)
            )
        ]
        + [
            # A permission parked earlier, asked again (a prompt there, or nobody still); and
            # a prompt past its timeout handed to each policy (result mode ask for a delivery).
            ToolCallCase(
                terminal=terminal, detached=policy, result_mode=result, permission_parked=True
            )
            for terminal, policy, result in itertools.product(
                (True, False), _POLICIES, tuple(ResultMode)
            )
        ]
        + [
            ToolCallCase(
                run_mode=mode, detached=policy, result_mode=result, on_timeout=OnTimeout.DETACHED
            )
            for mode, policy, result in itertools.product(
                (RunMode.ASK, RunMode.UNATTENDED), _POLICIES, tuple(ResultMode)
            )
        ]
        + [
            ToolCallCase(
                detached=policy,
                result_mode=ResultMode.ASK,
                on_timeout=OnTimeout.DETACHED,
                permission_parked=True,
            )
            for policy in _POLICIES
        ]
    )


_AUTO, _DEFAULTS, _DENY = DetachedMode.AUTO, DetachedMode.DEFAULTS, DetachedMode.DENY
#: The detached policies the tool-call cases take: (run, deliver).
_POLICIES = tuple(
    DetachedPolicy(run=run, deliver=deliver)
    for run, deliver in (
        (_AUTO, _AUTO),
        (_AUTO, _DEFAULTS),
        (_AUTO, _DENY),
        (_DEFAULTS, _DENY),
        (_DENY, _DENY),
        (DetachedMode.PARK, _AUTO),
    )
)


#: What a tool may ask, and with which facts; together they reach every way an
#: inquiry can end straight away or wait.
NEEDS_INPUT = (
    ("boolean", InquiryCase(terminal=True)),
    ("boolean", InquiryCase(static="valid")),
    ("boolean", InquiryCase(static="invalid")),
    ("boolean", InquiryCase(cached=True)),
    ("boolean", InquiryCase(terminal=False)),
    ("boolean", InquiryCase(terminal=False, detached=DetachedMode.AUTO)),
    ("secret", InquiryCase(answer_type="secret", static="valid")),
    ("secret", InquiryCase(answer_type="secret", terminal=False)),
    ("boolean", InquiryCase(terminal=False, detached=DetachedMode.PARK)),
)


_REMEMBERED = (None, "y", "n")

#: Payloads that do not depend on the model.
_TOOL_CALL_PAYLOADS: dict[str, list[dict[str, Any]]] = {
    "begin": [{"remembered": r, "available": True} for r in _REMEMBERED]
    + [{"remembered": None, "available": False}],
    "terminal_ready": [{"remembered": r, "cached": None} for r in _REMEMBERED]
    + [{"remembered": None, "cached": CachedAnswer(True)}],
    "permit": [
        {"remember": remember, "arguments": arguments, "from_file": from_file}
        for remember, arguments, from_file in itertools.product(
            (False, True), (None, {"path": "x"}), (False, True)
        )
    ],
    "deny": [
        {"remember": False, "reason": None, "from_file": False},
        {"remember": True, "reason": "not now", "from_file": True},
    ],
    "deliver": [{"from_file": False}, {"from_file": True}],
    "withhold": [{"from_file": False}, {"from_file": True}],
    "completed": [{"content": "done", "is_error": False}, {"content": "boom", "is_error": True}],
    "fail_input": [{"error": "the provider returned 500"}],
    "resume": [{"recorded": recorded, "available": True} for recorded in RECORDED.values()]
    + [{"recorded": RECORDED["ran"], "available": False}],
    "time_out": [{"after": TIMEOUT}],
    "time_out_input": [{"after": TIMEOUT}],
    "discard": [{"recorded": recorded} for recorded in RECORDED.values()],
}


def tool_call_payloads(model: ToolCall, trigger: str) -> list[dict[str, Any]]:
    """The payloads ``trigger`` can carry for ``model``."""
    if trigger == "needs_input":
        return [
            {
                "question": case.question,
                "source": InquirySource.tool("fs_modify_file"),
                "accumulated": dict(model.answers),
                "facts": case.facts(),
            }
            for _, case in NEEDS_INPUT
        ]
    if trigger == "answer":
        inquiry = model.inquiry
        if inquiry is None:
            return []
        kind = inquiry.question.answer_type.kind.value
        answers = [
            inquiry.checked_answer(VALID[kind], remember=False, from_file=from_file)
            for from_file in (False, True)
        ]
        if inquiry.state is InquiryState.SHOWN:
            answers.append(inquiry.checked_answer(INVALID[kind], remember=False, from_file=True))
        return answers
    return _TOOL_CALL_PAYLOADS.get(trigger, [{}])


@attrs.frozen
class MachineDriver:
    """What the generic tests need to drive one machine."""

    machine: TableMachine[Any, Any]
    cases: Callable[[], Sequence[Any]]
    payloads: Callable[[Any, str], list[dict[str, Any]]]


DRIVERS = {
    "inquiry": MachineDriver(INQUIRY_MACHINE, inquiry_cases, inquiry_payloads),
    "tool_call": MachineDriver(TOOL_CALL_MACHINE, tool_call_cases, tool_call_payloads),
}


@attrs.frozen
class Run:
    """A run that realized a path: the case it started from and what was fired."""

    case: Any
    triggers: tuple[tuple[str, Mapping[str, Any]], ...]
    fired: tuple[Fired, ...]


def _replay(
    driver: MachineDriver, case: Any, triggers: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[Any, list[Fired]]:
    model = case.make()
    fired: list[Fired] = []
    for trigger, payload in triggers:
        driver.machine.fire(model, trigger, **payload)
        fired.extend(model.buffer.take().fired)
    return model, fired


def _own_rows(driver: MachineDriver, fired: Sequence[Fired]) -> list[str]:
    """The non-internal rows of this machine that fired, in order."""
    return [f.row.id for f in fired if f.machine == driver.machine.name and f.row.dest is not None]


def realize(driver: MachineDriver, path: Sequence[Row[Any, Any]], spare: int = 2) -> Run | None:
    """Find a case and a trigger sequence whose run takes exactly ``path``.

    Internal rows (which a simple path cannot contain) may fire up to
    ``spare`` times on the way, as a real run would (a forwarded answer, a
    prompt shown).
    """
    wanted = [row.id for row in path]
    budget = sum(1 for row in path if not row.auto) + spare
    for case in driver.cases():
        for run in _search(driver, case, wanted, budget, []):
            return run
    return None


def _search(
    driver: MachineDriver,
    case: Any,
    wanted: list[str],
    budget: int,
    prefix: list[tuple[str, Mapping[str, Any]]],
) -> Iterator[Run]:
    try:
        model, fired = _replay(driver, case, prefix)
    except Exception:  # noqa: BLE001 - an illegal step just ends this branch
        return
    taken = _own_rows(driver, fired)
    if taken == wanted:
        yield Run(case, tuple(prefix), tuple(fired))
    if taken != wanted[: len(taken)] or taken == wanted or len(prefix) >= budget:
        return
    for trigger in driver.machine.triggers:
        rows = driver.machine.rows_for(model.state, trigger)
        if rows and not rows[0].auto:
            for payload in driver.payloads(model, trigger):
                yield from _search(driver, case, wanted, budget, [*prefix, (trigger, payload)])


def secret_values() -> list[str]:
    """Every secret answer these drivers ever give (to look for leaks)."""
    return [VALID["secret"], str(INVALID["secret"])]


__all__ = [
    "DRIVERS",
    "NEEDS_INPUT",
    "QUESTIONS",
    "RECORDED",
    "RECORDED_APPLY",
    "RECORDED_IDS",
    "TIMEOUT",
    "VALID",
    "InquiryCase",
    "MachineDriver",
    "Run",
    "SecretValue",
    "ToolCallCase",
    "realize",
    "secret_values",
]
