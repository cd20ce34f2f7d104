"""``sanitize()``: each of the seven steps, turn-scoped repair, the report, and applying it."""

from __future__ import annotations

import orjson
import pytest
from reader_streams import (
    Item,
    answer,
    ask,
    call,
    cancel,
    chat,
    compaction,
    config,
    labels,
    make_stream,
    redact,
    reply,
    result,
    turn,
    unknown,
)

from coordinator import EventEntry, pair_events, sanitize
from coordinator.stream import INTERRUPTED_TOOL_CALL, InsertionReason, RemovalReason, plan_sanitize
from machines import ChatRequest, ToolCallRequest, ToolCallResponse, TurnStart

# Each case isolates one step: the input, what is left, and the report's counts.
STEPS = [
    pytest.param(
        [config(), reply(), turn(), call("a"), result("a"), ask("q"), chat(), reply()],
        ["config", "ts", "chat", "reply"],
        {"removed_before_first_chat_request": 4},
        id="1-drop-before-first-chat",
    ),
    pytest.param(
        [turn(), chat(), result("x"), call("a"), result("a"), result("a")],
        ["ts", "chat", "call a", "result a"],
        {"removed_orphaned_tool_call_response": 2},
        id="2-orphaned-tool-response",
    ),
    pytest.param(
        [turn(), chat(), call("a"), call("b"), result("b"), reply()],
        ["ts", "chat", "call a", "error a", "call b", "result b", "reply"],
        {"inserted_interrupted_tool_call": 1},
        id="3-interrupted-tool-call",
    ),
    pytest.param(
        [turn(), chat(), answer("x"), ask("q"), cancel("q"), redact("q")],
        ["ts", "chat", "ask q", "cancel q"],
        {"removed_orphaned_inquiry_response": 2},
        id="4-orphaned-inquiry-response",
    ),
    pytest.param(
        [turn(), chat(), ask("q"), ask("r"), answer("r"), reply()],
        ["ts", "chat", "ask r", "answer r", "reply"],
        {"removed_unanswered_inquiry_request": 1},
        id="5-unanswered-inquiry-request",
    ),
    pytest.param(
        [turn(), chat(), reply(), turn(), config(), turn(), unknown()],
        ["ts", "chat", "reply", "config", "unknown"],
        {"removed_trailing_turn_start": 2},
        id="6-trailing-turn-starts",
    ),
    pytest.param(
        [turn(), config(), turn(), turn(), chat(), reply()],
        ["config", "ts", "chat", "reply"],
        {"removed_collapsed_turn_start": 2},
        id="7-collapse-leading-turn-starts",
    ),
    pytest.param(
        [config(), chat(), reply()],
        ["config", "ts", "chat", "reply"],
        {"inserted_missing_turn_start": 1},
        id="7-insert-missing-turn-start",
    ),
]


@pytest.mark.parametrize(("items", "expected", "changes"), STEPS)
def test_each_step(items: list[Item], expected: list[str], changes: dict[str, int]) -> None:
    """Each step removes or inserts exactly what it says, and reports it under its reason."""
    stream = make_stream(*items)
    report = sanitize(stream)
    assert labels(stream) == expected
    assert {reason: n for reason, n in report.counts().items() if n} == changes


def test_cross_turn_id_collision_is_repaired_within_its_turn() -> None:
    """RFD 082: a turn-1 orphan sharing its id with a turn-2 pair is repaired in turn 1."""
    stream = make_stream(
        turn(), chat(), call("call_1"), ask("call_1.confirm.1"), result("call_1"),
        turn(), chat(), call("call_1"), ask("call_1.confirm.1"), answer("call_1.confirm.1"),
        result("call_1"),
    )  # fmt: skip
    report = sanitize(stream)
    assert labels(stream) == [
        "ts", "chat", "call call_1", "result call_1",
        "ts", "chat", "call call_1", "ask call_1.confirm.1", "answer call_1.confirm.1",
        "result call_1",
    ]  # fmt: skip
    assert [(r.reason, r.index, r.id) for r in report.removed] == [
        (RemovalReason.UNANSWERED_INQUIRY_REQUEST, 3, "call_1.confirm.1")
    ]
    assert report.inserted == ()


def test_cross_turn_tool_call_collision_is_repaired_within_each_turn() -> None:
    """A tool call left open in turn 1 is closed there; turn 2's lone response is removed."""
    stream = make_stream(
        turn(), chat(), call("t"), reply(),
        turn(), chat(), result("t"), call("u"), result("u"),
    )  # fmt: skip
    report = sanitize(stream)
    assert labels(stream) == [
        "ts", "chat", "call t", "error t", "reply",
        "ts", "chat", "call u", "result u",
    ]  # fmt: skip
    assert [(r.reason, r.index) for r in report.removed] == [
        (RemovalReason.ORPHANED_TOOL_CALL_RESPONSE, 6)
    ]
    assert [(i.reason, i.index, i.anchor) for i in report.inserted] == [
        (InsertionReason.INTERRUPTED_TOOL_CALL, 3, 2)
    ]


@pytest.mark.parametrize(
    ("items", "expected", "removed_index"),
    [
        pytest.param(
            [turn(), chat(), ask("tc.q"), answer("tc.q"), ask("tc.q")],
            ["ts", "chat", "ask tc.q", "answer tc.q"],
            4,
            id="answered-then-asked-again",
        ),
        pytest.param(
            [turn(), chat(), ask("tc.q"), ask("tc.q"), answer("tc.q", value=False)],
            ["ts", "chat", "ask tc.q", "answer tc.q"],
            3,
            id="asked-twice-answered-once",
        ),
    ],
)
def test_legacy_duplicate_ids_keep_the_by_order_pair(
    items: list[Item], expected: list[str], removed_index: int
) -> None:
    """RFD 082: of two requests sharing a legacy id and one response, the by-order pair stays."""
    stream = make_stream(*items)
    kept_request = stream[2]
    report = sanitize(stream)
    assert labels(stream) == expected
    assert stream[2] is kept_request
    assert [(r.reason, r.index) for r in report.removed] == [
        (RemovalReason.UNANSWERED_INQUIRY_REQUEST, removed_index)
    ]


def test_interrupted_response_follows_its_request_with_its_timestamp() -> None:
    """Step 3's response: the request's id and timestamp, an error, a fresh event id."""
    stream = make_stream(turn(), chat(), call("fs_modify_file_0"), reply())
    request = stream[2]
    assert isinstance(request, EventEntry)
    before_ids = {entry.event_id for entry in stream}
    report = sanitize(stream)
    inserted = stream[3]
    assert isinstance(inserted, EventEntry)
    assert inserted.payload == ToolCallResponse(
        id="fs_modify_file_0", content=INTERRUPTED_TOOL_CALL, is_error=True
    )
    assert INTERRUPTED_TOOL_CALL == "Tool call was interrupted."
    assert inserted.timestamp == request.timestamp
    assert inserted.event_id not in before_ids
    assert report.inserted[0].entry is inserted
    assert report.responses_inserted == 1


def test_tool_call_ids_reused_in_a_turn_are_closed_by_count() -> None:
    """Two calls sharing an id and one response: one inserted response closes the other."""
    stream = make_stream(turn(), chat(), call("c"), call("c"), result("c"))
    sanitize(stream)
    assert labels(stream) == ["ts", "chat", "call c", "call c", "error c", "result c"]
    assert pair_events(stream).tool_calls.complete


def test_an_unanswered_inquiry_of_an_earlier_cycle_goes_and_the_answered_one_stays() -> None:
    """A legacy id asked again in a later cycle: cycle 1's request goes, the answered one stays."""
    x, q = "fs_modify_file_0", "fs_modify_file_0.apply_changes"
    stream = make_stream(
        turn(), chat(),
        call(x), ask(q, text="Apply patch one?"), result(x, "failed", is_error=True),
        reply("Retrying."),
        call(x), ask(q, text="Apply patch two?"), answer(q), result(x),
    )  # fmt: skip
    answered = stream[7]
    report = sanitize(stream)
    assert [(r.reason, r.index) for r in report.removed] == [
        (RemovalReason.UNANSWERED_INQUIRY_REQUEST, 3)
    ]
    assert labels(stream) == [
        "ts", "chat", f"call {x}", f"error {x}", "reply", f"call {x}", f"ask {q}", f"answer {q}",
        f"result {x}",
    ]  # fmt: skip
    assert stream[6] is answered
    assert pair_events(stream).complete
    assert not sanitize(stream).changed


def test_a_tool_call_left_open_before_its_id_is_reused_is_closed_where_it_stands() -> None:
    """The interrupted response closes cycle 1's call right after it; cycle 2 keeps its result."""
    x = "fs_modify_file_0"
    stream = make_stream(turn(), chat(), call(x), reply("Again."), call(x), result(x, "applied"))
    report = sanitize(stream)
    assert labels(stream) == [
        "ts",
        "chat",
        f"call {x}",
        f"error {x}",
        "reply",
        f"call {x}",
        f"result {x}",
    ]
    assert [(i.reason, i.index, i.anchor) for i in report.inserted] == [
        (InsertionReason.INTERRUPTED_TOOL_CALL, 3, 2)
    ]
    assert report.removed == ()
    pairs = [
        (pair.request.index, pair.response.index) for pair in pair_events(stream).tool_calls.pairs
    ]
    assert pairs == [(2, 3), (5, 6)]
    assert not sanitize(stream).changed


def test_parallel_calls_sharing_an_id_keep_their_results_in_order() -> None:
    """Duplicate ids in one response pair first with first: sanitize has nothing to repair."""
    x, q = "fs_modify_file_0", "fs_modify_file_0.apply_changes"
    stream = make_stream(
        turn(), chat(), reply(), call(x), call(x), ask(q), ask(q), answer(q, value=False),
        answer(q), result(x, "one"), result(x, "two"),
    )  # fmt: skip
    pairing = pair_events(stream)
    pairs = [
        (p.request.index, p.response.index)
        for p in (*pairing.inquiries.pairs, *pairing.tool_calls.pairs)
    ]
    assert pairs == [(5, 7), (6, 8), (3, 9), (4, 10)]
    assert not sanitize(stream).changed


def test_missing_turn_start_takes_the_first_chat_request_timestamp() -> None:
    """Step 7 inserts the turn start directly before the first chat request, stamped as it."""
    stream = make_stream(config(), chat(), reply(), chat())
    first_chat = stream[1]
    assert isinstance(first_chat, EventEntry)
    report = sanitize(stream)
    inserted = stream[1]
    assert isinstance(inserted, EventEntry)
    assert isinstance(inserted.payload, TurnStart)
    assert inserted.timestamp == first_chat.timestamp
    assert stream[2] is first_chat
    assert report.turn_starts_added == 1
    assert report.turn_starts_collapsed == 0


def test_collapse_keeps_the_last_leading_turn_start() -> None:
    """Of several turn starts before the first chat request, the one nearest it stays."""
    stream = make_stream(turn(), turn(), config(), turn(), chat())
    last = stream[3]
    report = sanitize(stream)
    assert labels(stream) == ["config", "ts", "chat"]
    assert stream[1] is last
    assert report.turn_starts_collapsed == 2


def test_empty_turns_in_the_middle_stay() -> None:
    """Only trailing turn starts go: an empty turn between two others is kept."""
    items: list[Item] = [turn(), chat(), reply(), turn(), turn(), chat(), reply()]
    stream = make_stream(*items)
    assert not sanitize(stream).changed
    assert labels(stream) == ["ts", "chat", "reply", "ts", "ts", "chat", "reply"]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([turn(), turn(), turn()], [], id="only-turn-starts"),
        pytest.param(
            [turn(), config(), turn(), compaction()], ["config", "compaction"], id="with-globals"
        ),
        pytest.param([], [], id="empty"),
        pytest.param(
            [turn(), call("a"), reply(), ask("q"), turn()],
            ["ts", "call a", "error a", "reply"],
            id="no-chat-request",
        ),
        pytest.param([reply(), turn(), reply()], ["reply", "ts", "reply"], id="no-chat-kept"),
    ],
)
def test_streams_without_chat_request(items: list[Item], expected: list[str]) -> None:
    """Without a chat request nothing is dropped as leading and no turn start is inserted."""
    stream = make_stream(*items)
    sanitize(stream)
    assert labels(stream) == expected
    assert not plan_sanitize(stream).report.changed


def test_global_entries_are_the_same_objects_in_the_same_order() -> None:
    """Sanitize keeps every global entry, untouched and in place relative to the others."""
    stream = make_stream(
        config(), reply(), compaction(), turn(), unknown(), turn(), chat(), answer("q"),
        config(), call("a"), turn(), unknown("other_kind"),
    )  # fmt: skip
    globals_before = [entry for entry in stream if not isinstance(entry, EventEntry)]
    assert sanitize(stream).changed
    globals_after = [entry for entry in stream if not isinstance(entry, EventEntry)]
    assert len(globals_after) == len(globals_before) == 5
    assert all(a is b for a, b in zip(globals_after, globals_before, strict=True))


def test_report_names_each_removed_entry() -> None:
    """A removal names its position before sanitizing, its event id, kind and carried id."""
    stream = make_stream(turn(), chat(), answer("q"), reply())
    orphan = stream[2]
    assert isinstance(orphan, EventEntry)
    report = sanitize(stream)
    [removal] = report.removed
    assert removal.as_dict() == {
        "reason": "orphaned_inquiry_response",
        "index": 2,
        "event_id": orphan.event_id,
        "kind": "inquiry_response",
        "id": "q",
    }


def test_report_as_json() -> None:
    """The report is JSON: counts for every reason, and each removal and insertion."""
    stream = make_stream(turn(), turn(), chat(), call("a"), answer("x"))
    data = orjson.loads(orjson.dumps(plan_sanitize(stream).report.as_dict()))
    assert data["changed"] is True
    assert data["counts"] == {
        "removed_before_first_chat_request": 0,
        "removed_orphaned_tool_call_response": 0,
        "removed_orphaned_inquiry_response": 1,
        "removed_unanswered_inquiry_request": 0,
        "removed_trailing_turn_start": 0,
        "removed_collapsed_turn_start": 1,
        "inserted_interrupted_tool_call": 1,
        "inserted_missing_turn_start": 0,
    }
    assert [item["kind"] for item in data["removed"]] == ["turn_start", "inquiry_response"]
    assert [(item["kind"], item["id"], item["anchor"]) for item in data["inserted"]] == [
        ("tool_call_response", "a", 3)
    ]


def test_plan_leaves_the_stream_alone() -> None:
    """Planning (``--dry-run``) changes neither the entries nor the revision."""
    stream = make_stream(reply(), chat(), call("a"), ask("q"))
    before = list(stream)
    revision = stream.revision
    plan = plan_sanitize(stream)
    assert plan.report.changed
    assert list(stream) == before
    assert all(a is b for a, b in zip(stream, before, strict=True))
    assert stream.revision == revision
    assert labels(plan.entries) == ["ts", "chat", "call a", "error a"]


def test_applying_a_plan_replaces_the_entries_once() -> None:
    """Applying bumps the revision; a clean stream is not replaced, so its revision stays."""
    stream = make_stream(chat(), call("a"))
    revision = stream.revision
    plan = plan_sanitize(stream)
    assert plan.apply() is plan.report
    assert stream.revision > revision
    assert tuple(stream) == plan.entries
    clean = stream.revision
    assert not sanitize(stream).changed
    assert stream.revision == clean


def test_a_stale_plan_is_refused() -> None:
    """A plan made before the stream changed would undo that change: it raises instead."""
    stream = make_stream(chat(), call("a"))
    plan = plan_sanitize(stream)
    stream.append(ChatRequest(content="more"))
    with pytest.raises(ValueError, match="changed since this sanitize plan was made"):
        plan.apply()
    assert labels(stream) == ["chat", "call a", "chat"]


def test_sanitized_stream_is_provider_ready() -> None:
    """After sanitize the first events are a turn start and the first chat request."""
    stream = make_stream(
        answer("q"), result("a"), config(), turn(), turn(), reply(), chat(), call("b"), turn()
    )
    sanitize(stream)
    events = [entry.payload for entry in stream if isinstance(entry, EventEntry)]
    assert isinstance(events[0], TurnStart)
    assert isinstance(events[1], ChatRequest)
    assert isinstance(events[2], ToolCallRequest)
    assert events[3] == ToolCallResponse(id="b", content=INTERRUPTED_TOOL_CALL, is_error=True)
    assert len(events) == 4
