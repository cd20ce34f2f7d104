"""The generated files: ``diagrams/`` and the machines' section of ``docs/machines.md``.

Everything here is rendered from the machines' tables (``machines.MACHINES``);
nothing is edited by hand. ``inquiry diagram`` writes what is stale;
``inquiry diagram --check`` only reports it, and a test runs that check, so a
table change without regenerated files fails the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.store import atomic_write
from machines import INQUIRY_MACHINE, MACHINES, render_dot, render_markdown_table, render_mermaid

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "MACHINES_PAGE",
    "SECTION_BEGIN",
    "SECTION_END",
    "expected_files",
    "stale_files",
    "write_files",
]

#: The page that holds the machines' generated section, relative to the project.
MACHINES_PAGE = "docs/machines.md"
SECTION_BEGIN = "<!-- BEGIN GENERATED: machines (regenerate with `inquiry diagram`) -->"
SECTION_END = "<!-- END GENERATED: machines -->"


def _section() -> str:
    parts = [
        SECTION_BEGIN,
        "",
        "```mermaid",
        render_mermaid(INQUIRY_MACHINE).rstrip("\n"),
        "```",
        "",
        render_markdown_table(INQUIRY_MACHINE).rstrip("\n"),
    ]
    for machine in MACHINES:
        if machine is INQUIRY_MACHINE:
            continue
        parts += [
            "",
            f"<details><summary>The {machine.name} machine's table</summary>",
            "",
            render_markdown_table(machine).rstrip("\n"),
            "",
            "</details>",
        ]
    parts += ["", SECTION_END]
    return "\n".join(parts)


def _page(current: str) -> str:
    start = current.find(SECTION_BEGIN)
    end = current.find(SECTION_END)
    if start == -1 or end == -1 or end < start:
        raise ValueError(f"{MACHINES_PAGE} has no '{SECTION_BEGIN}' ... '{SECTION_END}' section")
    return current[:start] + _section() + current[end + len(SECTION_END) :]


def expected_files(root: Path) -> dict[Path, str]:
    """Every generated file under ``root``, with the content it should have."""
    files = {}
    for machine in MACHINES:
        files[root / "diagrams" / f"{machine.name}.mmd"] = render_mermaid(machine)
        files[root / "diagrams" / f"{machine.name}.dot"] = render_dot(machine)
    page = root / MACHINES_PAGE
    files[page] = _page(page.read_text(encoding="utf-8"))
    return files


def stale_files(root: Path) -> list[Path]:
    """The generated files under ``root`` that are missing or out of date."""
    stale = []
    for path, content in expected_files(root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            stale.append(path)
    return stale


def write_files(root: Path) -> list[Path]:
    """Regenerate what is stale under ``root``; return what was written."""
    written = []
    for path, content in expected_files(root).items():
        if path.is_file() and path.read_text(encoding="utf-8") == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, content.encode("utf-8"))
        written.append(path)
    return written
