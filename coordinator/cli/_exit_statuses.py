"""The exit statuses ``inquiry check`` adds, apart so that building the parser imports no engine.

``inquiry --help`` shows them in ``check``'s epilog: the parser is built for
every command, ``--version`` and ``--help`` included, which import nothing of
the engine (``docs/performance.md``, *Start-up*). :mod:`coordinator.cli._check`
decides which one a conversation gets.
"""

from __future__ import annotations

__all__ = ["EXIT_AWAITING_MODEL", "EXIT_BEING_WRITTEN", "EXIT_INCOMPLETE_TURN"]

#: ``inquiry check``'s exit status when the last turn is blocked on an open
#: tool call or question (RFD 023: it is to be continued or discarded).
EXIT_INCOMPLETE_TURN = 3
#: ``inquiry check``'s exit status when the last turn did not finish but
#: nothing is open in it: it waits for the model's response or follow-up.
EXIT_AWAITING_MODEL = 4
#: ``inquiry check``'s exit status when a live process holds the conversation's
#: writer lock, its pid checked (:func:`coordinator.store.holder_of`): a run at
#: work there, whose last turn is in progress, not dead. A lock whose holder
#: cannot be checked names nobody and is not trusted: the turn is then
#: reported as it stands.
EXIT_BEING_WRITTEN = 5
