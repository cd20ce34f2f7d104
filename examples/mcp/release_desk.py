# A script the example's scenario starts, not a package to import.
# ruff: noqa: INP001
"""release_desk: a small MCP server whose tools ask questions, three ways.

Started by ``examples/mcp/scenario.toml`` over stdio (``inquiry run`` starts
it, with the Python running ``inquiry``, which has the MCP SDK). Its tools:

- ``deploy``: asks through ``input_required`` results (MCP 2026-07-28),
  with the SDK's resolvers: may it deploy (a boolean), then where (a
  select), in two rounds;
- ``announce``: asks with ``ctx.elicit`` while the call runs (the
  ``elicitation/create`` of MCP 2025-11-25): a form of three fields;
- ``connect_ci``: asks the person to open a link (URL mode), whose query
  string holds a value no record may keep.

It writes nothing to stdout but the protocol, and needs no network: the
link is never fetched.
"""

from __future__ import annotations

from typing import Annotated, Literal

import mcp_types as types
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from pydantic import BaseModel, Field

desk = MCPServer("release_desk", log_level="WARNING")

#: Where ``connect_ci`` sends the person; ``state`` stands for a token.
CI_LINK = "https://ci.example.invalid/oauth/authorize?client_id=release-desk&state=s3cr3t-state"


class Go(BaseModel):
    """Whether it may deploy."""

    go: bool = Field(description="Deploy now?")


class Where(BaseModel):
    """Where to deploy."""

    environment: Literal["staging", "production"] = Field(title="Environment")


class Announcement(BaseModel):
    """What to announce, where, to how many."""

    headline: str = Field(description="The headline", min_length=5)
    channels: list[Literal["email", "chat", "blog"]] = Field(description="Where to post it")
    audience: int = Field(description="How many people to notify", ge=1, le=10000)


def ask_confirm(service: str) -> Elicit[Go]:
    """Ask, in round one, whether the service may be deployed."""
    return Elicit(f"Deploy {service}?", Go)


def ask_environment(
    go: Annotated[ElicitationResult[Go], Resolve(ask_confirm)],
) -> Elicit[Where] | None:
    """Ask, in round two and only after a yes, where to deploy."""
    if isinstance(go, AcceptedElicitation) and go.data.go:
        return Elicit("Which environment?", Where)
    return None


@desk.tool()
async def deploy(
    service: str,
    go: Annotated[ElicitationResult[Go], Resolve(ask_confirm)],
    where: Annotated[Where | None, Resolve(ask_environment)],
) -> str:
    """Deploy a service, after asking whether and where."""
    if not isinstance(go, AcceptedElicitation) or not go.data.go:
        return f"{service} was not deployed ({go.action if go.action != 'accept' else 'no'})."
    if where is None:
        return f"{service} was not deployed: no environment."
    return f"Deployed {service} to {where.environment}."


@desk.tool()
async def announce(version: str, ctx: Context) -> str:
    """Announce a release, asking what to say while the call runs."""
    reply = await ctx.elicit(f"Announce {version}: what should it say?", schema=Announcement)
    if not isinstance(reply, AcceptedElicitation):
        return f"{version} was not announced ({reply.action})."
    notes = reply.data
    channels = ", ".join(notes.channels)
    return f"Announced {version} on {channels} to {notes.audience} people: {notes.headline}"


@desk.tool()
async def connect_ci(ctx: Context) -> str | types.InputRequiredResult:
    """Connect the CI service, once the person has authorized it in their browser."""
    replies = ctx.input_responses or {}
    if "authorize" not in replies:
        link = types.ElicitRequestURLParams(
            mode="url", message="Authorize the release desk", url=CI_LINK
        )
        return types.InputRequiredResult(
            input_requests={"authorize": types.ElicitRequest(params=link)},
            request_state="waiting for authorization",
        )
    reply = replies["authorize"]
    action = reply.action if isinstance(reply, types.ElicitResult) else "unknown"
    return "CI connected." if action == "accept" else f"CI not connected ({action})."


if __name__ == "__main__":
    # Serve the module imported under its own name, so that its questions'
    # keys read release_desk:ask_confirm, not __main__:ask_confirm.
    import release_desk

    release_desk.desk.run("stdio")
