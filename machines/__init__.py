"""The pure layer of the inquiry coordinator: records, turn state and machines.

Nothing here does I/O, reads a clock or draws randomness: what varies is handed
in. ``coordinator`` imports this package; this package never imports it.

Two public submodules hold what the coordinator shares with the machines:
``machines.wording`` (what the model is told when a call does not simply run)
and ``machines.validators`` (the attrs validators that make bad records
impossible to construct).

The shell reads and checks JSON values with the one walk the records use
(``machines._json``): :func:`json_fault` (with :func:`leaf_rules`, the
:data:`JSON_LEAVES` JSON allows, and the :data:`WRITE_DEPTH` ``orjson``
writes) finds the first thing wrong in a value (:data:`TOO_DEEP`, when it
nests too deeply), :func:`is_json` says there is none, :func:`json_path`
spells where, and :func:`json_type` names a value's kind in every error.
"""

from typing import Any

from machines._diagrams import render_dot, render_markdown_table, render_mermaid
from machines._effects import (
    AskAssistant,
    CompleteTool,
    Effect,
    QueueDeliveryPrompt,
    QueuePermissionPrompt,
    QueueQuestion,
    RunTool,
    ShowDeliveryPrompt,
    ShowPermissionPrompt,
    ShowQuestion,
    ToolAnswer,
)
from machines._errors import IllegalTransitionError, InvalidAnswerError, MachineError, RecordError
from machines._events import (
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    Event,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
    is_provider_visible,
)
from machines._forms import (
    DECLINE,
    FieldKind,
    Form,
    FormField,
    FormSchemaError,
    TextFormat,
    typed_number,
)
from machines._inquiry_machine import (
    INQUIRY_MACHINE,
    INQUIRY_ROWS,
    Inquiry,
    InquiryFacts,
    InquiryState,
    StaticAnswer,
    Target,
)
from machines._inquiry_records import (
    Answered,
    AnyCancellationReason,
    CancellationReason,
    Cancelled,
    InquiryRequest,
    InquiryResponse,
    Redacted,
    UnknownCancellationReason,
    parse_cancellation_reason,
)
from machines._json import (
    JSON_LEAVES,
    TOO_DEEP,
    WRITE_DEPTH,
    JsonFault,
    JsonValue,
    LeafRule,
    is_json,
    json_fault,
    json_path,
    json_type,
    leaf_rules,
)
from machines._meanings import (
    CallOutcome,
    DeliveryRuling,
    DetachedMode,
    DetachedPolicy,
    OnTimeout,
    PermissionBy,
    PermissionRuling,
    PromptKind,
    Resolution,
)
from machines._questions import (
    AnswerKind,
    AnswerReusePolicy,
    AnswerType,
    InquiryQuestion,
    InquirySource,
    Question,
    SelectOption,
    SourceKind,
)
from machines._secret import SecretValue
from machines._table import Fired, Guard, Row, Step, TableMachine
from machines._tool_call_machine import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_QUESTIONS,
    TOOL_CALL_MACHINE,
    TOOL_CALL_ROWS,
    RecordedCall,
    RecordedQuestion,
    ResultMode,
    RunMode,
    ToolCall,
    ToolCallState,
)
from machines._turn_state import CachedAnswer, PermissionDecision, TurnState

#: Every machine, for diagrams, tables and tests.
MACHINES: tuple[TableMachine[Any, Any], ...] = (
    INQUIRY_MACHINE,
    TOOL_CALL_MACHINE,
)

__all__ = [
    "DECLINE",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_QUESTIONS",
    "INQUIRY_MACHINE",
    "INQUIRY_ROWS",
    "JSON_LEAVES",
    "MACHINES",
    "TOOL_CALL_MACHINE",
    "TOOL_CALL_ROWS",
    "TOO_DEEP",
    "WRITE_DEPTH",
    "AnswerKind",
    "AnswerReusePolicy",
    "AnswerType",
    "Answered",
    "AnyCancellationReason",
    "AskAssistant",
    "CachedAnswer",
    "CallOutcome",
    "CancellationReason",
    "Cancelled",
    "ChatRequest",
    "ChatResponse",
    "ChatResponseKind",
    "CompleteTool",
    "DeliveryRuling",
    "DetachedMode",
    "DetachedPolicy",
    "Effect",
    "Event",
    "FieldKind",
    "Fired",
    "Form",
    "FormField",
    "FormSchemaError",
    "Guard",
    "IllegalTransitionError",
    "Inquiry",
    "InquiryFacts",
    "InquiryQuestion",
    "InquiryRequest",
    "InquiryResponse",
    "InquirySource",
    "InquiryState",
    "InvalidAnswerError",
    "JsonFault",
    "JsonValue",
    "LeafRule",
    "MachineError",
    "OnTimeout",
    "PermissionBy",
    "PermissionDecision",
    "PermissionRuling",
    "PromptKind",
    "Question",
    "QueueDeliveryPrompt",
    "QueuePermissionPrompt",
    "QueueQuestion",
    "RecordError",
    "RecordedCall",
    "RecordedQuestion",
    "Redacted",
    "Resolution",
    "ResultMode",
    "Row",
    "RunMode",
    "RunTool",
    "SecretValue",
    "SelectOption",
    "ShowDeliveryPrompt",
    "ShowPermissionPrompt",
    "ShowQuestion",
    "SourceKind",
    "StaticAnswer",
    "Step",
    "TableMachine",
    "Target",
    "TextFormat",
    "ToolAnswer",
    "ToolCall",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolCallState",
    "TurnStart",
    "TurnState",
    "UnknownCancellationReason",
    "is_json",
    "is_provider_visible",
    "json_fault",
    "json_path",
    "json_type",
    "leaf_rules",
    "parse_cancellation_reason",
    "render_dot",
    "render_markdown_table",
    "render_mermaid",
    "typed_number",
]
