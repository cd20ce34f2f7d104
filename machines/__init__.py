"""The pure layer of the inquiry coordinator: records, turn state and machines.

Nothing here does I/O, reads a clock or draws randomness: what varies is handed
in. ``coordinator`` imports this package; this package never imports it.
"""

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
from machines._json import JsonValue
from machines._questions import (
    AnswerKind,
    AnswerType,
    InquiryQuestion,
    InquirySource,
    Question,
    SelectOption,
    SourceKind,
)
from machines._secret import SecretValue

__all__ = [
    "AnswerKind",
    "AnswerType",
    "Answered",
    "AnyCancellationReason",
    "CancellationReason",
    "Cancelled",
    "ChatRequest",
    "ChatResponse",
    "ChatResponseKind",
    "Event",
    "IllegalTransitionError",
    "InquiryQuestion",
    "InquiryRequest",
    "InquiryResponse",
    "InquirySource",
    "InvalidAnswerError",
    "JsonValue",
    "MachineError",
    "Question",
    "RecordError",
    "Redacted",
    "SecretValue",
    "SelectOption",
    "SourceKind",
    "ToolCallRequest",
    "ToolCallResponse",
    "TurnStart",
    "UnknownCancellationReason",
    "is_provider_visible",
    "parse_cancellation_reason",
]
