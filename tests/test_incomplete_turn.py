"""Finding the turn a dead process left, and what of it each open tool call asked (RFD 023).

Detection: each of RFD 023's three conditions of a complete turn, global and
unknown entries ignored, a stream without ``turn_start``, an empty turn, a
tool-call id reused across cycles. Attribution of inquiries to the open
calls: by position and source, never by reading an inquiry id (RFD 082);
``question.id`` keys the replayed answers; parallel calls of one tool; JP's
requests without ``question.id`` (attributed, never replayed by id);
ambiguity, which never replays an answer.
"""

from __future__ import annotations

from reader_streams import (
    answer,
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

from coordinator import ConversationStream, complete_turns, find_incomplete_turn
from coordinator.stream import IncompleteTurn, ResumePhase
from machines import (
    AnswerType,
    CancellationReason,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    SelectOption,
)


def asked(
    inquiry_id: str,
    question_id: str | None,
    *,
    tool: str = "deploy",
    answer_type: AnswerType | None = None,
    text: str = "Which?",
    source: InquirySource | None = None,
) -> InquiryRequest:
    """An inquiry request of tool ``tool`` (``question_id`` None: written without one, as JP)."""
    return InquiryRequest(
        id=inquiry_id,
        source=source or InquirySource.tool(tool),
        question=InquiryQuestion(
            text=text, answer_type=answer_type or AnswerType.text(), id=question_id
        ),
    )


def incomplete(stream: ConversationStream) -> IncompleteTurn:
    """The stream's incomplete turn (there must be one)."""
    found = find_incomplete_turn(stream)
    assert found is not None
    return found


# ----------------------------------------------------------------- detection


def test_a_complete_turn_is_not_incomplete() -> None:
    """Request, calls answered, a response after the last result: complete; earlier turns too."""
    stream = make_stream(
        turn(), chat(), call("c1"), result("c1"), reply(),
        turn(), chat(), reply(),
    )  # fmt: skip
    assert find_incomplete_turn(stream) is None
    assert len(complete_turns(stream)) == 2


def test_no_model_response_after_the_user_message_awaits_the_model() -> None:
    """Condition 1: a chat_request, no chat_response after it: awaiting the model, not blocked."""
    found = incomplete(make_stream(turn(), chat("first"), reply(), turn(), chat("second")))
    assert found.phase is ResumePhase.AWAITING_MODEL
    assert not found.blocked
    assert found.status == "interrupted (pending LLM response)"
    assert found.turn.index == 1


def test_an_open_tool_call_blocks_the_turn() -> None:
    """Condition 2: a tool call without its response: executing, blocked, the call open."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "lint"), call("c2", "deploy"), result("c1")
    )
    found = incomplete(stream)
    assert found.phase is ResumePhase.EXECUTING
    assert found.blocked
    assert [pair.id for pair in found.finished] == ["c1"]
    assert [call.tool_call.id for call in found.open] == ["c2"]
    assert not found.open[0].ran
    assert found.status == "interrupted (pending tool execution)"
    assert complete_turns(stream) == []  # the one turn did not finish


def test_results_without_a_model_response_after_them_await_the_follow_up() -> None:
    """Condition 3: every call answered, no response after the last result: not blocked."""
    found = incomplete(make_stream(turn(), chat(), reply(), call("c1"), result("c1")))
    assert found.phase is ResumePhase.AWAITING_FOLLOW_UP
    assert not found.blocked
    assert found.status == "interrupted (pending follow-up)"


def test_global_and_unknown_entries_do_not_count() -> None:
    """A config_delta, a compaction or an unknown entry after the response: still complete."""
    stream = make_stream(
        turn(), chat(), call("c1"), result("c1"), reply(), config(), compaction(), unknown()
    )
    assert find_incomplete_turn(stream) is None
    blocked = make_stream(turn(), chat(), reply(), call("c1"), config(), unknown())
    assert [call.tool_call.id for call in incomplete(blocked).open] == ["c1"]


def test_a_stream_without_turn_start_is_one_implicit_turn() -> None:
    """Events before any turn_start form the turn examined (JP's older files)."""
    found = incomplete(make_stream(chat(), reply(), call("c1")))
    assert not found.turn.marked
    assert [call.tool_call.id for call in found.open] == ["c1"]


def test_an_empty_turn_is_not_incomplete() -> None:
    """A turn of nothing but its turn_start (and global entries) holds nothing to continue."""
    assert find_incomplete_turn(make_stream(turn(), chat(), reply(), turn(), config())) is None
    assert find_incomplete_turn(make_stream()) is None


def test_only_the_last_turn_is_examined() -> None:
    """An earlier turn left open is sanitize's business; the last one here is complete."""
    stream = make_stream(turn(), chat(), reply(), call("c1"), turn(), chat(), reply())
    assert find_incomplete_turn(stream) is None


def test_a_call_id_reused_in_a_later_cycle_is_paired_by_cycle() -> None:
    """The later call of a reused id is the open one; the earlier, answered, is finished."""
    stream = make_stream(
        turn(), chat(), reply("one"), call("fs_0"), result("fs_0"), reply("two"), call("fs_0")
    )
    found = incomplete(stream)
    assert [pair.request.index for pair in found.finished] == [3]
    assert [call.request.index for call in found.open] == [6]
    assert found.stuck == ()


def test_a_request_a_later_cycle_asked_again_is_stuck() -> None:
    """Open in cycle 1, its id asked again and answered in cycle 2: nothing appended closes it."""
    stream = make_stream(
        turn(), chat(), reply("one"), call("fs_0"), reply("two"), call("fs_0"), result("fs_0")
    )
    found = incomplete(stream)
    assert [located.index for located in found.stuck] == [3]
    assert found.open == ()
    assert found.blocked


def test_the_view_changes_nothing_and_lists_every_recorded_inquiry_id() -> None:
    """Finding the turn leaves the stream's revision alone; every inquiry id is listed."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("c1.target.1", "target"), answer("c1.target.1", "staging"),
        asked("c1.token.1", "token", answer_type=AnswerType.secret()),
    )  # fmt: skip
    revision = stream.revision
    found = incomplete(stream)
    assert stream.revision == revision
    assert found.recorded_inquiry_ids == {"c1.target.1", "c1.token.1"}


# --------------------------------------------------------------- attribution


def test_the_memos_example_replays_the_answer_and_waits_on_the_secret() -> None:
    """RFD 023 §6.4: call_2 finished; call_1 replays target, its secret waits."""
    stream = make_stream(
        turn(), chat("Ship it."), reply("Deploying."),
        call("call_1", "deploy"), call("call_2", "lint"),
        asked("call_1.target.1", "target", answer_type=AnswerType.select(["staging", "prod"])),
        answer("call_1.target.1", "staging"),
        result("call_2"),
        asked("call_1.token.1", "token", answer_type=AnswerType.secret()),
    )  # fmt: skip
    found = incomplete(stream)
    assert [pair.id for pair in found.finished] == ["call_2"]
    (open_call,) = found.open
    assert dict(open_call.replay) == {"target": "staging"}
    assert open_call.recorded.asked == {"target": 1, "token": 1}
    assert open_call.waiting is not None
    assert open_call.waiting.id == "call_1.token.1"
    assert open_call.recorded.waiting is not None
    assert open_call.recorded.waiting.question_id == "token"
    assert found.status == "waiting-for-input (deploy)"
    assert found.stray == ()


def test_a_redacted_answer_is_asked_again_and_the_latest_answer_wins() -> None:
    """Secrets are never replayed; of two answers to one question, the later is."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("c1.pin.1", "pin", answer_type=AnswerType.secret()), redact("c1.pin.1"),
        asked("c1.env.1", "env"), answer("c1.env.1", "a"),
        asked("c1.env.2", "env"), answer("c1.env.2", "b"),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert dict(open_call.replay) == {"env": "b"}
    assert open_call.reask == {"pin"}
    assert open_call.waiting is None
    assert open_call.ran


def test_a_last_question_cancelled_with_nothing_after_is_declined() -> None:
    """Cancelled by the user, the call's response never written: declined, not waiting."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("c1.go.1", "go"), cancel("c1.go.1"),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert open_call.declined is not None
    assert open_call.recorded.declined is not None
    assert open_call.recorded.declined[1].reason is CancellationReason.USER


def test_a_question_closed_as_interrupted_is_not_declined() -> None:
    """Closed as interrupted by a continued run that stopped again: the call runs, not declined."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("c1.go.1", "go"), cancel("c1.go.1", CancellationReason.INTERRUPTED),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert open_call.declined is None
    assert open_call.ran
    assert dict(open_call.replay) == {}


def test_parallel_calls_of_one_tool_are_ambiguous_and_never_replayed() -> None:
    """Two open deploys of one response, each asked: neither gets an answer; the open is stray."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"), call("c2", "deploy"),
        asked("c1.env.1", "env"), answer("c1.env.1", "prod"),
        asked("c2.env.1", "env"),
    )  # fmt: skip
    found = incomplete(stream)
    assert [(call.tool_call.id, dict(call.replay), call.ran) for call in found.open] == [
        ("c1", {}, False),
        ("c2", {}, False),
    ]
    assert [located.id for located in found.stray] == ["c2.env.1"]


def test_a_finished_call_of_the_same_tool_leaves_the_open_one_unambiguous() -> None:
    """One deploy answered before the question was asked: only the open deploy could ask it."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"), call("c2", "deploy"), result("c1"),
        asked("c2.env.1", "env"), answer("c2.env.1", "prod"),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert (open_call.tool_call.id, dict(open_call.replay)) == ("c2", {"env": "prod"})


def test_the_source_names_the_tool() -> None:
    """A question of tool lint is never attributed to an open deploy call."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"), asked("x.q.1", "q", tool="lint"),
    )  # fmt: skip
    found = incomplete(stream)
    assert not found.open[0].ran
    assert [located.id for located in found.stray] == ["x.q.1"]


def test_ask_users_question_is_the_assistants() -> None:
    """A question whose source is the assistant belongs to the open ask_user call."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "ask_user"),
        asked("c1.answer.1", "answer", source=InquirySource.assistant()),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert open_call.waiting is not None
    renamed = find_incomplete_turn(stream, assistant_tools=("ask",))
    assert renamed is not None
    assert not renamed.open[0].ran


def test_a_question_asked_in_another_model_response_is_not_the_calls() -> None:
    """Position: a chat message between the call and the question puts them in other cycles."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"), reply("meanwhile"),
        asked("c1.env.1", "env"),
    )  # fmt: skip
    found = incomplete(stream)
    assert not found.open[0].ran
    assert [located.id for located in found.stray] == ["c1.env.1"]


def test_jp_requests_without_question_ids_are_attributed_by_position_and_source_alone() -> None:
    """JP writes no question.id: the one deploy of the response asked them, whatever the ids say.

    Its question ids are not known (RFD 082: an inquiry id is opaque, never
    parsed), so nothing is replayed by id; the requests show the call ran,
    count towards its budget, and the open one waits.
    """
    stream = make_stream(
        turn(), chat(), reply(), call("toolu_1", "deploy"),
        asked("toolu_1.apply_changes.1", None), answer("toolu_1.apply_changes.1", True),
        asked("opaque-7", None, text="Token?", answer_type=AnswerType.secret()),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert open_call.ran
    assert open_call.question_ids == (None, None)
    assert dict(open_call.replay) == {}
    assert open_call.reask == frozenset()
    assert open_call.waiting is not None
    assert open_call.waiting.id == "opaque-7"
    assert open_call.recorded.waiting is not None
    assert open_call.recorded.waiting.question_id is None
    assert sum(open_call.recorded.asked.values()) == 2
    assert incomplete(stream).stray == ()


def test_jp_requests_of_parallel_calls_of_one_tool_are_ambiguous_whatever_their_ids() -> None:
    """Ids that start with each call's id do not attribute them: both deploys could have asked."""
    stream = make_stream(
        turn(), chat(), reply(), call("toolu_1", "deploy"), call("toolu_2", "deploy"),
        asked("toolu_1.apply_changes.1", None), answer("toolu_1.apply_changes.1", True),
        asked("toolu_2.target", None),
    )  # fmt: skip
    found = incomplete(stream)
    assert [(dict(call.replay), call.ran) for call in found.open] == [({}, False), ({}, False)]
    assert [located.id for located in found.stray] == ["toolu_2.target"]


def test_an_inquiry_id_that_reads_like_a_question_id_is_not_read() -> None:
    """'c.q.2.1' recorded without a question id: the open call asked it; no id is made up."""
    stream = make_stream(
        turn(), chat(), reply(), call("c", "deploy"), asked("c.q.2.1", None), answer("c.q.2.1", 1),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert open_call.ran
    assert dict(open_call.replay) == {}
    assert open_call.question_ids == (None,)


def test_with_question_ids_the_inquiry_id_is_never_read() -> None:
    """Recorded question ids attribute by position and source alone, whatever the id looks like."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("opaque-7", "env"), answer("opaque-7", "prod"),
    )  # fmt: skip
    (open_call,) = incomplete(stream).open
    assert dict(open_call.replay) == {"env": "prod"}


def test_an_earlier_open_request_of_a_call_is_stray() -> None:
    """A call holds one open question at a time: an open one before its next is stray."""
    stream = make_stream(
        turn(), chat(), reply(), call("c1", "deploy"),
        asked("c1.env.1", "env"), asked("c1.pin.1", "pin", answer_type=AnswerType.secret()),
    )  # fmt: skip
    found = incomplete(stream)
    assert found.open[0].waiting is not None
    assert found.open[0].waiting.id == "c1.pin.1"
    assert [located.id for located in found.stray] == ["c1.env.1"]


def test_a_select_recorded_without_options_reads_as_text_when_closed() -> None:
    """A record the tool could not have asked still gives a question to close it with."""
    recorded = InquiryQuestion(text="Pick", answer_type=AnswerType.select([]), default="x")
    question = recorded.as_asked("pick")
    assert (question.id, question.answer_type, question.default) == (
        "pick",
        AnswerType.text(),
        "x",
    )
    options = InquiryQuestion(
        text="Pick", answer_type=AnswerType.select([SelectOption(value="a")]), default="zz"
    )
    assert options.as_asked("pick").default == "zz"  # kept as recorded, whether it fits or not
