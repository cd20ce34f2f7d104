"""What the coordinator tests share: tools that ask, conversations on disk, invariants."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from conftest import CountingIds, FixedClock

from coordinator import Conversation, EventEntry, load_conversation, pair_events, save_conversation
from coordinator._recorded_routes import RecordedRoute, recorded_park, recorded_route
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    Failure,
    Success,
)
from coordinator.wire._storage_fields import decode_leaves
from machines import (
    Answered,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    ToolCallRequest,
    TurnStart,
)

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.driver import ParkedPrompt

T = TypeVar("T")

#: Every tool runs without asking permission, and a question nobody can be asked
#: goes to the model (the detached policy ``auto``, which was the only behaviour
#: before RFD 049): for tests about questions. The default policy, ``deny``, has
#: tests of its own (tests/test_headless_policy.py).
UNATTENDED = parse_tools_config({"defaults": {"run": "unattended", "detached": "auto"}})


def run(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on a fresh event loop."""
    return asyncio.run(work)


class AskingTool(BuiltinTool):
    """A built-in tool that asks its questions in order, then reports what it got.

    ``runs`` records the answers each run received, as the tool saw them
    (secrets revealed), so a test can check what reached the tool.
    """

    def __init__(
        self,
        questions: Sequence[Question],
        *,
        source: InquirySource | None = None,
        reask: int = 0,
        fail_with: str | None = None,
    ) -> None:
        """Ask ``questions``; ask the first one ``reask`` extra times; fail at the end if told."""
        self.questions = list(questions)
        self.source = source
        self.reask = reask
        self.asked_again = 0
        self.fail_with = fail_with
        self.runs: list[dict[str, JsonValue]] = []

    def inquiry_source(self, name: str) -> InquirySource:
        """The source this tool declares (the default unless given)."""
        return self.source or super().inquiry_source(name)

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask what is unanswered; then succeed (or fail) with the answers."""
        del arguments
        self.runs.append(dict(answers))
        for question in self.questions:
            if question.id not in answers:
                return Ask(question)
        if self.asked_again < self.reask:
            # Ask the first question again, as a tool unhappy with its answer would.
            self.asked_again += 1
            return Ask(self.questions[0])
        if self.fail_with is not None:
            return Failure(self.fail_with)
        return Success("answers: " + ", ".join(f"{k}={v!r}" for k, v in sorted(answers.items())))


def executor(tool: BuiltinTool) -> BuiltinExecutor:
    """Wrap a built-in tool."""
    return BuiltinExecutor(tool)


def conversation_on_disk(path: Path, message: str = "please do it") -> Conversation:
    """A saved conversation whose current turn holds a user message.

    Its clock and ids are fixed: tests look for short secrets (a PIN) in what
    was written, which a real clock's microseconds or a random id could hold.
    """
    conversation = Conversation.new(
        metadata={"title": "test"}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content=message))
    save_conversation(conversation, path)
    return conversation


def assistant_calls(conversation: Conversation, *calls: tuple[str, str]) -> list[ToolCallRequest]:
    """Append an assistant response making ``calls`` (id, tool name); return the requests."""
    conversation.stream.append(ChatResponse.message("On it."))
    requests = [ToolCallRequest(id=call_id, name=name, arguments={}) for call_id, name in calls]
    for request in requests:
        conversation.stream.append(request)
    return requests


def payloads(conversation: Conversation, kind: type | tuple[type, ...]) -> list[Any]:
    """The payloads of one kind of event, in stream order."""
    return [
        entry.payload
        for entry in conversation.stream
        if isinstance(entry, EventEntry) and isinstance(entry.payload, kind)
    ]


def recorded_routes(directory: Path) -> list[RecordedRoute | None]:
    """The route each inquiry response records in its metadata, read back from ``directory``."""
    saved = load_conversation(directory)
    return [
        recorded_route(entry.metadata)
        for entry in saved.stream
        if isinstance(entry, EventEntry) and isinstance(entry.payload, Answered | Cancelled)
    ]


def stored_text(conversation: Conversation) -> str:
    """Every text the conversation's directory holds: each file as it is, then decoded.

    A JSON file is read again with every string in it decoded from base64
    where it is base64 (``events.json`` stores a tool call's arguments, a
    tool's response and metadata so), and written out after the files: a
    secret a tool echoed would hide in the encoded bytes from a plain search.
    """
    assert conversation.path is not None
    files = sorted(p for p in conversation.path.rglob("*") if p.is_file())
    texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
    for path in files:
        if path.suffix == ".json":
            try:
                stored = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError:
                continue
            texts.append(orjson.dumps(decode_leaves(stored)).decode())
    return "\n".join(texts)


def assert_invariants(
    conversation: Conversation,
    secrets: Sequence[str] = (),
    parked: Sequence[ParkedPrompt] = (),
) -> None:
    """Every request answered exactly once within its turn, and no secret on disk.

    A secret is looked for in every text :func:`stored_text` gives, as
    written and as JSON spells it (quotes and backslashes escaped). The
    ``parked`` prompts (a batch's) alone wait, each request marked so.
    """
    pairing = pair_events(conversation.stream)
    waiting = {p.inquiry_id for p in parked if p.inquiry_id is not None}
    assert {located.id for located in pairing.inquiries.pending} == waiting
    assert pairing.inquiries.orphaned == ()
    assert {located.id for located in pairing.tool_calls.pending} == {
        p.tool_call_id for p in parked
    }
    permissions = {p.tool_call_id for p in parked if p.inquiry_id is None}
    marked = [*pairing.inquiries.pending]
    marked += [located for located in pairing.tool_calls.pending if located.id in permissions]
    for located in marked:
        assert isinstance(located.entry, EventEntry)
        assert recorded_park(located.entry.metadata) is not None, "a request left open, unmarked"
    ids = [
        request.id
        for turn in conversation.stream.turns()
        for request in (e.payload for e in turn.events)
        if isinstance(request, InquiryRequest)
    ]
    for turn in conversation.stream.turns():
        turn_ids = [e.payload.id for e in turn.events if isinstance(e.payload, InquiryRequest)]
        assert len(turn_ids) == len(set(turn_ids)), "inquiry ids repeat within a turn"
    assert len(ids) == pairing.inquiries.counts.paired + len(waiting)
    if conversation.path is not None:
        stored = stored_text(conversation)
        for secret in secrets:
            for spelling in (secret, orjson.dumps(secret).decode()[1:-1]):
                assert spelling not in stored, "a secret is on disk"
        reloaded = load_conversation(conversation.path)
        assert pair_events(reloaded.stream).inquiries.counts == pairing.inquiries.counts


__all__ = [
    "UNATTENDED",
    "AskingTool",
    "Callable",
    "assert_invariants",
    "assistant_calls",
    "conversation_on_disk",
    "executor",
    "payloads",
    "recorded_routes",
    "run",
    "stored_text",
]
