"""The inquiry coordinator: the tool-question engine for LLM agents.

What an embedder needs is here; each layer's sub-package has the rest.
The tree is the architecture, each layer importing only those before it
(an import contract, checked in CI, holds it)::

    machines            records, turn state and the machines (pure; its own package)
    coordinator.stream    what a conversation holds: entries, turns, pairing, sanitize
    coordinator.wire      a stream as events.json holds it: one codec
    coordinator.store     a conversation directory on disk
    coordinator.driver    ToolCoordinator; the executor, prompter and backend protocols
    coordinator.adapters  local tools, the terminal, model providers
    coordinator.cli       the inquiry command

The library logs under the ``coordinator`` logger and adds only a
``NullHandler`` to it: where its warnings go is the application's choice.
:mod:`coordinator.stream`, the layer every layer that logs is built on, adds
it, so that importing this package alone imports no ``logging``.

The names below are imported when first used, so that a command that only
reads conversations starts without the driver, asyncio or the providers. The
``TYPE_CHECKING`` block is the one list of them: where each name lives is
read from it. Importing this package itself imports nothing: ``inquiry
--version`` and ``--help``, which run this file, import no layer and no
dependency (``docs/performance.md``, *Start-up*).

``__version__`` is the distribution's version: ``pyproject.toml`` reads it
from here, so ``inquiry --version`` prints it without
:mod:`importlib.metadata`, which costs more than the rest of that command.
"""

from __future__ import annotations

# `typing` costs a quarter of `python -c pass`: `inquiry --version` does
# without it. mypy and ruff read a `TYPE_CHECKING` of this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from coordinator._errors import (
        ConfigError,
        ConversationChangedError,
        CoordinatorError,
        StreamFormatError,
    )
    from coordinator.adapters import (
        LocalTool,
        LocalToolExecutor,
        TerminalPrompter,
        ToolCallShapeError,
        anthropic_tool_calls,
        anthropic_tool_results,
        backend_from_config,
        builtin_executors,
        openai_tool_calls,
        openai_tool_results,
        resolve_promptability,
        with_builtin_defaults,
    )
    from coordinator.driver import (
        Ask,
        BuiltinExecutor,
        BuiltinOutcome,
        BuiltinTool,
        Executor,
        Failure,
        InquiryBackend,
        InquiryBackendError,
        Prompter,
        ScriptedInquiryBackend,
        ScriptedPrompter,
        Success,
        ToolCoordinator,
        ToolsConfig,
        WaitingAnswerError,
        answer_waiting,
        load_tools_config,
        parse_tools_config,
        waiting_prompts,
    )
    from coordinator.store import Conversation, load_conversation, save_conversation
    from coordinator.stream import (
        ConversationStream,
        EventEntry,
        IncompleteTurn,
        complete_turns,
        export_markdown,
        find_incomplete_turn,
        pair_events,
        sanitize,
    )

__version__ = "0.1.0"

__all__ = [
    "Ask",
    "BuiltinExecutor",
    "BuiltinOutcome",
    "BuiltinTool",
    "ConfigError",
    "Conversation",
    "ConversationChangedError",
    "ConversationStream",
    "CoordinatorError",
    "EventEntry",
    "Executor",
    "Failure",
    "IncompleteTurn",
    "InquiryBackend",
    "InquiryBackendError",
    "LocalTool",
    "LocalToolExecutor",
    "Prompter",
    "ScriptedInquiryBackend",
    "ScriptedPrompter",
    "StreamFormatError",
    "Success",
    "TerminalPrompter",
    "ToolCallShapeError",
    "ToolCoordinator",
    "ToolsConfig",
    "WaitingAnswerError",
    "answer_waiting",
    "anthropic_tool_calls",
    "anthropic_tool_results",
    "backend_from_config",
    "builtin_executors",
    "complete_turns",
    "export_markdown",
    "find_incomplete_turn",
    "load_conversation",
    "load_tools_config",
    "openai_tool_calls",
    "openai_tool_results",
    "pair_events",
    "parse_tools_config",
    "resolve_promptability",
    "sanitize",
    "save_conversation",
    "waiting_prompts",
    "with_builtin_defaults",
]

_homes: dict[str, str] | None = None


def _name_homes() -> dict[str, str]:
    """Each public name, and the module it is imported from (read from this file's source)."""
    global _homes  # noqa: PLW0603 - read once, on the first name asked for
    if _homes is None:
        import ast  # noqa: PLC0415 - only when a public name is first asked for
        from pathlib import Path  # noqa: PLC0415 - likewise

        source = Path(__file__).read_text(encoding="utf-8")
        found: dict[str, str] = {}
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                for statement in node.body:
                    if isinstance(statement, ast.ImportFrom) and statement.module:
                        found.update(
                            dict.fromkeys((a.name for a in statement.names), statement.module)
                        )
        _homes = found
    return _homes


def __getattr__(name: str) -> object:
    """Import a public name from its module on first use (then it is a plain attribute)."""
    module = _name_homes().get(name) if name in __all__ else None
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # noqa: PLC0415 - only when a public name is first asked for

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's attributes, the public names not yet imported included."""
    return sorted({*globals(), *__all__})
