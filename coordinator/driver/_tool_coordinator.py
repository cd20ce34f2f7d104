"""The tool coordinator: the async driver of the machines.

Theory of operation: for the tool calls of one assistant response, a
:class:`~machines.ToolCall` machine is begun per call. The driver then feeds
the machines what happens — executor results, prompt answers and
cancellations, backend answers and failures, an interrupt — and carries out
the effects their steps return:

- tools run in parallel (one asyncio task per run of a tool);
- questions for the model go to the inquiry backend concurrently;
- prompts for the person at the terminal (permission to run, a question,
  whether a result may reach the model) show one at a time, in the order
  they were queued; when its turn comes a queued prompt is checked against
  what the turn remembered meanwhile, and may need no prompt at all. A
  prompt nobody can answer (no terminal, or a prompter standing in for the
  person with no reply) is decided by the tool's detached policy (RFD 049),
  in the machines;
- every response is appended with the route that decided it in its
  ``metadata`` (:mod:`coordinator.driver._routes`).

Rules:

1. The driver constructs no record: every record it appends came from a
   machine step, in the order the step emitted it.
2. Nothing starts outside the driver (a tool, a prompt, a request to the
   model) before what the stream holds is on disk (when the conversation has
   a store): a step that starts or queues such work marks the conversation
   due, and the driver saves it before it next yields to the event loop,
   which is when that work can begin. So a tool call's request is on disk
   before its tool runs, and a question's before it is shown or sent; one
   save covers every step handled in between. A tool call's response is
   saved before the driver next waits for anything (so a finished tool is
   not run again should the process die), and everything when the batch
   ends. Saves before work starts are synced (``Durability.LOGGED``: one
   sync, into the lock file's log); the others survive the process's death
   (``Durability.WRITTEN``), and are synced by the embedder's next save.
3. Whatever happens — an explicit :meth:`ToolCoordinator.cancel`, the run's
   task being cancelled (once or again while it stops), an executor or
   prompter crashing or returning what it must not, the ``on_step``
   callback raising — every open question is closed (``Cancelled(withdrawn)``:
   nobody answered or cancelled it, its call was settled; one recorded
   before a restart and not yet asked again, ``interrupted``) and every tool
   call gets its response before :meth:`ToolCoordinator.run` (or
   :meth:`ToolCoordinator.continue_turn`) returns or raises; a request to
   the model still running is cancelled.
4. A secret answer is revealed only inside the executor. Should a tool echo
   one back (in its output, an error, or a question's text, context,
   options or default), it is masked before anything is recorded
   (:mod:`coordinator.driver._masking`: every spelling its decodings find,
   for as long as the process lives, in every turn and by every coordinator
   over the conversation). An option or default masked so is recorded,
   shown and sent masked; the tool gets back the one it offered. A question
   whose id holds a secret cannot be masked (the tool matches answers by
   it), so its tool call fails instead.
5. A fresh :class:`~machines.TurnState` begins with each turn of the stream
   (a new ``turn_start``); ids of inquiries the turn already holds, say after
   a restart, are never reused.
6. At most ``max_parallel_tools`` tools run at once; the rest wait their
   turn, in the order they were started. A tool waiting for an answer holds
   no place.
7. A secret question with a ``default`` is asked and recorded with it, as
   RFD 082 says (its default is never offered at the prompt); a note saying
   so is added to its recorded context, and the observer is told once per
   tool and question (:class:`~coordinator.driver._observing.SecretDefaultNotice`).
8. A turn that did not finish (its process died) is continued with
   :meth:`ToolCoordinator.continue_turn` (RFD 023, ``docs/resume.md``): its
   stray open questions are closed as ``interrupted``, and each open tool
   call is taken up by its machine from what the stream recorded of it;
   finished calls are never run again.
9. A prompt the detached policy parks (``park``, ours) ends its call's
   machine without a response (rule 3's one exception): the batch ends when
   every call has its response or is parked, the parked ones are told in
   :attr:`ToolCoordinator.parked`, and their requests are marked parked
   before the next save (:mod:`coordinator.driver._parking`). The turn is
   then blocked until :meth:`ToolCoordinator.continue_turn` takes it up,
   which may be handed the parked questions' answers. A cancel leaves a
   parked call parked: it waits for its answer, not for this batch.
10. A prompt on screen for longer than its ``prompt_timeout`` (its
    question's, its tool's, or the default) is timed out: its prompter is
    cancelled and the machine told (``time_out``), closing it or handing it
    to the detached policy (``on_prompt_timeout``). The time is measured
    with ``sleep`` (``asyncio.sleep`` unless given: tests hand in a fake
    clock's), from when the prompt is shown; a tool's own execution limit
    never counts it (a tool that asks has stopped, or waits on the engine).
11. A turn that did not finish may be discarded instead
    (:meth:`ToolCoordinator.discard_turn`, RFD 023's discard): every open
    question is closed ``Cancelled(discarded)`` and every open tool call
    gets one response saying its turn was discarded, appended after what
    the turn holds, each from its machine's ``discard`` row. Nothing is
    deleted or rewritten, nothing runs or is asked; the turn is then
    finished (its last event is a discard's close).
12. What a tool says is taken in only if its record could be written: a
    question or a result the writer would refuse (nested too deeply inside
    its entry, text that is not valid Unicode) fails that call as malformed
    (:mod:`coordinator.wire._recordable`), never the run, so every save
    after it succeeds and the turn can always be continued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, assert_never, cast

import attrs

from coordinator.driver._backend import (
    BackendErrorKind,
    InquiryBackendError,
    InquiryTask,
    inquiry_view,
)
from coordinator.driver._config import ToolsConfig
from coordinator.driver._executors import Completed, ExecutorResult, NeedsInput
from coordinator.driver._masking import (
    SecretMasks,
    UnmaskableQuestionError,
    masks_for,
    unmasked_answers,
)
from coordinator.driver._observing import (
    NOTHING_TOLD,
    SecretDefaultNotice,
    StepFacts,
    Told,
    step_facts,
)
from coordinator.driver._parking import ParkedPrompt, mark_parked
from coordinator.driver._prompting import (
    DeliveryAnswer,
    DeliveryPrompter,
    Deny,
    PermissionAnswer,
    PromptCancelled,
    PromptUnanswered,
    QuestionAnswer,
)
from coordinator.driver._routes import CallRoutes, append_closed
from coordinator.driver._waiting import answer_parked
from coordinator.store import Durability, save_conversation
from coordinator.stream import EventEntry, IncompleteTurn, find_incomplete_turn
from coordinator.wire import unrecordable_question, unrecordable_text
from machines import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_QUESTIONS,
    INQUIRY_MACHINE,
    AskAssistant,
    Cancelled,
    CompleteTool,
    DetachedMode,
    Effect,
    Fired,
    Inquiry,
    InquiryRequest,
    InquirySource,
    InvalidAnswerError,
    JsonValue,
    PromptKind,
    Question,
    QueueDeliveryPrompt,
    QueuePermissionPrompt,
    QueueQuestion,
    RecordedCall,
    RunTool,
    SecretValue,
    ShowDeliveryPrompt,
    ShowPermissionPrompt,
    ShowQuestion,
    Step,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolCallState,
    TurnState,
)
from machines.validators import is_json

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

    from coordinator.driver._backend import InquiryBackend
    from coordinator.driver._executors import Executor
    from coordinator.driver._prompting import Prompter
    from coordinator.store import Conversation
    from coordinator.stream import Located

__all__ = [
    "FDS_PER_TOOL",
    "MOST_PARALLEL_TOOLS",
    "UNOFFERED_DEFAULT_NOTE",
    "DiscardedTurn",
    "ToolCoordinator",
    "default_parallel_tools",
]

_LOG = logging.getLogger("coordinator")

#: File descriptors a running local tool holds in this process (its three
#: pipes), with one to spare for the moment it is started.
FDS_PER_TOOL = 4
#: File descriptors left for everything else: the conversation's files, the
#: terminal, connections to the model.
_RESERVED_FDS = 64
#: The default limit never exceeds this, however many files the process may open.
MOST_PARALLEL_TOOLS = 256
#: The note added to a secret question's recorded context when the tool gave it a default.
UNOFFERED_DEFAULT_NOTE = (
    "[inquiry: this secret question came with a default, recorded here as the tool gave it "
    "(RFD 082); it is not offered at the prompt]"
)


@attrs.frozen(kw_only=True)
class DiscardedTurn:
    """What :meth:`ToolCoordinator.discard_turn` closed in turn ``turn`` (numbered from 1).

    ``questions``: the responses closing its open questions, in the order
    appended; ``tool_calls``: its open calls' responses, in stream order.
    Both empty when nothing was open (the turn waited for the model).
    """

    turn: int
    questions: tuple[Cancelled, ...] = ()
    tool_calls: tuple[ToolCallResponse, ...] = ()


def default_parallel_tools() -> int:
    """How many tools may run at once by default: what the open-file limit leaves room for.

    ``(soft RLIMIT_NOFILE - 64) // 4``, at least 1 and at most
    :data:`MOST_PARALLEL_TOOLS` (where the limit cannot be read, that).
    """
    try:
        import resource  # noqa: PLC0415 - POSIX only

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return MOST_PARALLEL_TOOLS
    if soft < 0:  # RLIM_INFINITY
        return MOST_PARALLEL_TOOLS
    return max(1, min(MOST_PARALLEL_TOOLS, (soft - _RESERVED_FDS) // FDS_PER_TOOL))


@attrs.frozen
class _TimedOut:
    """The prompt was on screen for longer than its timeout, ``after`` (as the tool is told)."""

    after: str


@attrs.frozen
class _ToolDone:
    index: int
    result: ExecutorResult | BaseException


@attrs.frozen
class _PermissionDone:
    index: int
    answer: PermissionAnswer | BaseException | _TimedOut


@attrs.frozen
class _QuestionDone:
    index: int
    inquiry_id: str
    answer: QuestionAnswer | BaseException | _TimedOut


@attrs.frozen
class _DeliveryDone:
    index: int
    answer: DeliveryAnswer | BaseException | _TimedOut


@attrs.frozen
class _BackendDone:
    index: int
    inquiry_id: str
    answered: bool
    value: JsonValue | BaseException


@attrs.frozen
class _Cancel:
    pass


@attrs.frozen
class _Asked:
    """A tool stopped to ask: its question as it is recorded (masked), and what comes with it."""

    question: Question
    source: InquirySource
    accumulated: Mapping[str, Any]
    told: Told


@attrs.frozen
class _Ended:
    """A tool ended: what the model is told (masked)."""

    content: str
    is_error: bool = attrs.field(kw_only=True)


@attrs.frozen
class _Crashed:
    error: BaseException


_Event: TypeAlias = (
    _ToolDone | _PermissionDone | _QuestionDone | _DeliveryDone | _BackendDone | _Cancel | _Crashed
)
#: A prompt waiting for the terminal.
_Queued: TypeAlias = QueuePermissionPrompt | QueueQuestion | QueueDeliveryPrompt
#: What a prompter answers.
_Said = TypeVar("_Said", PermissionAnswer, QuestionAnswer, DeliveryAnswer)


class _Batch:
    """The state of one :meth:`ToolCoordinator.run`."""

    def __init__(self, size: int, parallel_tools: int) -> None:
        self.calls: list[ToolCall] = []
        self.responses: list[ToolCallResponse | None] = [None] * size
        self.events: asyncio.Queue[_Event] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.waiting: deque[tuple[int, _Queued]] = deque()
        #: Per call: who decided what so far, for the routes its responses record.
        self.routes: list[CallRoutes] = []
        self.terminal_holder: int | None = None
        self.pumping = False
        #: The first exception ``on_step`` raised; the callback is not called again.
        self.observer_error: Exception | None = None
        #: Work outside the driver was started or queued since the last save.
        self.save_due = False
        #: A tool call got its response since the last save.
        self.results_due = False
        #: Places for running tools (made here: they belong to one event loop). A
        #: place given back goes to the run that has waited longest (rule 6).
        self.tool_slots = asyncio.Semaphore(parallel_tools)
        #: What the batch parked, in order; and those whose request is not marked yet.
        self.parked: list[ParkedPrompt] = []
        self.unmarked: list[ParkedPrompt] = []
        self._closed_prefix = 0

    def finished(self, task: asyncio.Task[None]) -> None:
        """A task of the batch ended: forget it; an exception it raised goes to the loop."""
        self.tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.events.put_nowait(_Crashed(error))

    @property
    def done(self) -> bool:
        # Asked after every event. A call never reopens, so the calls found
        # closed at the front are not looked at again: a batch costs time
        # linear in its calls, not calls x events.
        while self._closed_prefix < len(self.calls) and self.calls[self._closed_prefix].closed:
            self._closed_prefix += 1
        return self._closed_prefix == len(self.calls)


class ToolCoordinator:
    """Runs the tool calls of assistant responses, resolving every question.

    ``conversation`` receives every record. ``tools`` maps tool names to
    executors; a call to any other name, or to one ``config`` turns off
    (``enable = false``), is answered as unavailable.
    ``prompter`` asks the person; ``terminal`` says whether there is one to
    ask (by default, whether a prompter was given). ``backend`` answers
    questions for the model. ``autosave`` (by default, whether the
    conversation was loaded from or saved to a directory) saves the
    conversation before any tool, prompt or request to the model starts
    (when something was appended since the last save), and after each batch.
    ``max_attempts`` bounds how often one call's tool may ask the same
    question, ``max_questions`` how many it may ask in all (a tool may make
    up a new id each run): the question past either is recorded, closed as
    ``attempts_exhausted``, and the call fails telling the model why.
    ``max_parallel_tools`` bounds how many tools run at once (by default
    :func:`default_parallel_tools`, from the open-file limit); the rest wait.
    ``on_step`` is called once per machine step, after its records are
    appended, with its :class:`~coordinator.driver.StepFacts` (to show
    progress; it never sees a secret, since none is recorded). Should it
    raise, it is not called again in that batch; the batch stops as on
    :meth:`cancel` (every record of the step it was told of is in the
    stream, every call is closed, the conversation saved), and then
    :meth:`run` raises what it raised. ``sleep`` waits a number of seconds
    (``asyncio.sleep`` unless given): a prompt's ``prompt_timeout`` is
    measured with it, so that a test can hand in a fake clock.

    After each batch, :attr:`parked` lists the prompts the detached policy
    ``park`` kept for an answer given later (rule 9): their calls have no
    response among those :meth:`run` returns, and the turn must not go on
    to the model until :meth:`continue_turn` has taken it up.
    """

    def __init__(
        self,
        conversation: Conversation,
        *,
        tools: Mapping[str, Executor],
        config: ToolsConfig | None = None,
        prompter: Prompter | None = None,
        backend: InquiryBackend | None = None,
        terminal: bool | None = None,
        autosave: bool | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_questions: int = DEFAULT_MAX_QUESTIONS,
        system_parts: Sequence[str] = (),
        max_parallel_tools: int | None = None,
        on_step: Callable[[StepFacts], object] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> None:
        """Prepare to run tool calls for ``conversation``."""
        self.conversation = conversation
        self.tools = dict(tools)
        self.config = config or ToolsConfig()
        self.prompter = prompter
        self.backend = backend
        self.terminal = prompter is not None if terminal is None else terminal
        if self.terminal and prompter is None:
            raise ValueError("a terminal needs a prompter to ask the person at it")
        self.autosave = conversation.path is not None if autosave is None else autosave
        self.max_attempts = max_attempts
        self.max_questions = max_questions
        if isinstance(system_parts, str):
            # A str is a sequence of strings too: it would become one part per character.
            raise TypeError("system_parts must be a sequence of strings, not a str: pass (text,)")
        self.system_parts = tuple(system_parts)
        if max_parallel_tools is not None and max_parallel_tools < 1:
            raise ValueError(f"max_parallel_tools must be at least 1, not {max_parallel_tools}")
        self.max_parallel_tools = (
            default_parallel_tools() if max_parallel_tools is None else max_parallel_tools
        )
        self.on_step = on_step
        self._sleep: Callable[[float], Awaitable[object]] = sleep or asyncio.sleep
        #: The prompts the last batch parked (rule 9), in the order they were parked.
        self.parked: tuple[ParkedPrompt, ...] = ()
        self._turn = TurnState()
        self._turn_key: object = None
        # The secrets revealed in this conversation in this process (shared, never forgotten).
        self._masks: SecretMasks = masks_for(conversation)
        # Per (tool call, question): masked option or default -> what the tool offered.
        self._originals: dict[tuple[str, str], Mapping[str, SecretValue]] = {}
        # (tool, question id) whose secret default the observer was told of.
        self._noticed: set[tuple[str, str]] = set()
        # The stream, and its revision, as last saved by this coordinator.
        self._saved: tuple[object, int] | None = None
        self._batch: _Batch | None = None

    @property
    def turn_state(self) -> TurnState:
        """The current turn's attempt counter and caches."""
        return self._turn

    def cancel(self) -> None:
        """Stop the running batch: close every open question and tool call.

        :meth:`run` then returns, every call answered. (Cancelling the task
        that awaits :meth:`run` closes everything the same way, then raises.)
        With no batch running it does nothing: a stop is for the work in
        hand, and carrying it over would silently skip the next batch.
        """
        if self._batch is None:
            return
        self._batch.events.put_nowait(_Cancel())

    async def run(self, tool_calls: Sequence[ToolCallRequest]) -> list[ToolCallResponse]:
        """Run ``tool_calls`` and return their responses, in the order given.

        Each call's ``ToolCallRequest`` must already be in the conversation's
        current turn, without a response: append the assistant's response
        first, as it arrives.
        """
        if self._batch is not None:
            raise RuntimeError("this coordinator is already running a batch")
        requests = list(tool_calls)
        self._check_pending(requests)
        self._enter_turn()

        def begin(batch: _Batch) -> None:
            for index, request in enumerate(requests):
                self._start_call(batch, index, request)

        return await self._drive(len(requests), begin)

    async def continue_turn(
        self,
        incomplete: IncompleteTurn,
        *,
        answers: Mapping[str, JsonValue] | None = None,
        answered_by: str = "embedder",
    ) -> list[ToolCallResponse]:
        """Continue a turn that did not finish; return its open calls' responses, in order.

        ``answers`` answers parked questions first, by inquiry id (each held
        to its recorded question, never a secret: see
        :func:`~coordinator.driver.answer_parked`, whose errors it raises
        before anything is appended), recorded as ``parked_then_answered``
        by ``answered_by``; their calls then run with them.

        ``incomplete`` is :func:`~coordinator.stream.find_incomplete_turn` of
        this coordinator's conversation, as it is now (load the conversation,
        take its writer lock with ``with conversation:``, then find it). What
        it recorded stays: finished calls are not run again. Every open
        question no open call is known to have asked is closed as
        ``interrupted``. Each open call is taken up by its machine
        (:meth:`~machines.ToolCall.resume`): one whose last question was
        closed unanswered gets the response that closing gives, without
        running; one whose recorded questions show it ran runs again, not
        asked permission again, with the answers its questions received (a
        secret, never recorded, is asked again); one with nothing recorded is
        begun as any call (permission per its run mode). A question that
        waited when the turn stopped is adopted when the tool, run again,
        asks exactly it (its one response goes under the recorded id), and
        closed as ``interrupted`` otherwise; a new question gets an id the
        turn does not hold yet. The turn's state (ids, attempt counts) then
        carries on into the batches :meth:`run` plays in the same turn.

        With no open call and nothing stray (the turn waits for the model),
        nothing is done and ``[]`` returned: the model loop continues it.
        Raises ``ValueError`` when ``incomplete`` is not this conversation's
        last turn as it stands, or holds a request nothing appended can close.
        """
        if self._batch is not None:
            raise RuntimeError("this coordinator is already running a batch")
        self._check_incomplete(incomplete)
        if answers:
            answer_parked(self.conversation, answers, by=answered_by, incomplete=incomplete)
            found = find_incomplete_turn(
                self.conversation.stream, assistant_tools=incomplete.assistant_tools
            )
            if found is None:  # pragma: no cover - answering leaves its call open
                return []
            incomplete = found
        if not incomplete.blocked:
            self.parked = ()
            return []
        self._resume_turn(incomplete)
        return await self._drive(
            len(incomplete.open), lambda batch: self._take_up(batch, incomplete)
        )

    def discard_turn(self, incomplete: IncompleteTurn) -> DiscardedTurn:
        """Discard a turn that did not finish: close what is open in it, delete nothing.

        ``incomplete`` is :func:`~coordinator.stream.find_incomplete_turn` of
        this coordinator's conversation as it is now (held with ``with
        conversation:``, as for :meth:`continue_turn`). Every open question
        (one an open call waited on, a parked one, a stray one) is closed
        ``Cancelled(discarded)``, and every open tool call gets one error
        response saying its turn was discarded (:data:`machines.wording.DISCARDED`),
        appended after what the turn holds, each with the route
        ``discarded`` in its metadata (rule 11). Nothing runs, nobody is
        asked, no answer is remembered, no entry is removed or rewritten;
        the conversation is saved (when it autosaves). ``on_step`` is not
        called: what was closed is the returned value. The turn is then
        finished: ``find_incomplete_turn`` returns ``None`` for it, and the
        next turn begins after it.

        A turn with nothing open (it waits for the model's response or
        follow-up) has nothing to close: nothing is appended, and it stays
        unfinished (closing it would take a model response nobody gave).
        Raises ``ValueError`` as :meth:`continue_turn` does when
        ``incomplete`` is not this conversation's last turn as it stands,
        or holds a request nothing appended can close.
        """
        if self._batch is not None:
            raise RuntimeError("this coordinator is already running a batch")
        self._check_incomplete(incomplete, doing="discarded")
        number = incomplete.turn.index + 1
        if not incomplete.blocked:
            return DiscardedTurn(turn=number)
        self._resume_turn(incomplete)
        stream = self.conversation.stream
        steps: list[Step] = []
        for stray in incomplete.stray:
            step = self._close_stray(stray, discarded=True)
            append_closed(stream, step)
            steps.append(step)
        for open_call in incomplete.open:
            request = open_call.tool_call
            call, step = ToolCall.discard(
                turn=self._turn,
                request=request,
                recorded=open_call.recorded,
                run_mode=self.config.run_mode(request.name),
                terminal=self.terminal,
            )
            CallRoutes().append(stream, step, call)
            steps.append(step)
        self._save_changes(Durability.LOGGED)
        records = [record for step in steps for record in step.records]
        return DiscardedTurn(
            turn=number,
            questions=tuple(record for record in records if isinstance(record, Cancelled)),
            tool_calls=tuple(
                effect.response
                for step in steps
                for effect in step.effects
                if isinstance(effect, CompleteTool)
            ),
        )

    async def _drive(self, size: int, start: Callable[[_Batch], None]) -> list[ToolCallResponse]:
        """Start a batch of ``size`` calls with ``start``, and carry it out to the end."""
        # Again at each batch: the conversation may have been saved to a directory
        # since, whose masks (another coordinator's over it) it then shares.
        self._masks = masks_for(self.conversation)
        batch = _Batch(size, self.max_parallel_tools)
        self._batch = batch
        self.parked = ()
        try:
            start(batch)
            while not batch.done:
                if batch.save_due or (batch.results_due and batch.events.empty()):
                    # Before the event loop runs what the steps started (rule 2).
                    durability = Durability.LOGGED if batch.save_due else Durability.WRITTEN
                    batch.save_due = batch.results_due = False
                    self._mark_parked(batch)
                    self._save_changes(durability)
                self._handle(batch, await batch.events.get())
                _raise_observer_error(batch)
        except BaseException:
            self._close_everything(batch)
            self._mark_parked(batch)
            self.parked = tuple(batch.parked)
            self._save_quietly()
            raise
        finally:
            try:
                await self._stop_tasks(batch)
            finally:
                # Reached even when the task is cancelled again while its tools
                # stop: the coordinator must take the next batch all the same.
                self._batch = None
        self._mark_parked(batch)
        self.parked = tuple(batch.parked)
        self._save_changes(Durability.WRITTEN)
        return [response for response in batch.responses if response is not None]

    def _mark_parked(self, batch: _Batch) -> None:
        """Mark the requests parked since the last save as parked (rule 9)."""
        if batch.unmarked:
            mark_parked(self.conversation.stream, batch.unmarked)
            batch.unmarked.clear()

    def _take_up(self, batch: _Batch, incomplete: IncompleteTurn) -> None:
        """Close the stray questions, then take up each open call (see :meth:`continue_turn`)."""
        stream = self.conversation.stream
        for stray in incomplete.stray:
            # No tool call is known to have asked it: no observer step belongs to it.
            for record in self._close_stray(stray, discarded=False).records:
                stream.append(record)
        for index, open_call in enumerate(incomplete.open):
            for question_id, why in open_call.unfit:
                # Said once, by name and why, never the value (issue 36).
                _LOG.warning(
                    "%s (%s): the recorded answer to %s is not replayed (%s)",
                    open_call.tool_call.name,
                    open_call.tool_call.id,
                    question_id,
                    why,
                )
            # Nothing recorded shows a call ran (or was let run): it is begun as any
            # call; one whose permission was parked is asked it again as such.
            recorded = open_call.recorded if open_call.ran else None
            self._start_call(
                batch,
                index,
                open_call.tool_call,
                recorded,
                permission_parked=open_call.permission_parked,
            )

    def _close_stray(self, stray: Located, *, discarded: bool) -> Step:
        """Close ``stray``, a request no open call is known to have asked (its inquiry's step).

        ``discarded``: its turn is discarded (``Cancelled(discarded)``);
        otherwise it is continued (``interrupted``).
        """
        asked = cast("InquiryRequest", stray.entry.payload)
        close = Inquiry.discard_recorded if discarded else Inquiry.supersede_recorded
        _, step = close(
            turn=self._turn,
            request=asked,
            question_id=asked.question.id or asked.id,
            tool_call_id="",
            tool_name=asked.source.name or "",
        )
        return step

    def _start_call(
        self,
        batch: _Batch,
        index: int,
        request: ToolCallRequest,
        recorded: RecordedCall | None = None,
        *,
        permission_parked: bool = False,
    ) -> None:
        """Begin the machine of call ``index`` (take it up from ``recorded``, when given)."""
        name = request.name
        if recorded is None:
            call, step = ToolCall.begin(
                turn=self._turn,
                request=request,
                run_mode=self.config.run_mode(name),
                terminal=self.terminal,
                remembered_permission=self._turn.remembered_permission(name),
                available=self._available(name),
                max_attempts=self.max_attempts,
                max_questions=self.max_questions,
                detached=self.config.detached(name),
                result_mode=self.config.result_mode(name),
                on_timeout=self.config.on_timeout(name),
                permission_parked=permission_parked,
            )
        else:
            call, step = ToolCall.resume(
                turn=self._turn,
                request=request,
                recorded=recorded,
                run_mode=self.config.run_mode(name),
                terminal=self.terminal,
                available=self._available(name),
                max_attempts=self.max_attempts,
                max_questions=self.max_questions,
                detached=self.config.detached(name),
                result_mode=self.config.result_mode(name),
                on_timeout=self.config.on_timeout(name),
            )
        batch.calls.append(call)
        batch.routes.append(CallRoutes())
        self._apply(batch, index, step)
        _raise_observer_error(batch)

    def _available(self, name: str) -> bool:
        """Whether a call to ``name`` can run: an executor for it, and not turned off by name."""
        return name in self.tools and self.config.enabled(name)

    # ------------------------------------------------------------ checks

    def _check_pending(self, requests: Sequence[ToolCallRequest]) -> None:
        turn = self.conversation.stream.current_turn()
        open_requests: dict[str, list[ToolCallRequest]] = {}
        for entry in turn.events if turn is not None else ():
            payload = entry.payload
            if isinstance(payload, ToolCallRequest):
                open_requests.setdefault(payload.id, []).append(payload)
            elif isinstance(payload, ToolCallResponse) and open_requests.get(payload.id):
                open_requests[payload.id].pop(0)
        for request in requests:
            waiting = open_requests.get(request.id, [])
            if request not in waiting:
                raise ValueError(
                    f"tool call {request.id!r} ({request.name}) is not waiting for a response "
                    "in the conversation's current turn: append its ToolCallRequest first"
                )
            waiting.remove(request)

    def _check_incomplete(self, incomplete: IncompleteTurn, *, doing: str = "continued") -> None:
        if not isinstance(incomplete, IncompleteTurn):
            raise TypeError(f"expected an IncompleteTurn, not {type(incomplete).__name__}")
        stream = self.conversation.stream
        turn = incomplete.turn
        if not (
            len(stream) == turn.stop
            and turn.entries
            and stream[turn.start] is turn.entries[0]
            and stream[turn.stop - 1] is turn.entries[-1]
        ):
            raise ValueError(
                "the incomplete turn was read from another state of the conversation: "
                "find it again (find_incomplete_turn) on the conversation as it is now"
            )
        if incomplete.stuck:
            ids = ", ".join(repr(located.id) for located in incomplete.stuck)
            raise ValueError(
                f"the turn holds requests nothing appended can close ({ids}: their ids were "
                f"asked again in a later cycle of the turn); it cannot be {doing}, only "
                "sanitized"
            )

    def _resume_turn(self, incomplete: IncompleteTurn) -> None:
        """Begin the turn's state anew, holding every inquiry id the turn recorded."""
        first = incomplete.turn.entries[0]
        self._turn = TurnState(recorded_ids=incomplete.recorded_inquiry_ids)
        self._turn_key = first.event_id if isinstance(first, EventEntry) else None
        self._originals = {}

    def _enter_turn(self) -> None:
        turn = self.conversation.stream.current_turn()
        first = turn.entries[0] if turn is not None and turn.entries else None
        key = first.event_id if isinstance(first, EventEntry) else None
        if key == self._turn_key and key is not None:
            return
        recorded = [
            entry.payload.id
            for entry in (turn.events if turn is not None else ())
            if isinstance(entry.payload, InquiryRequest)
        ]
        self._turn = TurnState(recorded_ids=recorded)
        self._turn_key = key
        self._originals = {}

    # ----------------------------------------------------------- effects

    def _apply(self, batch: _Batch, index: int, step: Step, told: Told = NOTHING_TOLD) -> None:
        stream = self.conversation.stream
        call = batch.calls[index]
        routes = batch.routes[index]
        # The machine has moved on: every record of the step goes in before
        # anyone is told of one, and a failing callback stops the batch only
        # after the step is carried out whole (see _raise_observer_error).
        # Each goes in with the route the row that emitted it says (_routes).
        entries = routes.append(stream, step, call, told)
        for fired in step.fired:
            if fired.row.detached is DetachedMode.PARK:
                self._parked(batch, call, fired)
        if self.on_step is not None and batch.observer_error is None:
            try:
                self.on_step(step_facts(call, step, entries, told))
            except Exception as error:  # noqa: BLE001 - raised by run once the step is whole
                batch.observer_error = error
        for effect in step.effects:
            self._perform(batch, index, effect)

    @staticmethod
    def _parked(batch: _Batch, call: ToolCall, fired: Fired) -> None:
        """``fired``, a row whose detached column is ``park``, parked a prompt of ``call``."""
        if fired.machine == INQUIRY_MACHINE.name:
            inquiry = call.inquiries[-1]
            parked = ParkedPrompt(
                tool_call_id=call.id,
                tool_name=call.name,
                kind=PromptKind.TOOL,
                inquiry_id=inquiry.id,
                question=inquiry.question,
            )
        else:
            parked = ParkedPrompt(tool_call_id=call.id, tool_name=call.name, kind=PromptKind.RUN)
        batch.parked.append(parked)
        batch.unmarked.append(parked)
        batch.save_due = True

    def _perform(self, batch: _Batch, index: int, effect: Effect) -> None:
        match effect:
            case RunTool():
                batch.save_due = True
                secrets = [v for v in effect.answers.values() if isinstance(v, SecretValue)]
                if secrets:
                    self._masks = masks_for(self.conversation)
                    self._masks.add(secrets)
                work = self._execute(batch, index, unmasked_answers(effect, self._originals))
                self._spawn(batch, work)
            case QueuePermissionPrompt() | QueueQuestion() | QueueDeliveryPrompt():
                batch.save_due = True
                batch.waiting.append((index, effect))
                self._pump(batch)
            case ShowPermissionPrompt():
                batch.save_due = True
                batch.terminal_holder = index
                self._spawn(batch, self._ask_permission(batch, index, effect))
            case ShowQuestion():
                batch.save_due = True
                batch.terminal_holder = index
                self._spawn(batch, self._ask_question(batch, index, effect))
            case ShowDeliveryPrompt():
                batch.save_due = True
                batch.terminal_holder = index
                self._spawn(batch, self._ask_delivery(batch, index, effect))
            case AskAssistant():
                batch.save_due = True
                self._spawn(batch, self._ask_backend(batch, index, effect))
            case CompleteTool():
                batch.responses[index] = effect.response
                batch.results_due = True
            case _:
                assert_never(effect)

    def _pump(self, batch: _Batch) -> None:
        """Give the terminal to the next queued prompt, if it is free."""
        if batch.pumping:
            return  # the loop below picks up what was just queued
        batch.pumping = True
        try:
            while batch.terminal_holder is None and batch.waiting:
                index, queued = batch.waiting.popleft()
                call = batch.calls[index]
                if isinstance(queued, QueuePermissionPrompt):
                    if call.state is not ToolCallState.AWAITING_PERMISSION:
                        continue
                    remembered = self._turn.remembered_permission(call.name)
                    step = call.terminal_ready(remembered_permission=remembered)
                elif isinstance(queued, QueueDeliveryPrompt):
                    if call.state is not ToolCallState.AWAITING_DELIVERY:
                        continue
                    step = call.terminal_ready()
                else:
                    if call.inquiry is None or call.inquiry.id != queued.inquiry_id:
                        continue
                    cached = self._turn.remembered_tool_answer(call.name, queued.question)
                    step = call.terminal_ready(cached_answer=cached)
                self._apply(batch, index, step)
        finally:
            batch.pumping = False

    def _spawn(self, batch: _Batch, work: Coroutine[Any, Any, None]) -> None:
        # The work is the task's own coroutine, not wrapped in another: one
        # coroutine and one callback a run, which a turn of a thousand tool
        # calls feels. A task cancelled before it ran is closed by asyncio.
        task = asyncio.get_running_loop().create_task(work)
        batch.tasks.add(task)
        task.add_done_callback(batch.finished)

    async def _execute(self, batch: _Batch, index: int, effect: RunTool) -> None:
        request = batch.calls[index].request
        if effect.arguments is not request.arguments:  # edited at the permission prompt
            request = ToolCallRequest(
                id=effect.tool_call_id, name=effect.tool_name, arguments=effect.arguments
            )
        result: ExecutorResult | BaseException
        async with batch.tool_slots:
            try:
                result = await self.tools[effect.tool_name].execute(request, effect.answers)
            except asyncio.CancelledError as error:
                if _stopping():
                    raise
                result = error  # the tool's own (it awaited something cancelled): it failed
            except Exception as error:  # noqa: BLE001 - a failing executor fails its tool call
                result = error
        batch.events.put_nowait(_ToolDone(index, result))

    async def _ask_permission(
        self, batch: _Batch, index: int, prompt: ShowPermissionPrompt
    ) -> None:
        limit = self.config.prompt_timeout(prompt.tool_name)
        answer = await self._in_time(limit, lambda: self._prompter().ask_permission(prompt))
        batch.events.put_nowait(_PermissionDone(index, answer))

    async def _ask_question(self, batch: _Batch, index: int, prompt: ShowQuestion) -> None:
        limit = self.config.prompt_timeout(prompt.tool_name, prompt.question.id)
        answer = await self._in_time(limit, lambda: self._prompter().ask_question(prompt))
        batch.events.put_nowait(_QuestionDone(index, prompt.inquiry_id, answer))

    async def _ask_delivery(self, batch: _Batch, index: int, prompt: ShowDeliveryPrompt) -> None:
        limit = self.config.prompt_timeout(prompt.tool_name)
        answer = await self._in_time(limit, lambda: self._delivery_prompter().ask_delivery(prompt))
        batch.events.put_nowait(_DeliveryDone(index, answer))

    async def _in_time(
        self, limit: float | None, ask: Callable[[], Awaitable[_Said]]
    ) -> _Said | BaseException | _TimedOut:
        """What the person said, unless ``limit`` seconds pass first (rule 10).

        Past the limit the prompter is cancelled, and waited for (it gives
        the terminal back), unless it answered in that very moment: an
        answer given is never thrown away.
        """
        if limit is None:
            return await _person_says(ask)
        loop = asyncio.get_running_loop()
        asking = loop.create_task(_person_says(ask))
        timer = loop.create_task(self._wait(limit))
        try:
            await asyncio.wait((asking, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not asking.done():
                asking.cancel()
                # The prompter lets go of the terminal before anything else is shown.
                await asyncio.wait((asking,))
        if asking.cancelled():
            return _TimedOut(f"{limit:g} s")
        return asking.result()

    async def _wait(self, seconds: float) -> None:
        await self._sleep(seconds)

    async def _ask_backend(self, batch: _Batch, index: int, ask: AskAssistant) -> None:
        if self.backend is None:
            error = InquiryBackendError(BackendErrorKind.OTHER, "no inquiry backend is configured")
            failed = _BackendDone(index, ask.inquiry_id, answered=False, value=error)
            batch.events.put_nowait(failed)
            return
        task = InquiryTask(
            inquiry_id=ask.inquiry_id,
            tool_call_id=ask.tool_call_id,
            tool_name=ask.tool_name,
            question=ask.question,
            view=inquiry_view(self.conversation.stream, self.system_parts),
        )
        try:
            value = await self.backend.answer(task)
        except asyncio.CancelledError:
            if _stopping():
                raise  # the batch is being torn down
            # The request itself was cancelled: the user's doing (RFD 082).
            cancelled = InquiryBackendError(BackendErrorKind.CANCELLED, "cancelled")
            batch.events.put_nowait(
                _BackendDone(index, ask.inquiry_id, answered=False, value=cancelled)
            )
            return
        except Exception as error:  # noqa: BLE001 - a failing backend fails its question
            failed = _BackendDone(index, ask.inquiry_id, answered=False, value=error)
            batch.events.put_nowait(failed)
            return
        batch.events.put_nowait(_BackendDone(index, ask.inquiry_id, answered=True, value=value))

    def _prompter(self) -> Prompter:
        if self.prompter is None:  # pragma: no cover - the machines never prompt without one
            raise RuntimeError("no prompter")
        return self.prompter

    def _delivery_prompter(self) -> DeliveryPrompter:
        prompter = self._prompter()
        if not isinstance(prompter, DeliveryPrompter):
            # A prompter written before result delivery: it fails this prompt, logged.
            raise TypeError("the prompter cannot ask whether a result may reach the model")
        return prompter

    # ------------------------------------------------------------ events

    def _handle(self, batch: _Batch, event: _Event) -> None:
        if isinstance(event, _Cancel):
            self._close_everything(batch)
            return
        if isinstance(event, _Crashed):
            raise event.error
        call = batch.calls[event.index]
        if call.closed:
            return  # a late result for a call an interrupt already answered
        if isinstance(event, _ToolDone):
            self._tool_done(batch, event.index, call, event.result)
        elif isinstance(event, _BackendDone):
            if call.inquiry is not None and call.inquiry.id == event.inquiry_id:
                self._apply(batch, event.index, self._backend_done(call, event))
        else:
            self._prompt_done(batch, call, event)

    def _prompt_done(
        self, batch: _Batch, call: ToolCall, event: _PermissionDone | _QuestionDone | _DeliveryDone
    ) -> None:
        """The prompt on screen was answered: the terminal is free for the next one."""
        batch.terminal_holder = None
        if isinstance(event, _PermissionDone):
            if call.state is ToolCallState.ASKING_PERMISSION:
                self._apply(batch, event.index, *self._permission_done(call, event.answer))
        elif isinstance(event, _QuestionDone):
            if call.inquiry is not None and call.inquiry.id == event.inquiry_id:
                self._apply(batch, event.index, *self._question_done(call, event))
        elif call.state is ToolCallState.CONFIRMING_DELIVERY:
            self._apply(batch, event.index, self._delivery_done(call, event.answer))
        self._pump(batch)

    def _tool_done(self, batch: _Batch, index: int, call: ToolCall, result: object) -> None:
        """Feed ``call`` what its tool did (``object``: an executor is the embedder's code)."""
        outcome = self._read_result(call, result)
        if call.state is ToolCallState.RESUMING and not (
            isinstance(outcome, _Asked) and call.adopts(outcome.question, outcome.source)
        ):
            # Not the question that waited when the turn stopped: it is closed first.
            self._apply(batch, index, call.supersede())
        if isinstance(outcome, _Asked):
            facts = self.config.facts(
                call.name, outcome.question, terminal=self.terminal, turn=self._turn
            )
            step = call.needs_input(
                outcome.question,
                source=outcome.source,
                accumulated_answers=outcome.accumulated,
                facts=facts,
            )
            self._apply(batch, index, step, outcome.told)
        else:
            self._apply(batch, index, call.completed(outcome.content, is_error=outcome.is_error))

    def _read_result(self, call: ToolCall, result: object) -> _Asked | _Ended:
        if isinstance(result, BaseException):
            _LOG.warning("tool %s (%s) raised %s", call.name, call.id, type(result).__name__)
            return self._tool_failed(call, f"{type(result).__name__}: {result}")
        if isinstance(result, Completed):
            return self._read_completed(call, result)
        problem = _not_needs_input(result)
        if problem is not None:
            # The executor broke its protocol: only its own call fails.
            return self._tool_failed(call, f"its executor returned {problem}")
        return self._read_question(call, cast("NeedsInput", result))

    def _read_completed(self, call: ToolCall, result: Completed) -> _Ended:
        if type(result.content) is not str or type(result.is_error) is not bool:
            return self._tool_failed(call, "its executor returned a malformed Completed")
        content = self._masks.mask(result.content)
        problem = unrecordable_text(content)
        if problem is not None:
            # Taken in, it would fail every save from here on (rule 11).
            return self._tool_failed(call, f"its result cannot be recorded: {problem}")
        return _Ended(content, is_error=result.is_error)

    def _read_question(self, call: ToolCall, result: NeedsInput) -> _Asked | _Ended:
        self._originals.pop((call.id, result.question.id), None)
        try:
            masked = self._masks.mask_question(result.question)
        except UnmaskableQuestionError as error:
            return self._tool_failed(call, str(error))
        if masked.originals:
            self._originals[call.id, result.question.id] = masked.originals
        # Configuration has the last word on whether only a person may answer (RFD 049).
        asked = self.config.asked(call.name, masked.question)
        problem = unrecordable_question(asked)
        if problem is not None:
            # Taken in, it would fail every save from here on (rule 11).
            return self._tool_failed(call, f"its question cannot be recorded: {problem}")
        question, told = self._secret_default(call, asked)
        return _Asked(question, result.source, result.accumulated_answers, told)

    def _secret_default(self, call: ToolCall, question: Question) -> tuple[Question, Told]:
        """A secret question with a default: asked as it is, with a note in its context.

        RFD 082 records the default verbatim, whatever the answer type (the
        tool author must not put a sensitive value there); the terminal never
        offers it. The observer and the log are told once per tool and question.
        """
        if not question.answer_type.is_secret or question.default is None:
            return question, NOTHING_TOLD
        context = f"{question.context}\n\n{UNOFFERED_DEFAULT_NOTE}" if question.context else None
        question = attrs.evolve(question, context=context or UNOFFERED_DEFAULT_NOTE)
        key = (call.name, question.id)
        if key in self._noticed:
            return question, NOTHING_TOLD
        self._noticed.add(key)
        notice = SecretDefaultNotice(
            tool_call_id=call.id, tool_name=call.name, question_id=question.id
        )
        # The record carries the notice, so that a logging handler can tell
        # it from other warnings (the command line prints notices itself).
        _LOG.warning("%s", notice.message, extra={"notice": notice})
        return question, Told(notices=(notice,))

    def _tool_failed(self, call: ToolCall, problem: str) -> _Ended:
        return _Ended(self._masks.mask(f"Tool '{call.name}' failed: {problem}"), is_error=True)

    def _permission_done(
        self, call: ToolCall, answer: PermissionAnswer | BaseException | _TimedOut
    ) -> tuple[Step, Told]:
        if isinstance(answer, _TimedOut):
            return call.time_out(answer.after), NOTHING_TOLD
        if isinstance(answer, PromptUnanswered):
            return call.unanswered(), NOTHING_TOLD  # nobody to answer: the detached policy
        if isinstance(answer, BaseException):
            if not isinstance(answer, PromptCancelled):
                # The prompter's error may quote anything it saw, a secret included.
                _LOG.warning(
                    "permission prompt for %s failed: %s", call.name, self._masks.mask(str(answer))
                )
            # Declining to answer is declining to run: skipped, nothing remembered.
            return call.deny(), Told(prompt_cancelled=True)
        told = Told(
            remember=answer.remember,
            reason=answer.reason if isinstance(answer, Deny) else None,
            arguments=None if isinstance(answer, Deny) else answer.arguments,
            answered_by=_who(from_file=answer.from_file),
        )
        if isinstance(answer, Deny):
            step = call.deny(
                remember=answer.remember, reason=answer.reason, from_file=answer.from_file
            )
            return step, told
        step = call.permit(
            remember=answer.remember, arguments=answer.arguments, from_file=answer.from_file
        )
        return step, told

    def _question_done(self, call: ToolCall, event: _QuestionDone) -> tuple[Step, Told]:
        answer = event.answer
        if isinstance(answer, _TimedOut):
            return call.time_out_input(event.inquiry_id, answer.after), NOTHING_TOLD
        if isinstance(answer, PromptUnanswered):
            return call.unanswered_input(event.inquiry_id), NOTHING_TOLD
        if isinstance(answer, BaseException):
            if not isinstance(answer, PromptCancelled):
                # RFD 082: a prompter failure cannot be told from a cancellation.
                _LOG.warning("prompt for %s failed: %s", call.name, self._masks.mask(str(answer)))
            return call.cancel_input(event.inquiry_id), NOTHING_TOLD
        try:
            step = call.answer(
                event.inquiry_id,
                answer.value,
                remember=answer.remember,
                from_file=answer.from_file,
            )
        except InvalidAnswerError as error:
            _LOG.warning("the prompter's answer was refused: %s", error)
            return call.cancel_input(event.inquiry_id), NOTHING_TOLD
        answered_by = answer.by or _who(from_file=answer.from_file)
        return step, Told(remember=answer.remember, answered_by=answered_by)

    def _delivery_done(
        self, call: ToolCall, answer: DeliveryAnswer | BaseException | _TimedOut
    ) -> Step:
        if isinstance(answer, _TimedOut):
            return call.time_out(answer.after)
        if isinstance(answer, PromptUnanswered):
            return call.unanswered()
        if isinstance(answer, BaseException):
            if not isinstance(answer, PromptCancelled):
                _LOG.warning(
                    "delivery prompt for %s failed: %s", call.name, self._masks.mask(str(answer))
                )
            return call.cancel_delivery()
        if answer.deliver:
            return call.deliver(from_file=answer.from_file)
        return call.withhold(from_file=answer.from_file)

    def _backend_done(self, call: ToolCall, event: _BackendDone) -> Step:
        value = event.value
        if event.answered:
            try:
                return call.answer(event.inquiry_id, value)  # type: ignore[arg-type]
            except InvalidAnswerError as error:
                return call.fail_input(event.inquiry_id, str(error))
        if isinstance(value, InquiryBackendError) and value.kind is BackendErrorKind.CANCELLED:
            return call.cancel_input(event.inquiry_id)
        if isinstance(value, InquiryBackendError):
            return call.fail_input(event.inquiry_id, self._masks.mask(str(value)))
        return call.fail_input(
            event.inquiry_id, self._masks.mask(f"{type(value).__name__}: {value}")
        )

    # ------------------------------------------------------------ ending

    def _close_everything(self, batch: _Batch) -> None:
        for index, call in enumerate(batch.calls):
            if not call.closed:
                if call.state is ToolCallState.RESUMING:
                    # Stopped before the tool, run again, asked: never put again.
                    self._apply(batch, index, call.supersede())
                self._apply(batch, index, call.interrupt())
        batch.waiting.clear()

    @staticmethod
    async def _stop_tasks(batch: _Batch) -> None:
        tasks = list(batch.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _save(self, durability: Durability = Durability.FILES) -> None:
        if self.autosave:
            save_conversation(self.conversation, durability=durability)
            stream = self.conversation.stream
            self._saved = (stream, stream.revision)

    def _save_changes(self, durability: Durability) -> None:
        """Save, unless nothing was appended since the last save (rule 2)."""
        stream = self.conversation.stream
        saved = self._saved
        if saved is None or saved[0] is not stream or saved[1] != stream.revision:
            self._save(durability)

    def _save_quietly(self) -> None:
        try:
            self._save()
        except Exception:  # noqa: BLE001 - the original error is what propagates
            _LOG.exception("could not save the conversation while closing the batch")


async def _person_says(ask: Callable[[], Awaitable[_Said]]) -> _Said | BaseException:
    """What the prompter answered, or what it raised: either way, the person could not answer.

    A ``CancelledError`` is the prompter's own unless the batch is stopping
    (:func:`_stopping`), when it goes on up.
    """
    try:
        return await ask()
    except asyncio.CancelledError as error:
        if _stopping():
            raise
        return error
    except Exception as error:  # noqa: BLE001 - a failing prompter is one the person did not answer
        return error


def _who(*, from_file: bool) -> str:
    """Who gave an answer at the prompt: the answers file standing in, or the person."""
    return "answers_file" if from_file else "person"


def _raise_observer_error(batch: _Batch) -> None:
    """Raise what ``on_step`` raised, now that the step it was told of is whole."""
    if batch.observer_error is not None:
        raise batch.observer_error


def _stopping() -> bool:
    """Whether the current task is being cancelled, as the batch's end cancels its tasks.

    A ``CancelledError`` raised while nobody cancels the task is the work's
    own (a tool awaited a future something else cancelled): it fails that
    work and must not be taken for the batch stopping, or nothing would
    report the work's end and :meth:`ToolCoordinator.run` would wait for ever.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _not_needs_input(result: object) -> str | None:
    """What keeps ``result`` from being a well-formed NeedsInput (an executor returns anything)."""
    if not isinstance(result, NeedsInput) or not isinstance(result.question, Question):
        return f"{type(result).__name__}, not a result"
    answers: object = result.accumulated_answers
    if not isinstance(result.source, InquirySource) or not (
        isinstance(answers, Mapping)
        and all(
            type(key) is str and (isinstance(value, SecretValue) or is_json(value))
            for key, value in answers.items()
        )
    ):
        return "a malformed NeedsInput"
    return None
