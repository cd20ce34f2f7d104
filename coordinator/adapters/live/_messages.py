"""The messages a live run and an inbox exchange over the run's socket.

Theory of operation: one JSON object per line, each with one key naming
it. A run speaks first and says who it is; then it tells each question a
person may answer as it is asked, and each one that is no longer asked;
the inbox sends answers, each of which the run takes or refuses::

    run -> inbox   {"run": {"pid": 41, "conversation": "/w/c1", "title": "..."}}
                   {"asked": {"key": "i1", "tool_call_id": "c1", "tool_name": "deploy",
                              "inquiry_id": "i1", "since": "2026-11-28T04:11:47Z",
                              "question": {"id": "token", "text": "...", "kind": "secret"}}}
                   {"gone": {"key": "i1", "why": "answered at the terminal"}}
                   {"reply": {"ask": 3, "taken": false, "reason": "..."}}
    inbox -> run   {"answer": {"ask": 3, "key": "i1", "value": "..."}}

A question's default crosses only when it is not a secret's (a secret's
default is never offered). An answer to a secret crosses this socket, in
memory, and nowhere else. Every message read is checked here, as any input
from outside: a line that is not one of these, or holds a question its
constructor refuses, is a :class:`MessageError` naming what is wrong, and
the connection is dropped. Lines are bounded (:data:`LINE_LIMIT`).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from coordinator._errors import CoordinatorError
from machines import AnswerKind, AnswerType, JsonValue, Question, RecordError, SelectOption

__all__ = [
    "LINE_LIMIT",
    "Answer",
    "Asked",
    "Gone",
    "MessageError",
    "Reply",
    "RunHello",
    "decode",
    "encode",
    "question_from_wire",
    "question_to_wire",
]

#: The longest line either side reads (a question's context may be a long diff).
LINE_LIMIT = 8 * 1024 * 1024


class MessageError(CoordinatorError):
    """A line from the other side is not a message of the protocol; it says what is wrong."""


@attrs.frozen(kw_only=True)
class RunHello:
    """Who the run is: its pid, its conversation directory (if any) and title."""

    pid: int
    conversation: str | None
    title: str | None


@attrs.frozen(kw_only=True)
class Asked:
    """A question a person may answer now (``shown``) or when its turn comes."""

    key: str
    tool_call_id: str
    tool_name: str
    inquiry_id: str
    since: str
    question: Question


@attrs.frozen(kw_only=True)
class Gone:
    """A question no longer asked, and why (answered, closed, the run stopped)."""

    key: str
    why: str


@attrs.frozen(kw_only=True)
class Answer:
    """An answer from the inbox (``value`` is never in a ``repr``: it may be a secret)."""

    ask: int
    key: str
    value: JsonValue = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class Reply:
    """The run's word on answer ``ask``: taken, or refused for ``reason``."""

    ask: int
    taken: bool
    reason: str | None = None


Message = RunHello | Asked | Gone | Answer | Reply


def question_to_wire(question: Question) -> dict[str, JsonValue]:
    """``question`` as the protocol carries it (a secret's default left out)."""
    answer_type = question.answer_type
    wire: dict[str, JsonValue] = {
        "id": question.id,
        "text": question.text,
        "kind": answer_type.kind.value,
        "exclusive": question.exclusive,
    }
    if question.context is not None:
        wire["context"] = question.context
    if answer_type.options:
        wire["options"] = [
            {"value": option.value, "description": option.description}
            for option in answer_type.options
        ]
    if not answer_type.is_secret and question.default is not None:
        wire["default"] = question.default
    return wire


def question_from_wire(wire: object) -> Question:
    """The question ``wire`` holds, through its validating constructor."""
    if not isinstance(wire, dict):
        raise MessageError("a question is not a JSON object")
    try:
        kind = AnswerKind(wire.get("kind"))
        options = [
            SelectOption(value=option.get("value"), description=option.get("description"))
            for option in _list(wire.get("options", []), "options")
        ]
        return Question(
            id=_text(wire.get("id"), "id"),
            text=_text(wire.get("text"), "text"),
            answer_type=AnswerType(kind=kind, options=options),
            context=wire.get("context"),
            default=None if kind is AnswerKind.SECRET else wire.get("default"),
            exclusive=wire.get("exclusive", False),
        )
    except (ValueError, TypeError, AttributeError, RecordError) as error:
        raise MessageError(f"a question is malformed: {error}") from None


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise MessageError(f"a question's {what} is not a string")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise MessageError(f"{what} is not a JSON array")
    return value


def encode(message: Message) -> bytes:
    """``message`` as one line."""
    match message:
        case RunHello():
            body: dict[str, Any] = {"run": attrs.asdict(message)}
        case Asked():
            fields = attrs.asdict(message, recurse=False)
            fields["question"] = question_to_wire(message.question)
            body = {"asked": fields}
        case Gone():
            body = {"gone": attrs.asdict(message)}
        case Answer():
            body = {"answer": {"ask": message.ask, "key": message.key, "value": message.value}}
        case Reply():
            body = {"reply": attrs.asdict(message)}
    return orjson.dumps(body) + b"\n"


def _fields(body: object, names: dict[str, type | tuple[type, ...]]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise MessageError("a message's body is not a JSON object")
    fields = {}
    for name, kind in names.items():
        value = body.get(name)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise MessageError(f"a message's {name!r} is missing or of the wrong type")
        fields[name] = value
    return fields


def decode(line: bytes) -> Message:
    """The message on ``line``, checked; :class:`MessageError` when it is none."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise MessageError(f"a line is not JSON: {error}") from None
    if not isinstance(value, dict) or len(value) != 1:
        raise MessageError("a line is not an object with one key")
    ((name, body),) = value.items()
    optional = (str, type(None))
    if name == "run":
        return RunHello(**_fields(body, {"pid": int, "conversation": optional, "title": optional}))
    if name == "asked":
        text = str
        fields = _fields(
            body,
            {
                "key": text,
                "tool_call_id": text,
                "tool_name": text,
                "inquiry_id": text,
                "since": text,
            },
        )
        return Asked(**fields, question=question_from_wire(body.get("question")))
    if name == "gone":
        return Gone(**_fields(body, {"key": str, "why": str}))
    if name == "answer":
        fields = _fields(body, {"ask": int, "key": str})
        return Answer(**fields, value=body.get("value"))
    if name == "reply":
        fields = _fields(body, {"ask": int, "taken": bool, "reason": optional})
        return Reply(**fields)
    raise MessageError(f"a message named {name!r} is not one of the protocol's")
