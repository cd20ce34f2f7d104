"""The stream: what a conversation holds, in memory.

The second layer, on the machines. A :class:`ConversationStream` is the
ordered entries of one conversation: conversation events (an
:class:`EventEntry` around a machine record) and the global entries between
them (``config_delta``, ``compaction``, kinds this build does not know, kept
verbatim). Turns begin at ``turn_start``. The readers work on a stream and
nothing else: :func:`pair_events` pairs requests with responses turn by turn,
:func:`sanitize` repairs a stream as JP does before a provider request, and
:meth:`ConversationStream.provider_view` is the only way events reach a
model provider (the :func:`machines.is_provider_visible` allowlist), and
:func:`find_incomplete_turn` says whether the last turn finished, and what is
left of it when it did not (RFD 023).

Rules:

1. Nothing here reads or writes a file, or knows the wire format: the codec
   (:mod:`coordinator.wire`) builds streams and writes them.
2. Entries are values: a change is a new entry put in place of the old.
3. Event ids are unique in a stream; fresh ones come from the stream's
   ``new_id`` (RFD 097, our D24), and an id an entry took away is not given
   again.
4. An event that answers a chat request links to it (``request_id``, RFD
   098): the stream stamps the link as it appends, and every reader reads
   it as written, never by position (:mod:`coordinator.stream._links`).
5. What a batch needs of history (the current turn, the request a new event
   answers) is kept as entries are appended: its cost does not grow with
   the conversation.
"""

from coordinator.stream._entries import (
    EVENT_KINDS,
    Compaction,
    ConfigDelta,
    EventEntry,
    EventOverlay,
    GlobalEntry,
    OverlayPatch,
    StreamEntry,
    UnknownEntry,
    is_linked,
)
from coordinator.stream._event_ids import new_event_id
from coordinator.stream._incomplete import (
    ASSISTANT_TOOLS,
    IncompleteTurn,
    OpenCall,
    ResumePhase,
    complete_turns,
    find_incomplete_turn,
)
from coordinator.stream._links import (
    Exclusion,
    LinkProblem,
    RequestLinks,
    UnresolvedLink,
    provider_exclusions,
    request_links,
)
from coordinator.stream._pairing import (
    Located,
    Pair,
    PairCounts,
    Pairing,
    PairKind,
    StreamPairing,
    TurnPairing,
    pair_events,
)
from coordinator.stream._sanitize import (
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
from coordinator.stream._stream import ConversationStream, ProviderView, Turn
from coordinator.stream._timestamps import Timestamp

__all__ = [
    "ASSISTANT_TOOLS",
    "EVENT_KINDS",
    "INTERRUPTED_TOOL_CALL",
    "Compaction",
    "ConfigDelta",
    "ConversationStream",
    "EventEntry",
    "EventOverlay",
    "Exclusion",
    "GlobalEntry",
    "IncompleteTurn",
    "Insertion",
    "InsertionReason",
    "LinkProblem",
    "Located",
    "OpenCall",
    "OverlayPatch",
    "Pair",
    "PairCounts",
    "PairKind",
    "Pairing",
    "ProviderView",
    "Removal",
    "RemovalReason",
    "RequestLinks",
    "ResumePhase",
    "SanitizePlan",
    "SanitizeReport",
    "StreamEntry",
    "StreamPairing",
    "Timestamp",
    "Turn",
    "TurnPairing",
    "UnknownEntry",
    "UnresolvedLink",
    "complete_turns",
    "find_incomplete_turn",
    "is_linked",
    "new_event_id",
    "pair_events",
    "plan_sanitize",
    "provider_exclusions",
    "request_links",
    "sanitize",
]
