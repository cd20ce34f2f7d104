"""How a command shows the library's warnings: on stderr, each as one line a terminal only shows.

The library logs to a ``NullHandler`` (it is not its place to print); a
person at the command line is told its warnings, for that command only:
:func:`shown_warnings` adds a handler for the time a command runs. Apart from
:mod:`coordinator.cli._main`, so that ``inquiry --version`` and ``--help``,
which return before any command runs, never import :mod:`logging`.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from coordinator._text import shown_path, shown_text

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

__all__ = ["shown_warnings"]


def _not_a_notice(record: logging.LogRecord) -> bool:
    """Whether ``record`` is a warning of its own, not a notice the run's progress prints.

    The driver logs each notice it tells its observer (a secret question's
    default) for callers that do not observe its steps; ``inquiry run`` prints
    every notice as a ``!`` line of its progress, so the log would say it a
    second time on the same screen.
    """
    return getattr(record, "notice", None) is None


class _ShownFormatter(logging.Formatter):
    """Formats a warning as one line a terminal only shows: it may name a tool or quote a file."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line, every character a terminal acts on escaped."""
        return shown_text(shown_path(super().format(record)))


@contextlib.contextmanager
def shown_warnings(stream: TextIO) -> Iterator[None]:
    """Show the library's warnings on ``stream`` (``inquiry: ...``) while the block runs."""
    logger = logging.getLogger("coordinator")
    warnings = logging.StreamHandler(stream)
    warnings.setLevel(logging.WARNING)
    warnings.setFormatter(_ShownFormatter("inquiry: %(message)s"))
    warnings.addFilter(_not_a_notice)
    logger.addHandler(warnings)
    try:
        yield
    finally:
        logger.removeHandler(warnings)
