"""Whether what a tool said can be recorded: the writer's refusals, found before they are taken in.

Theory of operation: a record's validators refuse what no record may hold
(a value that is not JSON, one nested deeper than ``orjson`` writes), but
the writer puts a record inside an entry inside the file's array, and
encodes its text as UTF-8 (and base64). So a question whose default is
nested 252 levels deep makes a valid record that no save can write (an
entry puts three more levels around it), and a text holding a lone
surrogate is a valid ``str`` that UTF-8 cannot hold. Taken in, either would
fail every save from then on: the run would abort, and every
``--continue-turn`` after it the same way.

The driver asks here, before a machine takes in what a tool said (a
question, a result), whether it could be written, and fails that one tool
call as malformed when it could not: the run goes on, and the turn can
always be continued. The answer is the writer's own: the part of the record
the tool gave is encoded by the codec's own hook (the recorded question's,
the base64 storage field of a result), placed as deep as an entry of the
file places it (in the file's array, in its entry), and written by ``orjson``
as the store writes. No record is built here: records come from the machines
alone, and this only asks of their parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from coordinator.wire._codec import question_metadata, unstructure_recorded_question
from coordinator.wire._storage_fields import encode_field, encode_leaves
from machines import InquiryQuestion, RecordError

if TYPE_CHECKING:
    from machines import Question

__all__ = ["unrecordable_question", "unrecordable_text"]

#: Why a text with a lone surrogate (which UTF-8 cannot hold) is refused.
_NOT_UNICODE = "it holds text that is not valid Unicode (a lone surrogate): it cannot be written"


def unrecordable_question(question: Question) -> str | None:
    """Why ``question`` could not be recorded in an ``inquiry_request``; ``None``: it can be."""
    try:
        recorded = InquiryQuestion.from_question(question)
    except RecordError as error:
        return str(error)
    # As deep as the file holds it: the array of entries, the entry, its "question"
    # (and a form's schema, in the entry's metadata, its leaves base64).
    placed: dict[str, Any] = {"question": unstructure_recorded_question(recorded)}
    if metadata := question_metadata(recorded):
        try:
            placed["metadata"] = encode_leaves(metadata)
        except UnicodeEncodeError:
            return _NOT_UNICODE
    return _unwritable([placed])


def unrecordable_text(content: str) -> str | None:
    """Why a tool's result ``content`` could not be recorded; ``None``: it can be."""
    try:
        stored = encode_field(content)  # a result's content is a base64 storage field
    except UnicodeEncodeError:
        return _NOT_UNICODE
    return _unwritable([{"content": stored}])


def _unwritable(placed: Any) -> str | None:
    """Why ``orjson`` could not write ``placed`` as the store writes a file; ``None``: it can."""
    try:
        orjson.dumps(placed, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError as error:
        if "surrogates" in str(error):
            return _NOT_UNICODE
        # orjson's own words: "Recursion limit reached" for a value nested too deeply.
        return f"it cannot be written as JSON ({error})"
    return None
