"""A secret question with a default (RFD 082): recorded as given, never offered, warned of once."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from typing import TYPE_CHECKING

import pytest
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
    JsonValue,
    Question,
    Redacted,
    SecretValue,
    ShowQuestion,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from pathlib import Path

#: The default a careless tool gives its secret question (not a secret itself).
PLACEHOLDER = "changeme-default"
TOKEN = Question(
    id="token",
    text="Deploy token?",
    answer_type=AnswerType.secret(),
    default=PLACEHOLDER,
    context="for prod",
)


#: Defaults a tool may give its secret question: RFD 082 records any JSON value verbatim.
SECRET_DEFAULTS = [
    pytest.param(PLACEHOLDER, id="string"),
    pytest.param(1234, id="number"),
    pytest.param(True, id="boolean"),
    pytest.param(["a", 1], id="array"),
    pytest.param({"pin": "0000"}, id="object"),
]


@pytest.mark.parametrize("default", SECRET_DEFAULTS)
def test_a_local_tools_secret_question_with_a_default_is_read_as_given(
    tmp_path: Path, default: JsonValue
) -> None:
    """needs_input with a secret's default, of any JSON type: a question to ask, as given."""
    script = tmp_path / "tool.py"
    question = {"id": "token", "text": "Token?", "answer_type": {"type": "secret"}}
    outcome = {"type": "needs_input", "question": question | {"default": default}}
    script.write_text(f"print({json.dumps(json.dumps(outcome))})\n")
    tool = LocalTool(name="deploy", command=[sys.executable, str(script)])
    result = run(
        LocalToolExecutor(tool, root=tmp_path).execute(
            ToolCallRequest(id="c1", name="deploy", arguments={}), {}
        )
    )
    assert isinstance(result, NeedsInput)
    assert result.source == InquirySource.tool("deploy")
    assert result.question.answer_type.is_secret
    assert result.question.default == default
    assert type(result.question.default) is type(default)


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


async def _at_terminal(question: Question, *keys: str) -> tuple[QuestionAnswer, str]:
    """Ask ``question`` at a terminal on a pipe, typing each of ``keys`` in turn.

    Every group of keys but the last must leave the prompt waiting. The
    answer, and everything that reached the screen.
    """
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=40, columns=120), enable_cpr=False)
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(input=pipe, output=output)
        shown = ShowQuestion(
            tool_call_id="c1",
            inquiry_id=f"c1.{question.id}.1",
            tool_name="deploy",
            source=InquirySource.tool("deploy"),
            question=question,
        )
        task = asyncio.create_task(prompter.ask_question(shown))
        for typed in keys:
            for _ in range(10):
                await asyncio.sleep(0)
            assert not task.done(), f"answered before {typed!r} was typed"
            pipe.send_text(typed)
        return await task, screen.getvalue()


@pytest.mark.parametrize("default", SECRET_DEFAULTS)
def test_the_terminal_never_offers_a_secrets_default(default: JsonValue) -> None:
    """Enter on nothing typed answers an empty secret, not the default; it is never on screen."""
    question = Question(
        id="token", text="Token?", answer_type=AnswerType.secret(), default=default
    )
    answer, screen = asyncio.run(_at_terminal(question, "\r"))
    assert answer == QuestionAnswer(value=SecretValue(""), remember=False)
    assert json.dumps(default).strip('"') not in screen
    assert "the tool's default is not offered" in screen


# ------------------------------------------- a default that does not fit its question

#: A local tool asking one question, its answer type and default from its options.
ASKS_A_MISFIT_DEFAULT = """
    import json, sys
    request = json.loads(sys.stdin.readline())
    options = json.loads(request["options"]["spec"])  # the question's type and default
    if "q" in request["answers"]:
        print(json.dumps({"type": "success", "content": json.dumps(request["answers"]["q"])}))
    else:
        print(json.dumps({"type": "needs_input", "question": {
            "id": "q", "text": "Sure?", "answer_type": options["answer_type"],
            "default": options["default"]}}))
"""

#: Questions whose default does not fit them, and a fitting answer each.
MISFITS = [
    pytest.param({"type": "boolean"}, "yes", True, id="boolean-given-a-string"),
    pytest.param({"type": "select", "options": ["a", "b"]}, "zz", "b", id="select-not-an-option"),
    pytest.param({"type": "select", "options": ["a", "b"]}, 2, "b", id="select-given-a-number"),
    pytest.param({"type": "text"}, 5, "five", id="text-given-a-number"),
    pytest.param({"type": "text"}, {"k": ["v"]}, "kv", id="text-given-an-object"),
]


@pytest.mark.parametrize(("answer_type", "default", "answer"), MISFITS)
def test_a_default_that_does_not_fit_is_recorded_verbatim_and_the_question_asked(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    answer_type: JsonValue,
    default: JsonValue,
    answer: JsonValue,
) -> None:
    """RFD 082 records the default as the tool gave it: the call is asked, not failed."""
    tool = write(tmp_path / "ask.py", ASKS_A_MISFIT_DEFAULT)
    options = json.dumps({"answer_type": answer_type, "default": default})
    scenario = write(
        tmp_path / "scenario.toml",
        f"""
        [tools.ask]
        command = ["{sys.executable}", "{tool}"]
        run = "unattended"
        options = {{ spec = '{options}' }}
        [[turns]]
        message = "Ask."
        [[turns.cycles]]
        calls = [{{ tool = "ask" }}]
        """,
    )
    answers = write(
        tmp_path / "answers.toml", f'[[answers]]\nquestion = "q"\nvalue = {json.dumps(answer)}\n'
    )
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert (status, err) == (0, "")
    assert "malformed" not in out
    conversation = load_conversation(directory)
    (request,) = payloads(conversation, InquiryRequest)
    assert request.question.default == default
    assert type(request.question.default) is type(default)
    assert request.question.context is None  # noted only for a secret
    raw = json.loads((directory / "events.json").read_text())
    (written,) = [entry for entry in raw if entry["type"] == "inquiry_request"]
    assert written["question"]["default"] == default
    assert_invariants(conversation)


def test_enter_alone_does_not_take_a_boolean_default_that_is_not_yes_or_no() -> None:
    """A boolean whose default is "yes": Enter alone is refused, saying why; y answers."""
    question = Question(id="q", text="Sure?", answer_type=AnswerType.boolean(), default="yes")
    answer, screen = asyncio.run(_at_terminal(question, "\r", "y\r"))
    assert answer == QuestionAnswer(value=True)
    assert "Enter alone" not in screen.split("Sure?")[1].split("\n")[1]  # no default in the hint
    assert "the tool's default does not fit this question: Enter alone does not answer" in screen


@pytest.mark.parametrize(
    ("answer_type", "default", "expected"),
    [
        pytest.param(AnswerType.select(["a", "b"]), "b!", "a", id="select"),
        pytest.param(AnswerType.text(), 5, "", id="text"),
    ],
)
def test_a_default_that_does_not_fit_is_not_offered(
    answer_type: AnswerType, default: JsonValue, expected: str
) -> None:
    """Enter alone: a select's first option, an empty text; the prompt says why."""
    question = Question(id="q", text="Which?", answer_type=answer_type, default=default)
    answer, screen = asyncio.run(_at_terminal(question, "\r"))
    assert answer == QuestionAnswer(value=expected)
    assert "the tool's default does not fit this question and is not offered" in screen
    assert "Enter alone accepts the default shown" not in screen


def test_a_default_that_does_not_fit_is_masked_as_everything_a_tool_says(tmp_path: Path) -> None:
    """A secret typed earlier, echoed inside a later question's object default, is not recorded."""
    conversation = conversation_on_disk(tmp_path)
    secret = "s3cr3t-Zq8v"
    echoed = Question(
        id="note",
        text="Note?",
        answer_type=AnswerType.text(),
        default={"pin": [secret, "x"], f"key-{secret}": True},
    )
    pin = Question(id="pin", text="PIN?", answer_type=AnswerType.secret())
    tool = AskingTool([pin, echoed])
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(tool)},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret).answer("fine"),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert not response.is_error
    requests = payloads(conversation, InquiryRequest)
    assert requests[1].question.default == {"pin": ["<secret>", "x"], "key-<secret>": True}
    assert_invariants(conversation, [secret])


def test_a_secret_of_digits_echoed_as_a_number_in_a_default_is_not_recorded(
    tmp_path: Path,
) -> None:
    """A PIN typed earlier, echoed as a number in later defaults: recorded as masked text."""
    conversation = conversation_on_disk(tmp_path)
    secret = "48291377"
    pin = Question(id="pin", text="PIN?", answer_type=AnswerType.secret())
    echoed = [
        Question(
            id="note",
            text="Note?",
            answer_type=AnswerType.text(),
            default={"pin": 48291377, "seen": [148291377, 7, 2.5]},
        ),
        Question(id="again", text="Again?", answer_type=AnswerType.text(), default=48291377),
    ]
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(AskingTool([pin, *echoed]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret).answer("fine").answer("fine"),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert not response.is_error
    requests = payloads(conversation, InquiryRequest)
    assert requests[1].question.default == {"pin": "<secret>", "seen": ["1<secret>", 7, 2.5]}
    assert requests[2].question.default == "<secret>"
    assert_invariants(conversation, [secret])


def test_a_default_whose_keys_become_alike_once_masked_fails_its_call(tmp_path: Path) -> None:
    """Two keys that read alike once the secret is masked: the call fails, nothing leaks."""
    conversation = conversation_on_disk(tmp_path)
    secret = "s3cr3t-Zq8v"
    echoed = Question(
        id="note", text="Note?", answer_type=AnswerType.text(), default={secret: 1, "<secret>": 2}
    )
    pin = Question(id="pin", text="PIN?", answer_type=AnswerType.secret())
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(AskingTool([pin, echoed]))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert response.is_error
    assert "two keys of its default read '<secret>' once masked" in response.content
    assert len(payloads(conversation, InquiryRequest)) == 1
    assert_invariants(conversation, [secret])


#: A local tool asking a secret ``token`` whose default is its option ``default``.
ASKS_WITH_A_DEFAULT = """
    import json, sys
    request = json.loads(sys.stdin.readline())
    if "token" not in request["answers"]:
        print(json.dumps({"type": "needs_input", "question": {
            "id": "token", "text": "Token?", "answer_type": {"type": "secret"},
            "default": request["options"]["default"]}}))
    else:
        print(json.dumps({"type": "success", "content": "deployed"}))
"""


@pytest.mark.parametrize(
    ("default", "toml"),
    [
        pytest.param(PLACEHOLDER, f'"{PLACEHOLDER}"', id="string"),
        pytest.param(1234, "1234", id="number"),
    ],
)
def test_inquiry_run_warns_once_and_records_the_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], default: JsonValue, toml: str
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
        options = {{ default = {toml} }}
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
    assert [r.question.default for r in requests] == [default, default]
    assert all(type(r.question.default) is type(default) for r in requests)
    assert all(UNOFFERED_DEFAULT_NOTE in (r.question.context or "") for r in requests)
    assert payloads(conversation, Redacted) == [Redacted(id=r.id) for r in requests]
    assert_invariants(conversation, ["s3cr3t-Zq8v"])
