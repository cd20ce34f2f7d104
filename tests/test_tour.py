"""`inquiry tour`, played from the installed examples; help that names files that exist."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from conftest import PROJECT
from run_helpers import assert_paired, cli

from coordinator.cli._docs import SHIPPED, doc_path, example_path
from coordinator.cli._main import _parser

if TYPE_CHECKING:
    import pytest


#: An absolute path to a doc page or an example, as help text names one.
_INSTALLED = r"(?<![\w/])(/[^\s;:()]*/(?:docs|examples)\b[^\s;:()]*?)[.,]?(?=[\s;:)]|$)"


def _files(top: Path) -> dict[str, bytes]:
    """Every file below ``top`` (byte-compiled ones aside), by its path relative to ``top``."""
    return {
        path.relative_to(top).as_posix(): path.read_bytes()
        for path in top.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _helps() -> list[str]:
    """The help of `inquiry` and of each of its commands, as printed."""
    parser = _parser()
    (commands,) = (
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    return [parser.format_help(), *(sub.format_help() for sub in commands.choices.values())]


def test_the_shipped_files_are_the_top_level_ones() -> None:
    """The package's docs and examples are the checkout's own directories, not a copy to drift."""
    assert Path(SHIPPED, "examples").resolve() == PROJECT / "examples"
    assert Path(SHIPPED, "docs").resolve() == PROJECT / "docs"
    assert Path(doc_path("headless.md")) == PROJECT / "docs" / "headless.md"
    assert Path(example_path("tour", "scenario.toml")) == PROJECT / "examples/tour/scenario.toml"


def test_every_file_the_help_names_exists() -> None:
    """Each doc page or example a command's help names is a path that exists, not `docs/X.md`."""
    named = {Path(match) for help_text in _helps() for match in re.findall(_INSTALLED, help_text)}
    assert Path(doc_path("headless.md")) in named
    assert Path(example_path("README.md")) in named
    assert all(path.exists() for path in named), sorted(p for p in named if not p.exists())
    # A page named relative to a checkout is one an installed wheel does not have;
    # `inquiry diagram` alone works on a checkout, and says so.
    bare = {m for text in _helps() for m in re.findall(r"(?<![/\w])(?:docs|examples)/\S+", text)}
    assert bare == {"docs/machines.md"}


def test_inquiry_tour_plays_the_installed_tour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry tour DIR` is the README's first run: every question answered, then what to read."""
    conversation = tmp_path / "tour"
    status, out, err = cli("tour", conversation, capsys=capsys)
    assert (status, err) == (0, "")
    assert f"inquiry run: {example_path('tour', 'scenario.toml')} -> {conversation}" in out
    assert "questions: 8 (7 answered, 1 redacted;" in out
    assert out.endswith(f"inquiry check {conversation}; inquiry export {conversation}\n")
    assert_paired(conversation)


def test_inquiry_tour_no_interactive_follows_the_detached_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry tour --no-interactive`: the answers file plays, what it leaves is denied."""
    status, out, _ = cli("tour", tmp_path / "tour", "--no-interactive", capsys=capsys)
    assert status == 0
    assert "person: the answers file" in out


def test_inquiry_tour_write_copies_the_examples_to_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--write DIR`: the installed examples, byte for byte and runnable, and how to play them."""
    target = tmp_path / "mine"
    status, out, err = cli("tour", "--write", target, capsys=capsys)
    assert (status, err) == (0, "")
    assert _files(target) == _files(PROJECT / "examples")
    script = target / "local-tools" / "tools" / "clean.sh"
    assert script.stat().st_mode & 0o111
    assert f"inquiry run {target}/tour/scenario.toml --answers {target}/tour/answers.toml" in out
    played, _, _ = cli(
        "run",
        target / "tour" / "scenario.toml",
        "--answers",
        target / "tour" / "answers.toml",
        "-c",
        tmp_path / "played",
        capsys=capsys,
    )
    assert played == 0


def test_inquiry_tour_write_never_writes_over_a_directory_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--write` into a directory that holds anything: refused, naming it, its files untouched."""
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    status, out, err = cli("tour", "--write", tmp_path, capsys=capsys)
    assert status == 2
    assert out == ""
    assert err == (
        f"inquiry: {tmp_path}: exists and is not an empty directory; "
        "not writing over it (give a new directory)\n"
    )
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_inquiry_tour_takes_a_conversation_or_write_not_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conversation DIR and --write together: a usage error, nothing written or played."""
    status, _, err = cli("tour", tmp_path / "a", "--write", tmp_path / "b", capsys=capsys)
    assert status == 2
    assert "give a conversation DIR to play it, or --write DIR, not both" in err
    assert list(tmp_path.iterdir()) == []


def test_a_path_the_help_names_is_never_cut_across_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a narrow terminal, help wraps between words: an installed path stays whole to copy."""
    monkeypatch.setenv("COLUMNS", "30")
    long_path = "/opt/a-very-long-prefix/lib/python3.11/site-packages/coordinator/docs/x.md"
    parser = _parser()
    parser.add_argument("--probe", help=f"see {long_path} for more")
    parser.description = f"See {long_path} first."
    text = parser.format_help()
    assert text.count(long_path) == 2
