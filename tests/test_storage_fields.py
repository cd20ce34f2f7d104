"""Base64 storage fields: decoded on load, encoded on save, lenient, canonical only."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values, texts

from coordinator import Conversation, EventEntry, load_conversation, save_conversation
from coordinator.stream import Compaction, ConfigDelta, UnknownEntry
from coordinator.wire._codec import structure_event
from coordinator.wire._storage_fields import (
    decode_field,
    decode_leaves,
    encode_field,
    encode_leaves,
)
from machines import (
    AnswerType,
    ChatRequest,
    ChatResponse,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-03-05 19:31:45.7"


def b64(text: str) -> str:
    """Encode like JP does (standard alphabet, padded)."""
    return base64.b64encode(text.encode()).decode()


# ------------------------------------------------------------ single fields


@pytest.mark.parametrize(
    ("stored", "decoded"),
    [
        ("aGVsbG8gd29ybGQ=", "hello world"),
        ("YQ==", "a"),
        ("YWJj", "abc"),
        ("", ""),
        (b64("héllo ✓ 日本"), "héllo ✓ 日本"),
    ],
)
def test_canonical_base64_of_utf8_is_decoded(stored: str, decoded: str) -> None:
    """A stored field that is canonical base64 of UTF-8 text reads as that text."""
    assert decode_field(stored) == decoded
    assert encode_field(decoded) == stored


@pytest.mark.parametrize(
    "stored",
    [
        "plain text",  # not base64 at all
        "hello",  # base64 letters, wrong length
        "YQ",  # missing padding
        "YQ==\n",  # trailing newline
        "YW Jj",  # inner space
        "YR==",  # non-canonical: unused bits set (still decodes to "a" elsewhere)
        "YWI=" + "YQ==",  # padding in the middle
        "//79",  # decodes to bytes that are not UTF-8
        "gA==",  # a lone continuation byte
        "YWJj-_==",  # URL-safe alphabet
        "aGkg=",  # canonical "aGkg" with a stray pad (would decode to "hi ")
        "aGkg==",  # two stray pads
        "YQ===",  # one pad too many
        "test===",  # plain words that end in three or more "="
        "Done===",
        "YWJj====",  # a whole quad of padding
    ],
)
def test_values_that_are_not_canonical_base64_text_are_kept_as_they_are(stored: str) -> None:
    """Decoding is lenient: anything else is taken as a plain value."""
    assert decode_field(stored) == stored


@given(texts(max_size=40))
def test_encoded_text_always_decodes_back(text: str) -> None:
    """decode(encode(text)) is text, for any text."""
    assert decode_field(encode_field(text)) == text


@given(
    st.text(max_size=24)
    | st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=24)
    # Encoded text with stray padding after it, the shape strict decoding lets through.
    | st.builds(
        lambda text, pads: encode_field(text) + "=" * pads, texts(max_size=12), st.integers(1, 4)
    )
)
def test_decoding_only_changes_what_encoding_gives_back(stored: str) -> None:
    """A value that decodes re-encodes to exactly the stored text; others stay as they are.

    This is what makes a read-then-rewrite of a field byte-faithful.
    """
    decoded = decode_field(stored)
    if decoded != stored:
        assert encode_field(decoded) == stored


@given(json_values())
def test_leaves_round_trip_and_non_strings_stay_plain(value: Any) -> None:
    """Every string leaf is encoded and decoded back; other leaves never change."""
    encoded = encode_leaves(value)
    assert decode_leaves(encoded) == value
    if not isinstance(value, str | dict | list):
        assert encoded == value


def test_leaves_are_encoded_recursively_and_only_strings() -> None:
    """Nested objects and arrays have their strings encoded; keys and other leaves not."""
    value = {"path": "a", "flags": [True, 3, None, "b"], "nested": {"x": 1.5, "y": "c"}}
    assert encode_leaves(value) == {
        "path": "YQ==",
        "flags": [True, 3, None, "Yg=="],
        "nested": {"x": 1.5, "y": "Yw=="},
    }


# ----------------------------------------------------------- through a file


def _load_single(tmp_path: Path, entry: dict[str, Any]) -> EventEntry:
    (tmp_path / "events.json").write_bytes(orjson.dumps([entry]))
    (loaded,) = load_conversation(tmp_path).stream
    assert isinstance(loaded, EventEntry)
    return loaded


def test_tool_call_arguments_string_leaves_are_decoded_on_load(tmp_path: Path) -> None:
    """Every string leaf of the arguments is decoded; booleans, numbers and null stay."""
    entry = _load_single(
        tmp_path,
        {
            "timestamp": STAMP,
            "type": "tool_call_request",
            "id": "toolu_01",
            "name": "fs_list_files",
            "arguments": {
                "prefixes": [b64("src/"), b64("tests/")],
                "recursive": True,
                "depth": 3,
                "filter": None,
                "opts": {"glob": b64("*.py"), "hidden": False},
                "plain": "not base64!",
            },
        },
    )
    assert entry.payload == ToolCallRequest(
        id="toolu_01",
        name="fs_list_files",
        arguments={
            "prefixes": ["src/", "tests/"],
            "recursive": True,
            "depth": 3,
            "filter": None,
            "opts": {"glob": "*.py", "hidden": False},
            "plain": "not base64!",
        },
    )


def test_tool_call_response_content_is_decoded_on_load(tmp_path: Path) -> None:
    """The response content is stored encoded."""
    entry = _load_single(
        tmp_path,
        {
            "timestamp": STAMP,
            "type": "tool_call_response",
            "id": "toolu_01",
            "content": b64("file contents\n"),
            "is_error": False,
        },
    )
    assert entry.payload == ToolCallResponse(
        id="toolu_01", content="file contents\n", is_error=False
    )


def test_metadata_string_leaves_are_decoded_on_load(tmp_path: Path) -> None:
    """Metadata strings are decoded, double-encoded signatures once only."""
    signature = b64("raw-signature-bytes")  # itself base64, as provider signatures are
    entry = _load_single(
        tmp_path,
        {
            "timestamp": STAMP,
            "type": "chat_response",
            "reasoning": "thinking",
            "metadata": {
                "anthropic_thinking_signature": b64(signature),
                "counts": [1, b64("two")],
                "flag": True,
            },
        },
    )
    assert entry.payload == ChatResponse.reasoning("thinking")
    assert entry.metadata == {
        "anthropic_thinking_signature": signature,
        "counts": [1, "two"],
        "flag": True,
    }


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "chat_request", "content": "YQ=="},
        {"type": "chat_response", "message": "YQ=="},
        {"type": "chat_response", "data": {"k": "YQ=="}},
        {
            "type": "inquiry_request",
            "id": "YQ==",
            "source": {"source": "tool", "name": "YQ=="},
            "question": {"text": "YQ==", "answer_type": {"type": "text"}, "default": "YQ=="},
        },
        {"type": "inquiry_response", "id": "YQ==", "answer": "YQ=="},
    ],
)
def test_chat_text_and_inquiry_fields_are_never_decoded(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    """Only the storage fields are encoded: chat and inquiry text read as written."""
    loaded = _load_single(tmp_path, {"timestamp": STAMP, **entry})
    assert loaded.payload == structure_event(entry["type"], entry)  # read without decoding


def test_config_delta_compaction_and_unknown_entries_are_never_decoded(tmp_path: Path) -> None:
    """Global entries hold their strings as written."""
    entries = [
        {"type": "config_delta", "timestamp": STAMP, "delta": {"model": "YQ=="}},
        {
            "type": "compaction",
            "timestamp": STAMP,
            "from_turn": 0,
            "to_turn": 1,
            "summary": "YQ==",
        },
        {"type": "future", "timestamp": STAMP, "text": "YQ=="},
    ]
    (tmp_path / "events.json").write_bytes(orjson.dumps(entries))
    delta, compaction, unknown = load_conversation(tmp_path).stream
    assert isinstance(delta, ConfigDelta)
    assert isinstance(compaction, Compaction)
    assert isinstance(unknown, UnknownEntry)
    assert delta.delta == {"model": "YQ=="}
    assert compaction.summary == "YQ=="
    assert unknown.raw["text"] == "YQ=="


def test_new_entries_are_saved_with_their_storage_fields_encoded(tmp_path: Path) -> None:
    """Saving encodes arguments' string leaves, response content and metadata strings only."""
    conversation = Conversation.new(clock=FixedClock(), new_id=CountingIds())
    stream = conversation.stream
    stream.append(ChatRequest(content="list src"))
    stream.append(
        ToolCallRequest(
            id="c1",
            name="fs_list_files",
            arguments={"prefix": "src/", "recursive": True, "depth": 2, "x": None, "l": ["a"]},
        ),
        metadata={"rendered_arguments": "prefix=src/", "n": 1},
    )
    stream.append(ToolCallResponse(id="c1", content="a.py\nb.py", is_error=False))
    stream.append(
        InquiryRequest(
            id="c1.q.1",
            source=InquirySource.tool("fs_list_files"),
            question=InquiryQuestion(text="Sure?", answer_type=AnswerType.text(), default="yes"),
        )
    )
    save_conversation(conversation, tmp_path)
    chat, call, response, inquiry = orjson.loads((tmp_path / "events.json").read_bytes())
    assert chat["content"] == "list src"
    assert call["arguments"] == {
        "prefix": b64("src/"),
        "recursive": True,
        "depth": 2,
        "x": None,
        "l": [b64("a")],
    }
    assert call["metadata"] == {"rendered_arguments": b64("prefix=src/"), "n": 1}
    assert response["content"] == b64("a.py\nb.py")
    assert inquiry["question"] == {
        "text": "Sure?",
        "answer_type": {"type": "text"},
        "default": "yes",
    }
    assert load_conversation(tmp_path).stream[1] == stream[1]


@pytest.mark.parametrize("stored", ["YR==", "aGkg=", "Done===", "test===="])
def test_a_non_canonical_value_is_written_back_unchanged(tmp_path: Path, stored: str) -> None:
    """A value that is base64 but not canonical is plain, so it loads and survives a re-save."""
    entries = [
        {
            "event_id": "a",
            "timestamp": STAMP,
            "type": "tool_call_request",
            "id": "c",
            "name": "n",
            "arguments": {"text": stored},
        },
        {
            "event_id": "b",
            "timestamp": STAMP,
            "type": "tool_call_response",
            "id": "c",
            "content": stored,
            "is_error": False,
        },
    ]
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
    conversation = load_conversation(tmp_path)
    call, response = conversation.stream
    assert isinstance(call, EventEntry)
    assert isinstance(response, EventEntry)
    assert call.payload == ToolCallRequest(id="c", name="n", arguments={"text": stored})
    assert response.payload == ToolCallResponse(id="c", content=stored, is_error=False)
    conversation.stream.append(ChatRequest(content="next"))
    save_conversation(conversation)
    assert orjson.loads(path.read_bytes())[:2] == entries
