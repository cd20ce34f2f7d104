"""Inputs the reliability tests share: a small conversation holding every shape there is."""

from __future__ import annotations

import base64
from typing import Any

STAMP = "2026-03-05 19:31:45.755262"


def b64(text: str) -> str:
    """``text`` as JP stores its base64 fields."""
    return base64.b64encode(text.encode()).decode()


def own_events() -> list[dict[str, Any]]:
    """A small conversation with every entry kind and every inquiry shape."""
    options = [{"value": "main", "description": "the trunk"}, {"value": "dev"}]
    entries: list[dict[str, Any]] = [
        {"type": "config_delta", "timestamp": STAMP, "delta": {"assistant": {"name": "jp"}}},
        {"timestamp": STAMP, "type": "turn_start"},
        {"timestamp": STAMP, "type": "chat_request", "content": "hi", "author": "me"},
        {"timestamp": STAMP, "type": "chat_response", "reasoning": "hmm"},
        {
            "timestamp": STAMP,
            "type": "chat_response",
            "message": "ok",
            "metadata": {"anthropic_thinking_signature": b64("sig")},
        },
        {
            "timestamp": STAMP,
            "type": "tool_call_request",
            "id": "call_1",
            "name": "fs",
            "arguments": {"path": b64("a.txt"), "force": True, "n": [1, b64("two")]},
            "metadata": {"rendered_arguments": b64("path: a.txt")},
        },
    ]
    questions = [
        ("apply", {"type": "boolean"}, True, {"source": "tool", "name": "fs"}),
        ("branch", {"type": "select", "options": options}, "dev", {"source": "assistant"}),
        ("note", {"type": "text"}, "fine", {"source": "user"}),
        ("token", {"type": "secret"}, None, {"source": "other", "name": "x"}),
    ]
    for question_id, answer_type, default, source in questions:
        question: dict[str, Any] = {"text": f"{question_id}?", "answer_type": answer_type}
        if default is not None:
            question["default"] = default
        entries.append(
            {
                "timestamp": STAMP,
                "type": "inquiry_request",
                "id": f"call_1.{question_id}.1",
                "source": source,
                "question": {**question, "id": question_id},
            }
        )
    entries += [
        {"timestamp": STAMP, "type": "inquiry_response", "id": "call_1.apply.1", "answer": True},
        {
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "answered",
            "id": "call_1.branch.1",
            "answer": "dev",
        },
        {
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "cancelled",
            "id": "call_1.note.1",
            "reason": "some_future_variant",
        },
        {
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "redacted",
            "id": "call_1.token.1",
        },
        {
            "timestamp": STAMP,
            "type": "tool_call_response",
            "id": "call_1",
            "content": b64("done"),
            "is_error": False,
        },
        {"type": "compaction", "timestamp": STAMP, "from_turn": 0, "to_turn": 1, "summary": "s"},
        {"type": "future_kind", "timestamp": STAMP, "blob": {"z": [None, 1.5]}},
        {"timestamp": STAMP, "type": "turn_start"},
        {"timestamp": STAMP, "type": "chat_request", "content": "again"},
        {"timestamp": STAMP, "type": "chat_response", "data": {"k": [1, 2]}},
    ]
    return entries
