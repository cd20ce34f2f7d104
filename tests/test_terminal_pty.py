"""The terminal prompter at a real pseudo-terminal: `inquiry run` driven by pexpect.

Each test starts `inquiry run` in a pty (prompt_toolkit's cursor-position
requests turned off, since nothing answers them here), waits for each prompt
to be on screen before typing, and checks what the screen showed and what the
conversation recorded. Everything the program wrote to the terminal is kept
in ``Session.screen``.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import termios
import time
from typing import TYPE_CHECKING, Any

import orjson
import pexpect
import pytest
from coordinator_harness import payloads
from process_helpers import PATIENCE, stop_signals_at_default, wait_for
from run_helpers import (
    LOOPING,
    TOUR_SECRET,
    TOUR_TOOLS,
    assert_paired,
    every_byte,
    local_tools,
    outcomes,
    responses,
    seeded,
    write,
)

from coordinator import load_conversation
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
)
from machines.wording import DELIVERY_CANCELLED, INPUT_CANCELLED, SKIPPED_BY_USER

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

DOWN = "\x1b[B"
ESC = "\x1b"
CTRL_C = "\x03"
CTRL_BACKSLASH = "\x1c"
CPR_QUERY = "\x1b[6n"
CPR_ANSWER = "\x1b[1;1R"
CTRL_D = "\x04"
CTRL_U = "\x15"
BACKSPACE = "\x7f"
ACCEPT_EDIT = "\x1b\r"  # Escape, then Enter
BOOLEAN = "[y/n/Y/N] >"
PERMISSION = "[y/Y/n/N/p/r/e] >"
SELECT = "up/down or a number"


def modify(pattern: str, replacement: str) -> str:
    """An fs_modify_file call on the seeded notes."""
    arguments = f'{{ path = "notes.txt", pattern = "{pattern}", replacement = "{replacement}" }}'
    return f'{{ tool = "fs_modify_file", arguments = {arguments} }}'


def scenario(tmp_path: Path, *cycles: str, run: str = "unattended") -> Path:
    """A one-turn scenario of the tour's tools, each cycle one call."""
    seeded(tmp_path)
    turns = "".join(f"[[turns.cycles]]\ncalls = [{call}]\n" for call in cycles)
    return write(
        tmp_path / "scenario.toml",
        f"""
        [workspace]
        seed = "seed"
        [defaults]
        run = "{run}"
        {TOUR_TOOLS}
        [[turns]]
        message = "Go."
        {turns}
        """,
    )


class Session:
    """`inquiry run SCENARIO` in a pseudo-terminal."""

    def __init__(
        self, tmp_path: Path, scenario: Path, options: Sequence[str], *, cpr: bool = False
    ) -> None:
        """Start the run with ``options``; the conversation goes to ``tmp_path/conversation``.

        ``cpr``: prompt_toolkit asks the terminal where its cursor is, and the
        test answers when it chooses to (:meth:`answer_cpr`), as a slow link would.
        """
        self.directory = tmp_path / "conversation"
        self.log = io.BytesIO()
        env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
        if cpr:
            del env["PROMPT_TOOLKIT_NO_CPR"]
        # Ctrl-C and Ctrl-Backslash must reach the run as signals, whatever this
        # process was started ignoring (process_helpers.stop_signals_at_default).
        with stop_signals_at_default():
            self.child = pexpect.spawn(
                sys.executable,
                [
                    "-m",
                    "coordinator",
                    "run",
                    str(scenario),
                    "--conversation",
                    str(self.directory),
                    *options,
                ],
                cwd=str(tmp_path),
                env=env,
                dimensions=(50, 200),
                timeout=PATIENCE,
            )
        self.child.logfile_read = self.log

    def expect(self, text: str) -> None:
        """Wait until ``text`` has been written to the terminal."""
        self.child.expect_exact(text.encode())

    def type(self, keys: str) -> None:
        """Type ``keys``."""
        self.child.send(keys)

    def finish(self) -> int:
        """Wait for the run to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus is not None
        return self.child.exitstatus

    def killed_by(self) -> tuple[int | None, list[Any]]:
        """Wait for the run to end; the signal that killed it (if one did), and the modes left."""
        self.child.expect(pexpect.EOF)
        modes = self.modes()
        self.child.close()
        return self.child.signalstatus, modes

    def ended(self) -> tuple[int | None, int | None, list[Any]]:
        """Wait for the run to end: its exit status, the signal if one ended it, the modes left."""
        self.child.expect(pexpect.EOF)
        modes = self.modes()
        self.child.close()
        return self.child.exitstatus, self.child.signalstatus, modes

    def answer_cpr(self) -> None:
        """Answer the terminal's cursor-position query, as a terminal does (row 1, column 1)."""
        self.type(CPR_ANSWER)

    def modes(self) -> list[Any]:
        """The terminal's modes (``termios``), as the program left them."""
        return termios.tcgetattr(self.child.child_fd)

    @property
    def screen(self) -> str:
        """Everything written to the terminal so far."""
        return self.log.getvalue().decode("utf-8", errors="replace")

    def close(self) -> None:
        """Stop the run if it is still going, and close the terminal."""
        self.child.close(force=True)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Callable[..., Session]]:
    """A factory of sessions, each stopped at the end of the test.

    A session runs with ``--verbose`` unless told otherwise: the inquiry ids
    on screen tell a test which question it is at.
    """
    started: list[Session] = []

    def start(
        scenario: Path, *, verbose: bool = True, options: Sequence[str] = (), cpr: bool = False
    ) -> Session:
        run = Session(tmp_path, scenario, ("--verbose",) * verbose + tuple(options), cpr=cpr)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


def test_a_secret_is_never_shown_or_saved_but_reaches_the_tool(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """What is typed at a secret prompt is not on screen or disk, and the tool got it."""
    run = session(
        scenario(
            tmp_path, '{ tool = "deploy", arguments = { environment = "staging" } }', run="ask"
        )
    )
    run.expect("Run deploy?")
    run.expect(PERMISSION)
    run.type("y\r")
    run.expect("call_1_1_1.token.1")
    run.expect("(hidden) >")
    run.type(TOUR_SECRET + "\r")
    run.expect("matched the expected fingerprint")
    assert run.finish() == 0
    assert TOUR_SECRET not in run.screen
    assert "The token (17 characters)" in run.screen
    assert TOUR_SECRET.encode() not in every_byte(run.directory)
    conversation = assert_paired(run.directory)
    assert list(outcomes(conversation).values()) == [Redacted(id="call_1_1_1.token.1")]


def test_capital_y_remembers_the_answer_for_the_turn(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """Y then Enter answers yes, and the same question of a later call is not asked."""
    run = session(scenario(tmp_path, modify("teh", "the"), modify("Projekt", "Project")))
    run.expect("call_1_1_1.apply_changes.1")
    run.expect("-This is teh plan")  # the diff, shown above the question
    run.expect(BOOLEAN)
    run.type("Y\r")  # Y, then Enter: yes, remembered
    assert run.finish() == 0  # no second prompt: the run went on by itself
    assert "· call_1_2_1.apply_changes.1" not in run.screen
    assert "from this turn's memory" in run.screen
    conversation = assert_paired(run.directory)
    assert list(outcomes(conversation).values()) == [
        Answered(id="call_1_1_1.apply_changes.1", answer=True),
        Answered(id="call_1_2_1.apply_changes.1", answer=True),
    ]
    notes = (run.directory / "workspace" / "notes.txt").read_text()
    assert "the plan for the Project" in notes


@pytest.mark.parametrize(
    ("where", "keys"),
    [("a select", CTRL_C), ("a text prompt", CTRL_U + CTRL_D)],
    ids=["ctrl-c-at-select", "ctrl-d-at-text"],
)
def test_cancelling_a_prompt_cancels_that_question_only(
    tmp_path: Path, session: Callable[..., Session], where: str, keys: str
) -> None:
    """Ctrl-C (or Ctrl-D on an empty line): Cancelled(user), and the next prompt still works."""
    run = session(scenario(tmp_path, '{ tool = "release" }', modify("teh", "the")))
    run.expect("call_1_1_1.bump.1")
    run.expect(SELECT)
    if where == "a select":
        run.type(keys)
        cancelled = "call_1_1_1.bump.1"
    else:
        run.type("\r")
        run.expect("call_1_1_1.headline.1")
        run.expect("Enter alone accepts the default shown")
        run.expect("Small fixes")
        run.type(keys)
        cancelled = "call_1_1_1.headline.1"
    run.expect("cancelled: the tool is told so")
    run.expect("call_1_2_1.apply_changes.1")
    run.expect(BOOLEAN)
    run.type("n\r")
    assert run.finish() == 1  # a question ended without an answer
    conversation = assert_paired(run.directory)
    found = outcomes(conversation)
    assert found[cancelled] == Cancelled(id=cancelled, reason=CancellationReason.USER)
    assert found["call_1_2_1.apply_changes.1"] == Answered(
        id="call_1_2_1.apply_changes.1", answer=False
    )
    tool_responses = responses(conversation)
    assert tool_responses["call_1_1_1"].content == "Tool input cancelled by user."
    assert "was not applied" in tool_responses["call_1_2_1"].content


def test_enter_takes_the_default(tmp_path: Path, session: Callable[..., Session]) -> None:
    """Enter picks the default option, keeps the default text and answers the default boolean."""
    run = session(scenario(tmp_path, '{ tool = "release" }', modify("teh", "the")))
    run.expect("call_1_1_1.bump.1")
    run.expect(SELECT)
    run.type("\r")
    run.expect("call_1_1_1.headline.1")
    run.expect("Small fixes")
    run.type("\r")
    run.expect("call_1_2_1.apply_changes.1")
    run.expect("Enter alone: yes")
    run.expect(BOOLEAN)
    run.type("\r")
    assert run.finish() == 0
    conversation = assert_paired(run.directory)
    assert [getattr(r, "answer", None) for r in outcomes(conversation).values()] == [
        "patch",
        "Small fixes",
        True,
    ]
    workspace = run.directory / "workspace"
    assert (workspace / "VERSION").read_text() == "1.4.3\n"
    assert "the plan" in (workspace / "notes.txt").read_text()


def test_a_select_is_answered_by_number_or_by_arrow_key(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """Typing an option's number, or moving down from the default, picks that option."""
    run = session(scenario(tmp_path, '{ tool = "release" }', '{ tool = "release" }'))
    run.expect("call_1_1_1.bump.1")
    run.expect("3. major")
    run.expect(SELECT)
    run.type("3\r")
    run.expect("call_1_1_1.headline.1")
    run.expect("Small fixes")
    run.type("\r")
    run.expect("call_1_2_1.bump.1")
    run.expect(SELECT)
    run.type(DOWN + "\r")
    run.expect("call_1_2_1.headline.1")
    run.expect("Small fixes")
    run.type("\r")
    assert run.finish() == 0
    found = outcomes(assert_paired(run.directory))
    assert found["call_1_1_1.bump.1"] == Answered(id="call_1_1_1.bump.1", answer="major")
    assert found["call_1_2_1.bump.1"] == Answered(id="call_1_2_1.bump.1", answer="minor")
    assert (run.directory / "workspace" / "VERSION").read_text() == "2.1.0\n"


def test_permission_print_reason_and_edit(tmp_path: Path, session: Callable[..., Session]) -> None:
    """P prints the arguments, r skips with a reason, e runs with edited (valid) JSON."""
    run = session(
        scenario(tmp_path, modify("teh", "the"), modify("Projekt", "Project"), run="ask")
    )
    run.expect("Run fs_modify_file?")
    run.expect(PERMISSION)
    run.type("p\r")
    run.expect('"replacement": "the"')  # the arguments, printed in full as JSON
    run.expect(PERMISSION)
    run.type("r\r")
    run.expect("Why skip it?")
    run.type("not now\r")
    run.expect("skip: not now")

    run.expect("[call_1_2_1]")
    run.expect(PERMISSION)
    run.type("e\r")
    run.expect("arguments (JSON):")
    run.type("x" + ACCEPT_EDIT)  # no longer JSON
    run.expect("not valid JSON")
    run.expect("arguments (JSON):")
    edited = {"path": "notes.txt", "pattern": "Projekt", "replacement": "PROJECT"}
    shown = orjson.dumps(
        {"path": "notes.txt", "pattern": "Projekt", "replacement": "Project"},
        option=orjson.OPT_INDENT_2,
    )
    run.type(BACKSPACE * (len(shown) + 1) + orjson.dumps(edited).decode() + ACCEPT_EDIT)
    run.expect("call_1_2_1.apply_changes.1")
    run.expect(BOOLEAN)
    run.type("y\r")
    assert run.finish() == 0
    conversation = assert_paired(run.directory)
    tool_responses = responses(conversation)
    assert tool_responses["call_1_1_1"].content == "Tool skipped by user: not now"
    assert "'Projekt'" in tool_responses["call_1_2_1"].content
    assert "PROJECT notes" in (run.directory / "workspace" / "notes.txt").read_text()
    assert "with edited arguments" in run.screen


def test_a_question_is_shown_once_without_ids_and_its_answer_names_it(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """Without --verbose: no internal id on screen, the question once, `yes` answers it."""
    run = session(scenario(tmp_path, modify("teh", "the")), verbose=False)
    run.expect("Apply this change to notes.txt?")
    run.expect(BOOLEAN)
    run.type("yes\r")
    assert run.finish() == 0
    screen = run.screen
    assert "y or yes · n or no, then Enter · Y or N, then Enter: remembered" in screen
    assert screen.count("Apply this change to notes.txt?") == 1
    assert "call_1" not in screen
    assert "= fs_modify_file · apply_changes: answered by the person: true" in screen
    conversation = assert_paired(run.directory)
    assert list(outcomes(conversation).values()) == [
        Answered(id="call_1_1_1.apply_changes.1", answer=True)
    ]


def test_a_text_default_is_a_placeholder_that_typing_replaces(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """The default is shown but not in the line: what is typed is the whole answer."""
    run = session(scenario(tmp_path, '{ tool = "release" }'))
    run.expect("call_1_1_1.bump.1")
    run.expect(SELECT)
    run.type("\r")
    run.expect("call_1_1_1.headline.1")
    run.expect("Small fixes")  # the placeholder
    run.type("Typos\r")
    assert run.finish() == 0
    found = outcomes(assert_paired(run.directory))
    assert found["call_1_1_1.headline.1"] == Answered(id="call_1_1_1.headline.1", answer="Typos")


def test_a_second_ctrl_c_at_a_prompt_stops_the_run(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """Ctrl-C cancels its question and says a second stops the run; the second does, cleanly."""
    run = session(
        scenario(
            tmp_path, modify("teh", "the"), modify("Projekt", "Project"), '{ tool = "release" }'
        )
    )
    run.expect("call_1_1_1.apply_changes.1")
    run.expect(BOOLEAN)
    run.type(CTRL_C)
    run.expect("Ctrl-C again stops the run")
    run.expect("call_1_2_1.apply_changes.1")
    run.expect(BOOLEAN)
    run.type(CTRL_C)
    run.expect("stopping the run")
    assert run.finish() == 3  # a turn left incomplete
    assert "inquiry: interrupted" in run.screen
    conversation = assert_paired(run.directory)
    assert list(outcomes(conversation).values()) == [
        Cancelled(id="call_1_1_1.apply_changes.1", reason=CancellationReason.USER),
        Cancelled(id="call_1_2_1.apply_changes.1", reason=CancellationReason.USER),
    ]
    tool_responses = responses(conversation)
    # An interrupt closes an open question as the user's cancel (RFD 082).
    assert tool_responses["call_1_1_1"].content == INPUT_CANCELLED
    assert tool_responses["call_1_2_1"].content == INPUT_CANCELLED
    assert "call_1_3_1" not in tool_responses  # the run stopped before the third cycle


def test_a_question_asked_again_is_said_at_each_prompt_until_the_limit(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """A tool asking one question nine times: each re-ask is said on screen, then the refusal."""
    run = session(local_tools(tmp_path, {"loop": LOOPING}, '{ tool = "loop" }'), verbose=False)
    for attempt in range(1, 9):
        if attempt > 1:
            run.expect(f"? loop asks proceed: asked again, attempt {attempt} of 8")
        run.expect("Proceed?")
        run.expect(BOOLEAN)
        run.type("y\r")
    run.expect("? loop asks proceed (boolean; asked again, attempt 9: more than the 8 allowed)")
    run.expect("x loop · proceed: cancelled (attempts_exhausted): refused, no answer taken")
    run.expect("cause: The tool 'loop' asked question 'proceed' (\"Proceed?\") again after 8")
    run.expect("<- loop failed: its question proceed was not answered")
    assert run.finish() == 1
    # Each prompt, then the refused ask (no prompt showed it) and its cause.
    assert run.screen.count("Proceed?") == 8 + 2


ASKS_A_NAME = """
import json, sys
answers = json.load(sys.stdin)["answers"]
if "name" not in answers:
    question = {"id": "name", "text": "Your name?", "answer_type": {"type": "text"}}
    print(json.dumps({"type": "needs_input", "question": question}))
    sys.exit(0)
print(json.dumps({"type": "success", "content": "hello " + answers["name"]}))
"""

# Asks the model its question only once the other call's question is saved,
# that is, while that question's prompt is on screen.
ASKS_THE_MODEL_MEANWHILE = f"""
import json, pathlib, sys, time
answers = json.load(sys.stdin)["answers"]
if "fix" in answers:
    print(json.dumps({{"type": "success", "content": "fixed"}}))
    sys.exit(0)
events = pathlib.Path("../events.json")
deadline = time.monotonic() + {PATIENCE}
while b"call_1_1_1.name.1" not in (events.read_bytes() if events.exists() else b""):
    if time.monotonic() > deadline:
        sys.exit("the other call's question never came")
    time.sleep(0.01)
question = {{"id": "fix", "text": "Fix it?", "answer_type": {{"type": "boolean"}}}}
print(json.dumps({{"type": "needs_input", "question": question}}))
"""


def test_an_answer_is_printed_under_its_prompt_not_under_another_calls_lines(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """What a parallel call did while a prompt was open comes after the prompt's answer, headed."""
    scenario = local_tools(
        tmp_path,
        {"asker": ASKS_A_NAME, "quick": ASKS_THE_MODEL_MEANWHILE},
        '{ tool = "asker" }, { tool = "quick" }',
        extra='[tools.quick.questions.fix]\ntarget = "assistant"\n',
    )
    answers = write(tmp_path / "answers.toml", '[[model]]\nquestion = "fix"\nvalue = true\n')
    run = session(scenario, verbose=False, options=("--tty", "--answers", str(answers)))
    run.expect("Your name?")
    run.expect(">")
    # The model's answer to the other call is saved before that call runs again.
    events = run.directory / "events.json"
    wait_for(
        lambda: events.read_bytes().count(b"call_1_1_2.fix.1") >= 2 or None,
        "the other call asked the model and was answered",
    )
    run.type("Ada\r")
    assert run.finish() == 0
    screen = run.screen
    by_person = screen.index('= asker · name: answered by the person: "Ada"')
    by_model = screen.index("= quick · fix: answered by the model: true")
    assert by_person < by_model
    assert screen.index("? quick asks fix (boolean; for the model): Fix it?") > by_person
    assert by_person < screen.index("[quick]", by_person) < by_model
    assert screen.count("Your name?") == 1


@pytest.mark.parametrize(
    "keys", ["Y\r", "y\r\r", "n\r\r\r"], ids=["Y-Enter", "y-Enter-Enter", "n-3-Enters"]
)
def test_keys_typed_with_an_answer_do_not_answer_the_next_question(
    tmp_path: Path, session: Callable[..., Session], keys: str
) -> None:
    """Keys sent in one write with an answer are not carried over: the next prompt waits."""
    run = session(scenario(tmp_path, modify("teh", "the"), '{ tool = "release" }'))
    run.expect("call_1_1_1.apply_changes.1")
    run.expect(BOOLEAN)
    run.type(keys)  # one write: the answer and what follows it
    run.expect("call_1_2_1.bump.1")
    run.expect(SELECT)
    run.type("3\r")  # had a leftover Enter answered, this would answer the next prompt
    run.expect("call_1_2_1.headline.1")
    run.expect("Small fixes")
    run.type("Typos\r")
    assert run.finish() == 0
    found = outcomes(assert_paired(run.directory))
    assert found["call_1_2_1.bump.1"] == Answered(id="call_1_2_1.bump.1", answer="major")
    assert found["call_1_2_1.headline.1"] == Answered(id="call_1_2_1.headline.1", answer="Typos")
    assert (run.directory / "workspace" / "VERSION").read_text() == "2.0.0\n"


def gated(gate: Path) -> str:
    """A local tool that asks a boolean (Enter alone: yes) once ``gate`` exists."""
    return f"""
import json, pathlib, sys, time
answers = json.load(sys.stdin)["answers"]
if "go" in answers:
    print(json.dumps({{"type": "success", "content": "go=" + json.dumps(answers["go"])}}))
    sys.exit(0)
deadline = time.monotonic() + {PATIENCE}
while not pathlib.Path({str(gate)!r}).exists():
    if time.monotonic() > deadline:
        sys.exit("never let through")
    time.sleep(0.01)
question = {{"id": "go", "text": "Go on?", "answer_type": {{"type": "boolean"}}, "default": True}}
print(json.dumps({{"type": "needs_input", "question": question}}))
"""


def test_keys_typed_before_a_question_is_shown_do_not_answer_it(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """Enter pressed while no prompt is on screen is discarded when the next question shows."""
    gate = tmp_path / "gate"
    run = session(
        local_tools(
            tmp_path,
            {"first": ASKS_A_NAME, "later": gated(gate)},
            '{ tool = "first" }, { tool = "later" }',
        ),
        verbose=False,
    )
    run.expect("Your name?")
    run.expect(">")
    run.type("Ada\r")
    run.expect('answered by the person: "Ada"')
    run.type("\r")  # no prompt on screen: the other call waits for its gate
    gate.touch()
    run.expect("Go on?")
    run.expect(BOOLEAN)
    run.type("n\r")
    assert run.finish() == 0
    found = outcomes(assert_paired(run.directory))
    assert found["call_1_1_2.go.1"] == Answered(id="call_1_1_2.go.1", answer=False)


#: Typed while no prompt is on screen: never shown, never an answer.
TYPED_AHEAD = "zebra-keys"


@pytest.mark.parametrize("ending", ["answered", "sigterm"])
def test_keys_typed_while_no_prompt_is_on_screen_are_not_echoed(
    tmp_path: Path, session: Callable[..., Session], ending: str
) -> None:
    """Keys typed before the first prompt are not on screen; the modes end as they began.

    However the run ends: answered to the end, or stopped by SIGTERM while
    its tool waits (no prompt on screen).
    """
    gate = tmp_path / "gate"
    run = session(local_tools(tmp_path, {"later": gated(gate)}, '{ tool = "later" }'))
    before = run.modes()
    run.expect("-> later")  # the call runs: no prompt yet, and none until the gate opens
    wait_for(lambda: run.modes() != before or None, "the terminal set not to echo")
    run.type(f"{TYPED_AHEAD}\r")
    if ending == "sigterm":
        run.child.kill(signal.SIGTERM)
        assert run.ended() == (128 + signal.SIGTERM, None, before)
    else:
        gate.touch()
        run.expect("Go on?")
        run.expect(BOOLEAN)
        run.type("n\r")
        assert run.ended() == (0, None, before)
        found = outcomes(assert_paired(run.directory))
        assert found["call_1_1_1.go.1"] == Answered(id="call_1_1_1.go.1", answer=False)
    assert TYPED_AHEAD not in run.screen


# ------------------------------------------------------ the keys (RFD 092)

#: A local tool asking one question of the kind its arguments name, text
#: "Question N?" (kind "none": asking nothing), then saying it is done.
ASKS = """
import json, sys
request = json.load(sys.stdin)
kind, n = request["arguments"]["kind"], request["arguments"]["n"]
if kind != "none" and "q" not in request["answers"]:
    answer_type = {"type": kind}
    if kind == "select":
        answer_type["options"] = ["left", "right"]
    question = {"id": "q", "text": f"Question {n}?", "answer_type": answer_type}
    print(json.dumps({"type": "needs_input", "question": question}))
    sys.exit(0)
print(json.dumps({"type": "success", "content": f"done {n}"}))
"""

#: Each prompt kind: how its tool is run, what shows call ``n``'s prompt, and
#: the prompt's own line (once drawn, it reads keys), and what the tool call
#: of a cancelled prompt is answered.
PROMPT_KINDS: dict[str, tuple[str, str, Callable[[int], str], str, str]] = {
    "permission": ("none", 'run = "ask"', lambda n: f'"n":{n}', PERMISSION, SKIPPED_BY_USER),
    "delivery": ("none", 'result = "ask"', lambda n: f"done {n}", "[y/n/p] >", DELIVERY_CANCELLED),
    "boolean": ("boolean", "", lambda n: f"Question {n}?", BOOLEAN, INPUT_CANCELLED),
    "select": ("select", "", lambda n: f"Question {n}?", SELECT, INPUT_CANCELLED),
    "text": ("text", "", lambda n: f"Question {n}?", ">", INPUT_CANCELLED),
    "secret": ("secret", "", lambda n: f"Question {n}?", "(hidden) >", INPUT_CANCELLED),
}


def asking(tmp_path: Path, kind: str, *cycles: Sequence[int]) -> Path:
    """A scenario whose cycles call the asking tool, each call ``n`` with a prompt of ``kind``."""
    asks, mode, _, _, _ = PROMPT_KINDS[kind]
    program = write(tmp_path / "asks.py", ASKS)

    def call(n: int) -> str:
        return f'{{ tool = "asks", arguments = {{ kind = "{asks}", n = {n} }} }}'

    played = "".join(f"[[turns.cycles]]\ncalls = [{', '.join(map(call, ns))}]\n" for ns in cycles)
    tool = f'[tools.asks]\ncommand = ["{sys.executable}", "{program}"]\n{mode}\n'
    turn = f'[[turns]]\nmessage = "Go."\n{played}'
    return write(tmp_path / "scenario.toml", f'[defaults]\nrun = "unattended"\n{tool}{turn}')


def at_prompt(run: Session, kind: str, n: int | Sequence[int] | None = None) -> int | None:
    """Wait until a prompt of ``kind`` is on screen, reading keys; say which call's it is.

    ``n``: the call whose prompt it is, or the calls one of which it may be
    (their question shown first: a prompt's own marker alone, ``>`` say, is
    also in the progress lines printed before it, and keys typed then are
    read between prompts).
    """
    _, _, shows, prompt, _ = PROMPT_KINDS[kind]
    shown = None
    if n is not None:
        calls = [n] if isinstance(n, int) else list(n)
        shown = calls[run.child.expect_exact([shows(call).encode() for call in calls])]
    run.expect(prompt)
    return shown


def call_responses(directory: Path) -> dict[str, ToolCallResponse]:
    """Each tool call's response, by the ``n`` of its call."""
    conversation = load_conversation(directory)
    numbers = {
        request.id: request.arguments["n"] for request in payloads(conversation, ToolCallRequest)
    }
    return {
        f"call {numbers[response.id]}": response
        for response in payloads(conversation, ToolCallResponse)
    }


@pytest.mark.parametrize("kind", list(PROMPT_KINDS))
def test_esc_cancels_the_prompt_and_ctrl_c_twice_stops_the_run(
    tmp_path: Path, session: Callable[..., Session], kind: str
) -> None:
    """Esc cancels (no count); Ctrl-C cancels and warns; a second Ctrl-C cancels and stops."""
    run = session(asking(tmp_path, kind, [1], [2, 3], [4]), verbose=False)
    at_prompt(run, kind, 1)
    run.type(ESC)
    run.expect("cancelled: ")
    first = at_prompt(run, kind, (2, 3))  # call 2's or call 3's: they ask at once
    run.type(CTRL_C)
    run.expect("Ctrl-C again stops the run")
    at_prompt(run, kind, 5 - (first or 0))  # the other one's
    run.type(CTRL_C)
    run.expect("Ctrl-C again: stopping the run")
    assert run.finish() == 3  # interrupted: the turn is left incomplete
    screen = run.screen
    assert screen.index("cancelled: ") < screen.index("Ctrl-C again stops the run")
    assert "Question 4?" not in screen
    conversation = assert_paired(run.directory)
    found = call_responses(run.directory)
    assert sorted(found) == ["call 1", "call 2", "call 3"]  # call 4 never ran
    assert {response.content for response in found.values()} == {PROMPT_KINDS[kind][4]}
    if PROMPT_KINDS[kind][0] != "none":
        reasons = [o.reason for o in outcomes(conversation).values()]
        assert reasons == [CancellationReason.USER] * 3


@pytest.mark.parametrize("kind", list(PROMPT_KINDS))
def test_ctrl_backslash_quits_at_once_and_sets_the_terminal_back(
    tmp_path: Path, session: Callable[..., Session], kind: str
) -> None:
    """Ctrl-Backslash at a prompt: SIGQUIT kills the run at once, the terminal as it was."""
    run = session(asking(tmp_path, kind, [1], [2]), verbose=False)
    before = run.modes()
    at_prompt(run, kind, 1)
    assert run.modes() != before  # the prompt holds the terminal raw
    run.type(CTRL_BACKSLASH)
    assert run.killed_by() == (signal.SIGQUIT, before)
    assert "\x1b[?25h" in run.screen  # the cursor shown again
    # Nothing more was saved: the prompt's call waits, as after a crash.
    events = orjson.loads((run.directory / "events.json").read_bytes())
    kinds = [event["type"] for event in events]
    assert "tool_call_response" not in kinds
    assert kinds.count("inquiry_request") == (PROMPT_KINDS[kind][0] != "none")
    assert "inquiry_response" not in kinds


def test_sigquit_from_outside_quits_at_once_and_sets_the_terminal_back(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """``kill -QUIT`` while a prompt holds the terminal: the same immediate exit."""
    run = session(asking(tmp_path, "boolean", [1]), verbose=False)
    before = run.modes()
    at_prompt(run, "boolean", 1)
    run.child.kill(signal.SIGQUIT)
    assert run.killed_by() == (signal.SIGQUIT, before)


@pytest.mark.parametrize("kind", ["boolean", "select"])
def test_a_ctrl_c_read_as_its_prompt_ends_is_not_lost(
    tmp_path: Path, session: Callable[..., Session], kind: str
) -> None:
    """The second Ctrl-C counts from the first, even while a slow terminal holds the prompt open.

    The terminal answers prompt_toolkit's cursor query late (a slow link):
    until it does, the cancelled prompt still reads keys, and keeps them.
    """
    run = session(asking(tmp_path, kind, [1], [2]), verbose=False, cpr=True)
    run.expect("Question 1?")
    run.expect(CPR_QUERY)  # not answered yet
    at_prompt(run, kind)
    run.type(CTRL_C)
    time.sleep(0.2)  # the prompt is ending, waiting for the terminal's answer
    run.type(CTRL_C)
    run.answer_cpr()
    run.expect("Ctrl-C again: stopping the run")
    assert run.finish() == 3
    assert "Question 2?" not in run.screen
    found = call_responses(run.directory)
    assert list(found) == ["call 1"]
    assert found["call 1"].content == INPUT_CANCELLED


def test_ask_user_at_the_terminal_is_asked_each_time_without_y_or_n_to_remember(
    tmp_path: Path, session: Callable[..., Session]
) -> None:
    """ask_user's boolean offers no Y/N; a Y is a plain yes; the same question is asked again."""
    arguments = '{ question = "Open a pull request?", answer_type = "boolean" }'
    ask = f'{{ tool = "ask_user", arguments = {arguments} }}'
    scenario = write(
        tmp_path / "scenario.toml",
        f'[[turns]]\nmessage = "Go."\n[[turns.cycles]]\ncalls = [{ask}]\n'
        f"[[turns.cycles]]\ncalls = [{ask}]\n",
    )
    run = session(scenario, verbose=False)
    for reply in ("Y\r", "n\r"):
        run.expect("The assistant asks (through ask_user)")
        run.expect("Open a pull request?")
        run.expect("[y/n] >")
        run.type(reply)
    assert run.finish() == 0
    screen = run.screen
    assert "remembered for this turn" not in screen
    assert "-> ask_user" not in screen  # hidden: the question is the assistant's own words
    assert "= ask_user: answered by the person: true" in screen
    assert "= ask_user: answered by the person: false" in screen
    conversation = assert_paired(run.directory)
    assert [o.answer for o in outcomes(conversation).values()] == [True, False]
