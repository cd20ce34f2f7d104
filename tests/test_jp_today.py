"""JP as it writes today: every entry kind and field loads, and re-saves byte for byte.

The fixtures are JP's own test data (``tests/fixtures/jp/``, each file's
source in its README): ``event_overlay``, ``config_delta`` with ``op:
"reset"`` and ``unsets``, compaction policies, ``event_id`` as JP assigns it
(RFD 097), and the request links of RFD 098.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from coordinator import (
    StreamFormatError,
    export_markdown,
    load_conversation,
    pair_events,
    save_conversation,
)
from coordinator.cli._check import summarize
from coordinator.stream import (
    Compaction,
    ConfigDelta,
    EventEntry,
    EventOverlay,
    OverlayPatch,
    UnknownEntry,
)
from coordinator.wire import decode_stream, encode_stream
from machines import ChatResponse

FIXTURES = Path(__file__).parent / "fixtures" / "jp"


def lines(name: str) -> list[bytes]:
    """The entries of fixture ``name``, each as the exact bytes JP's test holds."""
    return (FIXTURES / name).read_bytes().splitlines()


def entries(name: str) -> list[Any]:
    """The entries of fixture ``name``, parsed."""
    return [orjson.loads(line) for line in lines(name)]


def write_as_jp(directory: Path, name: str) -> Path:
    """Fixture ``name`` as JP lays out a conversation directory (current layout)."""
    directory.mkdir()
    body = orjson.dumps(entries(name), option=orjson.OPT_INDENT_2) + b"\n"
    (directory / "events.json").write_bytes(body)
    (directory / "base_config.json").write_bytes(b"{}\n")
    (directory / "metadata.json").write_bytes(b'{\n  "title": "jp today"\n}\n')
    return directory


KIND_LINES = lines("every_payload_kind.jsonl")


@pytest.mark.parametrize("line", KIND_LINES, ids=[orjson.loads(x)["type"] for x in KIND_LINES])
def test_every_kind_jp_writes_reads_and_writes_back_byte_for_byte(line: bytes) -> None:
    """Each kind JP pins in its tests loads as a known entry and is written back as JP wrote it."""
    stream, repairs = decode_stream([orjson.loads(line)])
    assert repairs.total == 0
    assert not isinstance(stream[0], UnknownEntry)
    assert orjson.dumps(encode_stream(stream)[0]) == line


@pytest.mark.parametrize("line", KIND_LINES, ids=[orjson.loads(x)["type"] for x in KIND_LINES])
def test_an_entry_we_build_is_written_as_jp_writes_it(line: bytes) -> None:
    """Built anew from its record (not from what was read), each kind has JP's bytes."""
    stream, _ = decode_stream([orjson.loads(line)])
    rebuilt = attrs.evolve(stream[0])  # the same values, no memory of what was read
    stream.replace([rebuilt])
    assert orjson.dumps(encode_stream(stream)[0]) == line


@pytest.mark.parametrize("name", ["every_payload_kind.jsonl", "overlay_and_unsets.jsonl"])
def test_a_conversation_jp_writes_loads_and_saves_elsewhere_unchanged(
    tmp_path: Path, name: str
) -> None:
    """A directory of JP's entries, saved whole to a new place, holds the very same bytes."""
    source = write_as_jp(tmp_path / "jp", name)
    conversation = load_conversation(source)
    assert conversation.id_repairs.total == 0
    save_conversation(conversation, tmp_path / "copy")
    assert (tmp_path / "copy" / "events.json").read_bytes() == (
        source / "events.json"
    ).read_bytes()


def test_unknown_entries_are_kept_where_jp_would_move_their_id() -> None:
    """An unknown entry is written back verbatim, its event_id where it was (JP moves it first)."""
    raw = lines("unknown_entries.jsonl")
    stream, repairs = decode_stream([orjson.loads(line) for line in raw])
    assert repairs.total == 0
    assert [orjson.dumps(entry) for entry in encode_stream(stream)] == raw
    assert [entry.event_id for entry in stream] == ["Future ID!", "middle"]


def test_a_reset_and_an_apply_with_unsets_read_as_jp_means_them() -> None:
    """``op: reset`` is a reset with no delta; an apply keeps its delta and the paths it clears."""
    stream, _ = decode_stream(
        entries("every_payload_kind.jsonl") + entries("overlay_and_unsets.jsonl")[4:5]
    )
    deltas = [entry for entry in stream if isinstance(entry, ConfigDelta)]
    assert [(d.reset, dict(d.delta), d.unsets, d.flattened) for d in deltas] == [
        (True, {}, (), False),
        (False, {}, (), False),
        (False, {"assistant": {"tool_choice": "auto"}}, ("conversation.tools",), False),
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"op": "replace"}, "unknown config_delta op 'replace' (JP writes 'reset', or none)"),
        ({"op": 3}, "unknown config_delta op an integer"),
        ({"delta": {}, "unsets": "a.b"}, "'unsets' must be an array of strings (dotted paths)"),
        ({"patches": {}, "type": "event_overlay"}, "'patches' must be an array, not an object"),
        ({"type": "event_overlay"}, "event_overlay has no 'patches'"),
        (
            {
                "type": "event_overlay",
                "patches": [{"matcher": {"matcher": "regex"}, "action": {}}],
            },
            "patches[0].matcher: unknown matcher 'regex'",
        ),
        (
            {
                "type": "event_overlay",
                "patches": [
                    {
                        "matcher": {"matcher": "metadata_value", "key": "k", "value": "v"},
                        "action": {"action": "rewrite", "key": "k"},
                    }
                ],
            },
            "patches[0].action: unknown action 'rewrite'",
        ),
        (
            {
                "type": "event_overlay",
                "patches": [
                    {
                        "matcher": {"matcher": "metadata_value", "key": "k"},
                        "action": {"action": "remove_metadata", "key": "k"},
                    }
                ],
            },
            "'patches[0].matcher.value' is missing",
        ),
    ],
)
def test_a_config_op_or_overlay_patch_jp_would_refuse_is_refused_naming_it(
    tmp_path: Path, entry: dict[str, Any], problem: str
) -> None:
    """What JP refuses to load (an op or patch tag it does not know) is refused, naming it."""
    raw = {"event_id": "e1", "type": "config_delta", "timestamp": "1970-01-01 00:00:00.0"}
    directory = tmp_path / "c"
    directory.mkdir()
    body = orjson.dumps([raw | entry], option=orjson.OPT_INDENT_2) + b"\n"
    (directory / "events.json").write_bytes(body)
    (directory / "base_config.json").write_bytes(b"{}\n")
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(directory)
    kind = (raw | entry)["type"]
    assert f"entry 0: {kind}: {problem}" in str(caught.value)
    assert (directory / "events.json").read_bytes() == body  # nothing was written


def test_an_overlay_changes_what_a_provider_is_sent_and_nothing_else() -> None:
    """The stale signature leaves the provider view only: the stream and its pairing keep it."""
    stream, _ = decode_stream(entries("overlay_and_unsets.jsonl"))
    (overlay,) = (entry for entry in stream if isinstance(entry, EventOverlay))
    assert overlay.patches == (
        OverlayPatch(
            key="anthropic_thinking_signature",
            value="stale",
            remove="anthropic_thinking_signature",
        ),
    )
    shown = {entry.event_id: dict(entry.metadata) for entry in stream.provider_view().events}
    assert shown == {
        "chat001": {},
        "think01": {},  # its signature was the stale one
        "reply01": {"anthropic_thinking_signature": "fresh"},
    }
    recorded = next(entry for entry in stream if entry.event_id == "think01")
    assert isinstance(recorded, EventEntry)
    assert recorded.metadata == {"anthropic_thinking_signature": "stale"}
    assert pair_events(stream).complete
    before = orjson.dumps(encode_stream(stream))
    stream.replace([entry for entry in stream if not isinstance(entry, EventOverlay)])
    assert stream.provider_view().events[1].metadata == {"anthropic_thinking_signature": "stale"}
    assert before != orjson.dumps(encode_stream(stream))


def test_an_overlay_applies_wherever_it_sits_and_in_order() -> None:
    """Patches apply to events before and after the overlay alike, one after another."""
    stream, _ = decode_stream(entries("overlay_and_unsets.jsonl"))
    thinking = next(e for e in stream if e.event_id == "think01")
    assert isinstance(thinking, EventEntry)
    later = attrs.evolve(thinking, event_id="think02")
    stream.replace([*stream, later])
    metadata = [dict(entry.metadata) for entry in stream.provider_view().events]
    assert metadata[-1] == {}
    assert metadata[1] == {}


def test_a_compaction_summary_as_jp_writes_it_is_read_and_shown() -> None:
    """JP's summary object loads whole; its text is what the export quotes."""
    stream, _ = decode_stream(entries("overlay_and_unsets.jsonl"))
    (compaction,) = (entry for entry in stream if isinstance(entry, Compaction))
    assert compaction.summary == {"summary": "We asked and it answered.", "source": "authored"}
    assert compaction.tool_calls == {"policy": "omit"}
    assert compaction.summary_text == "We asked and it answered."
    text = export_markdown(stream)
    assert "> We asked and it answered." in text
    assert "_Event overlay (1 patch): what a model is sent" in text


def test_check_and_export_read_jp_global_entries_as_global(tmp_path: Path) -> None:
    """A reset, an overlay and a compaction count as their kinds and belong to no turn."""
    conversation = load_conversation(write_as_jp(tmp_path / "jp", "every_payload_kind.jsonl"))
    summary = summarize(conversation)
    assert summary["kinds"]["event_overlay"] == 1
    assert summary["kinds"]["config_delta"] == 2
    assert summary["unknown_kinds"] == []
    assert summary["turns"] == 1
    assert "_Configuration reset: no change before it applies any more, nor the base._" in (
        export_markdown(conversation.stream)
    )


def test_ids_jp_repeats_are_repaired_our_way_and_both_files_read() -> None:
    """Of five entries sharing an id the unknown one keeps it (JP: the first); all end unique."""
    original = entries("duplicated_ids.jsonl")
    stream, repairs = decode_stream(original)
    ids = [entry.event_id for entry in stream]
    assert ids[3] == "shared"  # the unknown entry, kept verbatim
    assert len(set(ids)) == len(ids)
    assert repairs.regenerated == 4
    assert stream.duplicated_ids == frozenset({"shared"})
    saved = encode_stream(stream)
    # JP's own assertion: but for event_id, what is saved is what was read.
    assert [{k: v for k, v in e.items() if k != "event_id"} for e in saved] == [
        {k: v for k, v in e.items() if k != "event_id"} for e in original
    ]
    reloaded, again = decode_stream(saved)
    assert again.total == 0
    assert reloaded.duplicated_ids == frozenset()


def test_a_jp_file_without_links_gains_none_and_new_events_are_linked(tmp_path: Path) -> None:
    """Old entries are not backfilled; an event appended after a load links to its request."""
    source = write_as_jp(tmp_path / "jp", "overlay_and_unsets.jsonl")
    conversation = load_conversation(source)
    stream = conversation.stream
    assert stream.active_request_id == "chat001"
    appended = stream.append(ChatResponse.message("And more."))
    save_conversation(conversation)
    saved = orjson.loads((source / "events.json").read_bytes())
    assert [entry.get("request_id") for entry in saved] == [None] * 7 + ["chat001"]
    assert saved[-1]["event_id"] == appended.event_id
    assert list(saved[-1])[:4] == ["event_id", "request_id", "timestamp", "type"]
