"""Progress of ``inquiry run``: what happens, told as it happens, then the summary.

Theory of operation: :class:`Progress` is told two things. What the runner
does itself (a user message, an assistant message, the calls of a cycle),
and, as the coordinator's ``on_step`` (:meth:`Progress.step`), the typed
facts of every machine step (:class:`~coordinator.driver.StepFacts`).
Everything it says about a tool call comes from those facts:

- the call that asked a question is the step's tool call (the step whose
  records hold the ``InquiryRequest``); an inquiry id is opaque (RFD 082) and
  never read;
- who answered is the question's ``resolution`` (the person, the answers
  file, the model, the configuration, the turn's memory, the detached
  policy's default), and whether the turn now remembers the answer is
  ``question.remembered``;
- where nobody could be asked and the detached policy decided, the mode is
  the row's ``detached`` column (``question.detached``,
  ``permission.detached``, ``delivery.detached``): the first time each kind
  of prompt is decided so, a ``!`` line says which policy decided, once;
- why a question went unanswered is its ``Cancelled`` record's reason, and
  the cause is ``question.failure``, what the tool was told;
- a re-asked question is ``question.attempt`` of ``question.max_attempts``;
- a call's outcome is ``outcome``; the permission line is ``permission``,
  the delivery line ``delivery``; a secret question's default is one of
  ``notices``.

The players (:mod:`coordinator.cli._run_players`) add only what the facts
cannot say: an answers file that does not fit the scenario (:meth:`Progress.problem`).
Nothing here reads a response's text to learn what happened. The one thing
read from a response is how to show it: a failed call's recorded content, when
it is the local-tool protocol's error object (JSON with a ``message``), is
spelled out as its parts, in words (:func:`failure_text`).

Lines:

- ``->`` a tool call and its arguments; ``?`` a question (who asks, its id,
  its type, its text, and ``asked again, attempt 3 of 8`` when it is asked
  again); ``=`` an answer, naming its call and question, and who gave it;
  ``x`` a question closed without an answer, and why; ``!`` a permission
  decision, or something the run must be told (a secret question's default);
  ``<-`` the call's outcome; ``cause:`` under a failure, the whole reason in
  plain words (at most :data:`CAUSE_LIMIT` characters: a longer one keeps its
  beginning and its end, which names the error, and says how much was cut).
- At a terminal a question the person's prompt shows is not printed again
  (a re-ask gets a line of its own); every other question is printed once,
  with ``for the model`` when it goes to the model.
- Grouped by tool call: in a cycle of several calls, a header line
  ``[lint]`` names the call whenever the lines turn to another call; and
  while a call's prompt is open (its question or its permission, at the
  terminal or from the answers file), the lines of the other calls are held
  and printed, grouped by call, once it is answered: an answer is never
  printed under another call's lines. A prompt is never held.

A hidden tool's call (RFD 083's ``style.hidden``: ``ask_user``, the
assistant asking the person) has no ``->`` line and no ``<-`` line when it
succeeds: the person sees its question and their answer, as the assistant's
own words; with ``--verbose``, and when it fails, its lines are printed as
any call's.

Each tool call is named by its tool (``lint #2`` for the second call of
``lint`` in a cycle), each answer by its call and question
(``release · bump``); the internal ids (tool calls', inquiries') are shown
only with ``--verbose``.

Rules:

1. Nothing printed carries a secret: answers are printed from the records,
   which never hold one (a redacted answer prints as ``<secret>``); a cause is
   what was recorded or told the tool, masked by the driver.
2. Text from a tool, a file or a model is printed on one line with its
   control characters escaped, cut at 120 characters (a cause at
   :data:`CAUSE_LIMIT`).
3. Lines go to an :class:`Output` (or the terminal prompter's screen): once
   the reader of standard output has gone, nothing more is printed, and the
   run is told to stop.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO, TypeVar

import attrs
import orjson

from coordinator._text import shown_line, shown_path, shown_reason, shown_text
from coordinator.adapters import printable
from coordinator.cli._check import to_null_device
from coordinator.cli._docs import doc_path
from coordinator.driver import CallOutcome, DetachedMode, PermissionBy, PromptKind, Resolution
from machines import (
    Answered,
    AskAssistant,
    Cancelled,
    InquiryRequest,
    QueueQuestion,
    ShowPermissionPrompt,
    ShowQuestion,
    SourceKind,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path

    from coordinator.driver import Delivery, ParkedPrompt, Permission, QuestionFacts, StepFacts
    from machines import Event, JsonValue, ToolCallRequest

__all__ = ["CAUSE_LIMIT", "Output", "Progress", "failure_text"]

_T = TypeVar("_T")
#: The most of a text from a tool, a file or a model printed on one line (rule 2).
_SHOWN = 120
#: The most of a failure's cause printed; a longer one keeps its first
#: :data:`_CAUSE_HEAD` characters and its end.
CAUSE_LIMIT = 400
_CAUSE_HEAD = 100

#: The outcomes that count as a failed tool call (the exit status says so).
_FAILED_OUTCOMES = frozenset({CallOutcome.FAILED, CallOutcome.UNAVAILABLE})
#: The resolutions of a question closed without an answer.
_UNANSWERED = frozenset(
    {
        Resolution.CANCELLED,
        Resolution.REFUSED,
        Resolution.FAILED,
        Resolution.DENIED,
        Resolution.WITHDRAWN,
        Resolution.TIMED_OUT,
        Resolution.DISCARDED,
    }
)

_ANSWERED_BY = {
    Resolution.PERSON: "by the person",
    Resolution.ANSWERS_FILE: "by the answers file",
    Resolution.MODEL: "by the model",
    Resolution.CONFIGURATION: "by configuration (a static answer)",
    Resolution.REMEMBERED: "from this turn's memory (an earlier Y or N)",
    Resolution.DEFAULT: "with its default (nobody to ask: detached policy defaults)",
    Resolution.PARKED_THEN_ANSWERED: "after it was parked",
}
_WHY_UNANSWERED = {
    Resolution.CANCELLED: "",
    Resolution.FAILED: ": the model could not answer",
    Resolution.REFUSED: ": refused, no answer taken",
    Resolution.DENIED: ": nobody to ask, and the detached policy would not answer for them",
    Resolution.WITHDRAWN: ": its tool call was stopped while it was open",
    Resolution.TIMED_OUT: ": nobody answered it in time (its prompt_timeout)",
    Resolution.DISCARDED: ": its unfinished turn was discarded",
}
#: Who answered a permission prompt when it was shown.
_ASKED = frozenset(
    {PermissionBy.PERSON, PermissionBy.ANSWERS_FILE, PermissionBy.PARKED_THEN_ANSWERED}
)
#: How the once-said policy line names each kind of prompt.
_KIND_NAMES = {
    PromptKind.RUN: "permission to run (run mode ask)",
    PromptKind.DELIVER: "result delivery (result mode ask)",
    PromptKind.TOOL: "questions for the person",
}


class Output:
    """Progress lines on a stream; once its reader has gone, nothing more.

    A closed pipe (``inquiry run ... | head``) is the reader saying it has
    read enough: the stream is pointed at the null device, so that neither
    this nor Python's flush at exit meets the broken pipe again, and
    ``on_close`` (the run's stop) is called once.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.closed = False
        self.on_close: Callable[[], None] = lambda: None

    def __call__(self, line: str) -> None:
        if self.closed:
            return
        try:
            # Every line once more through the one escaping rule: the pieces
            # are escaped where they are put in, and what a message quotes
            # (an answers file's problem, a path) must not slip past that.
            self.out.write(shown_text(line) + "\n")
            self.out.flush()  # progress is for watching, even through a pipe
        except BrokenPipeError:
            self.closed = True
            to_null_device(self.out)
            self.on_close()


def _bounded(value: str) -> str:
    """``value`` on one line, escaped, at most :data:`CAUSE_LIMIT` characters and a marker.

    The middle is cut, not the end: a cause names what failed first and the
    error itself last (an exception's message ends a traceback).
    """
    text = shown_line(value)
    if len(text) <= CAUSE_LIMIT:
        return text
    tail = CAUSE_LIMIT - _CAUSE_HEAD
    cut = len(text) - CAUSE_LIMIT
    return f"{text[:_CAUSE_HEAD]} [... {cut} characters cut ...] {text[-tail:]}"


def _json(value: JsonValue | Mapping[str, JsonValue]) -> str:
    return orjson.dumps(value).decode()


def failure_text(content: str) -> str:
    """A failed call's recorded content, in words.

    The local-tool protocol records a failure as a JSON object (``message``,
    and ``stderr``, ``stdout``, ``trace`` as the tool gave them): it is
    spelled out as its message, then each other part that is not empty
    (``stderr: ...``). Any other content is shown as it is.
    """
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content
    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        return content
    parts = [value["message"]]
    for key, part in value.items():
        if key == "message":
            continue
        if isinstance(part, list):
            said = " / ".join(item if isinstance(item, str) else _json(item) for item in part)
        else:
            said = part if isinstance(part, str) else _json(part)
        if said.strip():
            parts.append(f"{key}: {said}")
    return "; ".join(parts)


def _first(records: Iterable[Event], kind: type[_T]) -> _T | None:
    return next((record for record in records if isinstance(record, kind)), None)


@attrs.define
class _Asked:
    """A question a call has open, and its ``?`` line."""

    #: Who asks what (``lint asks fix``), and how its answer is named (``lint · fix``).
    asks: str
    named: str
    #: The question's id as shown, ``""`` where it is hidden.
    question: str
    kind: str
    text: str
    verbose_id: str
    attempt: str
    #: Printed already, or shown by the person's prompt.
    shown: bool = False
    for_model: bool = False
    #: Sent to the model by the detached policy, nobody being there to ask.
    by_policy: bool = False


class Progress:
    """Prints what happens, and counts it for the summary and the exit status."""

    def __init__(
        self,
        emit: Callable[[str], None],
        *,
        verbose: bool = False,
        prompts_show_questions: bool = False,
        hidden_tools: frozenset[str] = frozenset(),
    ) -> None:
        """Print with ``emit``.

        ``verbose``: show the internal ids (tool calls', inquiries').
        ``prompts_show_questions``: the person's prompts show each question
        they are asked (at the terminal), so such a question is not printed.
        ``hidden_tools``: the tools whose calls are not shown as tool calls.
        """
        self.emit = emit
        self.verbose = verbose
        self.hidden_tools = hidden_tools
        self._hidden_calls: set[str] = set()
        self.prompts_show_questions = prompts_show_questions
        self.labels: dict[str, str] = {}
        self._headers: dict[str, str] = {}
        self.call_turns: dict[str, int] = {}
        self.cycle: tuple[str, ...] = ()  # the ids of the calls running now
        self.outcomes: list[tuple[int, str, CallOutcome]] = []  # (turn, call, outcome)
        self.questions: Counter[str] = Counter()
        self.answered_by: Counter[str] = Counter()
        self.unanswered = 0
        self.problems: list[str] = []
        self.turn = 0
        self._open: dict[str, _Asked] = {}  # each call's open question
        #: Questions recorded before a stop that a continued call takes up (no new request).
        self._taken_up: dict[str, InquiryRequest] = {}
        #: The call whose prompt is open: the other calls' lines wait for it.
        self._prompting: str | None = None
        self._held: list[tuple[str, list[str]]] = []
        self._last: str | None = None  # the call whose lines were printed last
        #: The (kind, mode) pairs the detached policy's line was printed for.
        self._policy_said: set[tuple[PromptKind, DetachedMode]] = set()

    @property
    def failed_calls(self) -> int:
        """How many tool calls failed (or named a tool that is not there)."""
        return sum(outcome in _FAILED_OUTCOMES for _, _, outcome in self.outcomes)

    # What the runner appends itself.

    def user(self, turn: int, message: str) -> None:
        self.turn = turn
        self.emit(f"turn {turn} · user: {shown_line(message, _SHOWN)}")

    def assistant(self, message: str) -> None:
        self.emit(f"  assistant: {shown_line(message, _SHOWN)}")

    def cycle_of(self, requests: list[ToolCallRequest]) -> None:
        """The calls of the cycle about to run: each is named by its tool.

        Two calls of one tool in a cycle are told apart by their place among
        its calls (``lint #2``), and with ``verbose`` by their ids too.
        """
        self.cycle = tuple(request.id for request in requests)
        self._prompting, self._held, self._last = None, [], None
        of_tool = Counter(request.name for request in requests)
        seen: Counter[str] = Counter()
        for request in requests:
            self.call_turns[request.id] = self.turn
            if request.name in self.hidden_tools and not self.verbose:
                self._hidden_calls.add(request.id)
            seen[request.name] += 1
            label = printable(request.name)
            if of_tool[request.name] > 1:
                label += f" #{seen[request.name]}"
            self._headers[request.id] = f"  [{label}]"
            if self.verbose:
                label += f" [{printable(request.id)}]"
            self.labels[request.id] = label

    def _label(self, call_id: str) -> str:
        return self.labels.get(call_id) or printable(call_id)

    def call(self, request: ToolCallRequest) -> None:
        if request.id in self._hidden_calls:
            return
        arguments = shown_line(_json(request.arguments), _SHOWN)
        self.emit(f"  -> {self._label(request.id)} {arguments}")

    def taken_up(self, call: str, request: InquiryRequest) -> None:
        """``call`` waited on ``request`` when its run stopped: its answer is named as asked.

        A continued call whose question is adopted records no new request, so
        the step that takes it up names it from here.
        """
        self._taken_up[call] = request

    def cycle_done(self) -> None:
        """The cycle's batch has ended: whatever is held is printed."""
        self._prompting = None
        self._release()

    # What the coordinator does: one machine step at a time.

    def step(self, facts: StepFacts) -> None:
        """Print what the step did (the coordinator's ``on_step``)."""
        call = facts.tool_call_id
        lines: list[str] = self._policy(facts)
        if facts.permission is not None:
            lines += self._permission(call, facts.permission)
        question = facts.question
        request = _first(facts.records, InquiryRequest)
        if request is None and question is not None and call not in self._open:
            request = self._taken_up.pop(call, None)
        if question is not None and request is not None:
            self._open[call] = self._asked(call, request, question)
        asked = self._open.get(call)
        if asked is not None and question is not None:
            lines += self._routed(asked, facts)
        lines += [f"  ! {printable(notice.message)}" for notice in facts.notices]
        closed = None
        if asked is not None and question is not None and question.resolution is not None:
            closed = self._open.pop(call)
            lines += self._resolved(asked, question, facts.records)
        if facts.delivery is not None:
            lines += self._delivery(call, facts.delivery)
        if facts.outcome is not None:
            lines += self._ended(call, facts, closed)
        prompt = any(isinstance(e, ShowQuestion | ShowPermissionPrompt) for e in facts.effects)
        self._show(call, lines, prompt=prompt)

    def _asked(self, call: str, request: InquiryRequest, question: QuestionFacts) -> _Asked:
        """A question the call has just asked: printed once :meth:`_routed` knows where it goes."""
        asked = request.question
        label = self._label(call)
        shown = printable(question.question_id)
        if request.source.kind is SourceKind.ASSISTANT and not self.verbose:
            # The assistant's own question (ask_user): its id (``answer``) names nothing.
            asks, named, shown = "the assistant asks", label, ""
        else:
            who = "the assistant" if request.source.kind is SourceKind.ASSISTANT else label
            asks, named = f"{who} asks {shown}", f"{label} · {shown}"
        attempt = ""
        if question.attempt > 1:
            attempt = f"asked again, attempt {question.attempt} of {question.max_attempts}"
            if question.attempt > question.max_attempts:
                attempt = (
                    f"asked again, attempt {question.attempt}: "
                    f"more than the {question.max_attempts} allowed"
                )
        return _Asked(
            asks=asks,
            named=named,
            question=shown,
            kind=asked.answer_type.kind.value,
            text=shown_line(asked.text, _SHOWN),
            verbose_id=f" [{printable(request.id)}]" if self.verbose else "",
            attempt=attempt,
        )

    def _routed(self, asked: _Asked, facts: StepFacts) -> list[str]:
        """The ``?`` line, once it is known the person's prompt will not show it."""
        if any(isinstance(effect, AskAssistant) for effect in facts.effects):
            asked.for_model = True
            asked.by_policy = facts.question is not None and facts.question.detached is not None
            return self._question_line(asked)
        to_prompt = any(isinstance(e, ShowQuestion | QueueQuestion) for e in facts.effects)
        if not to_prompt or not self.prompts_show_questions:
            return self._question_line(asked)
        shown = any(isinstance(effect, ShowQuestion) for effect in facts.effects)
        if shown and not asked.shown:
            asked.shown = True  # the prompt shows it; a re-ask is said first
            if asked.attempt:
                return [f"  ? {asked.asks}: {asked.attempt}"]
        return []

    def _question_line(self, asked: _Asked) -> list[str]:
        """The question's ``?`` line, the first time only."""
        if asked.shown:
            return []
        asked.shown = True
        notes = [asked.kind]
        if asked.for_model:
            notes.append("for the model")
        if asked.by_policy:
            notes.append("nobody to ask: detached policy auto")
        if asked.attempt:
            notes.append(asked.attempt)
        notes_shown = "; ".join(notes)
        line = f"  ? {asked.asks} ({notes_shown}): {asked.text}"
        return [line + asked.verbose_id]

    def _resolved(
        self, asked: _Asked, question: QuestionFacts, records: tuple[Event, ...]
    ) -> list[str]:
        """How the question was closed: the ``=`` or ``x`` line (and a cause)."""
        resolution = question.resolution
        assert resolution is not None  # noqa: S101 - the caller checked
        # A question closed before anyone saw it (from memory, refused,
        # cancelled while it waited) is printed now, before what became of it.
        lines = self._question_line(asked)
        named = asked.named
        if resolution is Resolution.PARKED:
            # Not decided: it waits, recorded, for an answer given later (the turn stops).
            self.questions["parked"] += 1
            lines.append(
                f"    ~ {named}: parked (nobody to ask: detached policy park); "
                "it waits for an answer given later"
            )
            return lines
        if resolution is Resolution.INTERRUPTED:
            # Left open by a run that stopped; the continued call asked on
            # without it. No failure of this run: the call goes on.
            self.questions["closed (interrupted)"] += 1
            lines.append(f"    x {named}: closed (interrupted): the continued call did not ask it")
            return lines
        if resolution in _UNANSWERED:
            self.unanswered += 1
            cancelled = _first(records, Cancelled)
            reason = shown_reason(cancelled.reason.as_str()) if cancelled is not None else "?"
            self.questions[f"cancelled ({reason})"] += 1
            lines.append(f"    x {named}: cancelled ({reason}){_WHY_UNANSWERED[resolution]}")
            if resolution is not Resolution.CANCELLED and question.failure:
                lines.append(f"      cause: {_bounded(question.failure)}")
            return lines
        self.answered_by[resolution.value.replace("_", " ")] += 1
        answered = _first(records, Answered)
        if answered is None:  # redacted: no record holds a secret answer
            kind, shown = "redacted", "<secret>"
        else:
            kind, shown = "answered", shown_line(_json(answered.answer), _SHOWN)
        self.questions[kind] += 1
        remembered = ", remembered for this turn" if question.remembered else ""
        lines.append(f"    = {named}: {kind} {_ANSWERED_BY[resolution]}: {shown}{remembered}")
        return lines

    def _ended(self, call: str, facts: StepFacts, closed: _Asked | None) -> list[str]:
        """The call's ``<-`` line, and the cause of a failure.

        ``closed``: the question the same step closed, if it did.
        """
        outcome = facts.outcome
        assert outcome is not None  # noqa: S101 - the caller checked
        label = self._label(call)
        self.outcomes.append((self.call_turns.get(call, self.turn), label, outcome))
        response = _first(facts.records, ToolCallResponse)
        content = response.content if response is not None else ""
        if outcome is CallOutcome.SUCCEEDED:
            if call in self._hidden_calls:
                return []
            return [f"  <- {label} succeeded: {shown_line(content, _SHOWN)}"]
        if outcome not in _FAILED_OUTCOMES:
            return [f"  <- {label} {outcome.value}"]
        question = facts.question
        if closed is not None and question is not None and question.resolution in _UNANSWERED:
            # The step closed the call's question unanswered: its cause is printed above.
            named = f"its question {closed.question}" if closed.question else "its question"
            return [f"  <- {label} {outcome.value}: {named} was not answered"]
        return [f"  <- {label} {outcome.value}", f"    cause: {_bounded(failure_text(content))}"]

    def _policy(self, facts: StepFacts) -> list[str]:
        """The line saying, once per kind of prompt and mode, that the detached policy decided."""
        decided = []
        if facts.permission is not None and facts.permission.detached is not None:
            decided.append((PromptKind.RUN, facts.permission.detached))
        if facts.delivery is not None and facts.delivery.detached is not None:
            decided.append((PromptKind.DELIVER, facts.delivery.detached))
        if facts.question is not None and facts.question.detached is not None:
            decided.append((PromptKind.TOOL, facts.question.detached))
        lines = []
        for kind, mode in decided:
            if (kind, mode) not in self._policy_said:
                self._policy_said.add((kind, mode))
                lines.append(
                    f"  ! nobody can be asked here, so the detached policy decides "
                    f"{_KIND_NAMES[kind]}: {mode.value} ({shown_path(doc_path('headless.md'))})"
                )
        return lines

    def _delivery(self, call: str, delivery: Delivery) -> list[str]:
        """The ``!`` line of a decision to deliver the call's result or withhold it."""
        label = self._label(call)
        said = "delivered" if delivery.delivered else "withheld"
        if delivery.by is PermissionBy.DETACHED_POLICY and delivery.detached is not None:
            return [f"  ! result of {label}: {said} (nobody to ask: {delivery.detached.value})"]
        if delivery.by is PermissionBy.TIMED_OUT:
            return [f"  ! result of {label}: {said}: nobody answered in time (prompt_timeout)"]
        who = "the answers file" if delivery.by is PermissionBy.ANSWERS_FILE else "the person"
        return [f"  ! result of {label}: {said} by {who}"]

    def _permission(self, call: str, permission: Permission) -> list[str]:
        """The ``!`` line of a decision to run the call or skip it (none for its run mode's)."""
        label = self._label(call)
        if permission.by is PermissionBy.DETACHED_POLICY and permission.detached is not None:
            said = "it runs" if permission.run else "it is refused, and fails"
            mode = permission.detached.value
            return [f'  ! {label}: run mode "ask", and nobody to ask ({mode}): {said}']
        if permission.by not in _ASKED:
            return self._permission_unasked(label, permission)
        remembered = " (remembered for this turn)" if permission.remember else ""
        if permission.by is PermissionBy.PARKED_THEN_ANSWERED:
            label += ", parked earlier"
        if permission.by is PermissionBy.ANSWERS_FILE:
            label += ", from the answers file"
        if permission.cancelled:
            said = "cancelled, so it is skipped"
        elif permission.run:
            said = "run" + remembered
            if permission.arguments is not None:
                said += f" with edited arguments {shown_line(_json(permission.arguments), _SHOWN)}"
        else:
            said = "skip" + remembered
            if permission.reason:
                said += f": {shown_line(permission.reason, _SHOWN)}"
        return [f"  ! permission for {label}: {said}"]

    @staticmethod
    def _permission_unasked(label: str, permission: Permission) -> list[str]:
        """The ``!`` line of a permission nobody answered at its prompt (its run mode: none)."""
        if permission.by is PermissionBy.REMEMBERED:
            said = "run" if permission.run else "skip"
            key = "Y" if permission.run else "N"
            return [f"  ! permission for {label}: {said}, from an earlier {key} in this turn"]
        if permission.by is PermissionBy.TIMED_OUT:
            return [f"  ! {label}: nobody answered its permission prompt in time: it does not run"]
        return []  # run mode unattended or skip: the outcome says a skip

    def problem(self, message: str, *, call_id: str | None = None) -> None:
        """The answers file does not fit the scenario (``call_id``: the call it concerns)."""
        self.problems.append(message)
        line = f"  problem: {message}"
        if call_id is None:
            self.emit(line)
        elif not self._held_back(call_id, [line]):
            self._print(call_id, [line])

    # Grouping by tool call.

    def _held_back(self, call: str, lines: list[str]) -> bool:
        """Hold ``lines`` of ``call`` if another call's prompt is open; whether they were."""
        if self._prompting is None or self._prompting == call:
            return False
        if lines:
            self._held.append((call, lines))
        return True

    def _show(self, call: str, lines: list[str], *, prompt: bool) -> None:
        """Print the ``lines`` of a step of ``call``, or hold them while another call prompts.

        ``prompt``: the step opens a prompt for ``call``. The next step of the
        call whose prompt is open is the one that closed it.
        """
        if self._held_back(call, lines):
            return
        self._print(call, lines)
        if self._prompting == call and not prompt:
            # The step after its prompt: it has been answered (or closed).
            self._prompting = None
            self._release()
        if prompt:
            self._prompting = call
            if self.prompts_show_questions:
                self._last = call  # the prompt on screen names the tool itself

    def _print(self, call: str, lines: list[str]) -> None:
        if not lines:
            return
        if len(self.cycle) > 1 and call != self._last:
            self.emit(self._headers.get(call, f"  [{printable(call)}]"))
        self._last = call
        for line in lines:
            self.emit(line)

    def _release(self) -> None:
        """Print the held lines, each call's together, in the order the calls first came."""
        held, self._held = self._held, []
        grouped: dict[str, list[str]] = {}
        for call, lines in held:
            grouped.setdefault(call, []).extend(lines)
        for call, lines in grouped.items():
            self._print(call, lines)

    def parked(self, parked: Iterable[ParkedPrompt]) -> None:
        """What the turn waits for: the prompts the last batch parked, one line each."""
        waiting = list(parked)
        prompts = "prompt was" if len(waiting) == 1 else "prompts were"
        self.emit(
            f"  the turn waits: {len(waiting)} {prompts} parked for an answer given later "
            "(detached policy park)"
        )
        for prompt in waiting:
            label = self._label(prompt.tool_call_id)
            question = prompt.question
            if question is None:
                self.emit(f"    {label}: permission to run")
                continue
            shown = printable(question.id)
            verbose = f" [{printable(prompt.inquiry_id or '')}]" if self.verbose else ""
            kind, text = question.answer_type.kind.value, shown_line(question.text, _SHOWN)
            self.emit(f"    {label} · {shown} ({kind}): {text}{verbose}")

    # The summary.

    def summary(self, *, path: Path, turns: int, completed: int, total_turns: int) -> None:
        self.emit("summary")
        self.emit(
            f"  turns: {completed} of {turns} completed; {shown_path(path)} now holds "
            f"{total_turns} turn{'s' if total_turns != 1 else ''}"
        )
        counts = Counter(outcome.value for _, _, outcome in self.outcomes)
        self.emit(f"  tool calls: {len(self.outcomes)} ({_counted(counts)})")
        for turn, label, outcome in self.outcomes:
            self.emit(f"    turn {turn} · {label}: {outcome.value}")
        total = sum(self.questions.values())
        by = f"; answered or redacted: {_counted(self.answered_by)}" if self.answered_by else ""
        self.emit(f"  questions: {total} ({_counted(self.questions)}{by})")


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{count} {name}" for name, count in counts.most_common()) or "none"
