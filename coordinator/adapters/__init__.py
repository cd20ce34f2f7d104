"""The adapters: the driver's protocols, met by the world outside.

The sixth layer, on the driver. Each adapter implements one of the
driver's protocols over something real, and depends on nothing above it:

- executors: :class:`LocalToolExecutor` runs a program speaking JP's
  local-tool protocol; :func:`builtin_executors` gives ``ask_user`` (RFD
  083) and ``answer_inquiry``, and :func:`with_builtin_defaults` merges
  their configuration defaults under an embedder's (``ask_user`` runs
  unattended, is refused when nobody can be asked, and is on unless
  ``enable = false``);
- the person: :class:`TerminalPrompter` (the ``terminal`` extra), on the
  controlling terminal; :func:`resolve_promptability` says, once, whether
  a person can be asked at all (RFD 104);
- the model: :func:`backend_from_config` builds a
  :class:`~coordinator.adapters.providers.ModelInquiryBackend` over a
  provider's official SDK (the ``anthropic`` and ``openai`` extras;
  :mod:`coordinator.adapters.providers`); :func:`anthropic_tool_calls`,
  :func:`openai_tool_calls` and their ``*_tool_results`` translate an
  embedder's agent loop to and from the providers' message shapes;
- MCP servers' tools: :mod:`coordinator.adapters.mcp` (the ``mcp`` extra)
  runs them, each question a server asks an inquiry of the calling tool;
- the web inbox: :mod:`coordinator.adapters.live` puts a run's questions
  on it as they are asked (a prompter and an observer), and
  :mod:`coordinator.adapters.inbox` (the ``web`` extra) serves it.

What the CLI checks a scenario with before it runs anything:
:data:`ASK_USER_PARAMETERS` and :data:`ASK_USER_DESCRIPTION` (``ask_user``
as the model is told of it; :data:`HIDDEN_BUILTINS`, the built-ins whose
calls are not shown as tool calls), :func:`check_arguments` and :func:`schema_problem` (a local
tool's arguments against its schema, and a schema this cannot check with);
:func:`printable` shows text from outside as the terminal prompter does.

Rules:

1. Provenance is decided in code here, at the executor boundary: a local
   or MCP tool's questions are its own, ``ask_user``'s the assistant's.
2. An optional SDK is imported when it is used, never at import.
"""

from coordinator.adapters._builtins import (
    ASK_USER,
    ASK_USER_ANSWER_ID,
    ASK_USER_DESCRIPTION,
    ASK_USER_PARAMETERS,
    BUILTIN_DEFAULTS,
    HIDDEN_BUILTINS,
    AnswerInquiry,
    AskUser,
    builtin_executors,
    with_builtin_defaults,
)
from coordinator.adapters._local_tools import (
    LocalTool,
    LocalToolExecutor,
    check_arguments,
    schema_problem,
)
from coordinator.adapters._promptability import (
    Promptability,
    PromptabilityError,
    resolve_promptability,
)
from coordinator.adapters._terminal import TerminalPrompter, TerminalUnavailableError, printable
from coordinator.adapters.providers import (
    ModelInquiryBackend,
    ToolCallShapeError,
    anthropic_tool_calls,
    anthropic_tool_results,
    backend_from_config,
    openai_tool_calls,
    openai_tool_results,
    turn_tools,
)

__all__ = [
    "ASK_USER",
    "ASK_USER_ANSWER_ID",
    "ASK_USER_DESCRIPTION",
    "ASK_USER_PARAMETERS",
    "BUILTIN_DEFAULTS",
    "HIDDEN_BUILTINS",
    "AnswerInquiry",
    "AskUser",
    "LocalTool",
    "LocalToolExecutor",
    "ModelInquiryBackend",
    "Promptability",
    "PromptabilityError",
    "TerminalPrompter",
    "TerminalUnavailableError",
    "ToolCallShapeError",
    "anthropic_tool_calls",
    "anthropic_tool_results",
    "backend_from_config",
    "builtin_executors",
    "check_arguments",
    "openai_tool_calls",
    "openai_tool_results",
    "printable",
    "resolve_promptability",
    "schema_problem",
    "turn_tools",
    "with_builtin_defaults",
]
