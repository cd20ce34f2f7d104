"""What ``inquiry check`` reports about a conversation.

Besides counts by kind, the summary pairs inquiries and tool calls turn by
turn (:mod:`coordinator.stream._pairing`): how many pairs, how many requests still
wait for a response (their turn is blocked on them) and how many responses
answer no request, per turn and in total.

It also reads the last turn (:func:`~coordinator.stream.find_incomplete_turn`):
when it did not finish, the summary says where it stands (RFD 023's status
and phase), which tool calls finished, which are open and what each asked,
which question waits, and what is stray, and how to go on. ``inquiry check``
then exits with :data:`EXIT_INCOMPLETE_TURN` (3) when the turn is *blocked*
on an open tool call or question (what a crash leaves: a provider cannot be
sent it as it is), and with :data:`EXIT_AWAITING_MODEL` (4) when nothing is
open and it waits for the model's response or follow-up (what a stop, or a
scenario turn without a reply, leaves). A conversation a live process is
writing (its writer lock held by a pid :func:`~coordinator.store.holder_of`
checks) is neither: its turn is in progress. ``inquiry check`` says "being
written by pid N", offers no way to continue or discard it, and exits
:data:`EXIT_BEING_WRITTEN` (5), whatever its last turn holds, so that a
monitoring script never calls a live run dead. A lock whose holder cannot be
checked names nobody, and the turn is reported as it stands. ``inquiry run``
(:mod:`coordinator.cli._run_continue`) refuses a blocked turn until it is
continued or discarded (``--discard-turn``: what is open is closed, nothing
deleted; :mod:`coordinator.cli._run_discard`), and the
other until it is continued or ``--new-turn`` begins a turn after it, unless
its own scenario played the turn to its end (a turn without a reply).

A prompt its writer parked (the detached policy ``park``, ours) is told
from one a run left open when it died: the writer marked its request
(``coordinator._recorded_routes``). The report says which question, or
which call's permission, is parked, since when; a parked turn is blocked
(exit status 3) until ``inquiry run --continue-turn`` answers it, or the
inbox (``coordinator.answer_waiting``) answers a parked question. A
recorded answer that does not fit its question (issue 36) is named with
why: it is not replayed, and the question is asked again.

It reads the request links too (RFD 098, :mod:`coordinator.stream._links`):
which user message each answering event answers, how many events carry no
link (written before links: read by position, as before), each link that
binds nothing and why (a provider is not sent that event, nor the other half
of its tool call), and each event whose link names another message than the
one it follows. Links are reported as written: none is repaired.

Turns are numbered from 1, in the text and in the JSON alike (the first
turn is turn 1, as ``inquiry run`` shows it).

Paths are reported as :func:`coordinator._text.shown_path` gives them: a file
name's bytes that are not UTF-8 appear as U+FFFD, as JP shows them.
"""

from __future__ import annotations

import bisect
import io
import os
import shlex
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from coordinator._recorded_routes import recorded_route
from coordinator._text import shown_line, shown_path, shown_reason
from coordinator.cli._command_lines import discard_line
from coordinator.cli._exit_statuses import (
    EXIT_AWAITING_MODEL,
    EXIT_BEING_WRITTEN,
    EXIT_INCOMPLETE_TURN,
)
from coordinator.store import holder_of
from coordinator.stream import (
    EventEntry,
    find_incomplete_turn,
    pair_events,
    provider_exclusions,
)
from machines import Answered, Cancelled, InquiryRequest, Redacted, ToolCallResponse

if TYPE_CHECKING:
    from coordinator.store import Conversation
    from coordinator.stream import (
        ConversationStream,
        IncompleteTurn,
        Located,
        OpenCall,
        Pairing,
    )

__all__ = [
    "EMBEDDER_CONTINUES",
    "EMBEDDER_DISCARDS",
    "EXIT_AWAITING_MODEL",
    "EXIT_BEING_WRITTEN",
    "EXIT_INCOMPLETE_TURN",
    "MAY_HAVE_COMPLETED",
    "TURN_MARKER",
    "exit_status",
    "incomplete_lines",
    "incomplete_summary",
    "pairing_summary",
    "quoted_text",
    "request_link_lines",
    "request_link_summary",
    "summarize",
    "to_null_device",
    "ways_on",
    "writer_lines",
]

#: The ``turn_start`` metadata key under which ``inquiry run`` notes the scenario turn
#: it plays (:mod:`coordinator.cli._run_continue`): a turn without it was written by
#: another program (an embedder, JP), which ``inquiry run`` cannot continue.
TURN_MARKER = "inquiry_run"
#: What an embedder calls to continue a turn (``docs/resume.md``, *The embedding API*).
EMBEDDER_CONTINUES = (
    "ToolCoordinator.continue_turn(find_incomplete_turn(conversation.stream)), "
    "the conversation held with `with conversation:` (docs/resume.md, The embedding API)"
)
#: What an embedder calls to discard a turn (``docs/resume.md``, *The embedding API*).
EMBEDDER_DISCARDS = (
    "ToolCoordinator.discard_turn(find_incomplete_turn(conversation.stream)), "
    "the conversation held with `with conversation:`"
)
#: How much of a question's text a line of the report quotes.
TEXT_SHOWN = 72
#: What is said of an open call whose tool was running when its run stopped
#: (killed): its side effect may be done, and its next run has the same
#: idempotency key (``docs/local-tools.md``), by which a tool can refuse to repeat it.
MAY_HAVE_COMPLETED = (
    "may have completed (its tool was running when the run stopped; "
    "it runs again under the same idempotency key)"
)


def pairing_summary(pairing: Pairing) -> dict[str, Any]:
    """Totals and per-turn counts of one kind of pairing, with the ids left open.

    Each turn (numbered from 1) lists ``pending`` (requests with no response)
    and ``orphaned`` (responses with no request) by id, in stream order.
    """
    return {
        "totals": pairing.counts.as_dict(),
        "turns": [
            {
                "turn": turn.turn + 1,
                **turn.counts.as_dict(),
                "pending_ids": [located.id for located in turn.pending],
                "orphaned_ids": [located.id for located in turn.orphaned],
            }
            for turn in pairing.turns
        ],
    }


def _question(located: Located, question_id: str | None = None) -> dict[str, Any]:
    request = located.entry.payload
    if not isinstance(request, InquiryRequest):  # pragma: no cover - requests only
        raise TypeError("an inquiry request was expected")
    return {
        "inquiry_id": located.id,
        "question_id": question_id or request.question.id,
        "source": request.source.name or request.source.kind.value,
        "answer_type": request.question.answer_type.kind.value,
        "text": request.question.text,
    }


def _open_call(call: OpenCall) -> dict[str, Any]:
    declined = call.declined
    reason = None
    if declined is not None and isinstance(declined.entry.payload, Cancelled):
        reason = declined.entry.payload.reason.as_str()
    waiting = call.recorded.waiting
    parked = call.parked
    return {
        "id": call.tool_call.id,
        "tool": call.tool_call.name,
        "ran": call.ran,
        # Neither waiting for an answer, nor closed, nor parked before it ran: its
        # tool was (or was about to be) running when the run stopped, and may
        # have done its work.
        "may_have_completed": (
            call.waiting is None and declined is None and not call.permission_parked
        ),
        "parked": (
            {"prompt": "run" if call.permission_parked else "tool", "since": parked.since}
            if parked is not None
            else None
        ),
        "unfit": [{"question_id": qid, "why": why} for qid, why in call.unfit],
        "asked": dict(call.recorded.asked),
        "answered": sorted(call.replay),
        "ask_again": sorted(call.reask),
        "waiting": (
            _question(call.waiting, waiting.question_id)
            if call.waiting is not None and waiting is not None
            else None
        ),
        "declined": (
            {"inquiry_id": declined.id, "reason": reason} if declined is not None else None
        ),
    }


def incomplete_summary(incomplete: IncompleteTurn | None) -> dict[str, Any] | None:
    """What is left of the last turn (``turn``: its number from 1) as JSON; ``None``: finished."""
    if incomplete is None:
        return None
    finished = []
    # In the order the calls were made (responses come as tools finish, in any order).
    for pair in sorted(incomplete.finished, key=lambda pair: pair.request.index):
        request, response = pair.request.entry.payload, pair.response.entry.payload
        finished.append(
            {
                "id": pair.id,
                "tool": getattr(request, "name", None),
                "is_error": isinstance(response, ToolCallResponse) and response.is_error,
            }
        )
    first = incomplete.turn.entries[0] if incomplete.turn.entries else None
    marker = first.metadata.get(TURN_MARKER) if isinstance(first, EventEntry) else None
    scenario = marker.get("scenario") if isinstance(marker, dict) else None
    return {
        "turn": incomplete.turn.index + 1,
        # The scenario file's name that inquiry run noted; None: another program wrote it.
        "scenario": scenario if isinstance(scenario, str) else None,
        "status": incomplete.status,
        "phase": incomplete.phase.value,
        "blocked": incomplete.blocked,
        "finished_calls": finished,
        "open_calls": [_open_call(call) for call in incomplete.open],
        "stray_requests": [_question(located) for located in incomplete.stray],
        "stuck_requests": [located.id for located in incomplete.stuck],
    }


def exit_status(summary: dict[str, Any]) -> int:
    """``inquiry check``'s exit status for ``summary``: 0, a live writer's, or the turn's."""
    if summary["being_written_by"] is not None:
        return EXIT_BEING_WRITTEN
    incomplete = summary["incomplete_turn"]
    if incomplete is None:
        return 0
    return EXIT_INCOMPLETE_TURN if incomplete["blocked"] else EXIT_AWAITING_MODEL


def _how_it_goes_on(call: dict[str, Any]) -> str:
    """What continuing the turn does with an open call (one of :func:`_open_call`'s)."""
    if call["declined"] is not None:
        reason = shown_reason(call["declined"]["reason"])
        return f"its question was cancelled ({reason}); it ends so"
    parked = call["parked"]
    if parked is not None and parked["prompt"] == "run":
        return (
            f"its permission to run is parked (detached policy: park) since "
            f"{shown_line(parked['since'])}; asked again when the turn is continued"
        )
    if call["may_have_completed"]:
        return f"{MAY_HAVE_COMPLETED}; runs again"
    return "ran before, runs again" if call["ran"] else "runs (never ran as far as recorded)"


def writer_lines(pid: int | None) -> list[str]:
    """What is said of a live process writing the conversation (``None``: nobody checked is)."""
    if pid is None:
        return []
    return [
        (
            f"  being written by pid {pid}: a live run holds its writer lock; what it shows "
            "is in progress, not left by a run that died"
        )
    ]


def incomplete_lines(
    summary: dict[str, Any] | None, path: str, *, writer: int | None = None
) -> list[str]:
    """The incomplete turn as lines of text (unescaped: the caller shows them).

    With a live ``writer`` (a checked pid), the turn is in progress: it is
    said so, and no way to continue or discard it is offered.
    """
    if summary is None:
        return []
    blocked = "" if summary["blocked"] else "; not blocked (nothing open)"
    if writer is not None:
        head = f"in progress, being written by pid {writer}: {summary['status']}"
    else:
        head = f"did not finish: {summary['status']}"
    lines = [
        (
            f"  last turn (turn {summary['turn']}) {head} "
            f"(RFD 023 phase: {summary['phase']}){blocked}"
        )
    ]
    if summary["finished_calls"]:
        done = ", ".join(
            f"{call['tool']} [{call['id']}]{' (error)' if call['is_error'] else ''}"
            for call in summary["finished_calls"]
        )
        lines.append(f"    finished (kept, not run again): {done}")
    for call in summary["open_calls"]:
        how = _how_it_goes_on(call)
        parked = call["parked"]
        answered = f"; answered: {', '.join(call['answered'])}" if call["answered"] else ""
        again = f"; asked again: {', '.join(call['ask_again'])}" if call["ask_again"] else ""
        lines.append(f"    open: {call['tool']} [{call['id']}]: {how}{answered}{again}")
        lines.extend(
            f"      its recorded answer to {unfit['question_id']} is not replayed: {unfit['why']}"
            for unfit in call["unfit"]
        )
        waiting = call["waiting"]
        if waiting is None:
            continue
        # Parked by its writer (the detached policy), or left open by a run that stopped.
        held = (
            f", parked since {shown_line(parked['since'])} (detached policy: park)"
            if parked is not None
            else ""
        )
        text, kind, inquiry_id = (
            quoted_text(waiting["text"]),
            waiting["answer_type"],
            waiting["inquiry_id"],
        )
        if waiting["question_id"] is None:
            # Recorded without its question id (as JP records): named by what it asks,
            # never by a piece of its inquiry id, which is opaque (RFD 082).
            lines.append(
                f"      waits for {text} ({kind}; recorded without a question id) "
                f"[{inquiry_id}]{held}"
            )
        else:
            lines.append(
                f"      waits for {waiting['question_id']} ({kind}): {text} [{inquiry_id}]{held}"
            )
    lines.extend(
        f"    open question no open call is known to have asked: {quoted_text(stray['text'])} "
        f"({stray['answer_type']}) [{stray['inquiry_id']}] "
        "(closed as interrupted when the turn is continued)"
        for stray in summary["stray_requests"]
    )
    if summary["stuck_requests"]:
        lines.append(
            f"    cannot be closed by continuing: {', '.join(summary['stuck_requests'])} "
            "(their ids were asked again later in the turn)"
        )
    if writer is None:
        lines.extend(ways_on(summary, path))
    return lines


def ways_on(summary: dict[str, Any], path: str) -> list[str]:
    """How to go on from an unfinished turn (one of :func:`incomplete_summary`'s), as lines.

    For any scenario: check knows none, nor the answers file it was played
    with, which a pasted command must repeat (without it, a question the file
    answered would be asked, or cancelled without a terminal). Knowing no
    scenario, it cannot tell whether the turn is one a scenario played and
    ``--continue-turn`` can continue: it offers it for every turn ``inquiry
    run`` played, and ``inquiry run``, which knows, says so when it cannot.
    A turn with no scenario recorded was written by another program: what an
    embedder calls is named instead.
    """
    run = f"inquiry run SCENARIO [--answers FILE] --conversation {shlex.quote(path)}"
    if summary["scenario"] is None:
        lines = [
            (
                "  not played by inquiry run (no scenario recorded): "
                f"an embedder continues it with {EMBEDDER_CONTINUES}"
            )
        ]
        if summary["blocked"]:
            lines.append(
                "  or discard it (what is open is closed, nothing deleted): "
                f"{discard_line(path)}; an embedder discards it with {EMBEDDER_DISCARDS}"
            )
        return lines
    if summary["blocked"]:
        return [
            (
                f"  continue it: {run} --continue-turn; or discard it (what is open is closed, "
                f"nothing deleted) and play a new turn: {run} --discard-turn, or only discard "
                f"it: {discard_line(path)}"
            )
        ]
    return [
        (
            f"  continue it: {run} --continue-turn; "
            f"or leave it unfinished and begin a new turn: {run} --new-turn"
        )
    ]


def request_link_summary(stream: ConversationStream) -> dict[str, Any]:
    """The request links of ``stream`` as JSON: counts, each request's answers, what binds nothing.

    Positions are entry indices (from 0, as ``inquiry sanitize`` names
    entries); turns count from 1. ``requests`` lists each user message that
    answering events link to, with those events' positions (the request each
    event answers); ``elsewhere``, the linked events whose message is not the
    one they follow in their turn; ``unresolved``, each link that binds
    nothing; ``not_sent``, every event a provider is not sent for them (with
    the other halves of their tool calls).
    """
    links = stream.request_links()
    starts = [turn.start for turn in stream.turns()]
    answered_by: dict[int, list[int]] = {}
    for index, request in links.answers.items():
        answered_by.setdefault(request, []).append(index)
    return {
        "linked": len(links.answers),
        "unlinked": links.unlinked,
        "unresolved": len(links.unresolved),
        "requests": [
            {
                "entry": request,
                "turn": bisect.bisect_right(starts, request),
                "event_id": stream[request].event_id,
                "answered_by": answered_by[request],
            }
            for request in sorted(answered_by)
        ],
        "elsewhere": [
            {
                "entry": index,
                "kind": stream[index].kind,
                "answers": links.answers[index],
                "follows": links.positional[index],
            }
            for index in links.elsewhere
        ],
        "unresolved_links": [
            {
                "entry": link.index,
                "kind": link.entry.kind,
                "request_id": link.request_id,
                "problem": link.problem.value,
            }
            for link in links.unresolved
        ],
        "not_sent": [exclusion.index for exclusion in provider_exclusions(stream, links)],
    }


#: What a line says of a link that binds nothing, by its problem's JSON name.
_UNRESOLVED = {
    "missing": "no entry has that id",
    "not_a_chat_request": "the entry with that id is not a chat_request",
    "duplicated": "more than one entry had that id when the file was read",
}


def request_link_lines(summary: dict[str, Any]) -> list[str]:
    """The request links as lines of text (unescaped: the caller shows them)."""
    requests = len(summary["requests"])
    head = (
        f"  request links (RFD 098): {summary['linked']} linked to {requests} "
        f"request{'' if requests == 1 else 's'}, {summary['unlinked']} unlinked (read by "
        f"position), {summary['unresolved']} unresolved"
    )
    lines = [head]
    lines.extend(
        f"    entry {link['entry']} ({link['kind']}): its request '{link['request_id']}' "
        f"binds nothing: {_UNRESOLVED[link['problem']]}"
        for link in summary["unresolved_links"]
    )
    if summary["not_sent"]:
        entries = ", ".join(str(index) for index in summary["not_sent"])
        lines.append(f"    not sent to a model: entries {entries} (a tool call's halves together)")
    for moved in summary["elsewhere"]:
        follows = moved["follows"]
        place = (
            "no request comes before it in its turn"
            if follows is None
            else f"not the one it follows, at entry {follows}"
        )
        lines.append(
            f"    entry {moved['entry']} ({moved['kind']}) answers the request at entry "
            f"{moved['answers']} ({place})"
        )
    return lines


def quoted_text(text: str) -> str:
    """A question's text quoted on one line, escaped, at most :data:`TEXT_SHOWN` characters."""
    line = shown_line(text, TEXT_SHOWN)
    # In double quotes when that spares the reader a quote inside the quotes.
    quote = '"' if "'" in line and '"' not in line else "'"
    return f"{quote}{line}{quote}"


_OUTCOMES = {Answered: "answered", Cancelled: "cancelled", Redacted: "redacted"}


def summarize(conversation: Conversation) -> dict[str, Any]:
    """Counts a person (or a script, as JSON) can check a conversation against."""
    stream = conversation.stream
    pairing = pair_events(stream)
    # Only a checked pid: a lock file's word alone names nobody (the store's rule 6).
    writer = holder_of(conversation.path) if conversation.path is not None else None
    incomplete = incomplete_summary(find_incomplete_turn(stream))
    if incomplete is not None:
        incomplete["discard_with"] = _discard_with(incomplete, conversation, writer)
    kinds: Counter[str] = Counter(entry.kind for entry in stream)
    outcomes: Counter[str] = Counter()
    # Who decided (docs/wire.md): a response another writer made records none.
    routes: Counter[str] = Counter()
    decisions: dict[str, Counter[str]] = {"permission": Counter(), "delivery": Counter()}
    requests = 0
    for entry in stream:
        if not isinstance(entry, EventEntry):
            continue
        payload = entry.payload
        if isinstance(payload, InquiryRequest):
            requests += 1
        elif isinstance(payload, Answered | Cancelled | Redacted):
            outcomes[_OUTCOMES[type(payload)]] += 1
            route = recorded_route(entry.metadata)
            routes[str(route) if route is not None else "not recorded"] += 1
        elif isinstance(payload, ToolCallResponse):
            for decision, counted in decisions.items():
                if (route := recorded_route(entry.metadata, decision)) is not None:
                    counted[str(route)] += 1
    return {
        "path": shown_path(conversation.path) if conversation.path else None,
        "layout": conversation.layout.value,
        "entries": len(stream),
        "turns": stream.turn_count,
        "kinds": dict(sorted(kinds.items())),
        "unknown_kinds": sorted({entry.kind for entry in stream.unknown_entries()}),
        "inquiry_requests": requests,
        "inquiry_responses": sum(outcomes.values()),
        "inquiry_outcomes": {key: outcomes[key] for key in ("answered", "cancelled", "redacted")},
        "inquiry_routes": dict(routes.most_common()),
        "call_decisions": {
            decision: dict(counted.most_common()) for decision, counted in decisions.items()
        },
        "pairing": {
            "inquiries": pairing_summary(pairing.inquiries),
            "tool_calls": pairing_summary(pairing.tool_calls),
        },
        "ids_repaired": {
            "assigned": conversation.id_repairs.assigned,
            "regenerated": conversation.id_repairs.regenerated,
        },
        "request_links": request_link_summary(stream),
        "incomplete_turn": incomplete,
        "being_written_by": writer,
    }


def _discard_with(
    incomplete: dict[str, Any], conversation: Conversation, writer: int | None
) -> dict[str, str | None] | None:
    """How the blocked turn is discarded: the command, and the embedder's call (JSON).

    ``None`` for a turn with nothing open (nothing to close), and for one a
    live process is writing (in progress: nothing is offered).
    """
    if not incomplete["blocked"] or writer is not None:
        return None
    path = conversation.path
    return {
        "command": discard_line(path) if path is not None else None,
        "embedder": EMBEDDER_DISCARDS,
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
