"""Pairing inquiries and tool calls within their turns, by id then by order."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reader_streams import (
    Item,
    answer,
    ask,
    call,
    cancel,
    chat,
    compaction,
    config,
    make_stream,
    redact,
    reply,
    result,
    turn,
    unknown,
)

from coordinator import EventEntry, pair_events
from coordinator.stream import PairCounts, Pairing
from coordinator.wire import decode_stream
from machines import (
    Answered,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryRequest,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from coordinator.stream import StreamEntry
    from machines import JsonValue


def pair_positions(pairing: Pairing) -> list[tuple[int, int]]:
    """Each pair as (request position, response position)."""
    return [(pair.request.index, pair.response.index) for pair in pairing.pairs]


@pytest.mark.parametrize(
    ("items", "pairs", "pending", "orphaned"),
    [
        pytest.param([turn(), ask("q"), answer("q")], [(1, 2)], [], [], id="one-pair"),
        pytest.param(
            [turn(), ask("q"), ask("r"), cancel("r"), redact("q")],
            [(2, 3), (1, 4)],
            [],
            [],
            id="interleaved-by-id",
        ),
        pytest.param(
            [turn(), ask("q"), ask("q"), answer("q")], [(1, 3)], [2], [], id="legacy-dup-first"
        ),
        pytest.param(
            [turn(), ask("q"), answer("q"), ask("q"), answer("q")],
            [(1, 2), (3, 4)],
            [],
            [],
            id="legacy-dup-two-pairs",
        ),
        pytest.param(
            [turn(), ask("q"), ask("q"), answer("q", value=False), answer("q")],
            [(1, 3), (2, 4)],
            [],
            [],
            id="legacy-dup-fifo",
        ),
        pytest.param([turn(), answer("q"), ask("q")], [], [2], [1], id="response-first"),
        pytest.param([turn(), ask("q")], [], [1], [], id="pending"),
        pytest.param([turn(), answer("q")], [], [], [1], id="orphaned"),
        pytest.param(
            [turn(), ask("q"), answer("q"), answer("q")], [(1, 2)], [], [3], id="extra-response"
        ),
    ],
)
def test_inquiries_pair_by_id_then_by_order(
    items: list[Item], pairs: list[tuple[int, int]], pending: list[int], orphaned: list[int]
) -> None:
    """A response closes the earliest open request of its id before it in the turn."""
    pairing = pair_events(make_stream(*items)).inquiries
    assert pair_positions(pairing) == pairs
    assert [located.index for located in pairing.pending] == pending
    assert [located.index for located in pairing.orphaned] == orphaned


def test_legacy_ids_read_from_the_wire_pair_by_order() -> None:
    """RFD 082 "Legacy ID pairing": two-segment ids, duplicates included, pair up on read."""
    asked = {
        "type": "inquiry_request",
        "source": {"source": "tool", "name": "fs_modify_file"},
        "question": {"text": "Apply?", "answer_type": {"type": "boolean"}},
    }
    answered = {"type": "inquiry_response"}
    raw = [
        {"timestamp": "2026-03-05 21:21:10.0", "type": "turn_start"},
        {"timestamp": "2026-03-05 21:21:11.0", "type": "chat_request", "content": "go"},
        {"timestamp": "2026-03-05 21:21:12.0", "id": "toolu_01.apply_changes"} | asked,
        {"timestamp": "2026-03-05 21:21:13.0", "id": "toolu_01.apply_changes"}
        | answered
        | {"answer": False},
        {"timestamp": "2026-03-05 21:21:14.0", "id": "toolu_01.apply_changes"} | asked,
        {"timestamp": "2026-03-05 21:21:15.0", "id": "toolu_01.apply_changes"}
        | answered
        | {"answer": True},
        {"timestamp": "2026-03-05 21:21:16.0", "id": "toolu_02.apply_changes"} | asked,
        {"timestamp": "2026-03-05 21:21:17.0", "id": "toolu_02.apply_changes"}
        | answered
        | {"answer": True},
    ]
    stream, _ = decode_stream(orjson.loads(orjson.dumps(raw)))

    pairing = pair_events(stream).inquiries
    assert pair_positions(pairing) == [(2, 3), (4, 5), (6, 7)]
    answers = [pair.response.entry.payload for pair in pairing.pairs]
    assert answers == [
        Answered(id="toolu_01.apply_changes", answer=False),
        Answered(id="toolu_01.apply_changes", answer=True),
        Answered(id="toolu_02.apply_changes", answer=True),
    ]
    assert pairing.complete


@pytest.mark.parametrize(
    ("request_id", "response_id"),
    [
        ("call_1.confirm.1", "call_1.confirm"),
        ("call_1.confirm", "call_1.confirm.1"),
        ("call_1.confirm.1", "call_1.confirm.2"),
        ("call_1.confirm.1", "call_2.confirm.1"),
        ("a.b", "a"),
    ],
)
def test_ids_are_opaque(request_id: str, response_id: str) -> None:
    """Ids pair only when equal: no segment of an id is parsed or matched on its own."""
    pairing = pair_events(make_stream(turn(), ask(request_id), answer(response_id))).inquiries
    assert pairing.counts == PairCounts(paired=0, pending=1, orphaned=1)


def test_nothing_pairs_across_turns() -> None:
    """A request open at the end of its turn stays pending though the next turn answers its id."""
    stream = make_stream(turn(), ask("q"), call("c"), turn(), answer("q"), result("c"))
    pairing = pair_events(stream)
    for kind in (pairing.inquiries, pairing.tool_calls):
        assert [turn.counts for turn in kind.turns] == [
            PairCounts(pending=1),
            PairCounts(orphaned=1),
        ]
        assert kind.pairs == ()


def test_tool_call_ids_reused_within_and_across_turns() -> None:
    """Synthetic tool-call ids reused in a turn pair by order, and again in the next turn."""
    stream = make_stream(
        turn(),
        chat(),
        call("fs_modify_file_0"),
        result("fs_modify_file_0", "first"),
        call("fs_modify_file_0"),
        result("fs_modify_file_0", "second"),
        turn(),
        chat(),
        call("fs_modify_file_0"),
        result("fs_modify_file_0", "third"),
    )
    pairing = pair_events(stream).tool_calls
    assert pair_positions(pairing) == [(2, 3), (4, 5), (8, 9)]
    assert [turn.counts.paired for turn in pairing.turns] == [2, 1]
    assert pairing.complete


# A turn where a legacy tool-call id and so its two-segment inquiry id come
# back in a later cycle: cycle 1's question went unanswered (the backend
# failed, and its call ended in an error); cycle 2 asks again and is answered.
_X = "fs_modify_file_0"
_Q = "fs_modify_file_0.apply_changes"


@pytest.mark.parametrize(
    ("items", "pairs", "pending"),
    [
        pytest.param(
            [
                turn(), chat(),
                call(_X), ask(_Q, text="Apply patch one?"), result(_X, is_error=True),
                reply("Retrying."),
                call(_X), ask(_Q, text="Apply patch two?"), answer(_Q), result(_X),
            ],
            [(7, 8)],
            [3],
            id="after-a-message",
        ),
        pytest.param(
            [
                turn(), chat(),
                call(_X), ask(_Q), result(_X, is_error=True),
                call(_X), ask(_Q), answer(_Q), result(_X),
            ],
            [(6, 7)],
            [3],
            id="after-a-new-call",
        ),
        pytest.param(
            [turn(), chat(), call(_X), call(_X), ask(_Q), ask(_Q), answer(_Q), cancel(_Q)],
            [(4, 6), (5, 7)],
            [],
            id="parallel-calls-same-cycle",
        ),
    ],
)  # fmt: skip
def test_an_inquiry_asked_again_in_a_later_cycle_takes_the_answer(
    items: list[Item], pairs: list[tuple[int, int]], pending: list[int]
) -> None:
    """An id asked after a new message or call supersedes its open request; in one cycle, FIFO."""
    pairing = pair_events(make_stream(*items)).inquiries
    assert pair_positions(pairing) == pairs
    assert [located.index for located in pairing.pending] == pending


@pytest.mark.parametrize(
    ("items", "pairs", "pending"),
    [
        pytest.param(
            [turn(), chat(), call(_X), reply("Trying again."), call(_X), result(_X)],
            [(4, 5)],
            [2],
            id="after-a-message",
        ),
        pytest.param(
            [turn(), chat(), call(_X), chat("Go on."), call(_X), result(_X)],
            [(4, 5)],
            [2],
            id="after-a-chat-request",
        ),
        pytest.param(
            [turn(), chat(), reply(), call(_X), call(_X), result(_X, "1"), result(_X, "2")],
            [(3, 5), (4, 6)],
            [],
            id="parallel-same-cycle",
        ),
        pytest.param(
            [turn(), chat(), call(_X), reply("Reading."), result(_X)],
            [(2, 4)],
            [],
            id="not-asked-again",
        ),
    ],
)
def test_a_tool_call_id_reused_in_a_later_cycle_takes_the_result(
    items: list[Item], pairs: list[tuple[int, int]], pending: list[int]
) -> None:
    """A call id made again after a message supersedes its open call; in one response, by order."""
    pairing = pair_events(make_stream(*items)).tool_calls
    assert pair_positions(pairing) == pairs
    assert [located.index for located in pairing.pending] == pending


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([chat(), call("a"), result("a"), turn(), chat()], id="implicit-leading"),
        pytest.param([config(), turn(), chat(), turn(), turn(), chat()], id="empty-mid-turn"),
        pytest.param([config(), unknown(), turn(), call("a")], id="globals-before-first"),
        pytest.param([], id="empty"),
        pytest.param([config(), compaction()], id="only-globals"),
        pytest.param([turn(), turn()], id="only-turn-starts"),
    ],
)
def test_turn_numbers_match_the_stream(items: list[Item]) -> None:
    """There is one turn pairing per turn of the stream, numbered as the stream numbers turns."""
    stream = make_stream(*items)
    expected = [turn.index for turn in stream.turns()]
    pairing = pair_events(stream)
    assert [turn.turn for turn in pairing.inquiries.turns] == expected
    assert [turn.turn for turn in pairing.tool_calls.turns] == expected


def test_global_entries_neither_pair_nor_split_turns() -> None:
    """Global entries between a request and its response change nothing."""
    stream = make_stream(
        turn(), ask("q"), config(), call("c"), compaction(), unknown(), result("c"), answer("q")
    )
    pairing = pair_events(stream)
    assert pair_positions(pairing.inquiries) == [(1, 7)]
    assert pair_positions(pairing.tool_calls) == [(3, 6)]
    assert pairing.complete


def test_counts_add_up_over_turns() -> None:
    """Totals are the sum of the turns; ``complete`` only when nothing is open or orphaned."""
    stream = make_stream(
        turn(), chat(), ask("q"), answer("q"), ask("r"),
        turn(), chat(), answer("s"), call("c"), result("c"), reply(),
    )  # fmt: skip
    pairing = pair_events(stream)
    assert pairing.inquiries.counts == PairCounts(paired=1, pending=1, orphaned=1)
    assert pairing.tool_calls.counts == PairCounts(paired=1)
    assert pairing.inquiries.counts.as_dict() == {"paired": 1, "pending": 1, "orphaned": 1}
    assert not pairing.inquiries.turns[0].complete
    assert not pairing.complete
    assert pairing.tool_calls.complete


# ------------------------------------------------------------------ property


_IDS = ("a", "a.1", "b")


def _items() -> st.SearchStrategy[Item]:
    ids = st.sampled_from(_IDS)
    return st.one_of(
        st.just(turn()),
        st.just(chat()),
        st.just(reply()),
        ids.map(ask),
        ids.map(answer),
        ids.map(cancel),
        ids.map(redact),
        ids.map(call),
        ids.map(result),
        st.sampled_from([config(), compaction(), unknown()]),
    )


def _reference(
    entries: list[StreamEntry],
    request_type: type,
    response_types: tuple[type, ...],
    cycle_starts: tuple[type, ...],
) -> tuple[set[tuple[int, int]], set[int]]:
    """The pairs and pending requests by a quadratic scan, written independently.

    A response takes the earliest unused request of its id earlier in its
    turn, passing over one that a later request of the id, made before the
    response in another cycle (a different count of ``cycle_starts`` since
    the turn began), superseded.
    """

    def payload_at(index: int) -> object:
        entry = entries[index]
        return entry.payload if isinstance(entry, EventEntry) else None

    def same_id(one: object, other: object) -> bool:
        return getattr(one, "id", None) == getattr(other, "id", None)

    def cycle(turn_start: int, index: int) -> int:
        return sum(isinstance(payload_at(i), cycle_starts) for i in range(turn_start, index))

    def superseded(turn_start: int, request: int, before: int) -> bool:
        return any(
            isinstance(payload_at(later), request_type)
            and same_id(payload_at(later), payload_at(request))
            and cycle(turn_start, later) != cycle(turn_start, request)
            for later in range(request + 1, before)
        )

    pairs: set[tuple[int, int]] = set()
    used: set[int] = set()
    turn_start = 0
    for index in range(len(entries)):
        payload = payload_at(index)
        if isinstance(payload, TurnStart):
            turn_start = index
        elif isinstance(payload, response_types):
            for earlier in range(turn_start, index):
                candidate = payload_at(earlier)
                if (
                    earlier not in used
                    and isinstance(candidate, request_type)
                    and same_id(candidate, payload)
                    and not superseded(turn_start, earlier, index)
                ):
                    used.add(earlier)
                    pairs.add((earlier, index))
                    break
    requests = {i for i in range(len(entries)) if isinstance(payload_at(i), request_type)}
    return pairs, requests - used


@given(st.lists(_items(), max_size=40))
def test_pairing_agrees_with_a_quadratic_reference(items: list[Item]) -> None:
    """Pairs and pending requests are those of a by-cycle, by-order scan of each turn."""
    stream = make_stream(*items)
    entries = list(stream)
    pairing = pair_events(stream)
    chat_messages = (ChatRequest, ChatResponse)
    kinds = (
        (
            InquiryRequest,
            (Answered, Cancelled, Redacted),
            (*chat_messages, ToolCallRequest),
            pairing.inquiries,
        ),
        (ToolCallRequest, (ToolCallResponse,), chat_messages, pairing.tool_calls),
    )
    for request_type, response_types, cycle_starts, found in kinds:
        pairs, pending = _reference(entries, request_type, response_types, cycle_starts)
        assert set(pair_positions(found)) == pairs
        assert {located.index for located in found.pending} == pending


@given(st.lists(_items(), max_size=40))
def test_every_request_and_response_is_accounted_for_once(items: list[Item]) -> None:
    """Each request is paired or pending, each response paired or orphaned, exactly once."""
    stream = make_stream(*items)
    pairing = pair_events(stream)
    turns = stream.turns()
    for found in (pairing.inquiries, pairing.tool_calls):
        requests = [pair.request.index for pair in found.pairs]
        requests += [located.index for located in found.pending]
        responses = [pair.response.index for pair in found.pairs]
        responses += [located.index for located in found.orphaned]
        assert len(set(requests)) == len(requests)
        assert len(set(responses)) == len(responses)
        for turn_pairing in found.turns:
            bounds = turns[turn_pairing.turn]
            for pair in turn_pairing.pairs:
                assert bounds.start < pair.response.index < bounds.stop
                assert bounds.start <= pair.request.index < pair.response.index
                assert pair.request.id == pair.response.id == pair.id
    payloads = [entry.payload for entry in stream if isinstance(entry, EventEntry)]
    for found, request_type in (
        (pairing.inquiries, InquiryRequest),
        (pairing.tool_calls, ToolCallRequest),
    ):
        counts = found.counts
        assert counts.paired + counts.pending == sum(isinstance(p, request_type) for p in payloads)


@attrs.frozen(kw_only=True)
class _LoggedCall(ToolCallRequest):
    """A tool-call request of an embedder's own, a subclass of the record."""


@attrs.frozen(kw_only=True)
class _LoggedResult(ToolCallResponse):
    """A tool-call response of an embedder's own."""


@attrs.frozen(kw_only=True)
class _LoggedChat(ChatRequest):
    """A chat request of an embedder's own: nothing to pair."""


def test_a_subclass_of_a_record_is_paired_as_its_record_is() -> None:
    """Pairing goes by what a payload is, not only by its exact type."""
    arguments: dict[str, JsonValue] = {}
    stream = make_stream(
        turn(),
        _LoggedChat(content="hi"),
        _LoggedCall(id="c", name="t", arguments=arguments),
        call("d"),
        _LoggedResult(id="d", content="ok", is_error=False),
        result("c"),
    )
    for _ in range(2):  # the second time, from what the first remembered of the types
        pairing = pair_events(stream)
        assert pair_positions(pairing.tool_calls) == [(3, 4), (2, 5)]
        assert pairing.inquiries.counts == PairCounts()
