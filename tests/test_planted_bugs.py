"""The planted-bug list fits the tree it is about (``tests/plants.py``, ``tests/planted_bugs.py``).

A plant whose text to replace is gone plants nothing, and the check only
says so when someone runs it: here a refactor that voids a plant fails the
suite at once. So does a plant naming a test that is not there, and a
``docs/testing.md`` table that is not the list. The check itself is run
once here, end to end, on one plant it must catch and one harmless change
it must miss; planting the whole list is the script's work (minutes).
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import TYPE_CHECKING

import attrs
import pytest
from conftest import PROJECT
from planted_bugs import (
    applied,
    docs_table,
    documented_table,
    exit_status,
    judge,
    planted_copy,
    pristine_copy,
    problem,
)
from plants import PLANTS, Plant

if TYPE_CHECKING:
    from pathlib import Path

#: Issue 40: at least 25 plausible bugs.
_AT_LEAST = 25
#: A comment of the file the end-to-end test plants in: changing it changes nothing.
_COMMENT = "    # ------------------------------------------------------------ permissions\n"


def _name(plant: Plant) -> str:
    return plant.name


@pytest.mark.parametrize("plant", PLANTS, ids=_name)
def test_every_plant_applies_exactly_once(plant: Plant) -> None:
    """Each plant's text to replace is in its file exactly once, and the plant changes it."""
    assert problem(plant) is None
    assert plant.new != plant.old


@pytest.mark.parametrize(
    "plant", [plant for plant in PLANTS if plant.file.endswith(".py")], ids=_name
)
def test_every_planted_file_still_compiles(plant: Plant) -> None:
    """A plant is a bug, never a syntax error that would fail everything at once."""
    compile(applied(plant), plant.file, "exec")


@pytest.mark.parametrize("plant", PLANTS, ids=_name)
def test_every_named_test_is_defined(plant: Plant) -> None:
    """Each test a plant names is defined in the file it names: a test never found is no catch."""
    for test in plant.tests:
        file, _, name = test.partition("::")
        source = PROJECT / file
        assert source.is_file(), test
        function = name.split("[", 1)[0]
        defined = re.search(
            rf"^(async )?def {re.escape(function)}\(", source.read_text(), re.MULTILINE
        )
        assert defined, f"{plant.name}: {test} is not defined"


def test_the_list_is_long_and_its_names_unique() -> None:
    """Issue 40 asks for 25 plants or more; a name picks one plant with --only."""
    names = [plant.name for plant in PLANTS]
    assert len(names) >= _AT_LEAST
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-zA-Z0-9-]+", name) for name in names)


def test_the_docs_table_is_the_list() -> None:
    """docs/testing.md shows the list as it is (``planted_bugs.py --docs`` rewrites it)."""
    assert documented_table() == docs_table()


def test_list_prints_the_table() -> None:
    """``--list`` prints the docs' table and touches nothing."""
    listed = subprocess.run(
        [sys.executable, str(PROJECT / "tests" / "planted_bugs.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.stdout.strip() == docs_table()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree copied as the check copies it, once for the tests that plant in it."""
    return pristine_copy(PROJECT, tmp_path_factory.mktemp("planted"))


def test_a_plant_is_planted_in_a_copy_never_in_the_tree(pristine: Path, tmp_path: Path) -> None:
    """The copy holds the bug; the working tree holds what it held; text gone is stale."""
    plant = PLANTS[0]
    before = (PROJECT / plant.file).read_bytes()
    copy = planted_copy(pristine, plant, tmp_path)
    assert (copy / plant.file).read_text() == applied(plant)
    assert (PROJECT / plant.file).read_bytes() == before
    assert (pristine / plant.file).read_bytes() == before
    gone = attrs.evolve(plant, old="text no file holds\n")
    verdict = judge(gone, pristine, tmp_path, plant.tests)
    assert verdict.kind == "stale"
    assert "no longer applies" in verdict.detail


def test_the_check_catches_a_plant_and_misses_a_harmless_change(
    pristine: Path, tmp_path: Path
) -> None:
    """A listed plant fails its tests (caught); a comment changed fails none (missed, exit 1)."""
    plant = next(plant for plant in PLANTS if plant.name == "permission-remembered-for-every-tool")
    caught = judge(plant, pristine, tmp_path, plant.tests)
    harmless = attrs.evolve(plant, name="a-comment", old=_COMMENT, new="    # permissions\n")
    missed = judge(harmless, pristine, tmp_path, plant.tests)
    assert caught.kind == "caught", caught.lines()
    assert missed.kind == "missed", missed.lines()
    assert exit_status([caught]) == 0
    assert exit_status([caught, missed]) == 1


def test_a_test_id_that_is_not_there_is_an_error_never_a_catch(
    pristine: Path, tmp_path: Path
) -> None:
    """A named test pytest cannot find (exit 4) is an error: nothing was shown to fail."""
    plant = PLANTS[0]
    verdict = judge(plant, pristine, tmp_path, ["tests/test_turn_state.py::test_not_there"])
    assert verdict.kind == "error"
    assert exit_status([verdict]) == 1
