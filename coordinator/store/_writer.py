"""A program that means to write a conversation: read it under the lock, or learn who writes it.

The store takes a conversation's writer lock on its first save that writes
(:mod:`coordinator.store._lock`). A program that reads a conversation in
order to go on writing it (``inquiry run --continue-turn``) must take the
lock *before* it reads: read first, the file could change between the read
and the lock (the run that died may have been saving). :func:`load_locked`
does that. A program that only decides from what it read whether to write
at all (``inquiry run`` refusing an unfinished turn) asks
:func:`refuse_other_writer` whether another process is at work there, so
that it names that writer instead of the turn it is playing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from coordinator._errors import StreamFormatError, os_reason
from coordinator.store._lock import LOCK_FILE, acquire, release
from coordinator.store._store import EVENTS, load_conversation

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.store._store import Conversation

__all__ = ["load_locked", "refuse_other_writer"]


def load_locked(path: Path) -> Conversation:
    """The conversation in directory ``path``, read once under its writer lock, which it holds.

    Read twice (once to look, once under the lock), its warnings (a repaired
    event id, say) would be told twice. Raises
    :class:`~coordinator.store.ConversationLockedError` when another process
    writes it, and :class:`~coordinator.StreamFormatError` naming the lock
    file when that cannot be made.
    """
    try:
        # A directory that holds neither a stream nor a lock file is no
        # conversation: no lock file is made there, and the load says so.
        lock = acquire(path, create=os.path.lexists(path / EVENTS))
    except OSError as error:
        raise StreamFormatError(
            path / LOCK_FILE, f"cannot be written: {os_reason(error)}"
        ) from None
    try:
        conversation = load_conversation(path)
        conversation.__enter__()  # shares the lock taken above, and keeps it
    finally:
        if lock is not None:
            release(lock)
    return conversation


def refuse_other_writer(conversation: Conversation) -> None:
    """Raise :class:`~coordinator.store.ConversationLockedError` if another process writes it.

    The lock is taken for an instant, and only where a lock file exists: a
    directory nobody has written stays as it is. For a conversation that
    does not hold its lock: like ``with conversation:``, this lets go of it.
    """
    if conversation.path is not None and (conversation.path / LOCK_FILE).exists():
        with conversation:
            pass
