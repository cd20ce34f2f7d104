"""The terminal prompter in process: its reply grammar, its screen, cancellation, no threads.

Prompts read from a prompt_toolkit pipe input and write to a VT100 output
kept in a string, so what reached the screen can be read back.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import threading
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
from process_helpers import PATIENCE
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import merge_key_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.output.vt100 import Vt100_Output
from run_helpers import TOUR_SCENARIO

from coordinator.adapters._promptability import Promptability
from coordinator.adapters._terminal import (
    TerminalPrompter,
    TerminalUnavailableError,
    asker,
    boolean_answer,
    parse_arguments,
    printable,
)
from coordinator.adapters._terminal_toolkit import ToolkitTerminal, _Choice
from coordinator.cli._run import run_scenario
from coordinator.cli._run_result import RunError, RunOptions
from coordinator.driver._prompting import Deny, Permit, PromptCancelled, QuestionAnswer
from machines import (
    AnswerReusePolicy,
    InquirySource,
    JsonValue,
    Question,
    SecretValue,
    SelectOption,
    ShowPermissionPrompt,
    ShowQuestion,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from prompt_toolkit.input import PipeInput


def asked(question: Question, source: InquirySource | None = None) -> ShowQuestion:
    """The effect that shows ``question`` of tool ``t``."""
    return ShowQuestion(
        tool_call_id="call_1",
        inquiry_id=f"call_1.{question.id}.1",
        tool_name="t",
        source=source or InquirySource.tool("t"),
        question=question,
    )


def at_terminal(
    work: Callable[[TerminalPrompter, PipeInput], Awaitable[object]], *, rows: int = 40
) -> tuple[object, str]:
    """Run ``work`` with a prompter on a pipe; its result and everything put on screen."""
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=rows, columns=120), enable_cpr=False)

    async def main() -> object:
        with create_pipe_input() as pipe:
            return await work(TerminalPrompter(input=pipe, output=output), pipe)

    return asyncio.run(main()), screen.getvalue()


async def started(task: asyncio.Task[object]) -> None:
    """Let ``task`` get its prompt on screen."""
    for _ in range(10):
        await asyncio.sleep(0)
    assert not task.done()


@pytest.mark.parametrize(
    ("reply", "default", "expected"),
    [
        ("y", None, QuestionAnswer(value=True)),
        ("Y", None, QuestionAnswer(value=True, remember=True)),
        ("n", True, QuestionAnswer(value=False)),
        (" N ", None, QuestionAnswer(value=False, remember=True)),
        ("", True, QuestionAnswer(value=True)),
        ("", False, QuestionAnswer(value=False)),
        ("", None, None),
        ("yes", None, QuestionAnswer(value=True)),
        ("No", True, QuestionAnswer(value=False)),
        ("yEs", False, QuestionAnswer(value=True)),
        ("nope", True, None),
        ("p", None, None),
    ],
)
def test_boolean_replies(reply: str, default: JsonValue, expected: QuestionAnswer | None) -> None:
    """y/yes and n/no answer, Y and N remember, Enter takes the default, nothing else answers."""
    assert boolean_answer(reply, default) == expected


def test_edited_arguments_must_be_a_json_object() -> None:
    """Valid JSON objects are arguments; anything else says what is wrong."""
    assert parse_arguments('{"a": [1, 2]}') == {"a": [1, 2]}
    assert str(parse_arguments("{a: 1}")).startswith("not valid JSON: ")
    assert parse_arguments("[1]") == "the arguments must be a JSON object, not an array"


def test_control_characters_are_not_printed() -> None:
    """A tool's text cannot carry terminal control characters to the screen."""
    assert printable("a\x1b[2Jb\x07c\td\ne\x9bf") == "a\\x1b[2Jb\\x07c\td\ne\\x9bf"


@pytest.mark.parametrize(
    "hidden",
    ["\u202e", "\u2066", "\u2069", "\u200e", "\u200b", "\u2028", "\u2029", "\ufeff", "\U000e0041"],
    ids=["RLO", "LRI", "PDI", "LRM", "ZWSP", "LS", "PS", "BOM", "TAG-A"],
)
def test_characters_that_reorder_or_hide_text_are_not_printed(hidden: str) -> None:
    """Bidi controls, invisible characters and separators cannot disguise a tool's text."""
    assert printable(f"Delete {hidden}ssalg/ ?") == f"Delete {ascii(hidden)[1:-1]}ssalg/ ?"


def test_joiners_that_emoji_need_are_printed() -> None:
    """The zero-width joiners move nothing and build emoji and words: they stay."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert printable(f"ok {family} \u0645\u200c\u06cc") == f"ok {family} \u0645\u200c\u06cc"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (InquirySource.tool("t"), "t asks"),
        (InquirySource.assistant(), "The assistant asks (through t)"),
        (InquirySource.user(), "Asked on your behalf (through t)"),
        (InquirySource.other("mcp"), "mcp asks (through t)"),
    ],
)
def test_the_asker_is_named(source: InquirySource, expected: str) -> None:
    """The prompt says who asks: the tool, or the assistant (ask_user) through a tool."""
    assert asker(asked(Question.boolean("q", "Q?"), source)) == expected


def test_a_cancelled_prompt_leaves_no_thread_and_the_next_prompt_works() -> None:
    """Cancelling the prompting task closes the prompt; the next one answers as usual."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        threads = set(threading.enumerate())
        task: asyncio.Task[object] = asyncio.create_task(
            prompter.ask_question(asked(Question.boolean("first", "First?")))
        )
        await started(task)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pipe.send_text("n\r")
        answer = await prompter.ask_question(asked(Question.boolean("second", "Second?")))
        assert set(threading.enumerate()) == threads
        return answer

    answer, screen = at_terminal(work)
    assert answer == QuestionAnswer(value=False)
    assert "Second?" in screen


def test_end_of_input_cancels_the_prompt() -> None:
    """A closed input at a prompt is a cancellation, not a crash."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.close()
        with pytest.raises(PromptCancelled):
            await prompter.ask_question(asked(Question.text_input("q", "Q?")))
        return None

    at_terminal(work)


def test_progress_shown_during_a_prompt_waits_until_it_is_answered() -> None:
    """Lines shown while a question is on screen come after it, not inside it."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        task = asyncio.create_task(
            prompter.ask_question(asked(Question.boolean("q", "The question?")))
        )
        await started(task)
        prompter.show("a parallel tool finished")
        pipe.send_text("y\r")
        return await task

    answer, screen = at_terminal(work)
    assert answer == QuestionAnswer(value=True)
    assert screen.index("The question?") < screen.rindex("[y/n/Y/N] >")
    assert screen.rindex("[y/n/Y/N] >") < screen.index("a parallel tool finished")


def test_a_secret_is_a_secret_value_never_remembered_never_shown() -> None:
    """The typed secret comes back wrapped, with remember false, and is not on screen."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("Y-hunter2\r")
        return await prompter.ask_question(asked(Question.secret("token", "Token?")))

    answer, screen = at_terminal(work)
    assert isinstance(answer, QuestionAnswer)
    assert isinstance(answer.value, SecretValue)
    assert answer.value.reveal() == "Y-hunter2"
    assert not answer.remember
    assert "hunter2" not in screen
    assert "(hidden) >" in screen


def test_a_select_takes_numbers_past_nine() -> None:
    """Typing 1 then 2 picks option 12; descriptions are shown beside the options."""
    options = [SelectOption(value=f"v{n}", description=f"about {n}") for n in range(1, 13)]

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("12\r")
        return await prompter.ask_question(asked(Question.select("pick", "Which?", options)))

    answer, screen = at_terminal(work)
    assert answer == QuestionAnswer(value="v12")
    assert "about 12" in screen


def _drawn(choice: _Choice, *, rows: int, done: bool = False) -> str:
    return "".join(text for _, text in choice.fragments(rows=rows, done=done))


def test_a_select_taller_than_the_terminal_scrolls_to_the_highlight() -> None:
    """On 12 rows, 50 options: the highlight is drawn, with how many more there are."""
    choice = _Choice([(f"option-{n:02d}", None) for n in range(1, 51)], default=0)
    choice.move(30)
    drawn = _drawn(choice, rows=12)
    lines = drawn.split("\n")
    assert len(lines) <= 12
    assert " > 31. option-31" in lines
    assert lines[0] == "   (26 more above)"
    assert lines[-2] == "   (16 more below)"
    assert "Esc cancels" in lines[-1]
    choice.move(100)  # the last option: nothing more below
    lines = _drawn(choice, rows=12).split("\n")
    assert " > 50. option-50" in lines
    assert "more below" not in "".join(lines)


def test_a_select_that_fits_is_drawn_whole() -> None:
    """Options that fit the terminal are all drawn, with no "more" lines."""
    choice = _Choice([("staging", None), ("production", "live")], default=1)
    assert _drawn(choice, rows=40).split("\n") == [
        "   1. staging",
        " > 2. production  live",
        "   up/down or a number, then Enter; Esc cancels",
    ]


@pytest.mark.parametrize(
    ("key", "error"),
    [(Keys.ControlC, "_Cancel"), (Keys.Escape, "_Escape"), (Keys.ControlD, "EOFError")],
)
def test_a_cancelled_select_does_not_show_an_option_as_chosen(key: Keys, error: str) -> None:
    """Ctrl-C, Esc or Ctrl-D at a select: the last frame says nothing was chosen."""
    choice = _Choice([("staging", None), ("production", None)], default=1)
    assert _drawn(choice, rows=40, done=True) == "  2. production"
    output = Vt100_Output(io.StringIO(), lambda: Size(rows=40, columns=120), enable_cpr=False)
    with create_pipe_input() as pipe:
        terminal = ToolkitTerminal(input=pipe, output=output)
        keys = merge_key_bindings([terminal._keys(choice.cancel), choice.keys()])
    (binding,) = [b for b in keys.bindings if b.keys == (key,)]
    exits: list[dict[str, object]] = []
    binding.handler(SimpleNamespace(app=SimpleNamespace(exit=lambda **kw: exits.append(kw))))  # type: ignore[arg-type]
    assert type(exits[0]["exception"]).__name__ == error
    assert _drawn(choice, rows=40, done=True) == "  (nothing chosen)"


def test_a_question_prints_its_context_above_it_cleaned() -> None:
    """The preamble comes before the question, and a tool's control characters do not."""
    question = Question.boolean("q", "Apply\x07 it?", context="@@ -1 +1 @@\n-old\x1b[2J\n+new")

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("n\r")
        return await prompter.ask_question(asked(question))

    _, screen = at_terminal(work)
    assert screen.index("+new") < screen.index("Apply\\x07 it?")
    assert "-old\\x1b[2J" in screen
    assert "\x07" not in screen


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("y\r", Permit()),
        ("Y\r", Permit(remember=True)),
        ("n\r", Deny()),
        ("N\r", Deny(remember=True)),
        ("x\r\x15p\rr\rbecause\r", Deny(reason="because")),
        ("r\r\r", Deny()),
        ("e\r\x1b\r", Permit()),  # accepted unchanged: nothing edited
    ],
    ids=["y", "Y", "n", "N", "bad-p-r", "r-no-reason", "e-unchanged"],
)
def test_permission_replies(keys: str, expected: Permit | Deny) -> None:
    """Each permission key gives its answer; a bad reply or p asks again."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text(keys)
        prompt = ShowPermissionPrompt(tool_call_id="call_1", tool_name="t", arguments={"a": 1})
        return await prompter.ask_permission(prompt)

    answer, screen = at_terminal(work)
    assert answer == expected
    if "p" in keys:
        assert '"a": 1' in screen  # p printed the arguments, in full


def test_the_terminal_prompter_names_its_extra_when_prompt_toolkit_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without prompt_toolkit, making a terminal prompter says what to install."""
    monkeypatch.setitem(sys.modules, "prompt_toolkit", None)
    monkeypatch.delitem(sys.modules, "coordinator.adapters._terminal_toolkit", raising=False)
    with pytest.raises(TerminalUnavailableError, match=r"inquiry-coordinator\[terminal\]"):
        TerminalPrompter()


def test_the_package_and_the_command_import_without_prompt_toolkit() -> None:
    """The core package (its command included) imports with prompt_toolkit absent."""
    code = (
        "import sys; sys.modules['prompt_toolkit'] = None\n"
        "import coordinator, coordinator.cli._main, coordinator.cli._run\n"
        "import coordinator.adapters._terminal\n"
        "assert 'coordinator.adapters._terminal_toolkit' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=PATIENCE
    )
    assert result.returncode == 0, result.stderr


def test_inquiry_run_at_a_terminal_names_the_extra_when_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`inquiry run` at a terminal without prompt_toolkit: what to install, nothing written."""
    monkeypatch.setitem(sys.modules, "prompt_toolkit", None)
    monkeypatch.delitem(sys.modules, "coordinator.adapters._terminal_toolkit", raising=False)
    options = RunOptions(scenario=TOUR_SCENARIO, conversation=tmp_path / "conversation")
    at_a_terminal = Promptability(promptable=True, why="/dev/tty is a terminal to ask at")
    with pytest.raises(RunError, match=r"pip install 'inquiry-coordinator\[terminal\]'"):
        asyncio.run(run_scenario(options, out=io.StringIO(), promptability=at_a_terminal))
    assert not (tmp_path / "conversation").exists()


@pytest.mark.parametrize(
    ("first", "window", "stops"),
    [
        pytest.param("\x03", 60.0, 1, id="ctrl-c-twice-within-the-window"),
        pytest.param("\x03", -1.0, 0, id="ctrl-c-twice-past-the-window"),
        pytest.param("\x04", 60.0, 0, id="ctrl-d-then-ctrl-c"),
    ],
)
def test_a_second_ctrl_c_at_a_prompt_stops_the_run_only_within_its_window(
    monkeypatch: pytest.MonkeyPatch, first: str, window: float, stops: int
) -> None:
    """Two Ctrl-C at prompts within the window call on_stop once; apart, or Ctrl-D first, not."""
    monkeypatch.setattr("coordinator.adapters._terminal.CTRL_C_WINDOW", window)
    stopped: list[None] = []

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        prompter.on_stop = lambda: stopped.append(None)
        for keys, question in ((first, "first"), ("\x03", "second")):
            task = asyncio.create_task(
                prompter.ask_question(asked(Question.boolean(question, f"{question}?")))
            )
            await started(task)
            pipe.send_text(keys)
            with pytest.raises(PromptCancelled):
                await task
        return None

    _, screen = at_terminal(work)
    assert len(stopped) == stops
    assert ("stopping the run" in screen) == bool(stops)
    if first == "\x03":
        assert "Ctrl-C again stops the run" in screen


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (("Y", "\r"), QuestionAnswer(value=True, remember=True)),
        (("N", "\r"), QuestionAnswer(value=False, remember=True)),
        (("Yes", "\r"), QuestionAnswer(value=True)),
        (("No", "\r"), QuestionAnswer(value=False)),
        (("NO", "\r"), QuestionAnswer(value=False)),
        (("nY\x7f", "\r"), QuestionAnswer(value=False)),
    ],
    ids=["Y", "N", "Yes", "No", "NO", "nY-backspace"],
)
def test_a_capital_letter_waits_for_the_rest_of_the_word(
    keys: tuple[str, str], expected: QuestionAnswer
) -> None:
    """Y or N alone then Enter is remembered; Yes or No is a plain answer, never a Y or N."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        task = asyncio.create_task(prompter.ask_question(asked(Question.boolean("q", "Q?"))))
        await started(task)
        typed, enter = keys
        pipe.send_text(typed)
        await started(task)  # still waiting: nothing answers before Enter
        pipe.send_text(enter)
        return await task

    answer, _ = at_terminal(work)
    assert answer == expected


def test_keys_read_past_an_answer_do_not_reach_the_next_prompt() -> None:
    """An answer and more keys in one write: the next question waits for keys of its own."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        first = asyncio.create_task(prompter.ask_question(asked(Question.boolean("a", "A?"))))
        await started(first)
        pipe.send_text("y\r\r")  # the second Enter would take the next default
        answers = [await first]
        second = asyncio.create_task(
            prompter.ask_question(asked(Question.boolean("b", "B?", default=True)))
        )
        await started(second)  # waiting, not answered by the leftover Enter
        pipe.send_text("n\r")
        answers.append(await second)
        return answers

    answers, _ = at_terminal(work)
    assert answers == [QuestionAnswer(value=True), QuestionAnswer(value=False)]


@pytest.mark.parametrize(
    ("keys", "cancelled", "stops"),
    [
        pytest.param("y\r\x03", False, 1, id="ctrl-c-after-an-answer"),
        pytest.param("\x03\x03", True, 1, id="ctrl-c-twice-in-one-read"),
        pytest.param("\x04\x03", True, 1, id="ctrl-c-after-ctrl-d"),
        pytest.param("y\r", False, 0, id="no-ctrl-c"),
    ],
)
def test_a_ctrl_c_read_once_its_prompt_has_ended_stops_the_run(
    keys: str, cancelled: bool, stops: int
) -> None:
    """A Ctrl-C the ending prompt read and kept for the next is no key for it: the run stops."""
    stopped: list[None] = []

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        prompter.on_stop = lambda: stopped.append(None)
        task = asyncio.create_task(prompter.ask_question(asked(Question.boolean("go", "Go?"))))
        await started(task)
        pipe.send_text(keys)  # one read: what follows the prompt's end is kept by prompt_toolkit
        try:
            answer = await task
        except PromptCancelled:
            answer = None
        await asyncio.sleep(0)  # on_stop is called soon, once the prompt's outcome is out
        return answer

    answer, screen = at_terminal(work)
    assert (answer is None) == cancelled
    assert len(stopped) == stops
    assert ("stopping the run" in screen) == bool(stops)


def test_esc_cancels_a_prompt_and_is_no_ctrl_c() -> None:
    """Esc alone cancels the question, and says nothing of stopping the run."""
    stopped: list[None] = []

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        prompter.on_stop = lambda: stopped.append(None)
        for _ in range(2):  # twice: Esc is never counted as a Ctrl-C
            task = asyncio.create_task(
                prompter.ask_question(asked(Question.text_input("n", "N?")))
            )
            await started(task)
            pipe.send_text("\x1b")
            with pytest.raises(PromptCancelled) as caught:
                await task
            assert type(caught.value) is PromptCancelled
        return None

    _, screen = at_terminal(work)
    assert stopped == []
    assert screen.count("cancelled: the tool is told so") == 2
    assert "Ctrl-C" not in screen


def test_a_question_not_to_be_reused_offers_no_remembering() -> None:
    """Persistence none: no Y/N in the hint nor the prompt, and Y is a plain yes."""
    question = Question.boolean("q", "Go?", persistence=AnswerReusePolicy.NONE)

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("Y\r")
        return await prompter.ask_question(asked(question))

    answer, screen = at_terminal(work)
    assert answer == QuestionAnswer(value=True)
    assert "remembered" not in screen
    assert "[y/n] >" in screen
    assert boolean_answer("N", None, reusable=False) == QuestionAnswer(value=False)
    assert boolean_answer("N", None) == QuestionAnswer(value=False, remember=True)
