"""What a tool says that cannot be written fails its call, never the run (issue 36, item 7).

A record's validators refuse what no record may hold, but the writer nests
a record inside an entry (three more levels) and encodes its text as
UTF-8: a question whose default is nested 252 levels deep, or a result
holding a lone surrogate, was taken in, and then every save failed. The run
aborted with a traceback, and every ``--continue-turn`` the same way. Now
such an outcome fails its call as malformed, in one line, the run goes on,
and the turn can be continued.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import (
    UNATTENDED,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    run,
)
from run_helpers import local_tools, responses

from coordinator import ToolCoordinator, find_incomplete_turn, load_conversation
from coordinator.cli._main import main
from coordinator.driver import Ask, BuiltinOutcome, BuiltinTool, Success
from machines import Question

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from machines import JsonValue


def nested(depth: int) -> JsonValue:
    """A value ``depth`` arrays deep."""
    value: JsonValue = 1
    for _ in range(depth):
        value = [value]
    return value


#: A local tool asking a question whose default is nested as deep as its argument says.
_DEEP_DEFAULT = """
import json, sys
request = json.load(sys.stdin)
if "go" in request["answers"]:
    print(json.dumps({"type": "success", "content": "went"}))
else:
    default = 1
    for _ in range(DEPTH):
        default = [default]
    question = {"id": "go", "text": "Go?", "answer_type": {"type": "boolean"}, "default": default}
    print(json.dumps({"type": "needs_input", "question": question}))
"""


@pytest.mark.parametrize("depth", [252, 253])
def test_a_question_too_deep_to_write_fails_its_call_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    """A run: the call fails as malformed in one line, the other runs, and it all saves."""
    scenario = local_tools(
        tmp_path,
        {"deep": _DEEP_DEFAULT.replace("DEPTH", str(depth)), "fine": 'print("fine")'},
        '{ tool = "deep" }, { tool = "fine" }',
    )
    directory = tmp_path / "conversation"
    out = io.StringIO()
    status = main(["run", str(scenario), "--no-tty", "--conversation", str(directory)], out=out)
    err = capsys.readouterr().err
    assert status == 1, err  # a call failed: not 2 (the conversation could not be written)
    assert "Traceback" not in out.getvalue() + err
    conversation = load_conversation(directory)
    by_id = responses(conversation)
    assert by_id["call_1_1_2"].content == "fine\n"
    failed = by_id["call_1_1_1"]
    assert failed.is_error
    assert "its question cannot be recorded" in failed.content
    assert "\n" not in failed.content
    incomplete = find_incomplete_turn(conversation.stream)
    assert incomplete is None or not incomplete.blocked  # nothing is left open
    assert_invariants(conversation)


class Echoes(BuiltinTool):
    """A built-in tool whose result (or question) holds what UTF-8 cannot: a lone surrogate."""

    def __init__(self, *, ask: bool) -> None:
        """Ask a question with the surrogate in its text, or answer with it."""
        self.ask = ask

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Say something no file can hold."""
        del arguments, answers
        if self.ask:
            return Ask(Question.boolean("go", "Go \ud800?"))
        return Success("half a pair: \ud800")


@pytest.mark.parametrize("ask", [False, True], ids=["result", "question"])
def test_text_that_is_not_unicode_fails_its_call_not_every_save(tmp_path: Path, ask: bool) -> None:
    """A lone surrogate in a result or a question: that call fails; the batch saves."""
    conversation = conversation_on_disk(tmp_path / "c")
    coordinator = ToolCoordinator(
        conversation,
        tools={"echo": executor(Echoes(ask=ask)), "ok": executor(Echoes(ask=False))},
        config=UNATTENDED,
    )
    requests = assistant_calls(conversation, ("call_1", "echo"))
    (response,) = run(coordinator.run(requests))
    assert response.is_error
    said = "its question cannot be recorded" if ask else "its result cannot be recorded"
    assert said in response.content
    assert "\ud800" not in response.content
    saved = load_conversation(tmp_path / "c")
    assert len(saved.stream) == len(conversation.stream)
    assert_invariants(saved)
