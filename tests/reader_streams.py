"""Small streams for the reader tests (pairing, sanitize, export, CLI).

``make_stream`` takes conversation events and global-entry makers in order and
builds a stream with a fixed clock and counting event ids. ``labels`` turns a
stream back into short words (``"call a"``, ``"answer q"``) so a test can state
the shape it expects in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from conftest import CountingIds, FixedClock

from coordinator import ConversationStream, EventEntry
from coordinator.stream import Compaction, ConfigDelta, StreamEntry, UnknownEntry
from machines import (
    Answered,
    AnswerType,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    Event,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

#: Something ``make_stream`` can place: an event, or a maker of a global entry.
Item: TypeAlias = Event | Callable[[ConversationStream], StreamEntry]


def new_stream() -> ConversationStream:
    """An empty stream with a fixed clock and counting ids."""
    return ConversationStream(clock=FixedClock(), new_id=CountingIds())


def make_stream(*items: Item) -> ConversationStream:
    """A stream holding ``items`` in order."""
    stream = new_stream()
    stream.replace([item(stream) if callable(item) else stream.make_entry(item) for item in items])
    return stream


def turn() -> TurnStart:
    """A turn start."""
    return TurnStart()


def chat(text: str = "Please look at this.") -> ChatRequest:
    """A user message."""
    return ChatRequest(content=text)


def reply(text: str = "Done.") -> ChatResponse:
    """A model message."""
    return ChatResponse.message(text)


def call(id: str, name: str = "fs_read_file") -> ToolCallRequest:
    """A tool call ``id``."""
    return ToolCallRequest(id=id, name=name, arguments={"path": "README.md"})


def result(id: str, content: str = "ok", *, is_error: bool = False) -> ToolCallResponse:
    """The response to tool call ``id``."""
    return ToolCallResponse(id=id, content=content, is_error=is_error)


def ask(id: str, answer_type: AnswerType | None = None, text: str = "Apply?") -> InquiryRequest:
    """An inquiry ``id`` from ``fs_modify_file`` (boolean unless told)."""
    return InquiryRequest(
        id=id,
        source=InquirySource.tool("fs_modify_file"),
        question=InquiryQuestion(text=text, answer_type=answer_type or AnswerType.boolean()),
    )


def answer(id: str, value: JsonValue = True) -> Answered:
    """Inquiry ``id`` answered with ``value``."""
    return Answered(id=id, answer=value)


def cancel(id: str, reason: CancellationReason = CancellationReason.USER) -> Cancelled:
    """Inquiry ``id`` cancelled."""
    return Cancelled(id=id, reason=reason)


def redact(id: str) -> Redacted:
    """Inquiry ``id`` answered with a secret that was not recorded."""
    return Redacted(id=id)


def config(
    delta: dict[str, JsonValue] | None = None,
) -> Callable[[ConversationStream], ConfigDelta]:
    """A maker of a configuration change."""

    def make(stream: ConversationStream) -> ConfigDelta:
        return ConfigDelta(
            event_id=stream.fresh_id(), timestamp=stream.now(), delta=delta or {"model": "m"}
        )

    return make


def compaction(summary: str = "Earlier work.") -> Callable[[ConversationStream], Compaction]:
    """A maker of a compaction of turns 0 to 1."""

    def make(stream: ConversationStream) -> Compaction:
        return Compaction(
            event_id=stream.fresh_id(),
            timestamp=stream.now(),
            from_turn=0,
            to_turn=1,
            summary=summary,
        )

    return make


def unknown(kind: str = "future_kind") -> Callable[[ConversationStream], UnknownEntry]:
    """A maker of an entry of a kind this build does not know."""

    def make(stream: ConversationStream) -> UnknownEntry:
        return UnknownEntry(
            {"event_id": stream.fresh_id(), "type": kind, "timestamp": str(stream.now())}
        )

    return make


_WORDS: dict[type, str] = {
    TurnStart: "ts",
    ChatRequest: "chat",
    ChatResponse: "reply",
    ToolCallRequest: "call",
    ToolCallResponse: "result",
    InquiryRequest: "ask",
    Answered: "answer",
    Cancelled: "cancel",
    Redacted: "redact",
    ConfigDelta: "config",
    Compaction: "compaction",
    UnknownEntry: "unknown",
}


def label(entry: StreamEntry) -> str:
    """A short word for ``entry``: ``"ts"``, ``"chat"``, ``"call a"``, ``"answer q"``..."""
    if not isinstance(entry, EventEntry):
        return _WORDS[type(entry)]
    payload = entry.payload
    if isinstance(payload, ToolCallResponse) and payload.is_error:
        return f"error {payload.id}"
    word = _WORDS[type(payload)]
    carried = getattr(payload, "id", None)
    return f"{word} {carried}" if carried is not None else word


def labels(entries: ConversationStream | tuple[StreamEntry, ...]) -> list[str]:
    """The label of each entry, in order."""
    return [label(entry) for entry in entries]
