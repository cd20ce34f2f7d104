"""Incomplete turns: what a turn that did not finish holds, read from the stream (RFD 023).

Theory of operation: a process can die in the middle of a turn (a crash, a
``kill -9``, a closed laptop). What it saved is a prefix of the turn: requests
whose responses never came. :func:`find_incomplete_turn` reads the last turn
of a loaded stream and says whether it finished, and if not, what is left:
the stream itself is not split or changed (it re-saves byte for byte), the
:class:`IncompleteTurn` is a view over it. Only the last turn is examined: an
earlier turn left open was followed by another, and repairing it is
:func:`~coordinator.stream.sanitize`'s business.

A turn is complete (RFD 023) when, from its ``turn_start`` to the end, it
has a ``chat_request`` and a ``chat_response`` after it, every tool-call
request has its response, and a ``chat_response`` follows the last tool-call
response. Global entries (``config_delta``, ``compaction``,
``event_overlay``, unknown kinds) do not count, and a turn holding nothing
but its ``turn_start`` is empty, not incomplete. A turn whose last event is
a discard's close (a ``Cancelled(discarded)``, or a ``tool_call_response``
its writer recorded with the route ``discarded``:
:data:`~coordinator._recorded_routes.DISCARDED_ROUTE`) was discarded by its
writer, every open question and call closed so: it is finished too, though
no model response follows (ours: RFD 023 drops such a turn, we keep it
whole and close it). What is missing says where
the turn stands (:class:`ResumePhase`): waiting for the model's response,
executing tool calls (some call or some question still open: the turn is
*blocked*), or waiting for the model's follow-up to the tool results.

For each tool call left open (:class:`OpenCall`) the view gathers what the
stream recorded of it, as the machines take it up (:class:`~machines.RecordedCall`):
the latest answer to each of its questions (replayed to the tool when it runs
again), the questions whose latest answer was redacted (a secret is never
recorded, so it is asked again), how often each question was asked (its
budgets count them), the request still waiting for an answer, and a last
question closed unanswered with nothing after it.

A recorded answer is held to its recorded question exactly as a live one
is before it is replayed (issue 36): an answer its question's type does
not take (a select value outside its options, a boolean recorded as
text) and a secret recorded as answered (a real run records a secret only
as redacted) are not replayed: the tool, run again, asks that question
again, and :attr:`OpenCall.unfit` says which and why, in words that never
quote the value.

What waits may have been parked by its writer (the detached policy
``park``) rather than left open by a run that died: the writer marks the
request's entry so (``coordinator._recorded_routes``), and the view says
which (:attr:`OpenCall.parked`): a parked question, or a parked permission
(a call that never ran, its ``tool_call_request`` marked).

Which call asked an inquiry is not written down: the process that knew is
gone, and inquiry ids are opaque (RFD 082: "No reader needs to recover them
from the ID"), so an id is never read for it. An inquiry is attributed to a
call by what RFD 082 lets a reader use: its position (after the call's
request, in the same model response, before the call's response) and its
source (``tool`` named as the call's tool, or ``assistant`` for a tool that
asks as the assistant: ``ask_user``); its question id is ``question.id``.
A request recorded without ``question.id`` (JP writes none) is attributed
the same way, and its question id stays unknown: its answer cannot be
replayed by id (the tool asks again), and a waiting one is adopted only if
the tool, run again, asks a question equal to it in everything recorded
(``RecordedQuestion.same_as``: the writer matches when it asks, the reader
guesses nothing). An inquiry that cannot be attributed to exactly one call
is never replayed to any: its call asks again (asking twice is safe, feeding
an answer to the wrong call is not), and a request of it still open is
*stray*, closed when the turn is continued.

Rules:

1. Nothing here changes the stream; the view is computed in one pass over
   the last turn (plus the pairing of that turn): linear in its length.
2. Pairing is :mod:`coordinator.stream._pairing`'s (by id, cycle, then
   order), never by sets of ids: ids repeat within and across turns.
3. A request that no response appended at the end of the turn could close
   (its id was asked again in a later cycle of the turn, whose request took
   the response) is *stuck*: the turn cannot be continued, only sanitized.
"""

from __future__ import annotations

import enum
from collections import Counter
from typing import TYPE_CHECKING

import attrs

from coordinator._recorded_routes import (
    DISCARDED_ROUTE,
    RecordedPark,
    recorded_park,
    recorded_route,
)
from coordinator.stream._entries import EventEntry
from coordinator.stream._pairing import Located, Pair, TurnPairing, pair_indexed
from coordinator.stream._stream import Turn
from machines import (
    Answered,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryRequest,
    InquirySource,
    JsonValue,
    RecordedCall,
    RecordedQuestion,
    Redacted,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from coordinator.stream._stream import ConversationStream

__all__ = [
    "ASSISTANT_TOOLS",
    "IncompleteTurn",
    "OpenCall",
    "ResumePhase",
    "complete_turns",
    "find_incomplete_turn",
]

#: The tools whose questions are recorded with the assistant as their source
#: (RFD 083's ``ask_user``), unless the caller names others.
ASSISTANT_TOOLS = ("ask_user",)


class ResumePhase(enum.Enum):
    """Where an incomplete turn stands: what it waits for (RFD 023's resume phase)."""

    #: A user message and no model response after it: the model is to be asked.
    AWAITING_MODEL = "awaiting_model"
    #: A tool call or a question still open: the turn is blocked on it.
    EXECUTING = "executing"
    #: Every tool call answered, and no model response after the last result.
    AWAITING_FOLLOW_UP = "awaiting_follow_up"


@attrs.frozen
class OpenCall:
    """A tool call of the turn without a response, and what the stream recorded of it.

    ``inquiries`` are the requests attributed to it, in order (their question
    ids in ``question_ids``: ``None`` for a request recorded without one, as
    JP records them); ``recorded`` is what a :class:`~machines.ToolCall`
    resumes from. ``reask`` are the question ids whose latest answer was
    redacted: the tool asks them again. ``unfit`` are the question ids whose
    latest recorded answer does not fit the recorded question, each with
    why (never the value): not replayed, asked again. ``parked`` is the
    writer's park mark on what waits: the waiting question's, or, for a
    call that never ran, its request's (a parked permission).
    """

    request: Located
    inquiries: tuple[Located, ...]
    question_ids: tuple[str | None, ...]
    recorded: RecordedCall
    reask: frozenset[str]
    waiting: Located | None = None
    declined: Located | None = None
    unfit: tuple[tuple[str, str], ...] = ()
    parked: RecordedPark | None = None

    @property
    def tool_call(self) -> ToolCallRequest:
        """The call's request, as recorded."""
        payload = self.request.entry.payload
        if not isinstance(payload, ToolCallRequest):  # pragma: no cover - built only so
            raise TypeError("an open call's request is a ToolCallRequest")
        return payload

    @property
    def replay(self) -> Mapping[str, JsonValue]:
        """The latest recorded answer to each of its questions, by question id."""
        return self.recorded.answers

    @property
    def ran(self) -> bool:
        """Whether a recorded question shows the call ran before the turn stopped."""
        return bool(self.inquiries)

    @property
    def permission_parked(self) -> bool:
        """Whether the call never ran, its permission parked by the detached policy."""
        return not self.ran and self.parked is not None


@attrs.frozen
class IncompleteTurn:
    """The last turn of a stream, which did not finish: where it stands and what is open.

    ``turn`` is the stream's own turn (its entries as they are, global ones
    included). ``finished`` are its tool calls with a response (never run
    again), ``open`` those without, in stream order. ``stray`` are inquiry
    requests still open that no open call is known to have asked, ``stuck``
    requests nothing appended can close (see the module's rule 3).
    ``recorded_inquiry_ids`` is every inquiry id the turn holds: ids allocated
    when it is continued skip them. ``assistant_tools`` are the tools it was
    read with, whose questions are the assistant's.
    """

    turn: Turn
    phase: ResumePhase
    finished: tuple[Pair, ...]
    open: tuple[OpenCall, ...]
    stray: tuple[Located, ...]
    stuck: tuple[Located, ...]
    recorded_inquiry_ids: frozenset[str]
    assistant_tools: frozenset[str] = frozenset(ASSISTANT_TOOLS)

    @property
    def blocked(self) -> bool:
        """Whether a tool call or a question is still open (RFD 082's pending; a crash's doing)."""
        return bool(self.open or self.stray or self.stuck)

    @property
    def waiting(self) -> tuple[OpenCall, ...]:
        """The open calls whose question waits for an answer."""
        return tuple(call for call in self.open if call.waiting is not None)

    @property
    def parked(self) -> tuple[OpenCall, ...]:
        """The open calls whose question, or permission, the detached policy parked."""
        return tuple(call for call in self.open if call.parked is not None)

    @property
    def status(self) -> str:
        """RFD 023's words for it: ``waiting-for-input (tool)``, ``interrupted (pending ...)``.

        A turn whose calls wait for parked prompts is ``parked (tool)`` (ours).
        """
        if self.parked:
            return f"parked ({self.parked[0].tool_call.name})"
        if self.waiting:
            return f"waiting-for-input ({self.waiting[0].tool_call.name})"
        if self.phase is ResumePhase.EXECUTING:
            return "interrupted (pending tool execution)"
        if self.phase is ResumePhase.AWAITING_FOLLOW_UP:
            return "interrupted (pending follow-up)"
        return "interrupted (pending LLM response)"


def complete_turns(stream: ConversationStream) -> list[Turn]:
    """The stream's turns without its last one when that did not finish."""
    turns = stream.turns()
    if turns and find_incomplete_turn(stream) is not None:
        turns.pop()
    return turns


def find_incomplete_turn(
    stream: ConversationStream, *, assistant_tools: Collection[str] = ASSISTANT_TOOLS
) -> IncompleteTurn | None:
    """The last turn of ``stream`` when it did not finish, else ``None``.

    ``assistant_tools`` names the tools whose questions are recorded as the
    assistant's (``ask_user``, and any other name a built-in asking as the
    assistant runs under).
    """
    turn = stream.current_turn()
    if turn is None:
        return None
    return _Reading(turn, frozenset(assistant_tools)).result()


# ------------------------------------------------------------------ reading


@attrs.define
class _Call:
    """A tool-call request of the turn, where it stands."""

    located: Located
    name: str
    cycle: int
    closed_at: int | None  # the position of its response, if it has one
    continuable: bool


class _Reading:
    """One reading of the last turn."""

    def __init__(self, turn: Turn, assistant_tools: frozenset[str]) -> None:
        self.turn = turn
        self.assistant_tools = assistant_tools
        indexed = [(turn.start + offset, entry) for offset, entry in enumerate(turn.entries)]
        pairing = pair_indexed(indexed)
        self.tools: TurnPairing = (
            pairing.tool_calls.turns[-1] if pairing.tool_calls.turns else TurnPairing(0)
        )
        self.inquiries: TurnPairing = (
            pairing.inquiries.turns[-1] if pairing.inquiries.turns else TurnPairing(0)
        )
        self.events = [
            (index, entry)
            for index, entry in indexed
            if isinstance(entry, EventEntry) and not isinstance(entry.payload, TurnStart)
        ]

    def result(self) -> IncompleteTurn | None:
        if not self.events:
            return None  # an empty turn: nothing was asked
        calls, asks = self._cycles()
        stuck = [call.located for call in calls if call.closed_at is None and not call.continuable]
        open_calls = [call for call in calls if call.closed_at is None and call.continuable]
        answered = {pair.request.index: pair.response for pair in self.inquiries.pairs}
        pending_inquiries = {located.index for located in self.inquiries.pending}
        attributed = self._attribute(calls, asks)
        taken: set[int] = set()
        opened = []
        for call in open_calls:
            mine = attributed.get(call.located.index, [])
            built = _open_call(call, mine, answered, pending_inquiries)
            if built.waiting is not None:
                taken.add(built.waiting.index)
            opened.append(built)
        stray: list[Located] = []
        for located, continuable in asks:
            if located.index in pending_inquiries and located.index not in taken:
                (stray if continuable else stuck).append(located)
        phase = self._phase(blocked=bool(opened or stray or stuck))
        if phase is None:
            return None
        return IncompleteTurn(
            turn=self.turn,
            phase=phase,
            finished=self.tools.pairs,
            open=tuple(opened),
            stray=tuple(stray),
            stuck=tuple(sorted(stuck, key=lambda located: located.index)),
            recorded_inquiry_ids=frozenset(located.id for located, _ in asks),
            assistant_tools=self.assistant_tools,
        )

    def _cycles(self) -> tuple[list[_Call], list[tuple[Located, bool]]]:
        """Every tool-call request with its cycle, and every inquiry request, each as it stands.

        A request is continuable when no request of its id comes in a later
        cycle (pairing's cycles: chat messages for tool calls, chat messages
        and tool calls for inquiries).
        """
        closed = {pair.request.index: pair.response.index for pair in self.tools.pairs}
        chats = calls_seen = 0
        calls: list[_Call] = []
        asks: list[tuple[Located, int]] = []
        last_call_cycle: dict[str, int] = {}
        last_ask_cycle: dict[str, int] = {}
        for index, entry in self.events:
            payload = entry.payload
            if isinstance(payload, ChatRequest | ChatResponse):
                chats += 1
            elif isinstance(payload, ToolCallRequest):
                located = Located(index, entry, payload.id)
                calls.append(
                    _Call(located, payload.name, chats, closed.get(index), continuable=True)
                )
                last_call_cycle[payload.id] = chats
                calls_seen += 1
            elif isinstance(payload, InquiryRequest):
                asks.append((Located(index, entry, payload.id), chats + calls_seen))
                last_ask_cycle[payload.id] = chats + calls_seen
        for call in calls:
            call.continuable = last_call_cycle[call.located.id] == call.cycle
        return calls, [(located, last_ask_cycle[located.id] == cycle) for located, cycle in asks]

    def _attribute(
        self, calls: list[_Call], asks: list[tuple[Located, bool]]
    ) -> dict[int, list[Located]]:
        """Each inquiry request attributed to exactly one call, by its position and source.

        One pass in stream order keeps the calls that could be asking: those
        of the current model response (no chat message since their request)
        still without a response, by the name a question's source gives.
        """
        by_index = {call.located.index: call for call in calls}
        opened_by = {pair.response.index: pair.request.index for pair in self.tools.pairs}
        asked_at = {located.index: located for located, _ in asks}
        # (tool name, or None for the assistant's tools) -> open calls, by id, of this response.
        asking: dict[str | None, dict[str, list[_Call]]] = {}
        attributed: dict[int, list[Located]] = {}
        for index, entry in self.events:
            payload = entry.payload
            if isinstance(payload, ChatRequest | ChatResponse):
                asking = {}  # a new model response: the calls before it asked what they asked
            elif isinstance(payload, ToolCallRequest):
                call = by_index[index]
                for key in self._keys(call.name):
                    asking.setdefault(key, {}).setdefault(call.located.id, []).append(call)
            elif isinstance(payload, ToolCallResponse) and index in opened_by:
                call = by_index[opened_by[index]]
                for key in self._keys(call.name):
                    group = asking.get(key, {}).get(call.located.id, [])
                    if call in group:
                        group.remove(call)
            elif isinstance(payload, InquiryRequest) and index in asked_at:
                owner = _owner(_could_ask(asking, payload.source))
                if owner is not None:
                    attributed.setdefault(owner.located.index, []).append(asked_at[index])
        return attributed

    def _keys(self, name: str) -> tuple[str | None, ...]:
        """Under which sources a call of tool ``name`` may ask: its name, and the assistant's."""
        return (name, None) if name in self.assistant_tools else (name,)

    def _phase(self, *, blocked: bool) -> ResumePhase | None:
        if blocked:
            return ResumePhase.EXECUTING
        if self._discarded():
            return None
        last_request = last_response = last_result = None
        for index, entry in self.events:
            payload = entry.payload
            if isinstance(payload, ChatRequest):
                last_request = index
            elif isinstance(payload, ChatResponse):
                last_response = index
            elif isinstance(payload, ToolCallResponse):
                last_result = index
        if last_request is not None and (last_response is None or last_response < last_request):
            return ResumePhase.AWAITING_MODEL
        if last_result is not None and (last_response is None or last_response < last_result):
            return ResumePhase.AWAITING_FOLLOW_UP
        return None

    def _discarded(self) -> bool:
        """Whether the turn ends with a discard's close: its writer discarded it (finished)."""
        if not self.events:  # pragma: no cover - an empty turn is not read this far
            return False
        _, entry = self.events[-1]
        payload = entry.payload
        if isinstance(payload, Cancelled):
            return payload.reason is CancellationReason.DISCARDED
        if isinstance(payload, ToolCallResponse):
            route = recorded_route(entry.metadata)
            return route is not None and route.route == DISCARDED_ROUTE
        return False


def _could_ask(
    asking: Mapping[str | None, dict[str, list[_Call]]], source: InquirySource
) -> Mapping[str, list[_Call]]:
    """The open calls that could have asked from ``source``, by id (see ``_keys``).

    A tool's questions come from calls of that tool, the assistant's from the
    assistant's tools; a user's or another's question, from no tool call.
    """
    if source.kind is SourceKind.TOOL:
        return asking.get(source.name, {})
    if source.kind is SourceKind.ASSISTANT:
        return asking.get(None, {})
    return {}


def _owner(candidates: Mapping[str, list[_Call]]) -> _Call | None:
    """The one call that could have asked, or ``None`` when not exactly one could.

    ``candidates`` are the calls that could have asked, by id (a list: ids
    may repeat within a response). The inquiry's own id is not looked at:
    it is opaque (RFD 082), whatever it looks like.
    """
    only = [call for calls in candidates.values() for call in calls[:2]][:2]
    return only[0] if len(only) == 1 else None


def _open_call(
    call: _Call,
    mine: Iterable[Located],
    answered: Mapping[int, Located],
    pending: Collection[int],
) -> OpenCall:
    """What the stream recorded of an open call: its questions, in order.

    Answers are replayed, and redacted ones asked again, by question id; a
    request recorded without one (JP's) is counted as asked under its own
    inquiry id (a key nothing reads), so that it shows the call ran and
    counts towards its budget of questions.
    """
    inquiries: list[Located] = []
    question_ids: list[str | None] = []
    latest: dict[str, tuple[InquiryRequest, object]] = {}
    asked: Counter[str] = Counter()
    for located in mine:
        request = located.entry.payload
        question_id = request.question.id if isinstance(request, InquiryRequest) else None
        inquiries.append(located)
        question_ids.append(question_id)
        asked[located.id if question_id is None else question_id] += 1
        if question_id is not None and isinstance(request, InquiryRequest):
            response = answered.get(located.index)
            latest[question_id] = (
                request,
                response.entry.payload if response is not None else None,
            )
    waiting = declined = None
    parked: RecordedPark | None = None
    recorded_waiting: RecordedQuestion | None = None
    recorded_declined: tuple[RecordedQuestion, Cancelled] | None = None
    if inquiries:
        last, last_id = inquiries[-1], question_ids[-1]
        request = last.entry.payload
        if isinstance(request, InquiryRequest):
            park = (
                recorded_park(last.entry.metadata) if isinstance(last.entry, EventEntry) else None
            )
            asked_so = RecordedQuestion(
                request=request, question_id=last_id, parked=park is not None
            )
            response = answered.get(last.index)
            closing = response.entry.payload if response is not None else None
            if last.index in pending:
                waiting, recorded_waiting = last, asked_so
                parked = park
            elif (
                response is not None
                and isinstance(closing, Cancelled)
                and closing.reason is not CancellationReason.INTERRUPTED
            ):
                # Closed unanswered, nothing after: the call ended there, its
                # response unwritten. Closed as interrupted (by a continued
                # run that stopped again) it was never put to anyone: it runs.
                declined, recorded_declined = response, (asked_so, closing)
    replay, unfit = _replayed(latest)
    reask = frozenset(qid for qid, (_, value) in latest.items() if isinstance(value, Redacted))
    if not inquiries and isinstance(call.located.entry, EventEntry):
        parked = recorded_park(call.located.entry.metadata)
    return OpenCall(
        request=call.located,
        inquiries=tuple(inquiries),
        question_ids=tuple(question_ids),
        recorded=RecordedCall(
            answers=replay,
            asked=dict(asked),
            waiting=recorded_waiting,
            declined=recorded_declined,
        ),
        reask=reask,
        waiting=waiting,
        declined=declined,
        unfit=tuple(unfit),
        parked=parked,
    )


def _replayed(
    latest: Mapping[str, tuple[InquiryRequest, object]],
) -> tuple[dict[str, JsonValue], list[tuple[str, str]]]:
    """The latest answers that fit their questions, by question id; and those that do not, why."""
    replay: dict[str, JsonValue] = {}
    unfit: list[tuple[str, str]] = []
    for qid, (asked_then, value) in latest.items():
        if isinstance(value, Answered):
            why = _unfit(asked_then, value)
            if why is None:
                replay[qid] = value.answer
            else:
                unfit.append((qid, why))
    return replay, unfit


def _unfit(request: InquiryRequest, response: Answered) -> str | None:
    """Why ``response`` may not be replayed to ``request``'s question (never its value).

    Held to the question exactly as a live answer is: its answer type must
    take it, and a secret is never taken from the record (a real run records
    a secret only as redacted).
    """
    answer_type = request.question.answer_type
    if answer_type.is_secret:
        return "a secret is never recorded as answered (only as redacted), so it is asked again"
    if not answer_type.accepts(response.answer):
        return f"its recorded answer does not fit it (it must be {answer_type.expected()})"
    return None
