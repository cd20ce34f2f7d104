"""The documentation points only at what exists.

Every relative link in the README, the pages under docs/ and the examples'
README leads to a file of the repository; every test a page names
(``tests/test_x.py::test_name``) is defined there; every repository path a
page quotes in backticks exists. No page carries a placeholder left for a
later edit (a bare ``SOME_TOKEN`` line, ``TODO``, ``TBD``, ``FIXME``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from conftest import PROJECT

if TYPE_CHECKING:
    from pathlib import Path

PAGES = sorted(
    [PROJECT / "README.md", PROJECT / "examples" / "README.md", *(PROJECT / "docs").glob("*.md")]
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_TEST = re.compile(r"`?(tests/[\w/]+\.py)::(\w+)")
# A line that is one upper-case token (a template's slot), or a marker of unfinished text.
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|\b(?:TODO|TBD|FIXME)\b", re.MULTILINE)
_PATH = re.compile(r"`((?:coordinator|machines|tests|examples|docs|diagrams)/[\w./-]+)`")


def _ids(path: Path) -> str:
    return path.relative_to(PROJECT).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    """A link that is not a web address names a file or directory that exists."""
    text = page.read_text(encoding="utf-8")
    missing = []
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            missing.append(target)
    assert missing == [], f"{_ids(page)} links to what is not there"


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_named_test_is_defined(page: Path) -> None:
    """A page naming tests/file.py::test_name names a test that file defines."""
    text = page.read_text(encoding="utf-8")
    missing = []
    for file, name in _TEST.findall(text):
        source = PROJECT / file
        if not source.is_file() or not re.search(
            rf"(def|class) {re.escape(name)}\b|^{re.escape(name)} =",
            source.read_text(),
            re.MULTILINE,
        ):
            missing.append(f"{file}::{name}")
    assert missing == [], f"{_ids(page)} names tests that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_every_quoted_repository_path_exists(page: Path) -> None:
    """A path of the repository quoted in backticks (a module, a test file, a page) exists."""
    text = page.read_text(encoding="utf-8")
    missing = []
    for quoted in _PATH.findall(text):
        path = quoted.split("::", 1)[0].rstrip(".,")
        if any(mark in path for mark in ("*", "<", "{", ".venv")):
            continue  # a pattern, or what a run makes (a benchmark's own environment)
        if not (PROJECT / path).exists():
            missing.append(quoted)
    assert missing == [], f"{_ids(page)} quotes paths that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=_ids)
def test_no_page_holds_a_placeholder(page: Path) -> None:
    """What a reader sees is finished text: no template slot or to-do marker is left."""
    text = page.read_text(encoding="utf-8")
    found = [match.group(0) for match in _PLACEHOLDER.finditer(text)]
    assert found == [], f"{_ids(page)} holds placeholders"
