"""Scenario and answers files: what they hold, and errors that name the file and the key."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from run_helpers import TOUR, TOUR_ANSWERS, TOUR_SCENARIO, cli, write

from coordinator import ConfigError
from coordinator.cli._answer_script import load_answer_script
from coordinator.cli._scenario import load_scenario
from machines import (
    InquirySource,
    Question,
    RunMode,
    SecretValue,
    ShowQuestion,
    StaticAnswer,
    Target,
)

if TYPE_CHECKING:
    from pathlib import Path

CALL = """
[[turns]]
message = "Go."
[[turns.cycles]]
calls = [{ tool = "echo" }]
"""
ECHO = """
[tools.echo]
command = ["python3", "-c", "print('hi')"]
"""
VALID = ECHO + CALL


def test_the_tour_scenario_reads_as_written() -> None:
    """The tour: its tools, configuration and turns, with paths made absolute."""
    scenario = load_scenario(TOUR_SCENARIO)
    modify = scenario.tools["fs_modify_file"].local
    assert modify is not None
    assert modify.command == ("python3", str(TOUR / "tools" / "fs_modify_file.py"))
    assert modify.timeout == 20
    assert scenario.seed == TOUR / "workspace"
    assert scenario.title == "The inquiry coordinator tour"
    assert scenario.tools["ask_user"].builtin == "ask_user"
    assert scenario.config.run_mode("deploy") is RunMode.ASK
    assert scenario.config.run_mode("lint") is RunMode.UNATTENDED
    assert scenario.config.question("lint", "scope").answer == StaticAnswer("notes")
    assert scenario.config.question("lint", "fix").target is Target.ASSISTANT
    (turn,) = scenario.turns
    assert [len(cycle.calls) for cycle in turn.cycles] == [1, 1, 2, 1, 1]
    names = [definition.name for definition in scenario.definitions]
    assert names == ["fs_modify_file", "lint", "release", "deploy", "ask_user"]


def test_only_paths_beside_the_scenario_become_absolute(tmp_path: Path) -> None:
    """A relative path with a directory part that exists beside the scenario is resolved."""
    write(tmp_path / "tools" / "tool.py", "")
    write(tmp_path / "notes.txt", "")
    scenario = write(
        tmp_path / "scenario.toml",
        """
        [tools.echo]
        command = "python3 tools/tool.py notes.txt tools/missing.txt ."
        """
        + CALL,
    )
    tool = load_scenario(scenario).tools["echo"].local
    assert tool is not None
    resolved = str(tmp_path / "tools" / "tool.py")
    assert tool.command == ("python3", resolved, "notes.txt", "tools/missing.txt", ".")


SCENARIO_ERRORS = [
    pytest.param("bogus = 1\n" + VALID, "bogus", "unknown key", id="unknown-top-key"),
    pytest.param(ECHO, "turns", "is required", id="no-turns"),
    pytest.param("turns = []\n" + ECHO, "turns", "at least one turn", id="empty-turns"),
    pytest.param(
        VALID.replace("command =", "comand ="), "tools.echo.comand", "unknown key", id="typo"
    ),
    pytest.param(
        VALID.replace("[tools.echo]", '[tools.echo]\nbuiltin = "ask_user"'),
        "tools.echo",
        "not both",
        id="command-and-builtin",
    ),
    pytest.param(
        '[tools.echo]\ndescription = "x"\n' + CALL,
        "tools.echo",
        "needs a `command`",
        id="neither",
    ),
    pytest.param(
        '[tools.echo]\nbuiltin = "shell"\n' + CALL,
        "tools.echo.builtin",
        "no built-in tool 'shell'",
        id="unknown-builtin",
    ),
    pytest.param(
        '[tools.echo]\nbuiltin = "ask_user"\ntimeout = 3\n' + CALL,
        "tools.echo.timeout",
        "only a local tool",
        id="builtin-timeout",
    ),
    pytest.param(
        VALID.replace("[tools.echo]", '[tools.echo]\ntimeout = "10"'),
        "tools.echo.timeout",
        "number of seconds",
        id="timeout-type",
    ),
    pytest.param(
        "[tools.echo]\ncommand = 5\n" + CALL,
        "tools.echo.command",
        "expected an array of strings",
        id="command-type",
    ),
    pytest.param(
        "[tools.echo]\ncommand = []\n" + CALL,
        "tools.echo.command",
        "names no program",
        id="command-empty",
    ),
    pytest.param(
        '[tools.echo]\ncommand = ["no-such-program-anywhere"]\n' + CALL,
        "tools.echo.command",
        "'no-such-program-anywhere' is not on PATH",
        id="program-not-on-path",
    ),
    pytest.param(
        '[tools.echo]\ncommand = ["./missing.sh"]\n' + CALL,
        "tools.echo.command",
        "is not an executable file",
        id="program-missing",
    ),
    pytest.param(
        VALID.replace("[tools.echo]", '[tools.echo]\nrun = "sometimes"'),
        "tools.echo.run",
        "got 'sometimes' (expected one of: 'ask', 'unattended', 'skip')",
        id="run-mode",
    ),
    pytest.param(
        VALID + '[tools.echo.questions.q]\nsource = "user"\n',
        "tools.echo.questions.q.source",
        "cannot be configured",
        id="provenance",
    ),
    pytest.param(
        VALID.replace("[tools.echo]", "[tools.echo]\nparameters = 'x'"),
        "tools.echo.parameters",
        "expected a table",
        id="parameters-type",
    ),
    pytest.param(
        VALID.replace(
            "[tools.echo]", "[tools.echo]\nparameters = { properties = { path = { type = 3 } } }"
        ),
        "tools.echo.parameters.properties.path.type",
        "expected a type name or an array of them",
        id="parameters-property-type",
    ),
    pytest.param(
        '[tools.answer_inquiry]\ncommand = ["python3"]\n' + CALL,
        "tools.answer_inquiry",
        "built-in inquiry tool's name",
        id="reserved-name",
    ),
    pytest.param(
        ECHO + "[[turns]]\nreply = 'hi'\n",
        "turns[0].message",
        "is required",
        id="turn-message",
    ),
    pytest.param(
        ECHO + "[[turns]]\nmessage = 'go'\n[[turns.cycles]]\ncalls = []\n",
        "turns[0].cycles[0].calls",
        "at least one tool call",
        id="empty-cycle",
    ),
    pytest.param(
        ECHO + CALL.replace("calls =", "message = 1\ncalls ="),
        "turns[0].cycles[0].message",
        "expected a string, got an integer",
        id="cycle-message-type",
    ),
    pytest.param(
        ECHO + CALL.replace('tool = "echo"', 'tool = "nope"'),
        "turns[0].cycles[0].calls[0].tool",
        "no tool 'nope' in this scenario (its tools: echo, ask_user)",
        id="unknown-tool-in-cycle",
    ),
    pytest.param(
        ECHO.replace(
            "[tools.echo]",
            '[tools.echo]\nparameters = { type = "object", required = ["path"] }',
        )
        + CALL,
        "turns[0].cycles[0].calls[0].arguments",
        "missing required argument 'path' (for tool 'echo')",
        id="arguments-schema",
    ),
    pytest.param(
        '[tools.ask]\nbuiltin = "ask_user"\n' + CALL.replace('tool = "echo"', 'tool = "ask"'),
        "turns[0].cycles[0].calls[0].arguments",
        "missing required argument 'question'",
        id="ask-user-arguments",
    ),
    pytest.param(
        ECHO + CALL.replace('tool = "echo"', 'tool = "echo", arguments = { when = 2026-01-01 }'),
        "turns[0].cycles[0].calls[0].arguments.when",
        "must be a JSON value, not a date",
        id="arguments-date",
    ),
    pytest.param(
        ECHO + CALL.replace('{ tool = "echo" }', '{ tool = "echo", id = "a" }, ' * 2),
        "turns[0].cycles[0].calls[0].id",
        "'a' is used twice in this cycle",
        id="duplicate-ids",
    ),
    pytest.param(
        '[workspace]\nseed = "nowhere"\n' + VALID,
        "workspace.seed",
        "is not a directory",
        id="seed",
    ),
    pytest.param(
        ECHO
        + CALL.replace(
            'tool = "echo"', 'tool = "echo", arguments = { a = 99999999999999999999999 }'
        ),
        "turns[0].cycles[0].calls[0].arguments.a",
        "is an integer out of range",
        id="arguments-beyond-64-bits",
    ),
    pytest.param(
        ECHO
        + CALL.replace('tool = "echo"', 'tool = "echo", arguments = { a = -9223372036854775809 }'),
        "turns[0].cycles[0].calls[0].arguments.a",
        "is an integer out of range",
        id="arguments-below-64-bits",
    ),
    pytest.param(
        ECHO
        + CALL.replace(
            'tool = "echo"', 'tool = "echo", arguments = { a = ' + "[" * 250 + "]" * 250 + " }"
        ),
        "turns[0].cycles[0].calls[0].arguments",
        "is nested too deeply: a JSON value may nest at most 250 levels",
        id="arguments-too-deep",
    ),
    pytest.param(
        VALID.replace("[tools.echo]", "[tools.echo]\noptions = { big = 18446744073709551616 }"),
        "tools.echo.options.big",
        "is an integer out of range",
        id="options-beyond-64-bits",
    ),
    pytest.param(
        VALID + "[tools.echo.questions.q]\nanswer = 99999999999999999999999\n",
        "tools.echo.questions.q.answer",
        "is an integer out of range",
        id="static-answer-beyond-64-bits",
    ),
    pytest.param(
        '[tools.""]\ncommand = ["true"]\n' + CALL.replace('tool = "echo"', 'tool = ""'),
        'tools.""',
        "a tool name must not be empty",
        id="empty-tool-name",
    ),
    pytest.param(
        ECHO + CALL.replace('tool = "echo"', 'tool = ""'),
        "turns[0].cycles[0].calls[0].tool",
        "must not be empty",
        id="empty-tool-in-call",
    ),
    pytest.param(
        VALID + '[tools.echo.questions.""]\ntarget = "user"\n',
        'tools.echo.questions.""',
        "a question id must not be empty",
        id="empty-question-id",
    ),
    pytest.param(
        VALID.replace("[tools.echo]", "[tools.echo]\ntimeout = 2e9"),
        "tools.echo.timeout",
        "expected a number of seconds greater than 0 and at most 1000000000",
        id="timeout-too-long",
    ),
    pytest.param(
        "[backend]\nprovidr = 'anthropic'\n" + VALID,
        "backend.providr",
        "unknown key (known keys: provider, model,",
        id="backend-typo",
    ),
    pytest.param(
        "[backend]\nprovider = 'openai'\nmodel = 'm'\nprompt_cache = true\n" + VALID,
        "backend.prompt_cache",
        "only the anthropic provider takes this key",
        id="backend-key-for-another-provider",
    ),
    pytest.param("system = 3\n" + VALID, "system", "expected a string or strings", id="system"),
    pytest.param("backend = 3\n" + VALID, "backend", "expected a table", id="backend-type"),
    pytest.param("turns = [", "(file)", "is not valid TOML", id="not-toml"),
]


@pytest.mark.parametrize(("text", "key", "problem"), SCENARIO_ERRORS)
def test_scenario_errors_name_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    """Each mistake in a scenario is refused with the file, the key and what is wrong."""
    scenario = write(tmp_path / "scenario.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_scenario(scenario)
    assert str(caught.value).startswith(f"{scenario}: {key}: ")
    assert problem in str(caught.value)


def test_a_scenario_error_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry run` with a wrong scenario: one line on stderr, exit 2, no conversation."""
    scenario = write(tmp_path / "scenario.toml", ECHO + CALL.replace("echo", "nope", 1))
    directory = tmp_path / "conversation"
    status, out, err = cli("run", scenario, "--conversation", directory, capsys=capsys)
    assert status == 2
    assert out == ""
    key = "turns[0].cycles[0].calls[0].tool"
    problem = "no tool 'nope' in this scenario (its tools: echo, ask_user)"
    assert err == f"inquiry: {scenario}: {key}: {problem}\n"
    assert not directory.exists()


def test_the_tour_answers_read_as_written() -> None:
    """The tour's answers: one permission, five answers, one model answer."""
    script = load_answer_script(TOUR_ANSWERS)
    assert [p.reply for p in script.permissions] == ["y"]
    assert [(a.tool, a.question) for a in script.answers][:2] == [
        ("fs_modify_file", "apply_changes"),
        ("release", "bump"),
    ]
    assert script.answers[0].remember
    assert script.prompter().remaining == 6
    backend = script.backend()
    assert backend is not None
    assert backend.remaining == 1


def test_a_value_from_the_environment_is_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`value_env` reads the answer as a SecretValue; no repr of the script shows it."""
    monkeypatch.setenv("TEST_TOKEN", "env-secret-value")
    answers = write(tmp_path / "answers.toml", '[[answers]]\nvalue_env = "TEST_TOKEN"\n')
    script = load_answer_script(answers)
    (answer,) = script.answers
    assert isinstance(answer.value, SecretValue)
    assert answer.value.reveal() == "env-secret-value"
    assert "env-secret-value" not in repr(script)


def test_a_secret_written_as_a_value_is_handed_over_as_a_secret(tmp_path: Path) -> None:
    """A plain `value` answering a secret question: a SecretValue, shown by no repr, never kept."""
    answers = write(
        tmp_path / "answers.toml",
        '[[answers]]\ntool = "deploy"\nquestion = "token"\nvalue = "plain-s3cret"\n',
    )
    prompter = load_answer_script(answers).prompter()
    assert "plain-s3cret" not in repr(vars(prompter))  # the script as it waits
    question = Question.secret("token", "Token?")
    prompt = ShowQuestion(
        tool_call_id="call_1",
        inquiry_id="call_1.token.1",
        tool_name="deploy",
        source=InquirySource.tool("deploy"),
        question=question,
    )
    answer = asyncio.run(prompter.ask_question(prompt))
    assert isinstance(answer.value, SecretValue)
    assert answer.value.reveal() == "plain-s3cret"
    assert not answer.remember
    assert "plain-s3cret" not in repr(answer)


ANSWERS_ERRORS = [
    pytest.param("bogus = 1\n", "bogus", "unknown key", id="unknown-top-key"),
    pytest.param("answers = { value = 1 }\n", "answers", "an array of tables", id="not-array"),
    pytest.param(
        '[[permissions]]\nreply = "maybe"\n',
        "permissions[0].reply",
        "got 'maybe' (expected one of: 'y', 'Y', 'n', 'N', 'r', 'e', 'cancel')",
        id="reply",
    ),
    pytest.param(
        "[[permissions]]\ntool = 'x'\n", "permissions[0].reply", "is required", id="no-reply"
    ),
    pytest.param(
        '[[permissions]]\nreply = "y"\nreason = "because"\n',
        "permissions[0].reason",
        'only reply = "r" takes this key',
        id="reason-with-y",
    ),
    pytest.param(
        '[[permissions]]\nreply = "e"\n',
        "permissions[0].arguments",
        'is required with reply = "e"',
        id="edit-without-arguments",
    ),
    pytest.param(
        "[[answers]]\nvalue = 1\ncancel = true\n", "answers[0]", "exactly one of", id="both"
    ),
    pytest.param("[[answers]]\ntool = 'x'\n", "answers[0]", "found none", id="neither"),
    pytest.param(
        "[[answers]]\ncancel = false\n", "answers[0].cancel", "can only be true", id="cancel-false"
    ),
    pytest.param(
        "[[answers]]\ncancel = true\nremember = true\n",
        "answers[0].remember",
        "only an answer with a value takes this key",
        id="cancel-remember",
    ),
    pytest.param(
        '[[answers]]\nvalue = true\nremember = "yes"\n',
        "answers[0].remember",
        "expected true or false, got a string",
        id="remember-type",
    ),
    pytest.param(
        '[[answers]]\nvalue_env = "INQUIRY_TEST_UNSET_VARIABLE"\n',
        "answers[0].value_env",
        "the environment variable INQUIRY_TEST_UNSET_VARIABLE is not set",
        id="value-env-unset",
    ),
    pytest.param("[[answers]]\nvalue = nan\n", "answers[0].value", "finite number", id="nan"),
    pytest.param(
        "[[answers]]\nvalue = 18446744073709551616\n",
        "answers[0].value",
        "is an integer out of range",
        id="value-beyond-64-bits",
    ),
    pytest.param(
        "[[model]]\nvalue = [" + "[" * 250 + "]" * 250 + "]\n",
        "model[0].value",
        "is nested too deeply",
        id="model-value-too-deep",
    ),
    pytest.param(
        '[[permissions]]\nreply = "e"\narguments = { a = 99999999999999999999999 }\n',
        "permissions[0].arguments.a",
        "is an integer out of range",
        id="edited-arguments-beyond-64-bits",
    ),
    pytest.param(
        '[[answers]]\nvalue = "a headline"\nremember = true\n',
        "answers[0].remember",
        "is the Y or N of a boolean question: only `value = true` or `false` takes it, "
        "not a string answer",
        id="remember-a-text",
    ),
    pytest.param(
        '[[answers]]\nvalue_env = "HOME"\nremember = true\n',
        "answers[0].remember",
        "not a secret (`value_env`)",
        id="remember-a-secret",
    ),
    pytest.param(
        '[[answers]]\ntool = ""\nvalue = true\n',
        "answers[0].tool",
        "must not be empty",
        id="empty-tool",
    ),
    pytest.param(
        '[[model]]\nquestion = ""\nvalue = true\n',
        "model[0].question",
        "must not be empty",
        id="empty-question",
    ),
    pytest.param(
        '[[model]]\nvalue = 1\nfail = "provider"\n', "model[0]", "exactly one of", id="model-both"
    ),
    pytest.param(
        '[[model]]\nfail = "oops"\n',
        "model[0].fail",
        "expected one of: 'cancelled', 'provider'",
        id="model-fail-kind",
    ),
    pytest.param(
        '[[model]]\nvalue = 1\nmessage = "m"\n',
        "model[0].message",
        "only a failure (`fail`) takes this key",
        id="model-message",
    ),
]


@pytest.mark.parametrize(("text", "key", "problem"), ANSWERS_ERRORS)
def test_answers_errors_name_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    """Each mistake in an answers file is refused with the file, the key and what is wrong."""
    answers = write(tmp_path / "answers.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_answer_script(answers)
    assert str(caught.value).startswith(f"{answers}: {key}: ")
    assert problem in str(caught.value)
