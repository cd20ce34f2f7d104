"""Built-in tools.

- ``ask_user`` (RFD 083's idea): the assistant asks the person a question. Its
  questions are the assistant's, so its :meth:`inquiry_source` is
  ``assistant`` — decided here, in code; configuration cannot say otherwise.
- ``answer_inquiry`` (RFD 033): in every request of a turn so the provider's
  prompt cache holds, but only meaningful when an inquiry forces it. A call
  the model makes on its own is answered with an error saying so.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

import orjson

from coordinator.adapters._local_tools import check_arguments
from coordinator.adapters.providers import ANSWER_INQUIRY, ANSWER_INQUIRY_OUTSIDE_INQUIRY
from coordinator.driver import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    Failure,
    Success,
)
from machines import AnswerType, InquirySource, Question, RecordError, json_type

if TYPE_CHECKING:
    from collections.abc import Mapping

    from machines import JsonValue

__all__ = ["ASK_USER_PARAMETERS", "AnswerInquiry", "AskUser", "builtin_executors"]

#: The JSON schema of ``ask_user``'s arguments.
ASK_USER_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question to ask the user."},
        "answer_type": {
            "type": "string",
            "enum": ["boolean", "select", "text"],
            "description": "The form of answer expected (default: text).",
        },
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The choices of a select question (only): distinct, not empty.",
        },
        "default": {"description": "The answer taken when the user just presses Enter."},
    },
    "required": ["question"],
    "additionalProperties": False,
}


def _answer_type(kind: str, options: object) -> AnswerType:
    """The answer type ``kind`` with ``options``; a ``RecordError`` saying what is wrong.

    Options the person could not tell apart or pick are refused, not passed on
    or dropped: the model is told and can ask again.
    """
    if kind != "select":
        if options is not None:
            raise RecordError(
                f"'options' are for answer_type \"select\" only, not {kind!r}: "
                "give answer_type \"select\" or leave 'options' out"
            )
        return AnswerType.boolean() if kind == "boolean" else AnswerType.text()
    if not isinstance(options, list) or not options:
        raise RecordError("a select question needs a non-empty 'options' array")
    for index, option in enumerate(options):
        if not isinstance(option, str):
            raise RecordError(f"option {index} must be a string, not {json_type(option)}")
        if not option.strip():
            raise RecordError(f"option {index} is empty")
        if option in options[:index]:
            raise RecordError(f"option {index} ({option!r}) repeats an earlier option")
    return AnswerType.select(options)


#: Who every ``ask_user`` question is recorded as asked by (a value, shared).
_ASSISTANT: Final = InquirySource.assistant()


class AskUser(BuiltinTool):
    """The assistant asks the user a question and is told the answer."""

    def inquiry_source(self, name: str) -> InquirySource:
        """The assistant asked, not a tool."""
        del name
        return _ASSISTANT

    @staticmethod
    def question_id(text: str) -> str:
        """The id of the question ``text``.

        Derived from the text, so that an answer remembered for one question
        (``Y``) never answers a different one asked later in the turn.
        """
        return "answer_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask the question the first time; report the answer the second."""
        problem = check_arguments(ASK_USER_PARAMETERS, arguments)
        if problem is not None:
            return Failure(f"Invalid arguments for tool 'ask_user': {problem}.")
        text = str(arguments["question"])
        if not text.strip():
            return Failure("Invalid arguments for tool 'ask_user': the question is empty.")
        question_id = self.question_id(text)
        if question_id in answers:
            answer = orjson.dumps(answers[question_id]).decode()
            return Success(f"The answer to \u201c{text}\u201d is: {answer}")
        try:
            question = Question(
                id=question_id,
                text=text,
                answer_type=_answer_type(
                    str(arguments.get("answer_type", "text")), arguments.get("options")
                ),
                default=arguments.get("default"),
                # The assistant asks the person: the model answering its own
                # question is no answer, so only a person may (RFD 049).
                exclusive=True,
            )
        except RecordError as error:
            return Failure(f"Invalid arguments for tool 'ask_user': {error}.")
        if question.default is not None and question.offered_default is None:
            # A question records any default (RFD 082), but this one is the
            # model's own argument: a default the person could not take is a
            # slip the model is told of, so that it asks again.
            return Failure(
                "Invalid arguments for tool 'ask_user': the default must be "
                f"{question.answer_type.expected()}, not {json_type(question.default)}."
            )
        return Ask(question)


class AnswerInquiry(BuiltinTool):
    """``answer_inquiry`` called outside an inquiry: always an error."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Tell the model this tool answers questions only when one is put to it."""
        del arguments, answers
        return Failure(ANSWER_INQUIRY_OUTSIDE_INQUIRY)


def builtin_executors() -> dict[str, BuiltinExecutor]:
    """The built-in tools, by name, ready to merge into a tool registry."""
    return {
        "ask_user": BuiltinExecutor(AskUser()),
        ANSWER_INQUIRY: BuiltinExecutor(AnswerInquiry()),
    }
