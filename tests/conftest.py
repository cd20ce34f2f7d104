"""Shared test fixtures.

Real conversations written by JP are read from ``INQUIRY_JP_FIXTURES``
(default ``../shared/fixtures/jp-conversations`` beside the project); tests
that need them skip cleanly when the folder is absent. They are never copied
into the repository.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest

import coordinator._stream_codec
from coordinator._entries import loaded_event_entry
from coordinator._timestamps import Timestamp, read_timestamp

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from coordinator._entries import EventEntry

PROJECT = Path(__file__).resolve().parent.parent
JP_FIXTURES = Path(
    os.environ.get(
        "INQUIRY_JP_FIXTURES", PROJECT.parent / "shared" / "fixtures" / "jp-conversations"
    )
)


def jp_conversation_dirs() -> list[Path]:
    """The real conversations available on this machine (maybe none)."""
    if not JP_FIXTURES.is_dir():
        return []
    return sorted(path for path in JP_FIXTURES.iterdir() if (path / "events.json").is_file())


def jp_params() -> list[object]:
    """Parametrize over the real conversations, or one skipped case when there are none."""
    dirs = jp_conversation_dirs()
    if not dirs:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no fixtures at {JP_FIXTURES}"))]
    return [pytest.param(path, id=path.name.split("-", 1)[0]) for path in dirs]


@pytest.fixture
def copy_conversation(tmp_path: Path) -> Callable[[Path], Path]:
    """Copy a real conversation into a writable temporary directory."""

    def copy(source: Path) -> Path:
        target = tmp_path / source.name
        shutil.copytree(source, target)
        for path in target.iterdir():
            path.chmod(0o644)  # the fixtures are read-only
        return target

    return copy


class FixedClock:
    """A clock that starts at a fixed moment and ticks 1.5 s per reading."""

    def __init__(self, start: datetime | None = None) -> None:
        """Start at ``start`` (default 2026-11-22 09:30 UTC)."""
        self.now = start or datetime(2026, 11, 22, 9, 30, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        """Read the clock, then advance it."""
        moment = self.now
        self.now += timedelta(seconds=1, microseconds=500_000)
        return moment


class CountingIds:
    """Deterministic event ids: ``e000001``, ``e000002``, ..."""

    def __init__(self) -> None:
        """Start counting at one."""
        self.count = 0

    def __call__(self) -> str:
        """The next id."""
        self.count += 1
        return f"e{self.count:06d}"


@pytest.fixture(autouse=True, scope="session")
def _loaded_records_are_validated() -> Iterator[None]:
    """Every entry and timestamp a load builds directly is held to its validators.

    The codec builds them without the attrs constructor (see
    ``loaded_event_entry`` and ``read_timestamp``), on the strength of checks
    of its own. For the whole run, each one is also checked by
    ``attrs.validate``, and a timestamp must read as ``Timestamp(text)`` does.
    """

    def checked_entry(*args: Any) -> EventEntry:
        entry = loaded_event_entry(*args)
        attrs.validate(entry)
        return entry

    def checked_timestamp(value: object) -> Timestamp:
        stamp = read_timestamp(value)
        attrs.validate(stamp)
        assert stamp == Timestamp(stamp.text)
        return stamp

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coordinator._stream_codec, "loaded_event_entry", checked_entry)
        patch.setattr(coordinator._stream_codec, "read_timestamp", checked_timestamp)
        yield
