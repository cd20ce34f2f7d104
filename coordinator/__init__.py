"""The shell of the inquiry coordinator: streams, storage and the ``inquiry`` CLI.

The public API is what this module exports; everything in underscored modules
is private.

The library logs under the ``coordinator`` logger and adds only a
``NullHandler`` to it: where its warnings go is the application's choice.
"""

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coordinator._answer_script import (
        AnswerScript,
        ModelAnswer,
        PermissionReply,
        PersonAnswer,
        load_answer_script,
        parse_answer_script,
    )
    from coordinator._backend import (
        BackendErrorKind,
        InquiryBackend,
        InquiryBackendError,
        InquiryTask,
    )
    from coordinator._builtins import AnswerInquiry, AskUser, builtin_executors
    from coordinator._config import (
        QuestionConfig,
        ToolConfig,
        ToolsConfig,
        load_tools_config,
        parse_tools_config,
    )
    from coordinator._entries import (
        Compaction,
        ConfigDelta,
        EventEntry,
        GlobalEntry,
        StreamEntry,
        UnknownEntry,
    )
    from coordinator._errors import (
        ConfigError,
        ConversationChangedError,
        CoordinatorError,
        StreamFormatError,
    )
    from coordinator._event_ids import new_event_id
    from coordinator._executors import (
        Ask,
        BuiltinExecutor,
        BuiltinOutcome,
        BuiltinTool,
        Completed,
        Executor,
        ExecutorResult,
        Failure,
        NeedsInput,
        Success,
        reveal_answers,
    )
    from coordinator._export import describe_inquiry_response, export_markdown
    from coordinator._local_tools import LocalTool, LocalToolExecutor, check_arguments
    from coordinator._pairing import (
        Located,
        Pair,
        PairCounts,
        Pairing,
        PairKind,
        StreamPairing,
        TurnPairing,
        pair_events,
    )
    from coordinator._prompting import (
        Deny,
        PermissionAnswer,
        Permit,
        PromptCancelled,
        Prompter,
        QuestionAnswer,
        ScriptedPrompter,
        ScriptExhaustedError,
    )
    from coordinator._providers import (
        ANSWER_INQUIRY_TOOL,
        AnthropicAdapter,
        ModelInquiryBackend,
        OpenAIAdapter,
        ProviderConfigError,
        ProviderError,
        ToolDefinition,
        backend_from_config,
        turn_tools,
    )
    from coordinator._run import RunError, RunOptions, RunResult, run_scenario, tool_call_outcome
    from coordinator._sanitize import (
        INTERRUPTED_TOOL_CALL,
        Insertion,
        InsertionReason,
        Removal,
        RemovalReason,
        SanitizePlan,
        SanitizeReport,
        plan_sanitize,
        sanitize,
    )
    from coordinator._scenario import (
        BUILTIN_TOOLS,
        Cycle,
        PlannedCall,
        Scenario,
        ScenarioTool,
        TurnPlan,
        load_scenario,
        parse_scenario,
    )
    from coordinator._scripted_backend import ScriptedInquiryBackend
    from coordinator._store import (
        Conversation,
        Layout,
        SaveResult,
        load_conversation,
        save_conversation,
    )
    from coordinator._stream import ConversationStream, ProviderView, Turn
    from coordinator._stream_codec import IdRepairs
    from coordinator._terminal import TERMINAL_EXTRA, TerminalPrompter, TerminalUnavailableError
    from coordinator._timestamps import Timestamp
    from coordinator._tool_coordinator import ToolCoordinator

# Each public name is imported from its module when first used, so that
# `import coordinator` (and the `inquiry` command, which imports it first) does
# not pay for the runner, the providers, the terminal and asyncio unless it
# uses them. The imports above are what type checkers read.
_HOMES: dict[str, tuple[str, ...]] = {
    "coordinator._answer_script": (
        "AnswerScript",
        "ModelAnswer",
        "PermissionReply",
        "PersonAnswer",
        "load_answer_script",
        "parse_answer_script",
    ),
    "coordinator._backend": (
        "BackendErrorKind",
        "InquiryBackend",
        "InquiryBackendError",
        "InquiryTask",
    ),
    "coordinator._builtins": (
        "AnswerInquiry",
        "AskUser",
        "builtin_executors",
    ),
    "coordinator._config": (
        "QuestionConfig",
        "ToolConfig",
        "ToolsConfig",
        "load_tools_config",
        "parse_tools_config",
    ),
    "coordinator._entries": (
        "Compaction",
        "ConfigDelta",
        "EventEntry",
        "GlobalEntry",
        "StreamEntry",
        "UnknownEntry",
    ),
    "coordinator._errors": (
        "ConfigError",
        "ConversationChangedError",
        "CoordinatorError",
        "StreamFormatError",
    ),
    "coordinator._event_ids": ("new_event_id",),
    "coordinator._executors": (
        "Ask",
        "BuiltinExecutor",
        "BuiltinOutcome",
        "BuiltinTool",
        "Completed",
        "Executor",
        "ExecutorResult",
        "Failure",
        "NeedsInput",
        "Success",
        "reveal_answers",
    ),
    "coordinator._export": (
        "describe_inquiry_response",
        "export_markdown",
    ),
    "coordinator._local_tools": (
        "LocalTool",
        "LocalToolExecutor",
        "check_arguments",
    ),
    "coordinator._pairing": (
        "Located",
        "Pair",
        "PairCounts",
        "Pairing",
        "PairKind",
        "StreamPairing",
        "TurnPairing",
        "pair_events",
    ),
    "coordinator._prompting": (
        "Deny",
        "PermissionAnswer",
        "Permit",
        "PromptCancelled",
        "Prompter",
        "QuestionAnswer",
        "ScriptedPrompter",
        "ScriptExhaustedError",
    ),
    "coordinator._providers": (
        "ANSWER_INQUIRY_TOOL",
        "AnthropicAdapter",
        "ModelInquiryBackend",
        "OpenAIAdapter",
        "ProviderConfigError",
        "ProviderError",
        "ToolDefinition",
        "backend_from_config",
        "turn_tools",
    ),
    "coordinator._run": (
        "RunError",
        "RunOptions",
        "RunResult",
        "run_scenario",
        "tool_call_outcome",
    ),
    "coordinator._sanitize": (
        "INTERRUPTED_TOOL_CALL",
        "Insertion",
        "InsertionReason",
        "Removal",
        "RemovalReason",
        "SanitizePlan",
        "SanitizeReport",
        "plan_sanitize",
        "sanitize",
    ),
    "coordinator._scenario": (
        "BUILTIN_TOOLS",
        "Cycle",
        "PlannedCall",
        "Scenario",
        "ScenarioTool",
        "TurnPlan",
        "load_scenario",
        "parse_scenario",
    ),
    "coordinator._scripted_backend": ("ScriptedInquiryBackend",),
    "coordinator._store": (
        "Conversation",
        "Layout",
        "SaveResult",
        "load_conversation",
        "save_conversation",
    ),
    "coordinator._stream": (
        "ConversationStream",
        "ProviderView",
        "Turn",
    ),
    "coordinator._stream_codec": ("IdRepairs",),
    "coordinator._terminal": (
        "TERMINAL_EXTRA",
        "TerminalPrompter",
        "TerminalUnavailableError",
    ),
    "coordinator._timestamps": ("Timestamp",),
    "coordinator._tool_coordinator": ("ToolCoordinator",),
}
_LAZY: dict[str, str] = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ANSWER_INQUIRY_TOOL",
    "BUILTIN_TOOLS",
    "INTERRUPTED_TOOL_CALL",
    "TERMINAL_EXTRA",
    "AnswerInquiry",
    "AnswerScript",
    "AnthropicAdapter",
    "Ask",
    "AskUser",
    "BackendErrorKind",
    "BuiltinExecutor",
    "BuiltinOutcome",
    "BuiltinTool",
    "Compaction",
    "Completed",
    "ConfigDelta",
    "ConfigError",
    "Conversation",
    "ConversationChangedError",
    "ConversationStream",
    "CoordinatorError",
    "Cycle",
    "Deny",
    "EventEntry",
    "Executor",
    "ExecutorResult",
    "Failure",
    "GlobalEntry",
    "IdRepairs",
    "InquiryBackend",
    "InquiryBackendError",
    "InquiryTask",
    "Insertion",
    "InsertionReason",
    "Layout",
    "LocalTool",
    "LocalToolExecutor",
    "Located",
    "ModelAnswer",
    "ModelInquiryBackend",
    "NeedsInput",
    "OpenAIAdapter",
    "Pair",
    "PairCounts",
    "PairKind",
    "Pairing",
    "PermissionAnswer",
    "PermissionReply",
    "Permit",
    "PersonAnswer",
    "PlannedCall",
    "PromptCancelled",
    "Prompter",
    "ProviderConfigError",
    "ProviderError",
    "ProviderView",
    "QuestionAnswer",
    "QuestionConfig",
    "Removal",
    "RemovalReason",
    "RunError",
    "RunOptions",
    "RunResult",
    "SanitizePlan",
    "SanitizeReport",
    "SaveResult",
    "Scenario",
    "ScenarioTool",
    "ScriptExhaustedError",
    "ScriptedInquiryBackend",
    "ScriptedPrompter",
    "StreamEntry",
    "StreamFormatError",
    "StreamPairing",
    "Success",
    "TerminalPrompter",
    "TerminalUnavailableError",
    "Timestamp",
    "ToolConfig",
    "ToolCoordinator",
    "ToolDefinition",
    "ToolsConfig",
    "Turn",
    "TurnPairing",
    "TurnPlan",
    "UnknownEntry",
    "backend_from_config",
    "builtin_executors",
    "check_arguments",
    "describe_inquiry_response",
    "export_markdown",
    "load_answer_script",
    "load_conversation",
    "load_scenario",
    "load_tools_config",
    "new_event_id",
    "pair_events",
    "parse_answer_script",
    "parse_scenario",
    "parse_tools_config",
    "plan_sanitize",
    "reveal_answers",
    "run_scenario",
    "sanitize",
    "save_conversation",
    "tool_call_outcome",
    "turn_tools",
]

logging.getLogger("coordinator").addHandler(logging.NullHandler())


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (then it is a plain attribute)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's attributes, the public names not yet imported included."""
    return sorted({*globals(), *__all__})
