"""Model-based test of the coordinator: DESIGN.md rule 1 and the turn caches, under pressure.

Hypothesis drives :class:`reliability_model.CoordinatorModel` through random
turns of parallel tool calls (see that module for the world). After every
step: each inquiry request in the turn has exactly one response; ids are
unique within the turn; every tool call has exactly one response; answers fit
their questions; no cache holds a cancelled, redacted or secret value.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import TYPE_CHECKING

from conftest import examples, steps
from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
)
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant
from reliability_model import SECRET_QUESTIONS, TOOLS, CoordinatorModel

from coordinator import ScriptedPrompter, ToolCoordinator, load_conversation, pair_events
from coordinator.driver._executors import Ask, BuiltinOutcome, BuiltinTool, Success
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatResponse,
    InquiryRequest,
    JsonValue,
    Question,
    Redacted,
    SecretValue,
    ShowQuestion,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from coordinator.driver._prompting import QuestionAnswer


class PairingModel(CoordinatorModel):
    """The coordinator model, checking pairing, ids, answers and caches."""

    @invariant()
    def every_request_has_exactly_one_response(self) -> None:
        """Inquiries and tool calls are paired within their turn; inquiry ids never repeat."""
        assert_invariants(self.conversation, self.world.secrets)
        pairing = pair_events(self.conversation.stream)
        assert pairing.tool_calls.orphaned == ()
        assert pairing.complete

    @invariant()
    def responses_fit_their_requests(self) -> None:
        """Answered fits the question and is never a secret; Redacted is only for secrets."""
        for pair in pair_events(self.conversation.stream).inquiries.pairs:
            request = pair.request.entry.payload
            response = pair.response.entry.payload
            assert isinstance(request, InquiryRequest)
            answer_type = request.question.answer_type
            if isinstance(response, Answered):
                assert not answer_type.is_secret
                assert answer_type.accepts(response.answer), (request, response)
            elif isinstance(response, Redacted):
                assert answer_type.is_secret
            else:
                assert isinstance(response, Cancelled)
                assert isinstance(response.reason, CancellationReason)  # never Unknown

    @invariant()
    def every_question_is_recorded_as_its_tools_own(self) -> None:
        """Provenance is the executor's: configuration (targets, static answers) never moves it."""
        for request in payloads(self.conversation, InquiryRequest):
            assert request.source.kind is SourceKind.TOOL
            assert request.source.name in TOOLS

    @invariant()
    def caches_hold_only_remembered_plain_answers(self) -> None:
        """Each cached value is one the person asked to remember; no secret, no cancellation."""
        if self.coordinator is None:
            return
        turn = self.coordinator.turn_state
        for key, value in turn.remembered_tool_answers.items():
            tool, question_id = key.split(".", 1)
            assert question_id not in SECRET_QUESTIONS
            assert not isinstance(value, SecretValue)
            assert value not in self.world.secrets
            assert value in self.world.remembered.get((tool, question_id), [])
        for key, decision in turn.remembered_permission_decisions.items():
            tool = key.removesuffix(".__permission__")
            assert decision in self.world.remembered_permissions.get(tool, [])

    def check_batch(
        self, requests: list[ToolCallRequest], responses: list[ToolCallResponse] | None
    ) -> None:
        """A batch answers every call once, in order, and what is on disk is what is in memory."""
        if responses is None:
            assert self.world.interrupted  # only an interrupt cancels the task
        else:
            assert [r.id for r in responses] == [r.id for r in requests]
        stream = self.conversation.stream
        turn = stream.current_turn()
        assert turn is not None
        answered = [e.payload for e in turn.events if isinstance(e.payload, ToolCallResponse)]
        asked = [e.payload for e in turn.events if isinstance(e.payload, ToolCallRequest)]
        assert len(answered) == len(asked)
        if responses is not None:
            # Returned in the order asked; recorded in the order they finished.
            assert sorted(answered[-len(responses) :], key=repr) == sorted(responses, key=repr)
        assert list(load_conversation(self.directory).stream) == list(stream)


TestCoordinatorModel = PairingModel.TestCase
TestCoordinatorModel.settings = settings(
    max_examples=examples(150),
    stateful_step_count=steps(10),
    suppress_health_check=[HealthCheck.too_slow],
)


# ---------------------------------------------------- what the model found, pinned down


def test_a_remembered_choice_that_is_not_an_option_now_is_asked_again(tmp_path: Path) -> None:
    """A Y-remembered select answer is reused only while it is still one of the options."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer("main", remember=True).answer("release")
    tools = {"fs": executor(OptionsTool())}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED, prompter=prompter)
    calls: list[tuple[str, str, list[JsonValue]]] = [
        ("call_1", "fs", ["main", "dev"]),
        ("call_2", "fs", ["dev", "release"]),
    ]
    conversation.stream.append(ChatResponse.message("On it."))
    requests = [ToolCallRequest(id=i, name=n, arguments={"options": o}) for i, n, o in calls]
    for request in requests:
        conversation.stream.append(request)
    run(coordinator.run(requests))
    assert payloads(conversation, Answered) == [
        Answered(id="call_1.branch.1", answer="main"),
        Answered(id="call_2.branch.1", answer="release"),
    ]
    assert len(prompter.shown) == 2
    assert_invariants(conversation)


class OptionsTool(BuiltinTool):
    """Asks which branch, among the options its arguments give."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask once, then report the answer."""
        if "branch" not in answers:
            options = arguments["options"]
            assert isinstance(options, list)
            return Ask(Question.select("branch", "Which branch?", [str(o) for o in options]))
        return Success(f"branch={answers['branch']}")


def test_a_run_stopped_before_a_tool_starts_leaves_no_coroutine_unawaited(tmp_path: Path) -> None:
    """A stop arriving right after an answer cancels the re-run before it starts, cleanly."""
    conversation = conversation_on_disk(tmp_path)
    coordinator: ToolCoordinator | None = None

    class AnswerThenStop(ScriptedPrompter):
        async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
            assert coordinator is not None
            # The stop lands in the queue just behind the answer.
            asyncio.get_running_loop().call_soon(coordinator.cancel)
            return await super().ask_question(prompt)

    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([Question.boolean("apply", "Apply?")]))},
        config=UNATTENDED,
        prompter=AnswerThenStop().answer(value=True),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        responses = run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert [r.content for r in responses] == ["Tool call was interrupted."]
    assert_invariants(conversation)
