"""The errors of the shell.

Strategy: anything read from outside (a conversation file, a tool's output, a
configuration file) that cannot be understood raises an error that names the
file, where in it, and what is wrong, and nothing is written. Errors from the
layers below (cattrs, orjson, the OS) are translated here, at the boundary.
No message ever carries an answer to a secret question.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "ConversationChangedError",
    "CoordinatorError",
    "StreamFormatError",
    "os_reason",
]


def os_reason(error: OSError) -> str:
    """What the OS said went wrong (``Permission denied``), without the path it names.

    Every message that names a file names it itself, shown as paths are shown.
    """
    return error.strerror or str(error)


class CoordinatorError(Exception):
    """Base class of the shell's own errors."""


class StreamFormatError(CoordinatorError, ValueError):
    """A conversation file could not be read (or a value could not be written to one).

    ``path`` is the file, ``index`` the entry of ``events.json`` at fault (or
    ``None`` when the problem is the file as a whole), ``problem`` what is wrong.
    """

    def __init__(self, path: Path | str | None, problem: str, *, index: int | None = None) -> None:
        """Name the file, the entry and the problem."""
        self.path = Path(path) if path is not None else None
        self.index = index
        self.problem = _elide(problem)
        where = str(self.path) if self.path is not None else "<stream>"
        if index is not None:
            where = f"{where}: entry {index}"
        super().__init__(f"{where}: {self.problem}")


#: The longest problem an error states: a problem quoting a huge value from the
#: file (a megabyte "timestamp", say) keeps its start and its end.
_LONGEST_PROBLEM = 400


def _elide(problem: str) -> str:
    if len(problem) <= _LONGEST_PROBLEM:
        return problem
    half = (_LONGEST_PROBLEM - 5) // 2
    return f"{problem[:half]} ... {problem[-half:]}"


class ConversationChangedError(CoordinatorError):
    """A file changed on disk after it was loaded; saving would lose that change."""

    def __init__(self, path: Path) -> None:
        """Name the file that changed."""
        self.path = path
        super().__init__(
            f"{path}: changed on disk since it was loaded; not overwriting it "
            "(load the conversation again and repeat the change)"
        )


class ConfigError(CoordinatorError):
    """A configuration file says something this build cannot accept."""

    def __init__(self, origin: str, key: str, problem: str) -> None:
        """Name the file, the dotted key, and what was expected."""
        self.origin = origin
        self.key = key
        self.problem = problem
        super().__init__(f"{origin}: {key}: {problem}")
