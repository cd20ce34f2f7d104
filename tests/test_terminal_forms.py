"""A form at the terminal prompter, in process: one flow of typed fields, one object.

The prompter reads from a prompt_toolkit pipe and writes to a VT100 output
kept in a string; keys are sent once the prompt that reads them is on
screen, as a person types them.
"""

from __future__ import annotations

import asyncio
import io
import re
from typing import TYPE_CHECKING

import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from coordinator.adapters._terminal import TerminalPrompter
from coordinator.driver import PromptCancelled
from machines import Form, InquirySource, Question, ShowQuestion, ToolAnswer

if TYPE_CHECKING:
    from collections.abc import Sequence

DOWN, UP, ESC, CLEAR = "\x1b[B", "\x1b[A", "\x1b", "\x15"

FORM = Form.from_json_schema(
    {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "description": "Deploy now?"},
            "env": {
                "type": "string",
                "title": "Environment",
                "oneOf": [{"const": "dev", "title": "Development"}, {"const": "prod"}],
            },
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "maxItems": 2,
            },
            "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
            "mail": {"type": "string", "format": "email"},
            "note": {"type": "string"},
        },
        "required": ["ok", "env", "mail"],
    }
)


def _screen_text(raw: str) -> str:
    """What the screen says, its escape sequences taken out."""
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", raw)


def fill(keys: Sequence[str], form: Form = FORM) -> tuple[ToolAnswer | PromptCancelled, str]:
    """Ask ``form``, typing ``keys`` one by one; the answer (or the cancel), and the screen."""
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=40, columns=160), enable_cpr=False)
    prompt = ShowQuestion(
        tool_call_id="call_1",
        inquiry_id="call_1.k.1",
        tool_name="deploy",
        source=InquirySource.tool("deploy"),
        question=Question.form("k", "Fill in the release", form),
    )

    async def main() -> ToolAnswer | PromptCancelled:
        with create_pipe_input() as pipe:
            prompter = TerminalPrompter(input=pipe, output=output)
            asking = asyncio.create_task(prompter.ask_question(prompt))
            for typed in keys:
                for _ in range(20):  # the next prompt on screen
                    await asyncio.sleep(0.005)
                pipe.send_text(typed)
            try:
                return (await asyncio.wait_for(asking, 10)).value
            except PromptCancelled as cancelled:
                return cancelled

    return asyncio.run(main()), _screen_text(screen.getvalue())


def test_a_form_is_filled_in_one_flow_each_field_typed() -> None:
    """Fill it in; a boolean, a choice, a multi-choice, a number, text: one object."""
    answer, screen = fill(
        [
            "\r",  # fill it in
            "y\r",
            f"{DOWN}\r",  # prod
            f" {DOWN}{DOWN} \r",  # a and c
            "4\r",
            "ada@example.com\r",
            "\r",  # note: optional, left out
        ]
    )
    assert answer == {
        "ok": True,
        "env": "prod",
        "tags": ["a", "c"],
        "replicas": 4,
        "mail": "ada@example.com",
    }
    assert "a form of 6 fields · Esc or Ctrl-C cancels the whole form" in screen
    assert "ok  · field 1 of 6 · required" in screen
    assert "Deploy now?" in screen
    assert "Environment (env)  · field 2 of 6 · required" in screen
    assert "Development" in screen  # the option's title beside it
    assert "Space marks each value wanted, then Enter · mark none to leave it out" in screen
    assert "a whole number from 1 to 5 · Enter alone: 3" in screen
    assert "note  · field 6 of 6 · optional" in screen
    assert "text · Enter alone leaves it out" in screen


def test_what_does_not_fit_is_refused_where_it_is_typed_saying_why() -> None:
    """A word at a boolean, too many choices, a number out of range, no email: refused there."""
    answer, screen = fill(
        [
            "\r",
            "maybe\r",
            f"{CLEAR}n\r",
            "\r",  # dev
            f" {DOWN} {DOWN} \r",  # three marked: refused
            f"{UP} \r",  # b unmarked
            "9\r",
            f"{CLEAR}\r",  # the default, 3
            "nope\r",
            f"{CLEAR}ada@example.com\r",
            "later\r",
        ]
    )
    assert answer == {
        "ok": False,
        "env": "dev",
        "tags": ["a", "c"],
        "replicas": 3,
        "mail": "ada@example.com",
        "note": "later",
    }
    assert "type y, yes, n or no, then Enter" in screen
    assert (
        "field 'tags' must be a list of distinct values among 'a', 'b', 'c' (at most 2" in screen
    )
    assert "field 'replicas' must be a whole number from 1 to 5" in screen
    assert "field 'mail' must be an email address" in screen


def test_decline_answers_the_form_with_decline() -> None:
    """The second choice refuses the form: the answer is 'decline', no field asked."""
    answer, screen = fill([f"{DOWN}\r"])
    assert answer == "decline"
    assert "field 1 of 6" not in screen


@pytest.mark.parametrize("key", [ESC, "\x03"], ids=["esc", "ctrl-c"])
def test_esc_or_ctrl_c_at_any_field_cancels_the_whole_form(key: str) -> None:
    """Cancelled at the third field: nothing of the form is answered."""
    answer, _ = fill(["\r", "y\r", "\r", key])
    assert isinstance(answer, PromptCancelled)


def test_an_optional_choice_may_be_left_out_and_a_required_boolean_has_no_default() -> None:
    """A choice's '(leave it out)' option; Enter at a boolean without a default is refused."""
    form = Form.from_json_schema(
        {
            "type": "object",
            "properties": {
                "sure": {"type": "boolean"},
                "size": {"type": "string", "enum": ["s", "m"]},
            },
            "required": ["sure"],
        }
    )
    answer, screen = fill(["\r", "\r", f"{CLEAR}yes\r", f"{DOWN}{DOWN}\r"], form)
    assert answer == {"sure": True}
    assert "there is no default: type y, yes, n or no, then Enter" in screen
    assert "(leave it out)" in screen


def test_a_form_without_fields_is_confirmed_with_an_empty_object() -> None:
    """Nothing to fill: confirm (an empty object) or decline."""
    answer, screen = fill(["\r"], Form(fields=()))
    assert answer == {}
    assert "confirm" in screen
