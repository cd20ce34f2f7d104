"""RFD 098 request links: stamped as events are appended, read as written by every reader.

Each test names the RFD statement it holds (docs/rfd098-conformance.md lists them).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock, examples
from coordinator_harness import AskingTool
from hypothesis import given, settings
from hypothesis import strategies as st
from reader_streams import answer, ask, call, chat, reply, result, turn

from coordinator import (
    BuiltinExecutor,
    Conversation,
    ConversationStream,
    EventEntry,
    StreamFormatError,
    ToolCoordinator,
    export_markdown,
    load_conversation,
    parse_tools_config,
    sanitize,
    save_conversation,
)
from coordinator.cli._check import request_link_lines, summarize
from coordinator.driver._backend import inquiry_view
from coordinator.stream import LinkProblem, is_linked
from coordinator.wire import EntryDecodeError, decode_stream, encode_stream
from machines import (
    ChatRequest,
    ChatResponse,
    Question,
    ToolCallRequest,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from coordinator.stream import StreamEntry
    from machines import Event

FIXTURES = Path(__file__).parent / "fixtures" / "jp"
STAMP = "2026-06-07 10:00:00.0"


def new_stream() -> ConversationStream:
    """An empty stream with a fixed clock and counting ids."""
    return ConversationStream(clock=FixedClock(), new_id=CountingIds())


def positional(entries: Iterable[StreamEntry]) -> tuple[list[str | None], str | None]:
    """The rule stated again, from positions alone, for streams written in order.

    What each entry should link to, and what an event appended after the
    last would link to.
    """
    links: list[str | None] = []
    latest: str | None = None
    for entry in entries:
        link = None
        if isinstance(entry, EventEntry):
            if isinstance(entry.payload, TurnStart):
                latest = None
            elif isinstance(entry.payload, ChatRequest):
                latest = entry.event_id
            elif is_linked(entry.payload):
                link = latest
        links.append(link)
    return links, latest


def expected_links(entries: Iterable[StreamEntry]) -> list[str | None]:
    """What each entry should link to (see :func:`positional`)."""
    return positional(entries)[0]


def links_of(entries: Iterable[StreamEntry]) -> list[str | None]:
    """The request link each entry carries."""
    return [entry.request_id if isinstance(entry, EventEntry) else None for entry in entries]


def entry(kind: str, **fields: Any) -> dict[str, Any]:
    """A wire entry of ``kind``."""
    return {"event_id": fields.pop("event_id"), "timestamp": STAMP, "type": kind, **fields}


# ------------------------------------------------------------------ stamping


def test_every_answering_event_links_to_its_turns_request_and_nothing_else_links() -> None:
    """Answering kinds carry the chat_request's id; turn_start, chat_request, globals none."""
    stream = new_stream()
    for payload in (turn(), chat(), reply(), call("c"), ask("q"), answer("q"), result("c")):
        stream.append(payload)
    delta = stream.append_config_delta({"model": "m"})
    request = stream[1].event_id
    assert links_of(stream) == [None, None, request, request, request, request, request, None]
    assert not hasattr(delta, "request_id")


def test_an_event_before_its_turns_first_request_is_unlinked() -> None:
    """Before its turn's first chat_request an event is unlinked, never tied to the last turn's."""
    stream = new_stream()
    for payload in (turn(), chat(), reply(), turn(), reply(), chat(), reply()):
        stream.append(payload)
    assert links_of(stream) == [None, None, "e000002", None, None, None, "e000006"]


def test_in_a_turn_of_several_requests_an_event_links_to_the_newest() -> None:
    """An interrupt's second chat_request takes over: what follows answers it."""
    stream = new_stream()
    for payload in (turn(), chat("first"), call("c"), chat("no, this"), result("c"), reply()):
        stream.append(payload)
    assert links_of(stream) == [None, None, "e000002", None, "e000004", "e000004"]


def test_before_any_turn_the_implicit_turn_links_too() -> None:
    """A stream without turn_start (an old file) links what follows its chat_request."""
    stream = new_stream()
    stream.append(reply())
    stream.append(chat())
    stream.append(reply())
    assert links_of(stream) == [None, None, "e000002"]


_STEPS = ["turn", "chat", "reply", "call", "result", "ask", "answer", "config", "reload"]


def _payload(step: str, index: int) -> Event | None:
    """The event a step appends (``None``: the step appends no event)."""
    makers: dict[str, Any] = {
        "turn": turn,
        "chat": lambda: chat(f"message {index}"),
        "reply": reply,
        "call": lambda: call(f"c{index}"),
        "result": lambda: result(f"c{index}"),
        "ask": lambda: ask(f"q{index}"),
        "answer": lambda: answer(f"q{index}"),
    }
    make = makers.get(step)
    return make() if make is not None else None


@settings(max_examples=examples(150))
@given(st.lists(st.sampled_from(_STEPS), max_size=40))
def test_links_hold_for_every_stream_built_through_the_public_api(steps: list[str]) -> None:
    """Whatever is appended, across loads too, each event links to its turn's latest request."""
    stream = new_stream()
    for index, step in enumerate(steps):
        if step == "config":
            stream.append_config_delta({"n": index})
        elif step == "reload":
            # A load sets the active request from the file, as an append kept it.
            active = stream.active_request_id
            stream, _ = decode_stream(encode_stream(stream), clock=FixedClock())
            assert stream.active_request_id == active
        else:
            payload = _payload(step, index)
            assert payload is not None
            stream.append(payload)
    links, active = positional(stream)
    assert links_of(stream) == links
    assert stream.active_request_id == active
    assert stream.request_links().unresolved == ()


# --------------------------------------------------- through the coordinator

TOOL = "apply_patch"
APPLY = Question.boolean("apply", "Apply the patch?")
CONFIG = parse_tools_config(
    {
        "defaults": {"run": "unattended"},
        "tools": {TOOL: {"questions": {"apply": {"answer": True}}}},
    }
)


async def _play(conversation: Conversation, turns: Sequence[Sequence[tuple[bool, int]]]) -> None:
    """Play ``turns``: each a list of batches, each (a chat_request before it?, its calls)."""
    coordinator = ToolCoordinator(
        conversation, tools={TOOL: BuiltinExecutor(AskingTool([APPLY]))}, config=CONFIG
    )
    stream = conversation.stream
    serial = 0
    for batches in turns:
        stream.append(TurnStart())
        for asks_first, calls in batches:
            if asks_first:
                stream.append(ChatRequest(content="Apply them."))
            stream.append(ChatResponse.message("On it."))
            requests = []
            for _ in range(calls):
                serial += 1
                requests.append(ToolCallRequest(id=f"call_{serial}", name=TOOL, arguments={}))
            for request in requests:
                stream.append(request)
            await coordinator.run(requests)
        stream.append(ChatResponse.message("Done."))


_BATCHES = st.lists(st.tuples(st.booleans(), st.integers(1, 3)), min_size=1, max_size=3)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(_BATCHES, min_size=1, max_size=3))
def test_links_hold_for_every_turn_the_coordinator_writes(
    tmp_path_factory: pytest.TempPathFactory, turns: list[list[tuple[bool, int]]]
) -> None:
    """Each record a machine step appends links to its turn's latest request, on disk too."""
    directory = tmp_path_factory.mktemp("links") / "conversation"
    conversation = Conversation.new(base_config={})
    save_conversation(conversation, directory)
    asyncio.run(_play(conversation, turns))
    stream = conversation.stream
    assert links_of(stream) == expected_links(stream)
    assert any(link is not None for link in links_of(stream)) == any(
        asks for batches in turns for asks, _ in batches
    )
    save_conversation(conversation)  # the closing reply, appended after the last batch
    conversation.close()
    saved = orjson.loads((directory / "events.json").read_bytes())
    assert [raw.get("request_id") for raw in saved] == expected_links(stream)


def test_a_turn_continued_after_a_load_links_to_the_request_it_answers(tmp_path: Path) -> None:
    """A load sets the active request: what a continued turn appends links to its request."""
    conversation = Conversation.new(base_config={})
    stream = conversation.stream
    stream.append(TurnStart())
    request = stream.append(ChatRequest(content="Apply it."))
    stream.append(ChatResponse.message("On it."))
    save_conversation(conversation, tmp_path / "c")
    conversation.close()
    loaded = load_conversation(tmp_path / "c")
    assert loaded.stream.active_request_id == request.event_id
    call_request = ToolCallRequest(id="call_1", name=TOOL, arguments={})
    loaded.stream.append(call_request)
    coordinator = ToolCoordinator(
        loaded, tools={TOOL: BuiltinExecutor(AskingTool([APPLY]))}, config=CONFIG
    )
    asyncio.run(coordinator.run([call_request]))
    loaded.close()
    written = links_of(loaded.stream)[3:]
    assert written == [request.event_id] * 4  # the call, its question and answer, its result


# -------------------------------------------------------------- the wire


def test_a_link_is_written_beside_event_id_and_read_back_byte_for_byte() -> None:
    """``request_id`` follows ``event_id``; RFD 098's own example entries re-save unchanged."""
    raw = (FIXTURES / "request_links.jsonl").read_bytes().splitlines()
    stream, _ = decode_stream([orjson.loads(line) for line in raw])
    assert [orjson.dumps(e) for e in encode_stream(stream)] == raw
    assert links_of(stream) == [None, "k3m9x2a", "k3m9x2a"]
    fresh = new_stream()
    fresh.append(chat())
    fresh.append(reply())
    assert list(encode_stream(fresh)[1]) == [
        "event_id",
        "request_id",
        "timestamp",
        "type",
        "message",
    ]


MUST = "'request_id' must be a non-empty string (the event_id of a chat_request), "


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        (
            7,
            MUST + "not an integer",
        ),
        (
            "",
            MUST + "not an empty string",
        ),
        (
            ["k"],
            MUST + "not an array",
        ),
    ],
)
def test_a_link_that_is_not_an_id_is_refused_naming_the_entry(link: object, problem: str) -> None:
    """A ``request_id`` no writer could have written is refused, as JP's strict EventId is."""
    raw = [entry("chat_response", event_id="r", request_id=link, message="hi")]
    with pytest.raises(EntryDecodeError) as caught:
        decode_stream(raw)
    assert str(caught.value) == f"entry 0: chat_response: {problem}"


def test_a_null_link_and_a_link_on_a_kind_that_never_links_are_kept_and_not_read() -> None:
    """``null`` is no link, nor is one on a chat_request: both are written back as read."""
    raw = [
        entry("chat_request", event_id="a", request_id="elsewhere", content="hi"),
        entry("chat_response", event_id="b", request_id=None, message="hi"),
    ]
    stream, _ = decode_stream(raw)
    assert links_of(stream) == [None, None]
    assert stream.request_links().unlinked == 1
    assert encode_stream(stream) == raw


# ------------------------------------------------------------ unresolved links


def _unresolved_stream() -> ConversationStream:
    """A turn whose request was deleted by hand: its answer's links bind nothing."""
    raw = [
        entry("turn_start", event_id="t1"),
        entry("chat_request", event_id="kept", content="still here"),
        entry("chat_response", event_id="r1", request_id="kept", message="fine"),
        entry("turn_start", event_id="t2"),
        entry("chat_response", event_id="r2", request_id="gone", message="answer"),
        entry(
            "tool_call_request", event_id="c1", request_id="gone", id="x", name="n", arguments={}
        ),
        entry("tool_call_response", event_id="c2", id="x", content="b2s=", is_error=False),
        entry("chat_response", event_id="r3", request_id="t2", message="odd"),
        entry("chat_response", event_id="r4", message="legacy"),
    ]
    stream, _ = decode_stream(raw)
    return stream


def test_a_link_binds_nothing_when_its_target_is_gone_or_not_a_request() -> None:
    """Missing and wrong-kind targets are unresolved; an unlinked event is just unlinked."""
    links = _unresolved_stream().request_links()
    assert [(u.index, u.request_id, u.problem) for u in links.unresolved] == [
        (4, "gone", LinkProblem.MISSING),
        (5, "gone", LinkProblem.MISSING),
        (7, "t2", LinkProblem.NOT_A_CHAT_REQUEST),
    ]
    assert links.answers == {2: 1}
    assert links.unlinked == 2  # the tool result (written without a link) and the legacy reply


def test_a_link_to_an_id_the_file_repeated_binds_nothing() -> None:
    """Two entries carried the id: which one the link meant is unknown, so it is unresolved."""
    raw = [
        entry("chat_request", event_id="same", content="one"),
        entry("chat_request", event_id="same", content="a copy"),
        entry("chat_response", event_id="r", request_id="same", message="which?"),
    ]
    stream, repairs = decode_stream(raw)
    assert repairs.regenerated == 1
    (link,) = stream.request_links().unresolved
    assert link.problem is LinkProblem.DUPLICATED
    assert stream[0].event_id == "same"  # the first still holds it


def test_an_unresolved_link_is_kept_as_written(tmp_path: Path) -> None:
    """Load never rewrites a link: the file saved elsewhere holds the same bytes."""
    stream = _unresolved_stream()
    conversation = Conversation(stream, base_config={})
    save_conversation(conversation, tmp_path / "a")
    conversation.close()
    loaded = load_conversation(tmp_path / "a")
    save_conversation(loaded, tmp_path / "b")
    loaded.close()
    assert (tmp_path / "b" / "events.json").read_bytes() == (
        tmp_path / "a" / "events.json"
    ).read_bytes()
    assert [entry.get("request_id") for entry in encode_stream(loaded.stream)][4:6] == [
        "gone",
        "gone",
    ]


def test_sanitize_neither_reads_nor_changes_a_link() -> None:
    """Sanitize keeps unresolved links; the response closing a call carries the call's link."""
    stream = _unresolved_stream()
    before = links_of(stream)
    report = sanitize(stream)
    assert report.removed == ()  # nothing is dropped for a link
    assert links_of(stream) == before
    closing = new_stream()
    for payload in (turn(), chat(), reply(), call("c")):
        closing.append(payload)
    (inserted,) = sanitize(closing).inserted
    assert inserted.entry.request_id == closing[1].event_id


def test_a_provider_is_not_sent_what_binds_nothing_nor_the_other_half_of_its_call() -> None:
    """Unresolved events leave the provider view with their tool pairs; it says why."""
    stream = _unresolved_stream()
    view = stream.provider_view()
    assert [entry.event_id for entry in view.events] == ["kept", "r1", "r4"]
    assert [
        (e.entry.event_id, e.link.request_id, e.link.problem, e.closed_over) for e in view.excluded
    ] == [
        ("r2", "gone", LinkProblem.MISSING, False),
        ("c1", "gone", LinkProblem.MISSING, False),
        ("c2", "gone", LinkProblem.MISSING, True),  # its call's link
        ("r3", "t2", LinkProblem.NOT_A_CHAT_REQUEST, False),
    ]
    assert stream[6].event_id == "c2"  # the stream itself is unchanged


def test_a_question_put_to_the_model_is_not_sent_what_binds_nothing() -> None:
    """The inquiry backend's view leaves out unresolved events as the provider view does."""
    stream = _unresolved_stream()
    view = inquiry_view(stream)
    assert [entry.event_id for entry in view.events] == ["kept", "r1", "r4"]
    assert view.excluded == stream.provider_view().excluded


def test_a_stream_whose_links_all_bind_is_sent_whole() -> None:
    """With every link resolved, the provider view leaves nothing out."""
    stream = new_stream()
    for payload in (turn(), chat(), reply(), call("c"), result("c"), reply()):
        stream.append(payload)
    view = stream.provider_view()
    assert view.excluded == ()
    assert len(view.events) == 5


# ------------------------------------------------------------- check, export


def test_check_reports_each_requests_answers_and_what_binds_nothing() -> None:
    """Check lists who answers which request, each unresolved link and why, what is not sent."""
    summary = summarize(Conversation(_unresolved_stream(), base_config={}))["request_links"]
    assert summary == {
        "linked": 1,
        "unlinked": 2,
        "unresolved": 3,
        "requests": [{"entry": 1, "turn": 1, "event_id": "kept", "answered_by": [2]}],
        "elsewhere": [],
        "unresolved_links": [
            {"entry": 4, "kind": "chat_response", "request_id": "gone", "problem": "missing"},
            {"entry": 5, "kind": "tool_call_request", "request_id": "gone", "problem": "missing"},
            {
                "entry": 7,
                "kind": "chat_response",
                "request_id": "t2",
                "problem": "not_a_chat_request",
            },
        ],
        "not_sent": [4, 5, 6, 7],
    }
    assert request_link_lines(summary) == [
        (
            "  request links (RFD 098): 1 linked to 1 request, 2 unlinked (read by position), "
            "3 unresolved"
        ),
        "    entry 4 (chat_response): its request 'gone' binds nothing: no entry has that id",
        "    entry 5 (tool_call_request): its request 'gone' binds nothing: no entry has that id",
        (
            "    entry 7 (chat_response): its request 't2' binds nothing: the entry with that id "
            "is not a chat_request"
        ),
        "    not sent to a model: entries 4, 5, 6, 7 (a tool call's halves together)",
    ]


def _moved_stream() -> ConversationStream:
    """An answer moved by hand into the next turn: its link still names the first request."""
    raw = [
        entry("turn_start", event_id="t1"),
        entry("chat_request", event_id="first", content="one"),
        entry("turn_start", event_id="t2"),
        entry("chat_request", event_id="second", content="two"),
        entry("chat_response", event_id="r", request_id="first", message="answers one"),
    ]
    stream, _ = decode_stream(raw)
    return stream


def test_check_and_export_show_an_answer_whose_link_is_not_its_place() -> None:
    """An event linked to another request than the one it follows is named by check and export."""
    stream = _moved_stream()
    summary = summarize(Conversation(stream, base_config={}))["request_links"]
    assert summary["elsewhere"] == [
        {"entry": 4, "kind": "chat_response", "answers": 1, "follows": 3}
    ]
    assert request_link_lines(summary)[-1] == (
        "    entry 4 (chat_response) answers the request at entry 1 (not the one it follows, "
        "at entry 3)"
    )
    text = export_markdown(stream)
    assert (
        "### Assistant\n\n_In answer to the user's message of turn 1 (at 2026-06-07 10:00:00.0), "
        "not the one it follows here._\n\nanswers one"
    ) in text


def test_export_says_when_a_link_binds_nothing_and_is_silent_otherwise() -> None:
    """An unresolved link gets a note under its event; linked and unlinked events get none."""
    text = export_markdown(_unresolved_stream())
    assert text.count("binds nothing") == 3
    assert "_Its request link `gone` binds nothing (no entry has that id): it answers no" in text
    plain = new_stream()
    for payload in (turn(), chat(), reply()):
        plain.append(payload)
    assert "_In answer" not in export_markdown(plain)
    assert "binds nothing" not in export_markdown(plain)


def test_a_link_shown_by_check_is_escaped_for_the_terminal(tmp_path: Path) -> None:
    """A request id holding control characters never reaches the terminal raw."""
    from coordinator.cli._main import main  # noqa: PLC0415 - the command, as a user runs it

    raw = [entry("chat_response", event_id="r", request_id="\x1b[2Jgone", message="hi")]
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "events.json").write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2) + b"\n")
    (directory / "base_config.json").write_bytes(b"{}\n")
    out = io.StringIO()
    main(["check", str(directory)], out=out)
    assert "\x1b" not in out.getvalue()
    assert "\\x1b[2Jgone" in out.getvalue()


# ------------------------------------------------------------ ids retired


def test_an_id_an_entry_took_away_is_never_given_again() -> None:
    """After an entry is removed, its id is not handed out: a link to it stays unresolved."""
    ids = iter(["a", "b", "a", "b", "c"])
    stream = ConversationStream(clock=FixedClock(), new_id=lambda: next(ids))
    stream.append(chat())
    stream.append(reply())
    stream.replace([stream[1]])  # the request "a" is deleted
    assert stream.fresh_id() == "c"
    (link,) = stream.request_links().unresolved
    assert (link.request_id, link.problem) == ("a", LinkProblem.MISSING)


def test_a_file_that_cannot_be_read_for_its_link_is_left_as_it_was(tmp_path: Path) -> None:
    """A refused link raises naming the file and entry, and nothing is written."""
    directory = tmp_path / "c"
    directory.mkdir()
    body = orjson.dumps([entry("chat_response", event_id="r", request_id=3, message="hi")])
    (directory / "events.json").write_bytes(body)
    with pytest.raises(StreamFormatError, match=r"entry 0: chat_response: 'request_id' must be"):
        load_conversation(directory)
    assert (directory / "events.json").read_bytes() == body
