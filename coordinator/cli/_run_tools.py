"""The tools of ``inquiry run``: an executor for each, and the environment they run with.

Theory of operation: :func:`build_executors` turns the scenario's
``[tools]`` into the executors the coordinator runs: a local tool (a command
speaking the local-tool protocol, ``docs/local-tools.md``) runs in the
workspace with the environment :func:`tool_environment` gives; a builtin is
the engine's own. Every executor the run uses is made here, so a new kind of
tool is one more branch of :func:`build_executors`.

Rule: local tools never see the secrets the run reads from its environment
(the answers file's ``value_env`` variables, the model backend's API key
variable): what a tool prints is recorded, with only the secrets that call
was given masked in it. :func:`withdraw_secrets` reads each into memory and
takes it out of this process's environment, before any tool runs: out of
the tools' environment, and out of the environment block the process
started with, which a tool could otherwise read from
``/proc/<parent pid>/environ`` (the kernel shows that block as it was at
the start, whatever ``unsetenv`` did since).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from coordinator.adapters import LocalToolExecutor, builtin_executors
from coordinator.adapters.mcp import McpToolbox

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from coordinator.cli._answer_script import AnswerScript
    from coordinator.cli._run_players import Model
    from coordinator.cli._scenario import Scenario
    from coordinator.driver import Executor
    from coordinator.store import RunningTools

__all__ = ["build_executors", "withdraw_secrets"]


def build_executors(
    scenario: Scenario,
    workspace: Path,
    conversation_id: str,
    env: Mapping[str, str],
    *,
    mcp: McpToolbox | None = None,
    running: RunningTools | None = None,
) -> dict[str, Executor]:
    """An executor for each of the scenario's tools, by name.

    Local tools run in ``workspace`` with the environment ``env``, and are
    told ``conversation_id``; their processes are noted in ``running`` while
    they run (a next writer stops them should this run die); MCP tools are
    called through ``mcp``.
    """
    builtins = builtin_executors()
    executors: dict[str, Executor] = {}
    for name, tool in scenario.tools.items():
        if tool.local is not None:
            executors[name] = LocalToolExecutor(
                tool.local,
                root=workspace,
                conversation_id=conversation_id,
                env=env,
                running=running,
            )
        elif tool.builtin is not None:
            executors[name] = builtins[tool.builtin]
        elif tool.mcp_server is not None and mcp is not None:
            executors[name] = mcp.executor(tool.mcp_server, tool.mcp_tool or name)
    return executors


def mcp_toolbox(scenario: Scenario, workspace: Path) -> McpToolbox | None:
    """The scenario's MCP servers, run in the workspace as local tools are; none without any.

    They get the SDK's short environment and their ``env``, never the run's
    secrets (docs/mcp.md); each is started when a tool of its is first called.
    """
    if not scenario.mcp_servers:
        return None
    return McpToolbox(
        attrs.evolve(server, cwd=workspace) for server in scenario.mcp_servers.values()
    )


def withdraw_secrets(
    script: AnswerScript | None, model: Model
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Take the run's secret variables out of this process; the tools' environment, and those.

    The secrets are the answers file's ``value_env`` variables (the person's
    secret answers, read already) and the variable holding the API key of
    the model backend this run uses (read already, by :func:`model`); other
    providers' keys stay, as a tool may need its own. Returns the
    environment local tools run with (this process's, less the secrets) and
    the names of the variables withdrawn, for the run to say so.
    """
    hidden = set(script.secret_variables if script is not None else ())
    if model.key_variable is not None:
        hidden.add(model.key_variable)
    withdrawn = tuple(sorted(name for name in hidden if name in os.environ))
    for name in withdrawn:
        del os.environ[name]  # and unsetenv: not for children, nor for getenv
    _scrub_initial_environment(withdrawn)
    return dict(os.environ), withdrawn


#: Fields 50 and 51 of /proc/<pid>/stat (proc(5)): where the environment block
#: the process started with lies, counted from field 3, the first after the name.
_ENV_START = 50 - 3


def _scrub_initial_environment(names: Collection[str]) -> None:
    """Overwrite ``NAME=value`` of each of ``names`` in the process's first environment block.

    That block is what ``/proc/<pid>/environ`` shows, to any process of the
    same user (a tool, from its parent), and ``unsetenv`` leaves it as it
    was. Once ``unsetenv`` has dropped the C library's pointers into it, no
    one reads those bytes: they are set to NUL. Where there is no ``/proc``
    (not Linux) there is nothing to read them from, and nothing is done.
    """
    if not names:
        return
    wanted = {os.fsencode(name) for name in names}
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path("/proc/self/stat").read_bytes().rpartition(b")")[2].split()
        start = int(fields[_ENV_START])
        if start <= 0:
            return  # not shown: then not readable by others either
        block = Path("/proc/self/environ").read_bytes()
        offset = 0
        for entry in block.split(b"\0"):
            if entry.partition(b"=")[0] in wanted:
                ctypes.memset(start + offset, 0, len(entry))
            offset += len(entry) + 1
