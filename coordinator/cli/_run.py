"""``inquiry run``: play a scenario's turns through the tool coordinator.

Theory of operation: :func:`run_scenario` reads everything first — the
scenario (:mod:`coordinator.cli._scenario`), the answers file
(:mod:`coordinator.cli._answer_script`), the model backend's configuration and the
conversation directory — and only then writes. For each turn it appends a
``turn_start`` and the user's ``chat_request``; for each cycle the assistant's
``chat_response`` and its ``tool_call_request`` entries, then awaits
:meth:`~coordinator.ToolCoordinator.run`, which resolves every question and
records every step. A closing reply, when the scenario gives one, ends the turn.

Who answers:

- the person: the answers file's ``[[permissions]]`` and ``[[answers]]``
  with ``--answers`` (a scripted person counts as a terminal that is
  present); otherwise the terminal prompter when stdin and stdout are
  terminals; with ``--tty``, the terminal prompter even with ``--answers``
  (whose ``[[model]]`` entries still play the model); nobody with
  ``--no-tty`` and no answers file, or without a terminal, and then
  questions go to the model and secret questions are cancelled
  (``no_prompt_backend``);
- the model: ``--backend`` on the command line, else the answers file's
  ``[[model]]`` entries, else the scenario's ``[backend]`` table, else none
  (questions routed to it are cancelled as ``backend_error``).

Progress is printed as it happens, from the records as the coordinator
appends them (``on_record``) and from what the runner appends itself; a
redacted answer prints as ``<secret>``. Who answered a question is known from
the prompter and the backend (wrapped to watch), and otherwise from the
configuration (a static answer) or the turn's memory (a remembered ``Y``).
Which tool call asked a question is never read from its inquiry id, which is
opaque (RFD 082): the coordinator's turn state counts each question per tool
call, and the call whose count went up is the one that asked. Whether an
answer was remembered is read from the turn's memory, not from what the
person asked for.

Rules:

1. Nothing is written before every input has been read and checked; an
   unreadable conversation is left exactly as it was.
2. The conversation is saved after each user message and at the end of each
   turn (the coordinator saves in between, before every question).
3. Exit status: 0 when every turn completed; 1 when one did not (interrupted,
   or the answers file had no reply for a prompt, or one that does not fit
   it), with the reason as one line on stderr; 2 when an input cannot be
   read or the conversation cannot be written.
4. Nothing printed carries a secret: answers are printed from the records,
   which never hold one.
5. When standard output is closed under the run (``inquiry run ... | head``),
   nothing more is printed there (it is pointed at the null device, as the
   Python documentation advises) and the run stops as on Ctrl-C: every open
   tool call and question is closed and saved, and the exit status is 1.
6. At the end, the answers file's entries no prompt used are named.
7. Local tools run without the secrets the run reads in their environment
   (the answers file's ``value_env`` variables, the model backend's API key
   variable): what a tool prints is recorded, with only the secrets that
   call was given masked in it.
8. Seeding the workspace never writes outside it nor through a link a tool
   left there, and never copies the conversation into it
   (:func:`_seed_workspace`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import shutil
import signal
import stat
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs
import orjson

from coordinator._errors import ConfigError, CoordinatorError, os_reason
from coordinator._text import shown_path
from coordinator.adapters._builtins import builtin_executors
from coordinator.adapters._local_tools import LocalToolExecutor
from coordinator.adapters._terminal import TerminalPrompter, TerminalUnavailableError, printable
from coordinator.adapters.providers import (
    ModelInquiryBackend,
    ProviderConfigError,
    backend_from_config,
)
from coordinator.adapters.providers._config import key_variable
from coordinator.cli._answer_script import AnswerScript, load_answer_script
from coordinator.cli._check import to_null_device
from coordinator.cli._scenario import load_scenario
from coordinator.driver._backend import InquiryBackend, InquiryBackendError
from coordinator.driver._prompting import (
    Permit,
    PromptCancelled,
    Prompter,
    ScriptedPrompter,
    ScriptExhaustedError,
)
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._toml_fields import join_key, name_key
from coordinator.driver._tool_coordinator import ToolCoordinator
from coordinator.store._store import Conversation, load_conversation, save_conversation
from machines import (
    Answered,
    AnswerKind,
    Cancelled,
    ChatRequest,
    ChatResponse,
    InquiryRequest,
    Question,
    Redacted,
    SecretValue,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines._json import json_type
from machines.wording import (
    INPUT_CANCELLED,
    INTERRUPTED,
    SKIPPED_BY_CONFIGURATION,
    SKIPPED_BY_USER,
    SKIPPED_REMEMBERED,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from coordinator.cli._scenario import Cycle, Scenario
    from coordinator.driver._backend import InquiryTask
    from coordinator.driver._executors import Executor
    from coordinator.driver._prompting import PermissionAnswer, QuestionAnswer
    from coordinator.stream._entries import EventEntry
    from machines import JsonValue, ShowPermissionPrompt, ShowQuestion, ToolAnswer, TurnState

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "RunError",
    "RunOptions",
    "RunResult",
    "run_scenario",
    "tool_call_outcome",
]

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_UNREADABLE = 2

#: The workspace the scenario's local tools run in, inside the conversation directory.
WORKSPACE = "workspace"
_SHOWN = 120


class RunError(CoordinatorError):
    """``inquiry run`` cannot start or go on; ``status`` is the exit status to give."""

    def __init__(self, message: str, *, status: int = EXIT_UNREADABLE) -> None:
        """Say what is wrong; ``status`` 2 (unreadable or unwritable) unless told otherwise."""
        self.status = status
        super().__init__(message)


@attrs.frozen(kw_only=True)
class RunOptions:
    """What ``inquiry run`` was asked to do.

    ``interactive``: ``None`` to prompt when stdin and stdout are terminals and
    there is no answers file, ``True`` (``--tty``) to prompt whatever the
    answers file says, ``False`` (``--no-tty``) never to prompt. ``backend``:
    the command line's backend configuration (``backend_from_config`` keys),
    which replaces the scenario's.
    """

    scenario: Path
    conversation: Path
    answers: Path | None = None
    interactive: bool | None = None
    backend: Mapping[str, object] | None = None


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run went."""

    turns: int
    completed: int
    problems: tuple[str, ...] = ()
    interrupted: bool = False
    #: Standard output was closed under the run, which then stopped.
    output_closed: bool = False

    @property
    def status(self) -> int:
        """The exit status: 0 when every turn completed and nothing went wrong."""
        if self.interrupted or self.output_closed or self.problems or self.completed < self.turns:
            return EXIT_INCOMPLETE
        return EXIT_OK

    @property
    def reason(self) -> str | None:
        """Why the run did not complete, in one line (``None`` when it did)."""
        if self.output_closed:
            return (
                f"standard output was closed: stopped after {self.completed} of {self.turns} turns"
            )
        if self.interrupted:
            return f"interrupted: {self.completed} of {self.turns} turns completed"
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return self.problems[0] + more
        if self.completed < self.turns:
            return f"only {self.completed} of {self.turns} turns completed"
        return None


# ------------------------------------------------------------------ progress


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
    answered_by: str | None = None
    #: What the person was asked, and whether they asked to remember the answer.
    asked: Question | None = None
    remember: bool = False


class _Progress:
    """Prints what happens, and counts it for the summary."""

    def __init__(self, emit: Callable[[str], None], scenario: Scenario) -> None:
        self.emit = emit
        self.scenario = scenario
        self.calls: dict[str, str] = {}
        self.call_turns: dict[str, int] = {}
        self.cycle: tuple[str, ...] = ()  # the ids of the calls running now
        self.turn_state: Callable[[], TurnState] | None = None
        self._counted: dict[tuple[str, str], int] = {}
        self._counted_in: TurnState | None = None
        self.inquiries: dict[str, _Inquiry] = {}
        self.outcomes: list[tuple[int, str, str, str]] = []
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
        self.cycle = tuple(request.id for request in requests)
        for request in requests:
            self.calls[request.id] = request.name
            self.call_turns[request.id] = self.turn

    def call(self, request: ToolCallRequest) -> None:
        self.emit(f"  -> {request.name} [{request.id}] {_one_line(_json(request.arguments))}")

    # What the coordinator records.

    def record(self, entry: EventEntry) -> None:
        payload = entry.payload
        if isinstance(payload, InquiryRequest):
            self._request(payload)
        elif isinstance(payload, Answered | Redacted | Cancelled):
            self._response(payload)
        elif isinstance(payload, ToolCallResponse):
            name = self.calls.get(payload.id, "?")
            outcome = tool_call_outcome(payload)
            turn = self.call_turns.get(payload.id, self.turn)
            self.outcomes.append((turn, name, payload.id, outcome))
            self.emit(f"  <- {name} [{payload.id}] {outcome}: {_one_line(payload.content)}")

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
        self.inquiries[request.id] = _Inquiry(tool=tool, question=question.id or "?")
        asked_by = "the assistant" if request.source.kind is SourceKind.ASSISTANT else tool
        self.emit(
            f"  ? {asked_by} asks {question.id or ''} ({question.answer_type.kind.value}): "
            f"{_one_line(question.text)} [{request.id}]"
        )

    def _how(self, inquiry: _Inquiry) -> str:
        if inquiry.answered_by is not None:
            return inquiry.answered_by
        config = self.scenario.config.question(inquiry.tool, inquiry.question)
        return "configuration" if config.answer is not None else "remembered"

    def _response(self, response: Answered | Redacted | Cancelled) -> None:
        inquiry = self.inquiries.get(response.id, _Inquiry(tool="?", question="?"))
        if isinstance(response, Cancelled):
            reason = response.reason.as_str()
            self.questions[f"cancelled ({reason})"] += 1
            self.emit(f"    x cancelled ({reason})")
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
        self.emit(f"    = {kind} {words[how]}: {shown}{remembered}")

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
        self.emit(f"  ! permission for {prompt.tool_name} [{prompt.tool_call_id}]: {said}")

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
        counts = Counter(outcome for _, _, _, outcome in self.outcomes)
        self.emit(f"  tool calls: {len(self.outcomes)} ({_counted(counts)})")
        for turn, name, call_id, outcome in self.outcomes:
            self.emit(f"    turn {turn} · {name} [{call_id}]: {outcome}")
        total = sum(self.questions.values())
        by = f"; answered or redacted: {_counted(self.answered_by)}" if self.answered_by else ""
        self.emit(f"  questions: {total} ({_counted(self.questions)}{by})")


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{count} {name}" for name, count in counts.most_common()) or "none"


# ----------------------------------------------------- watching who answers


class _WatchedPrompter:
    """Passes prompts to the real prompter, noting who answered what."""

    def __init__(self, prompter: Prompter, progress: _Progress) -> None:
        self.prompter = prompter
        self.progress = progress

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        try:
            answer = await self.prompter.ask_permission(prompt)
        except PromptCancelled:
            self.progress.permission(prompt, None)
            raise
        except ScriptExhaustedError as error:
            self.progress.problem(f"the answers file: {error} (the tool call was skipped)")
            raise PromptCancelled from None  # reported here; the coordinator need not log it
        self.progress.permission(prompt, answer)
        return answer

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        scripted = self.prompter if isinstance(self.prompter, ScriptedPrompter) else None
        unused = set(scripted.unused_answers) if scripted is not None else set()
        try:
            answer = await self.prompter.ask_question(prompt)
        except ScriptExhaustedError as error:
            self.progress.problem(f"the answers file: {error} (the question was cancelled)")
            raise PromptCancelled from None  # reported here; the coordinator need not log it
        if scripted is not None and not _fits(prompt.question, answer.value):
            # The file does not fit the prompt, as when it has no reply: a
            # problem of the run, recorded as that is. (A person at the
            # terminal cannot type an answer that does not fit.)
            taken = sorted(unused - set(scripted.unused_answers))
            entry = f"answers[{taken[0]}]" if taken else "an entry"
            self.progress.problem(
                f"the answers file's {entry} does not fit {_asked(prompt)}: "
                f"{_misfit(prompt.question, answer.value)} (the question was cancelled)"
            )
            raise PromptCancelled
        self.progress.person_answered(prompt, remember=answer.remember)
        return answer


def _asked(prompt: ShowQuestion) -> str:
    return f"question {prompt.question.id!r} of tool {prompt.tool_name!r}"


def _fits(question: Question, value: ToolAnswer) -> bool:
    """Whether the engine takes ``value`` as an answer to ``question`` (it checks again)."""
    return question.answer_type.accepts(value)


def _misfit(question: Question, value: ToolAnswer) -> str:
    """What the answer must be, and what the file gave: its kind, never a secret's value.

    A wrong option of a select is quoted, since it is the clue to the slip;
    anything given for a secret question, and anything read with
    ``value_env``, is named by its kind only.
    """
    answer_type = question.answer_type
    if isinstance(value, SecretValue):
        given = "a secret read with `value_env`"
    elif answer_type.kind is AnswerKind.SELECT and isinstance(value, str):
        given = repr(_one_line(value))
    else:
        given = json_type(value, toml=True)
    return f"the answer must be {answer_type.expected()}, not {given}"


class _WatchedBackend:
    """Passes questions to the real backend, noting which it was asked."""

    def __init__(self, backend: InquiryBackend, progress: _Progress) -> None:
        self.backend = backend
        self.progress = progress

    async def answer(self, task: InquiryTask) -> JsonValue:
        self.progress.model_asked(task.inquiry_id)
        scripted = self.backend if isinstance(self.backend, ScriptedInquiryBackend) else None
        before = scripted.remaining if scripted is not None else 0
        try:
            return await self.backend.answer(task)
        except InquiryBackendError as error:
            if scripted is not None and scripted.remaining == before:
                # Nothing in the script matched: the answers file does not fit the scenario.
                self.progress.problem(f"the answers file's [[model]]: {error}")
            raise


# ------------------------------------------------------------------- setup


@attrs.frozen(kw_only=True)
class _Model:
    """Who plays the model, how to describe it, and where its API key is read from."""

    backend: InquiryBackend | None
    description: str
    #: The environment variable holding the API key it uses, if it uses one.
    key_variable: str | None = None


def _backend(
    options: RunOptions, scenario: Scenario, scripted: ScriptedInquiryBackend | None
) -> _Model:
    """The model backend, and how to describe it."""
    config: Mapping[str, object] | None
    if options.backend is not None:
        config, where = options.backend, "the command line"
    elif scripted is not None:
        return _Model(backend=scripted, description="scripted ([[model]] of the answers file)")
    elif scenario.backend is not None:
        config, where = scenario.backend, "the scenario"
    else:
        return _Model(
            backend=None,
            description="none (questions for the model are cancelled as backend_error)",
        )
    try:
        backend = backend_from_config(config, tools=scenario.definitions)
    except ProviderConfigError as error:
        origin = shown_path(scenario.path)
        if error.tool is not None:
            key = name_key(origin, "tools", error.tool, what="a tool name")
            raise ConfigError(origin, key, error.problem) from None
        if options.backend is not None:
            key = f"--{error.key.replace('_', '-')}" if error.key else "--backend"
            raise RunError(f"{key}: {error.problem}") from None
        key = join_key("backend", error.key) if error.key else "backend"
        raise ConfigError(origin, key, error.problem) from None
    return _Model(
        backend=backend,
        description=f"{config.get('provider')} {config.get('model')} (from {where})",
        key_variable=key_variable(config),  # checked by backend_from_config just now
    )


def _tool_environment(
    script: AnswerScript | None, model: _Model
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment local tools run with, and the variables left out of it.

    This process's environment, less the secrets the run reads: a tool may
    print whatever it can read, and what it prints is recorded before anything
    could mask it. Left out are the answers file's ``value_env`` variables (the
    person's secret answers) and the variable holding the API key of the model
    backend this run uses; other providers' keys stay, as a tool may need its own.
    """
    hidden = set(script.secret_variables if script is not None else ())
    if model.key_variable is not None:
        hidden.add(model.key_variable)
    environment = {name: value for name, value in os.environ.items() if name not in hidden}
    return environment, tuple(sorted(name for name in hidden if name in os.environ))


def _open_conversation(path: Path, scenario: Scenario) -> tuple[Conversation, bool]:
    """The conversation at ``path`` (created when missing or empty), and whether it is new.

    A new conversation's default title names the scenario file as every path
    is shown (U+FFFD for a byte that is not UTF-8): the title is saved as JSON,
    which cannot hold the lone surrogates such a name decodes to.
    """
    try:
        exists = path.exists()
        if exists and not path.is_dir():
            raise RunError(f"{shown_path(path)}: is not a directory")
        empty = not exists or not any(path.iterdir())
    except OSError as error:  # a name too long, a loop of links, no permission: what the OS says
        raise RunError(f"{shown_path(path)}: cannot be read: {os_reason(error)}") from None
    if empty:
        title = scenario.title or f"inquiry run: {shown_path(scenario.path.stem)}"
        # base_config.json marks the current layout; the engine configures nothing in it.
        return Conversation.new(metadata={"title": title}, base_config={}), True
    return load_conversation(path), False


def _check_seed(scenario: Scenario, conversation: Path) -> None:
    """Refuse a seed inside the conversation: its files would be copied to its own tools.

    (A conversation inside the seed is left out of the copy instead; see
    :func:`_seed_workspace`.)
    """
    if scenario.seed is None:
        return
    if _real(scenario.seed).is_relative_to(_real(conversation)):
        raise ConfigError(
            shown_path(scenario.path),
            "workspace.seed",
            f"{shown_path(scenario.seed)} lies inside the conversation "
            f"{shown_path(conversation)}, whose files are not for its tools: "
            "seed from a directory outside it",
        )


def _seed_workspace(scenario: Scenario, workspace: Path, conversation: Path) -> None:
    """Copy the scenario's seed files into the workspace, replacing earlier copies.

    The workspace is the tools' to change, and a tool may have left a link
    anywhere in it (``notes.txt -> ../events.json``): seeding never writes
    outside the workspace nor through a link. The workspace itself is made a
    real directory, seed or not (a link there is replaced), and a link where
    the seed puts a file or a directory is replaced by it (the link, not
    what it points to); a file is copied to a new file that then takes the
    old one's name, so not even a hard link to another file is written
    through. A file where the seed has a directory is replaced by it too; a
    directory where the seed has a file is an error (exit 2), since
    replacing it would delete what the tools put there. Whatever else the
    workspace holds is left as it is.

    From the seed: a file is copied (a link to a file, the file it names);
    a link to a directory is not followed, so a link to a parent cannot loop;
    nothing inside the conversation is copied, so a seed that holds the
    conversation (``seed = "."``, ``-c ./conversation``) neither copies it
    into its own workspace nor shows ``events.json`` to the tools.
    """
    try:
        _real_directory(workspace)
        if scenario.seed is not None:
            _copy_seed(scenario.seed, workspace, leave_out=_real(conversation))
    except OSError as error:
        where = error.filename if error.filename is not None else workspace
        raise RunError(
            f"{shown_path(where)}: cannot seed the workspace: {os_reason(error)}"
        ) from None


def _real_directory(path: Path) -> None:
    """Make ``path`` a directory of its own: a link or file there is replaced, never followed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        path.mkdir()
        return
    if stat.S_ISDIR(mode):
        return
    path.unlink()
    path.mkdir()


def _copy_seed(source: Path, target: Path, *, leave_out: Path) -> None:
    """Copy the directory ``source`` into the real directory ``target``, less ``leave_out``."""
    with os.scandir(source) as scanned:
        entries = sorted(scanned, key=lambda entry: entry.name)
    for entry in entries:
        path, destination = Path(entry.path), target / entry.name
        if entry.is_dir(follow_symlinks=False):
            if _real(path) == leave_out:
                continue
            _real_directory(destination)
            _copy_seed(path, destination, leave_out=leave_out)
        elif entry.is_file() and not _real(path).is_relative_to(leave_out):
            _replace_file(path, destination)


def _real(path: Path) -> Path:
    """``path`` with every link resolved; unlike ``Path.resolve``, never raising on a loop."""
    return Path(os.path.realpath(path))


def _replace_file(source: Path, target: Path) -> None:
    """Copy ``source`` to a new file beside ``target``, then give it ``target``'s name.

    Contents only, not modes: a seed in a read-only checkout still gives the
    tools files they can edit, and copies that the next run can replace.
    """
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(target).st_mode):
            problem = "is a directory where the seed has a file: remove it"
            raise IsADirectoryError(errno.EISDIR, problem, str(target))
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.seeding")
    # O_EXCL: a fresh file, never one (or a link) that is already there.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as copy, source.open("rb") as original:
            shutil.copyfileobj(original, copy)
        temporary.replace(target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _executors(
    scenario: Scenario, workspace: Path, conversation_id: str, env: Mapping[str, str]
) -> dict[str, Executor]:
    builtins = builtin_executors()
    executors: dict[str, Executor] = {}
    for name, tool in scenario.tools.items():
        if tool.local is not None:
            executors[name] = LocalToolExecutor(
                tool.local, root=workspace, conversation_id=conversation_id, env=env
            )
        elif tool.builtin is not None:
            executors[name] = builtins[tool.builtin]
    return executors


class _Output:
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
            self.out.write(line + "\n")
            self.out.flush()  # progress is for watching, even through a pipe
        except BrokenPipeError:
            self.closed = True
            to_null_device(self.out)
            self.on_close()


@attrs.frozen(kw_only=True)
class _Person:
    """Who plays the person, and where progress is printed."""

    prompter: Prompter | None
    description: str
    emit: Callable[[str], None]
    interactive: bool = False
    #: Where progress goes when it is not the terminal prompter's screen.
    output: _Output | None = None


def _person(
    options: RunOptions, script: AnswerScript | None, *, terminal: bool, out: TextIO
) -> _Person:
    if options.interactive and not terminal:
        raise RunError("--tty: standard input and output are not a terminal")
    if options.interactive or (options.interactive is None and script is None and terminal):
        try:
            prompter = TerminalPrompter()
        except TerminalUnavailableError as error:
            raise RunError(f"{error} (or run with --answers FILE or --no-tty)") from None
        # Progress goes above the prompt on screen, never through it.
        return _Person(
            prompter=prompter,
            description="you, at this terminal",
            emit=prompter.show,
            interactive=True,
        )

    write = _Output(out)
    if script is not None:
        return _Person(
            prompter=script.prompter(),
            description=f"scripted ({shown_path(script.path)})",
            emit=write,
            output=write,
        )
    return _Person(
        prompter=None,
        description="nobody (no terminal): questions go to the model, secrets are cancelled",
        emit=write,
        output=write,
    )


# -------------------------------------------------------------------- run


@contextlib.contextmanager
def _on_interrupt(handler: Callable[[], None]) -> Iterator[None]:
    """Call ``handler`` on SIGINT (Ctrl-C while no prompt is on screen) while inside."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def run_scenario(
    options: RunOptions,
    *,
    out: TextIO,
    terminal: bool | None = None,
) -> RunResult:
    """Play ``options.scenario`` into ``options.conversation``, printing progress on ``out``.

    ``terminal`` says whether stdin and ``out`` are terminals (by default, it
    is asked of them). Raises :class:`RunError` or another
    :class:`~coordinator.CoordinatorError` when an input cannot be read or
    the conversation cannot be written (and then nothing was written, or the
    error says what was).
    """
    scenario = load_scenario(options.scenario)
    script = load_answer_script(options.answers) if options.answers is not None else None
    if terminal is None:
        terminal = sys.stdin.isatty() and out.isatty()
    conversation, created = _open_conversation(options.conversation, scenario)
    _check_seed(scenario, options.conversation)
    person = _person(options, script, terminal=terminal, out=out)
    prompter, emit = person.prompter, person.emit
    progress = _Progress(emit, scenario)

    scripted_model = script.backend() if script else None
    model = _backend(options, scenario, scripted_model)
    backend = model.backend
    tool_environment, left_out = _tool_environment(script, model)
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(backend, ModelInquiryBackend):
            stack.push_async_callback(backend.aclose)
        # Everything is read: from here on, the run writes.
        path = options.conversation
        workspace = path / WORKSPACE
        state = "a new conversation" if created else f"{len(conversation.stream.turns())} turns"
        emit(f"inquiry run: {shown_path(scenario.path)} -> {shown_path(path)} ({state})")
        emit(f"  person: {person.description}")
        emit(f"  model: {model.description}")
        emit(f"  tools run in {shown_path(workspace)}")
        if left_out:
            # Named, so that a tool missing one of them is no mystery; never a value.
            names = ", ".join(left_out)
            emit(f"  tools run without {names} in their environment (secrets of this run)")
        if options.backend is not None and script is not None and script.model:
            emit("note: --backend given, so the answers file's [[model]] entries are not used")
        if person.interactive and script is not None and (script.answers or script.permissions):
            emit("note: --tty given, so you answer, not the answers file's person replies")
        if person.output is not None and person.output.closed:
            # Nobody reads on: stop before anything is written.
            return RunResult(turns=len(scenario.turns), completed=0, output_closed=True)
        try:
            save_conversation(conversation, path)
        except OSError as error:
            raise RunError(f"{shown_path(path)}: cannot be written: {os_reason(error)}") from None
        _seed_workspace(scenario, workspace, path)
        coordinator = ToolCoordinator(
            conversation,
            # A tool is given the id as JSON text: U+FFFD for a byte of the name that is not UTF-8.
            tools=_executors(
                scenario, workspace, shown_path(path.resolve().name), tool_environment
            ),
            config=scenario.config,
            prompter=_WatchedPrompter(prompter, progress) if prompter is not None else None,
            backend=_WatchedBackend(backend, progress) if backend is not None else None,
            terminal=prompter is not None,
            system_parts=scenario.system,
            on_record=progress.record,
        )
        progress.turn_state = lambda: coordinator.turn_state
        result = await _play(scenario, conversation, coordinator, progress, person.output)
    progress.summary(
        path=path,
        turns=result.turns,
        completed=result.completed,
        total_turns=len(conversation.stream.turns()),
    )
    unused = _unused_entries(
        prompter if isinstance(prompter, ScriptedPrompter) else None,
        scripted_model if backend is scripted_model else None,
    )
    if unused:
        emit(f"note: entries of the answers file no prompt used: {', '.join(unused)}")
    return result


def _unused_entries(
    prompter: ScriptedPrompter | None, model: ScriptedInquiryBackend | None
) -> list[str]:
    """The answers file's entries that were in play and never used, as the file names them."""
    unused: list[str] = []
    if prompter is not None:
        unused += [f"permissions[{index}]" for index in prompter.unused_permissions]
        unused += [f"answers[{index}]" for index in prompter.unused_answers]
    if model is not None:
        unused += [f"model[{index}]" for index in model.unused]
    return unused


async def _play(
    scenario: Scenario,
    conversation: Conversation,
    coordinator: ToolCoordinator,
    progress: _Progress,
    output: _Output | None,
) -> RunResult:
    stream = conversation.stream
    interrupted = asyncio.Event()

    def interrupt() -> None:
        interrupted.set()
        progress.emit("  interrupted: closing every open tool call and question")
        coordinator.cancel()

    if output is not None:
        # The reader has gone: stop as on Ctrl-C (the coordinator closes and
        # saves what is open), printing nothing more.
        output.on_close = interrupt

    completed = 0
    with _on_interrupt(interrupt):
        try:
            for plan in scenario.turns:
                if interrupted.is_set():
                    break
                stream.append(TurnStart())
                stream.append(ChatRequest(content=plan.message))
                number = len(stream.turns())
                progress.user(number, plan.message)
                save_conversation(conversation)
                for cycle_number, cycle in enumerate(plan.cycles, 1):
                    numbering = f"{number}_{cycle_number}"
                    await _play_cycle(cycle, numbering, coordinator, progress, interrupted)
                    if interrupted.is_set():
                        break
                else:
                    if plan.reply is not None:
                        stream.append(ChatResponse.message(plan.reply))
                        progress.assistant(plan.reply)
                    completed += 1
                save_conversation(conversation)
        except OSError as error:
            where = shown_path(conversation.path) if conversation.path else "the conversation"
            raise RunError(f"{where}: cannot be written: {os_reason(error)}") from None
    closed = output is not None and output.closed
    return RunResult(
        turns=len(scenario.turns),
        completed=completed,
        problems=tuple(progress.problems),
        interrupted=interrupted.is_set() and not closed,
        output_closed=closed,
    )


def _call_ids(cycle: Cycle, numbering: str) -> list[str]:
    """Each call's id: its own, or ``call_<numbering>_<n>`` (``_2``, ``_3`` on if another has it).

    An id the file gives may look like one made here; the made one gives way,
    so that no two calls of a cycle share an id and progress can tell them apart.
    """
    taken = {call.id for call in cycle.calls if call.id is not None}
    ids: list[str] = []
    for index, call in enumerate(cycle.calls, 1):
        if call.id is not None:
            ids.append(call.id)
            continue
        made, suffix = f"call_{numbering}_{index}", 1
        while made in taken:
            suffix += 1
            made = f"call_{numbering}_{index}_{suffix}"
        taken.add(made)
        ids.append(made)
    return ids


async def _play_cycle(
    cycle: Cycle,
    numbering: str,
    coordinator: ToolCoordinator,
    progress: _Progress,
    interrupted: asyncio.Event,
) -> None:
    """One assistant response: its message, its calls (ids ``call_<numbering>_<n>``), run."""
    requests = [
        ToolCallRequest(id=call_id, name=call.tool, arguments=dict(call.arguments))
        for call, call_id in zip(cycle.calls, _call_ids(cycle, numbering), strict=True)
    ]
    # Printed before anything is appended: should the printing stop the run
    # (its output closed), no call is left in the stream without its response.
    if cycle.message is not None:
        progress.assistant(cycle.message)
    for request in requests:
        progress.call(request)
    if interrupted.is_set():
        return
    stream = coordinator.conversation.stream
    if cycle.message is not None:
        stream.append(ChatResponse.message(cycle.message))
    progress.cycle_of(requests)
    for request in requests:
        stream.append(request)
    await coordinator.run(requests)
