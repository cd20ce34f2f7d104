"""The live channel through the embedding API: a run's questions on the inbox, answered there.

A :class:`~coordinator.ToolCoordinator` is handed a live channel's prompter
and observer; the inbox's end (:class:`LiveRuns`) is connected over the
run's real socket, in the same event loop, as ``inquiry serve`` would be.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import AskingTool, assistant_calls, conversation_on_disk, executor
from inbox_helpers import answered, live_directory
from run_helpers import every_byte

from coordinator import ToolCoordinator
from coordinator.adapters.live import (
    LiveChannel,
    LiveDirectoryError,
    LiveRuns,
    MessageError,
    NoLongerAskedError,
)
from coordinator.adapters.live import (
    live_directory as users_live_directory,
)
from coordinator.adapters.live._messages import decode
from coordinator.driver import QuestionAnswer, parse_tools_config
from machines import Question

if TYPE_CHECKING:
    from pathlib import Path

    from machines import ShowDeliveryPrompt, ShowPermissionPrompt, ShowQuestion

#: Tools run without asking; questions are the person's.
PERSON = parse_tools_config({"defaults": {"run": "unattended"}})
PIN = "4812-secret-pin"


async def _listed(runs: LiveRuns, count: int) -> dict[str, str]:
    """Wait until the inbox holds ``count`` questions; each question id's key."""
    seen = runs.version
    while len(runs.questions()) != count:
        seen = await runs.changed(seen, timeout=5.0)
    return {str(q.asked.question.id): q.asked.key for q in runs.questions()}


def test_parallel_questions_show_together_and_each_is_answered_from_the_inbox(
    tmp_path: Path,
) -> None:
    """Three questions wait together; unfit answers are refused; a secret reaches only the tool."""
    tools = {
        "deploy": AskingTool([Question.secret("pin", "The PIN?")]),
        "publish": AskingTool([Question.select("channel", "Where?", ["beta", "stable"])]),
        "fix": AskingTool([Question.boolean("apply", "Apply it?")]),
    }
    conversation = conversation_on_disk(tmp_path / "c")
    calls = assistant_calls(conversation, ("c1", "deploy"), ("c2", "publish"), ("c3", "fix"))

    async def scene() -> None:
        with live_directory() as where:
            runs = LiveRuns(where)
            watching = asyncio.create_task(runs.watch())
            async with LiveChannel.open(directory=where, title="test") as live:
                coordinator = ToolCoordinator(
                    conversation,
                    tools={name: executor(tool) for name, tool in tools.items()},
                    config=PERSON,
                    prompter=live.prompter(),
                    on_step=live.observe,
                )
                running = asyncio.create_task(coordinator.run(calls))
                keys = await _listed(runs, 3)
                run_name = runs.questions()[0].run
                refused = await runs.answer(run_name, keys["channel"], "nightly")
                assert not refused.taken
                assert refused.reason is not None
                assert "one of 'beta', 'stable'" in refused.reason
                assert len(runs.questions()) == 3  # nothing changed
                for question, value in (("apply", False), ("channel", "stable"), ("pin", PIN)):
                    reply = await runs.answer(run_name, keys[question], value)
                    assert reply.taken, reply
                with pytest.raises(NoLongerAskedError):  # the first answer won
                    await runs.answer(run_name, keys["apply"], True)
                responses = await running
            watching.cancel()
        assert [r.is_error for r in responses] == [False, False, False]

    asyncio.run(scene())
    assert tools["deploy"].runs[-1] == {"pin": PIN}
    assert tools["fix"].runs[-1] == {"apply": False}
    recorded = answered(tmp_path / "c")
    assert recorded["apply"] == (False, {"route": "person", "by": "inbox"})
    assert recorded["pin"] == ("<redacted>", {"route": "person", "by": "inbox"})
    assert PIN.encode() not in every_byte(tmp_path)


class _Terminal:
    """A person at the terminal who answers once the question is on the inbox too."""

    def __init__(self, runs: LiveRuns) -> None:
        self.runs = runs

    async def ask_question(self, _prompt: ShowQuestion) -> QuestionAnswer:
        await _listed(self.runs, 1)
        return QuestionAnswer(value=True)

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> object:  # pragma: no cover
        raise AssertionError(prompt)

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> object:  # pragma: no cover
        raise AssertionError(prompt)


def test_a_question_answered_at_the_terminal_leaves_the_inbox_recorded_once(
    tmp_path: Path,
) -> None:
    """The terminal's answer wins: the question leaves the page, and the page's comes too late."""
    tool = AskingTool([Question.boolean("apply", "Apply it?")])
    conversation = conversation_on_disk(tmp_path / "c")
    calls = assistant_calls(conversation, ("c1", "fix"))

    async def scene() -> None:
        with live_directory() as where:
            runs = LiveRuns(where)
            watching = asyncio.create_task(runs.watch())
            async with LiveChannel.open(directory=where) as live:
                coordinator = ToolCoordinator(
                    conversation,
                    tools={"fix": executor(tool)},
                    config=PERSON,
                    prompter=live.prompter(_Terminal(runs)),  # type: ignore[arg-type]
                    on_step=live.observe,
                )
                running = asyncio.create_task(coordinator.run(calls))
                keys = await _listed(runs, 1)
                run_name = runs.questions()[0].run
                await running
                await _listed(runs, 0)
                with pytest.raises(NoLongerAskedError):
                    await runs.answer(run_name, keys["apply"], False)
            watching.cancel()

    asyncio.run(scene())
    assert tool.runs[-1] == {"apply": True}
    assert answered(tmp_path / "c") == {"apply": (True, {"route": "person"})}


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b'{"answer": {"ask": "1", "key": "k", "value": 1}}\n',
        b'{"asked": {"key": "k"}}\n',
        b'{"run": {}, "gone": {}}\n',
        (
            b'{"asked": {"key": "k", "tool_call_id": "c", "tool_name": "t", "inquiry_id": "k", '
            b'"since": "now", "question": {"id": "q", "text": "?", "kind": "select", '
            b'"options": []}}}\n'
        ),
        b'{"shutdown": {}}\n',
    ],
)
def test_a_line_that_is_not_the_protocol_is_refused_naming_why(line: bytes) -> None:
    """Malformed, mistyped, unknown or unanswerable messages are errors, never half-read."""
    with pytest.raises(MessageError):
        decode(line)


def test_a_live_directory_others_could_use_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link, or a directory open to others, is never used to meet runs."""
    target = tmp_path / "real"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setenv("INQUIRY_LIVE_DIR", str(link))
    with pytest.raises(LiveDirectoryError, match="symbolic link"):
        users_live_directory()
    os.chmod(target, 0o755)  # noqa: PTH101, S103 - readable by others on purpose
    monkeypatch.setenv("INQUIRY_LIVE_DIR", str(target))
    with pytest.raises(LiveDirectoryError, match="may be used by others"):
        users_live_directory()
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("INQUIRY_LIVE_DIR", str(fresh))
    assert users_live_directory() == fresh
    assert fresh.stat().st_mode & 0o777 == 0o700
