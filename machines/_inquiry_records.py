"""The two records every question ends as: one request, one response.

``InquiryResponse`` is ``Answered | Cancelled | Redacted``: an answer that was
recorded, a question closed without an answer (with the reason), or an answer
the tool received but the stream deliberately does not hold (a secret).
Invalid shapes (an answer *and* a reason, neither) cannot be constructed.

``CancellationReason`` lists every reason this build writes. A reason written
by a newer build lands in :class:`UnknownCancellationReason`, which keeps its
tag verbatim for the audit trail; this build never writes one of its own.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import attrs

from machines._errors import RecordError
from machines._json import JsonValue
from machines._questions import InquiryQuestion, InquirySource
from machines.validators import json_value, non_empty_string, of_type, string

__all__ = [
    "Answered",
    "AnyCancellationReason",
    "CancellationReason",
    "Cancelled",
    "InquiryRequest",
    "InquiryResponse",
    "Redacted",
    "UnknownCancellationReason",
    "parse_cancellation_reason",
]


class CancellationReason(enum.Enum):
    """Why a question was closed without an answer; values are the wire tags."""

    #: The user cancelled (Ctrl-C or end of input at the prompt, or an interrupt).
    USER = "user"
    #: The routing backend failed to produce an answer.
    BACKEND_ERROR = "backend_error"
    #: A question only a person may answer, and no terminal was there.
    NO_PROMPT_BACKEND = "no_prompt_backend"
    #: A question only a person may answer was configured for the assistant.
    ASSISTANT_ROUTING_DENIED = "assistant_routing_denied"
    #: The configured static answer does not fit the question.
    INVALID_STATIC_ANSWER = "invalid_static_answer"
    #: The tool asked the same question more times in one call than it may.
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    #: Asked before the process running its turn stopped (a crash, a kill), and
    #: closed when the turn was continued without being put again as it stood:
    #: the tool, run again, asked something else or nothing, or the continued
    #: run stopped before it could ask (this project's own reason).
    INTERRUPTED = "interrupted"
    #: Its tool call was settled while the question was still open (waiting
    #: for the terminal, at the prompt, or at the model): the batch was
    #: stopped (a cancel, Ctrl-C away from its prompt, a signal, a crash).
    #: Nobody answered or cancelled this question; ``user`` would say
    #: someone did (this project's own reason).
    WITHDRAWN = "withdrawn"
    #: Open when its turn stopped, and closed when that unfinished turn was
    #: discarded (RFD 023's discard, ``--discard-turn``): nobody answered or
    #: cancelled it, and nothing of the turn was deleted (this project's own
    #: reason).
    DISCARDED = "discarded"
    #: It was on screen for longer than its ``timeout`` (a duration the user
    #: configured), and nobody answered it: closed so, rather than waiting
    #: for ever (this project's own reason).
    TIMED_OUT = "timed_out"
    #: The answers file (``inquiry run --answers``), standing in for the
    #: person, gave a reply the question cannot take (a string for a
    #: boolean, a value not among a select's options): a fault of the file,
    #: not a person's doing, which ``user`` would claim (this project's own
    #: reason).
    INVALID_ANSWERS_FILE_ENTRY = "invalid_answers_file_entry"

    def as_str(self) -> str:
        """The wire tag."""
        return self.value


_KNOWN_TAGS = frozenset(reason.value for reason in CancellationReason)


def _unknown_tag(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    # Any string, the empty one too: RFD 082 lands every tag it does not know
    # in Unknown(tag) and writes it back verbatim, so "" is kept, not refused.
    string(instance, attribute, value)
    if value in _KNOWN_TAGS:
        raise RecordError(f"{value!r} is a known cancellation reason, not an unknown one")


@attrs.frozen
class UnknownCancellationReason:
    """A reason from a newer writer, kept verbatim; readers must not branch on it.

    Its tag is any string this build does not know, the empty one included.
    """

    tag: str = attrs.field(validator=_unknown_tag)

    def as_str(self) -> str:
        """The wire tag, exactly as it was read."""
        return self.tag


#: Any reason a recorded cancellation can carry.
AnyCancellationReason: TypeAlias = CancellationReason | UnknownCancellationReason


def parse_cancellation_reason(tag: str) -> AnyCancellationReason:
    """Read a wire tag: a known reason, or an unknown one kept verbatim."""
    if tag in _KNOWN_TAGS:
        return CancellationReason(tag)
    return UnknownCancellationReason(tag)


def _reason(_instance: Any, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, CancellationReason | UnknownCancellationReason):
        raise RecordError(
            f"Cancelled.reason must be a CancellationReason, not {type(value).__name__}"
        )


@attrs.frozen(kw_only=True)
class InquiryRequest:
    """A question recorded before anything decides where its answer comes from."""

    id: str = attrs.field(validator=non_empty_string)
    source: InquirySource = attrs.field(validator=of_type(InquirySource))
    question: InquiryQuestion = attrs.field(validator=of_type(InquiryQuestion))


@attrs.frozen(kw_only=True)
class Answered:
    """The question was answered with ``answer`` (never a secret)."""

    id: str = attrs.field(validator=non_empty_string)
    answer: JsonValue = attrs.field(validator=json_value)


@attrs.frozen(kw_only=True)
class Cancelled:
    """The question was closed without an answer, for ``reason``."""

    id: str = attrs.field(validator=non_empty_string)
    reason: AnyCancellationReason = attrs.field(validator=_reason)


@attrs.frozen(kw_only=True)
class Redacted:
    """The tool received an answer that is deliberately not recorded."""

    id: str = attrs.field(validator=non_empty_string)


#: How a recorded question ended.
InquiryResponse: TypeAlias = Answered | Cancelled | Redacted
