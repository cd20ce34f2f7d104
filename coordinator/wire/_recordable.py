"""Whether what a tool said can be recorded: the writer's refusals, found before they are taken in.

Theory of operation: a record's validators refuse what no record may hold
(a value that is not JSON, one nested deeper than ``orjson`` writes), but
the writer puts a record inside an entry inside the file's array, and
encodes its text as UTF-8 (and base64). So a question whose default is
nested 252 levels deep is a valid record that no save can write (an entry
puts three more levels around it), and a text holding a lone surrogate is a
valid ``str`` that UTF-8 cannot hold. Taken in, either would fail every save
from then on: the run would abort, and every ``--continue-turn`` after it
the same way.

The driver asks here, before a machine takes in what a tool said (a
question, a result), whether its record could be written, and fails that
one tool call as malformed when it could not: the run goes on, and the turn
can always be continued. The answer is the writer's own: the record is put
in an entry and encoded exactly as a save encodes it (:func:`encode_entries`,
then ``orjson`` as the store writes), so nothing here restates what the
writer accepts. Nothing is appended: the probe entry is thrown away.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson

from coordinator.stream import EventEntry, Timestamp
from coordinator.wire._stream_codec import encode_entries
from machines import InquiryQuestion, InquiryRequest, RecordError, ToolCallResponse

if TYPE_CHECKING:
    from machines import Event, InquirySource, Question

__all__ = ["unrecordable_question", "unrecordable_text"]

#: Any valid time: the probe entry is never kept.
_WHENEVER = Timestamp.from_datetime(datetime(2000, 1, 1, tzinfo=UTC))
#: Any valid id, for the same reason.
_PROBE = "probe"


def unrecordable_question(question: Question, source: InquirySource) -> str | None:
    """Why ``question``, asked from ``source``, could not be recorded; ``None``: it can be."""
    try:
        request = InquiryRequest(
            id=_PROBE, source=source, question=InquiryQuestion.from_question(question)
        )
    except RecordError as error:
        return str(error)
    return _unwritable(request)


def unrecordable_text(content: str) -> str | None:
    """Why a tool's result ``content`` could not be recorded; ``None``: it can be."""
    return _unwritable(ToolCallResponse(id=_PROBE, content=content, is_error=False))


def _unwritable(payload: Event) -> str | None:
    """Why an entry holding ``payload`` could not be written as a save writes it."""
    entry = EventEntry(event_id=_PROBE, timestamp=_WHENEVER, payload=payload)
    try:
        orjson.dumps(encode_entries([entry]), option=orjson.OPT_INDENT_2)
    except UnicodeEncodeError:
        return (
            "it holds text that is not valid Unicode (a lone surrogate), which cannot be written"
        )
    except orjson.JSONEncodeError as error:
        # orjson's own words: "Recursion limit reached" for a value nested too deeply.
        return f"it cannot be written as JSON ({error})"
    return None
