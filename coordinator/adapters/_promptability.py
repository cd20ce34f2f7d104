"""Promptability: is a person there to answer? Resolved once, at start (RFD 104).

Theory of operation: whether a run may prompt is one value, resolved before
anything runs, and every prompt (permission to run, a question for the
person, a result's delivery) is gated on it. It is answered from its own
source, never from whether stdout or stdin is a terminal: a piped run
(``inquiry run ... | less``, ``2>&1 | head``) still has a person at the
keyboard, and a prompt is never written to stdout, the data channel: the
terminal prompter reads and writes the controlling terminal, ``/dev/tty``.

The order (RFD 104, "Promptability"):

1. ``--interactive`` together with ``--no-interactive``: a usage error (the
   command line refuses it before this module is asked).
2. A flag decides: ``--no-interactive`` is not promptable; ``--interactive``
   is promptable, or a startup error saying why ``/dev/tty`` cannot be used.
3. ``INQUIRY_NONINTERACTIVE`` or JP's ``JP_NONINTERACTIVE`` set to ``1`` or
   ``true`` (any case): not promptable. ``0``, ``false`` and the empty value
   say nothing; any other value is an error naming the variable (a typo must
   not leave a run interactive that was meant not to be). The command line
   outranks the environment.
4. Otherwise: whether ``/dev/tty`` opens for reading and writing, and this
   process is in its terminal's foreground process group (a background job
   that read from it would be stopped by ``SIGTTIN``: RFD 104 leaves that
   open; here such a job is not promptable, and ``--interactive`` says why).

What to do instead of prompting is the detached policy (RFD 049), in the
machines; this module only says whether a person can be asked, and why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs

from coordinator._errors import CoordinatorError, os_reason

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "NONINTERACTIVE_VARIABLES",
    "TERMINAL_DEVICE",
    "Promptability",
    "PromptabilityError",
    "TerminalDevice",
    "open_terminal",
    "resolve_promptability",
]

#: The controlling terminal: where prompts are read and written.
TERMINAL_DEVICE = "/dev/tty"
#: The environment variables that make a run not interactive: ours, then JP's.
NONINTERACTIVE_VARIABLES = ("INQUIRY_NONINTERACTIVE", "JP_NONINTERACTIVE")
_YES = frozenset({"1", "true"})
_NO = frozenset({"", "0", "false"})


class PromptabilityError(CoordinatorError):
    """Promptability cannot be resolved: ``--interactive`` with nobody there, or a bad variable."""


@attrs.frozen(kw_only=True)
class Promptability:
    """Whether a person can be asked, and what decided it (``why``, in words)."""

    promptable: bool
    why: str


@attrs.frozen
class TerminalDevice:
    """The controlling terminal, opened once for reading and once for writing.

    Two streams, not one opened ``r+``: a terminal cannot seek, which a
    buffered read-write stream asks of its file.
    """

    input: TextIO
    output: TextIO

    def close(self) -> None:
        """Close both streams."""
        self.input.close()
        self.output.close()


def open_terminal() -> TerminalDevice:
    """The controlling terminal, for reading and writing; ``OSError`` when there is none."""
    device = Path(TERMINAL_DEVICE)
    reader = device.open(encoding="utf-8", errors="replace")
    try:
        writer = device.open("w", encoding="utf-8", errors="replace")
    except OSError:
        reader.close()
        raise
    return TerminalDevice(input=reader, output=writer)


def _terminal_problem() -> str | None:
    """Why the controlling terminal cannot take a prompt; ``None`` when it can."""
    try:
        terminal = open_terminal()
    except OSError as error:
        return f"no controlling terminal ({TERMINAL_DEVICE}: {os_reason(error)})"
    try:
        foreground = os.tcgetpgrp(terminal.input.fileno())
    except OSError:
        return None  # nothing to compare: the terminal opened, which is what RFD 104 asks
    finally:
        terminal.close()
    if foreground != os.getpgrp():
        return "the run is a background job of its terminal (a prompt would stop it)"
    return None


def _forced_off(environ: Mapping[str, str]) -> str | None:
    """The variable that makes the run not interactive, as ``NAME=value``; ``None`` for none."""
    for name in NONINTERACTIVE_VARIABLES:
        value = environ.get(name)
        if value is None or value.strip().lower() in _NO:
            continue
        if value.strip().lower() in _YES:
            return f"{name}={value}"
        raise PromptabilityError(
            f"{name}={value!r}: expected 1 or true (do not prompt), or 0, false or nothing"
        )
    return None


def resolve_promptability(
    interactive: bool | None, environ: Mapping[str, str] | None = None
) -> Promptability:
    """Resolve promptability once: ``interactive`` is the command line's flag (``None``: neither).

    ``environ`` is the process's environment unless given. Raises
    :class:`PromptabilityError` for ``--interactive`` where no person can be
    asked, and for a variable of :data:`NONINTERACTIVE_VARIABLES` with a
    value that says neither yes nor no.
    """
    if interactive is False:
        return Promptability(promptable=False, why="--no-interactive")
    if interactive is True:
        problem = _terminal_problem()
        if problem is not None:
            raise PromptabilityError(f"--interactive: {problem}")
        return Promptability(promptable=True, why="--interactive")
    forced = _forced_off(os.environ if environ is None else environ)
    if forced is not None:
        return Promptability(promptable=False, why=forced)
    problem = _terminal_problem()
    if problem is not None:
        return Promptability(promptable=False, why=problem)
    return Promptability(promptable=True, why=f"{TERMINAL_DEVICE} is a terminal to ask at")
