"""Park (issue 41, part 2): a prompt nobody can answer kept, recorded, for an answer given later.

Through the embedding API (:class:`~coordinator.ToolCoordinator`): a parked
question or permission ends its call without a response while the rest of
the batch finishes; the writer marks the request parked; a later
coordinator (as another process would: the conversation loaded again)
continues the turn, the parked prompt answered at a terminal, by an answers
file, through the inquiry machine's ``answer_later`` row (the inbox's
:func:`~coordinator.answer_waiting`) or by an embedder's answers, recorded as
``parked_then_answered`` under the request's own id, and no finished tool
runs again. A parked secret waits for a person. Process-level runs (two
``inquiry run`` processes, a pty) are in ``tests/test_park_runs.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from coordinator_harness import (
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
    stored_text,
)
from process_helpers import CRASH_PROGRAMS, PATIENCE, reaped

from coordinator import (
    Conversation,
    EventEntry,
    ToolCoordinator,
    answer_waiting,
    find_incomplete_turn,
    load_conversation,
    save_conversation,
    waiting_prompts,
)
from coordinator._recorded_routes import (
    RecordedPark,
    RecordedRoute,
    recorded_park,
    recorded_route,
    with_park,
)
from coordinator.driver import (
    NotWaitingError,
    ParkedPrompt,
    ScriptedPrompter,
    SecretNotTakenError,
    UnfitAnswerError,
    parse_tools_config,
)
from coordinator.store import ConversationLockedError, load_locked
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    PromptKind,
    Question,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from coordinator.driver import Prompter, ToolsConfig

APPLY = Question.boolean("apply", "Overwrite config.ini?", default=False)
BRANCH = Question.select("branch", "Which branch?", ["main", "dev"])
TOKEN = Question.secret("token", "The deploy token?")
SECRET = "tok-4f9e2a"


def parking(**fs: Any) -> ToolsConfig:
    """``fs`` parks what nobody can answer (as configured, over these settings); ``ls`` runs."""
    tool = {"run": "unattended", "detached": "park", **fs}
    return parse_tools_config({"tools": {"fs": tool, "ls": {"run": "unattended"}}})


@attrs.define
class Parked:
    """A batch of ``fs`` (which asks) and ``ls`` (which does not) that parked ``fs``'s prompt."""

    path: Path
    responses: list[ToolCallResponse]
    parked: tuple[ParkedPrompt, ...]
    fs: AskingTool
    ls: AskingTool


def park_first(path: Path, question: Question | None = APPLY, **fs: Any) -> Parked:
    """Run ``fs`` (asking ``question``) and ``ls`` in one batch, nobody to ask; save, close."""
    conversation = conversation_on_disk(path)
    fs_tool, ls_tool = AskingTool([question] if question else []), AskingTool([])
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(fs_tool), "ls": executor(ls_tool)},
        config=parking(**fs),
    )
    responses = run(
        coordinator.run(assistant_calls(conversation, ("call_1", "fs"), ("call_2", "ls")))
    )
    assert_invariants(conversation, parked=coordinator.parked)
    conversation.close()
    return Parked(path, responses, coordinator.parked, fs_tool, ls_tool)


@attrs.define
class Later:
    """The parked turn continued by a new coordinator over the conversation loaded again."""

    conversation: Conversation
    responses: list[ToolCallResponse]
    parked: tuple[ParkedPrompt, ...]
    fs: AskingTool
    ls: AskingTool
    before: int

    @property
    def appended(self) -> list[object]:
        """The payloads the continuation appended, in order."""
        return [entry.payload for entry in self.conversation.stream[self.before :]]  # type: ignore[union-attr]

    def route(self, inquiry_id: str) -> RecordedRoute | None:
        """The route the response to ``inquiry_id`` records, read back from disk."""
        assert self.conversation.path is not None
        saved = load_conversation(self.conversation.path)
        (entry,) = [
            e
            for e in saved.stream
            if isinstance(e, EventEntry)
            and isinstance(e.payload, Answered | Cancelled | Redacted)
            and e.payload.id == inquiry_id
        ]
        return recorded_route(entry.metadata)


def continue_later(
    path: Path,
    question: Question | None = APPLY,
    *,
    prompter: Prompter | None = None,
    config: ToolsConfig | None = None,
    answers: dict[str, Any] | None = None,
) -> Later:
    """Load the conversation as another process would, and continue its turn under the lock."""
    conversation = load_locked(path)
    before = len(conversation.stream)
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is not None
    fs_tool, ls_tool = AskingTool([question] if question else []), AskingTool([])
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(fs_tool), "ls": executor(ls_tool)},
        config=config or parking(),
        prompter=prompter,
    )
    try:
        responses = run(coordinator.continue_turn(incomplete, answers=answers))
    finally:
        conversation.close()
    return Later(conversation, responses, coordinator.parked, fs_tool, ls_tool, before)


def _request_entry(path: Path, kind: type, call: str = "call_1") -> EventEntry:
    """The request of ``kind`` (a question of ``call``, or ``call`` itself) as saved."""
    saved = load_conversation(path)
    (entry,) = [
        e
        for e in saved.stream
        if isinstance(e, EventEntry)
        and isinstance(e.payload, kind)
        and getattr(e.payload, "id", "").startswith(call)
    ]
    return entry


# ------------------------------------------------------------ parking a batch


def test_a_parked_question_stops_its_call_and_the_rest_of_the_batch_finishes(
    tmp_path: Path,
) -> None:
    """The question is recorded, marked parked, unanswered; its call has no response; ls ends."""
    parked = park_first(tmp_path / "c")
    assert [response.id for response in parked.responses] == ["call_2"]
    assert parked.parked == (
        ParkedPrompt(
            tool_call_id="call_1",
            tool_name="fs",
            kind=PromptKind.TOOL,
            inquiry_id="call_1.apply.1",
            question=APPLY,
        ),
    )
    assert parked.fs.runs == [{}]  # it asked, and stopped: nothing is left running
    entry = _request_entry(parked.path, InquiryRequest)
    park = recorded_park(entry.metadata)
    assert park is not None
    assert park.prompt == "tool"
    incomplete = find_incomplete_turn(load_conversation(parked.path).stream)
    assert incomplete is not None
    assert incomplete.blocked
    assert incomplete.status == "parked (fs)"
    assert [call.tool_call.id for call in incomplete.parked] == ["call_1"]


def test_a_parked_question_is_answered_later_and_no_finished_tool_runs_again(
    tmp_path: Path,
) -> None:
    """Continued at a terminal: answered under its id, parked then answered by the person."""
    parked = park_first(tmp_path / "c")
    later = continue_later(parked.path, prompter=ScriptedPrompter().answer(value=True))
    assert later.ls.runs == []  # finished before: never run again
    # Run again, it asks exactly the parked question, which is taken up under its id.
    assert later.fs.runs == [{}, {"apply": True}]
    assert later.appended == [
        Answered(id="call_1.apply.1", answer=True),
        ToolCallResponse(id="call_1", content="answers: apply=True", is_error=False),
    ]
    assert later.route("call_1.apply.1") == RecordedRoute(
        route="parked_then_answered", by="person"
    )
    assert later.parked == ()
    assert_invariants(later.conversation)
    incomplete = find_incomplete_turn(later.conversation.stream)
    assert incomplete is not None
    assert not incomplete.blocked  # it waits for the model's follow-up, as after any batch


def test_an_answers_file_answers_a_parked_question_and_is_named(tmp_path: Path) -> None:
    """The answers file standing in for the person answers it: parked then answered, by it."""
    parked = park_first(tmp_path / "c", BRANCH)
    prompter = ScriptedPrompter(from_file=True).answer(value="dev")
    later = continue_later(parked.path, BRANCH, prompter=prompter)
    assert later.fs.runs == [{}, {"branch": "dev"}]
    assert later.route("call_1.branch.1") == RecordedRoute(
        route="parked_then_answered", by="answers_file"
    )


def test_the_embedding_api_continues_with_the_parked_questions_answers(tmp_path: Path) -> None:
    """continue_turn(answers=...): held to the question, recorded, then the tool runs with it."""
    parked = park_first(tmp_path / "c", BRANCH)
    later = continue_later(parked.path, BRANCH, answers={"call_1.branch.1": "main"})
    assert later.fs.runs == [{"branch": "main"}]
    assert later.route("call_1.branch.1") == RecordedRoute(
        route="parked_then_answered", by="embedder"
    )
    assert_invariants(later.conversation)


def test_continuing_with_nobody_parks_the_question_again_under_its_own_id(tmp_path: Path) -> None:
    """Still nobody: parked again, no second request, its first mark kept."""
    parked = park_first(tmp_path / "c")
    first = recorded_park(_request_entry(parked.path, InquiryRequest).metadata)
    later = continue_later(parked.path)
    assert later.appended == []
    assert [(p.inquiry_id, p.kind) for p in later.parked] == [("call_1.apply.1", PromptKind.TOOL)]
    assert recorded_park(_request_entry(parked.path, InquiryRequest).metadata) == first


def test_a_parked_permission_is_asked_again_when_the_turn_is_continued(tmp_path: Path) -> None:
    """detached.run = park parks the permission like a question; later, the person decides."""
    parked = park_first(tmp_path / "c", None, run="ask")
    assert parked.parked == (
        ParkedPrompt(tool_call_id="call_1", tool_name="fs", kind=PromptKind.RUN),
    )
    assert parked.fs.runs == []  # never started: it waits for its permission
    park = recorded_park(_request_entry(parked.path, ToolCallRequest).metadata)
    assert park is not None
    assert park.prompt == "run"
    (waiting,) = waiting_prompts(parked.path).prompts
    assert (waiting.kind, waiting.parked, waiting.since) == (PromptKind.RUN, True, park.since)
    later = continue_later(
        parked.path, None, prompter=ScriptedPrompter().permit(), config=parking(run="ask")
    )
    assert later.fs.runs == [{}]
    assert later.ls.runs == []
    saved = load_conversation(parked.path)
    (entry,) = [
        e
        for e in saved.stream
        if isinstance(e, EventEntry)
        and isinstance(e.payload, ToolCallResponse)
        and e.payload.id == "call_1"
    ]
    assert recorded_route(entry.metadata, "permission") == RecordedRoute(
        route="parked_then_answered", by="person"
    )


# ------------------------------------------------------------ a parked secret


def test_a_secret_is_parked_for_a_person_rather_than_refused(tmp_path: Path) -> None:
    """Nobody to ask and policy park: a secret waits (every other mode refuses it)."""
    parked = park_first(tmp_path / "c", TOKEN)
    assert [(p.inquiry_id, p.kind) for p in parked.parked] == [("call_1.token.1", PromptKind.TOOL)]
    assert payloads(load_conversation(parked.path), Cancelled) == []


@pytest.mark.parametrize(
    "who",
    ["person", "nobody, park", "answers file, park", "nobody, deny"],
)
def test_a_parked_secret_is_a_persons_at_a_terminal(tmp_path: Path, who: str) -> None:
    """Continued: a person answers it; nobody (or a file) leaves it parked, or the policy says."""
    parked = park_first(tmp_path / "c", TOKEN)
    prompter: Prompter | None = None
    config = parking()
    if who == "person":
        prompter = ScriptedPrompter().answer(value=SECRET)
    elif who == "answers file, park":
        prompter = ScriptedPrompter(from_file=True).answer(value=SECRET)
    elif who == "nobody, deny":
        config = parking(detached="deny")
    later = continue_later(parked.path, TOKEN, prompter=prompter, config=config)
    assert_invariants(later.conversation, secrets=[SECRET], parked=later.parked)
    assert SECRET not in stored_text(later.conversation)
    if who == "person":
        assert later.appended[0] == Redacted(id="call_1.token.1")
        assert later.route("call_1.token.1") == RecordedRoute(
            route="parked_then_answered", by="person"
        )
        assert later.fs.runs == [{}, {"token": SECRET}]  # the tool got it; the stream never
        return
    if who == "nobody, deny":
        # The continuing run's policy says so: a secret nobody can give is refused.
        assert later.appended[0] == Cancelled(
            id="call_1.token.1", reason=CancellationReason.NO_PROMPT_BACKEND
        )
        assert later.responses[0].is_error
        return
    # The file's answer to a parked secret is not taken: it waits for a person still.
    assert later.appended == []
    assert [p.inquiry_id for p in later.parked] == ["call_1.token.1"]
    assert later.fs.runs == [{}]


# ------------------------------------------------------------ the inbox


def test_waiting_prompts_tell_a_parked_question_from_one_a_crash_left_open(tmp_path: Path) -> None:
    """Listed without the lock: id, tool, question as recorded, since when, parked or not."""
    parked = park_first(tmp_path / "parked", BRANCH)
    park = recorded_park(_request_entry(parked.path, InquiryRequest).metadata)
    assert park is not None
    listed = waiting_prompts(parked.path)
    assert listed.writer is None
    (prompt,) = listed.prompts
    assert (prompt.tool_call_id, prompt.tool_name, prompt.kind) == (
        "call_1",
        "fs",
        PromptKind.TOOL,
    )
    assert (prompt.inquiry_id, prompt.parked, prompt.since) == (
        "call_1.branch.1",
        True,
        park.since,
    )
    assert prompt.question is not None
    assert (prompt.question.text, prompt.question.id) == ("Which branch?", "branch")
    crashed = _crashed(tmp_path / "crashed")
    (left,) = waiting_prompts(crashed).prompts
    entry = _request_entry(crashed, InquiryRequest)
    assert (left.inquiry_id, left.parked, left.since) == (
        "call_1.branch.1",
        False,
        str(entry.timestamp),
    )


def _crashed(path: Path) -> Path:
    """A turn whose run died while fs's question waited: open, and not marked parked."""
    conversation = conversation_on_disk(path)
    assistant_calls(conversation, ("call_1", "fs"))
    asked = InquiryRequest(
        id="call_1.branch.1",
        source=InquirySource.tool("fs"),
        question=InquiryQuestion.from_question(BRANCH),
    )
    conversation.stream.append(asked)  # what the dead writer had saved, exactly so
    save_conversation(conversation)
    conversation.close()
    return path


def test_the_inbox_answers_a_parked_question_and_the_continued_turn_runs_with_it(
    tmp_path: Path,
) -> None:
    """answer_waiting: under the lock, through the machine, parked then answered by inbox."""
    parked = park_first(tmp_path / "c", BRANCH)
    answer_waiting(parked.path, "call_1.branch.1", "dev")
    assert waiting_prompts(parked.path).prompts == ()
    saved = load_conversation(parked.path)
    (answered,) = [
        e for e in saved.stream if isinstance(e, EventEntry) and isinstance(e.payload, Answered)
    ]
    assert answered.payload == Answered(id="call_1.branch.1", answer="dev")
    assert recorded_route(answered.metadata) == RecordedRoute(
        route="parked_then_answered", by="inbox"
    )
    later = continue_later(parked.path, BRANCH)
    assert later.fs.runs == [{"branch": "dev"}]  # the recorded answer, replayed: nobody asked
    assert later.ls.runs == []
    assert_invariants(later.conversation)


@pytest.mark.parametrize(
    ("inquiry_id", "value", "question", "refused"),
    [
        ("call_1.branch.1", "feature", BRANCH, UnfitAnswerError),
        ("call_1.apply.1", "yes; rm -rf ~", APPLY, UnfitAnswerError),
        ("call_1.token.1", SECRET, TOKEN, SecretNotTakenError),
        ("call_9.branch.1", "dev", BRANCH, NotWaitingError),
    ],
    ids=["outside-its-options", "not-a-boolean", "a-secret", "no-such-question"],
)
def test_the_inbox_refuses_what_does_not_fit_and_writes_nothing(
    tmp_path: Path, inquiry_id: str, value: str, question: Question, refused: type[Exception]
) -> None:
    """A value its question does not take, a secret, an id not parked: refused, nothing written."""
    parked = park_first(tmp_path / "c", question)
    before = (parked.path / "events.json").read_bytes()
    with pytest.raises(refused) as error:
        answer_waiting(parked.path, inquiry_id, value)
    assert value not in str(error.value) or refused is NotWaitingError
    assert (parked.path / "events.json").read_bytes() == before


def test_the_inbox_does_not_answer_a_question_a_crash_left_open(tmp_path: Path) -> None:
    """Left open by a run that died: asked again when the turn is continued, not answered here."""
    crashed = _crashed(tmp_path / "crashed")
    with pytest.raises(NotWaitingError, match="asked again when the turn is continued"):
        answer_waiting(crashed, "call_1.branch.1", "dev")


def test_the_inbox_is_refused_while_a_run_holds_the_lock(tmp_path: Path) -> None:
    """Another process writes it: the listing names it; the answer is refused, typed, naming it."""
    parked = park_first(tmp_path / "c", BRANCH)
    process = subprocess.Popen(
        [sys.executable, str(CRASH_PROGRAMS), "hold", str(parked.path)], stdout=subprocess.PIPE
    )
    with reaped(process):
        assert process.stdout is not None
        assert process.stdout.readline().decode().strip() == f"holding {process.pid}"
        assert waiting_prompts(parked.path).writer == process.pid
        with pytest.raises(ConversationLockedError) as error:
            answer_waiting(parked.path, "call_1.branch.1", "dev")
        assert error.value.pid == process.pid
        process.kill()
        process.wait(timeout=PATIENCE)


def test_a_park_mark_keeps_the_rest_of_the_metadata() -> None:
    """A request's other metadata survives its park mark, and a foreign value under the key too."""
    mark = RecordedPark(prompt="tool", since="2026-01-01 00:00:00")
    assert with_park({"other": 1, "inquiry": {"route": "x"}}, mark) == {
        "other": 1,
        "inquiry": {"route": "x", "parked": {"prompt": "tool", "since": "2026-01-01 00:00:00"}},
    }
    assert with_park({"inquiry": "a newer writer's"}, mark) == {"inquiry": "a newer writer's"}
