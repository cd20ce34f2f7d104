"""Local tools: the subprocess protocol, its failure modes, and provenance."""

from __future__ import annotations

import asyncio
import hashlib
import sys
import textwrap
from typing import TYPE_CHECKING

import orjson
import pytest
from coordinator_harness import (
    UNATTENDED,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    payloads,
    run,
)
from process_helpers import PATIENCE, is_running

from coordinator import LocalTool, LocalToolExecutor, ScriptedPrompter, ToolCoordinator
from coordinator.adapters import check_arguments
from coordinator.driver import Completed, NeedsInput
from machines import (
    InquiryRequest,
    InquirySource,
    Redacted,
    SecretValue,
    SourceKind,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue, ToolAnswer

SECRET = "correct horse battery staple"


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def _tool(tmp_path: Path, body: str, **kwargs: object) -> LocalToolExecutor:
    script = _script(tmp_path, "tool", body)
    command = kwargs.pop("command", [sys.executable, str(script), "{{tool}}", "{{context}}"])
    tool = LocalTool(name="demo", command=command, **kwargs)  # type: ignore[arg-type]
    return LocalToolExecutor(tool, root=tmp_path, conversation_id="conv-1")


def _call(arguments: dict[str, JsonValue] | None = None) -> ToolCallRequest:
    return ToolCallRequest(id="call_1", name="demo", arguments=arguments or {"path": "a.txt"})


def _execute(
    executor: LocalToolExecutor,
    answers: dict[str, ToolAnswer] | None = None,
    arguments: dict[str, JsonValue] | None = None,
) -> Completed | NeedsInput:
    return run(executor.execute(_call(arguments), answers or {}))


ECHO = """
    import json, sys
    tool, context = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    content = json.dumps({"tool": tool, "context": context})
    print(json.dumps({"type": "success", "content": content}))
"""


def test_the_tool_gets_its_request_and_context_as_json(tmp_path: Path) -> None:
    """{{tool}} and {{context}} are replaced by the request and context JSON."""
    result = _execute(_tool(tmp_path, ECHO, options={"level": 2}), {"apply": True})
    assert isinstance(result, Completed)
    seen = orjson.loads(result.content)
    assert seen["tool"] == {
        "name": "demo",
        "arguments": {"path": "a.txt"},
        "answers": {"apply": True},
        "options": {"level": 2},
    }
    assert seen["context"] == {
        "action": "run",
        "root": str(tmp_path.resolve()),
        "access": None,
        "workspace_id": None,
        "conversation_id": "conv-1",
    }


@pytest.mark.parametrize("text", ["render {{context}} here", "{{tool}} and {{context}}"])
def test_placeholder_text_in_an_argument_reaches_the_tool_as_it_is(
    tmp_path: Path, text: str
) -> None:
    """Only the command's own placeholders are replaced, never text inside the request's JSON."""
    result = _execute(_tool(tmp_path, ECHO), {"note": text}, arguments={"template": text})
    assert isinstance(result, Completed)
    seen = orjson.loads(result.content)
    assert seen["tool"]["arguments"] == {"template": text}
    assert seen["tool"]["answers"] == {"note": text}
    assert seen["context"]["action"] == "run"


def test_the_request_is_also_on_stdin(tmp_path: Path) -> None:
    """A tool without {{tool}} in its command reads the same request from stdin."""
    body = """
        import json, sys
        tool = json.loads(sys.stdin.readline())
        print(json.dumps({"type": "success", "content": json.dumps(tool["answers"])}))
    """
    script = _script(tmp_path, "stdin_tool", body)
    executor = _tool(tmp_path, ECHO, command=[sys.executable, str(script)])
    result = _execute(executor, {"passphrase": SecretValue(SECRET)})
    assert isinstance(result, Completed)
    assert orjson.loads(result.content) == {"passphrase": SECRET}


def test_the_tool_gets_exactly_the_environment_it_is_given(tmp_path: Path) -> None:
    """``env`` is the tool's whole environment: what the caller leaves out, it never sees."""
    body = """
        import json, os
        print(json.dumps({"type": "success", "content": json.dumps(dict(os.environ))}))
    """
    script = _script(tmp_path, "env_tool", body)
    tool = LocalTool(name="demo", command=[sys.executable, str(script)])
    executor = LocalToolExecutor(tool, root=tmp_path, env={"ONLY": "this"})
    result = _execute(executor)
    assert isinstance(result, Completed)
    seen = orjson.loads(result.content)
    assert seen.pop("ONLY") == "this"
    assert "PATH" not in seen
    assert "HOME" not in seen


def test_an_error_outcome_is_a_tool_error_with_message_and_trace(tmp_path: Path) -> None:
    """{"type": "error"} becomes an error response carrying message and trace (JP's shape)."""
    body = """
        import json
        print(json.dumps({
            "type": "error", "message": "no such file", "trace": ["a.txt"], "transient": False,
        }))
    """
    result = _execute(_tool(tmp_path, body))
    assert result == Completed(
        content='{"message":"no such file","trace":["a.txt"]}', is_error=True
    )


def test_a_question_is_always_the_tools_own(tmp_path: Path) -> None:
    """needs_input becomes NeedsInput with source tool:<name>, whatever the tool claims."""
    body = """
        import json
        question = {
            "id": "apply", "text": "Apply?", "pre_amble": "--- a\\n+++ b",
            "answer_type": "Boolean", "default": True,
        }
        print(json.dumps({
            "type": "needs_input", "source": {"source": "assistant"}, "question": question,
        }))
    """
    result = _execute(_tool(tmp_path, body), {"earlier": "x"})
    assert isinstance(result, NeedsInput)
    assert result.source == InquirySource.tool("demo")
    assert result.question.context == "--- a\n+++ b"
    assert result.accumulated_answers == {"earlier": "x"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('print("plain text output")', Completed(content="plain text output\n")),
        (
            'import sys; print("partial"); print("boom", file=sys.stderr); sys.exit(3)',
            Completed(
                content=(
                    '{"message":"Tool \'demo\' execution failed.",'
                    '"stderr":"boom\\n","stdout":"partial\\n"}'
                ),
                is_error=True,
            ),
        ),
    ],
    ids=["exit-0-raw-output", "nonzero-exit-with-stderr"],
)
def test_raw_output_falls_back_as_jp_does(tmp_path: Path, body: str, expected: Completed) -> None:
    """Stdout that is no outcome is success on exit 0, else an error with stderr and stdout."""
    assert _execute(_tool(tmp_path, body)) == expected


@pytest.mark.parametrize(
    ("outcome", "problem"),
    [
        ({"type": "success", "content": 42}, "'content' of a success must be a string"),
        ({"type": "error", "message": None}, "'message' of an error must be a string"),
        ({"type": "error", "message": "x", "trace": "x"}, "'trace' of an error must be an array"),
        ({"type": "needs_input", "question": {"id": "q"}}, "its question cannot be read"),
        (
            {
                "type": "needs_input",
                "question": {"id": "q", "text": "?", "answer_type": "Sometimes"},
            },
            "unknown answer type 'Sometimes'",
        ),
        (
            {
                "type": "needs_input",
                "question": {"id": "q", "text": "?", "answer_type": {"type": "select"}},
            },
            "a select answer type needs an 'options' array",
        ),
        (
            {"type": "sucess", "content": "done"},
            "its type 'sucess' is none of 'success', 'error', 'needs_input'",
        ),
        ({"type": "x" * 100}, f"its type '{'x' * 40}...' is none of"),
    ],
)
def test_a_malformed_outcome_is_a_clear_error(
    tmp_path: Path, outcome: dict[str, object], problem: str
) -> None:
    """An outcome of the wrong shape fails the call, saying what is wrong with it."""
    body = f"print({orjson.dumps(orjson.dumps(outcome).decode()).decode()})"
    result = _execute(_tool(tmp_path, body))
    assert isinstance(result, Completed)
    assert result.is_error
    assert "printed a malformed outcome" in result.content
    assert problem in result.content


def test_a_tool_that_never_exits_is_stopped(tmp_path: Path) -> None:
    """A tool past its timeout is killed (its children too) and the call fails, saying so."""
    body = """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(60)
    """
    result = _execute(_tool(tmp_path, body, timeout=0.5))
    assert result == Completed(
        content='{"message":"Tool \'demo\' ran longer than 0.5 s and was stopped."}',
        is_error=True,
    )


def test_a_tool_that_prints_megabytes_is_stopped(tmp_path: Path) -> None:
    """Output past the limit stops the tool with an error instead of filling memory."""
    body = """
        import sys
        while True:
            sys.stdout.write("x" * 65536)
    """
    result = _execute(_tool(tmp_path, body, max_output=1_000_000))
    assert result == Completed(
        content=(
            '{"message":"Tool \'demo\' printed more than 1000000 bytes '
            '(stdout and stderr together) and was stopped."}'
        ),
        is_error=True,
    )


def test_a_missing_program_is_a_clear_error(tmp_path: Path) -> None:
    """A command that cannot be started fails the call, naming the tool."""
    executor = _tool(tmp_path, ECHO, command=[str(tmp_path / "no-such-program")])
    result = _execute(executor)
    assert isinstance(result, Completed)
    assert result.is_error
    assert "Tool 'demo' could not be started" in result.content


def test_argument_errors_are_reported_to_the_model(tmp_path: Path) -> None:
    """Arguments that do not fit the tool's schema are a tool error; the tool never runs."""
    marker = tmp_path / "ran"
    body = f"open({str(marker)!r}, 'w').write('yes')"
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    executor = _tool(tmp_path, body, parameters=parameters)
    result = _execute(executor, arguments={"count": "three"})
    assert result == Completed(
        content="Invalid arguments for tool 'demo': missing required argument 'path'.",
        is_error=True,
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"path": 3}, "argument 'path' must be of type string"),
        ({"path": "a", "mode": "x"}, "unknown argument 'mode'"),
        ({"path": "a", "count": True}, "argument 'count' must be of type integer"),
        ({"path": "a", "level": "loud"}, "argument 'level' must be one of ['low', 'high']"),
        ({"path": "a", "count": 2, "level": "low"}, None),
    ],
)
def test_check_arguments(arguments: dict[str, object], problem: str | None) -> None:
    """The schema subset: required, type (bool is not an integer), enum, no extras."""
    schema = {
        "properties": {
            "path": {"type": "string"},
            "count": {"type": "integer"},
            "level": {"enum": ["low", "high"]},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert check_arguments(schema, arguments) == problem


@pytest.mark.parametrize(
    ("spec", "value", "fits"),
    [
        pytest.param({"enum": [0, 1]}, True, False, id="true-is-not-1"),
        pytest.param({"enum": [0, 1]}, False, False, id="false-is-not-0"),
        pytest.param({"enum": [True]}, 1, False, id="1-is-not-true"),
        pytest.param({"enum": [1]}, 1.0, True, id="1.0-is-1"),
        pytest.param({"enum": [[1, True]]}, [1.0, True], True, id="arrays-compare-as-json"),
        pytest.param({"enum": [[1]]}, [True], False, id="arrays-compare-inside-too"),
        pytest.param({"enum": [{"a": 0}]}, {"a": False}, False, id="objects-compare-inside"),
        pytest.param({"enum": [None, "x"]}, None, True, id="null"),
        pytest.param({"type": "integer"}, 2.0, True, id="2.0-is-an-integer"),
        pytest.param({"type": "integer"}, 2.5, False, id="2.5-is-not"),
        pytest.param({"type": "integer"}, True, False, id="true-is-no-integer"),
        pytest.param({"type": "number"}, False, False, id="false-is-no-number"),
    ],
)
def test_check_arguments_compares_values_as_json_schema_does(
    spec: dict[str, object], value: object, fits: bool
) -> None:
    """A boolean is never a number, while 1 and 1.0 are one number (and 2.0 an integer)."""
    problem = check_arguments({"properties": {"level": spec}}, {"level": value})
    assert (problem is None) == fits


MALFORMED_SCHEMAS = [
    pytest.param({"required": "path"}, "required: expected an array", id="required"),
    pytest.param({"required": [1]}, "required: expected an array", id="required-item"),
    pytest.param(
        {"additionalProperties": "no"}, "additionalProperties: expected true", id="extra"
    ),
    pytest.param({"properties": ["path"]}, "properties: expected an object", id="properties"),
    pytest.param(
        {"properties": {"path": "string"}}, "properties.path: expected an object", id="spec"
    ),
    pytest.param(
        {"properties": {"path": {"type": 3}}},
        "properties.path.type: expected a type name",
        id="type",
    ),
    pytest.param(
        {"properties": {"path": {"enum": "a"}}},
        "properties.path.enum: expected an array",
        id="enum",
    ),
]


@pytest.mark.parametrize(("schema", "problem"), MALFORMED_SCHEMAS)
def test_a_local_tool_with_a_malformed_schema_is_refused_naming_the_key(
    schema: dict[str, object], problem: str
) -> None:
    """The parts of a schema arguments are checked by must be well formed when the tool is made."""
    with pytest.raises(ValueError, match=r"local tool 'demo': parameters\.") as caught:
        LocalTool(name="demo", command=["true"], parameters=schema)
    assert problem in str(caught.value)


@pytest.mark.parametrize(("schema", "problem"), MALFORMED_SCHEMAS)
def test_check_arguments_refuses_a_malformed_schema_naming_the_key(
    schema: dict[str, object], problem: str
) -> None:
    """Given a malformed schema directly, check_arguments says where, not a bare TypeError."""
    with pytest.raises(ValueError, match="tool schema ") as caught:
        check_arguments(schema, {"path": "a"})
    assert problem in str(caught.value)


def test_null_parts_of_a_schema_count_as_absent() -> None:
    """``required: null`` and ``properties: null`` are read as no requirement, as before."""
    schema: dict[str, object] = {"required": None, "properties": None}
    assert check_arguments(schema, {"anything": 1}) is None
    assert LocalTool(name="demo", command=["true"], parameters=schema).parameters == schema


def test_a_cancelled_run_kills_the_tool(tmp_path: Path) -> None:
    """Cancelling a run (an interrupted turn) leaves no process behind."""
    pid_file = tmp_path / "pid"
    body = f"""
        import os, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
    """
    executor = _tool(tmp_path, body)

    async def scenario() -> None:
        task = asyncio.create_task(executor.execute(_call(), {}))
        async with asyncio.timeout(PATIENCE):  # the tool's start, not a fixed time
            while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110 - a file, not an event
                await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    assert not is_running(int(pid_file.read_text()))


SECRET_TOOL = """
    import hashlib, json, sys
    request = json.loads(sys.stdin.readline())
    answers = request["answers"]
    if "passphrase" not in answers:
        print(json.dumps({"type": "needs_input", "question": {
            "id": "passphrase", "text": "SSH passphrase?", "answer_type": {"type": "secret"}}}))
    else:
        digest = hashlib.sha256(answers["passphrase"].encode()).hexdigest()
        print(json.dumps({"type": "success", "content": "unlocked with sha256 " + digest}))
"""


def test_local_tool_secret_reaches_its_next_run_and_never_the_file(tmp_path: Path) -> None:
    """RFD 082: a local tool's secret question is Redacted; its next run gets the answer."""
    conversation_dir = tmp_path / "conversation"
    conversation = conversation_on_disk(conversation_dir)
    script = _script(tmp_path, "ssh_tool", SECRET_TOOL)
    tool = LocalTool(name="ssh", command=[sys.executable, str(script)])
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": LocalToolExecutor(tool, root=tmp_path)},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(SECRET),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    assert response.content == f"unlocked with sha256 {digest}"
    assert payloads(conversation, Redacted) == [Redacted(id="call_1.passphrase.1")]
    questions = [r.question for r in payloads(conversation, InquiryRequest)]
    assert questions[0].answer_type.is_secret
    assert_invariants(conversation, [SECRET])
    requests = payloads(conversation, InquiryRequest)
    assert all(p.source.kind is SourceKind.TOOL for p in requests)


LEAKY_TOOL = """
    import json, sys
    request = json.loads(sys.stdin.readline())
    answers = request["answers"]
    if "passphrase" not in answers:
        print(json.dumps({"type": "needs_input", "question": {
            "id": "passphrase", "text": "SSH passphrase?", "answer_type": {"type": "secret"}}}))
    else:
        sys.stderr.write("login failed with " + answers["passphrase"] + "\\n")
        sys.exit(1)
"""


def test_local_tool_echoing_its_secret_on_failure_is_masked_even_escaped(tmp_path: Path) -> None:
    """A secret with a quote and a backslash echoed in stderr is masked in the JSON error body."""
    secret = 'hunter"2\\x'
    conversation = conversation_on_disk(tmp_path / "conversation")
    script = _script(tmp_path, "leaky_tool", LEAKY_TOOL)
    tool = LocalTool(name="ssh", command=[sys.executable, str(script)])
    coordinator = ToolCoordinator(
        conversation,
        tools={"ssh": LocalToolExecutor(tool, root=tmp_path)},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    assert response.is_error
    assert orjson.loads(response.content)["stderr"] == "login failed with <secret>\n"
    assert_invariants(conversation, [secret, 'hunter\\"2\\\\x'])


KEY_TOOL = """
    import json, os
    print(json.dumps({"type": "success", "content": os.environ["INQUIRY_IDEMPOTENCY_KEY"]}))
"""


def test_each_run_of_a_call_gets_its_idempotency_key_in_its_environment(tmp_path: Path) -> None:
    """SHA-256 of [conversation id, call id, answers carried]: one run's, again when it reruns."""
    executor = _tool(tmp_path, KEY_TOOL)
    first = _execute(executor)
    again = _execute(executor)
    answered = _execute(executor, {"apply": True})
    assert isinstance(first, Completed)
    assert isinstance(again, Completed)
    assert isinstance(answered, Completed)
    expected = hashlib.sha256(orjson.dumps(["conv-1", "call_1", 0])).hexdigest()
    assert first.content == again.content == expected
    assert answered.content == hashlib.sha256(orjson.dumps(["conv-1", "call_1", 1])).hexdigest()
    other = LocalToolExecutor(executor.tool, root=tmp_path, conversation_id="conv-2")
    assert isinstance(moved := _execute(other), Completed)
    assert moved.content != first.content
