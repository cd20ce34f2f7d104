"""What the model is told when a tool call does not simply run.

JP's wordings are kept where JP has one (see ``wire-format.md``), so a
conversation continued by either tool reads the same. A message may name the
tool, the question and its text (all recorded anyway), never an answer to a
secret question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from machines._meanings import DetachedMode
from machines._secret import SecretValue

if TYPE_CHECKING:
    from machines._json import JsonValue
    from machines._questions import Question

__all__ = [
    "DELIVERY_CANCELLED",
    "DISCARDED",
    "INPUT_CANCELLED",
    "INTERRUPTED",
    "RESULT_WITHHELD",
    "SKIPPED_BY_CONFIGURATION",
    "SKIPPED_BY_USER",
    "SKIPPED_REMEMBERED",
    "attempts_exhausted",
    "backend_failed",
    "delivery_refused",
    "delivery_timed_out",
    "exclusive_for_assistant",
    "invalid_answers_file_entry",
    "invalid_static_answer",
    "permission_refused",
    "permission_timed_out",
    "question_refused",
    "question_timed_out",
    "questions_exhausted",
    "secret_for_assistant",
    "secret_without_terminal",
    "skipped_with_reason",
    "unavailable",
]

SKIPPED_BY_USER = "Tool skipped by user."
SKIPPED_REMEMBERED = "Tool skipped by user (remembered)."
INPUT_CANCELLED = "Tool input cancelled by user."
INTERRUPTED = "Tool call was interrupted."
#: A call left open when its turn stopped, closed when the user discarded that
#: turn: worded as JP's interrupted call is, saying why it did not finish.
DISCARDED = (
    "Tool call was discarded: the user discarded its unfinished turn, and it did not finish."
)
#: JP has no wording for run mode ``skip``; this mirrors its "Result delivery
#: skipped by configuration." rather than claiming the user decided.
SKIPPED_BY_CONFIGURATION = "Tool skipped by configuration."
#: The person chose not to deliver a tool's result (JP's wording, result mode ``ask``).
RESULT_WITHHELD = "Result delivery skipped by user."
#: The person cancelled the prompt that delivers a tool's result (JP's wording).
DELIVERY_CANCELLED = "Result delivery cancelled."

#: Said of every prompt the detached policy refuses: why nobody was asked.
_NOBODY = "and no person can be asked in this run (it is not interactive)"


def _policy(kind: str, mode: DetachedMode) -> str:
    return f"its detached policy for {kind} is '{mode.value}'"


_UNLESS = (
    "Do not retry this tool call unless the user runs it where they can be asked, "
    "or changes that policy."
)


def unavailable(tool_name: str) -> str:
    """The model called a tool that is not there (JP's wording, typo fixed)."""
    return (
        f"Tool '{tool_name}' is not available. It may have been available earlier in this "
        "conversation but is no longer enabled. Do not retry this tool until it is available "
        "again in the list of enabled tools."
    )


def skipped_with_reason(reason: str) -> str:
    """The user skipped the tool and said why."""
    return f"Tool skipped by user: {reason}"


def backend_failed(tool_name: str, question: Question, error: str) -> str:
    """The model could not answer a question routed to it (JP's wording)."""
    return (
        f"The tool '{tool_name}' asked a follow-up question (\"{question.text}\") that was "
        "routed to a secondary assistant for resolution, but the secondary assistant failed "
        f"to provide a valid answer. Error: {error}. You may retry the tool call or end the turn."
    )


def secret_without_terminal(tool_name: str, question: Question) -> str:
    """A secret question, and no person at a terminal to answer it."""
    return (
        f"The tool '{tool_name}' asked for a secret (\"{question.text}\"), which only a person "
        "at an interactive terminal may answer, and no terminal is available. "
        "Do not retry this tool call until one is."
    )


def secret_for_assistant(tool_name: str, question: Question) -> str:
    """A secret question configured to be answered by the assistant."""
    return (
        f"The tool '{tool_name}' asked for a secret (\"{question.text}\"), and its question "
        f"'{question.id}' is configured to be answered by the assistant, but secrets are never "
        "routed to the assistant. The question's target must be 'user'."
    )


def exclusive_for_assistant(tool_name: str, question: Question) -> str:
    """An exclusive question (a person's only) configured to be answered by the assistant.

    RFD 083's wording, with the question named: the configuration, not the
    call, must change, so the model is told not to retry.
    """
    return (
        f"The tool '{tool_name}' asked \"{question.text}\" (question '{question.id}'), which "
        "requires a human answer, and it is configured to be answered by the assistant "
        '(target = "assistant"), so it cannot be routed to the assistant. '
        "Do not retry this tool call in this turn."
    )


def _describe_configured(question: Question, value: JsonValue | SecretValue) -> str:
    if question.answer_type.is_secret or isinstance(value, SecretValue):
        # The configured value was meant as a secret: describe its type only.
        return f"a value of type {type(value).__name__}"
    return orjson.dumps(value).decode()


def invalid_static_answer(
    tool_name: str, question: Question, configured: JsonValue | SecretValue
) -> str:
    """A configured static answer that does not fit its question."""
    # A form says which field and rule; any other answer type what an answer is.
    why = question.answer_type.problem(configured) if question.answer_type.form else None
    return (
        f"The static answer configured for question '{question.id}' of tool '{tool_name}' "
        f"does not fit the question: configured {_describe_configured(question, configured)}, "
        f"expected {question.answer_type.expected()}{f' ({why})' if why else ''}. It was not "
        "applied. Update the configuration; do not retry this tool call."
    )


def invalid_answers_file_entry(tool_name: str, question: Question) -> str:
    """The answers file's reply to a question on screen does not fit it (never its value)."""
    return (
        f"The answers file's reply to question '{question.id}' of tool '{tool_name}' does "
        f"not fit the question: expected {question.answer_type.expected()}. It was not "
        "applied. The answers file needs correcting; do not retry this tool call."
    )


def attempts_exhausted(tool_name: str, question: Question, attempts: int) -> str:
    """A tool kept asking the same question."""
    return (
        f"The tool '{tool_name}' asked question '{question.id}' (\"{question.text}\") again "
        f"after {attempts} answers; stopping here so it cannot loop forever."
    )


def questions_exhausted(tool_name: str, questions: int) -> str:
    """A tool kept asking new questions."""
    return (
        f"The tool '{tool_name}' asked another question after {questions} answers in this "
        "call; stopping here so it cannot loop forever."
    )


def question_refused(tool_name: str, question: Question, mode: DetachedMode) -> str:
    """A question for the person that the detached policy would not answer for them."""
    asked = f"The tool '{tool_name}' asked \"{question.text}\" (question '{question.id}')"
    if mode is DetachedMode.AUTO:
        why = (
            "it is exclusive: only a person may answer it, so it is not put to the model "
            f"({_policy('questions', mode)})"
        )
    elif mode is DetachedMode.DEFAULTS:
        why = (
            f"{_policy('questions', mode)}, which takes a default, and it has none that answers it"
        )
    else:
        why = _policy("questions", mode)
    return f"{asked}, which is for a person to answer, {_NOBODY}; {why}. {_UNLESS}"


def _no_default(what: str, kind: str, mode: DetachedMode) -> str:
    """Why the policy refused a prompt that has no default (a permission, a delivery)."""
    why = _policy(kind, mode)
    return f"{why}, and {what} has no default" if mode is DetachedMode.DEFAULTS else why


def permission_refused(tool_name: str, mode: DetachedMode) -> str:
    """A tool that asks permission before it runs, and nobody to give it."""
    why = _no_default("a permission", "permissions", mode)
    return (
        f"Tool '{tool_name}' was not run: it asks permission before it runs (run mode 'ask'), "
        f"{_NOBODY}; {why}. {_UNLESS}"
    )


def delivery_refused(tool_name: str, mode: DetachedMode) -> str:
    """A tool whose result is delivered only once a person confirms it, and nobody to confirm."""
    why = _no_default("a delivery", "result delivery", mode)
    return (
        f"Tool '{tool_name}' ran, but its result reaches you only once a person confirms it "
        f"(result mode 'ask'), {_NOBODY}; {why}. The result was not delivered."
    )


#: Said of every prompt closed because its time ran out.
_TIMED_OUT = "the time configured for a person to answer it ({after}) ran out"
_NOT_AGAIN = "Do not retry this tool call unless the user asks you to."


def question_timed_out(tool_name: str, question: Question, after: str) -> str:
    """A question for the person that nobody answered within its ``timeout`` (``after``)."""
    return (
        f"The tool '{tool_name}' asked \"{question.text}\" (question '{question.id}'), and "
        f"nobody answered it: {_TIMED_OUT.format(after=after)}. {_NOT_AGAIN}"
    )


def permission_timed_out(tool_name: str, after: str) -> str:
    """A tool that asks permission before it runs, and nobody gave it in time."""
    return (
        f"Tool '{tool_name}' was not run: it asks permission before it runs (run mode 'ask'), "
        f"and nobody answered: {_TIMED_OUT.format(after=after)}. {_NOT_AGAIN}"
    )


def delivery_timed_out(tool_name: str, after: str) -> str:
    """A result to be confirmed by a person, and nobody confirmed it in time."""
    return (
        f"Tool '{tool_name}' ran, but its result reaches you only once a person confirms it "
        f"(result mode 'ask'), and nobody answered: {_TIMED_OUT.format(after=after)}. "
        "The result was not delivered."
    )
