"""``inquiry run``: play a scenario's turns through the tool coordinator.

Theory of operation: :func:`run_scenario` reads everything first — the
scenario (:mod:`coordinator.cli._scenario`), the answers file
(:mod:`coordinator.cli._answer_script`), the model backend's configuration and the
conversation directory — and only then writes: it saves the conversation,
seeds the workspace, and hands the turns to the play loop. Each concern has
a module of its own:

- :mod:`coordinator.cli._run_result`: the options, the result and the exit
  statuses;
- :mod:`coordinator.cli._run_players`: who plays the person and the model
  (an answers file that does not fit them is a problem of the run);
- :mod:`coordinator.cli._run_tools`: an executor for each tool
  (``build_executors``), and the environment local tools run with;
- :mod:`coordinator.cli._run_workspace`: seeding the workspace;
- :mod:`coordinator.cli._run_progress`: progress as it happens, from the
  coordinator's typed step facts, and the summary;
- :mod:`coordinator.cli._run_signals`: stopping on a signal;
- :mod:`coordinator.cli._run_play`: the play loop itself;
- :mod:`coordinator.cli._run_continue`: where the play starts: with
  ``--continue-turn``, where the scenario stood in the conversation (read
  under its writer lock); without it, a conversation whose last turn did not
  finish is refused unless ``--new-turn`` says to begin one after it
  (``docs/resume.md``);
- :mod:`coordinator.cli._run_discard`: with ``--discard-turn``, the
  unfinished last turn is discarded (closed, nothing deleted) under the
  writer lock before the play begins a new turn.

Rules:

1. Nothing is written before every input has been read and checked; an
   unreadable conversation is left exactly as it was. Promptability (RFD
   104: may the run prompt?) is resolved once, first of all, from the
   command line, the environment and ``/dev/tty``; every prompt of the run
   is gated on that one value, never on whether stdout is a terminal.
2. The conversation is saved after each user message and at the end of each
   turn (the coordinator saves in between, before every question).
3. Exit status (:mod:`coordinator.cli._run_result`): 0 when every turn
   completed, every tool call that ran succeeded and every question was
   answered (a skipped call is no failure); 1 when a tool call failed or a
   question ended without an answer, or the answers file did not fit a
   prompt; 2 when an input cannot be read or the conversation cannot be
   written; 3 when a turn was left incomplete (Ctrl-C, the output closed);
   128 + N when signal N (SIGTERM, SIGHUP) stopped the run. For any but 0,
   the reason is one line on stderr.
4. The run's secrets (the backend's API key, the answers file's
   ``value_env`` variables) are read, then withdrawn from the process's
   environment before anything is written or any tool runs
   (:func:`~coordinator.cli._run_tools.withdraw_secrets`).
5. When standard output is closed under the run (``inquiry run ... | head``),
   nothing more is printed there (it is pointed at the null device, as the
   Python documentation advises) and the run stops as on Ctrl-C: every open
   tool call and question is closed and saved, and the exit status is 3.
6. At the end, the answers file's entries no prompt used are named (those
   a continued turn's record shows it used before the stop count as used).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, TextIO

import attrs

from coordinator._errors import os_reason
from coordinator._text import shown_path
from coordinator.adapters import (
    Promptability,
    PromptabilityError,
    TerminalPrompter,
    resolve_promptability,
)
from coordinator.adapters.live import LiveChannel, LiveDirectoryError, live_directory
from coordinator.adapters.providers import ModelInquiryBackend
from coordinator.cli._answer_script import load_answer_script
from coordinator.cli._command_lines import command_line
from coordinator.cli._run_continue import assistant_tools, start_from
from coordinator.cli._run_discard import plan_discard
from coordinator.cli._run_play import play
from coordinator.cli._run_players import (
    WatchedBackend,
    WatchedPrompter,
    model,
    person,
    spend_recorded,
    unused_entries,
)
from coordinator.cli._run_progress import Progress
from coordinator.cli._run_result import RunError, RunResult
from coordinator.cli._run_signals import Stop
from coordinator.cli._run_tools import build_executors, mcp_toolbox, withdraw_secrets
from coordinator.cli._run_workspace import WORKSPACE
from coordinator.cli._scenario import load_scenario
from coordinator.driver import ScriptedInquiryBackend, ScriptedPrompter, ToolCoordinator
from coordinator.store import (
    Conversation,
    RunningTools,
    load_conversation,
    load_locked,
    save_conversation,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from coordinator.adapters.mcp import McpToolbox
    from coordinator.cli._answer_script import AnswerScript
    from coordinator.cli._run_continue import Continuation
    from coordinator.cli._run_discard import Discard
    from coordinator.cli._run_players import Model, Person
    from coordinator.cli._run_result import RunOptions
    from coordinator.cli._scenario import Scenario
    from coordinator.driver import Executor, InquiryBackend, Prompter, StepFacts

__all__ = ["run_scenario"]


async def run_scenario(
    options: RunOptions,
    *,
    out: TextIO,
    promptability: Promptability | None = None,
    continue_turn: bool = False,
    new_turn: bool = False,
    discard_turn: bool = False,
) -> RunResult:
    """Play ``options.scenario`` into ``options.conversation``, printing progress on ``out``.

    ``promptability`` says whether a person can be asked (by default it is
    resolved from ``options.interactive``, the environment and ``/dev/tty``:
    :func:`~coordinator.adapters.resolve_promptability`; a problem with it is
    a :class:`RunError`). ``continue_turn`` (``--continue-turn``): go on where
    the scenario stood in the conversation (:mod:`coordinator.cli._run_continue`);
    without it, a conversation whose last turn did not finish is refused,
    unless ``new_turn`` (``--new-turn``) and nothing is open in it;
    ``discard_turn`` (``--discard-turn``) discards it first, under the
    writer lock (:mod:`coordinator.cli._run_discard`). Raises
    :class:`RunError` or another :class:`~coordinator.CoordinatorError` when
    an input cannot be read or the conversation cannot be written (and then
    nothing was written, or the error says what was).
    """
    if promptability is None:
        try:
            promptability = resolve_promptability(options.interactive)
        except PromptabilityError as error:
            raise RunError(str(error)) from None
    scenario = load_scenario(options.scenario)
    script = load_answer_script(options.answers) if options.answers is not None else None
    # A conversation to continue or discard is read under its writer lock, and held.
    conversation, created = _open_conversation(
        options.conversation,
        scenario,
        locked=continue_turn or discard_turn,
        parents=options.parents,
    )
    # Released when the run ends, however it ends: an embedder (or a test)
    # running scenarios in one process must not hold it until the collector runs.
    try:
        return await _play_into(
            conversation,
            created=created,
            scenario=scenario,
            script=script,
            options=options,
            out=out,
            promptability=promptability,
            continue_turn=continue_turn,
            new_turn=new_turn,
            discard_turn=discard_turn,
        )
    finally:
        conversation.close()


async def _play_into(
    conversation: Conversation,
    *,
    created: bool,
    scenario: Scenario,
    script: AnswerScript | None,
    options: RunOptions,
    out: TextIO,
    promptability: Promptability,
    continue_turn: bool,
    new_turn: bool,
    discard_turn: bool,
) -> RunResult:
    """The run of :func:`run_scenario` once its conversation is open (``created`` if new)."""
    discard = (
        plan_discard(conversation, assistant_tools=assistant_tools(scenario))
        if discard_turn and not created
        else None
    )
    start = start_from(
        conversation,
        created=created,
        scenario=scenario,
        options=options,
        continue_turn=continue_turn,
        new_turn=new_turn,
        discarding=discard is not None,
    )
    start.check_seed(scenario, options.conversation)
    stop = Stop()
    player = person(options, script, promptability=promptability, out=out, stop=stop)
    progress = Progress(
        player.emit,
        verbose=options.verbose,
        prompts_show_questions=player.prompts_on_screen,
        hidden_tools=scenario.hidden_tools,
    )
    try:
        scripted_model = script.backend() if script else None
        model_player = model(options, scenario, scripted_model)
        return await _play(
            conversation,
            created=created,
            scenario=scenario,
            script=script,
            options=options,
            start=start,
            stop=stop,
            player=player,
            progress=progress,
            scripted_model=scripted_model,
            model_player=model_player,
            discard=discard,
        )
    finally:
        # After the summary, which the terminal prompter may be what prints.
        if isinstance(player.prompter, TerminalPrompter):
            player.prompter.close()


async def _play(
    conversation: Conversation,
    *,
    created: bool,
    scenario: Scenario,
    script: AnswerScript | None,
    options: RunOptions,
    start: Continuation,
    stop: Stop,
    player: Person,
    progress: Progress,
    scripted_model: ScriptedInquiryBackend | None,
    model_player: Model,
    discard: Discard | None = None,
) -> RunResult:
    """Write, run the turns and sum up: the part of :func:`_play_into` once everything is read."""
    prompter, emit, backend = player.prompter, player.emit, model_player.backend
    environment, left_out = withdraw_secrets(script, model_player)
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(backend, ModelInquiryBackend):
            stack.push_async_callback(backend.aclose)
        # Everything is read: from here on, the run writes.
        path = options.conversation
        workspace = path / WORKSPACE
        turns = conversation.stream.turn_count
        state = "a new conversation" if created else f"{turns} turn{'' if turns == 1 else 's'}"
        emit(f"inquiry run: {shown_path(scenario.path)} -> {shown_path(path)} ({state})")
        emit(f"  person: {player.description}")
        emit(f"  model: {model_player.description}")
        emit(f"  tools run in {shown_path(workspace)}")
        if left_out:
            # Named, so that a tool missing one of them is no mystery; never a value.
            names = ", ".join(left_out)
            emit(f"  tools run without {names} in their environment (secrets of this run)")
        if options.backend is not None and script is not None and script.model:
            emit("note: --backend given, so the answers file's [[model]] entries are not used")
        if player.interactive and script is not None and script.plays_the_person:
            emit("note: --interactive given, so you answer, not the answers file's person replies")
        # Checked before anything is written: a live directory others could use is refused.
        live_dir = _live_directory() if options.inbox else None
        if player.output is not None and player.output.closed:
            # Nobody reads on: stop before anything is written.
            return RunResult(turns=len(scenario.turns), completed=0, output_closed=True)
        _first_write(conversation, path, discard, emit)
        start.seed(scenario, path)
        live = await _live_channel(stack, live_dir, path, scenario, emit)
        mcp = mcp_toolbox(scenario, workspace)
        if mcp is not None:
            stack.push_async_callback(mcp.aclose)
        tools = build_executors(
            # A tool is given the id as JSON text: U+FFFD for a byte of the name that is not UTF-8.
            scenario,
            workspace,
            shown_path(path.resolve().name),
            environment,
            mcp=mcp,
            # Should this run die, the next writer stops the tools it left running.
            running=RunningTools(path),
        )
        coordinator = _coordinator(
            conversation,
            scenario=scenario,
            tools=tools,
            mcp=mcp,
            prompter=prompter,
            backend=backend,
            progress=progress,
            live=live,
        )
        # What the file answered before the run stopped is on record, not asked again.
        last = conversation.stream.turns()[-1] if start.begun else None
        spend_recorded(prompter, last, start.incomplete)
        result = await play(
            scenario,
            conversation,
            coordinator,
            progress,
            player.output,
            stop=stop,
            start=start,
            between_prompts=(
                prompter.between_prompts() if isinstance(prompter, TerminalPrompter) else None
            ),
        )
        if result.parked:
            # Answered at a terminal (with an answers file, the person answers and the
            # file plays the model), never by this run's way of asking nobody again.
            # With --inbox, the page answers as well as a terminal.
            asks = (
                options
                if options.inbox
                else attrs.evolve(options, interactive=True if options.answers else None)
            )
            result = attrs.evolve(result, continue_with=command_line(asks, "--continue-turn"))
    progress.summary(
        path=path,
        turns=result.turns,
        completed=result.completed,
        total_turns=conversation.stream.turn_count,
    )
    unused = unused_entries(
        prompter if isinstance(prompter, ScriptedPrompter) else None,
        scripted_model if model_player.backend is scripted_model else None,
    )
    if unused:
        emit(f"note: entries of the answers file no prompt used: {', '.join(unused)}")
    return result


def _first_write(
    conversation: Conversation, path: Path, discard: Discard | None, emit: Callable[[str], None]
) -> None:
    """The run's first write: the discarded turn closed (``--discard-turn``), then the save."""
    if discard is not None:
        discard.carry_out(conversation, emit)
    try:
        save_conversation(conversation, path)
    except OSError as error:
        raise RunError(f"{shown_path(path)}: cannot be written: {os_reason(error)}") from None


def _live_directory() -> Path:
    """The user's live directory, checked (``--inbox``); a :class:`RunError` saying why not."""
    try:
        return live_directory()
    except LiveDirectoryError as error:
        raise RunError(f"--inbox: {error}") from None


async def _live_channel(
    stack: contextlib.AsyncExitStack,
    directory: Path | None,
    path: Path,
    scenario: Scenario,
    emit: Callable[[str], None],
) -> LiveChannel | None:
    """The run's live channel to the web inbox in ``directory`` (``--inbox``), while ``stack`` is.

    ``None`` without a directory: the run has no live channel.
    """
    if directory is None:
        return None
    try:
        live = await stack.enter_async_context(
            LiveChannel.open(
                conversation=path.resolve(),  # noqa: ASYNC240 - once, as the run starts
                title=scenario.title,
                directory=directory,
            )
        )
    except OSError as error:
        raise RunError(
            f"--inbox: {shown_path(directory)}: cannot listen there: {os_reason(error)}"
        ) from None
    emit("  inbox: its questions are on the web inbox too (inquiry serve), answered from there")
    return live


def _coordinator(
    conversation: Conversation,
    *,
    scenario: Scenario,
    tools: dict[str, Executor],
    mcp: McpToolbox | None,
    prompter: Prompter | None,
    backend: InquiryBackend | None,
    progress: Progress,
    live: LiveChannel | None = None,
) -> ToolCoordinator:
    """The coordinator of the run: its steps told to ``progress`` (and to the MCP toolbox).

    The person and the answers file's ``[[model]]`` are watched for an
    answers file that does not fit the scenario; who answered what, the
    progress learns from the steps. With ``live`` (``--inbox``), every
    question is on the web inbox too, and the first answer, the page's or
    the terminal's, is taken (:mod:`coordinator.adapters.live`).
    """
    watched: Prompter | None = (
        WatchedPrompter(prompter, progress) if prompter is not None else None
    )
    if live is not None:
        # The page asks alongside whoever was to answer (or alone, nobody at the terminal).
        watched = live.prompter(watched)
    if isinstance(backend, ScriptedInquiryBackend):
        backend = WatchedBackend(backend, progress)
    observers = [
        progress.step,
        *([mcp.observe] if mcp is not None else []),
        *([live.observe] if live is not None else []),
    ]

    def on_step(step: StepFacts) -> None:
        for observe in observers:
            observe(step)

    return ToolCoordinator(
        conversation,
        tools=tools,
        config=scenario.config,
        # The MCP toolbox shows the person a URL request's whole link, which no record holds.
        prompter=mcp.prompter(watched) if mcp is not None and watched is not None else watched,
        backend=backend,
        terminal=watched is not None,
        system_parts=scenario.system,
        on_step=on_step,
    )


def _open_conversation(
    path: Path, scenario: Scenario, *, locked: bool, parents: bool = False
) -> tuple[Conversation, bool]:
    """The conversation at ``path`` (created when missing or empty), and whether it is new.

    ``locked``: one that exists is read under its writer lock, which it holds.
    A missing ``path`` is created itself, not its parents: a mistyped
    ``-c /nonexistent/deep/conv`` (as root, anywhere) is refused, naming the
    missing parent, unless ``parents`` (``--parents``) asks for them.

    A new conversation's default title names the scenario file as every path
    is shown (U+FFFD for a byte that is not UTF-8): the title is saved as JSON,
    which cannot hold the lone surrogates such a name decodes to.
    """
    try:
        exists = path.exists()
        if exists and not path.is_dir():
            raise RunError(f"{shown_path(path)}: is not a directory")
        if not exists and not parents:
            _refuse_missing_parent(path)
        empty = not exists or not any(path.iterdir())
    except OSError as error:  # a name too long, a loop of links, no permission: what the OS says
        raise RunError(f"{shown_path(path)}: cannot be read: {os_reason(error)}") from None
    if empty:
        title = scenario.title or f"inquiry run: {shown_path(scenario.path.stem)}"
        # base_config.json marks the current layout; the engine configures nothing in it.
        return Conversation.new(metadata={"title": title}, base_config={}), True
    return (load_locked(path) if locked else load_conversation(path)), False


def _refuse_missing_parent(path: Path) -> None:
    """Raise :class:`RunError` when ``path``'s parent is not a directory (nothing is created)."""
    parent = path.parent
    if parent.is_dir():
        return
    # The first missing one, from the top: what the person mistyped, or must create.
    missing = next((above for above in reversed(path.parents) if not above.is_dir()), parent)
    said = f"{shown_path(path)}: cannot be created: its parent {shown_path(parent)} is missing"
    if os.path.lexists(missing):
        raise RunError(f"{said} ({shown_path(missing)} is not a directory); nothing was written")
    raise RunError(
        f"{said} ({shown_path(missing)} does not exist); create it, or give --parents to "
        "create the missing directories too; nothing was written"
    )
