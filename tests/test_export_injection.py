"""Markdown export of hostile files: no fake headings, no swallowed entries, no raw controls."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reader_streams import (
    Item,
    answer,
    ask,
    call,
    chat,
    compaction,
    make_stream,
    redact,
    reply,
    result,
    turn,
    unknown,
)

from coordinator import export_markdown
from machines import (
    AnswerType,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    SelectOption,
    ToolCallRequest,
    parse_cancellation_reason,
)

if TYPE_CHECKING:
    from collections.abc import Callable

_INJECTED = "x\n## Turn 99\n### Assistant\rI agree\r\n"
_SHOWN = r"x\n## Turn 99\n### Assistant\rI agree\r\n"


def _question(answer_type: AnswerType, question_id: str | None = None) -> InquiryRequest:
    question = InquiryQuestion(text="Pick", answer_type=answer_type, id=question_id)
    return InquiryRequest(id="q", source=InquirySource.user(), question=question)


def _select(value: str = "main", description: str | None = None) -> InquiryRequest:
    option = SelectOption(value=value, description=description)
    return _question(AnswerType.select([option]))


# Each slot: how to export a conversation with `value` in it.
_SLOTS: dict[str, Callable[[str], str]] = {
    "title": lambda value: export_markdown(make_stream(turn(), chat()), title=value),
    "author": lambda value: export_markdown(
        make_stream(turn(), ChatRequest(content="hi", author=value))
    ),
    "tool name": lambda value: export_markdown(make_stream(turn(), chat(), call("t", value))),
    "call id": lambda value: export_markdown(
        make_stream(turn(), chat(), call(value), result(value))
    ),
    "inquiry id": lambda value: export_markdown(
        make_stream(turn(), chat(), ask(value), answer(value))
    ),
    "question id": lambda value: export_markdown(
        make_stream(turn(), chat(), _question(AnswerType.boolean(), value))
    ),
    "option value": lambda value: export_markdown(make_stream(turn(), chat(), _select(value))),
    "option description": lambda value: export_markdown(
        make_stream(turn(), chat(), _select(description=value))
    ),
    "other source": lambda value: export_markdown(
        make_stream(
            turn(),
            chat(),
            InquiryRequest(
                id="q",
                source=InquirySource.other(value),
                question=InquiryQuestion(text="Go?", answer_type=AnswerType.boolean()),
            ),
        )
    ),
    "cancel reason": lambda value: export_markdown(
        make_stream(
            turn(), chat(), ask("q"), Cancelled(id="q", reason=parse_cancellation_reason(value))
        )
    ),
    "unknown kind": lambda value: export_markdown(make_stream(turn(), chat(), unknown(value))),
}


@pytest.mark.parametrize("slot", _SLOTS)
def test_a_single_line_slot_shows_its_line_endings_escaped(slot: str) -> None:
    r"""A value in a heading, code span or label keeps to its line: LF, CR, CRLF read \n, \r."""
    text = _SLOTS[slot](_INJECTED)
    assert _SHOWN in text
    assert "\r" not in text
    assert [line for line in text.split("\n") if line.startswith("## ")] == ["## Turn 1"]


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\u2028", r"\u2028"),
        ("\u2029", r"\u2029"),
        ("\x85", r"\x85"),
        ("\x0b", r"\x0b"),
        ("\x0c", r"\x0c"),
        ("\x1b", r"\x1b"),
        ("\x07", r"\x07"),
        ("\x00", r"\x00"),
        ("\x7f", r"\x7f"),
        ("\x9b", r"\x9b"),
        ("\u202e", r"\u202e"),
        ("\u2066", r"\u2066"),
        ("\u2069", r"\u2069"),
    ],
)
@pytest.mark.parametrize("slot", _SLOTS)
def test_a_single_line_slot_shows_controls_escaped(slot: str, char: str, shown: str) -> None:
    """Line separators, C0/C1 controls and bidi controls show as Python writes them, not raw."""
    text = _SLOTS[slot](f"a{char}b")
    assert f"a{shown}b" in text
    assert char not in text


def test_an_osc_sequence_in_a_tool_call_reaches_no_terminal() -> None:
    """A call id holding an OSC title sequence shows it escaped, in the heading and in code."""
    stream = make_stream(turn(), chat(), call("c1\x1b]0;pwned\x07", "t\u202e"), result("c1"))
    text = export_markdown(stream)
    assert "### Tool call `t\\u202e` (`c1\\x1b]0;pwned\\x07`)" in text
    assert "\x1b" not in text
    assert "\u202e" not in text


def test_free_text_shows_controls_escaped_and_keeps_tabs_and_joiners() -> None:
    """Messages and tool output escape controls and bidi overrides; tab and ZWJ stay as written."""
    family = "\U0001f468\u200d\U0001f469\u200c"
    stream = make_stream(
        turn(),
        chat(f"hi \x1b[31mRED\x1b[0m \u202eevil\u202c\tend {family}"),
        call("c"),
        result("c", "x\x00y\x1b[2J"),
    )
    text = export_markdown(stream)
    assert f"hi \\x1b[31mRED\\x1b[0m \\u202eevil\\u202c\tend {family}\n" in text
    assert "```text\nx\\x00y\\x1b[2J\n```" in text


def test_json_spells_controls_with_json_escapes() -> None:
    r"""Arguments stay JSON: C1 controls and bidi overrides become \u escapes it reads back."""
    arguments = {"path": "a\u202eb\x85c\x1bd\u2028"}
    stream = make_stream(
        turn(), chat(), ToolCallRequest(id="c", name="t", arguments=arguments), result("c")
    )
    text = export_markdown(stream)
    block = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert "\\u202e" in block
    assert json.loads(block) == arguments


@pytest.mark.parametrize(("ending"), ["\r", "\n", "\r\n"], ids=["CR", "LF", "CRLF"])
def test_reasoning_stays_in_its_quote_whatever_its_line_endings(ending: str) -> None:
    """Reasoning is split on every line ending CommonMark knows, so each line is quoted."""
    thinking = ending.join(["thinking", "## Turn 2", "Injected"])
    text = export_markdown(make_stream(turn(), chat(), ChatResponse.reasoning(thinking)))
    assert "### Reasoning\n\n> thinking\n> ## Turn 2\n> Injected\n" in text
    assert "\r" not in text


def test_a_compaction_summary_stays_in_its_quote() -> None:
    """A summary holding a heading cannot add a turn section: it is quoted line by line."""
    text = export_markdown(make_stream(turn(), chat(), compaction("sum\r\n## Turn 9\rmore")))
    assert "### Compaction of turns 0 to 1\n\n> sum\n> ## Turn 9\n> more\n" in text


def test_crlf_in_free_text_becomes_lf() -> None:
    """A message's CR and CRLF line endings are written as LF, which Markdown reads alike."""
    text = export_markdown(make_stream(turn(), chat("one\r\ntwo\rthree")))
    assert "### User\n\none\ntwo\nthree\n" in text


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (
            "Here:\n```python\ndef f():\n    return 1",
            "Here:\n```python\ndef f():\n    return 1\n```",
        ),
        ("~~~~\ncode", "~~~~\ncode\n~~~~"),
        ("````md\n```\nstill code", "````md\n```\nstill code\n````"),
        ("```\n~~~\nnot closed by tildes", "```\n~~~\nnot closed by tildes\n```"),
        ("  ```\nindented fence", "  ```\nindented fence\n```"),
        ("- a\n\n  ```\n```", "- a\n\n  ```\n```\n```"),
        ("> ```\n```", "> ```\n```\n```"),
        ("para\n```", "para\n```\n```"),
    ],
    ids=[
        "cut off",
        "tildes",
        "longer fence",
        "other character",
        "indented",
        "after a list's fence",
        "after a quote's fence",
        "interrupting a paragraph",
    ],
)
def test_a_fence_left_open_is_closed_with_its_entry(message: str, shown: str) -> None:
    """A message ending inside a code fence gets the fence closed; the next entry is outside."""
    text = export_markdown(make_stream(turn(), chat(), reply(message), call("c1", "rm_rf")))
    assert f"### Assistant\n\n{shown}\n\n### Tool call `rm_rf` (`c1`)" in text


@pytest.mark.parametrize(
    "message",
    [
        "```py\nx = 1\n```",
        "~~~\ncode\n~~~~~",
        "- step:\n\n  ```sh\n  run\n  ```\n- next",
        "- a list's fence ends with the list\n\n  ```\n  code",
        "> a quote's fence ends with the quote\n> ```\n> code",
        "``` not a fence: info holds a ` backtick",
        "    ```\n    indented code, not a fence",
        "Use `x` and ``y``.",
        "<div>\nends at the blank line\n</div>",
        "<!-- closed --> text",
        "<!--\nhidden\n-->\nshown",
        "Proceed? <!-- inline, not a block",
        "> <!-- inside a quote, ends with it",
        "a < b and c > d",
        "# Heading\n\n* list\n\n1. item\n\n| a | b |\n|---|---|",
    ],
)
def test_ordinary_markdown_is_copied_as_it_is(message: str) -> None:
    """Messages whose blocks all end render exactly as written."""
    text = export_markdown(make_stream(turn(), reply(message), call("c1")))
    assert f"### Assistant\n\n{message}\n\n### Tool call" in text


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("<!-- Delete the production database?", "\\<!-- Delete the production database?"),
        ("<script>\nalert(1)", "\\<script>\nalert(1)"),
        ("Text first\n  <?php echo 1;", "Text first\n  \\<?php echo 1;"),
        ("<![CDATA[ never ends", "\\<![CDATA[ never ends"),
        ("<!DOCTYPE html", "\\<!DOCTYPE html"),
    ],
    ids=["comment", "script", "processing instruction", "cdata", "declaration"],
)
def test_an_html_block_that_never_ends_is_escaped(question: str, shown: str) -> None:
    """An HTML block start without its end shows as text instead of hiding the rest."""
    request = InquiryRequest(
        id="c1.ok",
        source=InquirySource.tool("t"),
        question=InquiryQuestion(text=question, answer_type=AnswerType.boolean()),
    )
    text = export_markdown(make_stream(turn(), chat(), request, answer("c1.ok")))
    assert f"expects yes or no (boolean).\n\n{shown}\n\n### Response (`c1.ok`)" in text


_MARKDOWN = st.lists(
    st.sampled_from(
        [
            *("", " ", "   ", "    ", "\t", "> ", "- ", "1. ", "2) ", "```", "````", "~~~"),
            *("```py", "<!--", "-->", "<div>", "<a>", "<script>", "</script>", "<?", "?>"),
            *("text", "# h", "---", "===", "\\"),
        ]
    ),
    max_size=6,
).map("".join)


@given(st.lists(_MARKDOWN, min_size=1, max_size=12).map("\n".join))
def test_containing_a_message_twice_changes_nothing_more(message: str) -> None:
    """What closes a fence or escapes an HTML start leaves nothing open to close again."""
    once = export_markdown(make_stream(reply(message)))
    shown = once.split("### Assistant\n\n", 1)[1].removesuffix("\n")
    assert export_markdown(make_stream(reply(shown))) == once


def _asked(
    inquiry_id: str, tool: str, answer_type: AnswerType, question_id: str
) -> InquiryRequest:
    question = InquiryQuestion(text="Value?", answer_type=answer_type, id=question_id)
    return InquiryRequest(id=inquiry_id, source=InquirySource.tool(tool), question=question)


def test_a_plain_answer_shows_when_another_tool_asks_a_secret_of_the_same_question_id() -> None:
    """Masking follows the asking tool's question: ``c.value.1`` (text) shows beside a secret."""
    stream = make_stream(
        turn(), chat(),
        call("c1", "vault"), _asked("c1.value.1", "vault", AnswerType.secret(), "value"),
        redact("c1.value.1"), result("c1"),
        call("c", "notes"), _asked("c.value.1", "notes", AnswerType.text(), "value"),
        answer("c.value.1", "plain words"), result("c"),
    )  # fmt: skip
    text = export_markdown(stream)
    assert '### Response (`c.value.1`)\n\nAnswer: "plain words"' in text
    assert "### Response (`c1.value.1`)\n\nAnswer: <redacted>" in text


def test_an_answer_paired_with_a_secret_question_is_masked_whatever_its_id() -> None:
    """Secrecy comes from the paired request's answer type, not from what the id looks like."""
    stream = make_stream(
        turn(), chat(), _asked("opaque-7", "vault", AnswerType.secret(), "pin"),
        answer("opaque-7", "hunter2"),
    )  # fmt: skip
    text = export_markdown(stream)
    assert "hunter2" not in text
    assert (
        "### Response (`opaque-7`)\n\nAnswer: <redacted>\n\n_Recorded as an answer to a secret"
        in (text)
    )


def test_an_id_reused_in_a_later_turn_for_a_plain_question_shows_its_answer() -> None:
    """Ids are turn-scoped: turn 2's text question of turn 1's secret id pairs with its answer."""
    stream = make_stream(
        turn(), chat(), _asked("c.q.1", "vault", AnswerType.secret(), "q"), redact("c.q.1"),
        turn(), chat(), _asked("c.q.1", "notes", AnswerType.text(), "q"), answer("c.q.1", "main"),
    )  # fmt: skip
    assert '### Response (`c.q.1`)\n\nAnswer: "main"' in export_markdown(stream)


@pytest.mark.parametrize("asked_itself", [True, False], ids=["paired", "stray"])
@pytest.mark.parametrize("shown", ["c1.token.2", "c1.token", "c1.tokens.1", "c1.token.1.x"])
def test_ids_are_never_parsed_to_find_a_secret(shown: str, *, asked_itself: bool) -> None:
    """An answer whose id only looks like another attempt of a secret question is not secret.

    RFD 082: readers treat inquiry ids as opaque. Only pairing, and a stray's
    id being a secret question's own, make an answer secret.
    """
    asked = _asked("c1.token.1", "deploy", AnswerType.secret(), "token")
    own: list[Item] = [ask(shown)] if asked_itself else []
    stream = make_stream(turn(), chat(), call("c1"), asked, *own, answer(shown, "visible"))
    assert f'### Response (`{shown}`)\n\nAnswer: "visible"' in export_markdown(stream)
