"""Real MCP servers for the tests, written with the SDK's own server API, run over stdio.

``python tests/mcp_servers.py ops NAME`` serves :func:`ops` (``MCPServer``,
named ``NAME``): tools asking through ``input_required`` (resolvers, and
results built by hand), through legacy ``elicitation/create``
(``ctx.elicit``), for a multi-field form, for a URL (``leaky_login`` and
``legacy_leaky_login`` put the link, token and all, in the message too, as
servers do), one that echoes the secret its form was given in its result
(``register``: the driver masks it), and one that crashes mid-round-trip.
``raw`` serves a low-level ``Server`` whose ``requestState`` crosses the
wire unsealed, so the test can see it echoed byte for byte. ``ops`` with
``--ttl SECONDS`` seals ``requestState`` for that long only. ``unruly`` is
no SDK server but a few lines of JSON-RPC written by hand (the SDK's server
keeps its stdout clean): its tools write what a badly behaved server does
on its stdout, lines that are not MCP, bytes that are not UTF-8, a reply of
any size (:func:`unruly`).

Every tool appends what it received (actions, never a secret) to
``received.jsonl`` in its working directory, so a test can see what the
server was told after the call is over (a cancel sent to an abandoned call).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.request_state import RequestStateSecurity
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, Field

#: The token the ``signup`` form's secret field expects (its digest is all the server says).
SIGNUP_TOKEN = "tok-s3cret-4242"
#: The link ``login`` asks the person to open; its query holds a token-like value.
LOGIN_URL = "https://auth.example.invalid/authorize?client=inquiry&state=Q-TOKEN-77#step"
#: The token ``leaky_login`` puts in its message's link, as servers do (the url field has none).
LEAKY_TOKEN = "LEAKY-TOKEN-123"
#: The message of ``leaky_login``: a link whose query holds :data:`LEAKY_TOKEN`.
LEAKY_MESSAGE = f"Please open https://auth.example.invalid/cb?code={LEAKY_TOKEN} to sign in"
#: What ``register`` is given in its form's secret field, and echoes in its result.
REGISTER_TOKEN = "reg-s3cret-9137"
#: What ``raw`` sends as its ``requestState``: spaces, quotes, escapes, non-ASCII, a newline.
WEIRD_STATE = ' {"round": 1}  \\u00e9 "quoted" \n tail-ünïcödé ✓ '


def _received(**what: Any) -> None:
    with Path("received.jsonl").open("a", encoding="utf-8") as log:
        log.write(json.dumps(what) + "\n")


class Confirm(BaseModel):
    """A yes or no."""

    ok: bool = Field(description="Deploy now?")


class Pick(BaseModel):
    """One environment."""

    env: Literal["dev", "staging", "prod"] = Field(title="Environment")


def ask_confirm(service: str) -> Elicit[Confirm]:
    """Ask, in round one, whether the service may be deployed."""
    return Elicit(f"Deploy {service}?", Confirm)


def ask_env(
    confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
) -> Elicit[Pick] | None:
    """Ask, in round two and only after a yes, where to deploy."""
    if isinstance(confirm, AcceptedElicitation) and confirm.data.ok:
        return Elicit("Which environment?", Pick)
    return None


def _outcome(result: object) -> str:
    """What a resolved parameter says: not asked, a model (accepted), or an outcome."""
    if result is None:
        return "not asked"
    action = getattr(result, "action", "accept")
    return action if isinstance(action, str) else "accept"


def _picked(result: object) -> str | None:
    """The environment picked, whether the framework unwrapped the outcome or not."""
    if isinstance(result, AcceptedElicitation):
        result = result.data
    return result.env if isinstance(result, Pick) else None


#: The server's name, as ``main`` was told it: tools say it in their results.
NAME = "ops"


async def deploy(
    service: str,
    confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    env: Annotated[ElicitationResult[Pick] | None, Resolve(ask_env)],
) -> str:
    """Deploy a service: a boolean, then a select (input_required)."""
    _received(tool="deploy", confirm=_outcome(confirm), env=_outcome(env))
    if not isinstance(confirm, AcceptedElicitation):
        return f"{NAME}: not deployed (confirmation {confirm.action})"
    if not confirm.data.ok:
        return f"{NAME}: not deployed (the answer was no)"
    picked = _picked(env)
    if picked is None:
        return f"{NAME}: not deployed (environment {_outcome(env)})"
    return f"{NAME}: deployed {service} to {picked}"


async def legacy_deploy(service: str, ctx: Context) -> str:
    """Deploy a service, asking through elicitation/create while the call runs."""
    confirm = await ctx.elicit(f"Really deploy {service}?", schema=Confirm)
    _received(tool="legacy_deploy", confirm=confirm.action)
    if not isinstance(confirm, AcceptedElicitation) or not confirm.data.ok:
        return f"{NAME}: not deployed ({confirm.action})"
    env = await ctx.elicit("Which environment?", schema=Pick)
    _received(tool="legacy_deploy", env=env.action)
    if not isinstance(env, AcceptedElicitation):
        return f"{NAME}: not deployed (environment {env.action})"
    return f"{NAME}: deployed {service} to {env.data.env} (legacy)"


async def legacy_login(ctx: Context) -> str:
    """Ask the person to open a link through elicitation/create (URL mode, 2025-11-25)."""
    reply = await ctx.elicit_url("Sign in (legacy)", url=LOGIN_URL, elicitation_id="sign-in-1")
    _received(tool="legacy_login", action=reply.action)
    if reply.action == "accept":
        await ctx.session.send_elicit_complete("sign-in-1")
    return f"legacy sign-in: {reply.action}"


async def signup(ctx: Context) -> str | types.InputRequiredResult:
    """A form of every kind of field, built by hand (2026-07-28 only)."""
    answers = ctx.input_responses or {}
    if "account" not in answers:
        return types.InputRequiredResult(
            input_requests={"account": types.ElicitRequest(params=SIGNUP_FORM)},
            request_state=json.dumps({"round": 1}),
        )
    reply = answers["account"]
    if not isinstance(reply, types.ElicitResult):
        return "not an elicitation result"
    _received(tool="signup", action=reply.action)
    if reply.action != "accept" or reply.content is None:
        return f"signup {reply.action}"
    content = dict(reply.content)
    token = content.pop("api_token", None)
    digest = hashlib.sha256(str(token).encode()).hexdigest()[:8]
    expected = hashlib.sha256(SIGNUP_TOKEN.encode()).hexdigest()[:8]
    content["api_token"] = "matches" if digest == expected else f"differs ({digest})"
    return "signed up: " + json.dumps(content, sort_keys=True)


async def login(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the person to open a link (URL mode, 2026-07-28)."""
    answers = ctx.input_responses or {}
    if "authorize" not in answers:
        link = types.ElicitRequestURLParams(
            mode="url", message="Sign in to the example service", url=LOGIN_URL
        )
        return types.InputRequiredResult(
            input_requests={"authorize": types.ElicitRequest(params=link)},
            request_state="login",
        )
    reply = answers["authorize"]
    action = reply.action if isinstance(reply, types.ElicitResult) else "?"
    _received(tool="login", action=action)
    return "signed in" if action == "accept" else f"not signed in ({action})"


async def leaky_login(ctx: Context) -> str | types.InputRequiredResult:
    """URL mode whose message holds a link with a token in its query (2026-07-28)."""
    answers = ctx.input_responses or {}
    if "authorize" not in answers:
        link = types.ElicitRequestURLParams(mode="url", message=LEAKY_MESSAGE, url=LOGIN_URL)
        return types.InputRequiredResult(
            input_requests={"authorize": types.ElicitRequest(params=link)}
        )
    reply = answers["authorize"]
    action = reply.action if isinstance(reply, types.ElicitResult) else "?"
    _received(tool="leaky_login", action=action)
    return "signed in" if action == "accept" else f"not signed in ({action})"


async def legacy_leaky_login(ctx: Context) -> str:
    """Legacy URL mode whose message holds a link with a token and a fresh nonce each time."""
    nonce = os.urandom(8).hex()
    message = (
        f"Please open https://user:pw@auth.example.invalid/cb?code={LEAKY_TOKEN}&nonce={nonce}"
        f"#at-{nonce} to sign in"
    )
    reply = await ctx.elicit_url(message, url=f"{LOGIN_URL}&nonce={nonce}", elicitation_id=nonce)
    _received(tool="legacy_leaky_login", action=reply.action)
    return f"legacy sign-in: {reply.action}"


class Registration(BaseModel):
    """A token the server asks for in a form (which MCP forbids; this server does anyway)."""

    api_token: str = Field(title="API token")


async def register(ctx: Context) -> str:
    """Ask for a token in a form, then echo it in the result (the driver masks it)."""
    reply = await ctx.elicit("Register your API token", schema=Registration)
    _received(tool="register", action=reply.action)
    if not isinstance(reply, AcceptedElicitation):
        return f"not registered ({reply.action})"
    return f"registered with token {reply.data.api_token}"


async def crash(ctx: Context) -> str | types.InputRequiredResult:
    """Ask a question, then die when the answer comes back."""
    if not ctx.input_responses:
        schema = {"type": "object", "properties": {"sure": {"type": "boolean"}}}
        question = types.ElicitRequestFormParams(message="Crash now?", requested_schema=schema)
        return types.InputRequiredResult(
            input_requests={"go": types.ElicitRequest(params=question)},
            request_state="before the crash",
        )
    os._exit(3)


async def pid() -> str:
    """Which process serves."""
    return str(os.getpid())


async def slow() -> str:
    """Take far longer than any test waits."""
    await anyio.sleep(60)
    return "finally"


def ops(name: str, ttl: float | None) -> MCPServer:
    """The asking tools, on an ``MCPServer`` called ``name`` (``ttl``: seconds a state lives)."""
    global NAME  # noqa: PLW0603 - one server per process, named when it starts
    NAME = name
    security = None
    if ttl is not None:
        security = RequestStateSecurity(keys=[os.urandom(32)], ttl=ttl)
    server = MCPServer(name, log_level="WARNING", request_state_security=security)
    tools = (
        deploy,
        legacy_deploy,
        legacy_login,
        signup,
        login,
        leaky_login,
        legacy_leaky_login,
        register,
        crash,
        pid,
        slow,
    )
    for tool in tools:
        server.tool()(tool)
    return server


#: The hand-built form of ``signup``: one field of every kind a form may ask.
SIGNUP_FORM = types.ElicitRequestFormParams(
    message="Create your account",
    requested_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "age": {"type": "integer", "minimum": 18, "maximum": 150},
            "email": {"type": "string", "format": "email", "description": "Where we write"},
            "plan": {
                "type": "string",
                "oneOf": [
                    {"const": "free", "title": "Free"},
                    {"const": "pro", "title": "Pro, billed monthly"},
                ],
            },
            "newsletter": {"type": "boolean", "default": False},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["ai", "ops", "web"]},
                "maxItems": 2,
            },
            "nickname": {"type": "string"},
            "api_token": {"type": "string", "title": "API token", "minLength": 8},
        },
        "required": ["name", "age", "email", "plan", "newsletter", "api_token"],
    },
)


def raw() -> Server[Any]:
    """A low-level server: its requestState is sent as it is, so a test sees the echo."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del ctx, params
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="stateful", description="echo check", input_schema=schema),
                types.Tool(name="stateless", description="no state", input_schema=schema),
                types.Tool(name="sampler", description="asks the model", input_schema=schema),
            ]
        )

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        del ctx
        if params.name == "sampler":
            sample = types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=[], max_tokens=10)
            )
            return types.InputRequiredResult(input_requests={"think": sample})
        if not params.input_responses:
            question = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="Go on?",
                    requested_schema={
                        "type": "object",
                        "properties": {"go": {"type": "boolean"}},
                        "required": ["go"],
                    },
                )
            )
            state = WEIRD_STATE if params.name == "stateful" else None
            return types.InputRequiredResult(input_requests={"go": question}, request_state=state)
        echoed = params.request_state
        if params.name == "stateless":
            text = "no state sent back" if echoed is None else f"a state came back: {echoed!r}"
        else:
            text = "state echoed verbatim" if echoed == WEIRD_STATE else f"state was {echoed!r}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("raw", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_raw() -> None:
    server = raw()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


#: The tools of ``unruly``, and what each writes on its stdout for ``tools/call``.
UNRULY_TOOLS = ("echo", "noisy", "latin1_noise", "mangled", "huge", "mutter")


def _unruly_reply(message_id: object, text: bytes) -> bytes:
    """A ``tools/call`` result of one text block, ``text`` put in as it is (JSON-escaped)."""
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(message_id).encode() + b","
    return head + b'"result":{"content":[{"type":"text","text":"' + text + b'"}]}}\n'


def _unruly_call(out: Any, message_id: object, tool: str, arguments: dict[str, Any]) -> None:
    """Write what ``tool`` writes: noise, then the reply (or a reply that is itself the fault)."""
    if tool == "noisy":  # a library printing progress on stdout, line after line
        lines = int(arguments.get("lines", 1000))
        out.write(b"".join(b"progress: step %d of the build\n" % n for n in range(lines)))
    elif tool == "mutter":  # three lines of noise, and never a reply
        out.write(b"thinking\nstill thinking\n{not json}\n")
        return
    elif tool == "latin1_noise":  # a banner in Latin-1, not UTF-8
        out.write(b"d\xe9marrage du serveur\n")
    elif tool == "mangled":  # the reply itself holds a byte that is not UTF-8
        out.write(_unruly_reply(message_id, b"caf\xe9"))
        return
    elif tool == "huge":  # a reply of ``megabytes`` MiB, written a MiB at a time
        megabytes = int(arguments.get("megabytes", 1))
        head = _unruly_reply(message_id, b"")
        cut = head.index(b'"}]}}')
        out.write(head[:cut])
        chunk = b"x" * (1 << 20)
        for _ in range(megabytes):
            out.write(chunk)
        out.write(head[cut:])
        out.flush()
        return
    out.write(_unruly_reply(message_id, f"{tool}: done".encode()))


def unruly() -> None:
    """A hand-written stdio server (legacy handshake) whose tools misbehave on its stdout."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        message_id, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        if message_id is None:
            continue  # a notification
        result: dict[str, Any] | None = None
        if method == "initialize":
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "unruly", "version": "1"},
            }
        elif method == "tools/list":
            schema = {"type": "object"}
            result = {"tools": [{"name": name, "inputSchema": schema} for name in UNRULY_TOOLS]}
        elif method == "tools/call":
            _unruly_call(out, message_id, params["name"], params.get("arguments") or {})
            out.flush()
            continue
        if result is None:  # server/discover among them: this server speaks the legacy era
            error = {"code": -32601, "message": f"no method {method}"}
            reply = {"jsonrpc": "2.0", "id": message_id, "error": error}
        else:
            reply = {"jsonrpc": "2.0", "id": message_id, "result": result}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


def main(argv: list[str]) -> None:
    """Serve the server ``argv`` names, over stdio."""
    if argv[:1] == ["raw"]:
        anyio.run(_serve_raw)
        return
    if argv[:1] == ["unruly"]:
        unruly()
        return
    name = argv[1] if len(argv) > 1 else "ops"
    ttl = float(argv[argv.index("--ttl") + 1]) if "--ttl" in argv else None
    ops(name, ttl).run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
