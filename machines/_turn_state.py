"""What one turn remembers, and nothing more.

Theory of operation: a fresh :class:`TurnState` is built for every turn and
dropped at its end. It holds three things, each owned by one caller:

- the **attempt counter**, keyed ``(tool_call_id, question_id)``, which makes
  inquiry ids ``<tool_call_id>.<question_id>.<attempt>`` unique within the
  turn, even when a provider reuses a tool-call id across cycles. An id is
  allocated once, when its request is recorded, and is never rebuilt later.
- ``remembered_tool_answers``, keyed ``<tool_name>.<question_id>``: answers a
  person asked to remember for the rest of the turn (``Y``/``N``). Inside, the
  two parts stay apart: tool ``a.b`` asking ``c`` and tool ``a`` asking
  ``b.c`` join alike, and one must never answer the other.
- ``remembered_permission_decisions``, keyed ``<tool_name>.__permission__``,
  values ``"y"`` or ``"n"``: permission answers remembered the same way.

Neither cache ever holds a cancellation, a redaction or a secret: secret
questions are bypassed on read *and* refused on write, and so are questions
whose tool says their answer may not be reused (``persistence = none``, RFD
083: ``ask_user``, asked afresh every time). The cache keys are not
inquiry ids (those identify one request in the stream; these identify a
question across tool calls).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import attrs

from machines._errors import MachineError
from machines._json import JsonValue
from machines.validators import is_json

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from machines._questions import Question

__all__ = ["CachedAnswer", "PermissionDecision", "TurnState"]

#: A remembered permission: run (``"y"``) or skip (``"n"``).
PermissionDecision = Literal["y", "n"]

_PERMISSION = "__permission__"


@attrs.frozen
class CachedAnswer:
    """An answer found in the turn cache (``value`` may itself be ``false``)."""

    value: JsonValue


def _frozen(ids: Iterable[str]) -> frozenset[str]:
    return frozenset(ids)


def _permission_key(tool_name: str) -> str:
    return f"{tool_name}.{_PERMISSION}"


@attrs.define
class TurnState:
    """The per-turn attempt counter and the two remember-for-the-turn caches.

    ``recorded_ids`` are inquiry ids the turn already holds on disk, when a
    turn is resumed: new ids never repeat them.
    """

    _attempts: dict[tuple[str, str], int] = attrs.field(factory=dict, init=False)
    # Ids already in the stream for this turn (a turn resumed after a restart):
    # allocation skips them, so ids stay unique without parsing any id.
    _recorded: frozenset[str] = attrs.field(
        factory=frozenset, alias="recorded_ids", converter=_frozen
    )
    # Ids handed out this turn. The parts are joined with dots, which ids may
    # hold themselves: call "a.b" asking "c" and call "a" asking "b.c" both
    # make "a.b.c.1", so the counter alone cannot keep ids unique.
    _allocated: set[str] = attrs.field(factory=set, init=False)
    _tool_answers: dict[tuple[str, str], JsonValue] = attrs.field(factory=dict, init=False)
    _permissions: dict[str, PermissionDecision] = attrs.field(factory=dict, init=False)

    # ------------------------------------------------------------ inquiry ids

    def allocate_inquiry_id(self, tool_call_id: str, question_id: str) -> str:
        """Count one more recording of this question in this turn; return its id."""
        key = (tool_call_id, question_id)
        attempt = self._attempts.get(key, 0) + 1
        while (inquiry_id := f"{tool_call_id}.{question_id}.{attempt}") in self._recorded or (
            inquiry_id in self._allocated
        ):
            attempt += 1
        self._attempts[key] = attempt
        self._allocated.add(inquiry_id)
        return inquiry_id

    def attempts(self, tool_call_id: str, question_id: str) -> int:
        """How many times this question was recorded for this tool-call id this turn."""
        return self._attempts.get((tool_call_id, question_id), 0)

    # ------------------------------------------------------------ tool answers

    @property
    def remembered_tool_answers(self) -> Mapping[str, JsonValue]:
        """Remembered answers, keyed ``<tool_name>.<question_id>`` (a read-only copy).

        A view for people and the RFD's tests: lookups go by the two parts, so
        dotted names that join alike here still never answer each other.
        """
        return MappingProxyType(
            {f"{tool}.{question}": value for (tool, question), value in self._tool_answers.items()}
        )

    def remembered_tool_answer(self, tool_name: str, question: Question) -> CachedAnswer | None:
        """The remembered answer to ``question``; never one for a secret question.

        Nor for a question whose answer may not be reused (RFD 083: it is asked
        every time, whatever an earlier call of the same question was told),
        nor one that does not fit the question as it is asked now: a tool may
        ask the same question id with other options in another call, and a
        remembered choice that is not among them is no answer.
        """
        if not question.reusable:
            return None
        key = (tool_name, question.id)
        if key not in self._tool_answers:
            return None
        value = self._tool_answers[key]
        if not question.answer_type.accepts(value):
            return None
        return CachedAnswer(value)

    def remember_tool_answer(self, tool_name: str, question: Question, value: JsonValue) -> None:
        """Remember ``value`` as the answer to ``question`` for the rest of the turn.

        Refuses secret questions and anything that is not a plain JSON answer:
        a secret must never outlive its way to the tool. Refuses a question
        whose answer may not be reused, too.
        """
        if question.answer_type.is_secret:
            raise MachineError(
                f"refusing to remember an answer to secret question {question.id!r}"
            )
        if not question.reusable:
            raise MachineError(
                f"refusing to remember an answer to question {question.id!r}, "
                "whose answer may not be reused (persistence none)"
            )
        if not is_json(value):
            raise MachineError(f"refusing to remember a non-JSON answer to {question.id!r}")
        self._tool_answers[tool_name, question.id] = value

    # ------------------------------------------------------------ permissions

    @property
    def remembered_permission_decisions(self) -> Mapping[str, PermissionDecision]:
        """Remembered permissions, keyed ``<tool_name>.__permission__`` (read-only)."""
        return MappingProxyType(self._permissions)

    def remembered_permission(self, tool_name: str) -> PermissionDecision | None:
        """The remembered decision to run (``"y"``) or skip (``"n"``) ``tool_name``."""
        return self._permissions.get(_permission_key(tool_name))

    def remember_permission(self, tool_name: str, decision: PermissionDecision) -> None:
        """Remember a permission decision for the rest of the turn."""
        if decision not in ("y", "n"):
            raise MachineError(f"a permission decision is 'y' or 'n', not {decision!r}")
        self._permissions[_permission_key(tool_name)] = decision
