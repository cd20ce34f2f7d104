"""What ``inquiry check`` reports about a conversation."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from coordinator._entries import EventEntry
from machines import Answered, Cancelled, InquiryRequest, Redacted

if TYPE_CHECKING:
    from coordinator._store import Conversation

__all__ = ["summarize"]


def summarize(conversation: Conversation) -> dict[str, Any]:
    """Counts a person (or a script, as JSON) can check a conversation against."""
    stream = conversation.stream
    kinds: Counter[str] = Counter(entry.kind for entry in stream)
    outcomes: Counter[str] = Counter()
    requests = 0
    for entry in stream:
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, InquiryRequest):
            requests += 1
        elif isinstance(payload, Answered):
            outcomes["answered"] += 1
        elif isinstance(payload, Cancelled):
            outcomes["cancelled"] += 1
        elif isinstance(payload, Redacted):
            outcomes["redacted"] += 1
    return {
        "path": str(conversation.path) if conversation.path else None,
        "layout": conversation.layout.value,
        "entries": len(stream),
        "turns": len(stream.turns()),
        "kinds": dict(sorted(kinds.items())),
        "unknown_kinds": sorted({entry.kind for entry in stream.unknown_entries()}),
        "inquiry_requests": requests,
        "inquiry_responses": sum(outcomes.values()),
        "inquiry_outcomes": {key: outcomes[key] for key in ("answered", "cancelled", "redacted")},
        "ids_repaired": {
            "assigned": conversation.id_repairs.assigned,
            "regenerated": conversation.id_repairs.regenerated,
        },
    }
