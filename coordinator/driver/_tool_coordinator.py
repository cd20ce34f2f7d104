"""The tool coordinator: the async driver of the machines.

Theory of operation: for the tool calls of one assistant response, a
:class:`~machines.ToolCall` machine is begun per call. The driver then feeds
the machines what happens — executor results, prompt answers and
cancellations, backend answers and failures, an interrupt — and carries out
the effects their steps return:

- tools run in parallel (one asyncio task per run of a tool);
- questions for the model go to the inquiry backend concurrently;
- prompts for the person at the terminal show one at a time, in the order
  they were queued; when its turn comes a queued prompt is checked against
  what the turn remembered meanwhile, and may need no prompt at all.

Rules:

1. The driver constructs no record: every record it appends came from a
   machine step, in the order the step emitted it.
2. Before a question is queued for the terminal or sent to the model, the
   conversation is saved (when it has a store), so its request is on disk
   first. It is saved again when the batch ends.
3. Whatever happens — an explicit :meth:`ToolCoordinator.cancel`, the run's
   task being cancelled (once or again while it stops), an executor or
   prompter crashing or returning what it must not, the ``on_record``
   callback raising — every open question is closed (``Cancelled(user)``)
   and every tool call gets its response before :meth:`ToolCoordinator.run`
   returns or raises.
4. A secret answer is revealed only inside the executor. Should a tool echo
   one back (in its output, an error, or a question's text, context,
   options or default), it is replaced by ``<secret>`` before anything is
   recorded: as it is, as JSON (orjson's, Python's ASCII, Go's HTML-safe)
   or ``repr()`` would have escaped it, and escaped twice so (a wrapper
   encoding a traceback that quoted it), and URL-encoded; the longest first,
   so a secret holding another is masked whole. An option or default masked
   so is recorded, shown and sent masked; the tool gets back the one it
   offered. A question whose id holds a secret cannot be masked (the tool
   matches answers by it), so its tool call fails instead.
5. A fresh :class:`~machines.TurnState` begins with each turn of the stream
   (a new ``turn_start``); ids of inquiries the turn already holds, say after
   a restart, are never reused.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import attrs
import orjson

from coordinator.driver._backend import (
    BackendErrorKind,
    InquiryBackendError,
    InquiryTask,
    inquiry_view,
)
from coordinator.driver._config import ToolsConfig
from coordinator.driver._executors import Completed, ExecutorResult, NeedsInput
from coordinator.driver._prompting import Deny, PermissionAnswer, PromptCancelled, QuestionAnswer
from coordinator.store._store import save_conversation
from coordinator.stream._entries import EventEntry
from machines import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_QUESTIONS,
    AskAssistant,
    CompleteTool,
    InquiryRequest,
    InquirySource,
    InvalidAnswerError,
    JsonValue,
    MachineError,
    Question,
    QueuePermissionPrompt,
    QueueQuestion,
    RunTool,
    SecretValue,
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
    from collections.abc import Callable, Coroutine, Iterable, Sequence

    from coordinator.driver._backend import InquiryBackend
    from coordinator.driver._executors import Executor
    from coordinator.driver._prompting import Prompter
    from coordinator.store._store import Conversation

__all__ = ["ToolCoordinator"]

_LOG = logging.getLogger("coordinator")
_MASK = "<secret>"


@attrs.frozen
class _ToolDone:
    index: int
    result: ExecutorResult | BaseException


@attrs.frozen
class _PermissionDone:
    index: int
    answer: PermissionAnswer | BaseException


@attrs.frozen
class _QuestionDone:
    index: int
    inquiry_id: str
    answer: QuestionAnswer | BaseException


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
class _Crashed:
    error: BaseException


_Event: TypeAlias = _ToolDone | _PermissionDone | _QuestionDone | _BackendDone | _Cancel | _Crashed


class _Batch:
    """The state of one :meth:`ToolCoordinator.run`."""

    def __init__(self, size: int) -> None:
        self.calls: list[ToolCall] = []
        self.responses: list[ToolCallResponse | None] = [None] * size
        self.events: asyncio.Queue[_Event] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.waiting: deque[tuple[int, QueuePermissionPrompt | QueueQuestion]] = deque()
        self.terminal_holder: int | None = None
        self.pumping = False
        #: The first exception ``on_record`` raised; the callback is not called again.
        self.observer_error: Exception | None = None
        self._closed_prefix = 0

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
    executors; a call to any other name is answered as unavailable.
    ``prompter`` asks the person; ``terminal`` says whether there is one to
    ask (by default, whether a prompter was given). ``backend`` answers
    questions for the model. ``autosave`` (by default, whether the
    conversation was loaded from or saved to a directory) saves the
    conversation before each question is shown or sent, and after each batch.
    ``max_attempts`` bounds how often one call's tool may ask the same
    question, ``max_questions`` how many it may ask in all (a tool may make
    up a new id each run): the question past either is recorded, closed as
    ``attempts_exhausted``, and the call fails telling the model why.
    ``on_record`` is called with each entry as it is appended (to show
    progress; it never sees a secret, since none is recorded). Should it
    raise, it is not called again in that batch; the batch stops as on
    :meth:`cancel` (every record of the step it was told of is in the
    stream, every call is closed, the conversation saved), and then
    :meth:`run` raises what it raised.
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
        on_record: Callable[[EventEntry], None] | None = None,
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
        self.on_record = on_record
        self._turn = TurnState()
        self._turn_key: object = None
        # Each spelling of each secret answer revealed this turn, longest first.
        self._masks: tuple[SecretValue, ...] = ()
        # Per (tool call, question): masked option or default -> what the tool offered.
        self._originals: dict[tuple[str, str], dict[str, SecretValue]] = {}
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
        batch = _Batch(len(requests))
        self._batch = batch
        try:
            for index, request in enumerate(requests):
                call, step = ToolCall.begin(
                    turn=self._turn,
                    request=request,
                    run_mode=self.config.run_mode(request.name),
                    terminal=self.terminal,
                    remembered_permission=self._turn.remembered_permission(request.name),
                    available=request.name in self.tools,
                    max_attempts=self.max_attempts,
                    max_questions=self.max_questions,
                )
                batch.calls.append(call)
                self._apply(batch, index, step)
                _raise_observer_error(batch)
            while not batch.done:
                self._handle(batch, await batch.events.get())
                _raise_observer_error(batch)
        except BaseException:
            self._close_everything(batch)
            self._save_quietly()
            raise
        finally:
            try:
                await self._stop_tasks(batch)
            finally:
                # Reached even when the task is cancelled again while its tools
                # stop: the coordinator must take the next batch all the same.
                self._batch = None
        self._save()
        return [response for response in batch.responses if response is not None]

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
        self._masks = ()
        self._originals = {}

    # ----------------------------------------------------------- effects

    def _apply(self, batch: _Batch, index: int, step: Step) -> None:
        stream = self.conversation.stream
        # The machine has moved on: every record of the step goes in before
        # anyone is told of one, and a failing callback stops the batch only
        # after the step is carried out whole (see _raise_observer_error).
        entries = [stream.append(record) for record in step.records]  # type: ignore[arg-type] # steps emit events only
        if self.on_record is not None and batch.observer_error is None:
            for entry in entries:
                try:
                    self.on_record(entry)
                except Exception as error:  # noqa: BLE001 - raised by run once the step is whole
                    batch.observer_error = error
                    break
        if any(isinstance(e, QueueQuestion | ShowQuestion | AskAssistant) for e in step.effects):
            self._save()  # the request is on disk before the question is shown or sent
        for effect in step.effects:
            self._perform(batch, index, effect)

    def _perform(self, batch: _Batch, index: int, effect: object) -> None:
        if isinstance(effect, RunTool):
            self._add_masks(v for v in effect.answers.values() if isinstance(v, SecretValue))
            self._spawn(batch, self._execute(batch, index, self._unmasked_answers(effect)))
        elif isinstance(effect, QueuePermissionPrompt | QueueQuestion):
            batch.waiting.append((index, effect))
            self._pump(batch)
        elif isinstance(effect, ShowPermissionPrompt):
            batch.terminal_holder = index
            self._spawn(batch, self._ask_permission(batch, index, effect))
        elif isinstance(effect, ShowQuestion):
            batch.terminal_holder = index
            self._spawn(batch, self._ask_question(batch, index, effect))
        elif isinstance(effect, AskAssistant):
            self._spawn(batch, self._ask_backend(batch, index, effect))
        elif isinstance(effect, CompleteTool):
            batch.responses[index] = effect.response

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
                else:
                    if call.inquiry is None or call.inquiry.id != queued.inquiry_id:
                        continue
                    cached = self._turn.remembered_tool_answer(call.name, queued.question)
                    step = call.terminal_ready(cached_answer=cached)
                self._apply(batch, index, step)
        finally:
            batch.pumping = False

    def _spawn(self, batch: _Batch, work: Coroutine[Any, Any, None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # noqa: BLE001 - reported to the loop, re-raised there
                batch.events.put_nowait(_Crashed(error))

        task = asyncio.get_running_loop().create_task(guarded())
        batch.tasks.add(task)
        task.add_done_callback(batch.tasks.discard)
        # A task stopped before it ever ran never awaited ``work``: close it, so
        # the coroutine is not reported as "never awaited" when it is collected.
        task.add_done_callback(lambda _: work.close())

    async def _execute(self, batch: _Batch, index: int, effect: RunTool) -> None:
        request = ToolCallRequest(
            id=effect.tool_call_id, name=effect.tool_name, arguments=effect.arguments
        )
        result: ExecutorResult | BaseException
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
        answer: PermissionAnswer | BaseException
        try:
            answer = await self._prompter().ask_permission(prompt)
        except asyncio.CancelledError as error:
            if _stopping():
                raise
            answer = error  # the prompter's own: the person could not answer
        except Exception as error:  # noqa: BLE001 - the person could not answer
            answer = error
        batch.events.put_nowait(_PermissionDone(index, answer))

    async def _ask_question(self, batch: _Batch, index: int, prompt: ShowQuestion) -> None:
        answer: QuestionAnswer | BaseException
        try:
            answer = await self._prompter().ask_question(prompt)
        except asyncio.CancelledError as error:
            if _stopping():
                raise
            answer = error  # the prompter's own: the person could not answer
        except Exception as error:  # noqa: BLE001 - the person could not answer
            answer = error
        batch.events.put_nowait(_QuestionDone(index, prompt.inquiry_id, answer))

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
            self._apply(batch, event.index, self._tool_done(call, event.result))
        elif isinstance(event, _PermissionDone):
            batch.terminal_holder = None
            if call.state is ToolCallState.ASKING_PERMISSION:
                self._apply(batch, event.index, self._permission_done(call, event.answer))
            self._pump(batch)
        elif isinstance(event, _QuestionDone):
            batch.terminal_holder = None
            if call.inquiry is not None and call.inquiry.id == event.inquiry_id:
                self._apply(batch, event.index, self._question_done(call, event))
            self._pump(batch)
        elif call.inquiry is not None and call.inquiry.id == event.inquiry_id:
            self._apply(batch, event.index, self._backend_done(call, event))

    def _tool_done(self, call: ToolCall, result: object) -> Step:
        # ``object``: an executor is the embedder's code, and may return anything.
        if isinstance(result, BaseException):
            _LOG.warning("tool %s (%s) raised %s", call.name, call.id, type(result).__name__)
            return self._tool_failed(call, f"{type(result).__name__}: {result}")
        if isinstance(result, Completed):
            if type(result.content) is not str or type(result.is_error) is not bool:
                return self._tool_failed(call, "its executor returned a malformed Completed")
            return call.completed(self._scrub(result.content), is_error=result.is_error)
        problem = _not_needs_input(result)
        if problem is not None:
            # The executor broke its protocol: only its own call fails.
            return self._tool_failed(call, f"its executor returned {problem}")
        result = cast("NeedsInput", result)
        question = self._scrub_question(call.id, result.question)
        if isinstance(question, str):
            return self._tool_failed(call, question)
        facts = self.config.facts(call.name, question, terminal=self.terminal, turn=self._turn)
        return call.needs_input(
            question,
            source=result.source,
            accumulated_answers=result.accumulated_answers,
            facts=facts,
        )

    def _tool_failed(self, call: ToolCall, problem: str) -> Step:
        return call.completed(self._scrub(f"Tool '{call.name}' failed: {problem}"), is_error=True)

    def _permission_done(self, call: ToolCall, answer: PermissionAnswer | BaseException) -> Step:
        if isinstance(answer, BaseException):
            if not isinstance(answer, PromptCancelled):
                # The prompter's error may quote anything it saw, a secret included.
                _LOG.warning(
                    "permission prompt for %s failed: %s", call.name, self._scrub(str(answer))
                )
            # Declining to answer is declining to run: skipped, nothing remembered.
            return call.deny()
        if isinstance(answer, Deny):
            return call.deny(remember=answer.remember, reason=answer.reason)
        return call.permit(remember=answer.remember, arguments=answer.arguments)

    def _question_done(self, call: ToolCall, event: _QuestionDone) -> Step:
        answer = event.answer
        if isinstance(answer, BaseException):
            if not isinstance(answer, PromptCancelled):
                # RFD 082: a prompter failure cannot be told from a cancellation.
                _LOG.warning("prompt for %s failed: %s", call.name, self._scrub(str(answer)))
            return call.cancel_input(event.inquiry_id)
        try:
            return call.answer(event.inquiry_id, answer.value, remember=answer.remember)
        except InvalidAnswerError as error:
            _LOG.warning("the prompter's answer was refused: %s", error)
            return call.cancel_input(event.inquiry_id)

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
            return call.fail_input(event.inquiry_id, self._scrub(str(value)))
        return call.fail_input(event.inquiry_id, self._scrub(f"{type(value).__name__}: {value}"))

    # ------------------------------------------------------------ ending

    def _close_everything(self, batch: _Batch) -> None:
        for index, call in enumerate(batch.calls):
            if not call.closed:
                self._apply(batch, index, call.interrupt())
        batch.waiting.clear()

    @staticmethod
    async def _stop_tasks(batch: _Batch) -> None:
        tasks = list(batch.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _save(self) -> None:
        if self.autosave:
            save_conversation(self.conversation)

    def _save_quietly(self) -> None:
        try:
            self._save()
        except Exception:  # noqa: BLE001 - the original error is what propagates
            _LOG.exception("could not save the conversation while closing the batch")

    # ---------------------------------------------------------- secrets

    def _add_masks(self, secrets: Iterable[SecretValue]) -> None:
        spellings = {mask.reveal() for mask in self._masks}
        for secret in secrets:
            spellings |= _spellings(secret.reveal())
        spellings.discard("")
        ordered = sorted(spellings, key=len, reverse=True)
        self._masks = tuple(SecretValue(spelling) for spelling in ordered)

    def _scrub(self, text: str) -> str:
        for mask in self._masks:
            text = text.replace(mask.reveal(), _MASK)
        return text

    def _scrub_question(self, call_id: str, question: Question) -> Question | str:
        """``question`` with every secret masked, or why it cannot be asked.

        An option or default that had to be masked is what the record, the
        person and the model see; the tool offered the original, and gets it
        back when that is the answer (:meth:`_unmasked_answers`).
        """
        self._originals.pop((call_id, question.id), None)
        if not self._masks:
            return question
        if self._scrub(question.id) != question.id:
            return f"its question's id echoes a secret answer ({self._scrub(question.id)!r})"
        answer_type = question.answer_type
        originals: dict[str, SecretValue] = {}
        options = []
        for option in answer_type.options:
            masked = self._scrub(option.value)
            if masked != option.value:
                originals[masked] = SecretValue(option.value)
            options.append(
                attrs.evolve(
                    option,
                    value=masked,
                    description=option.description and self._scrub(option.description),
                )
            )
        default = question.default
        if isinstance(default, str) and (masked_default := self._scrub(default)) != default:
            originals[masked_default] = SecretValue(default)
            default = masked_default
        try:
            scrubbed = attrs.evolve(
                question,
                text=self._scrub(question.text),
                context=self._scrub(question.context) if question.context is not None else None,
                # Options and default are masked alike, so a default stays among the options.
                default=default,
                answer_type=answer_type
                if tuple(options) == answer_type.options
                else attrs.evolve(answer_type, options=tuple(options)),
            )
        except (ValueError, MachineError) as error:  # say, two options alike once masked
            return f"its question {question.id!r} cannot be asked without a secret: {error}"
        if originals:
            self._originals[call_id, question.id] = originals
        return scrubbed

    def _unmasked_answers(self, effect: RunTool) -> RunTool:
        """``effect`` with each masked option or default chosen turned back into the tool's."""
        answers = dict(effect.answers)
        for question_id, answer in effect.answers.items():
            originals = self._originals.get((effect.tool_call_id, question_id))
            if originals and isinstance(answer, str) and answer in originals:
                answers[question_id] = originals[answer].reveal()
        return attrs.evolve(effect, answers=answers) if answers != effect.answers else effect


def _raise_observer_error(batch: _Batch) -> None:
    """Raise what ``on_record`` raised, now that the step it was told of is whole."""
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


def _spellings(secret: str) -> set[str]:
    """How ``secret`` may appear in what a tool wrote: as it is, or escaped.

    A tool's text may hold the value encoded as JSON (by ``orjson``, by
    Python's ``json.dumps``, which escapes non-ASCII too, or by Go, which
    also escapes ``&``, ``<`` and ``>``), quoted with ``repr()``, or put in a
    URL; and then be escaped once more (the local tools' wrapper encodes a
    tool's error output as JSON, so a traceback quoting ``repr(token)`` is
    escaped twice). Each escape works character by character, so the
    escaped secret is a substring of the escaped text around it.
    """
    once = {escape(secret) for escape in _ESCAPES}
    twice = {escape(spelling) for spelling in once for escape in _ESCAPES}
    return {secret, urllib.parse.quote(secret, safe=""), *once, *twice}


def _orjson(text: str) -> str:
    return orjson.dumps(text).decode()[1:-1]


def _ascii_json(text: str) -> str:
    return json.dumps(text)[1:-1]


def _html_safe_json(text: str) -> str:
    # Go's encoding/json default.
    escaped = _orjson(text).replace("&", "\\u0026").replace("<", "\\u003c")
    return (
        escaped.replace(">", "\\u003e").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def _repr(text: str) -> str:
    return repr(text)[1:-1]


def _repr_single_quoted(text: str) -> str:
    # repr() chooses double quotes for a value holding a single quote; inside
    # a larger single-quoted repr the quote is escaped instead.
    return _repr(text).replace("'", "\\'")


_ESCAPES = (_orjson, _ascii_json, _html_safe_json, _repr, _repr_single_quoted)


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
