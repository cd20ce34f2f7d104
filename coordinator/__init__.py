"""The shell of the inquiry coordinator: streams, storage and the ``inquiry`` CLI.

The public API is what this module exports; everything in underscored modules
is private.
"""

from coordinator._entries import (
    Compaction,
    ConfigDelta,
    EventEntry,
    GlobalEntry,
    StreamEntry,
    UnknownEntry,
)
from coordinator._errors import ConversationChangedError, CoordinatorError, StreamFormatError
from coordinator._event_ids import new_event_id
from coordinator._export import describe_inquiry_response, export_markdown
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
from coordinator._store import (
    Conversation,
    Layout,
    SaveResult,
    load_conversation,
    save_conversation,
)
from coordinator._stream import ConversationStream, ProviderView, Turn
from coordinator._stream_codec import IdRepairs
from coordinator._timestamps import Timestamp

__all__ = [
    "INTERRUPTED_TOOL_CALL",
    "Compaction",
    "ConfigDelta",
    "Conversation",
    "ConversationChangedError",
    "ConversationStream",
    "CoordinatorError",
    "EventEntry",
    "GlobalEntry",
    "IdRepairs",
    "Insertion",
    "InsertionReason",
    "Layout",
    "Located",
    "Pair",
    "PairCounts",
    "PairKind",
    "Pairing",
    "ProviderView",
    "Removal",
    "RemovalReason",
    "SanitizePlan",
    "SanitizeReport",
    "SaveResult",
    "StreamEntry",
    "StreamFormatError",
    "StreamPairing",
    "Timestamp",
    "Turn",
    "TurnPairing",
    "UnknownEntry",
    "describe_inquiry_response",
    "export_markdown",
    "load_conversation",
    "new_event_id",
    "pair_events",
    "plan_sanitize",
    "sanitize",
    "save_conversation",
]
