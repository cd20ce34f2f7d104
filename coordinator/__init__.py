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
    "Compaction",
    "ConfigDelta",
    "Conversation",
    "ConversationChangedError",
    "ConversationStream",
    "CoordinatorError",
    "EventEntry",
    "GlobalEntry",
    "IdRepairs",
    "Layout",
    "ProviderView",
    "SaveResult",
    "StreamEntry",
    "StreamFormatError",
    "Timestamp",
    "Turn",
    "UnknownEntry",
    "load_conversation",
    "new_event_id",
    "save_conversation",
]
