"""A secret question with a default (RFD 082): recorded as given, never offered, warned of once."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import textwrap
from typing import TYPE_CHECKING

from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
)
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output
from run_helpers import cli, write

from coordinator import load_conversation
from coordinator.adapters._local_tools import LocalTool, LocalToolExecutor
from coordinator.adapters._terminal import TerminalPrompter
from coordinator.driver._executors import NeedsInput
from coordinator.driver._observing import SecretDefaultNotice, StepFacts
from coordinator.driver._prompting import QuestionAnswer, ScriptedPrompter
from coordinator.driver._tool_coordinator import UNOFFERED_DEFAULT_NOTE, ToolCoordinator
from machines import (
    AnswerType,
    InquiryRequest,
    InquirySource,
    Question,
    Redacted,
    SecretValue,
    ShowQuestion,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

#: The default a careless tool gives its secret question (not a secret itself).
PLACEHOLDER = "changeme-default"
TOKEN = Question(
    id="token",
    text="Deploy token?",
    answer_type=AnswerType.secret(),
    default=PLACEHOLDER,
    context="for prod",
)


def test_a_local_tools_secret_question_with_a_default_is_read_as_given(tmp_path: Path) -> None:
    """needs_input with a secret's default: a question to ask, not a malformed outcome."""
    script = tmp_path / "tool.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json
            print(json.dumps({{"type": "needs_input", "question": {{
                "id": "token", "text": "Token?", "answer_type": {{"type": "secret"}},
                "default": "{PLACEHOLDER}"}}}}))
            """
        )
    )
    tool = LocalTool(name="deploy", command=[sys.executable, str(script)])
    result = run(
        LocalToolExecutor(tool, root=tmp_path).execute(
            ToolCallRequest(id="c1", name="deploy", arguments={}), {}
        )
    )
    assert isinstance(result, NeedsInput)
    assert result.source == InquirySource.tool("deploy")
    assert result.question.answer_type.is_secret
    assert result.question.default == PLACEHOLDER


def test_it_is_recorded_with_its_default_and_a_note_asked_and_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The request keeps the default verbatim, noted in its context; the answer is redacted."""
    conversation = conversation_on_disk(tmp_path)
    tool = AskingTool([TOKEN])
    prompter = ScriptedPrompter().answer("s3cr3t-Zq8v")
    steps: list[StepFacts] = []
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(tool)},
        config=UNATTENDED,
        prompter=prompter,
        on_step=steps.append,
    )
    with caplog.at_level(logging.WARNING, logger="coordinator"):
        (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert not response.is_error
    assert tool.runs[-1] == {"token": "s3cr3t-Zq8v"}
    (request,) = payloads(conversation, InquiryRequest)
    assert request.question.default == PLACEHOLDER
    assert request.question.context == f"for prod\n\n{UNOFFERED_DEFAULT_NOTE}"
    assert payloads(conversation, Redacted) == [Redacted(id=request.id)]
    (shown,) = prompter.shown
    assert isinstance(shown, ShowQuestion)
    assert shown.question.context == request.question.context
    notices = [notice for step in steps for notice in step.notices]
    assert notices == [
        SecretDefaultNotice(tool_call_id="c1", tool_name="deploy", question_id="token")
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [notices[0].message]
    assert "'deploy'" in warnings[0]
    assert "'token'" in warnings[0]
    assert PLACEHOLDER not in warnings[0]
    assert_invariants(conversation, ["s3cr3t-Zq8v"])


def test_the_warning_is_given_once_per_tool_and_question(tmp_path: Path) -> None:
    """Two calls ask it, one twice: each record has the note, the observer one notice."""
    conversation = conversation_on_disk(tmp_path)
    bare = Question(id="token", text="Token?", answer_type=AnswerType.secret(), default="x")
    steps: list[StepFacts] = []
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(AskingTool([bare], reask=1))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer("a1").answer("a2").answer("b1").answer("b2"),
        on_step=steps.append,
    )
    run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"), ("c2", "deploy"))))
    requests = payloads(conversation, InquiryRequest)
    assert len(requests) == 3
    assert {r.question.context for r in requests} == {UNOFFERED_DEFAULT_NOTE}
    assert len([notice for step in steps for notice in step.notices]) == 1


def test_the_terminal_never_offers_a_secrets_default() -> None:
    """Enter on nothing typed answers an empty secret, not the default; it is never on screen."""
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=40, columns=120), enable_cpr=False)

    async def main() -> QuestionAnswer:
        with create_pipe_input() as pipe:
            prompter = TerminalPrompter(input=pipe, output=output)
            shown = ShowQuestion(
                tool_call_id="c1",
                inquiry_id="c1.token.1",
                tool_name="deploy",
                source=InquirySource.tool("deploy"),
                question=TOKEN,
            )
            task = asyncio.create_task(prompter.ask_question(shown))
            for _ in range(10):
                await asyncio.sleep(0)
            pipe.send_text("\r")
            return await task

    answer = asyncio.run(main())
    assert answer == QuestionAnswer(value=SecretValue(""), remember=False)
    assert PLACEHOLDER not in screen.getvalue()
    assert "the tool's default is not offered" in screen.getvalue()


ASKS_WITH_A_DEFAULT = """
    import json, sys
    request = json.loads(sys.stdin.readline())
    if "token" not in request["answers"]:
        print(json.dumps({"type": "needs_input", "question": {
            "id": "token", "text": "Token?", "answer_type": {"type": "secret"},
            "default": "changeme-default"}}))
    else:
        print(json.dumps({"type": "success", "content": "deployed"}))
"""


def test_inquiry_run_warns_once_and_records_the_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two calls of a tool whose secret question has a default: warned once, both recorded.

    Once on stdout and stderr together: at a terminal (or with 2>&1) both
    reach the same screen.
    """
    tool = write(tmp_path / "deploy.py", ASKS_WITH_A_DEFAULT)
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [defaults]
        run = "unattended"
        [tools.deploy]
        command = ["{sys.executable}", "{tool}"]
        [[turns]]
        message = "Deploy twice."
        [[turns.cycles]]
        calls = [{{ tool = "deploy" }}, {{ tool = "deploy" }}]
        """,
    )
    answers = write(
        tmp_path / "answers.toml",
        '[[answers]]\nquestion = "token"\nvalue = "s3cr3t-Zq8v"\n'
        '[[answers]]\nquestion = "token"\nvalue = "s3cr3t-Zq8v"\n',
    )
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 0
    both = out + err
    assert both.count("gives its secret question 'token' a default") == 1
    assert "tool 'deploy' gives its secret question" in both
    conversation = load_conversation(directory)
    requests = payloads(conversation, InquiryRequest)
    assert [r.question.default for r in requests] == [PLACEHOLDER, PLACEHOLDER]
    assert all(UNOFFERED_DEFAULT_NOTE in (r.question.context or "") for r in requests)
    assert_invariants(conversation, ["s3cr3t-Zq8v"])
