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
left of it when it did not (RFD 023), and :func:`export_markdown` renders a
stream for people to read, secrets redacted (``docs/export.md``).

Rules:

1. Nothing here reads or writes a file, or knows the wire format: the codec
   (:mod:`coordinator.wire`) builds streams and writes them.
2. Entries are values: a change is a new entry put in place of the old.
3. Event ids are unique in a stream; fresh ones come from the stream's
   ``new_id`` (RFD 097, our D24), and an id an entry took away is not given
   again. Fresh ids come from :func:`new_event_id` by default, and a source
   that keeps giving ids the stream holds is given up on after
   :data:`FRESH_ID_ATTEMPTS` (:func:`repeated_ids` says so).
4. An event that answers a chat request links to it (``request_id``, RFD
   098): the stream stamps the link as it appends, and every reader reads
   it as written, never by position (:mod:`coordinator.stream._links`).
5. What a batch needs of history (the current turn, the request a new event
   answers) is kept as entries are appended: its cost does not grow with
   the conversation.

The codec builds each entry it loads with the object it was read from
(:func:`with_loaded_form`), so that a save writes it back as it was read.

The export is imported when it is first asked for (``__getattr__`` below):
``inquiry check`` reads streams without it.
"""

import logging
from typing import TYPE_CHECKING, Any

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
    with_loaded_form,
)
from coordinator.stream._event_ids import FRESH_ID_ATTEMPTS, new_event_id, repeated_ids
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

if TYPE_CHECKING:
    from coordinator.stream._export import export_markdown

__all__ = [
    "ASSISTANT_TOOLS",
    "EVENT_KINDS",
    "FRESH_ID_ATTEMPTS",
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
    "export_markdown",
    "find_incomplete_turn",
    "is_linked",
    "new_event_id",
    "pair_events",
    "plan_sanitize",
    "provider_exclusions",
    "repeated_ids",
    "request_links",
    "sanitize",
    "with_loaded_form",
]

# The library's one handler (see `coordinator`'s docstring), added by the
# layer that every layer that logs imports: `coordinator` itself, which
# `inquiry --version` imports, imports no `logging`.
logging.getLogger("coordinator").addHandler(logging.NullHandler())


def __getattr__(name: str) -> Any:
    """The Markdown export, imported on first use (then it is a plain attribute)."""
    if name != "export_markdown":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from coordinator.stream._export import export_markdown  # noqa: PLC0415 - see the docstring

    globals()[name] = export_markdown
    return export_markdown
