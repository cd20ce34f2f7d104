"""`inquiry run` with MCP servers: the scenario keys, their errors, and the example."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

import pytest
from coordinator_harness import assert_invariants, stored_text
from mcp_servers import LEAKY_TOKEN
from run_helpers import PROJECT, cli, every_byte, outcomes, payloads, responses, write

from coordinator import ConfigError, load_conversation
from coordinator.adapters.mcp import DEFAULT_MAX_REPLY
from coordinator.cli._scenario import load_scenario
from machines import Answered, CancellationReason, Cancelled, InquiryRequest

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLE = PROJECT / "examples" / "mcp"
SERVERS = PROJECT / "tests" / "mcp_servers.py"

#: A scenario whose one tool is the test server's deploy.
DEPLOY = f"""
[mcp_servers.ops]
command = "{{{{python}}}}"
args = ["{SERVERS}", "ops", "ops"]

[defaults]
run = "unattended"

[tools.deploy]
mcp = "ops"

[[turns]]
message = "deploy"
[[turns.cycles]]
calls = [{{ tool = "deploy", arguments = {{ service = "api" }} }}]
"""


def test_the_example_runs_every_question_recorded_as_a_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/mcp: three tools, three ways of asking; all recorded, the link's query nowhere."""
    directory = tmp_path / "conversation"
    status, out, err = cli(
        "run",
        EXAMPLE / "scenario.toml",
        "--answers",
        EXAMPLE / "answers.toml",
        "--conversation",
        directory,
        capsys=capsys,
    )
    assert (status, err) == (0, "")
    assert (
        "questions: 4 (4 answered; answered or redacted: 3 answers file, 1 configuration)" in out
    )
    conversation = load_conversation(directory)
    assert sorted(r.content for r in responses(conversation).values()) == [
        "Announced 2.4.0 on email, chat to 250 people: 2.4.0 is out",
        "CI connected.",
        "Deployed api to staging.",
    ]
    requests = payloads(conversation, InquiryRequest)
    assert {(r.source.kind.value, r.source.name) for r in requests} == {
        ("tool", "deploy"),
        ("tool", "announce"),
        ("tool", "connect_ci"),
    }
    link = next(r for r in requests if r.question.id == "authorize")
    assert link.question.exclusive
    assert "https://ci.example.invalid/oauth/authorize (query string not shown)" in str(
        link.question.context
    )
    assert outcomes(conversation)[link.id] == Answered(id=link.id, answer="accept")
    announced = next(r for r in requests if r.source.name == "announce")
    assert outcomes(conversation)[announced.id] == Answered(
        id=announced.id,
        answer={"headline": "2.4.0 is out", "channels": ["email", "chat"], "audience": 250},
    )
    assert b"s3cr3t-state" not in every_byte(directory)
    assert_invariants(conversation, secrets=["s3cr3t-state"])


def test_without_a_person_the_link_and_the_forms_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-tty: the URL request, and (policy deny) the forms' questions: no_prompt_backend."""
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run",
        EXAMPLE / "scenario.toml",
        "--no-tty",
        "--conversation",
        directory,
        capsys=capsys,
    )
    assert status == 1  # questions went unanswered
    assert "x connect_ci · authorize: cancelled (no_prompt_backend)" in out
    conversation = load_conversation(directory)
    cancelled = {r.reason for r in payloads(conversation, Cancelled) if isinstance(r, Cancelled)}
    # Nothing configures the detached policy: the forms' questions are denied, not sent.
    assert cancelled == {CancellationReason.NO_PROMPT_BACKEND}
    assert "nobody can be asked here, so the detached policy decides questions" in out
    assert_invariants(conversation, secrets=["s3cr3t-state"])


def test_a_scenario_runs_a_tool_under_another_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mcp_tool names the server's tool; the scenario (and the record) use the table's name."""
    text = DEPLOY.replace('{ tool = "deploy"', '{ tool = "ship"').replace(
        "[tools.deploy]\nmcp", '[tools.ship]\nmcp_tool = "deploy"\nmcp'
    )
    answers = write(
        tmp_path / "answers.toml",
        """
        [[answers]]
        value = "decline"
        """,
    )
    scenario = write(tmp_path / "scenario.toml", text)
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 0
    assert "<- ship succeeded: ops: not deployed (confirmation decline)" in out
    conversation = load_conversation(directory)
    (request,) = payloads(conversation, InquiryRequest)
    assert request.source.name == "ship"
    assert payloads(conversation, Answered) == [Answered(id=request.id, answer="decline")]


def test_a_token_in_a_url_requests_message_is_not_printed_recorded_or_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-tty: the message's link is printed, recorded and told the model without its query."""
    text = DEPLOY.replace('"deploy", arguments = { service = "api" }', '"leaky_login"').replace(
        "[tools.deploy]", "[tools.leaky_login]"
    )
    scenario = write(tmp_path / "scenario.toml", text)
    directory = tmp_path / "conversation"
    status, out, err = cli("run", scenario, "--no-tty", "--conversation", directory, capsys=capsys)
    assert status == 1  # the link went unanswered: no person
    shown = "Please open https://auth.example.invalid/cb (query string not shown) to sign in"
    assert f"? leaky_login asks authorize (select): {shown}" in out
    assert LEAKY_TOKEN not in out + err
    conversation = load_conversation(directory)
    (response,) = responses(conversation).values()  # what the model is told of the call
    assert f'asked "{shown}"' in response.content
    assert LEAKY_TOKEN not in stored_text(conversation)
    assert_invariants(conversation, secrets=[LEAKY_TOKEN])


#: (text replacing DEPLOY's server table or tool table, key, problem).
MCP_SCENARIO_ERRORS = [
    pytest.param(
        DEPLOY.replace('mcp = "ops"', 'mcp = "nope"'),
        "tools.deploy.mcp",
        "no MCP server 'nope' in this scenario (its servers: ops)",
        id="unknown-server",
    ),
    pytest.param(
        DEPLOY.replace('mcp = "ops"', 'mcp = "ops"\nbuiltin = "ask_user"'),
        "tools.deploy",
        "not both `builtin` and `mcp`: keep one",
        id="mcp-and-builtin",
    ),
    pytest.param(
        DEPLOY.replace('mcp = "ops"', 'mcp = "ops"\ntimeout = 3'),
        "tools.deploy.timeout",
        "only a local tool (a `command`) takes this key",
        id="local-key-on-mcp-tool",
    ),
    pytest.param(
        DEPLOY.replace('[tools.deploy]\nmcp = "ops"', '[tools.deploy]\nmcp_tool = "x"'),
        "tools.deploy.mcp_tool",
        "only an MCP tool (with `mcp`) takes this key",
        id="mcp-tool-without-mcp",
    ),
    pytest.param(
        DEPLOY.replace('command = "{{python}}"', 'command = ["python3"]'),
        "mcp_servers.ops.command",
        "expected a string, got an array",
        id="command-array",
    ),
    pytest.param(
        DEPLOY.replace('command = "{{python}}"', 'command = "no-such-program-here"'),
        "mcp_servers.ops.command",
        "program 'no-such-program-here' is not on PATH",
        id="command-missing",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'url = "http://127.0.0.1:9/mcp"\nargs = ['),
        "mcp_servers.ops",
        "needs a `command` (started over stdio) or a `url`, not both",
        id="command-and-url",
    ),
    pytest.param(
        DEPLOY.replace('command = "{{python}}"', 'url = "ftp://x/mcp"').replace(
            f'args = ["{SERVERS}", "ops", "ops"]', ""
        ),
        "mcp_servers.ops.url",
        "the url must be http or https",
        id="url-not-http",
    ),
    pytest.param(
        DEPLOY.replace('command = "{{python}}"', 'url = "http://127.0.0.1:9/mcp"'),
        "mcp_servers.ops.args",
        "only a server started by `command` takes this key",
        id="args-with-url",
    ),
    pytest.param(
        DEPLOY.replace("args = [", "env = { TOKEN = 3 }\nargs = ["),
        "mcp_servers.ops.env.TOKEN",
        "expected a string, got an integer",
        id="env-not-string",
    ),
    pytest.param(
        DEPLOY.replace("args = [", "timeout = 0\nargs = ["),
        "mcp_servers.ops.timeout",
        "expected a number of seconds greater than 0",
        id="timeout",
    ),
    pytest.param(
        DEPLOY.replace("args = [", "cwd = '.'\nargs = ["),
        "mcp_servers.ops.cwd",
        "unknown key (expected one of: args, command, env, headers, max_reply, secret_fields, "
        "start_timeout, stderr, timeout, url)",
        id="unknown-key",
    ),
    pytest.param(
        DEPLOY.replace("args = [", "stderr = 'no-such-folder/ops.log'\nargs = ["),
        "mcp_servers.ops.stderr",
        "no-such-folder is not a directory",
        id="stderr-folder-missing",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'env = { "A=B" = "x" }\nargs = ['),
        'mcp_servers.ops.env."A=B"',
        "a variable's name cannot hold '='",
        id="env-name-with-equals",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'env = { "" = "x" }\nargs = ['),
        'mcp_servers.ops.env.""',
        "a variable's name must not be empty",
        id="env-name-empty",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'env = { "A\\u0000" = "x" }\nargs = ['),
        'mcp_servers.ops.env."A\\u0000"',
        "holds a NUL byte, which the OS cannot pass to a program",
        id="env-name-nul",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'env = { TOKEN = "x\\u0000y" }\nargs = ['),
        "mcp_servers.ops.env.TOKEN",
        "holds a NUL byte, which the OS cannot pass to a program",
        id="env-value-nul",
    ),
    pytest.param(
        DEPLOY.replace('"ops", "ops"]', '"ops", "o\\u0000ps"]'),
        "mcp_servers.ops.args[2]",
        "holds a NUL byte, which the OS cannot pass to a program",
        id="arg-nul",
    ),
    pytest.param(
        DEPLOY.replace('command = "{{python}}"', 'command = "py\\u0000thon"'),
        "mcp_servers.ops.command",
        "holds a NUL byte, which the OS cannot pass to a program",
        id="command-nul",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'stderr = "ops\\u0000.log"\nargs = ['),
        "mcp_servers.ops.stderr",
        "holds a NUL byte, which the OS cannot pass to a program",
        id="stderr-nul",
    ),
    pytest.param(
        DEPLOY.replace(f'args = ["{SERVERS}", "ops", "ops"]', "args = 3"),
        "mcp_servers.ops.args",
        "expected an array of strings, got an integer",
        id="args-not-array",
    ),
    pytest.param(
        DEPLOY.replace("args = [", "max_reply = 0\nargs = ["),
        "mcp_servers.ops.max_reply",
        "expected a whole number of bytes, 1 or more",
        id="max-reply-zero",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'max_reply = "16M"\nargs = ['),
        "mcp_servers.ops.max_reply",
        "expected a whole number of bytes, 1 or more",
        id="max-reply-text",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'secret_fields = "pin"\nargs = ['),
        "mcp_servers.ops.secret_fields",
        "expected an array of strings, got a string",
        id="secret-fields-string",
    ),
    pytest.param(
        DEPLOY.replace("args = [", 'secret_fields = ["pin", ""]\nargs = ['),
        "mcp_servers.ops.secret_fields[1]",
        "a field's name must not be empty",
        id="secret-fields-empty-name",
    ),
]


@pytest.mark.parametrize(("text", "key", "problem"), MCP_SCENARIO_ERRORS)
def test_mcp_scenario_errors_name_the_key(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    """Each mistake in an MCP server's or tool's table is refused, naming the key."""
    scenario = write(tmp_path / "scenario.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_scenario(scenario)
    assert str(caught.value).startswith(f"{scenario}: {key}: ")
    assert problem in str(caught.value)


def test_an_environment_the_os_would_refuse_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry run`: an env key holding '=' is one line naming it, exit 2, nothing written."""
    scenario = write(
        tmp_path / "scenario.toml", DEPLOY.replace("args = [", 'env = { "A=B" = "x" }\nargs = [')
    )
    directory = tmp_path / "conversation"
    status, out, err = cli("run", scenario, "--conversation", directory, capsys=capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f'inquiry: {scenario}: mcp_servers.ops.env."A=B": ')
    assert err.count("\n") == 1
    assert not directory.exists()


def test_python_means_the_interpreter_running_inquiry(tmp_path: Path) -> None:
    """A command of {{python}} is this Python; a path beside the scenario becomes absolute."""
    scenario = load_scenario(write(tmp_path / "scenario.toml", DEPLOY))
    server = scenario.mcp_servers["ops"]
    assert server.command == (sys.executable, str(SERVERS), "ops", "ops")
    assert scenario.tools["deploy"].mcp_server == "ops"
    assert scenario.tools["deploy"].mcp_tool == "deploy"


def test_max_reply_and_secret_fields_reach_the_server(tmp_path: Path) -> None:
    """The bound on a reply and the fields named secret are the server's; the bound's default."""
    scenario = load_scenario(
        write(
            tmp_path / "scenario.toml",
            DEPLOY.replace("args = [", 'max_reply = 4096\nsecret_fields = ["nickname"]\nargs = ['),
        )
    )
    server = scenario.mcp_servers["ops"]
    assert (server.max_reply, server.secret_fields) == (4096, frozenset({"nickname"}))
    plain = load_scenario(write(tmp_path / "plain.toml", DEPLOY)).mcp_servers["ops"]
    assert (plain.max_reply, plain.secret_fields) == (DEFAULT_MAX_REPLY, frozenset())


def test_mcp_servers_without_the_sdk_are_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the mcp extra, a scenario with MCP servers says what to install."""
    real = importlib.util.find_spec

    def without_mcp(name: str, *args: Any) -> Any:
        return None if name == "mcp" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_mcp)
    scenario = write(tmp_path / "scenario.toml", DEPLOY)
    with pytest.raises(ConfigError) as caught:
        load_scenario(scenario)
    assert str(caught.value) == (
        f"{scenario}: mcp_servers: MCP servers need the MCP SDK, which is not installed: "
        "pip install 'inquiry-coordinator[mcp]'"
    )
