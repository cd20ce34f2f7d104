"""The generated diagrams and docs/machines.md's tables follow the machines' tables."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from coordinator.cli._diagram_files import stale_files, write_files
from coordinator.cli._main import main
from machines import (
    INQUIRY_MACHINE,
    MACHINES,
    PermissionBy,
    PermissionRuling,
    TableMachine,
    render_dot,
    render_markdown_table,
    render_mermaid,
)

PROJECT = Path(__file__).resolve().parent.parent


def test_committed_diagrams_and_machine_tables_are_up_to_date() -> None:
    """diagrams/ and docs/machines.md's tables match what the tables render."""
    assert stale_files(PROJECT) == []


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_every_row_and_state_is_drawn(machine: TableMachine[Any, Any]) -> None:
    """Each row appears as an edge and each state as a node, in both formats and the table."""
    mermaid = render_mermaid(machine)
    dot = render_dot(machine)
    table = render_markdown_table(machine)
    for row in machine.rows:
        assert f"{row.source.value} --> {row.target.value}: {row.trigger}" in mermaid
        assert f'"{row.source.value}" -> "{row.target.value}" [label="{row.trigger}' in dot
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == len(machine.rows) + 2  # heading and rule, then one line per row
    finals = ", ".join(f"`{state.value}`" for state in machine.states if state in machine.final)
    assert f"Final states: {finals}." in table
    for state in machine.states:
        assert f'"{state.value}" [label=' in dot
    for state in machine.final:
        assert f"    {state.value} --> [*]" in mermaid
        assert f'"{state.value}" [label="{state.value}", peripheries=2];' in dot


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_what_each_row_means_is_drawn_and_tabled(machine: TableMachine[Any, Any]) -> None:
    """A row's outcome, resolution and permission are on its arrow and in its table line."""
    mermaid = render_mermaid(machine).splitlines()
    table = render_markdown_table(machine).splitlines()
    heading, lines = table[0], table[2 : 2 + len(machine.rows)]
    for row, arrow, line in zip(machine.rows, mermaid[6:], lines, strict=False):
        shown = {
            "outcome": row.outcome and row.outcome.value,
            "resolution": row.resolution and row.resolution.value,
            "permission": row.permission and str(row.permission),
        }
        for column, value in shown.items():
            if value is None:
                assert f"{column}=" not in arrow
            else:
                assert f"· {column}={value}" in arrow
                assert f"| {column.capitalize()} |" in heading
                assert f" {value} |" in line


def test_a_ruling_is_shown_as_whether_the_call_runs_and_who_decided() -> None:
    """The permission column reads 'runs (configuration)', 'skipped (person)'."""
    assert str(PermissionRuling(PermissionBy.CONFIGURATION, run=True)) == "runs (configuration)"
    assert str(PermissionRuling(PermissionBy.PERSON, run=False)) == "skipped (person)"


def test_rendering_ignores_any_model_state() -> None:
    """Rendering after driving models through the machine gives the same text."""
    before = render_mermaid(INQUIRY_MACHINE), render_dot(INQUIRY_MACHINE)
    from machine_drivers import InquiryCase  # noqa: PLC0415 - only needed here

    model = InquiryCase().make()
    INQUIRY_MACHINE.fire(model, "ask")
    assert (render_mermaid(INQUIRY_MACHINE), render_dot(INQUIRY_MACHINE)) == before
    assert "s_active" not in before[0]


def test_a_stale_file_is_named_and_regenerated(tmp_path: Path) -> None:
    """Editing a generated file by hand makes the check name it; regenerating fixes it."""
    shutil.copytree(PROJECT / "diagrams", tmp_path / "diagrams")
    (tmp_path / "docs").mkdir()
    shutil.copy(PROJECT / "docs" / "machines.md", tmp_path / "docs" / "machines.md")
    edited = tmp_path / "diagrams" / "inquiry.mmd"
    edited.write_text(edited.read_text().replace("routed", "sent"))
    (tmp_path / "diagrams" / "tool_call.dot").unlink()
    assert stale_files(tmp_path) == [edited, tmp_path / "diagrams" / "tool_call.dot"]
    assert write_files(tmp_path) == [edited, tmp_path / "diagrams" / "tool_call.dot"]
    assert stale_files(tmp_path) == []


def test_the_machines_page_is_generated_from_the_tables(tmp_path: Path) -> None:
    """docs/machines.md holds each machine's table, and the inquiry machine's diagram."""
    page = (PROJECT / "docs" / "machines.md").read_text()
    assert "```mermaid\n" + render_mermaid(INQUIRY_MACHINE) + "```" in page
    for machine in MACHINES:
        assert render_markdown_table(machine) in page
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "machines.md").write_text("# no markers\n")
    with pytest.raises(ValueError, match=r"docs/machines\.md has no .<!-- BEGIN GENERATED"):
        stale_files(tmp_path)


def test_diagram_check_command_exits_1_naming_the_stale_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry diagram --check` names a stale file and exits 1; `inquiry diagram` fixes it."""
    shutil.copytree(PROJECT / "diagrams", tmp_path / "diagrams")
    (tmp_path / "docs").mkdir()
    shutil.copy(PROJECT / "docs" / "machines.md", tmp_path / "docs" / "machines.md")
    assert main(["diagram", "--check", "--root", str(tmp_path)]) == 0
    (tmp_path / "diagrams" / "inquiry.dot").write_text("digraph stale {}\n")
    capsys.readouterr()
    assert main(["diagram", "--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (
        f"stale: {tmp_path / 'diagrams' / 'inquiry.dot'} (regenerate with `inquiry diagram`)\n"
    )
    assert main(["diagram", "--root", str(tmp_path)]) == 0
    assert main(["diagram", "--check", "--root", str(tmp_path)]) == 0


@pytest.mark.parametrize("check", [[], ["--check"]], ids=["write", "check"])
def test_diagram_outside_a_checkout_says_so_and_writes_nothing(
    tmp_path: Path, check: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Run where there is no docs/machines.md (an installed wheel), it names why, exit 2."""
    assert main(["diagram", *check, "--root", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "not a checkout of inquiry-coordinator (no docs/machines.md)" in error
    assert "--root DIR" in error
    assert list(tmp_path.iterdir()) == []


def test_table_command_prints_each_machines_table(capsys: pytest.CaptureFixture[str]) -> None:
    """`inquiry table` prints every machine's table; naming one prints just it."""
    assert main(["table"]) == 0
    everything = capsys.readouterr().out
    for machine in MACHINES:
        assert render_markdown_table(machine) in everything
    assert main(["table", "inquiry"]) == 0
    assert capsys.readouterr().out == (
        f"## The inquiry machine\n\n{render_markdown_table(INQUIRY_MACHINE)}\n"
    )
