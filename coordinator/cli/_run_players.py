"""Who plays the person and the model in ``inquiry run``, and watching what they answer.

Theory of operation: :func:`person` picks the prompter that plays the person,
and where progress is printed, from the run's promptability (resolved once,
RFD 104: :mod:`coordinator.adapters._promptability`):

- with ``--interactive``, the terminal prompter on the controlling terminal,
  even with ``--answers`` (whose ``[[model]]`` entries still play the model);
- with ``--answers``, the answers file's ``[[permissions]]``, ``[[answers]]``
  and ``[[deliveries]]``, standing in for the person (its replies are
  recorded as the answers file's; a prompt it has no reply for falls to the
  tool's detached policy, RFD 049);
- otherwise the terminal prompter when a person can be asked;
- nobody when nobody can be (``--no-interactive``, ``INQUIRY_NONINTERACTIVE``
  or ``JP_NONINTERACTIVE``, no controlling terminal): every prompt follows
  the detached policy, ``deny`` unless configured.

Prompts go to the controlling terminal, never stdout. Progress goes through
the terminal prompter (above any prompt on screen) when stdout is that
terminal, and to stdout otherwise (``inquiry run ... | less`` still asks at
the terminal, and pipes only the progress).

:func:`model` picks the model: ``--backend`` on the command line, else the
answers file's ``[[model]]`` entries, else the scenario's ``[backend]``
table, else none (questions routed to it are cancelled as ``backend_error``).

Who answered each question, and what was said to a permission prompt, the
coordinator's step facts tell :class:`~coordinator.cli._run_progress.Progress`.
What they cannot tell is the answers file's own fault: the coordinator is
handed the person and the scripted model wrapped (:class:`WatchedPrompter`,
:class:`WatchedBackend`), so that an answers file that does not fit the
scenario (no reply for a prompt, or a reply the question cannot take) is a
problem of the run, named by the file's entry. At the end,
:func:`unused_entries` names the answers file's entries no prompt used. A
turn continued (``--continue-turn``) counts as used the entries its record
shows the file decided before the run stopped (:func:`spend_recorded`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import attrs

from coordinator._errors import ConfigError
from coordinator._recorded_routes import recorded_route
from coordinator._text import shown_path
from coordinator.adapters import TerminalPrompter, TerminalUnavailableError
from coordinator.adapters.providers import (
    ProviderConfigError,
    backend_from_config,
    key_variable,
)
from coordinator.cli._run_progress import Output
from coordinator.cli._run_result import RunError
from coordinator.driver import (
    DeliveryPrompter,
    InquiryBackend,
    InquiryBackendError,
    PromptCancelled,
    Prompter,
    ScriptedPrompter,
    ScriptExhaustedError,
    join_key,
    name_key,
)
from machines import (
    Answered,
    AnswerKind,
    CancellationReason,
    InquiryRequest,
    Redacted,
    SecretValue,
    ToolCallRequest,
    ToolCallResponse,
    json_type,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coordinator._recorded_routes import RecordedRoute
    from coordinator.adapters import Promptability
    from coordinator.cli._answer_script import AnswerScript
    from coordinator.cli._run_progress import Progress
    from coordinator.cli._run_result import RunOptions
    from coordinator.cli._run_signals import Stop
    from coordinator.cli._scenario import Scenario
    from coordinator.driver import (
        DeliveryAnswer,
        InquiryTask,
        PermissionAnswer,
        QuestionAnswer,
        ScriptedInquiryBackend,
    )
    from coordinator.stream import IncompleteTurn, Turn
    from machines import (
        JsonValue,
        Question,
        ShowDeliveryPrompt,
        ShowPermissionPrompt,
        ShowQuestion,
        ToolAnswer,
    )

__all__ = [
    "Model",
    "Person",
    "WatchedBackend",
    "WatchedPrompter",
    "model",
    "person",
    "spend_recorded",
    "unused_entries",
]


@attrs.frozen(kw_only=True)
class Model:
    """Who plays the model, how to describe it, and where its API key is read from."""

    backend: InquiryBackend | None
    description: str
    #: The environment variable holding the API key it uses, if it uses one.
    key_variable: str | None = None


def model(
    options: RunOptions, scenario: Scenario, scripted: ScriptedInquiryBackend | None
) -> Model:
    """The model backend, and how to describe it."""
    config: Mapping[str, object] | None
    if options.backend is not None:
        config, where = options.backend, "the command line"
    elif scripted is not None:
        return Model(backend=scripted, description="scripted ([[model]] of the answers file)")
    elif scenario.backend is not None:
        config, where = scenario.backend, "the scenario"
    else:
        return Model(
            backend=None,
            description="none (questions for the model are cancelled as backend_error)",
        )
    try:
        variable = key_variable(config)
        # Read here, and handed over: the variable is then taken out of this
        # process's environment (_run_tools.withdraw_secrets), where a tool
        # could read it through /proc.
        key = os.environ.get(variable) or None
        backend = backend_from_config(config, tools=scenario.definitions, api_key=key)
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
    return Model(
        backend=backend,
        description=f"{config.get('provider')} {config.get('model')} (from {where})",
        key_variable=variable,
    )


@attrs.frozen(kw_only=True)
class Person:
    """Who plays the person, and where progress is printed.

    ``interactive``: the person is asked at the terminal. ``prompts_on_screen``:
    progress is printed on that terminal too, where each prompt shows its
    question (so progress need not print it again).
    """

    prompter: Prompter | None
    description: str
    emit: Callable[[str], None]
    interactive: bool = False
    prompts_on_screen: bool = False
    #: Where progress goes when it is not the terminal prompter's screen.
    output: Output | None = None


#: What the person line says of a run that asks nobody.
_NOBODY = "nobody: {why}; prompts follow the detached policy (deny unless configured)"


def person(
    options: RunOptions,
    script: AnswerScript | None,
    *,
    promptability: Promptability,
    out: TextIO,
    stop: Stop,
) -> Person:
    """Who plays the person; at the terminal, a second Ctrl-C at a prompt requests ``stop``."""
    if options.interactive or (
        options.interactive is None and script is None and promptability.promptable
    ):
        try:
            prompter = TerminalPrompter(verbose=options.verbose, on_stop=stop.request)
            stop.before_quit = prompter.restore_terminal
        except TerminalUnavailableError as error:
            raise RunError(f"{error} (or run with --answers FILE or --no-interactive)") from None
        # Whether stdout is a terminal says where progress goes (RFD 104: a
        # question of stdout's own), never whether the person is asked.
        if out.isatty():
            # Progress goes above the prompt on screen, never through it.
            return Person(
                prompter=prompter,
                description="you, at this terminal",
                emit=prompter.show,
                interactive=True,
                prompts_on_screen=True,
            )
        # Standard output is piped or redirected: the progress goes there, the
        # prompts to the terminal (never into the data channel).
        write = Output(out)
        return Person(
            prompter=prompter,
            description="you, at the controlling terminal (progress goes to standard output)",
            emit=write,
            interactive=True,
            output=write,
        )

    write = Output(out)
    if script is not None:
        return Person(
            prompter=script.prompter(),
            description=(
                f"the answers file ({shown_path(script.path)}); what it does not answer "
                "follows the detached policy"
            ),
            emit=write,
            output=write,
        )
    return Person(
        prompter=None,
        description=_NOBODY.format(why=promptability.why),
        emit=write,
        output=write,
    )


class WatchedPrompter:
    """Passes prompts to the real prompter; a scripted reply that does not fit is a problem."""

    def __init__(self, prompter: Prompter, progress: Progress) -> None:
        self.prompter = prompter
        self.progress = progress

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        try:
            return await self.prompter.ask_permission(prompt)
        except ScriptExhaustedError as error:
            self.progress.problem(
                f"the answers file: {error} (the tool call was skipped)",
                call_id=prompt.tool_call_id,
            )
            raise PromptCancelled from None  # reported here; the coordinator need not log it

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        if not isinstance(self.prompter, DeliveryPrompter):
            raise PromptCancelled  # pragma: no cover - the run's prompters all ask deliveries
        try:
            return await self.prompter.ask_delivery(prompt)
        except ScriptExhaustedError as error:  # pragma: no cover - an answers file stands in
            self.progress.problem(
                f"the answers file: {error} (the delivery was cancelled)",
                call_id=prompt.tool_call_id,
            )
            raise PromptCancelled from None

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        scripted = self.prompter if isinstance(self.prompter, ScriptedPrompter) else None
        unused = set(scripted.unused_answers) if scripted is not None else set()
        try:
            answer = await self.prompter.ask_question(prompt)
        except ScriptExhaustedError as error:
            self.progress.problem(
                f"the answers file: {error} (the question was cancelled)",
                call_id=prompt.tool_call_id,
            )
            raise PromptCancelled from None  # reported here; the coordinator need not log it
        if scripted is not None and not _fits(prompt.question, answer.value):
            # The file does not fit the prompt: a problem of the run, named
            # here by its entry (which only this side knows). The reply goes
            # on to the engine, whose machine closes the question as the
            # file's fault (invalid_answers_file_entry), never the user's.
            # (A person at the terminal cannot type an answer that does not fit.)
            taken = sorted(unused - set(scripted.unused_answers))
            entry = f"answers[{taken[0]}]" if taken else "an entry"
            self.progress.problem(
                f"the answers file's {entry} does not fit {_asked(prompt)}: "
                f"{_misfit(prompt.question, answer.value)} (the question was closed as "
                f"{CancellationReason.INVALID_ANSWERS_FILE_ENTRY.as_str()})",
                call_id=prompt.tool_call_id,
            )
        return answer


def _asked(prompt: ShowQuestion) -> str:
    return f"question {prompt.question.id!r} of tool {prompt.tool_name!r}"


def _fits(question: Question, value: ToolAnswer) -> bool:
    """Whether the engine takes ``value`` as an answer to ``question`` (it checks again)."""
    return question.answer_type.accepts(value)


def _misfit(question: Question, value: ToolAnswer) -> str:
    """What the answer must be, and what the file gave: its kind, never its value.

    Not even a wrong option of a select is quoted: an entry that names no
    question may have been written for another one, a secret one say, and
    the slip must not print what it holds. The entry is named by its place
    in the file instead.
    """
    answer_type = question.answer_type
    if isinstance(value, SecretValue):
        given = "a secret read with `value_env`"
    elif answer_type.kind is AnswerKind.SELECT and isinstance(value, str):
        given = "another string (a value is never shown)"
    else:
        given = json_type(value, toml=True)
    return f"the answer must be {answer_type.expected()}, not {given}"


class WatchedBackend:
    """Passes questions to the answers file's ``[[model]]``; one without a reply is a problem."""

    def __init__(self, backend: ScriptedInquiryBackend, progress: Progress) -> None:
        self.backend = backend
        self.progress = progress

    async def answer(self, task: InquiryTask) -> JsonValue:
        before = self.backend.remaining
        try:
            return await self.backend.answer(task)
        except InquiryBackendError as error:
            if self.backend.remaining == before:
                # Nothing in the script matched: the answers file does not fit the scenario.
                self.progress.problem(
                    f"the answers file's [[model]]: {error}", call_id=task.tool_call_id
                )
            raise


def spend_recorded(
    prompter: Prompter | None, turn: Turn | None, incomplete: IncompleteTurn | None
) -> None:
    """Spend the answers file's replies the recorded (unfinished) ``turn`` already used.

    Only the answers file's (a :class:`ScriptedPrompter`) are, and only for
    a turn continued (``turn`` is ``None`` for one begun): a person at the
    terminal has no script to spend.

    "Used" is what the record says the file decided and the continued run
    will not ask again: a question answered (or redacted) with the route
    ``answers_file``, its tool and question id read from its request (paired
    by id), unless its open call asks it again (``incomplete``: a secret's
    answer is not on record, nor is one that does not fit replayed); a
    permission or a delivery whose call's response records that route. Each
    spends the first entry that matches it, as the prompt did then, in the
    order they were recorded.
    """
    if turn is None or not isinstance(prompter, ScriptedPrompter):
        return
    again = _asked_again(incomplete)
    asked: dict[str, InquiryRequest] = {}
    calls: dict[str, str] = {}
    for entry in turn.events:
        record = entry.payload
        if isinstance(record, InquiryRequest):
            asked[record.id] = record
        elif isinstance(record, ToolCallRequest):
            calls[record.id] = record.name
        elif isinstance(record, Answered | Redacted):
            request = asked.get(record.id)
            route = recorded_route(entry.metadata)
            if request is not None and request.id not in again and _by_file(route):
                tool = request.source.name or ""
                prompter.used_before("question", tool=tool, question=request.question.id)
        elif isinstance(record, ToolCallResponse) and record.id in calls:
            for decision in ("permission", "delivery"):
                if _by_file(recorded_route(entry.metadata, decision)):
                    prompter.used_before(decision, tool=calls[record.id])


def _asked_again(incomplete: IncompleteTurn | None) -> frozenset[str]:
    """The ids of the answered requests whose open call asks their question again."""
    if incomplete is None:
        return frozenset()
    again: set[str] = set()
    for call in incomplete.open:
        reasked = call.reask | {question for question, _ in call.unfit}
        for located in call.inquiries:
            request = located.entry.payload
            if isinstance(request, InquiryRequest) and request.question.id in reasked:
                again.add(request.id)
    return frozenset(again)


def _by_file(route: RecordedRoute | None) -> bool:
    return route is not None and _FILE in (route.route, route.by)


#: The route the answers file's decisions are recorded with.
_FILE = "answers_file"


def unused_entries(
    prompter: ScriptedPrompter | None, model: ScriptedInquiryBackend | None
) -> list[str]:
    """The answers file's entries that were in play and never used, as the file names them."""
    unused: list[str] = []
    if prompter is not None:
        unused += [f"permissions[{index}]" for index in prompter.unused_permissions]
        unused += [f"answers[{index}]" for index in prompter.unused_answers]
        unused += [f"deliveries[{index}]" for index in prompter.unused_deliveries]
    if model is not None:
        unused += [f"model[{index}]" for index in model.unused]
    return unused
