"""MCP forms at a real pseudo-terminal: `inquiry run` of examples/mcp, driven by pexpect.

The person fills each form in one prompt flow (typed fields, a multi-choice
marked with Space, a number held to its bounds), or cancels a whole form
with Esc; a URL request is accept or decline. The conversation records
each form as one question whose answer is the object.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pexpect
import pytest
from coordinator_harness import assert_invariants, payloads

from coordinator import load_conversation
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    InquiryRequest,
    ToolCallRequest,
    ToolCallResponse,
)
from machines.wording import INPUT_CANCELLED

if TYPE_CHECKING:
    from collections.abc import Iterator

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mcp"
DOWN, ESC = "\x1b[B", "\x1b"
#: Seconds to wait for what a server-backed run prints (servers start, a load may slow them).
PATIENCE = 120


class Run:
    """`inquiry run examples/mcp/scenario.toml` in a pseudo-terminal, no answers file."""

    def __init__(self, tmp_path: Path) -> None:
        """Start it; the conversation goes to ``tmp_path/conversation``."""
        self.directory = tmp_path / "conversation"
        self.log = io.BytesIO()
        env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
        self.child = pexpect.spawn(
            sys.executable,
            [
                "-m",
                "coordinator",
                "run",
                str(EXAMPLE / "scenario.toml"),
                "--conversation",
                str(self.directory),
            ],
            cwd=str(tmp_path),
            env=env,
            dimensions=(50, 200),
            timeout=PATIENCE,
        )
        self.child.logfile_read = self.log

    def expect(self, text: str) -> None:
        """Wait until ``text`` is on screen."""
        self.child.expect_exact(text.encode())

    def first(self, *texts: str) -> str:
        """Wait for whichever of ``texts`` shows first; which it was."""
        return texts[self.child.expect_exact([text.encode() for text in texts])]

    def type(self, keys: str) -> None:
        """Type ``keys``."""
        self.child.send(keys)

    def finish(self) -> int:
        """Wait for the run to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus is not None
        return self.child.exitstatus

    @property
    def screen(self) -> str:
        """Everything written to the terminal."""
        return self.log.getvalue().decode("utf-8", errors="replace")


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    """A run of the example, stopped at the end of the test."""
    started = Run(tmp_path)
    yield started
    started.child.close(force=True)


ANNOUNCE = "Announce 2.4.0: what should it say?"
AUTHORIZE = "Authorize the release desk"


def fill_deploy(run: Run) -> None:
    """Deploy's form: fill it in, its one boolean field."""
    run.expect("Deploy api?")
    run.expect("a form of 1 field")
    run.expect("up/down or a number")
    run.type("\r")
    run.expect("[y/n] >")
    run.type("y\r")


def test_a_form_is_asked_at_the_terminal_as_one_form(run: Run) -> None:
    """Each field typed, with its bounds; the multi-choice marked; one object recorded."""
    fill_deploy(run)
    for _ in range(2):  # announce and connect_ci run together: either may ask first
        if run.first(ANNOUNCE, AUTHORIZE) == AUTHORIZE:
            run.expect("up/down or a number")
            run.type("\r")  # accept
            continue
        run.expect("a form of 3 fields")
        run.expect("up/down or a number")
        run.type("\r")
        run.expect("text (at least 5 characters)")
        run.type("2.4.0 is out\r")
        run.expect("Space marks each value wanted")
        run.type(f" {DOWN} \r")  # email, chat
        run.expect("a whole number from 1 to 10000")
        run.type("0\r")  # out of bounds: refused where typed
        run.expect("field 'audience' must be a whole number from 1 to 10000")
        run.type("\x15250\r")
    assert run.finish() == 0
    conversation = load_conversation(run.directory)
    answers = [answered.answer for answered in payloads(conversation, Answered)]
    assert sorted(answers, key=str) == sorted(
        [
            {"go": True},
            {"environment": "staging"},  # the scenario's static answer
            {"headline": "2.4.0 is out", "channels": ["email", "chat"], "audience": 250},
            "accept",
        ],
        key=str,
    )
    assert "Announced 2.4.0 on email, chat to 250 people: 2.4.0 is out" in run.screen
    assert_invariants(conversation, secrets=["s3cr3t-state"])


def test_esc_in_the_middle_of_a_form_cancels_it_all(run: Run) -> None:
    """Esc at the form's second field: the question cancelled by the person, the server told."""
    fill_deploy(run)
    asked_first = run.first(ANNOUNCE, AUTHORIZE)
    if asked_first == AUTHORIZE:
        run.expect("up/down or a number")
        run.type(f"{DOWN}\r")  # decline the link
        run.expect(ANNOUNCE)
    run.expect("up/down or a number")
    run.type("\r")
    run.expect("text (at least 5 characters)")
    run.type("2.4.0 is out\r")
    run.expect("Space marks each value wanted")
    run.type(ESC)
    run.expect("cancelled: the tool is told so")
    if asked_first == ANNOUNCE:
        run.expect(AUTHORIZE)
        run.expect("up/down or a number")
        run.type(f"{DOWN}\r")
    assert run.finish() == 1  # a question ended without an answer
    conversation = load_conversation(run.directory)
    announce = next(
        r for r in payloads(conversation, InquiryRequest) if r.source.name == "announce"
    )
    cancelled = {c.id: c.reason for c in payloads(conversation, Cancelled)}
    assert cancelled == {announce.id: CancellationReason.USER}
    (call,) = [c for c in payloads(conversation, ToolCallRequest) if c.name == "announce"]
    (result,) = [r for r in payloads(conversation, ToolCallResponse) if r.id == call.id]
    assert result.content == INPUT_CANCELLED
    assert_invariants(conversation, secrets=["s3cr3t-state"])
