"""``inquiry run --discard-turn``: discard an unfinished last turn, deleting nothing.

Theory of operation: RFD 023 offers two ways on from a turn a run left
unfinished: continue it, or discard it. Our discard keeps everything the
turn holds (what was asked, answered and run is history) and closes what
is open in it, through the engine
(:meth:`~coordinator.driver.ToolCoordinator.discard_turn`): each open
question ``Cancelled(discarded)``, each open tool call one error response
saying its turn was discarded, appended after the turn. The turn is then
finished, and the next run begins a new turn after it. ``inquiry sanitize``
(JP's repair, which removes what cannot be paired) is not a discard, and is
no longer suggested as one.

Two forms, both under the conversation's writer lock (taken before it is
read; another writer is refused, naming it, and nothing is written):

- ``inquiry run SCENARIO -c DIR --discard-turn``: discard, then play the
  scenario in a new turn. The runner checks the discard with every other
  input (:func:`plan_discard`) and carries it out where it begins to
  write (:meth:`Discard.carry_out`), the lock held throughout;
- ``inquiry run -c DIR --discard-turn``, without a scenario: discard only
  (:func:`discard_only`), for a conversation an embedder wrote, or to
  decide later what to play. The scenario may be left out only with
  ``--discard-turn``.

Either says on stdout what it closed. A conversation whose last turn
finished has nothing to discard (RFD 023: a no-op, said so). A last turn
with nothing open in it (it waits for the model's response or follow-up)
has nothing to close: nothing is written, it stays as it is, and the
scenario, if given, is played in a new turn after it (as ``--new-turn``
would). A turn holding requests nothing appended can close (ids asked
again later in the turn) cannot be discarded, only sanitized: exit 2,
nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from coordinator.cli._run_result import RunError
from coordinator.driver import ToolCoordinator
from coordinator.store import load_locked
from coordinator.stream import ASSISTANT_TOOLS, IncompleteTurn, find_incomplete_turn

if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from pathlib import Path

    from coordinator.store import Conversation

__all__ = ["Discard", "discard_only", "plan_discard"]


def _counted(count: int, thing: str) -> str:
    return f"{count} {thing}{'' if count == 1 else 's'}"


@attrs.frozen
class Discard:
    """The discard of a conversation's last turn, checked and not yet done.

    ``incomplete``: the turn, as read under the writer lock (``None``: it
    finished, and there is nothing to discard).
    """

    incomplete: IncompleteTurn | None

    def carry_out(self, conversation: Conversation, emit: Callable[[str], object]) -> None:
        """Discard the turn (the conversation saved), and say with ``emit`` what was closed."""
        incomplete = self.incomplete
        if incomplete is None:
            emit("nothing to discard: the conversation's last turn finished")
            return
        number = incomplete.turn.index + 1
        if not incomplete.blocked:
            emit(
                f"turn {number} did not finish, but nothing is open in it (it waits for the "
                "model): nothing to close, nothing written"
            )
            return
        discarded = ToolCoordinator(conversation, tools={}).discard_turn(incomplete)
        questions = _counted(len(discarded.questions), "question")
        calls = _counted(len(discarded.tool_calls), "tool call")
        emit(
            f"discarded the unfinished turn {number}: closed {questions} and {calls}, "
            "nothing deleted"
        )


def plan_discard(conversation: Conversation, *, assistant_tools: Collection[str]) -> Discard:
    """Check that the last turn of ``conversation`` (held under its lock) can be discarded.

    ``assistant_tools`` are the tools whose questions are the assistant's
    (to read which call asked what). Raises :class:`RunError` when it
    cannot be; nothing is written here.
    """
    incomplete = find_incomplete_turn(conversation.stream, assistant_tools=assistant_tools)
    if incomplete is not None and incomplete.stuck:
        ids = ", ".join(located.id for located in incomplete.stuck)
        raise RunError(
            f"turn {incomplete.turn.index + 1} cannot be discarded: it holds requests nothing "
            f"appended can close ({ids}: their ids were asked again later in the turn); only "
            "inquiry sanitize can repair it; nothing was written"
        )
    return Discard(incomplete)


def discard_only(path: Path, *, emit: Callable[[str], object]) -> None:
    """``inquiry run -c DIR --discard-turn`` without a scenario: discard, play nothing.

    A directory holding no conversation is refused as every command refuses
    it (:func:`~coordinator.store.load_locked`), nothing created.
    """
    conversation = load_locked(path)
    try:
        plan_discard(conversation, assistant_tools=ASSISTANT_TOOLS).carry_out(conversation, emit)
    finally:
        conversation.close()
