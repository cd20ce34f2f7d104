"""The project as users install it: every package in the wheel, one command three ways."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import PROJECT

INQUIRY = Path(sys.executable).with_name("inquiry")
_NOT_SOURCE = (
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
)


def _run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, cwd=PROJECT
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The project's wheel, built once for this module's tests."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    # From a copy without build/: setuptools would take stale modules from an earlier build.
    source = tmp_path / "source"
    shutil.copytree(PROJECT, source, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path, source
    )
    assert built.returncode == 0, built.stderr
    (path,) = tmp_path.glob("*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_every_package_and_its_type_marker(wheel: zipfile.ZipFile) -> None:
    """Each package and sub-package of the source tree is in the wheel, with py.typed."""
    names = set(wheel.namelist())
    packages = {
        init.parent.relative_to(PROJECT).as_posix()
        for top in ("machines", "coordinator")
        for init in (PROJECT / top).rglob("__init__.py")
    }
    assert "coordinator/adapters/providers" in packages
    assert {package for package in packages if f"{package}/__init__.py" in names} == packages
    assert {"machines/py.typed", "coordinator/py.typed"} <= names


def test_the_wheel_ships_the_examples_and_docs_as_they_are(wheel: zipfile.ZipFile) -> None:
    """The wheel's examples and doc pages are the checkout's, file for file and byte for byte."""
    shipped = "coordinator/cli/_shipped/"
    in_wheel = {
        name.removeprefix(shipped): wheel.read(name)
        for name in wheel.namelist()
        if name.startswith(shipped)
    }
    in_checkout = {
        path.relative_to(PROJECT).as_posix(): path.read_bytes()
        for path in [*(PROJECT / "examples").rglob("*"), *(PROJECT / "docs").glob("*.md")]
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert sorted(in_wheel) == sorted(in_checkout)
    assert in_wheel == in_checkout
    mode = wheel.getinfo(f"{shipped}examples/local-tools/tools/clean.sh").external_attr >> 16
    assert mode & 0o111, "a tool script ships executable"


def test_the_wheel_holds_every_file_the_help_names(wheel: zipfile.ZipFile) -> None:
    """Each doc page and example the commands' help names (a checkout path) is in the wheel."""
    names = set(wheel.namelist())
    helps = [_run(INQUIRY, "--help").stdout] + [
        _run(INQUIRY, command, "--help").stdout
        for command in ("check", "sanitize", "export", "run", "serve", "tour")
    ]
    named = {
        Path(match).relative_to(PROJECT).as_posix()
        for text in helps
        for match in re.findall(rf"{re.escape(str(PROJECT))}/(?:docs|examples)/[\w./-]*\w", text)
    }
    assert {"docs/headless.md", "docs/resume.md", "examples/README.md"} <= named
    shipped = {name.removeprefix("coordinator/cli/_shipped/") for name in names}
    directories = {parent.as_posix() for name in shipped for parent in Path(name).parents}
    assert named - shipped - directories == set()


def test_inquiry_version_is_the_installed_distributions() -> None:
    """`inquiry --version` and `python -m coordinator --version` print the version pip knows."""
    expected = f"inquiry {version('inquiry-coordinator')}\n"
    for command in ((INQUIRY,), (sys.executable, "-m", "coordinator")):
        result = _run(*command, "--version")
        assert (result.returncode, result.stdout) == (0, expected)


def test_python_m_coordinator_is_the_same_command() -> None:
    """`python -m coordinator` runs the inquiry command: same help, same subcommands."""
    script = _run(INQUIRY, "--help")
    module = _run(sys.executable, "-m", "coordinator", "--help")
    assert script.returncode == module.returncode == 0
    assert module.stdout == script.stdout
    assert "usage: inquiry" in module.stdout


def test_a_bare_inquiry_prints_the_whole_help() -> None:
    """`inquiry` with no command prints the usage and every command, and exits 2."""
    result = _run(INQUIRY)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: inquiry")
    for command in ("check", "sanitize", "export", "diagram", "table", "run"):
        assert f"\n    {command} " in result.stderr
