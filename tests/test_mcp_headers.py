"""Headers for a server reached by url: sent, read from the environment, and masked everywhere.

The server here is a real streamable-HTTP MCP server in this process behind
a gate that refuses (401) every request whose ``Authorization`` is not the
bearer token, as a hosted server does.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from coordinator_harness import assert_invariants, conversation_on_disk, stored_text
from mcp.server.mcpserver import AcceptedElicitation, Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field
from run_helpers import write
from test_mcp import play, served

from coordinator import ConfigError
from coordinator.adapters.mcp import McpServer, header_problem
from coordinator.cli._scenario import load_scenario
from coordinator.driver import ScriptedPrompter

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator import Conversation

#: The bearer token the gated server wants (long enough to be masked).
TOKEN = "hdr-T0KEN-5150"
#: The variable the configuration names the token by.
VARIABLE = "INQUIRY_TEST_MCP_TOKEN"


class Go(BaseModel):
    """A yes or no."""

    ok: bool = Field(description="Go on?")


def gated_server() -> MCPServer:
    """An MCP server whose tools echo the token, in a result, an error and a question."""
    server = MCPServer("hosted", log_level="WARNING")

    async def whoami() -> str:
        """Say who the caller is, by its token."""
        return f"you are {TOKEN}"

    async def refuse() -> str:
        """Fail, naming the token."""
        raise ToolError(f"token {TOKEN} may not do this")

    async def confirm(ctx: Context) -> str:
        """Ask a question whose message names the token."""
        reply = await ctx.elicit(f"Go on as {TOKEN}?", schema=Go)
        ok = isinstance(reply, AcceptedElicitation) and reply.data.ok
        return f"went on: {ok}"

    for tool in (whoami, refuse, confirm):
        server.tool()(tool)
    return server


class Gate:
    """ASGI middleware: 401 unless ``Authorization: Bearer TOKEN``; counts what it refused."""

    def __init__(self, app: Any) -> None:
        """Guard ``app``."""
        self.app = app
        self.refused = 0
        self.let_in = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Let a request with the token through; refuse any other HTTP request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if headers.get(b"authorization") == f"Bearer {TOKEN}".encode():
            self.let_in += 1
            await self.app(scope, receive, send)
            return
        self.refused += 1
        await send({"type": "http.response.start", "status": 401, "headers": []})
        await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})


def call(
    conversation: Conversation,
    gate: Gate,
    headers: dict[str, str],
    tool: str,
    prompter: ScriptedPrompter | None = None,
) -> tuple[str, bool]:
    """Call ``tool`` on the gated server with ``headers``: the response's content, error flag."""

    async def over_http() -> tuple[str, bool]:
        async with served(gate) as url:
            server = McpServer(name="hosted", url=url, timeout=30, headers=headers)
            result = await play(
                conversation,
                [server],
                [("call_1", tool, {})],
                tools={tool: ("hosted", tool)},
                prompter=prompter,
            )
        (response,) = result.responses
        return response.content, response.is_error

    return asyncio.run(over_http())


def test_a_bearer_token_from_the_environment_reaches_a_gated_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """${NAME} in a header is the variable's value on every request; what echoes it is masked."""
    monkeypatch.setenv(VARIABLE, TOKEN)
    gate = Gate(gated_server().streamable_http_app())
    conversation = conversation_on_disk(tmp_path / "conversation")
    content = call(conversation, gate, {"Authorization": f"Bearer ${{{VARIABLE}}}"}, "whoami")
    assert content == ("you are <secret>", False)
    assert (gate.refused, gate.let_in > 0) == (0, True)
    assert TOKEN not in stored_text(conversation)
    assert_invariants(conversation)


def test_without_the_header_the_gated_server_refuses_and_the_call_fails(tmp_path: Path) -> None:
    """No header: the server's 401 fails the call as an error the model reads, nothing let in."""
    gate = Gate(gated_server().streamable_http_app())
    conversation = conversation_on_disk(tmp_path / "conversation")
    content, is_error = call(conversation, gate, {}, "whoami")
    assert is_error
    assert content.startswith("MCP server 'hosted' could not be reached at http://127.0.0.1:")
    assert content.endswith(
        "/mcp: it refused the request (HTTP 401; no headers are configured for it)"
    )
    assert (gate.refused > 0, gate.let_in) == (True, 0)


def test_a_servers_error_and_question_have_the_token_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token a server puts in an error or a question is <secret>, on screen and on disk."""
    monkeypatch.setenv(VARIABLE, TOKEN)
    headers = {"Authorization": f"Bearer ${{{VARIABLE}}}"}
    refused = conversation_on_disk(tmp_path / "refused")
    gate = Gate(gated_server().streamable_http_app())
    content, is_error = call(refused, gate, headers, "refuse")
    assert is_error
    assert "token <secret> may not do this" in content
    assert TOKEN not in content
    asked = conversation_on_disk(tmp_path / "asked")
    prompter = ScriptedPrompter().answer({"ok": True})
    gate = Gate(gated_server().streamable_http_app())
    assert call(asked, gate, headers, "confirm", prompter) == ("went on: True", False)
    (shown,) = prompter.shown
    assert "Go on as <secret>?" in repr(shown)
    assert TOKEN not in repr(shown)
    for conversation in (refused, asked):
        assert TOKEN not in stored_text(conversation)
        assert_invariants(conversation)


def test_a_variable_not_set_fails_the_call_naming_it_never_a_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unset ${NAME}: the call fails naming the header and variable; the server is not asked."""
    monkeypatch.delenv(VARIABLE, raising=False)
    gate = Gate(gated_server().streamable_http_app())
    conversation = conversation_on_disk(tmp_path / "conversation")
    headers = {"Authorization": f"Bearer ${{{VARIABLE}}}"}
    content, is_error = call(conversation, gate, headers, "whoami")
    assert is_error
    assert content == (
        f"MCP server 'hosted': header 'Authorization': it names the environment variable "
        f"{VARIABLE!r}, which is not set: it cannot be reached"
    )
    assert (gate.refused, gate.let_in) == (0, 0)


def test_a_headers_value_is_in_no_repr_and_what_http_refuses_is_refused() -> None:
    """A repr names the headers only; a bad name, a line break, a command's headers are refused."""
    server = McpServer(
        name="hosted", url="https://mcp.example.invalid/mcp", headers={"X-Api-Key": TOKEN}
    )
    assert "X-Api-Key" in repr(server)
    assert TOKEN not in repr(server)
    url = "https://mcp.example.invalid/mcp"
    with pytest.raises(ValueError, match=r"headers\['Bad Name'\]: not an HTTP header's name"):
        McpServer(name="hosted", url=url, headers={"Bad Name": "x"})
    with pytest.raises(ValueError, match="line break or a NUL byte") as caught:
        McpServer(name="hosted", url=url, headers={"X-Api-Key": f"{TOKEN}\r\nX-Evil: 1"})
    assert TOKEN not in str(caught.value)
    with pytest.raises(ValueError, match="headers go with a url, not a command"):
        McpServer(name="local", command=("true",), headers={"X-Api-Key": "x"})
    injected = {VARIABLE: f"{TOKEN}\nX-Evil: 1"}
    problem = header_problem("Authorization", f"Bearer ${{{VARIABLE}}}", injected)
    assert problem is not None
    assert "line break" in problem
    assert TOKEN not in problem


SCENARIO = """
[mcp_servers.hosted]
url = "https://mcp.example.invalid/mcp"
headers = {HEADERS}

[defaults]
run = "unattended"

[tools.whoami]
mcp = "hosted"

[[turns]]
message = "who am I?"
[[turns.cycles]]
calls = [{ tool = "whoami", arguments = {} }]
"""


def test_a_scenarios_headers_reach_the_server_and_an_unset_variable_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario `headers` keep their ${NAME}; an unset one, a command's, are refused by key."""
    monkeypatch.setenv(VARIABLE, TOKEN)
    text = SCENARIO.replace("{HEADERS}", f'{{ Authorization = "Bearer ${{{VARIABLE}}}" }}')
    scenario = load_scenario(write(tmp_path / "scenario.toml", text))
    server = scenario.mcp_servers["hosted"]
    assert server.headers == {"Authorization": f"Bearer ${{{VARIABLE}}}"}
    assert server.sent_headers({VARIABLE: TOKEN}) == {"Authorization": f"Bearer {TOKEN}"}
    monkeypatch.delenv(VARIABLE)
    unset = write(tmp_path / "unset.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_scenario(unset)
    assert str(caught.value) == (
        f"{unset}: mcp_servers.hosted.headers.Authorization: it names the environment "
        f"variable {VARIABLE!r}, which is not set"
    )
    local = write(
        tmp_path / "local.toml",
        text.replace('url = "https://mcp.example.invalid/mcp"', 'command = "{{python}}"').replace(
            f'"Bearer ${{{VARIABLE}}}"', '"x"'
        ),
    )
    with pytest.raises(ConfigError) as caught:
        load_scenario(local)
    assert str(caught.value) == (
        f"{local}: mcp_servers.hosted.headers: only a server reached by `url` takes this key"
    )
