"""MCP servers' tools, whose questions are asked as inquiries (the ``mcp`` extra).

An adapter of the sixth layer, over the official MCP Python SDK (``mcp``,
imported only when a server is first reached). :class:`McpToolbox` knows the
servers of a run (:class:`McpServer`: a command started over stdio, or a
streamable HTTP URL) and gives an executor per tool
(:meth:`McpToolbox.executor`, or :meth:`McpToolbox.executors` for every tool
the servers list). When a tool asks for input — an ``input_required``
result's ``inputRequests`` (MCP 2026-07-28), or ``elicitation/create``
requests sent while the call runs (2025-11-25 and before) — each request
becomes questions of the calling tool call, asked through the driver like any
tool's: recorded, remembered, answered statically, routed to the person or
the model, secrets redacted, re-asking bounded.

How a form's schema becomes questions, and the replies the server gets, is
in :mod:`coordinator.adapters.mcp._forms`; the round trips in
:mod:`coordinator.adapters.mcp._toolbox`; ``docs/mcp.md`` says it all in one
place.

Rules:

1. Provenance is decided here: a question is always the calling tool's own
   (``InquirySource.tool``); nothing a server sends can change it.
2. A URL request is never a form and never goes to the model: it is a
   secret question for the person, recorded without the link's query (the
   links its message repeats too).
3. The SDK is imported when it is used, never at import.

:func:`os_text_problem` and :func:`variable_name_problem` say why the OS
could not start a server as configured, :func:`header_problem` why a header
could not be sent (its ``${NAME}`` variables not set, say), for a reader of
the configuration to refuse it before anything runs.
"""

from coordinator.adapters.mcp._forms import ACCEPT, DECLINE
from coordinator.adapters.mcp._servers import (
    DEFAULT_MAX_REPLY,
    DEFAULT_TIMEOUT,
    McpServer,
    header_problem,
    os_text_problem,
    variable_name_problem,
)
from coordinator.adapters.mcp._toolbox import McpToolbox, McpToolExecutor

#: What to install for MCP servers.
MCP_EXTRA = "inquiry-coordinator[mcp]"

__all__ = [
    "ACCEPT",
    "DECLINE",
    "DEFAULT_MAX_REPLY",
    "DEFAULT_TIMEOUT",
    "MCP_EXTRA",
    "McpServer",
    "McpToolExecutor",
    "McpToolbox",
    "header_problem",
    "os_text_problem",
    "variable_name_problem",
]
