"""A program that means to write: the store reads it under the lock, or names who writes it."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from process_helpers import CRASH_PROGRAMS, other_process_saves
from test_store_lock import _conversation

from coordinator import StreamFormatError, load_conversation
from coordinator.store import ConversationLockedError, load_locked, refuse_other_writer
from coordinator.store._lock import LOCK_FILE

if TYPE_CHECKING:
    from pathlib import Path


def test_load_locked_reads_the_conversation_and_holds_its_lock_until_closed(
    tmp_path: Path,
) -> None:
    """Another process's save is refused while the loaded conversation is open, not after."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_locked(directory)
    assert list(conversation.stream) == list(load_conversation(directory).stream)
    assert other_process_saves(directory).startswith("refused ")
    conversation.close()
    assert other_process_saves(directory) == "saved"


def test_load_locked_makes_no_lock_file_where_there_is_no_conversation(tmp_path: Path) -> None:
    """A directory with neither a stream nor a lock file is refused, and left as it was."""
    directory = tmp_path / "other"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    with pytest.raises(StreamFormatError, match="is not a conversation"):
        load_locked(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt"]


def test_load_locked_names_a_lock_file_it_cannot_open_and_reads_nothing(tmp_path: Path) -> None:
    """A lock file that cannot be opened is a StreamFormatError naming it."""
    directory = _conversation(tmp_path / "conv")
    (directory / LOCK_FILE).unlink()
    (directory / LOCK_FILE).mkdir()
    with pytest.raises(StreamFormatError) as caught:
        load_locked(directory)
    assert caught.value.path == directory / LOCK_FILE


def test_refuse_other_writer_makes_no_lock_file_where_there_is_none(tmp_path: Path) -> None:
    """A directory without a lock file is left without one."""
    directory = _conversation(tmp_path / "conv")
    (directory / LOCK_FILE).unlink()
    refuse_other_writer(load_conversation(directory))
    assert not (directory / LOCK_FILE).exists()


def test_refuse_other_writer_keeps_no_lock(tmp_path: Path) -> None:
    """Where nobody else writes it returns, and another process may save afterwards."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_conversation(directory)
    refuse_other_writer(conversation)
    assert other_process_saves(directory) == "saved"


def test_refuse_other_writer_names_the_process_that_writes(tmp_path: Path) -> None:
    """While another process holds the lock, it is named in a ConversationLockedError."""
    directory = _conversation(tmp_path / "conv")
    conversation = load_conversation(directory)
    holder = subprocess.Popen(
        [sys.executable, str(CRASH_PROGRAMS), "hold", str(directory)], stdout=subprocess.PIPE
    )
    with holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().decode().strip() == f"holding {holder.pid}"
            with pytest.raises(ConversationLockedError) as caught:
                refuse_other_writer(conversation)
            assert caught.value.pid == holder.pid
        finally:
            holder.kill()
