"""``inquiry tour``: the tour, played from the files installed with the command.

Theory of operation: the wheel carries ``examples/`` (:mod:`coordinator.cli._docs`
says how), so the tour a checkout plays as ``inquiry run
examples/tour/scenario.toml --answers examples/tour/answers.toml`` is played
from a wheel by ``inquiry tour``: :func:`tour_arguments` builds exactly that
``inquiry run`` command line over the installed files, and the command runs
it, parsing and all, as if it had been typed. Nothing is written next to the
installed files: the tools run in the conversation's own ``workspace``, as
for every scenario.

``inquiry tour --write DIR`` copies the installed ``examples/`` (the tour,
the MCP, park and local-tools examples, and their README, which explains
every key) to a new or empty directory, for a user to read and edit, and
play with ``inquiry run``. It never writes over anything: a DIR that exists
and is not an empty directory is refused, with nothing written.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from coordinator._errors import os_reason
from coordinator._text import shown_path
from coordinator.cli._docs import example_path

__all__ = ["DEFAULT_CONVERSATION", "TourError", "tour_arguments", "write_examples"]

#: Where ``inquiry tour`` records the tour unless told: the README's ``/tmp/inquiry-tour``.
DEFAULT_CONVERSATION = str(Path(tempfile.gettempdir()) / "inquiry-tour")


class TourError(Exception):
    """The examples cannot be written where asked; the message names the path and why."""


def tour_arguments(conversation: str, *, interactive: bool | None) -> list[str]:
    """The ``inquiry run`` arguments that play the installed tour into ``conversation``."""
    arguments = [
        "run",
        example_path("tour", "scenario.toml"),
        "--answers",
        example_path("tour", "answers.toml"),
        "--conversation",
        conversation,
    ]
    if interactive is not None:
        arguments.append("--interactive" if interactive else "--no-interactive")
    return arguments


def write_examples(target: Path) -> Path:
    """Copy the installed ``examples/`` to ``target`` (new, or an empty directory); return it.

    Byte-compiled files Python left beside the tools' scripts are not examples
    and are not copied.
    """
    try:
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise TourError(
                f"{shown_path(target)}: exists and is not an empty directory; "
                "not writing over it (give a new directory)"
            )
        shutil.copytree(
            example_path(),
            target,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )
    except OSError as error:
        raise TourError(f"{shown_path(target)}: cannot be written: {os_reason(error)}") from error
    return target
