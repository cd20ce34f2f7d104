"""The exit statuses ``inquiry check`` adds, apart so that building the parser imports no engine.

``inquiry --help`` shows them in ``check``'s epilog: the parser is built for
every command, ``--version`` and ``--help`` included, which import nothing of
the engine (``docs/performance.md``, *Start-up*). :mod:`coordinator.cli._check`
decides which one a conversation gets.
"""

from __future__ import annotations

__all__ = ["EXIT_AWAITING_MODEL", "EXIT_INCOMPLETE_TURN"]

#: ``inquiry check``'s exit status when the last turn is blocked on an open
#: tool call or question (RFD 023: it is to be continued or discarded).
EXIT_INCOMPLETE_TURN = 3
#: ``inquiry check``'s exit status when the last turn did not finish but
#: nothing is open in it: it waits for the model's response or follow-up.
EXIT_AWAITING_MODEL = 4
