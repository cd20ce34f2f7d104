"""Turning the arguments of an ``answer_inquiry`` call into an answer.

RFD 033 moves validation from the provider (a typed schema) to here: the
``answer`` argument is always a string, parsed by the question's answer type.
Booleans are ``true``/``false`` in any case, a select answer must be one of the
option values exactly, text is taken as it is, a form's answer is the JSON
text of an object of its fields (held to the form's schema) or ``decline``.
Anything else raises :class:`AnswerRejectedError`, whose ``reason`` is fed
back to the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from machines import DECLINE, AnswerKind

if TYPE_CHECKING:
    from collections.abc import Mapping

    from machines import AnswerType, JsonValue

__all__ = ["AnswerRejectedError", "extract_answer", "parse_answer"]

_SHOWN = 200


class AnswerRejectedError(Exception):
    """The model's answer could not be used; ``reason`` says why, for the model."""

    def __init__(self, reason: str) -> None:
        """Keep the reason (the model is told it as it is)."""
        self.reason = reason
        super().__init__(reason)


def _shown(raw: str) -> str:
    # Enough of a bad answer to recognise it, not a page of it.
    return repr(raw if len(raw) <= _SHOWN else raw[:_SHOWN] + "...")


def parse_answer(raw: str, answer_type: AnswerType) -> JsonValue:
    """The answer ``raw`` stands for, as a value ``answer_type`` accepts."""
    kind = answer_type.kind
    if kind is AnswerKind.BOOLEAN:
        word = raw.strip().lower()
        if word in {"true", "false"}:
            return word == "true"
        raise AnswerRejectedError(f"invalid answer {_shown(raw)}: must be exactly true or false")
    if kind is AnswerKind.SELECT:
        if raw in answer_type.option_values:
            return raw
        options = ", ".join(answer_type.option_values)
        raise AnswerRejectedError(
            f"invalid answer {_shown(raw)}: must be exactly one of: {options}"
        )
    if kind is AnswerKind.TEXT:
        return raw
    if kind is AnswerKind.FORM:
        return _form_answer(raw, answer_type)
    # Secret questions never reach the model; refuse rather than accept one.
    raise ValueError("a secret question is never answered by the model")


def _form_answer(raw: str, answer_type: AnswerType) -> JsonValue:
    """A form's answer: ``decline``, or the JSON object ``raw`` holds, held to the form."""
    if raw.strip() == DECLINE:
        return DECLINE
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise AnswerRejectedError(
            f"invalid answer {_shown(raw)}: not a JSON object of the form's fields ({error})"
        ) from None
    if (problem := answer_type.problem(value)) is not None:
        raise AnswerRejectedError(f"invalid answer: {problem}")
    return value  # type: ignore[no-any-return] # JSON, and the form took it


def extract_answer(
    arguments: Mapping[str, JsonValue] | None, inquiry_id: str, answer_type: AnswerType
) -> JsonValue:
    """The answer in ``answer_inquiry`` arguments meant for ``inquiry_id``.

    ``arguments`` is ``None`` when the model's arguments were not a JSON object.
    """
    if arguments is None:
        raise AnswerRejectedError("the arguments were not a JSON object")
    given_id = arguments.get("inquiry_id")
    if given_id is None:
        raise AnswerRejectedError("missing inquiry_id")
    if not isinstance(given_id, str):
        raise AnswerRejectedError("inquiry_id must be a string")
    if given_id != inquiry_id:
        raise AnswerRejectedError(
            f"inquiry_id mismatch: expected {inquiry_id!r}, got {_shown(given_id)}"
        )
    raw = arguments.get("answer")
    if raw is None:
        raise AnswerRejectedError("missing answer")
    if not isinstance(raw, str):
        raise AnswerRejectedError("answer must be a string")
    return parse_answer(raw, answer_type)
