"""What ``inquiry run`` is asked to do, how it went, and the exit status that says so.

Theory of operation: :class:`RunOptions` is the command line, read;
:class:`RunResult` is what the play loop (:mod:`coordinator.cli._run_play`)
and its progress (:mod:`coordinator.cli._run_progress`) counted, and its
:attr:`~RunResult.status` and :attr:`~RunResult.reason` are all ``inquiry``
prints and returns at the end. :class:`RunError` is raised wherever an input
cannot be read or the conversation cannot be written; it carries its own
status. Nothing here reads a file or prints.

Exit statuses (``docs/cli.md`` lists them for users), the first that applies:

- ``128 + N`` (:func:`signal_status`): signal ``N`` stopped the run (SIGTERM
  143, SIGHUP 129);
- :data:`EXIT_INCOMPLETE_TURN` (3): a turn was left incomplete: the run was
  interrupted by Ctrl-C, or standard output was closed under it, or a
  prompt was parked (the detached policy ``park``): the turn waits for an
  answer given later, and ``--continue-turn`` (:attr:`RunResult.continue_with`)
  takes it up;
- :data:`EXIT_UNREADABLE` (2): an input cannot be read, or the conversation
  cannot be written (a :class:`RunError`; nothing was written, or the error
  says what was);
- :data:`EXIT_FAILED` (1): every turn completed, but a tool call failed (its
  tool reported an error, could not run, or is not there; or nobody could be
  asked and the detached policy refused its permission, its result or its
  question) or a question ended without an answer (cancelled, refused,
  denied, withdrawn, or the model could not answer it), or the answers file
  did not fit a prompt;
- :data:`EXIT_OK` (0): every turn completed, every tool call that ran
  succeeded and every question was answered. A call skipped, by its run
  mode or by the person (``n``, ``N``, ``r``, or an earlier ``N``), is not a
  failure: it did what was asked of it.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path

import attrs

from coordinator._errors import CoordinatorError

__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE_TURN",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "RunError",
    "RunOptions",
    "RunResult",
    "signal_status",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNREADABLE = 2
EXIT_INCOMPLETE_TURN = 3
_SIGNALLED = 128


def signal_status(number: signal.Signals) -> int:
    """The exit status of a run stopped by the signal ``number``: 128 plus its number."""
    return _SIGNALLED + int(number)


class RunError(CoordinatorError):
    """``inquiry run`` cannot start or go on; ``status`` is the exit status to give."""

    def __init__(self, message: str, *, status: int = EXIT_UNREADABLE) -> None:
        """Say what is wrong; ``status`` 2 (unreadable or unwritable) unless told otherwise."""
        self.status = status
        super().__init__(message)


@attrs.frozen(kw_only=True)
class RunOptions:
    """What ``inquiry run`` was asked to do.

    ``interactive``: ``None`` to prompt when a person can be asked (RFD 104:
    ``/dev/tty`` opens, and no ``INQUIRY_NONINTERACTIVE``/``JP_NONINTERACTIVE``)
    and there is no answers file, ``True`` (``--interactive``) to prompt
    whatever the answers file says (and fail at once without a terminal),
    ``False`` (``--no-interactive``) never to prompt. ``backend``:
    the command line's backend configuration (``backend_from_config`` keys),
    which replaces the scenario's. ``verbose`` (``--verbose``): show the
    internal ids of tool calls and inquiries in progress and prompts.
    """

    scenario: Path
    conversation: Path
    answers: Path | None = None
    interactive: bool | None = None
    backend: Mapping[str, object] | None = None
    verbose: bool = False
    #: ``--inbox``: the run's questions are on the web inbox too, answered from there or here.
    inbox: bool = False
    #: ``--parents``: a conversation directory whose parent is missing is created
    #: with the missing directories above it; without it, that is an error.
    parents: bool = False


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run went.

    ``problems``: where the answers file did not fit a prompt, each in one
    line. ``tool_calls`` counts the calls that ended, ``failed_calls`` those
    that failed; ``unanswered`` counts the questions closed without an answer.
    """

    turns: int
    completed: int
    problems: tuple[str, ...] = ()
    tool_calls: int = 0
    failed_calls: int = 0
    unanswered: int = 0
    interrupted: bool = False
    #: Standard output was closed under the run, which then stopped.
    output_closed: bool = False
    #: The signal (SIGTERM, SIGHUP) that stopped the run, if one did.
    stopped_by: signal.Signals | None = None
    #: How many prompts were parked: the turn waits for their answers.
    parked: int = 0
    #: The command that continues a parked turn, as a line for a shell.
    continue_with: str | None = None

    @property
    def status(self) -> int:
        """The exit status (the module's docstring lists them)."""
        if self.stopped_by is not None:
            return signal_status(self.stopped_by)
        if self.interrupted or self.output_closed or self.parked or self.completed < self.turns:
            return EXIT_INCOMPLETE_TURN
        if self.problems or self.failed_calls or self.unanswered:
            return EXIT_FAILED
        return EXIT_OK

    @property
    def reason(self) -> str | None:
        """Why the status is not 0, in one line (``None`` when it is)."""
        return self._why_stopped() or self._why_failed()

    def _why_stopped(self) -> str | None:
        if self.output_closed:
            return (
                f"standard output was closed: stopped after {self.completed} of {self.turns} turns"
            )
        if self.stopped_by is not None:
            return (
                f"stopped by {self.stopped_by.name}: {self.completed} of {self.turns} turns "
                "completed; every open tool call and question was closed and saved"
            )
        if self.interrupted:
            return f"interrupted: {self.completed} of {self.turns} turns completed"
        if self.parked:
            prompts = "prompt was" if self.parked == 1 else "prompts were"
            how = f": continue it with `{self.continue_with}`" if self.continue_with else ""
            return (
                f"{self.parked} {prompts} parked, and the turn waits for an answer given "
                f"later{how}"
            )
        if self.completed < self.turns:
            return f"only {self.completed} of {self.turns} turns completed"
        return None

    def _why_failed(self) -> str | None:
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return self.problems[0] + more
        failures = []
        if self.failed_calls:
            failures.append(f"{self.failed_calls} of {self.tool_calls} tool calls failed")
        if self.unanswered:
            questions = "question was" if self.unanswered == 1 else "questions were"
            failures.append(f"{self.unanswered} {questions} not answered")
        if failures:
            return " and ".join(failures) + " (the summary lists them)"
        return None
