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

The whole story, with every error, is in ``docs/storage.md``.
"""

from coordinator.store._lock import ConversationLockedError
from coordinator.store._log import Durability
from coordinator.store._store import (
    Conversation,
    Layout,
    SaveResult,
    load_conversation,
    save_conversation,
)

__all__ = [
    "Conversation",
    "ConversationLockedError",
    "Durability",
    "Layout",
    "SaveResult",
    "load_conversation",
    "save_conversation",
]
