"""Progress and the summary of ``inquiry run``: what happens, printed as it happens, and counted.

Theory of operation: :class:`Progress` is told what happens from three
sides, and prints one line for each: what the play loop appends itself (the
user's message, the assistant's, each tool call), every record the
coordinator appends (through ``on_record``: a question asked, its answer or
cancellation, a tool call's response), and what the players saw (who
answered a question, what was said to a permission prompt, a problem with
the answers file; :mod:`coordinator.cli._run_players` tells it). At the end
it prints the summary: turns, each tool call's outcome, and the questions by
outcome and by who answered them.

Who answered a question is known from the prompter and the backend, and
otherwise from the configuration (a static answer) or the turn's memory (a
remembered ``Y``). Which tool call asked a question is never read from its
inquiry id, which is opaque (RFD 082): the coordinator's turn state counts
each question per tool call, and the call whose count went up is the one
that asked. Whether an answer was remembered is read from the turn's
memory, not from what the person asked for.

Each tool call is named by its tool (``lint #2`` for the second call of
``lint`` in a cycle), each answer by its call and question
(``release · bump``); the internal ids (tool calls', inquiries') are shown
only with ``--verbose``. At a terminal the prompts show the person's
questions, so a question is printed here only when it goes to the model.

Rules:

1. Nothing printed carries a secret: answers are printed from the records,
   which never hold one; a redacted answer prints as ``<secret>``.
2. Text from a tool, a file or a model is printed on one line, with control
   characters replaced (:func:`_one_line`), and cut at 120 characters.
3. Lines go to an :class:`Output` (or the terminal prompter's screen): once
   the reader of standard output has gone, nothing more is printed, and the
   run is told to stop.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

import attrs
import orjson

from coordinator._text import shown_path, shown_text
from coordinator.adapters._terminal import printable
from coordinator.cli._check import to_null_device
from coordinator.driver._prompting import Permit
from machines import (
    Answered,
    Cancelled,
    InquiryRequest,
    Question,
    Redacted,
    SourceKind,
    ToolCallResponse,
)
from machines.wording import (
    INPUT_CANCELLED,
    INTERRUPTED,
    SKIPPED_BY_CONFIGURATION,
    SKIPPED_BY_USER,
    SKIPPED_REMEMBERED,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from coordinator.cli._scenario import Scenario
    from coordinator.driver._prompting import PermissionAnswer
    from coordinator.stream._entries import EventEntry
    from machines import (
        JsonValue,
        ShowPermissionPrompt,
        ShowQuestion,
        ToolCallRequest,
        TurnState,
    )

__all__ = ["Output", "Progress", "tool_call_outcome"]

_SHOWN = 120


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


def _one_line(value: str) -> str:
    text = " ".join(printable(value).split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _json(value: JsonValue | Mapping[str, JsonValue]) -> str:
    return orjson.dumps(value).decode()


def tool_call_outcome(response: ToolCallResponse) -> str:
    """What became of a tool call, from its response: succeeded, failed, skipped..."""
    content = response.content
    if content == INPUT_CANCELLED:
        return "cancelled"
    if content == INTERRUPTED:
        return "interrupted"
    skipped = (SKIPPED_BY_USER, SKIPPED_REMEMBERED, SKIPPED_BY_CONFIGURATION)
    if content in skipped or content.startswith("Tool skipped by user: "):
        return "skipped"
    return "failed" if response.is_error else "succeeded"


@attrs.define
class _Inquiry:
    tool: str
    question: str
    #: The asking call as progress names it, and the line that shows the question.
    call: str = "?"
    line: str = ""
    answered_by: str | None = None
    #: What the person was asked, and whether they asked to remember the answer.
    asked: Question | None = None
    remember: bool = False


class Progress:
    """Prints what happens, and counts it for the summary."""

    def __init__(
        self,
        emit: Callable[[str], None],
        scenario: Scenario,
        *,
        verbose: bool = False,
        prompts_show_questions: bool = False,
    ) -> None:
        """Print with ``emit``.

        ``verbose``: show the internal ids (tool calls', inquiries').
        ``prompts_show_questions``: the person's prompts show each question
        they are asked (at the terminal), so a question is printed here only
        once it is put to the model; otherwise when it is asked.
        """
        self.emit = emit
        self.scenario = scenario
        self.verbose = verbose
        self.prompts_show_questions = prompts_show_questions
        self.calls: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.call_turns: dict[str, int] = {}
        self.cycle: tuple[str, ...] = ()  # the ids of the calls running now
        self.turn_state: Callable[[], TurnState] | None = None
        self._counted: dict[tuple[str, str], int] = {}
        self._counted_in: TurnState | None = None
        self.inquiries: dict[str, _Inquiry] = {}
        self.outcomes: list[tuple[int, str, str]] = []  # (turn, call, outcome)
        self.questions: Counter[str] = Counter()
        self.answered_by: Counter[str] = Counter()
        self.problems: list[str] = []
        self.turn = 0

    # What the runner appends itself.

    def user(self, turn: int, message: str) -> None:
        self.turn = turn
        self.emit(f"turn {turn} · user: {_one_line(message)}")

    def assistant(self, message: str) -> None:
        self.emit(f"  assistant: {_one_line(message)}")

    def cycle_of(self, requests: list[ToolCallRequest]) -> None:
        """The calls of the cycle about to run: each is named by its tool.

        Two calls of one tool in a cycle are told apart by their place among
        its calls (``lint #2``), and with ``verbose`` by their ids too.
        """
        self.cycle = tuple(request.id for request in requests)
        of_tool = Counter(request.name for request in requests)
        seen: Counter[str] = Counter()
        for request in requests:
            self.calls[request.id] = request.name
            self.call_turns[request.id] = self.turn
            seen[request.name] += 1
            label = printable(request.name)
            if of_tool[request.name] > 1:
                label += f" #{seen[request.name]}"
            if self.verbose:
                label += f" [{printable(request.id)}]"
            self.labels[request.id] = label

    def _label(self, call_id: str) -> str:
        return self.labels.get(call_id) or printable(self.calls.get(call_id, "?"))

    def call(self, request: ToolCallRequest) -> None:
        arguments = _one_line(_json(request.arguments))
        self.emit(f"  -> {self._label(request.id)} {arguments}")

    # What the coordinator records.

    def record(self, entry: EventEntry) -> None:
        payload = entry.payload
        if isinstance(payload, InquiryRequest):
            self._request(payload)
        elif isinstance(payload, Answered | Redacted | Cancelled):
            self._response(payload)
        elif isinstance(payload, ToolCallResponse):
            label = self._label(payload.id)
            outcome = tool_call_outcome(payload)
            turn = self.call_turns.get(payload.id, self.turn)
            self.outcomes.append((turn, label, outcome))
            self.emit(f"  <- {label} {outcome}: {_one_line(payload.content)}")

    def _caller(self, request: InquiryRequest) -> str | None:
        """The id of the call that asked ``request``: the one whose count of its question rose.

        The coordinator counts each question per tool call in the turn state
        (that count is what makes inquiry ids unique), and records a request
        right after counting it; the id itself is never parsed.
        """
        question = request.question.id
        if self.turn_state is None or question is None:
            return None
        turn = self.turn_state()
        if turn is not self._counted_in:  # a new turn counts from nothing
            self._counted_in, self._counted = turn, {}
        for call_id in self.cycle:
            counted = turn.attempts(call_id, question)
            if counted > self._counted.get((call_id, question), 0):
                self._counted[call_id, question] = counted
                return call_id
        return None

    def _request(self, request: InquiryRequest) -> None:
        question = request.question
        call_id = self._caller(request)
        tool = self.calls.get(call_id, "?") if call_id is not None else "?"
        call = self._label(call_id) if call_id is not None else "?"
        asked_by = "the assistant" if request.source.kind is SourceKind.ASSISTANT else call
        inquiry_id = f" [{printable(request.id)}]" if self.verbose else ""
        line = (
            f"  ? {asked_by} asks {printable(question.id or '')} "
            f"({question.answer_type.kind.value}): {_one_line(question.text)}{inquiry_id}"
        )
        self.inquiries[request.id] = _Inquiry(
            tool=tool, question=question.id or "?", call=call, line=line
        )
        if not self.prompts_show_questions:
            self.emit(line)

    def _how(self, inquiry: _Inquiry) -> str:
        if inquiry.answered_by is not None:
            return inquiry.answered_by
        config = self.scenario.config.question(inquiry.tool, inquiry.question)
        return "configuration" if config.answer is not None else "remembered"

    def _response(self, response: Answered | Redacted | Cancelled) -> None:
        inquiry = self.inquiries.get(response.id, _Inquiry(tool="?", question="?"))
        # Named, since with tools in parallel it may not follow its question.
        named = f"{inquiry.call} · {printable(inquiry.question)}"
        if isinstance(response, Cancelled):
            reason = response.reason.as_str()
            self.questions[f"cancelled ({reason})"] += 1
            self.emit(f"    x {named}: cancelled ({reason})")
            return
        how = self._how(inquiry)
        self.answered_by[how] += 1
        shown = "<secret>" if isinstance(response, Redacted) else _one_line(_json(response.answer))
        kind = "redacted" if isinstance(response, Redacted) else "answered"
        self.questions[kind] += 1
        remembered = ", remembered for this turn" if self._remembered(inquiry, response) else ""
        words = {
            "person": "by the person",
            "model": "by the model",
            "configuration": "by configuration (a static answer)",
            "remembered": "from this turn's memory (an earlier Y or N)",
        }
        self.emit(f"    = {named}: {kind} {words[how]}: {shown}{remembered}")

    def _remembered(self, inquiry: _Inquiry, response: Answered | Redacted) -> bool:
        """Whether the turn now remembers this answer: what the engine did, not what was asked.

        The engine never remembers a secret, nor (from the terminal) anything
        but a boolean's ``Y`` or ``N``.
        """
        if not inquiry.remember or inquiry.asked is None or not isinstance(response, Answered):
            return False
        if self.turn_state is None:
            return False
        cached = self.turn_state().remembered_tool_answer(inquiry.tool, inquiry.asked)
        return cached is not None and cached.value == response.answer

    # What the prompter and the backend are asked.

    def person_answered(self, prompt: ShowQuestion, *, remember: bool) -> None:
        inquiry = self.inquiries.get(prompt.inquiry_id)
        if inquiry is not None:
            inquiry.answered_by = "person"
            inquiry.asked = prompt.question
            inquiry.remember = remember

    def model_asked(self, inquiry_id: str) -> None:
        inquiry = self.inquiries.get(inquiry_id)
        if inquiry is not None:
            inquiry.answered_by = "model"
            if self.prompts_show_questions:  # no prompt shows it: it is shown now
                self.emit(inquiry.line + " (for the model)")

    def permission(self, prompt: ShowPermissionPrompt, answer: PermissionAnswer | None) -> None:
        remembered = " (remembered for this turn)" if answer and answer.remember else ""
        if answer is None:
            said = "cancelled (skipped)"
        elif isinstance(answer, Permit):
            said = "run" + remembered
            if answer.arguments is not None:
                said += f" with edited arguments {_one_line(_json(answer.arguments))}"
        else:
            said = "skip" + remembered
            if answer.reason:
                said += f": {_one_line(answer.reason)}"
        self.emit(f"  ! permission for {self._label(prompt.tool_call_id)}: {said}")

    def problem(self, message: str) -> None:
        self.problems.append(message)
        self.emit(f"  problem: {message}")

    # The summary.

    def summary(self, *, path: Path, turns: int, completed: int, total_turns: int) -> None:
        self.emit("summary")
        self.emit(
            f"  turns: {completed} of {turns} completed; {shown_path(path)} now holds "
            f"{total_turns} turn{'s' if total_turns != 1 else ''}"
        )
        counts = Counter(outcome for _, _, outcome in self.outcomes)
        self.emit(f"  tool calls: {len(self.outcomes)} ({_counted(counts)})")
        for turn, label, outcome in self.outcomes:
            self.emit(f"    turn {turn} · {label}: {outcome}")
        total = sum(self.questions.values())
        by = f"; answered or redacted: {_counted(self.answered_by)}" if self.answered_by else ""
        self.emit(f"  questions: {total} ({_counted(self.questions)}{by})")


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{count} {name}" for name, count in counts.most_common()) or "none"
