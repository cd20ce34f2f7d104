"""The driver: the machines run against executors, a person and a model.

The fifth layer, on the store. :class:`ToolCoordinator` runs the tool calls
of an assistant response: it feeds what happens (a tool's result, a
person's answer, the model's answer, a cancellation) into the machines, and
carries out the effects their steps return. It talks to the world only
through three protocols, each with a scripted stand-in for tests:

- :class:`Executor` runs a tool (:class:`BuiltinExecutor` wraps a
  :class:`BuiltinTool` written in Python); a tool that stops to ask returns
  :class:`NeedsInput`, whose source is decided here, at the boundary.
- :class:`Prompter` asks the person (:class:`ScriptedPrompter`).
- :class:`InquiryBackend` asks the model (:class:`ScriptedInquiryBackend`).

Configuration (:class:`ToolsConfig`) says how each tool may run, whether its
result needs a person's confirmation, where each question goes, and what
happens to a prompt nobody can answer (the detached policy of RFD 049,
``deny`` unless configured); it can never change a recorded source. Each
response records the route that decided it in its entry's ``metadata``
(``coordinator._recorded_routes`` reads it back). Observers get
each machine step as typed :class:`StepFacts` (the rows that fired, the
states after, how a call ended or a question was resolved). What a tool
echoes of a secret is masked (``_masking``). See ``docs/driver.md``.

What the layers above share of it: :func:`latest_response_start` (where
the assistant's latest response begins in a provider view: its calls
without a result are the ones running), and the checked reading of TOML (:func:`load_toml`,
:func:`check_keys`, :func:`table`, :func:`tables`, :func:`string`,
:func:`optional_string`, :func:`boolean`, :func:`choice`,
:func:`json_table`, :func:`json_value`, :func:`join_key`, :func:`name_key`,
:func:`shown_error`) that the tools configuration is read with, and the
CLI's scenario and answers files too: each error names the file and the key.

Rules:

1. The driver constructs no record: every record comes from a machine step.
2. Nothing starts outside the driver (a tool, a prompt, a request to the
   model) before the records so far are saved.
3. Whatever happens, every open question and tool call is closed before
   :meth:`ToolCoordinator.run` returns or raises.
4. A secret answer exists only in memory on its way to the tool.
"""

from coordinator.driver._backend import (
    BackendErrorKind,
    InquiryBackend,
    InquiryBackendError,
    InquiryTask,
    latest_response_start,
)
from coordinator.driver._config import (
    DetachedConfig,
    QuestionConfig,
    ToolConfig,
    ToolsConfig,
    load_tools_config,
    parse_tools_config,
)
from coordinator.driver._executors import (
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
from coordinator.driver._observing import (
    Delivery,
    FiredRow,
    Permission,
    QuestionFacts,
    RecordedEntry,
    SecretDefaultNotice,
    StepFacts,
)
from coordinator.driver._parking import ParkedPrompt
from coordinator.driver._prompting import (
    DeliveryAnswer,
    DeliveryPrompter,
    Deny,
    PermissionAnswer,
    Permit,
    PromptCancelled,
    Prompter,
    PromptUnanswered,
    QuestionAnswer,
    ScriptedPrompter,
    ScriptExhaustedError,
)
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._toml_fields import (
    boolean,
    check_keys,
    choice,
    duration,
    join_key,
    json_table,
    json_value,
    load_toml,
    name_key,
    optional_string,
    shown_error,
    string,
    table,
    tables,
)
from coordinator.driver._tool_coordinator import DiscardedTurn, ToolCoordinator
from coordinator.driver._waiting import (
    NotWaitingError,
    SecretNotTakenError,
    UnfitAnswerError,
    WaitingAnswerError,
    WaitingPrompt,
    WaitingPrompts,
    answer_parked,
    answer_waiting,
    waiting_prompts,
)

# What a row means is a column of the machines' tables; the driver's observers read them here.
from machines import (
    CallOutcome,
    DeliveryRuling,
    DetachedMode,
    DetachedPolicy,
    OnTimeout,
    PermissionBy,
    PromptKind,
    Resolution,
    ResultMode,
)

__all__ = [
    "Ask",
    "BackendErrorKind",
    "BuiltinExecutor",
    "BuiltinOutcome",
    "BuiltinTool",
    "CallOutcome",
    "Completed",
    "Delivery",
    "DeliveryAnswer",
    "DeliveryPrompter",
    "DeliveryRuling",
    "Deny",
    "DetachedConfig",
    "DetachedMode",
    "DetachedPolicy",
    "DiscardedTurn",
    "Executor",
    "ExecutorResult",
    "Failure",
    "FiredRow",
    "InquiryBackend",
    "InquiryBackendError",
    "InquiryTask",
    "NeedsInput",
    "NotWaitingError",
    "OnTimeout",
    "ParkedPrompt",
    "Permission",
    "PermissionAnswer",
    "PermissionBy",
    "Permit",
    "PromptCancelled",
    "PromptKind",
    "PromptUnanswered",
    "Prompter",
    "QuestionAnswer",
    "QuestionConfig",
    "QuestionFacts",
    "RecordedEntry",
    "Resolution",
    "ResultMode",
    "ScriptExhaustedError",
    "ScriptedInquiryBackend",
    "ScriptedPrompter",
    "SecretDefaultNotice",
    "SecretNotTakenError",
    "StepFacts",
    "Success",
    "ToolConfig",
    "ToolCoordinator",
    "ToolsConfig",
    "UnfitAnswerError",
    "WaitingAnswerError",
    "WaitingPrompt",
    "WaitingPrompts",
    "answer_parked",
    "answer_waiting",
    "boolean",
    "check_keys",
    "choice",
    "duration",
    "join_key",
    "json_table",
    "json_value",
    "latest_response_start",
    "load_toml",
    "load_tools_config",
    "name_key",
    "optional_string",
    "parse_tools_config",
    "reveal_answers",
    "shown_error",
    "string",
    "table",
    "tables",
    "waiting_prompts",
]
