"""The public API, imported when first used; what each command imports, and what it does not."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from conftest import PROJECT
from process_helpers import PATIENCE

import coordinator
from coordinator import Conversation, save_conversation
from coordinator.cli._main import main
from machines import MACHINES, ChatRequest, ChatResponse, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

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
    """Some forty names, each with a docstring of its own (not inherited from object)."""
    # What an embedder needs: the coordinator and its three protocols, the
    # conversation and its readers, and the park/inbox pair; a name beyond
    # fifty belongs in a layer's face, not here.
    assert 25 <= len(coordinator.__all__) <= 50
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


#: Runs the command with the arguments after the first, then writes to the file
#: named first the modules the command imported (those not there when it began).
_PROBE = """
import sys
before = set(sys.modules)
from coordinator.cli._main import main
try:
    status = main(sys.argv[2:])
except SystemExit as stop:
    status = stop.code
with open(sys.argv[1], "w", encoding="utf-8") as file:
    file.write("\\n".join(sorted(set(sys.modules) - before)))
sys.exit(status)
"""

#: What neither ``inquiry --version`` nor ``--help`` imports: every layer below
#: the command, the machines, the dependencies, and the standard library's
#: heavier modules the engine uses (docs/performance.md, *Start-up*).
_NOT_FOR_VERSION_OR_HELP = (
    *(layer for layer in LAYERS if layer != "coordinator.cli"),
    "machines",
    "attr",
    "attrs",
    "cattrs",
    "orjson",
    "logging",
    "typing",
    "importlib.metadata",
    "asyncio",
)


def _imported(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    """The exit status of ``inquiry ARGV`` as a process, and the modules it imported."""
    modules = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(modules), *argv],
        capture_output=True,
        check=False,
        timeout=PATIENCE,
    )
    return done.returncode, set(modules.read_text(encoding="utf-8").split())


def _within(modules: set[str], packages: Iterable[str]) -> list[str]:
    """The modules that are one of ``packages`` or inside one."""
    return sorted(
        module
        for module in modules
        for package in packages
        if module == package or module.startswith(f"{package}.")
    )


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_import_nothing_of_the_engine(tmp_path: Path, option: str) -> None:
    """`inquiry --version` / `--help` import no layer, no dependency, no logging or typing."""
    status, modules = _imported(tmp_path, option)
    assert status == 0
    assert "coordinator.cli._main" in modules
    assert _within(modules, _NOT_FOR_VERSION_OR_HELP) == []


def test_the_check_command_imports_what_it_reads_with_and_no_more(tmp_path: Path) -> None:
    """`inquiry check` reads through the store, without the driver, adapters, asyncio or runner."""
    conversation = Conversation.new(metadata={"title": "probe"}, base_config={})
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="hello"))
    conversation.stream.append(ChatResponse.message("hi"))
    save_conversation(conversation, tmp_path / "conversation")
    conversation.close()  # held, its writer lock would make check say "being written"
    status, modules = _imported(tmp_path, "check", str(tmp_path / "conversation"))
    assert status == 0
    assert {"coordinator.store", "coordinator.wire", "orjson", "cattrs"} <= modules
    unwanted = (
        "coordinator.driver",
        "coordinator.adapters",
        "coordinator.cli._run",
        "coordinator.stream._export",
        "asyncio",
        "transitions",
        "importlib.metadata",
    )
    assert [m for m in _within(modules, unwanted) if not m.startswith("asyncio.")] == []
    assert _within(modules, ["asyncio"]) == []


def test_inquiry_table_still_checks_and_shows_the_machines_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The machines' names, read only when asked, are still `table`'s choices and its help."""
    with pytest.raises(SystemExit) as refused:
        main(["table", "no_such_machine"])
    assert refused.value.code == 2
    choices = ", ".join(repr(machine.name) for machine in MACHINES)
    assert f"invalid choice: 'no_such_machine' (choose from {choices})" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["table", "--help"])
    assert ", ".join(machine.name for machine in MACHINES) in capsys.readouterr().out


def _logging_modules() -> list[str]:
    """Every module of the package whose source asks ``logging`` for a logger."""
    package = PROJECT / "coordinator"
    return sorted(
        ".".join(path.relative_to(PROJECT).with_suffix("").parts)
        for path in package.rglob("*.py")
        if "logging.getLogger(" in path.read_text(encoding="utf-8")
        and path.parent.name != "cli"  # the command adds a handler of its own as it runs
    )


def test_every_module_that_logs_has_the_librarys_null_handler_when_imported_alone() -> None:
    """Importing any module that logs, alone, gives the `coordinator` logger its NullHandler."""
    modules = _logging_modules()
    assert "coordinator.store._atomic" in modules
    probe = (
        "import importlib, logging, sys; importlib.import_module(sys.argv[1]); "
        "print(any(isinstance(h, logging.NullHandler) "
        "for h in logging.getLogger('coordinator').handlers))"
    )
    for module in modules:
        done = subprocess.run(
            [sys.executable, "-c", probe, module],
            capture_output=True,
            text=True,
            check=True,
            timeout=PATIENCE,
        )
        assert done.stdout.strip() == "True", module
