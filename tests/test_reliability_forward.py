"""Forward compatibility (DESIGN.md rule 4): a newer writer's input survives, verbatim.

Entries of kinds this build does not know, fields it does not model (at the
top of an entry and nested in its question, source, answer type, options,
arguments and metadata) and cancellation reasons it has no name for are
loaded, carried through work on the conversation (appends, a coordinator
batch resuming the turn, sanitize) and saved back exactly as they were read:
same keys, same order, same values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from conftest import examples
from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assert_invariants,
    assistant_calls,
    payloads,
    run,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_inputs import STAMP, own_events
from strategies import json_values, texts

from coordinator import (
    ScriptedPrompter,
    ToolCoordinator,
    load_conversation,
    pair_events,
    sanitize,
    save_conversation,
)
from coordinator.driver._executors import BuiltinExecutor
from machines import (
    Cancelled,
    ChatResponse,
    InquiryRequest,
    Question,
    Redacted,
    UnknownCancellationReason,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

NEWER = "added_by_a_newer_writer"
APPLY = Question.boolean("apply", "Apply the patch?")


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every object inside ``value`` (``value`` itself first, when it is one)."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            found.append(item)
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return found


def _newer_stream() -> list[dict[str, Any]]:
    """Our small conversation as a newer writer would write it: new fields, kinds, reasons."""
    entries = own_events()
    for number, entry in enumerate(entries):
        for inner in _objects(entry):
            inner[NEWER] = {"since": "v2", "values": [number, None, 1.5]}
        entry["event_id"] = f"id{number:02d}"
        entries[number] = {"event_id": entry.pop("event_id"), **entry}
    # A newer kind in the middle of a turn, and one with no timestamp or id at all.
    entries.insert(3, {"event_id": "new1", "type": "tool_progress", "timestamp": STAMP, "pct": 50})
    entries.insert(9, {"type": "annotation", "note": {"deep": [{"er": True}]}})
    return entries


def _verbatim(saved: list[Any], original: list[dict[str, Any]]) -> None:
    """Every original entry is in ``saved``, in order, with the same keys, order and values."""
    remaining = iter(saved)
    for entry in original:
        expected = list(entry.items())
        assert any(list(s.items()) == expected for s in remaining), f"lost or changed: {entry}"


def _write(directory: Path, entries: list[dict[str, Any]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n"
    (directory / "events.json").write_bytes(data)


def test_newer_entries_fields_and_reasons_survive_a_coordinator_run(tmp_path: Path) -> None:
    """A coordinator resumes the last turn and sanitize runs; the newer input is kept verbatim."""
    original = _newer_stream()
    _write(tmp_path, original)
    conversation = load_conversation(tmp_path)
    kinds = {entry.kind for entry in conversation.stream.unknown_entries()}
    assert kinds == {"future_kind", "tool_progress", "annotation"}
    reasons = [response.reason for response in payloads(conversation, Cancelled)]
    assert reasons == [UnknownCancellationReason("some_future_variant")]
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": BuiltinExecutor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    sanitize(conversation.stream)
    save_conversation(conversation)
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    _verbatim(saved, original)
    assert len(saved) > len(original)  # the batch was recorded after them
    assert_invariants(load_conversation(tmp_path))


def test_a_resumed_turn_pairs_around_an_unknown_reason_and_kind(tmp_path: Path) -> None:
    """Resuming a turn with a newer reason and kind: ids continue, pairing holds, both kept."""
    entries: list[dict[str, Any]] = [
        {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
        {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
        {"event_id": "a1", "timestamp": STAMP, "type": "chat_response", "message": "ok"},
        {
            "event_id": "q1",
            "timestamp": STAMP,
            "type": "tool_call_request",
            "id": "call_1",
            "name": "fs",
            "arguments": {},
        },
        {
            "event_id": "r1",
            "timestamp": STAMP,
            "type": "inquiry_request",
            "id": "call_1.apply.1",
            "source": {"source": "tool", "name": "fs"},
            "question": {"text": "Apply the patch?", "answer_type": {"type": "boolean"}},
        },
        {"event_id": "x1", "type": "ui_hint", "timestamp": STAMP, "show": ["spinner"]},
        {
            "event_id": "s1",
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "cancelled",
            "id": "call_1.apply.1",
            "reason": "exclusive_conflict",
            NEWER: {"detail": "another prompt held the terminal"},
        },
        {
            "event_id": "p1",
            "timestamp": STAMP,
            "type": "tool_call_response",
            "id": "call_1",
            "content": "VG9vbCBpbnB1dCBjYW5jZWxsZWQgYnkgdXNlci4=",
            "is_error": False,
        },
    ]
    _write(tmp_path, entries)
    conversation = load_conversation(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": BuiltinExecutor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "fs"))))
    requests = [request.id for request in payloads(conversation, InquiryRequest)]
    assert requests == ["call_1.apply.1", "call_1.apply.2"]
    assert pair_events(conversation.stream).complete
    saved = orjson.loads((tmp_path / "events.json").read_bytes())
    assert saved[: len(entries)] == entries
    _verbatim(saved, entries)


_NAMES = texts(min_size=1, max_size=8).map(lambda name: f"x_{name}")


@st.composite
def newer_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Our conversation with newer fields, kinds and reasons put in at random places."""
    entries = own_events()
    for _ in range(draw(st.integers(1, 6))):
        entry = entries[draw(st.integers(0, len(entries) - 1))]
        inner = draw(st.sampled_from(_objects(entry)))
        inner[draw(_NAMES)] = draw(json_values())
    for entry in entries:
        if entry.get("outcome") == "cancelled":
            entry["reason"] = draw(texts(min_size=1, max_size=20))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(_NAMES)
        raw = {"type": kind, **draw(st.dictionaries(_NAMES, json_values(), max_size=3))}
        entries.insert(draw(st.integers(0, len(entries))), raw)
    return entries


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=newer_streams())
def test_newer_input_anywhere_survives_appends_and_saves(
    tmp_path_factory: pytest.TempPathFactory, entries: list[dict[str, Any]]
) -> None:
    """Random newer fields, kinds and reasons: after appends and two saves, still verbatim."""
    directory = tmp_path_factory.mktemp("newer")
    _write(directory, entries)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("appended"))
    save_conversation(conversation)
    again = load_conversation(directory)
    assert list(again.stream) == list(conversation.stream)
    again.stream.append(Redacted(id="call_9.token.1"))
    save_conversation(again)
    saved = orjson.loads((directory / "events.json").read_bytes())
    assert len(saved) == len(entries) + 2
    stripped = [{k: v for k, v in e.items() if k != "event_id"} for e in saved[: len(entries)]]
    assert [list(e.items()) for e in stripped] == [list(e.items()) for e in entries]
