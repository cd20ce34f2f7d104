"""The live inbox channel: a run's questions on the web inbox as they are asked.

A run (``inquiry run --inbox``, or an embedder) opens a
:class:`LiveChannel`, hands its coordinator ``channel.prompter(inner)``
as the prompter and ``channel.observe`` as (one of) its ``on_step``
observers: every question for the person is then on the inbox's page as
soon as it is asked, and answered from whichever comes first, the page or
the terminal. :class:`LiveRuns` is the inbox's end: it finds the user's
live runs and keeps their questions. They meet in a directory that is the
user's alone (:func:`live_directory`), over one Unix socket per run, in
the messages of :mod:`._messages`. Nothing here needs the web extra.

Rules:

1. Nothing of this is found through a conversation directory: the live
   directory comes from the environment, and is refused when anybody but
   the user could use it.
2. An answer to a secret crosses the socket in memory, and is never
   written.
3. The first answer wins, once; the page and the terminal are each told
   when the other answered.
"""

from coordinator.adapters.live._channel import INBOX, LiveChannel, LivePrompter
from coordinator.adapters.live._messages import Asked, MessageError, Reply
from coordinator.adapters.live._runs import LiveQuestion, LiveRuns, NoLongerAskedError
from coordinator.adapters.live._spool import (
    LIVE_DIR_VARIABLE,
    LiveDirectoryError,
    live_directory,
)

__all__ = [
    "INBOX",
    "LIVE_DIR_VARIABLE",
    "Asked",
    "LiveChannel",
    "LiveDirectoryError",
    "LivePrompter",
    "LiveQuestion",
    "LiveRuns",
    "MessageError",
    "NoLongerAskedError",
    "Reply",
    "live_directory",
]
