"""Scenario files: the tools, their configuration and the turns ``inquiry run`` plays.

Theory of operation: a scenario is a TOML file (``examples/README.md`` lists
every key). :func:`load_scenario` reads it completely before anything runs:
the MCP servers it starts (``[mcp_servers.NAME]``, ``docs/mcp.md``), the
tools (local commands, built-ins, or an MCP server's tools) and their
configuration, which
:func:`~coordinator.driver._config.parse_tools_config` reads with the tool keys this
module adds; the optional model backend table, checked as
:func:`~coordinator.adapters.providers.backend_from_config` checks it (whether or not
this run will use it) and kept for it; and the turns, each a
user message and the cycles of tool calls the assistant made (one assistant
response per cycle, its calls run in parallel).

Rules:

1. Everything that can be checked before running is: unknown keys, wrong
   types, missing keys, a tool with more than one of ``command``,
   ``builtin`` and ``mcp`` (or none), an MCP server the scenario does not
   define, a call to a tool the scenario does not define, arguments the
   tool's ``parameters`` schema refuses, a program that is not there (a
   local tool's or an MCP server's), what the OS would refuse to start an
   MCP server with (an ``env`` name that is empty or holds ``=``, a NUL byte
   in its command, arguments, ``env`` or ``stderr``), MCP servers without
   the ``mcp`` extra.
   Each error names the file and the key, and nothing has been written yet.
   Whether an MCP server offers a tool is known only once it runs: a call
   to one it does not offer fails, naming what it offers.
2. A scenario runs from any directory: a local tool's program is resolved
   against the scenario's directory when it contains a ``/`` and looked up on
   ``PATH`` otherwise, and every other argument that is a relative path with a
   ``/`` (``tools/patch.py``) naming an existing file or directory beside the
   scenario is made absolute; a bare name (``notes.txt``) is left for the tool
   to find in its workspace. The workspace ``seed`` is relative to the
   scenario's directory too.
3. Provenance is not configurable here either: a built-in's questions are
   recorded as its code says (``ask_user``: the assistant), a local tool's
   and an MCP tool's as the tool's own.
4. ``ask_user`` (RFD 083) is in every scenario, whether or not it has a
   ``[tools.ask_user]`` table; such a table without ``command``, ``builtin``
   or ``mcp`` configures the built-in (``enable = false`` turns it off by
   name), and a built-in's defaults are merged under whatever the scenario
   sets for it (:func:`~coordinator.adapters.with_builtin_defaults`). A
   tool turned off is not told to the model; a call to it is played, and
   answered as for a tool that is not there.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from coordinator._errors import ConfigError, os_reason
from coordinator._text import shown_path
from coordinator.adapters import (
    ASK_USER,
    ASK_USER_DESCRIPTION,
    ASK_USER_PARAMETERS,
    HIDDEN_BUILTINS,
    LocalTool,
    check_arguments,
    schema_problem,
    with_builtin_defaults,
)
from coordinator.adapters.mcp import (
    DEFAULT_MAX_REPLY,
    MCP_EXTRA,
    McpServer,
    header_problem,
    os_text_problem,
    variable_name_problem,
)
from coordinator.adapters.providers import (
    ANSWER_INQUIRY,
    ProviderConfigError,
    ToolDefinition,
    check_backend_config,
)
from coordinator.driver import (
    ToolsConfig,
    check_keys,
    choice,
    join_key,
    json_table,
    load_toml,
    name_key,
    optional_string,
    parse_tools_config,
    shown_error,
    string,
    table,
    tables,
)
from machines import JsonValue, json_type

__all__ = [
    "BUILTIN_TOOLS",
    "PYTHON",
    "Cycle",
    "PlannedCall",
    "Scenario",
    "ScenarioTool",
    "TurnPlan",
    "load_scenario",
    "parse_scenario",
]

#: The built-in tools a scenario may name with ``builtin``, and what the model is told of each.
BUILTIN_TOOLS: Final[Mapping[str, str]] = {
    ASK_USER: ASK_USER_DESCRIPTION,
    ANSWER_INQUIRY: "Answer a question from a tool that needs additional input.",
}

#: An MCP server's ``command`` that means the Python running ``inquiry`` (which has the SDK).
PYTHON: Final = "{{python}}"

_TOP_KEYS = (
    "title",
    "system",
    "workspace",
    "backend",
    "mcp_servers",
    "defaults",
    "tools",
    "turns",
)
_TOOL_KEYS = frozenset(
    {
        "command",
        "builtin",
        "mcp",
        "mcp_tool",
        "description",
        "parameters",
        "options",
        "timeout",
        "max_output",
    }
)
_MCP_SERVER_KEYS = (
    "command",
    "args",
    "env",
    "url",
    "timeout",
    "start_timeout",
    "stderr",
    "max_reply",
    "secret_fields",
    "headers",
)
_LOCAL_ONLY = ("command", "parameters", "options", "timeout", "max_output")
_DEFAULT_TIMEOUT = 60.0
_LONGEST_TIMEOUT = 1e9  # seconds; past this a number is a mistake, not a timeout
_DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024
_EMPTY_SCHEMA: Final[Mapping[str, JsonValue]] = {"type": "object", "properties": {}}


@attrs.frozen(kw_only=True)
class ScenarioTool:
    """A tool of the scenario: a local command, a built-in, or a tool of an MCP server.

    ``mcp_server`` names the server, ``mcp_tool`` the tool as the server
    calls it (the scenario may call it by another name).
    """

    name: str
    description: str = ""
    local: LocalTool | None = None
    builtin: str | None = None
    mcp_server: str | None = None
    mcp_tool: str | None = None

    @property
    def hidden(self) -> bool:
        """Whether its call and result are left out of the progress (RFD 083: ``ask_user``)."""
        return self.builtin in HIDDEN_BUILTINS

    @property
    def parameters(self) -> Mapping[str, Any] | None:
        """The JSON schema of the tool's arguments, if it has one."""
        if self.builtin == ASK_USER:
            return ASK_USER_PARAMETERS
        return self.local.parameters if self.local is not None else None

    def definition(self) -> ToolDefinition:
        """What the model is told of this tool."""
        schema = dict(self.parameters) if self.parameters is not None else dict(_EMPTY_SCHEMA)
        return ToolDefinition(name=self.name, description=self.description, parameters=schema)


@attrs.frozen(kw_only=True)
class PlannedCall:
    """One tool call the assistant makes; ``id`` is generated when ``None``."""

    tool: str
    arguments: Mapping[str, JsonValue]
    id: str | None = None


@attrs.frozen(kw_only=True)
class Cycle:
    """One assistant response: an optional message, then tool calls run in parallel."""

    calls: tuple[PlannedCall, ...]
    message: str | None = None


@attrs.frozen(kw_only=True)
class TurnPlan:
    """One turn: the user's message, the assistant's cycles, its closing reply."""

    message: str
    cycles: tuple[Cycle, ...] = ()
    reply: str | None = None


@attrs.frozen(kw_only=True)
class Scenario:
    """A scenario file, read and checked."""

    path: Path
    title: str | None
    system: tuple[str, ...]
    seed: Path | None
    backend: Mapping[str, object] | None
    tools: Mapping[str, ScenarioTool]
    config: ToolsConfig
    turns: tuple[TurnPlan, ...]
    #: The MCP servers its tools run on, by name (``cwd`` left for the run to set).
    mcp_servers: Mapping[str, McpServer] = attrs.field(factory=dict)

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools told to the model, those turned on (the backend adds ``answer_inquiry``)."""
        return tuple(
            tool.definition()
            for name, tool in self.tools.items()
            if tool.builtin != ANSWER_INQUIRY and self.config.enabled(name)
        )

    @property
    def hidden_tools(self) -> frozenset[str]:
        """The tools whose calls the progress does not show (only their questions)."""
        return frozenset(name for name, tool in self.tools.items() if tool.hidden)


def load_scenario(path: Path | str) -> Scenario:
    """Read and check the scenario file ``path``.

    An error shows the file's name with U+FFFD for each byte that is not
    UTF-8, as every path is shown; :attr:`Scenario.path` keeps the name as it is.
    """
    path = Path(path)
    try:
        return parse_scenario(load_toml(path), origin=str(path), directory=path.resolve().parent)
    except ConfigError as error:
        raise shown_error(error) from None


def parse_scenario(data: Mapping[str, Any], *, origin: str, directory: Path) -> Scenario:
    """Check a parsed scenario; relative paths are taken from ``directory``."""
    check_keys(data, origin, "", allowed=_TOP_KEYS, required=("turns",))
    config = parse_tools_config(
        {name: data[name] for name in ("defaults", "tools") if name in data},
        origin=origin,
        tool_keys=_TOOL_KEYS,
    )
    servers = _mcp_servers(data.get("mcp_servers", {}), origin, directory)
    tools = {
        name: _tool(name, value, origin, directory, servers)
        for name, value in table(data.get("tools", {}), origin, "tools").items()
    }
    if ASK_USER not in tools:  # on by default (RFD 083)
        tools[ASK_USER] = ScenarioTool(
            name=ASK_USER, description=ASK_USER_DESCRIPTION, builtin=ASK_USER
        )
    config = with_builtin_defaults(
        config, {name: tool.builtin for name, tool in tools.items() if tool.builtin is not None}
    )
    backend = None
    if "backend" in data:
        backend = _backend(data["backend"], origin)
    seed = None
    if "workspace" in data:
        workspace = table(data["workspace"], origin, "workspace")
        check_keys(workspace, origin, "workspace", allowed=("seed",), required=("seed",))
        seed = _directory(workspace["seed"], origin, "workspace.seed", directory)
    turns = tuple(
        _turn(value, origin, f"turns[{index}]", tools)
        for index, value in enumerate(tables(data["turns"], origin, "turns"))
    )
    if not turns:
        raise ConfigError(origin, "turns", "a scenario needs at least one turn")
    return Scenario(
        path=Path(origin),
        title=optional_string(data, "title", origin, ""),
        system=_system(data.get("system", ()), origin),
        seed=seed,
        backend=backend,
        tools=tools,
        config=config,
        turns=turns,
        mcp_servers=servers,
    )


def _backend(value: object, origin: str) -> dict[str, object]:
    """The ``[backend]`` table, checked even when ``--backend`` or ``[[model]]`` will replace it.

    A typo in a table that goes unused today is found now, not on the run
    that first uses it.
    """
    backend = dict(table(value, origin, "backend"))
    try:
        check_backend_config(backend)
    except ProviderConfigError as error:
        key = join_key("backend", error.key) if error.key else "backend"
        raise ConfigError(origin, key, error.problem) from None
    return backend


def _system(value: object, origin: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple):
        raise ConfigError(
            origin, "system", f"expected a string or strings, got {json_type(value, toml=True)}"
        )
    return tuple(string(part, origin, f"system[{index}]") for index, part in enumerate(value))


def _directory(value: object, origin: str, key: str, directory: Path) -> Path:
    path = directory / string(value, origin, key, empty=False)
    try:
        found = path.is_dir()
    except OSError as error:  # a name too long, a loop of links: any reason the OS gives
        problem = f"{shown_path(path)} cannot be read: {os_reason(error)}"
        raise ConfigError(origin, key, problem) from None
    if not found:
        raise ConfigError(origin, key, f"{shown_path(path)} is not a directory")
    return path


# ---------------------------------------------------------------- tools


def _tool(
    name: str, value: object, origin: str, directory: Path, servers: Mapping[str, McpServer]
) -> ScenarioTool:
    key = name_key(origin, "tools", name, what="a tool name")
    data = table(value, origin, key)
    description = optional_string(data, "description", origin, key) or ""
    kinds = [kind for kind in ("command", "builtin", "mcp") if kind in data]
    if len(kinds) > 1:
        given = " and ".join(f"`{kind}`" for kind in kinds)
        both = "both" if len(kinds) == 2 else "all of"  # noqa: PLR2004 - a pair, or all three
        raise ConfigError(
            origin,
            key,
            f"a tool runs one of a `command`, a `builtin` and an `mcp` server's tool, "
            f"not {both} {given}: keep one",
        )
    if "mcp_tool" in data and "mcp" not in data:
        raise ConfigError(
            origin, f"{key}.mcp_tool", "only an MCP tool (with `mcp`) takes this key"
        )
    if "builtin" in data:
        return _builtin(name, data, origin, key, description)
    if name == ASK_USER and not kinds:
        # The built-in's own table: its configuration, nothing to run instead.
        return _builtin(name, {**data, "builtin": ASK_USER}, origin, key, description)
    if "mcp" in data:
        return _mcp_tool(name, data, origin, key, description=description, servers=servers)
    if "command" not in data:
        raise ConfigError(
            origin,
            key,
            "a tool needs a `command` (a local tool), a `builtin` "
            f"(one of: {', '.join(BUILTIN_TOOLS)}) or `mcp` (an MCP server's name)",
        )
    if name == ANSWER_INQUIRY:
        raise ConfigError(
            origin,
            key,
            f"{ANSWER_INQUIRY!r} is the built-in inquiry tool's name: use "
            f'builtin = "{ANSWER_INQUIRY}"',
        )
    try:
        local = LocalTool(
            name=name,
            command=_command(data["command"], origin, f"{key}.command", directory),
            parameters=_parameters(data["parameters"], origin, f"{key}.parameters")
            if "parameters" in data
            else None,
            options=json_table(data["options"], origin, f"{key}.options")
            if "options" in data
            else {},
            timeout=_seconds(data.get("timeout", _DEFAULT_TIMEOUT), origin, f"{key}.timeout"),
            max_output=_bytes(
                data.get("max_output", _DEFAULT_MAX_OUTPUT), origin, f"{key}.max_output"
            ),
        )
    except ValueError as error:  # pragma: no cover - every field was checked above
        raise ConfigError(origin, key, str(error)) from None
    return ScenarioTool(name=name, description=description, local=local)


def _builtin(
    name: str, data: Mapping[str, Any], origin: str, key: str, description: str
) -> ScenarioTool:
    builtin = choice(
        data["builtin"], origin, f"{key}.builtin", tuple(BUILTIN_TOOLS), what="built-in tool"
    )
    for local_key in _LOCAL_ONLY:
        if local_key in data:
            raise ConfigError(
                origin, f"{key}.{local_key}", "only a local tool (a `command`) takes this key"
            )
    if builtin == ANSWER_INQUIRY and name != ANSWER_INQUIRY:
        raise ConfigError(
            origin,
            f"{key}.builtin",
            f"the built-in inquiry tool is always called {ANSWER_INQUIRY!r}: name the table "
            f"[tools.{ANSWER_INQUIRY}]",
        )
    return ScenarioTool(
        name=name, description=description or BUILTIN_TOOLS[builtin], builtin=builtin
    )


def _mcp_tool(
    name: str,
    data: Mapping[str, Any],
    origin: str,
    key: str,
    *,
    description: str,
    servers: Mapping[str, McpServer],
) -> ScenarioTool:
    server = string(data["mcp"], origin, f"{key}.mcp", empty=False)
    if server not in servers:
        known = ", ".join(servers) or "none: define one as [mcp_servers.NAME]"
        raise ConfigError(
            origin,
            f"{key}.mcp",
            f"no MCP server {server!r} in this scenario (its servers: {known})",
        )
    for local_key in _LOCAL_ONLY:
        if local_key in data:
            raise ConfigError(
                origin, f"{key}.{local_key}", "only a local tool (a `command`) takes this key"
            )
    if name == ANSWER_INQUIRY:
        raise ConfigError(
            origin, key, f"{ANSWER_INQUIRY!r} is the built-in inquiry tool's name: choose another"
        )
    tool = string(data.get("mcp_tool", name), origin, f"{key}.mcp_tool", empty=False)
    return ScenarioTool(
        name=name,
        description=description or f"The tool {tool!r} of the MCP server {server!r}.",
        mcp_server=server,
        mcp_tool=tool,
    )


def _mcp_servers(value: object, origin: str, directory: Path) -> dict[str, McpServer]:
    servers = {
        name: _mcp_server(name, config, origin, directory)
        for name, config in table(value, origin, "mcp_servers").items()
    }
    if servers and importlib.util.find_spec("mcp") is None:
        raise ConfigError(
            origin,
            "mcp_servers",
            f"MCP servers need the MCP SDK, which is not installed: pip install '{MCP_EXTRA}'",
        )
    return servers


def _mcp_server(name: str, value: object, origin: str, directory: Path) -> McpServer:
    key = name_key(origin, "mcp_servers", name, what="an MCP server's name")
    data = table(value, origin, key)
    check_keys(data, origin, key, allowed=_MCP_SERVER_KEYS)
    _check_reach(data, origin, key)
    command: tuple[str, ...] = ()
    if "command" in data:
        program = _os_text(data["command"], origin, f"{key}.command")
        if program != PYTHON:
            program = _program(program, origin, f"{key}.command", directory)
        arguments = _strings(data.get("args", []), origin, f"{key}.args")
        for index, argument in enumerate(arguments):
            _os_text(argument, origin, f"{key}.args[{index}]")
        command = (
            sys.executable if program == PYTHON else program,
            *(_argument(argument, directory) for argument in arguments),
        )
    stderr = None
    if "stderr" in data:
        stderr = directory / _os_text(data["stderr"], origin, f"{key}.stderr")
        _directory(str(stderr.parent), origin, f"{key}.stderr", directory)
    try:
        return McpServer(
            name=name,
            command=command,
            url=string(data["url"], origin, f"{key}.url", empty=False) if "url" in data else None,
            env=_environment(data.get("env", {}), origin, f"{key}.env"),
            timeout=_seconds(data.get("timeout", _DEFAULT_TIMEOUT), origin, f"{key}.timeout"),
            start_timeout=_seconds(
                data.get("start_timeout", _DEFAULT_TIMEOUT), origin, f"{key}.start_timeout"
            ),
            stderr=stderr,
            max_reply=_bytes(data.get("max_reply", DEFAULT_MAX_REPLY), origin, f"{key}.max_reply"),
            secret_fields=_field_names(
                data.get("secret_fields", []), origin, f"{key}.secret_fields"
            ),
            headers=_headers(data.get("headers", {}), origin, f"{key}.headers"),
        )
    except ValueError as error:  # the url: not http or https
        raise ConfigError(origin, f"{key}.url", str(error)) from None


def _check_reach(data: Mapping[str, object], origin: str, key: str) -> None:
    """A server's ``command`` or ``url``, and only the keys that go with the one it has."""
    if ("command" in data) == ("url" in data):
        raise ConfigError(
            origin,
            key,
            "an MCP server needs a `command` (started over stdio) or a `url`, not both",
        )
    only = (
        ("url", ("args", "env", "stderr"), "only a server started by `command` takes this key"),
        ("command", ("headers",), "only a server reached by `url` takes this key"),
    )
    for given, keys, problem in only:
        for wrong in keys:
            if given in data and wrong in data:
                raise ConfigError(origin, f"{key}.{wrong}", problem)


def _os_text(value: object, origin: str, key: str) -> str:
    """``value``, a string the OS can pass to a program (not empty, no NUL byte)."""
    text = string(value, origin, key, empty=False)
    if (problem := os_text_problem(text)) is not None:
        raise ConfigError(origin, key, problem)
    return text


def _environment(value: object, origin: str, key: str) -> dict[str, str]:
    """The table ``value`` as variables the OS takes: each name and value checked, by its key."""
    variables = {}
    for name, text in table(value, origin, key).items():
        where = join_key(key, name)
        if (problem := variable_name_problem(name)) is not None:
            raise ConfigError(origin, where, problem)
        variables[name] = string(text, origin, where)
        if (problem := os_text_problem(variables[name])) is not None:
            raise ConfigError(origin, where, f"its value {problem}")
    return variables


def _headers(value: object, origin: str, key: str) -> dict[str, str]:
    """An MCP server's HTTP headers: each a string, its ``${NAME}`` variables set now.

    Checked as :class:`McpServer` checks them, each error naming the header's
    key (never a value); a variable a header names that is not set is
    refused before anything runs.
    """
    headers = {}
    for name, text in table(value, origin, key).items():
        where = join_key(key, name)
        headers[name] = string(text, origin, where)
        if (problem := header_problem(name, headers[name], os.environ)) is not None:
            raise ConfigError(origin, where, problem)
    return headers


def _field_names(value: object, origin: str, key: str) -> list[str]:
    """The form fields an MCP server's ``secret_fields`` names: strings, none empty."""
    names = _strings(value, origin, key)
    for index, name in enumerate(names):
        if not name:
            raise ConfigError(origin, f"{key}[{index}]", "a field's name must not be empty")
    return names


def _strings(value: object, origin: str, key: str) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(
            origin, key, f"expected an array of strings, got {json_type(value, toml=True)}"
        )
    return [string(part, origin, f"{key}[{index}]") for index, part in enumerate(value)]


def _command(value: object, origin: str, key: str, directory: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as error:
            raise ConfigError(origin, key, f"cannot be split into arguments: {error}") from None
    elif isinstance(value, list):
        argv = [string(part, origin, f"{key}[{index}]") for index, part in enumerate(value)]
    else:
        raise ConfigError(
            origin,
            key,
            f"expected an array of strings (or a string), got {json_type(value, toml=True)}",
        )
    if not argv or not argv[0]:
        raise ConfigError(origin, key, "names no program to run")
    program = _program(argv[0], origin, key, directory)
    return (program, *(_argument(argument, directory) for argument in argv[1:]))


def _program(program: str, origin: str, key: str, directory: Path) -> str:
    if "/" not in program:
        if shutil.which(program) is None:
            raise ConfigError(origin, key, f"program {program!r} is not on PATH")
        return program
    path = directory / program
    try:
        found = path.is_file() and os.access(path, os.X_OK)
    except OSError as error:  # a name too long, a loop of links: any reason the OS gives
        looked_up = f"program {program!r} cannot be looked up ({shown_path(path)})"
        problem = f"{looked_up}: {os_reason(error)}"
        raise ConfigError(origin, key, problem) from None
    if not found:
        problem = f"program {program!r} is not an executable file ({shown_path(path)})"
        raise ConfigError(origin, key, problem)
    return str(path.resolve())


def _argument(argument: str, directory: Path) -> str:
    # Only a path with a directory part: a bare name ("notes.txt", ".") means
    # the workspace the tool runs in, whatever lies beside the scenario.
    if "/" not in argument or Path(argument).is_absolute() or "{{" in argument:
        return argument
    path = directory / argument
    try:
        return str(path.resolve()) if path.exists() else argument
    except OSError:  # a name the OS refuses to look up names no file beside the scenario
        return argument


def _parameters(data: object, origin: str, key: str) -> dict[str, JsonValue]:
    """A tool's JSON schema, with the parts arguments are checked against well formed."""
    schema = json_table(data, origin, key)
    if (found := schema_problem(schema)) is not None:
        where, problem = found
        raise ConfigError(origin, f"{key}.{where}", problem)
    return schema


def _seconds(value: object, origin: str, key: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= _LONGEST_TIMEOUT
    ):
        raise ConfigError(
            origin,
            key,
            f"expected a number of seconds greater than 0 and at most {_LONGEST_TIMEOUT:.0f}",
        )
    return float(value)


def _bytes(value: object, origin: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(origin, key, "expected a whole number of bytes, 1 or more")
    return value


# ---------------------------------------------------------------- turns


def _turn(
    data: Mapping[str, Any], origin: str, key: str, tools: Mapping[str, ScenarioTool]
) -> TurnPlan:
    check_keys(data, origin, key, allowed=("message", "cycles", "reply"), required=("message",))
    cycles = tuple(
        _cycle(value, origin, f"{key}.cycles[{index}]", tools)
        for index, value in enumerate(tables(data.get("cycles", []), origin, f"{key}.cycles"))
    )
    return TurnPlan(
        message=string(data["message"], origin, f"{key}.message"),
        cycles=cycles,
        reply=optional_string(data, "reply", origin, key),
    )


def _cycle(
    data: Mapping[str, Any], origin: str, key: str, tools: Mapping[str, ScenarioTool]
) -> Cycle:
    check_keys(data, origin, key, allowed=("message", "calls"), required=("calls",))
    calls = tuple(
        _call(value, origin, f"{key}.calls[{index}]", tools)
        for index, value in enumerate(tables(data["calls"], origin, f"{key}.calls"))
    )
    if not calls:
        raise ConfigError(origin, f"{key}.calls", "a cycle makes at least one tool call")
    ids = [call.id for call in calls if call.id is not None]
    for index, call in enumerate(calls):
        if call.id is not None and ids.count(call.id) > 1:
            raise ConfigError(
                origin, f"{key}.calls[{index}].id", f"{call.id!r} is used twice in this cycle"
            )
    return Cycle(calls=calls, message=optional_string(data, "message", origin, key))


def _call(
    data: Mapping[str, Any], origin: str, key: str, tools: Mapping[str, ScenarioTool]
) -> PlannedCall:
    check_keys(data, origin, key, allowed=("tool", "id", "arguments"), required=("tool",))
    name = string(data["tool"], origin, f"{key}.tool", empty=False)
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(tools) or "none"
        raise ConfigError(
            origin, f"{key}.tool", f"no tool {name!r} in this scenario (its tools: {known})"
        )
    arguments = json_table(data.get("arguments", {}), origin, f"{key}.arguments")
    problem = check_arguments(tool.parameters, arguments)
    if problem is not None:
        raise ConfigError(origin, f"{key}.arguments", f"{problem} (for tool {name!r})")
    call_id = string(data["id"], origin, f"{key}.id", empty=False) if "id" in data else None
    return PlannedCall(tool=name, arguments=arguments, id=call_id)
