"""What ``inquiry check`` reports about a conversation.

Besides counts by kind, the summary pairs inquiries and tool calls turn by
turn (:mod:`coordinator.stream._pairing`): how many pairs, how many requests still
wait for a response (their turn is blocked on them) and how many responses
answer no request, per turn and in total.

Paths are reported as :func:`coordinator._text.shown_path` gives them: a file
name's bytes that are not UTF-8 appear as U+FFFD, as JP shows them.
"""

from __future__ import annotations

import io
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from coordinator._text import shown_path
from coordinator.stream._entries import EventEntry
from coordinator.stream._pairing import pair_events
from machines import Answered, Cancelled, InquiryRequest, Redacted

if TYPE_CHECKING:
    from coordinator.store._store import Conversation
    from coordinator.stream._pairing import Pairing

__all__ = ["pairing_summary", "summarize", "to_null_device"]


def pairing_summary(pairing: Pairing) -> dict[str, Any]:
    """Totals and per-turn counts of one kind of pairing, with the ids left open.

    Each turn lists ``pending`` (requests with no response) and ``orphaned``
    (responses with no request) by id, in stream order.
    """
    return {
        "totals": pairing.counts.as_dict(),
        "turns": [
            {
                "turn": turn.turn,
                **turn.counts.as_dict(),
                "pending_ids": [located.id for located in turn.pending],
                "orphaned_ids": [located.id for located in turn.orphaned],
            }
            for turn in pairing.turns
        ],
    }


def summarize(conversation: Conversation) -> dict[str, Any]:
    """Counts a person (or a script, as JSON) can check a conversation against."""
    stream = conversation.stream
    pairing = pair_events(stream)
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
        "path": shown_path(conversation.path) if conversation.path else None,
        "layout": conversation.layout.value,
        "entries": len(stream),
        "turns": len(stream.turns()),
        "kinds": dict(sorted(kinds.items())),
        "unknown_kinds": sorted({entry.kind for entry in stream.unknown_entries()}),
        "inquiry_requests": requests,
        "inquiry_responses": sum(outcomes.values()),
        "inquiry_outcomes": {key: outcomes[key] for key in ("answered", "cancelled", "redacted")},
        "pairing": {
            "inquiries": pairing_summary(pairing.inquiries),
            "tool_calls": pairing_summary(pairing.tool_calls),
        },
        "ids_repaired": {
            "assigned": conversation.id_repairs.assigned,
            "regenerated": conversation.id_repairs.regenerated,
        },
    }


def to_null_device(out: TextIO) -> None:
    """Point ``out``'s file descriptor at the null device, as the Python docs advise on EPIPE.

    Whatever is still buffered for a pipe its reader closed then goes
    nowhere, rather than raising again when the interpreter flushes it at exit.
    """
    try:
        descriptor = out.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return  # not a file: nothing is left to flush into the closed pipe
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)
