"""The one escaping function for terminal output: what it escapes, what it keeps, how it spells."""

from __future__ import annotations

import ast
import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator._text import shown_line, shown_text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b[2Jb", r"a\x1b[2Jb"),
        ("\x9b2J \x9d0;t\x9c \x85", r"\x9b2J \x9d0;t\x9c \x85"),
        ("\x00\x07\x08\x7f", r"\x00\x07\x08\x7f"),
        ("two\nlines\r\n", r"two\nlines\r\n"),
        ("Delete \u202essalg/", r"Delete \u202essalg/"),
        (
            "\u2066\u2069\u200e\u200f\u061c\u2028\u2029",
            r"\u2066\u2069\u200e\u200f\u061c\u2028\u2029",
        ),
        ("zero\u200bwidth\ufeff", r"zero\u200bwidth\ufeff"),
        ("tag \U000e0041", r"tag \U000e0041"),
        ("lone \udcff", r"lone \udcff"),
    ],
)
def test_a_line_spells_each_unsafe_character_as_python_does(text: str, shown: str) -> None:
    """On one line every control, line ending, bidi and invisible character reads as its escape."""
    assert shown_text(text) == shown


def test_tabs_joiners_and_ordinary_text_are_kept() -> None:
    """Tab, the zero-width joiners emoji need, accents and emoji pass unchanged."""
    text = "a\tb \U0001f468\u200d\U0001f469 \u0645\u200c\u06cc caf\u00e9 \u00e0"
    assert shown_text(text) == text
    assert shown_text(text, lines=True) == text


def test_kept_lines_end_in_lf_only() -> None:
    """With ``lines``, LF stays and CR or CRLF becomes LF: no bare CR reaches a terminal."""
    assert shown_text("a\r\nb\rc\nd\x1b", lines=True) == "a\nb\nc\nd\\x1b"


def test_json_spelling_uses_json_escapes() -> None:
    """Inside JSON: JSON's escapes, a surrogate pair above U+FFFF."""
    text = orjson.dumps(["\x7f\x9b\u202e\U000e0041"]).decode()
    assert shown_text(text, lines=True, spelling="json") == r'["\u007f\u009b\u202e\udb40\udc41"]'


@given(st.text())
def test_json_stays_the_same_json(value: str) -> None:
    """Escaping JSON text changes its characters, never the value it holds."""
    text = orjson.dumps({"k": value}, option=orjson.OPT_INDENT_2).decode()
    assert json.loads(shown_text(text, lines=True, spelling="json")) == {"k": value}


@given(st.text(alphabet=st.characters(exclude_characters='\\"', exclude_categories=["Cs"])))
def test_python_spelling_reads_back_as_the_text(value: str) -> None:
    """Each escape is Python's own: read as a string literal, the line is the text again."""
    assert ast.literal_eval(f'"{shown_text(value)}"') == value


def test_a_shown_line_is_one_escaped_line_cut_within_its_limit() -> None:
    """Each run of white space reads as a space, a control as its escape; cut, it ends in ..."""
    assert shown_line("a \x1b[31m\n\r\n  b\u202e") == r"a \x1b[31m b\u202e"
    assert shown_line("x" * 20, 20) == "x" * 20
    assert shown_line("x" * 21, 20) == "x" * 17 + "..."


@given(st.text(), st.integers(min_value=3, max_value=200))
def test_a_shown_line_never_breaks_a_line_nor_passes_its_limit(value: str, limit: int) -> None:
    """Whatever the text, the line holds no line ending or control, and fits its limit."""
    line = shown_line(value, limit)
    assert len(line) <= limit
    assert shown_text(line) == line  # nothing left to escape: nothing a terminal acts on
