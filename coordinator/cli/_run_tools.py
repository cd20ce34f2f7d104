"""The tools of ``inquiry run``: an executor for each, and the environment they run with.

Theory of operation: :func:`build_executors` turns the scenario's
``[tools]`` into the executors the coordinator runs: a local tool (a command
speaking the local-tool protocol, ``docs/local-tools.md``) runs in the
workspace with the environment :func:`tool_environment` gives; a builtin is
the engine's own. Every executor the run uses is made here, so a new kind of
tool is one more branch of :func:`build_executors`.

Rule: local tools run without the secrets the run reads in their environment
(the answers file's ``value_env`` variables, the model backend's API key
variable): what a tool prints is recorded, with only the secrets that call
was given masked in it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from coordinator.adapters._builtins import builtin_executors
from coordinator.adapters._local_tools import LocalToolExecutor

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from coordinator.cli._answer_script import AnswerScript
    from coordinator.cli._run_players import Model
    from coordinator.cli._scenario import Scenario
    from coordinator.driver._executors import Executor

__all__ = ["build_executors", "tool_environment"]


def build_executors(
    scenario: Scenario, workspace: Path, conversation_id: str, env: Mapping[str, str]
) -> dict[str, Executor]:
    """An executor for each of the scenario's tools, by name.

    Local tools run in ``workspace`` with the environment ``env``, and are
    told ``conversation_id``.
    """
    builtins = builtin_executors()
    executors: dict[str, Executor] = {}
    for name, tool in scenario.tools.items():
        if tool.local is not None:
            executors[name] = LocalToolExecutor(
                tool.local, root=workspace, conversation_id=conversation_id, env=env
            )
        elif tool.builtin is not None:
            executors[name] = builtins[tool.builtin]
    return executors


def tool_environment(
    script: AnswerScript | None, model: Model
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment local tools run with, and the variables left out of it.

    This process's environment, less the secrets the run reads: a tool may
    print whatever it can read, and what it prints is recorded before anything
    could mask it. Left out are the answers file's ``value_env`` variables (the
    person's secret answers) and the variable holding the API key of the model
    backend this run uses; other providers' keys stay, as a tool may need its own.
    """
    hidden = set(script.secret_variables if script is not None else ())
    if model.key_variable is not None:
        hidden.add(model.key_variable)
    environment = {name: value for name, value in os.environ.items() if name not in hidden}
    return environment, tuple(sorted(name for name in hidden if name in os.environ))
