"""The wire: a stream as ``events.json`` holds it.

The third layer, on the stream. One private ``cattrs`` converter over
``orjson`` reads and writes every record, one hook each way per record (see
``docs/wire.md``); the base64 storage fields, JP's timestamps and RFD D24's
ids are decoded and encoded here and nowhere else.
:func:`decode_stream` turns a parsed ``events.json`` array into a
:class:`~coordinator.stream.ConversationStream` (repairing ids as RFD D24
says, and reporting the repairs); :func:`encode_stream` gives the array back.
An entry read from a file is written back as it was read, so a real
conversation re-saves unchanged.

What the store reads with: :func:`decode_entries` and
:func:`encode_entries` (the entries a save appends, without the stream
around them), and the checked JSON reader (:func:`read_file`,
:func:`loads_writable`, :func:`unwritable_entry`, :func:`invalid_utf8`,
:class:`JsonTextError`). What an adapter reads a tool's question with:
:func:`structure_question`, raising :class:`WireError`. What the driver asks
before it takes in what a tool said: :func:`unrecordable_question` and
:func:`unrecordable_text` (could its record be written?).

Rules:

1. Every entry of a known kind is validated on load: a broken file is
   refused naming the entry, never taken in to fail later.
2. What cannot be written back as read (an object that repeats a key, an
   integer beyond 64 bits, nesting deeper than ``orjson`` writes) is refused
   at load, naming the entry and the key.
3. Unknown kinds and unknown fields of known kinds are kept verbatim.
"""

from coordinator.wire._codec import WireError, structure_question
from coordinator.wire._json_read import (
    JsonTextError,
    invalid_utf8,
    loads_writable,
    read_file,
    unwritable_entry,
)
from coordinator.wire._recordable import unrecordable_question, unrecordable_text
from coordinator.wire._stream_codec import (
    EntryDecodeError,
    IdRepairs,
    decode_entries,
    decode_stream,
    encode_entries,
    encode_stream,
)

__all__ = [
    "EntryDecodeError",
    "IdRepairs",
    "JsonTextError",
    "WireError",
    "decode_entries",
    "decode_stream",
    "encode_entries",
    "encode_stream",
    "invalid_utf8",
    "loads_writable",
    "read_file",
    "structure_question",
    "unrecordable_question",
    "unrecordable_text",
    "unwritable_entry",
]
