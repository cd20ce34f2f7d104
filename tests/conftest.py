"""Shared test fixtures, and the hypothesis profiles.

Real conversations written by JP are read from ``INQUIRY_JP_FIXTURES``
(default ``../shared/fixtures/jp-conversations`` beside the project). Tests
that need them skip, saying why, when the folder is absent; under ``CI=true``
they fail instead, saying where they looked: CI must check the promise that
real conversations load and re-save unchanged, not skip it. They are never
copied into the repository.

Hypothesis runs under one of two profiles, chosen by ``INQUIRY_HYPOTHESIS``:
``ci`` (the default: a fixed seed and the example counts each test names, so
every run tries the same cases) or ``deep`` (a random seed, and ten times
as many examples; run it with ``--timeout=0``). Tests name their counts
through :func:`examples`, which the deep profile scales.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from collections.abc import Callable

PROJECT = Path(__file__).resolve().parent.parent
JP_FIXTURES = Path(
    os.environ.get(
        "INQUIRY_JP_FIXTURES", PROJECT.parent / "shared" / "fixtures" / "jp-conversations"
    )
)


#: Whether this run is CI's, where a missing fixture is a failure, not a skip.
IN_CI = os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}

_DEEP_FACTOR = 10
_PROFILES = {
    "ci": settings(derandomize=True, deadline=None, print_blob=True),
    "deep": settings(
        derandomize=False,
        deadline=None,
        print_blob=True,
        max_examples=100 * _DEEP_FACTOR,  # hypothesis tries 100 by default
        suppress_health_check=[HealthCheck.too_slow],
    ),
}
#: ``INQUIRY_HYPOTHESIS``: ``ci`` (the default) or ``deep``.
HYPOTHESIS_PROFILE = os.environ.get("INQUIRY_HYPOTHESIS", "ci")
if HYPOTHESIS_PROFILE not in _PROFILES:
    raise pytest.UsageError(
        f"INQUIRY_HYPOTHESIS={HYPOTHESIS_PROFILE!r}: expected one of {sorted(_PROFILES)}"
    )
for _name, _profile in _PROFILES.items():
    settings.register_profile(_name, _profile)
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """``count`` examples under the ``ci`` profile; ten times as many under ``deep``."""
    return count * _DEEP_FACTOR if HYPOTHESIS_PROFILE == "deep" else count


def steps(count: int) -> int:
    """``count`` steps of a stateful test under ``ci``; three times as many under ``deep``."""
    return count * 3 if HYPOTHESIS_PROFILE == "deep" else count


def jp_conversation_dirs() -> list[Path]:
    """The real conversations available on this machine (maybe none)."""
    if not JP_FIXTURES.is_dir():
        return []
    return sorted(path for path in JP_FIXTURES.iterdir() if (path / "events.json").is_file())


def _missing(what: str) -> str:
    return f"{what} not found at {JP_FIXTURES} (set INQUIRY_JP_FIXTURES)"


def jp_params() -> list[object]:
    """Parametrize over the real conversations; none there: one case that skips (fails in CI)."""
    dirs = jp_conversation_dirs()
    if not dirs:
        reason = _missing("the real JP conversations")
        mark = (
            pytest.mark.jp_fixtures_missing(reason) if IN_CI else pytest.mark.skip(reason=reason)
        )
        return [pytest.param(None, marks=mark, id="no-jp-fixtures")]
    return [pytest.param(path, id=path.name.split("-", 1)[0]) for path in dirs]


def jp_conversation(prefix: str) -> Path:
    """The real conversation whose directory name starts with ``prefix``; skip (fail in CI)."""
    matches = [path for path in jp_conversation_dirs() if path.name.startswith(prefix)]
    if len(matches) != 1:
        reason = _missing(f"the JP conversation {prefix}*")
        if IN_CI:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    return matches[0]


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker a missing fixture puts on its cases under CI."""
    config.addinivalue_line(
        "markers", "jp_fixtures_missing(reason): the real JP conversations are absent (CI fails)"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under CI, a case whose real conversations are missing fails, saying where they were."""
    marker = item.get_closest_marker("jp_fixtures_missing")
    if marker is not None:
        pytest.fail(f"CI=true: {marker.args[0]}", pytrace=False)


#: Where the tests' own process looks for its controlling terminal: nowhere.
NO_TERMINAL = "/nonexistent/inquiry-tests-have-no-controlling-terminal"


@pytest.fixture(autouse=True)
def _no_controlling_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the tests' own process, no `inquiry run` finds a terminal to prompt at.

    Promptability comes from ``/dev/tty`` (RFD 104), which a developer's
    terminal provides: an in-process run must not prompt there. Tests of
    promptability run ``inquiry`` in a pseudo-terminal of its own, or in a
    new session with none, as a process apart, where this does not reach.
    """
    monkeypatch.setattr("coordinator.adapters._promptability.TERMINAL_DEVICE", NO_TERMINAL)
    for name in ("INQUIRY_NONINTERACTIVE", "JP_NONINTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


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
