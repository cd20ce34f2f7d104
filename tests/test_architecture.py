"""The tree is the architecture: the import contracts hold, and cover every layer."""

from __future__ import annotations

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
    """No module imports a layer above its own, and the shared vocabulary imports no layer."""
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
