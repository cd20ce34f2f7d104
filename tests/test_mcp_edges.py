"""MCP servers at their edges: replies too large, stdout that is not MCP, fields named secret.

The stdio servers here are ``unruly`` (``tests/mcp_servers.py``): JSON-RPC
written by hand, since the SDK's own server keeps its stdout clean. Over
HTTP, a small ``MCPServer`` runs in this process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from coordinator_harness import UNATTENDED, assert_invariants, conversation_on_disk
from mcp_servers import SIGNUP_TOKEN
from test_mcp import SERVERS, asked, ops, play, responses, run_calls, served

from coordinator.adapters.mcp import DEFAULT_MAX_REPLY, McpServer, McpToolbox
from coordinator.driver import ScriptedPrompter, ToolCoordinator
from machines import ChatResponse, Redacted, ToolCallRequest, ToolCallResponse

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue


def unruly(tmp_path: Path, **options: Any) -> McpServer:
    """The hand-written server whose tools misbehave on their stdout."""
    return McpServer(
        name="unruly",
        command=(sys.executable, str(SERVERS), "unruly"),
        cwd=tmp_path,
        **({"timeout": 30} | options),
    )


def call_in_turn(
    tmp_path: Path, server: McpServer, *calls: tuple[str, dict[str, JsonValue]]
) -> list[ToolCallResponse]:
    """Run ``calls`` (tool, arguments) of ``server`` one after the other, through one toolbox."""
    conversation = conversation_on_disk(tmp_path / "conversation")

    async def each() -> list[ToolCallResponse]:
        found: list[ToolCallResponse] = []
        async with McpToolbox([server]) as toolbox:
            coordinator = ToolCoordinator(
                conversation,
                tools={tool: toolbox.executor(server.name, tool) for tool, _ in calls},
                config=UNATTENDED,
                on_step=toolbox.observe,
            )
            for index, (tool, arguments) in enumerate(calls):
                request = ToolCallRequest(id=f"call_{index}", name=tool, arguments=arguments)
                conversation.stream.append(ChatResponse.message("calling"))
                conversation.stream.append(request)
                found += await coordinator.run([request])
        return found

    found = asyncio.run(each())
    assert_invariants(conversation)
    return found


def mcp_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings this package logged about MCP servers."""
    return [r.getMessage() for r in caplog.records if r.name == "coordinator.mcp"]


def sdk_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the MCP SDK itself logged (a traceback for each line it could not parse, once)."""
    return [r for r in caplog.records if r.name.startswith("mcp.")]


# ------------------------------------------------------------------ a reply's size


def test_a_reply_larger_than_max_reply_fails_the_call_and_the_run_goes_on(tmp_path: Path) -> None:
    """One MiB within a bound of two is read whole; three is refused, naming the bound; then on."""
    server = unruly(tmp_path, max_reply=2 * 1024 * 1024)
    within, beyond, after = call_in_turn(
        tmp_path,
        server,
        ("huge", {"megabytes": 1}),
        ("huge", {"megabytes": 3}),
        ("echo", {}),
    )
    assert (within.is_error, len(within.content)) == (False, 1024 * 1024)
    assert beyond == ToolCallResponse(
        id="call_1",
        content=(
            "MCP server 'unruly' sent a message larger than 2,097,152 bytes (its max_reply) "
            "while asked to run tool 'huge': the connection was closed, and the call did not "
            "complete"
        ),
        is_error=True,
    )
    assert after == ToolCallResponse(id="call_2", content="echo: done", is_error=False)


def test_the_bound_on_a_reply_is_sixteen_mib_unless_configured() -> None:
    """McpServer.max_reply: 16 MiB by default; a whole number of bytes, 1 or more."""
    assert McpServer(name="s", command=("x",)).max_reply == DEFAULT_MAX_REPLY == 16 * 1024 * 1024
    with pytest.raises(ValueError, match="max_reply must be a number of bytes greater than 0"):
        McpServer(name="s", command=("x",), max_reply=0)
    with pytest.raises(TypeError, match="max_reply must be a whole number of bytes"):
        McpServer(name="s", command=("x",), max_reply=1.5)  # type: ignore[arg-type]


async def _big(kilobytes: int) -> str:
    """A reply of that many KiB."""
    return "x" * (kilobytes * 1024)


def test_an_http_reply_larger_than_max_reply_fails_the_call_and_the_next_is_read(
    tmp_path: Path,
) -> None:
    """Streamable HTTP: a body past max_reply fails its call, saying so; the next call is read."""
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415 - the SDK, for this test alone

    conversation = conversation_on_disk(tmp_path / "conversation")
    web = MCPServer("web", log_level="WARNING")
    web.tool()(_big)

    async def over_http() -> list[ToolCallResponse]:
        async with served(web.streamable_http_app(json_response=True)) as url:
            played = await play(
                conversation,
                [McpServer(name="web", url=url, timeout=30, max_reply=256 * 1024)],
                [("call_1", "_big", {"kilobytes": 400}), ("call_2", "_big", {"kilobytes": 100})],
                tools={"_big": ("web", "_big")},
            )
        return played.responses

    beyond, within = asyncio.run(over_http())
    assert beyond.is_error
    assert beyond.content.startswith("MCP server 'web' could not run tool '_big': ")
    assert "the reply is larger than 262,144 bytes (its max_reply)" in beyond.content
    assert (within.is_error, len(within.content)) == (False, 100 * 1024)
    assert_invariants(conversation)


def test_a_connection_the_sdk_ended_saying_why_is_reported_so_links_cut() -> None:
    """An event past the SSE bound, a redirect refused: the SDK's words, a link's query cut."""
    from mcp import MCPError  # noqa: PLC0415 - imports the SDK
    from mcp_types import CONNECTION_CLOSED  # noqa: PLC0415

    from coordinator.adapters.mcp._session import Connection  # noqa: PLC0415 - the SDK

    async def failed(message: str) -> str:
        connection = Connection(McpServer(name="web", url="https://mcp.example.invalid/mcp"))
        error = MCPError(code=CONNECTION_CLOSED, message=message)
        return connection._failure(error, "run tool 'big'").message

    assert asyncio.run(
        failed("SSE stream failed: Server-sent event exceeded the 64 byte limit.")
    ) == (
        "MCP server 'web': the connection failed while trying to run tool 'big' "
        "(SSE stream failed: Server-sent event exceeded the 64 byte limit.); "
        "the call did not complete"
    )
    redirected = asyncio.run(
        failed("redirect to https://evil.example.invalid/x?token=T-99 refused")
    )
    assert "T-99" not in redirected
    assert "https://evil.example.invalid/x (query string not shown)" in redirected
    assert asyncio.run(failed("Connection closed")).startswith(
        "MCP server 'web' closed the connection while trying to run tool 'big' (it may have "
    )


# ------------------------------------------------------------------ stdout that is not MCP


def test_lines_that_are_not_mcp_are_ignored_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """500 lines of progress on stdout, twice: both calls succeed; one warning, no traceback."""
    caplog.set_level(logging.DEBUG)
    first, second = call_in_turn(
        tmp_path, unruly(tmp_path), ("noisy", {"lines": 500}), ("noisy", {"lines": 500})
    )
    assert (first.content, second.content) == ("noisy: done", "noisy: done")
    assert mcp_warnings(caplog) == [
        (
            "MCP server 'unruly' wrote a line on its stdout that is not an MCP message: it is "
            "ignored, as every such line is (said once)"
        )
    ]
    assert sdk_records(caplog) == []


def test_a_line_that_is_not_utf8_is_noise_said_once_not_a_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A banner in Latin-1 before each reply: the calls succeed; said once, truthfully."""
    caplog.set_level(logging.DEBUG)
    first, second = call_in_turn(
        tmp_path, unruly(tmp_path, timeout=10), ("latin1_noise", {}), ("latin1_noise", {})
    )
    assert (first.is_error, first.content) == (False, "latin1_noise: done")
    assert (second.is_error, second.content) == (False, "latin1_noise: done")
    assert mcp_warnings(caplog) == [
        (
            "MCP server 'unruly' wrote a line on its stdout that is not UTF-8: it is no MCP "
            "message and is ignored, as every such line is (said once)"
        )
    ]
    assert sdk_records(caplog) == []


def test_a_reply_that_is_not_utf8_fails_the_call_saying_so_not_as_a_timeout(
    tmp_path: Path,
) -> None:
    """The reply itself holds a byte that is not UTF-8: the call fails at once, saying that."""
    (broken, after) = call_in_turn(
        tmp_path, unruly(tmp_path, timeout=5), ("mangled", {}), ("echo", {})
    )
    assert broken.content == (
        "MCP server 'unruly' sent a message that is not valid UTF-8 while asked to run tool "
        "'mangled': the connection was closed, and the call did not complete"
    )
    assert (after.is_error, after.content) == (False, "echo: done")


def test_a_timeout_says_the_server_wrote_lines_that_are_not_mcp(tmp_path: Path) -> None:
    """Noise and never a reply: the timeout names the lines that were not messages."""
    (silent,) = call_in_turn(tmp_path, unruly(tmp_path, timeout=1), ("mutter", {}))
    assert silent.content == (
        "MCP server 'unruly' did not answer within 1 s while running tool 'mutter' "
        "(it also wrote 3 lines on its stdout that are not MCP messages)"
    )


# ------------------------------------------------------------------ fields named secret


def test_a_field_the_configuration_names_secret_is_redacted_and_its_echo_masked(
    tmp_path: Path,
) -> None:
    """secret_fields = {nickname}: asked apart as a secret, redacted, masked in the result."""
    nickname = "Zq8v-nick-4711"
    filled: dict[str, JsonValue] = {
        "name": "Ada",
        "age": 42,
        "email": "ada@example.com",
        "plan": "pro",
        "newsletter": False,
        "tags": ["ai"],
    }
    prompter = ScriptedPrompter().answer(filled).answer(nickname).answer(SIGNUP_TOKEN)
    server = attrs.evolve(ops(tmp_path), secret_fields={"nickname"})
    conversation, result = run_calls(
        tmp_path, ("call_1", "signup", {}), servers=[server], prompter=prompter
    )
    (response,) = result.responses
    echoed = json.loads(response.content.removeprefix("signed up: "))
    assert echoed["nickname"] == "<secret>"
    requests = {r.question.id: r.question for r in asked(conversation)}
    assert list(requests) == ["account", "account.nickname", "account.api_token"]
    form = requests["account"].answer_type.form
    assert form is not None
    assert "nickname" not in {field.name for field in form.fields}
    nickname_question = requests["account.nickname"]
    assert nickname_question.answer_type.is_secret
    assert nickname_question.context is not None
    assert "the configuration names it a secret (secret_fields)" in nickname_question.context
    assert sum(isinstance(r, Redacted) for r in responses(conversation)) == 2  # nickname, token
    assert_invariants(conversation, secrets=[nickname, SIGNUP_TOKEN])


def test_secret_fields_must_be_names_not_a_string() -> None:
    """McpServer.secret_fields: a collection of non-empty names; a lone string is a mistake."""
    assert McpServer(name="s", command=("x",), secret_fields=["pin"]).secret_fields == {"pin"}
    with pytest.raises(TypeError, match="not a string"):
        McpServer(name="s", command=("x",), secret_fields="pin")
    with pytest.raises(TypeError, match="non-empty strings"):
        McpServer(name="s", command=("x",), secret_fields=[""])
