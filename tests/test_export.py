"""Markdown export: RFD 082's response lines, readable events, no secret ever shown."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from conftest import jp_params
from hypothesis import given
from hypothesis import strategies as st
from reader_streams import (
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

from coordinator import Conversation, export_markdown, load_conversation, save_conversation
from coordinator._text import REASON_SHOWN
from coordinator.stream._export import describe_inquiry_response
from coordinator.wire._codec import unstructure_event
from machines import (
    Answered,
    AnswerType,
    AnyCancellationReason,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquiryResponse,
    InquirySource,
    JsonValue,
    Redacted,
    SelectOption,
    parse_cancellation_reason,
    wording,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (True, "Answer: true"),
        (False, "Answer: false"),
        ("main", 'Answer: "main"'),
        ({"a": [1, None]}, 'Answer: {"a":[1,null]}'),
        ("two\nlines", 'Answer: "two\\nlines"'),
    ],
)
def test_answered_renders_its_value_as_json(value: JsonValue, line: str) -> None:
    """``Answered`` renders ``Answer: <value>`` with the value as JSON."""
    assert describe_inquiry_response(Answered(id="q", answer=value)) == line


def test_redacted_renders_redacted() -> None:
    """``Redacted`` renders ``Answer: <redacted>``."""
    assert describe_inquiry_response(Redacted(id="q")) == "Answer: <redacted>"


@pytest.mark.parametrize(
    "reason",
    [*CancellationReason, parse_cancellation_reason("some_future_variant")],
    ids=lambda reason: reason.as_str(),
)
def test_cancelled_renders_the_wire_tag_of_its_reason(reason: AnyCancellationReason) -> None:
    """``Cancelled (<reason>)`` shows the tag the codec writes, an unknown one verbatim."""
    response = Cancelled(id="q", reason=reason)
    tag = unstructure_event(response)["reason"]
    assert describe_inquiry_response(response) == f"Cancelled ({tag})"


def test_unknown_reason_is_shown_verbatim() -> None:
    """A reason from a newer writer is rendered exactly as it was read."""
    response = Cancelled(id="q", reason=parse_cancellation_reason("Some.Future-Variant"))
    assert describe_inquiry_response(response) == "Cancelled (Some.Future-Variant)"


def test_turns_are_sections_in_order() -> None:
    """Each turn is a ``## Turn N`` section (from 1), its events in stream order."""
    stream = make_stream(
        config(),
        turn(), chat("First question"), reply("First answer"),
        turn(), chat("Second question"), reply("Second answer"),
    )  # fmt: skip
    text = export_markdown(stream, title="Worktrees")
    assert text.startswith("# Worktrees\n\n_Configuration changed._\n\n## Turn 1\n")
    order = [
        "## Turn 1", "First question", "First answer",
        "## Turn 2", "Second question", "Second answer",
    ]  # fmt: skip
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert text.endswith("Second answer\n")


def test_a_file_without_turn_starts_is_one_turn() -> None:
    """Events before any turn start form turn 1, as the stream counts them."""
    text = export_markdown(make_stream(chat("hi"), reply("hello")))
    assert text == "# Conversation\n\n## Turn 1\n\n### User\n\nhi\n\n### Assistant\n\nhello\n"


def test_chat_request_author_and_schema() -> None:
    """A chat request shows its author and the schema it asked for."""
    request = ChatRequest(content="List them.", author="jean", schema={"type": "object"})
    text = export_markdown(make_stream(turn(), request))
    assert "### User (jean)\n\nList them." in text
    assert '```json\n{\n  "type": "object"\n}\n```' in text


def test_reasoning_and_structured_data() -> None:
    """Reasoning is quoted; structured data is a JSON block."""
    stream = make_stream(
        turn(),
        chat(),
        ChatResponse.reasoning("Think.\n\nThen act."),
        ChatResponse.data({"answer": 42}),
    )
    text = export_markdown(stream)
    assert "### Reasoning\n\n> Think.\n>\n> Then act." in text
    assert '### Structured data\n\n```json\n{\n  "answer": 42\n}\n```' in text


def test_tool_calls_show_arguments_results_and_errors() -> None:
    """A tool call shows its arguments as JSON; a response its content, errors marked."""
    stream = make_stream(
        turn(), chat(), call("t1", name="fs_read_file"), result("t1", "file body"),
        call("t2"), result("t2", "no such file", is_error=True),
    )  # fmt: skip
    text = export_markdown(stream)
    assert (
        '### Tool call `fs_read_file` (`t1`)\n\n```json\n{\n  "path": "README.md"\n}\n```' in text
    )
    assert "### Tool result (`t1`)\n\n```text\nfile body\n```" in text
    assert "### Tool error (`t2`)\n\n```text\nno such file\n```" in text


def test_fences_are_never_closed_by_their_content() -> None:
    """Content holding a code fence is wrapped in a longer one."""
    content = "```rs\nfn main() {}\n```"
    text = export_markdown(make_stream(turn(), chat(), call("t"), result("t", content)))
    assert f"````text\n{content}\n````" in text


def test_question_renders_all_it_holds() -> None:
    """A question shows source, answer type, preamble, text, options with descriptions, default."""
    question = InquiryQuestion(
        text="Which branch?",
        answer_type=AnswerType.select(
            [SelectOption(value="main", description="the default branch"), "dev"]
        ),
        default="main",
        id="branch",
        context="Two branches exist.",
    )
    request = InquiryRequest(
        id="call_1.branch.1", source=InquirySource.tool("git_checkout"), question=question
    )
    text = export_markdown(make_stream(turn(), chat(), request, answer("call_1.branch.1", "dev")))
    expected = (
        "### Question (`call_1.branch.1`)\n\n"
        "Asked by tool `git_checkout` as `branch`; expects one of the options below.\n\n"
        "```text\nTwo branches exist.\n```\n\n"
        "Which branch?\n\n"
        "Options:\n\n- `main`: the default branch\n- `dev`\n\n"
        'Default: `"main"`\n\n'
        "### Response (`call_1.branch.1`)\n\n"
        'Answer: "dev"\n'
    )
    assert expected in text


@pytest.mark.parametrize(
    ("value", "rendered"),
    [("a`b", "- ``a`b``"), ("`tick", "- `` `tick ``"), ("", "- (empty)"), ("dev", "- `dev`")],
)
def test_option_values_are_code_whatever_they_hold(value: str, rendered: str) -> None:
    """An option value with backticks (or none at all) still renders as one code span."""
    question = InquiryQuestion(text="Pick", answer_type=AnswerType.select([value]))
    request = InquiryRequest(id="q", source=InquirySource.user(), question=question)
    text = export_markdown(make_stream(turn(), chat(), request))
    assert f"Options:\n\n{rendered}\n" in text


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (InquirySource.tool("fs_modify_file"), "Asked by tool `fs_modify_file`"),
        (InquirySource.assistant(), "Asked by the assistant"),
        (InquirySource.user(), "Asked by the user"),
        (InquirySource.other("scheduler"), "Asked by `scheduler`"),
    ],
)
def test_question_source(source: InquirySource, words: str) -> None:
    """Each source kind is named."""
    question = InquiryQuestion(text="Go?", answer_type=AnswerType.boolean())
    request = InquiryRequest(id="q", source=source, question=question)
    assert words in export_markdown(make_stream(turn(), chat(), request))


@pytest.mark.parametrize(
    "response",
    [
        Answered(id="q", answer="hunter2-value"),
        Redacted(id="q"),
        Cancelled(id="q", reason=CancellationReason.NO_PROMPT_BACKEND),
    ],
    ids=["answered", "redacted", "cancelled"],
)
def test_secret_answers_never_appear(response: InquiryResponse) -> None:
    """An answer to a secret question renders as ``<redacted>`` even if a file recorded it."""
    question = InquiryQuestion(
        text="Passphrase?", answer_type=AnswerType.secret(), default="hunter2-default"
    )
    request = InquiryRequest(id="q", source=InquirySource.tool("ssh"), question=question)
    text = export_markdown(make_stream(turn(), chat(), request, response))
    assert "hunter2" not in text
    if isinstance(response, Cancelled):
        assert "Cancelled (no_prompt_backend)" in text
    else:
        assert "Answer: <redacted>" in text


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=8))
def test_no_recorded_secret_answer_ever_reaches_the_export(secret: str) -> None:
    """Whatever a file wrongly recorded for a secret question, the export does not hold it."""
    marked = f"SECRET-{secret}"
    stream = make_stream(
        turn(),
        chat(),
        ask("q", AnswerType.secret(), text="Token?"),
        answer("q", marked),
        ask("q", AnswerType.secret(), text="Token again?"),
        answer("q", [marked]),
    )
    assert "SECRET-" not in export_markdown(stream)


_SECRET_ASKED = ask("c1.token", AnswerType.secret(), text="Token?")
_STRAY = answer("c1.token", "hunter2-SECRET")


@pytest.mark.parametrize(
    ("items", "masked"),
    [
        ([turn(), chat(), _SECRET_ASKED, redact("c1.token"), _STRAY], 2),
        ([turn(), chat(), _STRAY, _SECRET_ASKED], 1),
        ([turn(), chat(), _SECRET_ASKED, redact("c1.token"), turn(), _STRAY], 2),
    ],
    ids=["after its redacted response", "before its question", "in the next turn"],
)
def test_a_stray_response_under_a_secret_questions_id_is_masked(
    items: list[Any], masked: int
) -> None:
    """An orphaned or repeated Answered carrying a secret question's id never shows its value."""
    text = export_markdown(make_stream(*items))
    assert "hunter2" not in text
    assert text.count("### Response (`c1.token`)\n\nAnswer: <redacted>") == masked


def test_global_entries_render_as_notes() -> None:
    """Compactions show their summary, quoted; unknown entries are named, not shown."""
    stream = make_stream(turn(), chat(), compaction("We fixed the bug."), unknown("bookmark"))
    text = export_markdown(stream)
    assert "### Compaction of turns 0 to 1\n\n> We fixed the bug." in text
    assert "_An entry of unknown kind `bookmark`, kept in the file, not shown._" in text


def test_export_is_deterministic_and_survives_a_round_trip(tmp_path: Path) -> None:
    """The same conversation always exports the same text, also after a save and load."""
    stream = make_stream(
        turn(), chat(), call("t"), ask("t.q"), answer("t.q"), result("t"), reply(),
        turn(), chat(), ask("t.q"), redact("t.q"),
    )  # fmt: skip
    conversation = Conversation(stream)
    save_conversation(conversation, tmp_path)
    loaded = load_conversation(tmp_path)
    assert export_markdown(stream) == export_markdown(stream)
    assert export_markdown(loaded.stream) == export_markdown(stream)


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_export(path: Path) -> None:
    """Every turn is a section; every question and every response of the file is there."""
    raw = json.loads((path / "events.json").read_text())
    conversation = load_conversation(path)
    text = export_markdown(conversation.stream)
    turns = len(conversation.stream.turns())
    assert [f"## Turn {n}" in text for n in range(1, turns + 1)] == [True] * turns
    assert text.count("\n### Question (") == sum(e["type"] == "inquiry_request" for e in raw)
    responses = [e for e in raw if e["type"] == "inquiry_response"]
    lines = [line for line in text.split("\n") if line.startswith(("Answer: ", "Cancelled ("))]
    assert len(lines) == len(responses)
    expected = [f"Answer: {json.dumps(e['answer'])}" for e in responses if "answer" in e]
    assert [line for line in lines if line.startswith("Answer: ")] == expected


def test_an_unknown_reason_shows_its_tag_also_for_a_secret_question() -> None:
    """RFD 082: an unknown reason is displayed as its tag; a reason is not an answer."""
    stream = make_stream(
        turn(),
        chat(),
        _SECRET_ASKED,
        Cancelled(id="c1.token", reason=parse_cancellation_reason("some_future_variant")),
    )
    text = export_markdown(stream)
    assert "### Response (`c1.token`)\n\nCancelled (some_future_variant)\n\n" in text
    assert "<redacted>" not in text


def test_a_long_unknown_reason_is_cut_and_escaped() -> None:
    """Free text in a reason is shown up to REASON_SHOWN characters, with nothing raw."""
    tag = "\x1b]52;c;" + "x" * 200
    stream = make_stream(
        turn(), chat(), ask("q"), Cancelled(id="q", reason=parse_cancellation_reason(tag))
    )
    line = next(
        line for line in export_markdown(stream).split("\n") if line.startswith("Cancelled")
    )
    kept = tag[:REASON_SHOWN].replace("\x1b", "\\x1b")
    assert line == f"Cancelled ({kept}\u2026)"


@pytest.mark.parametrize(
    ("content", "note"),
    [
        (wording.SKIPPED_BY_USER, "Permission refused by the person: the tool did not run."),
        (wording.SKIPPED_REMEMBERED, "Permission refused by the person's `N` earlier in this"),
        (wording.skipped_with_reason("too risky"), "Permission refused by the person, who said"),
        (wording.SKIPPED_BY_CONFIGURATION, "Permission refused by the configuration (run mode"),
        (wording.INPUT_CANCELLED, "The person cancelled a question the tool asked"),
        (wording.INTERRUPTED, "The call was interrupted: the tool did not finish."),
    ],
    ids=["n", "N", "r", "skip", "cancelled", "interrupted"],
)
def test_a_tool_call_that_did_not_run_says_who_refused_it(content: str, note: str) -> None:
    """A skipped tool call's response, in JP's wording, gets a note naming the decision."""
    text = export_markdown(make_stream(turn(), chat(), call("t"), result("t", content)))
    assert f"### Tool result (`t`)\n\n_{note}" in text
    assert f"```text\n{content}\n```" in text  # the content itself is still shown


def test_a_tool_call_that_ran_gets_no_permission_note() -> None:
    """Who permitted a call that ran is not recorded, and nothing is claimed."""
    text = export_markdown(make_stream(turn(), chat(), call("t"), result("t", "Tool skipped")))
    assert "Permission" not in text
    assert "### Tool result (`t`)\n\n```text\nTool skipped\n```" in text


@pytest.mark.parametrize(
    ("response", "note"),
    [
        (Redacted(id="q"), "_Answered by the person at the terminal or by the configuration"),
        (cancel("q", CancellationReason.USER), "_Closed without an answer: the person cancelled"),
        (cancel("q", CancellationReason.BACKEND_ERROR), "(the terminal prompter or the model)"),
        (cancel("q", CancellationReason.NO_PROMPT_BACKEND), "and nobody could be asked"),
        (
            cancel("q", CancellationReason.ASSISTANT_ROUTING_DENIED),
            "the configuration sent it to the assistant._",
        ),
        (cancel("q", CancellationReason.INVALID_STATIC_ANSWER), "configuration gives it does not"),
        (
            cancel("q", CancellationReason.ATTEMPTS_EXHAUSTED),
            "more often than one tool call may._",
        ),
        (
            cancel("q", CancellationReason.INTERRUPTED),
            "was not asked again as it stood when the turn was continued._",
        ),
        (
            cancel("q", CancellationReason.WITHDRAWN),
            "its tool call was stopped while it was open",
        ),
        (
            Cancelled(id="q", reason=parse_cancellation_reason("later")),
            "_Closed without an answer, for a reason this build does not know._",
        ),
    ],
    ids=lambda value: getattr(getattr(value, "reason", None), "value", type(value).__name__),
)
def test_each_response_says_who_ended_the_question_where_the_stream_records_it(
    response: InquiryResponse, note: str
) -> None:
    """Redacted and every cancellation reason get a note; an answer's giver is not recorded."""
    asked = ask("q", AnswerType.secret() if isinstance(response, Redacted) else None)
    text = export_markdown(make_stream(turn(), chat(), asked, response))
    section = text.split("### Response (`q`)\n\n", 1)[1]
    assert note in section.split("\n\n")[1]


def test_an_answer_gets_no_note_on_who_gave_it() -> None:
    """The format does not record who answered: nothing is claimed."""
    text = export_markdown(make_stream(turn(), chat(), ask("q"), answer("q", value=True)))
    assert text.endswith("### Response (`q`)\n\nAnswer: true\n")


def test_a_conversation_given_for_its_stream_is_refused_naming_what_to_pass() -> None:
    """export_markdown(conversation) says to pass conversation.stream, not a bare TypeError."""
    conversation = Conversation.new()
    with pytest.raises(TypeError, match=r"a Conversation's \.stream\), not Conversation"):
        export_markdown(conversation)  # type: ignore[arg-type]
    assert export_markdown(conversation.stream).startswith("# Conversation\n")
