"""The workspace of ``inquiry run``: where local tools run, seeded from the scenario's files.

Theory of operation: the workspace is ``<conversation>/workspace``. At the
start of every run, :func:`check_seed` refuses a seed the tools must not see
(one inside the conversation) before anything is written, and then
:func:`seed_workspace` copies the scenario's ``[workspace] seed`` into it,
replacing earlier copies and leaving whatever else the tools put there.

Rule: seeding never writes outside the workspace nor through a link a tool
left there, and never copies the conversation into it; whatever would
stop the copy is found before the run writes anything.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from coordinator._errors import ConfigError, StreamFormatError, os_reason
from coordinator._text import shown_path
from coordinator.cli._run_result import RunError
from coordinator.store import open_file, short_name

if TYPE_CHECKING:
    from collections.abc import Iterator

    from coordinator.cli._scenario import Scenario

__all__ = ["WORKSPACE", "check_seed", "seed_workspace"]

#: The workspace the scenario's local tools run in, inside the conversation directory.
WORKSPACE = "workspace"
#: The seed itself, as a path relative to it.
_TOP = PurePath()


def check_seed(scenario: Scenario, workspace: Path, conversation: Path) -> None:
    """Refuse, before anything is written, a seed that :func:`seed_workspace` cannot copy.

    A seed inside the conversation is refused: its files would be copied to
    its own tools. (A conversation inside the seed is left out of the copy
    instead.) So is a seed that cannot be read, or that has a file where the
    workspace has a directory: found now, not once the conversation is saved.
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
    with _seeding(workspace):
        # The relative directories the copy will make anew (nothing of the
        # workspace under them can be in the way): "." when the workspace is.
        anew = set() if _is_directory(workspace) else {_TOP}
        for source, name, is_directory in _seed_entries(scenario.seed, _real(conversation)):
            made_anew = name.parent in anew
            if is_directory:
                if made_anew or not _is_directory(workspace / name):
                    anew.add(name)
                continue
            _readable(source)
            if not made_anew:
                _refuse_directory(workspace / name)


def _readable(source: Path) -> None:
    """Refuse ``source`` unless its first byte can be read, naming it.

    Opening is not enough: a file may open and fail on read (``EIO``, as
    ``/proc/self/mem`` does even for root), and that read's error carries no
    file name, which would make the message name the workspace instead.
    """
    descriptor, _ = open_file(source)
    try:
        os.read(descriptor, 1)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(source)) from None
    finally:
        os.close(descriptor)


def seed_workspace(scenario: Scenario, workspace: Path, conversation: Path) -> None:
    """Copy the scenario's seed files into the workspace, replacing earlier copies.

    The workspace is the tools' to change, and a tool may have left a link
    anywhere in it (``notes.txt -> ../events.json``): seeding never writes
    outside the workspace nor through a link. The workspace itself is made a
    real directory, seed or not (a link there is replaced), and a link where
    the seed puts a file or a directory is replaced by it (the link, not
    what it points to); a file is copied to a new file that then takes the
    old one's name, so not even a hard link to another file is written
    through. A file where the seed has a directory is replaced by it too; a
    directory where the seed has a file is an error (exit 2, found by
    :func:`check_seed` before anything was written), since replacing it
    would delete what the tools put there. Whatever else the workspace holds
    is left as it is.

    From the seed: a file is copied (a link to a file, the file it names);
    what is not a file (a FIFO, a device, a socket, or a link to one) is
    left out, and one that turns into one after it was listed is refused
    when opened, never waited on or read for ever (it is copied in pieces,
    so no size limit applies); a link to a directory is not followed, so a
    link to a parent cannot loop;
    nothing inside the conversation is copied, so a seed that holds the
    conversation (``seed = "."``, ``-c ./conversation``) neither copies it
    into its own workspace nor shows ``events.json`` to the tools.
    """
    with _seeding(workspace):
        _real_directory(workspace)
        if scenario.seed is None:
            return
        for source, name, is_directory in _seed_entries(scenario.seed, _real(conversation)):
            if is_directory:
                _real_directory(workspace / name)
            else:
                _replace_file(source, workspace / name)


@contextlib.contextmanager
def _seeding(workspace: Path) -> Iterator[None]:
    """Turn what the OS says while seeding into one line naming the file (exit 2)."""
    try:
        yield
    except OSError as error:
        where = error.filename if error.filename is not None else workspace
        raise RunError(
            f"{shown_path(where)}: cannot seed the workspace: {os_reason(error)}"
        ) from None
    except StreamFormatError as error:  # not a regular file when opened (it changed)
        where = error.path if error.path is not None else workspace
        problem = error.problem
        raise RunError(f"{shown_path(where)}: cannot seed the workspace: {problem}") from None


def _seed_entries(
    source: Path, leave_out: Path, relative: PurePath = _TOP
) -> Iterator[tuple[Path, PurePath, bool]]:
    """What the seed ``source`` gives, a directory before what it holds, by name.

    Each as (the seed's path, the path relative to the seed, whether it is a
    directory), less what is inside ``leave_out``.
    """
    with os.scandir(source) as scanned:
        entries = sorted(scanned, key=lambda entry: entry.name)
    for entry in entries:
        path, name = Path(entry.path), relative / entry.name
        if entry.is_dir(follow_symlinks=False):
            if _real(path) == leave_out:
                continue
            yield path, name, True
            yield from _seed_entries(path, leave_out, name)
        elif entry.is_file() and not _real(path).is_relative_to(leave_out):
            yield path, name, False


def _is_directory(path: Path) -> bool:
    """Whether ``path`` is a real directory (a link to one is not)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _refuse_directory(target: Path) -> None:
    """Raise when the seed's file would replace a directory the tools made."""
    if _is_directory(target):
        problem = "is a directory where the seed has a file: remove it"
        raise IsADirectoryError(errno.EISDIR, problem, str(target))


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


def _real(path: Path) -> Path:
    """``path`` with every link resolved; unlike ``Path.resolve``, never raising on a loop."""
    return Path(os.path.realpath(path))


def _replace_file(source: Path, target: Path) -> None:
    """Copy ``source`` to a new file beside ``target``, then give it ``target``'s name.

    Contents only, not modes: a seed in a read-only checkout still gives the
    tools files they can edit, and copies that the next run can replace.
    """
    _refuse_directory(target)  # checked before anything was written; checked again
    # The start of the name only: a seed file's name may be as long as a name can be.
    temporary = target.with_name(f".{short_name(target.name)}.{secrets.token_hex(8)}.seeding")
    # O_EXCL: a fresh file, never one (or a link) that is already there.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as copy:
            fd, _ = open_file(source)  # never a FIFO waited on, nor a device read for ever
            with os.fdopen(fd, "rb") as original:
                shutil.copyfileobj(original, copy)
        temporary.replace(target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
