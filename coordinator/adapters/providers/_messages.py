"""What the model is told during an inquiry.

Four texts: the result that closes the paused tool call on the inquiry's copy
of the conversation (JP's ``Tool paused: <question text>``), the question
message that asks the model to call ``answer_inquiry``, and, when an answer is
rejected, the rejected call's tool result and the feedback message. Each names
the form the answer must take in the words of RFD 033's table. Also here: the
results that stand in, on the inquiry's copy only, for what a provider cannot
be sent as it is (a call still running, an error with no output).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from coordinator.adapters.providers._tools import ANSWER_INQUIRY
from machines import DECLINE, AnswerKind

if TYPE_CHECKING:
    from coordinator.driver import InquiryTask
    from machines import AnswerType

__all__ = [
    "FAILED_WITHOUT_OUTPUT",
    "OTHER_CALL_NOT_RUN",
    "STILL_RUNNING",
    "answer_instruction",
    "paused_result",
    "question_message",
    "rejected_result",
    "rejection_feedback",
]

#: The result given, on the inquiry's copy only, to another tool call of the
#: same response that has not finished yet: a provider wants every call closed.
STILL_RUNNING = "Tool still running: its result is not available yet."

#: What the model is told of a tool call that failed with no output at all: an
#: empty error says nothing to the model, and the Anthropic API refuses one.
FAILED_WITHOUT_OUTPUT = "The tool failed without giving any output."

#: The result of every other tool call the model made in a rejected reply.
OTHER_CALL_NOT_RUN = (
    f"Ignored: only the first `{ANSWER_INQUIRY}` call of a reply is read, "
    "and no other tool runs while a question is pending."
)


def paused_result(question_text: str) -> str:
    """The result that closes the asking tool's call while it waits."""
    return f"Tool paused: {question_text}"


def answer_instruction(answer_type: AnswerType) -> str:
    """The sentence that says what form the answer must take."""
    if answer_type.kind is AnswerKind.BOOLEAN:
        return "Answer exactly `true` or `false`."
    if answer_type.kind is AnswerKind.SELECT:
        lines = ["Answer with exactly one of these options:"]
        for option in answer_type.options:
            described = f": {option.description}" if option.description else ""
            lines.append(f"- `{option.value}`{described}")
        return "\n".join(lines)
    if answer_type.form is not None:
        # The form's schema is given here, in the question: the tool's schema
        # stays the same for every inquiry, so the prompt cache holds.
        schema = orjson.dumps(answer_type.form.json_schema(), option=orjson.OPT_INDENT_2)
        return (
            "This is a form. Answer with the JSON text of one object holding its fields' "
            "values, as this JSON schema describes them (leave an optional field out "
            f"rather than set it to null), or with exactly `{DECLINE}` to refuse to fill "
            f"it in:\n\n```json\n{schema.decode()}\n```"
        )
    return "Answer with free-form text."


def question_message(task: InquiryTask) -> str:
    """The user message that puts the question to the model."""
    question = task.question
    parts = [f"The tool `{task.tool_name}` requires additional input."]
    if question.context:
        parts.append(question.context)
    parts.append(question.text)
    parts.append(answer_instruction(question.answer_type))
    parts.append(
        f"Call the `{ANSWER_INQUIRY}` tool with inquiry_id `{task.inquiry_id}` and your "
        "answer as the `answer` string. Base your answer on the conversation so far."
    )
    return "\n\n".join(parts)


def rejected_result(reason: str) -> str:
    """The result of an ``answer_inquiry`` call whose answer was rejected."""
    return f"Rejected: {reason}."


def rejection_feedback(task: InquiryTask, reason: str) -> str:
    """The user message that asks again after a rejected answer."""
    return (
        f"Your answer to inquiry `{task.inquiry_id}` was rejected: {reason}.\n\n"
        f"{answer_instruction(task.question.answer_type)}\n\n"
        f"Call `{ANSWER_INQUIRY}` again with inquiry_id `{task.inquiry_id}`."
    )
