"""The public API: a short list, each name documented, imported when first used."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest
from conftest import PROJECT
from process_helpers import PATIENCE

import coordinator

LAYERS = (
    "coordinator.stream",
    "coordinator.wire",
    "coordinator.store",
    "coordinator.driver",
    "coordinator.adapters",
    "coordinator.cli",
)


def test_every_public_name_has_one_home_and_imports() -> None:
    """Each name in __all__ is imported in the one list of homes, and is that module's object."""
    homes = coordinator._name_homes()
    assert set(homes) == set(coordinator.__all__)
    for name in coordinator.__all__:
        value = getattr(coordinator, name)
        assert value is getattr(importlib.import_module(homes[name]), name)
    assert set(coordinator.__all__) <= set(dir(coordinator))


def test_the_public_api_is_short_and_documented() -> None:
    """About thirty names, each with a docstring of its own (not inherited from object)."""
    assert 25 <= len(coordinator.__all__) <= 40
    for name in coordinator.__all__:
        value = getattr(coordinator, name)
        assert (value.__doc__ or "").strip(), f"{name} has no docstring"
        assert value.__doc__ is not object.__doc__, f"{name} has no docstring of its own"


def test_every_public_name_is_on_the_api_page() -> None:
    """docs/api.md names each name the package exports."""
    page = (PROJECT / "docs" / "api.md").read_text(encoding="utf-8")
    quoted = set(re.findall(r"`(\w+)`", page))
    assert set(coordinator.__all__) <= quoted


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_exports_documented_names(layer: str) -> None:
    """Every layer's package says what it is, and every name it exports exists."""
    package = importlib.import_module(layer)
    assert (package.__doc__ or "").strip()
    for name in package.__all__:
        assert hasattr(package, name), f"{layer} exports {name} but has no such name"


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A name not in the public list is not found, whatever module holds it."""
    with pytest.raises(AttributeError, match="has no attribute 'plan_sanitize'"):
        _ = coordinator.plan_sanitize


def test_the_check_command_does_not_import_the_runner_or_the_providers() -> None:
    """`inquiry check` starts without the runner, providers, exporter, asyncio or transitions."""
    probe = (
        "import sys; from coordinator.cli._main import main; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'transitions') or m.startswith(('coordinator.cli._run', "
        "'coordinator.stream._export', 'coordinator.driver', 'coordinator.adapters')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=PATIENCE
    )
    assert done.stdout.split() == []
