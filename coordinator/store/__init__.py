"""The store: a conversation directory on disk.

The fourth layer, on the wire. :func:`load_conversation` reads a directory
(``events.json``, ``metadata.json``, ``base_config.json``) into a
:class:`Conversation`; :func:`save_conversation` writes back what changed.

Rules:

1. Each file is replaced atomically (temporary file, fsync, rename,
   directory fsync): a crash leaves the old or the new version. A save that
   only appended entries to the stream appends them in place, the same bytes
   a rewrite would give, with an undo record, or, when it need not leave
   every file synced (:class:`Durability`), behind a log in the lock file,
   with one sync: a crash leaves the old or the new version there too.
2. A file that could not be read, that changed on disk since it was read,
   or that the conversation did not load or write is never overwritten; the
   error names the file and what is wrong. Every file is checked before the
   first is written.
3. A conversation is saved in the layout it was loaded in; a new one appears
   whole or not at all.
4. One process writes a conversation at a time: a save that writes takes the
   directory's lock, and another process's is refused with
   :class:`ConversationLockedError`, naming it when its pid is checked.
   Readers take no lock.
5. A file that is not a regular file, or is larger than the limit, is
   refused before it is read.
6. The store's own files beside a conversation direct nothing they were not
   trusted for: a lock file that is not a regular file with one link, the
   writer's own, writable by nobody else and opened for writing is refused
   (readers ignore its record, warning); a record of running tools stops
   only a group whose leader holds its run's token.

A program that reads a conversation to go on writing it takes the lock
first: :func:`load_locked` reads it under the lock, which it then holds;
:func:`refuse_other_writer` says whether another process is writing one
already read, and :func:`holder_of` names the live process that holds a
directory's lock, if one does, without taking it (a reader's question).
The layers above write their other files as the store writes
its own: :func:`atomic_write` and :func:`write_output` (an export, a
diagram), :func:`open_file` and :func:`read_regular` (a configuration file,
a workspace's seed: only a regular file, never waited for), and
:class:`RunningTools` records the tools a writer runs, so that the next
writer stops those a writer that died left running.

The whole story, with every error, is in ``docs/storage.md``.
"""

from coordinator.store._atomic import atomic_write, short_name, write_output
from coordinator.store._files import open_file, read_regular
from coordinator.store._lock import ConversationLockedError, holder_of
from coordinator.store._log import Durability
from coordinator.store._running import RunningTools
from coordinator.store._store import (
    Conversation,
    Layout,
    SaveResult,
    load_conversation,
    save_conversation,
)
from coordinator.store._writer import load_locked, refuse_other_writer

__all__ = [
    "Conversation",
    "ConversationLockedError",
    "Durability",
    "Layout",
    "RunningTools",
    "SaveResult",
    "atomic_write",
    "holder_of",
    "load_conversation",
    "load_locked",
    "open_file",
    "read_regular",
    "refuse_other_writer",
    "save_conversation",
    "short_name",
    "write_output",
]
