"""The store: a conversation directory on disk.

The fourth layer, on the wire. :func:`load_conversation` reads a directory
(``events.json``, ``metadata.json``, ``base_config.json``) into a
:class:`Conversation`; :func:`save_conversation` writes back what changed.

Rules:

1. Each file is replaced atomically (temporary file, fsync, rename,
   directory fsync): a crash leaves the old or the new version.
2. A file that could not be read, that changed on disk since it was read,
   or that the conversation did not load or write is never overwritten; the
   error names the file and what is wrong. Every file is checked before the
   first is written.
3. A conversation is saved in the layout it was loaded in.
"""

from coordinator.store._store import (
    Conversation,
    Layout,
    SaveResult,
    load_conversation,
    save_conversation,
)

__all__ = ["Conversation", "Layout", "SaveResult", "load_conversation", "save_conversation"]
