"""What ``inquiry run`` is asked to do, how it went, and the exit status that says so.

Theory of operation: :class:`RunOptions` is the command line, read;
:class:`RunResult` is what the play loop (:mod:`coordinator.cli._run_play`)
counted, and its :attr:`~RunResult.status` and :attr:`~RunResult.reason` are
all ``inquiry`` prints and returns at the end. :class:`RunError` is raised
wherever an input cannot be read or the conversation cannot be written; it
carries its own status. Nothing here reads a file or prints.

Exit statuses (``docs/cli.md`` lists them for users):

- :data:`EXIT_OK` (0): every turn completed and nothing went wrong;
- :data:`EXIT_INCOMPLETE` (1): a turn did not complete (interrupted by
  Ctrl-C, the output closed, or the answers file had no reply that fits);
- :data:`EXIT_UNREADABLE` (2): an input cannot be read, or the
  conversation cannot be written;
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path

import attrs

from coordinator._errors import CoordinatorError

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "RunError",
    "RunOptions",
    "RunResult",
    "signal_status",
]

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_UNREADABLE = 2
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

    ``interactive``: ``None`` to prompt when stdin and stdout are terminals and
    there is no answers file, ``True`` (``--tty``) to prompt whatever the
    answers file says, ``False`` (``--no-tty``) never to prompt. ``backend``:
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


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run went."""

    turns: int
    completed: int
    problems: tuple[str, ...] = ()
    interrupted: bool = False
    #: Standard output was closed under the run, which then stopped.
    output_closed: bool = False
    #: The signal (SIGTERM, SIGHUP) that stopped the run, if one did.
    stopped_by: signal.Signals | None = None

    @property
    def status(self) -> int:
        """The exit status: 0 when every turn completed and nothing went wrong."""
        if self.stopped_by is not None:
            return signal_status(self.stopped_by)
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
        if self.stopped_by is not None:
            return (
                f"stopped by {self.stopped_by.name}: {self.completed} of {self.turns} turns "
                "completed; every open tool call and question was closed and saved"
            )
        if self.interrupted:
            return f"interrupted: {self.completed} of {self.turns} turns completed"
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return self.problems[0] + more
        if self.completed < self.turns:
            return f"only {self.completed} of {self.turns} turns completed"
        return None
