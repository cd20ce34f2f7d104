"""Request links: which chat request each answering event answers (RFD 098).

Theory of operation. An event that answers a chat request (a
``chat_response``, a tool call's request or response, an inquiry's request
or response) carries, as ``request_id`` beside its ``event_id``, the
``event_id`` of the ``chat_request`` it answers. The stream stamps it when it
appends the event (:meth:`ConversationStream.append`): the current turn's
latest ``chat_request``, none before the turn's first, a ``turn_start``
clearing it. Position is trusted then, when events are appended in the order
they happen, and never afterwards: a link is read as written.

Reading a stream, an answering event is in one of three states:

- **linked**: its ``request_id`` names a ``chat_request`` of the stream;
- **unlinked**: it carries no link (a file written before links, an event
  appended before its turn's first request). Readers treat it by position,
  as before links; nothing ever adds one to it (no backfill);
- **unresolved**: it carries a link that binds nothing (:class:`LinkProblem`):
  no entry has that id, the entry that has it is not a ``chat_request``, or
  the id was carried by more than one entry when the stream was loaded (a
  copied entry: which one the link meant cannot be known, RFD 097). It is
  never rebound by position.

What each reader does: a load keeps every link as written, unresolved ones
included; ``sanitize`` neither reads nor changes links (the entry it inserts
to close a tool call carries the link of the call it closes); ``inquiry
check`` reports the unresolved ones and ``inquiry export`` notes the
request an event answers where its position would say otherwise; the
provider view leaves out every event whose link is unresolved, and with it
the other half of its tool call (:func:`provider_exclusions`), and says so.

One pass over the stream for :func:`request_links` (a dict of the stream's
ids), and pairing's pass for the tool calls only when a link is unresolved.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from coordinator.stream._entries import EventEntry, UnknownEntry, is_linked
from coordinator.stream._pairing import pair_indexed
from machines import ChatRequest, TurnStart

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from coordinator.stream._entries import StreamEntry

__all__ = [
    "Exclusion",
    "LinkProblem",
    "RequestLinks",
    "UnresolvedLink",
    "provider_exclusions",
    "request_links",
]


class LinkProblem(enum.Enum):
    """Why a request link binds nothing; values name it in reports and JSON."""

    #: No entry of the stream has the id it names.
    MISSING = "missing"
    #: The entry with the id it names is not a ``chat_request``.
    NOT_A_CHAT_REQUEST = "not_a_chat_request"
    #: More than one entry carried the id when the stream was loaded (RFD 097).
    DUPLICATED = "duplicated"


@attrs.frozen
class UnresolvedLink:
    """An event at ``index`` whose ``request_id`` binds nothing, and why."""

    index: int
    entry: EventEntry = attrs.field(repr=False)
    problem: LinkProblem

    @property
    def request_id(self) -> str:
        """The id the link names."""
        return self.entry.request_id or ""


@attrs.frozen
class RequestLinks:
    """The request links of a stream, read as written.

    ``answers`` maps the position of each linked event to the position of
    the ``chat_request`` it answers; ``positional`` maps the same positions
    to the latest ``chat_request`` before the event in its turn (``None``:
    none), where a reader without links would have put it; ``unresolved``
    lists the links that bind nothing, in stream order; ``unlinked`` counts
    the answering events that carry no link.
    """

    answers: Mapping[int, int]
    positional: Mapping[int, int | None]
    unresolved: tuple[UnresolvedLink, ...]
    unlinked: int

    @property
    def elsewhere(self) -> tuple[int, ...]:
        """The linked events whose request is not the one their position would say, in order."""
        return tuple(
            index for index, request in self.answers.items() if self.positional[index] != request
        )


def request_links(
    entries: Sequence[StreamEntry], duplicated: Collection[str] = ()
) -> RequestLinks:
    """Read the request link of every answering event of ``entries`` (see the module docstring).

    ``duplicated`` holds the ids more than one entry carried when the
    stream was loaded (:attr:`ConversationStream.duplicated_ids`).
    """
    holders: dict[str, int] = {}
    for index, entry in enumerate(entries):
        event_id = entry.event_id
        # The first holder: ids are unique but among entries of unknown kinds.
        if event_id is not None and event_id not in holders:
            holders[event_id] = index
    answers: dict[int, int] = {}
    positional: dict[int, int | None] = {}
    unresolved: list[UnresolvedLink] = []
    unlinked = 0
    latest: int | None = None  # the latest chat_request of the turn being read
    for index, entry in enumerate(entries):
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, TurnStart):
            latest = None
        elif isinstance(payload, ChatRequest):
            latest = index
        elif is_linked(payload):
            target = entry.request_id
            if target is None:
                unlinked += 1
                continue
            problem = _problem(entries, holders.get(target), target, duplicated)
            if problem is not None:
                unresolved.append(UnresolvedLink(index, entry, problem))
                continue
            answers[index] = holders[target]
            positional[index] = latest
    return RequestLinks(answers, positional, tuple(unresolved), unlinked)


def _problem(
    entries: Sequence[StreamEntry], holder: int | None, target: str, duplicated: Collection[str]
) -> LinkProblem | None:
    if target in duplicated:
        return LinkProblem.DUPLICATED
    if holder is None:
        return LinkProblem.MISSING
    held = entries[holder]
    if isinstance(held, UnknownEntry) or not (
        isinstance(held, EventEntry) and isinstance(held.payload, ChatRequest)
    ):
        return LinkProblem.NOT_A_CHAT_REQUEST
    return None


@attrs.frozen
class Exclusion:
    """An event a provider is not sent, for a link that binds nothing (RFD 098's diagnostic).

    ``link`` is the unresolved link that excluded it: its own, or, when
    ``closed_over``, that of the other half of its tool call, left out with it
    so the provider never meets a call without its result.
    """

    index: int
    entry: EventEntry = attrs.field(repr=False)
    link: UnresolvedLink
    closed_over: bool = False


def provider_exclusions(
    entries: Sequence[StreamEntry], links: RequestLinks
) -> tuple[Exclusion, ...]:
    """The events of ``entries`` a provider must not be sent, in stream order.

    Every event whose link is unresolved, and the other half of each tool
    call one of them belongs to: tool calls are paired by id within their
    turn, by cycle and count (:mod:`coordinator.stream._pairing`), as the
    provider's own pairing would. Inquiry events need no such closure: no
    provider is sent them.
    """
    if not links.unresolved:
        return ()
    by_index = {link.index: link for link in links.unresolved}
    excluded = {index: Exclusion(index, link.entry, link) for index, link in by_index.items()}
    for pair in pair_indexed(enumerate(entries)).tool_calls.pairs:
        request, response = pair.request, pair.response
        for half, other in ((request, response), (response, request)):
            link = by_index.get(half.index)
            if link is not None and other.index not in excluded:
                excluded[other.index] = Exclusion(other.index, other.entry, link, closed_over=True)
    return tuple(excluded[index] for index in sorted(excluded))
