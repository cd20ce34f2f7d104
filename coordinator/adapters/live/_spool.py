"""Where a live run and an inbox meet: a per-user directory of runs' sockets.

Theory of operation: a run that puts its questions on the inbox listens
on a Unix socket of its own, ``<directory>/<pid>-<random>.sock``; an inbox
finds the runs by listing the directory, and connects to each. The
directory is the user's alone, and is checked each time it is used:

- ``INQUIRY_LIVE_DIR`` when set; else ``$XDG_RUNTIME_DIR/inquiry-live``
  (a per-user directory the login manager makes, mode 0700); else
  ``<tempdir>/inquiry-live-<uid>``.
- It is made with mode 0700 when missing. Found, it must be a directory
  (not a link to one), owned by this user, and neither readable nor
  writable by anybody else: otherwise a stranger could have made it to
  watch or answer the user's runs, and it is refused, saying why.

Nothing in a conversation directory says where the runs are (design rule
8): the directory is the user's, found from the environment. A socket
that another user's process connects to is refused by its peer's
credentials as well (:mod:`coordinator.adapters.live._channel`), where the
system tells them.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from coordinator._errors import CoordinatorError, os_reason
from coordinator._text import shown_path

__all__ = [
    "LIVE_DIR_VARIABLE",
    "SOCKET_SUFFIX",
    "LiveDirectoryError",
    "live_directory",
    "run_sockets",
]

#: The variable that names the directory (tests, or two inboxes kept apart).
LIVE_DIR_VARIABLE = "INQUIRY_LIVE_DIR"
#: What a run's socket is called: ``<pid>-<random>.sock``.
SOCKET_SUFFIX = ".sock"


class LiveDirectoryError(CoordinatorError):
    """The directory where live runs and the inbox meet cannot be used; it says why."""


def _default() -> Path:
    named = os.environ.get(LIVE_DIR_VARIABLE)
    if named:
        return Path(named)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "inquiry-live"
    return Path(tempfile.gettempdir()) / f"inquiry-live-{os.geteuid()}"


def live_directory(*, create: bool = True) -> Path:
    """The user's directory of live runs' sockets, checked (and made, with ``create``).

    Raises :class:`LiveDirectoryError` when it is not the user's alone.
    """
    path = _default()
    if create:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise LiveDirectoryError(
                f"{shown_path(path)}: cannot be made: {os_reason(error)}"
            ) from None
    try:
        status = path.lstat()
    except FileNotFoundError:
        return path
    except OSError as error:
        raise LiveDirectoryError(
            f"{shown_path(path)}: cannot be read: {os_reason(error)}"
        ) from None
    problem = _distrusted(status)
    if problem is not None:
        raise LiveDirectoryError(
            f"{shown_path(path)}: {problem}, so a stranger could watch or answer your runs "
            f"there; not used (remove it, or name another with {LIVE_DIR_VARIABLE})"
        )
    return path


def _distrusted(status: os.stat_result) -> str | None:
    if not stat.S_ISDIR(status.st_mode):
        return "is not a directory (or is a symbolic link)"
    if status.st_uid != os.geteuid():
        return f"belongs to user {status.st_uid}, not to you ({os.geteuid()})"
    if status.st_mode & 0o077:
        return f"may be used by others (mode {stat.S_IMODE(status.st_mode):o}; 700 expected)"
    return None


def run_sockets(directory: Path) -> list[Path]:
    """The sockets of the runs in ``directory`` now (sockets only, never a link to one)."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    return sorted(
        Path(entry.path)
        for entry in entries
        if entry.name.endswith(SOCKET_SUFFIX)
        and stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    )
