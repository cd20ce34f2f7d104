"""The tree is the architecture: the import contracts hold, and cover every layer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from conftest import PROJECT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_the_import_contracts_hold() -> None:
    """No module imports a layer above its own or another package's private module."""
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_every_sub_package_of_the_shell_is_a_layer_of_the_contract() -> None:
    """A new sub-package cannot escape the contract: each one is listed as a layer."""
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    packages = {
        f"coordinator.{path.parent.name}"
        for path in (PROJECT / "coordinator").glob("*/__init__.py")
    }
    assert packages == set(layers) - {"machines"}
    assert layers[-1] == "machines"


def test_the_top_of_the_shell_holds_only_its_shared_vocabulary() -> None:
    """Beside the layers, coordinator/ holds the package and the modules all layers share."""
    modules = {path.name for path in (PROJECT / "coordinator").glob("*.py")}
    shared = {"_errors.py", "_text.py", "_recorded_routes.py"}
    assert modules == {"__init__.py", "__main__.py", *shared}
    forbidden = {
        tuple(c["source_modules"]): set(c["forbidden_modules"])
        for c in _contracts()
        if c["type"] == "forbidden"
    }
    assert set(forbidden) == {
        ("coordinator._errors", "coordinator._text", "coordinator._recorded_routes"),
        ("machines",),
    }
    # The shared modules sit beside the layers, so neither contract above may
    # let a layer reach them from below: the machines may import none of the shell.
    assert forbidden[("machines",)] == {"coordinator"}


def test_every_private_module_is_covered_without_exceptions() -> None:
    """The private-modules contract checks every package of both roots, and lets nothing by."""
    (contract,) = [c for c in _contracts() if c["type"] == "private_modules"]
    assert set(contract) == {"name", "type"}


def test_a_private_import_from_another_package_breaks_the_contract(tmp_path: Path) -> None:
    """lint-imports fails naming each planted import of another package's private module."""
    for package in ("coordinator", "machines"):
        shutil.copytree(
            PROJECT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(PROJECT / "pyproject.toml", tmp_path)
    planted = {
        # Another layer's private module, the machines', another sub-package's.
        "coordinator/cli": "coordinator.store._lock import LOCK_FILE",
        "coordinator/stream": "machines._json import json_type",
        "coordinator/adapters": "coordinator.adapters.mcp._forms import ACCEPT",
        # A package's own private modules, and the shared vocabulary: allowed.
        "coordinator/store": "coordinator.store._lock import LOCK_FILE",
        "coordinator/adapters/mcp": "coordinator.adapters.mcp._forms import ACCEPT",
        "coordinator/driver": "coordinator._text import shown_text",
    }
    for package, statement in planted.items():
        (tmp_path / package / "_planted.py").write_text(f"from {statement}\n", encoding="utf-8")
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=tmp_path,
        # The copy, not the installed tree, is what is analysed.
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Each package's private modules are its own: the others import its face BROKEN" in (
        done.stdout
    )
    assert "Contracts: 3 kept, 1 broken." in done.stdout
    assert sorted(line for line in done.stdout.splitlines() if line.startswith("- ")) == [
        "- coordinator.adapters._planted -> coordinator.adapters.mcp._forms (l.1)",
        "- coordinator.cli._planted -> coordinator.store._lock (l.1)",
        "- coordinator.stream._planted -> machines._json (l.1)",
    ]
