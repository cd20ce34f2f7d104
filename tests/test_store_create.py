"""A new conversation appears whole or not at all: in a new directory, and in an empty one.

The first save builds the directory beside its place and renames it there,
replacing an empty directory the user made (``mkdir conv; inquiry run ... -c
conv``) too. So a creator killed at any moment leaves the directory as it
was (absent, or empty) and the next run starts it afresh with its title, or
the whole conversation. An empty directory that cannot be replaced (the
working directory, one the OS will not rename over) is written in place, as
before. Names of up to 255 bytes work, and so do two creators racing: the
loser is told who won, by pid.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingIds, FixedClock
from run_helpers import TOUR_ANSWERS, TOUR_SCENARIO, cli

from coordinator import Conversation, StreamFormatError, load_conversation, save_conversation
from coordinator.store._atomic import sync_directory as real_sync
from coordinator.store._lock import LOCK_FILE
from machines import ChatRequest, TurnStart

PATIENCE = 60
FILES = ["base_config.json", "events.json", "metadata.json"]


def _new(title: str = "new") -> Conversation:
    conversation = Conversation.new(
        metadata={"title": title}, base_config={}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="hi"))
    return conversation


def _names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def _whole(directory: Path, title: str = "new") -> None:
    """``directory`` holds the conversation of :func:`_new`, every file of it."""
    assert _names(directory) == sorted([LOCK_FILE, *FILES])
    loaded = load_conversation(directory)
    assert loaded.metadata == {"title": title}
    assert len(loaded.stream) == 2


# ------------------------------------------------------- an empty directory


#: Save a new conversation into sys.argv[1], the process ending (as if killed)
#: when it is about to create a file named sys.argv[2].
_KILLED_CREATOR = """
import os, sys
from coordinator import Conversation, save_conversation
real_open = os.open
def open_(path, flags, *args, **kwargs):
    if flags & os.O_CREAT and os.path.basename(os.fsdecode(path)) == sys.argv[2]:
        os._exit(3)
    return real_open(path, flags, *args, **kwargs)
os.open = open_
conversation = Conversation.new(metadata={"title": "cut short"}, base_config={})
save_conversation(conversation, sys.argv[1])
"""


def _killed_creating(directory: Path, name: str) -> None:
    """A process saving a new conversation into ``directory``, killed as it creates ``name``."""
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_CREATOR, str(directory), name],
        capture_output=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == 3, done.stderr


@pytest.mark.parametrize("name", ["metadata.json", "events.json"])
def test_a_first_save_into_an_empty_directory_killed_midway_leaves_it_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Killed before metadata.json (or events.json): the next run starts anew, titled."""
    directory = tmp_path / "conv"
    directory.mkdir()
    _killed_creating(directory, name)
    assert _names(directory) == []
    run = ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty", "-c", directory)
    status, _, err = cli(*run, capsys=capsys)
    assert (status, err) == (0, "")
    assert load_conversation(directory).metadata == {"title": "The inquiry coordinator tour"}
    # The dead creator's staging directory is gone too.
    assert _names(tmp_path) == ["conv"]


def test_a_first_save_into_an_empty_directory_is_whole_and_keeps_its_mode(
    tmp_path: Path,
) -> None:
    """The directory the user made holds the whole conversation, with the bits it had."""
    directory = tmp_path / "conv"
    directory.mkdir()
    directory.chmod(0o710)
    result = save_conversation(_new(), directory)
    assert sorted(path.name for path in result.written) == FILES
    _whole(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o710
    assert _names(tmp_path) == ["conv"]


def test_a_link_to_an_empty_directory_stays_a_link_to_the_conversation(tmp_path: Path) -> None:
    """`-c link` where the link names an empty directory: the conversation is where it leads."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    save_conversation(_new(), link)
    assert link.is_symlink()
    _whole(real)
    assert _names(tmp_path) == ["link", "real"]


@pytest.mark.parametrize("named", ["dot", "absolute"])
def test_the_empty_working_directory_is_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    """Replacing the working directory would leave this process nowhere: written in place."""
    directory = tmp_path / "conv"
    directory.mkdir()
    monkeypatch.chdir(directory)
    before = Path.cwd().stat().st_ino
    conversation = _new()
    save_conversation(conversation, Path() if named == "dot" else directory)
    assert Path.cwd().stat().st_ino == before
    _whole(Path())
    assert _names(tmp_path) == ["conv"]
    conversation.close()


def test_an_empty_directory_the_os_will_not_rename_over_is_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount point, say (EBUSY): the files are written in it, and no staging is left."""
    directory = tmp_path / "conv"
    directory.mkdir()
    real_rename = os.rename

    def rename(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if Path(os.fsdecode(target)) == directory:
            raise OSError(errno.EBUSY, "Device or resource busy", os.fsdecode(target))
        real_rename(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    before = directory.stat().st_ino
    save_conversation(_new(), directory)
    assert directory.stat().st_ino == before
    _whole(directory)
    assert _names(tmp_path) == ["conv"]


def test_a_directory_that_is_not_empty_is_written_in_place(tmp_path: Path) -> None:
    """A file of the user's there: the conversation is written beside it, the file kept."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine\n")
    save_conversation(_new(), directory)
    assert (directory / "notes.txt").read_text() == "mine\n"
    assert _names(directory) == sorted([LOCK_FILE, "notes.txt", *FILES])


# ------------------------------------------------------------ long names


@pytest.mark.parametrize("where", ["new", "empty"])
@pytest.mark.parametrize("name", ["c" * 255, "\u00e9" * 127 + "c"], ids=["ascii", "utf8"])
def test_a_conversation_named_with_255_bytes_is_created(
    tmp_path: Path, where: str, name: str
) -> None:
    """The longest name a directory may have (255 bytes) is not too long for the store."""
    assert len(os.fsencode(name)) == 255
    directory = tmp_path / name
    if where == "empty":
        directory.mkdir()
    conversation = _new()
    save_conversation(conversation, directory)
    _whole(directory)
    conversation.stream.append(ChatRequest(content="again"))
    save_conversation(conversation)
    assert len(load_conversation(directory).stream) == 3
    assert _names(tmp_path) == [name]


def test_a_dead_creators_staging_for_a_long_name_is_removed(tmp_path: Path) -> None:
    """Killed as it created events.json: the next creation of that name removes its leftovers."""
    directory = tmp_path / ("d" * 255)
    _killed_creating(directory, "events.json")
    assert not directory.exists()
    assert len(_names(tmp_path)) == 1  # the dead creator's staging directory
    save_conversation(_new(), directory)
    _whole(directory)
    assert _names(tmp_path) == [directory.name]


# -------------------------------------------------------- two creators race


#: Create a new conversation in sys.argv[1], say so, and hold it until stdin closes.
_RIVAL = """
import os, sys
from coordinator import Conversation, save_conversation
conversation = Conversation.new(metadata={"title": "rival"}, base_config={})
save_conversation(conversation, sys.argv[1])
print(f"holding {os.getpid()}", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("rival", ["holding", "ended"])
@pytest.mark.parametrize("where", ["new", "empty"])
def test_the_loser_of_two_creators_is_told_the_winners_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, rival: str
) -> None:
    """Another process made the directory first: refused, naming its pid (or that it is gone)."""
    directory = tmp_path / "conv"
    if where == "empty":
        directory.mkdir()
    rivals: list[subprocess.Popen[bytes]] = []

    def sync_directory(path: Path) -> None:
        """The rival creates the directory just before this creator renames its own there."""
        if path.name.endswith(".new") and not rivals:
            process = subprocess.Popen(
                [sys.executable, "-c", _RIVAL, str(directory)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            rivals.append(process)
            assert process.stdout is not None
            assert process.stdout.readline().decode().strip() == f"holding {process.pid}"
            if rival == "ended":
                process.communicate(timeout=PATIENCE)
        real_sync(path)

    monkeypatch.setattr("coordinator.store._create.sync_directory", sync_directory)
    try:
        with pytest.raises(StreamFormatError) as caught:
            save_conversation(_new(), directory)
        (process,) = rivals
        holder = f"pid {process.pid}" if rival == "holding" else "its pid is not known"
        assert str(caught.value) == (
            f"{directory}: was created by another process ({holder}) while this conversation "
            "was being saved; nothing was saved (load it, or save to another directory)"
        )
    finally:
        for process in rivals:
            if process.returncode is None:
                process.communicate(timeout=PATIENCE)
    assert load_conversation(directory).metadata == {"title": "rival"}
    assert _names(tmp_path) == ["conv"]
