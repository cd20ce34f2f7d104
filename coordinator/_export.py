"""A conversation as Markdown, for people to read.

Theory of operation: the stream is rendered in order, one ``## Turn N``
section per turn (``N`` counts from 1), each event a ``###`` block. Global
entries render where they sit: a compaction with its summary, a
configuration change as a one-line note (its contents are configuration, not
conversation), an unknown entry as a note naming its kind.

Inquiry responses render as RFD 082 "Reader behavior" says:

- ``Answered``: ``Answer: <value>``, the value as JSON (``true``, ``"main"``);
- ``Redacted``: ``Answer: <redacted>``;
- ``Cancelled``: ``Cancelled (<reason>)``, the reason's wire tag from
  ``reason.as_str()``, so a reason added later (or an unknown one, kept
  verbatim) renders without a change here.

Rules:

- Deterministic: the same stream always gives the same text (JSON keeps the
  recorded key order; nothing reads a clock).
- A secret answer never appears. None is on disk, and should a file hold an
  ``Answered`` carrying the id of a question whose answer type is ``secret``
  anyway, it renders as ``<redacted>``: paired with that question or not (a
  repeated or orphaned response, one before the question, one in another
  turn), since a response matched only by its id may hold the secret as
  well as the paired one. A secret question's ``default`` is not shown.
- Text written by people, models and tools (messages, question text) is
  Markdown already and is copied as it is; tool output, arguments and
  preambles go in code fences long enough never to be closed by their
  content.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from coordinator._entries import Compaction, ConfigDelta, EventEntry, UnknownEntry
from machines import (
    Answered,
    AnswerKind,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    InquiryRequest,
    InquirySource,
    Redacted,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from coordinator._entries import StreamEntry
    from coordinator._stream import ConversationStream
    from machines import InquiryResponse

__all__ = ["describe_inquiry_response", "export_markdown"]

_REDACTED = "Answer: <redacted>"
_BACKTICKS = re.compile(r"`+")


def describe_inquiry_response(response: InquiryResponse) -> str:
    """The one line RFD 082 gives a response: ``Answer: true``, ``Cancelled (user)``..."""
    if isinstance(response, Answered):
        return f"Answer: {_json(response.answer)}"
    if isinstance(response, Redacted):
        return _REDACTED
    return f"Cancelled ({response.reason.as_str()})"


def _json(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, option=option).decode()


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def _code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    if not text:
        return "(empty)"  # an empty code span is not one in Markdown
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence its own content cannot close."""
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def _source(source: InquirySource) -> str:
    if source.kind is SourceKind.TOOL:
        return f"tool {_code(source.name or '')}"
    if source.kind is SourceKind.OTHER:
        return _code(source.name or "")
    return f"the {source.kind.value}"


_EXPECTS = {
    AnswerKind.BOOLEAN: "yes or no (boolean)",
    AnswerKind.SELECT: "one of the options below",
    AnswerKind.TEXT: "free text",
    AnswerKind.SECRET: "a secret (never recorded)",
}


def _question(request: InquiryRequest) -> list[str]:
    question = request.question
    answer_type = question.answer_type
    asked_as = f" as {_code(question.id)}" if question.id else ""
    blocks = [
        f"### Question ({_code(request.id)})",
        f"Asked by {_source(request.source)}{asked_as}; expects {_EXPECTS[answer_type.kind]}.",
    ]
    if question.context:
        blocks.append(_fence(question.context, "text"))
    blocks.append(question.text)
    if answer_type.options:
        lines = ["Options:", ""]
        for option in answer_type.options:
            line = f"- {_code(option.value)}"
            if option.description:
                line += f": {option.description}"
            lines.append(line)
        blocks.append("\n".join(lines))
    if question.default is not None and not answer_type.is_secret:
        blocks.append(f"Default: {_code(_json(question.default))}")
    return blocks


def _chat_request(request: ChatRequest) -> list[str]:
    heading = "### User" + (f" ({request.author})" if request.author else "")
    blocks = [heading, request.content]
    if request.schema is not None:
        blocks += [
            "Asked for structured output with this schema:",
            _fence(_json(request.schema, indent=True), "json"),
        ]
    return blocks


def _chat_response(response: ChatResponse) -> list[str]:
    if response.kind is ChatResponseKind.MESSAGE:
        return ["### Assistant", str(response.content)]
    if response.kind is ChatResponseKind.REASONING:
        return ["### Reasoning", _quote(str(response.content))]
    return ["### Structured data", _fence(_json(response.content, indent=True), "json")]


def _tool_call(payload: ToolCallRequest | ToolCallResponse) -> list[str]:
    if isinstance(payload, ToolCallRequest):
        heading = f"### Tool call {_code(payload.name)} ({_code(payload.id)})"
        return [heading, _fence(_json(payload.arguments, indent=True), "json")]
    what = "Tool error" if payload.is_error else "Tool result"
    return [f"### {what} ({_code(payload.id)})", _fence(payload.content, "text")]


def _event(entry: EventEntry, *, secret: bool) -> list[str]:
    """The blocks of one event; ``secret`` when it records an answer to a secret question."""
    payload = entry.payload
    if isinstance(payload, ChatRequest):
        return _chat_request(payload)
    if isinstance(payload, ChatResponse):
        return _chat_response(payload)
    if isinstance(payload, ToolCallRequest | ToolCallResponse):
        return _tool_call(payload)
    if isinstance(payload, InquiryRequest):
        return _question(payload)
    if isinstance(payload, Answered | Cancelled | Redacted):
        line = _REDACTED if secret else describe_inquiry_response(payload)
        return [f"### Response ({_code(payload.id)})", line]
    return []  # a turn start: its turn's heading stands for it


def _global(entry: StreamEntry) -> list[str]:
    if isinstance(entry, Compaction):
        blocks = [f"### Compaction of turns {entry.from_turn} to {entry.to_turn}"]
        if entry.summary:
            blocks.append(entry.summary)
        return blocks
    if isinstance(entry, ConfigDelta):
        return ["_Configuration changed._"]
    if isinstance(entry, UnknownEntry):
        return [f"_An entry of unknown kind {_code(entry.kind)}, kept in the file, not shown._"]
    return []


def _secret_responses(stream: ConversationStream) -> set[int]:
    """Positions of ``Answered`` responses under a secret question's id (there should be none).

    Every such response counts, not only the one pairing would match with the
    question: an orphan or a repeat under that id is as likely to hold the
    secret. Ids are matched across the whole stream, so that a response in
    the wrong turn is hidden too; hiding a response that was not secret costs
    a reader one answer, showing one that was costs the secret.
    """
    secret_ids = {
        entry.payload.id
        for entry in stream
        if isinstance(entry, EventEntry)
        and isinstance(entry.payload, InquiryRequest)
        and entry.payload.question.answer_type.is_secret
    }
    if not secret_ids:
        return set()
    return {
        index
        for index, entry in enumerate(stream)
        if isinstance(entry, EventEntry)
        and isinstance(entry.payload, Answered)
        and entry.payload.id in secret_ids
    }


def export_markdown(stream: ConversationStream, *, title: str | None = None) -> str:
    """Render ``stream`` as Markdown under the heading ``title``.

    Ends with exactly one newline.
    """
    secret_responses = _secret_responses(stream)
    blocks = [f"# {title or 'Conversation'}"]
    turns = stream.turns()
    first_turn = turns[0].start if turns else len(stream)
    for entry in stream[:first_turn]:
        blocks += _global(entry)
    for turn in turns:
        blocks.append(f"## Turn {turn.index + 1}")
        if turn.marked:
            start = turn.entries[0]
            if isinstance(start, EventEntry) and isinstance(start.payload, TurnStart):
                blocks.append(f"_Started {start.timestamp}._")
        for offset, entry in enumerate(turn.entries):
            if isinstance(entry, EventEntry):
                blocks += _event(entry, secret=turn.start + offset in secret_responses)
            else:
                blocks += _global(entry)
    return "\n\n".join(blocks) + "\n"
