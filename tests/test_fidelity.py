"""Fidelity on real JP conversations: a load and save changes nothing but added ids."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import pytest
from conftest import jp_params

from coordinator import load_conversation, save_conversation
from coordinator.store import Layout

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

FILES = ("events.json", "metadata.json", "base_config.json")


def without_event_ids(data: bytes) -> bytes:
    """The file with every line whose stripped form starts with "event_id" removed."""
    lines = data.split(b"\n")
    return b"\n".join(line for line in lines if not line.strip().startswith(b'"event_id"'))


def present(directory: Path) -> list[str]:
    """The conversation files that exist in ``directory``."""
    return [name for name in FILES if (directory / name).is_file()]


@pytest.mark.parametrize("source", jp_params())
def test_a_saved_copy_equals_the_original_but_for_event_id_lines(
    source: Path, tmp_path: Path
) -> None:
    """Load + save to a copy: every file equals the original once event_id lines are gone."""
    conversation = load_conversation(source)
    target = tmp_path / source.name
    result = save_conversation(conversation, target)
    assert {path.name for path in result.written} == set(present(source))
    assert present(target) == present(source)
    for name in present(source):
        original = (source / name).read_bytes()
        copy = (target / name).read_bytes()
        if name == "events.json":
            assert without_event_ids(copy) == original
        else:
            assert copy == original


@pytest.mark.parametrize("source", jp_params())
def test_a_saved_copy_gives_every_entry_an_id_first(source: Path, tmp_path: Path) -> None:
    """The saved events.json has one event_id per entry, as the first key, all distinct."""
    save_conversation(load_conversation(source), tmp_path / "copy")
    entries = orjson.loads((tmp_path / "copy" / "events.json").read_bytes())
    assert len(entries) == len(orjson.loads((source / "events.json").read_bytes()))
    assert all(next(iter(entry)) == "event_id" for entry in entries)
    ids = [entry["event_id"] for entry in entries]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("source", jp_params())
def test_a_second_load_and_save_is_byte_identical_and_writes_nothing(
    source: Path, copy_conversation: Callable[[Path], Path]
) -> None:
    """In place: the first save adds ids; the second is a no-op with identical bytes."""
    directory = copy_conversation(source)
    first = load_conversation(directory)
    written = save_conversation(first).written
    assert written == (directory / "events.json",)  # only the added ids
    after_first = {name: (directory / name).read_bytes() for name in present(directory)}
    mtimes = {name: (directory / name).stat().st_mtime_ns for name in present(directory)}

    second = load_conversation(directory)
    assert second.id_repairs.total == 0
    result = save_conversation(second)
    assert result.written == ()
    assert {path.name for path in result.unchanged} == set(present(directory))
    assert {name: (directory / name).read_bytes() for name in present(directory)} == after_first
    assert {name: (directory / name).stat().st_mtime_ns for name in present(directory)} == mtimes
    assert list(second.stream) == list(first.stream)


@pytest.mark.parametrize("source", jp_params())
def test_metadata_and_base_config_are_unchanged_in_place(
    source: Path, copy_conversation: Callable[[Path], Path]
) -> None:
    """Saving in place never rewrites metadata.json or base_config.json."""
    directory = copy_conversation(source)
    others = [name for name in present(directory) if name != "events.json"]
    before = {name: (directory / name).stat().st_mtime_ns for name in others}
    save_conversation(load_conversation(directory))
    for name in others:
        assert (directory / name).read_bytes() == (source / name).read_bytes()
    assert {name: (directory / name).stat().st_mtime_ns for name in others} == before


@pytest.mark.parametrize("source", jp_params())
def test_every_entry_is_understood_and_the_layout_is_detected(source: Path) -> None:
    """Real files hold no unknown entries; the layout follows base_config.json."""
    conversation = load_conversation(source)
    assert conversation.stream.unknown_entries() == []
    has_base_config = (source / "base_config.json").is_file()
    assert conversation.layout is (Layout.CURRENT if has_base_config else Layout.LEGACY)
    assert conversation.base_config is not None
    if has_base_config:
        assert conversation.base_config == orjson.loads((source / "base_config.json").read_bytes())
    else:
        first = orjson.loads((source / "events.json").read_bytes())[0]
        assert first["type"] == "config_delta"
        assert conversation.base_config == first["delta"]


@pytest.mark.parametrize("source", jp_params())
def test_loading_a_real_conversation_writes_nothing(source: Path) -> None:
    """Loading assigns the missing ids in memory only; no file is touched."""
    before = {name: (source / name).stat().st_mtime_ns for name in present(source)}
    raw = orjson.loads((source / "events.json").read_bytes())
    missing = sum(1 for entry in raw if not isinstance(entry.get("event_id"), str))
    conversation = load_conversation(source)
    assert conversation.id_repairs.assigned == missing
    assert {name: (source / name).stat().st_mtime_ns for name in present(source)} == before
