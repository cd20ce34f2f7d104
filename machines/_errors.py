"""The errors of the pure layer.

Strategy: a record that would be invalid is refused at construction with
:class:`RecordError` (a :class:`ValueError`), so an invalid record cannot exist.
A machine asked to do something its table does not allow raises
:class:`IllegalTransitionError` *before* anything changes: the machine's state,
its records and the turn state are exactly what they were. Messages never carry
an answer to a secret question.
"""

from __future__ import annotations

__all__ = [
    "IllegalTransitionError",
    "InvalidAnswerError",
    "MachineError",
    "RecordError",
]


class RecordError(ValueError):
    """A record was given a value it cannot hold (wrong type, missing field)."""


class MachineError(Exception):
    """Base class of everything a machine refuses to do."""


class IllegalTransitionError(MachineError):
    """A trigger was fired in a state whose table row does not allow it.

    Nothing changed: the machine is still in ``state``.
    """

    def __init__(self, *, machine: str, trigger: str, state: str, detail: str = "") -> None:
        """Describe the refused trigger."""
        self.machine = machine
        self.trigger = trigger
        self.state = state
        message = f"{machine} machine can't handle trigger {trigger!r} in state {state!r}"
        if detail:
            message = f"{message}: {detail}"
        super().__init__(message)


class InvalidAnswerError(MachineError):
    """An answer handed to a machine does not fit its question.

    The message names the question and the expected form, never the answer
    (it may be a secret).
    """
