"""Parked prompts: what a batch leaves waiting, and the mark its writer puts on each.

Theory of operation: with the detached policy ``park`` (ours, issue 41),
a prompt nobody can answer is kept for an answer given later instead of
being decided: a question (its inquiry ends ``parked``, its
``inquiry_request`` on disk and no response) or a permission to run (the
call ends ``parked``, its ``tool_call_request`` on disk and no response).
The batch goes on with its other calls and ends; the turn is then blocked,
as a run that died would leave it, until a later run continues it (or the
inbox answers a parked question).

A reader must be able to tell a prompt parked on purpose from one left open
by a crash, and only the writer knows which. So the writer marks the
request's entry: the ``inquiry`` key of its metadata gains
``{"parked": {"prompt": "tool" | "run", "since": "<time>"}}``
(:func:`coordinator._recorded_routes.with_park`; JP keeps metadata it does
not know verbatim, and reads the entry as it always did). The entry was
appended earlier (a permission's always, by whoever appended the model's
response; a question's when it was on screen first), so it is replaced by
the same entry with the mark (:meth:`ConversationStream.replace`: same id,
same timestamp, same record), once per save for every park since the last
one. A request marked already keeps its first mark (``since`` is when it
was first parked).

What the batch parked is told to the embedder as :class:`ParkedPrompt`
values (:attr:`ToolCoordinator.parked`), what the row that parked it says
(its ``detached`` column is ``park``), never re-derived from the stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from coordinator._recorded_routes import RecordedPark, recorded_park, with_park
from coordinator.stream import EventEntry
from machines import InquiryRequest, PromptKind, Question, ToolCallRequest
from machines.validators import of_type, optional_of_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coordinator.stream import ConversationStream, StreamEntry

__all__ = ["ParkedPrompt", "mark_parked"]


@attrs.frozen(kw_only=True)
class ParkedPrompt:
    """A prompt a batch parked: it waits, recorded, for an answer given later.

    ``kind`` is :attr:`~machines.PromptKind.TOOL` for a question (its
    ``inquiry_id`` and the ``question`` as recorded, secrets masked) or
    :attr:`~machines.PromptKind.RUN` for a permission to run the call.
    """

    tool_call_id: str = attrs.field(validator=of_type(str))
    tool_name: str = attrs.field(validator=of_type(str))
    kind: PromptKind = attrs.field(validator=of_type(PromptKind))
    inquiry_id: str | None = attrs.field(default=None, validator=optional_of_type(str))
    question: Question | None = attrs.field(default=None, validator=optional_of_type(Question))


def mark_parked(stream: ConversationStream, parked: Sequence[ParkedPrompt]) -> None:
    """Mark the request of each of ``parked`` in the stream's current turn as parked.

    A question's request is the turn's latest ``inquiry_request`` of its id;
    a permission's, the latest ``tool_call_request`` of its call (ids may
    repeat across cycles; the latest is the open one). One replacement of the
    stream for all of them; nothing is replaced when every one was marked.
    """
    turn = stream.current_turn()
    if turn is None or not parked:
        return
    questions = {p.inquiry_id: p for p in parked if p.kind is PromptKind.TOOL}
    permissions = {p.tool_call_id: p for p in parked if p.kind is PromptKind.RUN}
    since = str(stream.now())
    entries: list[StreamEntry] = list(stream)
    changed = False
    for index in range(turn.stop - 1, turn.start - 1, -1):
        entry = entries[index]
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, InquiryRequest):
            prompt = questions.pop(payload.id, None)
        elif isinstance(payload, ToolCallRequest):
            prompt = permissions.pop(payload.id, None)
        else:
            continue
        if prompt is None or recorded_park(entry.metadata) is not None:
            continue
        mark = RecordedPark(prompt=prompt.kind.value, since=since)
        entries[index] = attrs.evolve(entry, metadata=with_park(entry.metadata, mark))
        changed = True
        if not questions and not permissions:
            break
    if changed:
        stream.replace(entries)
