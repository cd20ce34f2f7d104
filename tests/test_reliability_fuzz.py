"""Bad input (DESIGN.md rule 5): the loader fuzzed with mutated conversations.

Real JP conversations (and a small one of our own that holds every entry
kind and inquiry shape) are mutated: truncated, bytes flipped, values given
the wrong type, kinds unknown or swapped, keys dropped or added, base64 fields
broken, event and inquiry ids duplicated, strings and numbers made huge,
values nested deeply, entries dropped, moved or duplicated. Whatever comes
out, loading it either succeeds or raises :class:`StreamFormatError` naming
the file and (for one entry's fault) the entry; no other exception; the files
are left exactly as they were. What loads also saves, and the save changes
nothing but event ids. Inputs are bounded in size, so no run can hang.
"""

from __future__ import annotations

import copy
import functools
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import examples, jp_params
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_inputs import b64, own_events

from coordinator import Conversation, StreamFormatError, load_conversation, save_conversation

FILES = ("events.json", "metadata.json", "base_config.json")
#: Placeholders a mutation leaves in the tree, replaced in the bytes afterwards
#: (orjson cannot write what they stand for: too deep, or not a 64-bit number).
RAW = "\x00raw-{}\x00"


@functools.cache
def _source_files(source: Path | None) -> dict[str, bytes]:
    """The files of a conversation, read once: a real one, or ours (``None``)."""
    if source is None:
        return {
            "events.json": orjson.dumps(own_events(), option=orjson.OPT_INDENT_2) + b"\n",
            "metadata.json": b'{\n  "title": "ours"\n}\n',
            "base_config.json": b'{\n  "assistant": {}\n}\n',
        }
    return {name: (source / name).read_bytes() for name in FILES if (source / name).is_file()}


# ------------------------------------------------------------------ mutations

_ODD_VALUES: list[Any] = [None, True, 0, -1, 1.5, "", "x", [], {}, [1], {"a": 1}, "\u2603"]
_BROKEN_BASE64 = [
    "!!!not base64",
    "/w==",  # base64 of a byte that is not UTF-8
    "YQ=",  # bad padding
    "YR==",  # non-canonical: unused bits set
    b64("x")[:-1],
    "",
]
_RAW_VALUES = [
    "123456789012345678901234567890",  # too big for 64 bits
    "-123456789012345678901234567890",
    "1e400",
    "-0",
    "1.0e-400",
    "NaN",
    "[" * 50 + "]" * 50,
    "[" * 253 + "]" * 253,
    "[" * 254 + "]" * 254,
    "[" * 300 + "]" * 300,
    '{"a":' * 600 + "1" + "}" * 600,
    "[" * 1100 + "]" * 1100,
]


def _paths(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) inside ``value``, a JSON tree."""
    found: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        children = (
            item.items() if type(item) is dict else enumerate(item) if type(item) is list else ()
        )
        for key, child in children:
            found.append((item, key))
            stack.append(child)
    return found


def _string_paths(value: Any) -> list[tuple[Any, Any]]:
    return [(c, k) for c, k in _paths(value) if type(c[k]) is str]


def _retype(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    paths = _paths(entries[index])
    if paths:
        container, key = draw(st.sampled_from(paths))
        container[key] = copy.deepcopy(draw(st.sampled_from(_ODD_VALUES)))


def _drop_key(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entry = entries[index]
    if type(entry) is dict and entry:
        del entry[draw(st.sampled_from(sorted(entry)))]


def _add_key(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    objects = [entries[index], *(c[k] for c, k in _paths(entries[index]))]
    objects = [value for value in objects if type(value) is dict]
    if objects:
        target = draw(st.sampled_from(objects))
        target["added_by_a_newer_writer"] = copy.deepcopy(draw(st.sampled_from(_ODD_VALUES)))


def _set_kind(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entry, other = entries[index], entries[draw(st.integers(0, len(entries) - 1))]
    if type(entry) is dict:
        swapped = other.get("type") if type(other) is dict else None
        names = ["future_kind", "", "Turn_Start", "inquiry", swapped]
        entry["type"] = draw(st.sampled_from(names))


def _break_base64(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    strings = _string_paths(entries[index])
    if strings:
        container, key = draw(st.sampled_from(strings))
        container[key] = draw(st.sampled_from(_BROKEN_BASE64))


def _duplicate_id(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entry, other = entries[index], entries[draw(st.integers(0, len(entries) - 1))]
    key = draw(st.sampled_from(["event_id", "id"]))
    if type(entry) is dict and type(other) is dict and key in other:
        entry[key] = other[key]


def _duplicate_entry(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entries.insert(draw(st.integers(0, len(entries))), orjson.loads(orjson.dumps(entries[index])))


def _huge_string(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    strings = _string_paths(entries[index])
    if strings:
        container, key = draw(st.sampled_from(strings))
        size = draw(st.sampled_from([10_000, 1_000_000]))
        container[key] = draw(st.sampled_from(["x", "\u2603", "\\", '"'])) * size


def _raw_value(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    paths = _paths(entries[index])
    if paths:
        container, key = draw(st.sampled_from(paths))
        raws.append(draw(st.sampled_from(_RAW_VALUES)))
        container[key] = RAW.format(len(raws) - 1)


def _drop_entry(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del draw, raws
    del entries[index]


def _move_entry(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entries.insert(draw(st.integers(0, len(entries) - 1)), entries.pop(index))


def _not_an_object(draw: st.DrawFn, entries: list[Any], index: int, raws: list[str]) -> None:
    del raws
    entries[index] = copy.deepcopy(draw(st.sampled_from(_ODD_VALUES)))


_MUTATIONS = (
    _retype,
    _drop_key,
    _add_key,
    _set_kind,
    _break_base64,
    _duplicate_id,
    _duplicate_entry,
    _huge_string,
    _raw_value,
    _drop_entry,
    _move_entry,
    _not_an_object,
)


@st.composite
def _mutate(draw: st.DrawFn, tree: Any, raws: list[str]) -> Any:
    """One mutation of the parsed file ``tree``; returns the new tree."""
    if type(tree) is not list or not tree or draw(st.integers(0, 20)) == 0:
        return copy.deepcopy(
            draw(st.sampled_from(_ODD_VALUES))
        )  # the whole file of the wrong type
    mutation = draw(st.sampled_from(_MUTATIONS))
    mutation(draw, tree, draw(st.integers(0, len(tree) - 1)), raws)
    return tree


@st.composite
def mutated_files(draw: st.DrawFn, source: Path | None) -> dict[str, bytes]:
    """The files of ``source`` with one of them mutated one to three times."""
    files = dict(_source_files(source))
    name = draw(st.sampled_from(["events.json"] * 4 + sorted(set(files) - {"events.json"})))
    data = files[name]
    if draw(st.integers(0, 9)) == 0:
        # Byte-level damage: a truncated write, or a flipped byte.
        position = draw(st.integers(0, len(data)))
        if draw(st.booleans()):
            files[name] = data[:position]
        else:
            byte = draw(st.integers(0, 255)).to_bytes(1, "big")
            files[name] = data[:position] + byte + data[position + 1 :]
        return files
    tree = orjson.loads(data)
    raws: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        tree = draw(_mutate(tree, raws))
    text = orjson.dumps(tree, option=orjson.OPT_INDENT_2) + b"\n"
    for number, raw in enumerate(raws):
        text = text.replace(orjson.dumps(RAW.format(number)), raw.encode())
    files[name] = text
    return files


# ---------------------------------------------------------------------- check


def _snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def _without_id(entry: Any) -> Any:
    if type(entry) is not dict:
        return entry
    return [(key, value) for key, value in entry.items() if key != "event_id"]


def _check_located(error: StreamFormatError, directory: Path, files: dict[str, bytes]) -> None:
    """The error names the file, the entry when one is at fault, and a short problem."""
    assert error.path is not None
    assert error.path.parent == directory
    assert error.path.name in files
    assert str(error).startswith(f"{error.path}: ")
    assert error.problem
    assert "\n" not in str(error)
    assert len(error.problem) <= 400  # a huge value is not quoted whole
    if error.index is not None:
        assert error.path.name == "events.json"
        assert str(error).startswith(f"{error.path}: entry {error.index}: ")
        assert 0 <= error.index < len(orjson.loads(files["events.json"]))


def check_loads_or_refuses(files: dict[str, bytes]) -> None:
    """A clean load (that saves faithfully) or a located StreamFormatError; nothing written."""
    with tempfile.TemporaryDirectory(prefix="inquiry-fuzz-") as temp:
        directory = Path(temp) / "conversation"
        directory.mkdir()
        for name, data in files.items():
            (directory / name).write_bytes(data)
        before = _snapshot(directory)
        try:
            conversation = load_conversation(directory)
        except StreamFormatError as error:
            refused: StreamFormatError | None = error
        else:
            refused = None
        assert _snapshot(directory) == before
        if refused is not None:
            _check_located(refused, directory, files)
            return
        # What loads saves: the copy changes nothing but event ids, and reads back equal.
        copy = Path(temp) / "copy"
        save_conversation(conversation, copy)
        saved = orjson.loads((copy / "events.json").read_bytes())
        original = orjson.loads(files["events.json"])
        assert [_without_id(e) for e in saved] == [_without_id(e) for e in original]
        assert list(load_conversation(copy).stream) == list(conversation.stream)


FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(FUZZ, max_examples=examples(200))
@given(data=st.data())
def test_our_mutated_conversation_loads_or_is_refused_with_a_location(data: st.DataObject) -> None:
    """A mutated small conversation: clean load and faithful save, or a located error."""
    check_loads_or_refuses(data.draw(mutated_files(None)))


@pytest.mark.parametrize("source", jp_params())
def test_mutated_real_conversations_load_or_are_refused_with_a_location(source: Path) -> None:
    """A mutated real conversation: clean load and faithful save, or a located error."""

    @settings(FUZZ, max_examples=examples(8))
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        check_loads_or_refuses(data.draw(mutated_files(source)))

    fuzz()


@pytest.mark.parametrize("raw", _RAW_VALUES, ids=lambda raw: raw[:12])
@pytest.mark.parametrize("where", ["arguments", "metadata", "delta", "unknown", "metadata.json"])
def test_every_odd_value_in_every_place_loads_or_is_refused(raw: str, where: str) -> None:
    """Huge numbers and deep nesting, wherever they sit: a clean load or a located error."""
    files = dict(_source_files(None))
    events = own_events()
    placeholder = RAW.format(0)
    if where == "arguments":
        events[5]["arguments"]["deep"] = placeholder
    elif where == "metadata":
        events[4]["metadata"]["deep"] = placeholder
    elif where == "delta":
        events[0]["delta"]["deep"] = placeholder
    elif where == "unknown":
        events[-4]["blob"] = placeholder
    else:
        files["metadata.json"] = orjson.dumps({"title": placeholder})
    files["events.json"] = orjson.dumps(events)
    files = {
        name: data.replace(orjson.dumps(placeholder), raw.encode()) for name, data in files.items()
    }
    check_loads_or_refuses(files)


def test_an_entry_nested_too_deeply_to_write_back_is_refused_by_index(tmp_path: Path) -> None:
    """JSON that loads but could never be saved (orjson writes 254 levels) names its entry."""
    events = own_events()
    events[5]["arguments"]["deep"] = RAW.format(0)
    data = orjson.dumps(events).replace(orjson.dumps(RAW.format(0)), b"[" * 300 + b"]" * 300)
    (tmp_path / "events.json").write_bytes(data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(tmp_path)
    assert (caught.value.path, caught.value.index) == (tmp_path / "events.json", 5)
    assert str(caught.value).endswith(": entry 5: entry is nested too deeply to be written back")
    assert (tmp_path / "events.json").read_bytes() == data


def test_a_foreign_file_nested_too_deeply_is_not_overwritten(tmp_path: Path) -> None:
    """Saving over a file too deep to read raises StreamFormatError and leaves it."""
    events = own_events()
    events[5]["arguments"]["deep"] = RAW.format(0)
    data = orjson.dumps(events).replace(orjson.dumps(RAW.format(0)), b"[" * 900 + b"]" * 900)
    (tmp_path / "events.json").write_bytes(data)
    conversation = load_conversation_of(own_events())
    with pytest.raises(StreamFormatError, match="nested too deeply to read; not overwriting it"):
        save_conversation(conversation, tmp_path)
    assert (tmp_path / "events.json").read_bytes() == data


def load_conversation_of(events: list[dict[str, Any]]) -> Conversation:
    """``events`` loaded as a conversation (saved to a temporary directory and read back)."""
    with tempfile.TemporaryDirectory(prefix="inquiry-fuzz-") as temp:
        (Path(temp) / "events.json").write_bytes(orjson.dumps(events))
        conversation = load_conversation(temp)
    conversation.path = None
    return conversation
