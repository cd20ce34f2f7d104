"""The planted-bug check: whether the suite catches each bug of ``tests/plants.py``.

Run it from the project's root::

    .venv/bin/python tests/planted_bugs.py                  # every plant, its named tests
    .venv/bin/python tests/planted_bugs.py --only NAME      # one plant (repeatable)
    .venv/bin/python tests/planted_bugs.py --list           # the list, as docs/testing.md's table
    .venv/bin/python tests/planted_bugs.py --docs           # docs/testing.md's table rewritten
    .venv/bin/python tests/planted_bugs.py --full --only NAME
    .venv/bin/python tests/planted_bugs.py --against tests/test_x.py --only NAME

Theory of operation. A plant (:class:`plants.Plant`) is one plausible bug:
in one file, one exact text replaced by another, and the tests that must
fail because of it. The check never touches the working tree:

1. The tree is copied once into a temporary directory: every file git
   tracks or would track (``git ls-files --cached --others
   --exclude-standard``), as it is in the working tree, uncommitted edits
   included, and compiled there.
2. Baseline: the tests the selected plants name are run once on that copy,
   unchanged. Should one fail there, no plant can be judged by it: the
   check stops, naming it (exit status 2).
3. For each plant, a fresh copy of that copy is made and the plant's text
   replaced in it. Text that is not there exactly once makes the plant
   **stale** ("no longer applies"): the code changed under it, and the list
   must follow. Then pytest runs in the copy, with ``PYTHONPATH`` naming it,
   so that the copy's code is what runs, in the tests and in every process
   they start (the project's editable install is found after it), and
   stops at the first failure.
4. pytest's exit status judges: 1 (a test failed) is **caught**, 0 is
   **missed**, anything else (a named test that is not there, a usage
   error, a run past :data:`PLANT_LIMIT`) is an **error**, shown with
   pytest's last lines.

The check exits 0 when every selected plant is caught, 1 otherwise.
``--full`` runs the whole suite but its slow files (:data:`SLOW_FILES`)
instead of the named tests, with the named tests of those files; and
``--against`` runs the tests given instead. Both run to the end and list
every test that failed: that is how a new plant's ``tests`` are found
(``docs/testing.md``). The script is not collected by pytest (its name
does not start with ``test_``); ``tests/test_planted_bugs.py`` checks in
the suite that every plant still applies and names tests that exist.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from plants import PLANTS, Plant

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "DOC",
    "PLANT_LIMIT",
    "SLOW_FILES",
    "Verdict",
    "applied",
    "docs_table",
    "documented_table",
    "exit_status",
    "judge",
    "main",
    "planted_copy",
    "pristine_copy",
    "problem",
]

PROJECT = Path(__file__).resolve().parent.parent
#: The page whose generated section is the list's table.
DOC = PROJECT / "docs" / "testing.md"
_BEGIN = "<!-- BEGIN GENERATED: planted bugs (regenerate with `planted_bugs.py --docs`) -->"
_END = "<!-- END GENERATED: planted bugs -->"
#: The files ``--full`` leaves out: their tests start processes by the dozen
#: (kills, signals, pseudo-terminals, packaging) and take most of the suite's
#: time. A plant only they catch names their tests, which ``--full`` runs.
SLOW_FILES = (
    "tests/test_benchmarks_smoke.py",
    "tests/test_kill_and_continue.py",
    "tests/test_packaging.py",
    "tests/test_reliability_crash.py",
    "tests/test_resume_crash.py",
    "tests/test_run_signals.py",
    "tests/test_terminal_pty.py",
)
#: Seconds one plant's run may take (a test alone gives up after 120).
PLANT_LIMIT = 1800
# pytest's short summary: "FAILED <node id>", then " - <message>" when there is one.
_FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$")
_KINDS = ("caught", "missed", "stale", "error")


def problem(plant: Plant, root: Path = PROJECT) -> str | None:
    """Why ``plant`` cannot be planted in the tree at ``root`` (``None``: it can)."""
    path = root / plant.file
    if not path.is_file():
        return f"{plant.file} is not there"
    count = path.read_text(encoding="utf-8").count(plant.old)
    if count != 1:
        where = "is not in" if count == 0 else f"is {count} times in"
        return f"the text to replace {where} {plant.file}"
    return None


def applied(plant: Plant, root: Path = PROJECT) -> str:
    """The text of ``plant``'s file at ``root`` with the plant in it."""
    return (root / plant.file).read_text(encoding="utf-8").replace(plant.old, plant.new, 1)


@attrs.frozen
class Verdict:
    """What became of one plant: ``kind`` is one of caught, missed, stale, error."""

    plant: Plant
    kind: str = attrs.field(validator=attrs.validators.in_(_KINDS))
    seconds: float = 0.0
    failed: tuple[str, ...] = ()
    detail: str = ""

    def lines(self, *, every: bool = False) -> list[str]:
        """The report's lines (``every``: each test that failed, one a line)."""
        took = f" ({self.seconds:.0f} s)" if self.seconds else ""
        head = f"{self.kind:<6} {self.plant.name}{took}"
        if self.kind == "caught" and every:
            return [f"{head}: {len(self.failed)} failed", *(f"    {t}" for t in self.failed)]
        if self.kind == "caught":
            return [f"{head}: {_some(self.failed)} failed"]
        if self.kind == "missed":
            return [f"{head}: every test passed with the bug in"]
        return [f"{head}: {self.detail}"]


def _some(tests: Sequence[str]) -> str:
    shown = ", ".join(tests[:2]) or "a test"
    return shown + (f" and {len(tests) - 2} more" if len(tests) > 2 else "")


def exit_status(verdicts: Iterable[Verdict]) -> int:
    """0 when every plant was caught, else 1 (one missed, stale or in error)."""
    return 0 if all(verdict.kind == "caught" for verdict in verdicts) else 1


# ------------------------------------------------------------------ copies


def _tree_files(root: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name]


def pristine_copy(root: Path, into: Path) -> Path:
    """Copy the tree at ``root`` (what git sees, edits included) to ``into/pristine``, compiled."""
    copy = into / "pristine"
    for name in _tree_files(root):
        source = root / name
        if not os.path.lexists(source):
            continue  # deleted in the working tree, its deletion not yet staged
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    # Compiled once here, so that each plant's copy compiles only its planted file.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "machines", "coordinator", "tests"],
        cwd=copy,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return copy


def planted_copy(pristine: Path, plant: Plant, into: Path) -> Path:
    """A fresh copy of ``pristine`` in ``into``, ``plant`` planted in it."""
    copy = into / plant.name
    shutil.copytree(pristine, copy, symlinks=True)
    target = copy / plant.file
    target.write_text(applied(plant, pristine), encoding="utf-8")
    # Its bytecode goes: the copy may keep the source's time, which would pass it as current.
    for cached in (target.parent / "__pycache__").glob(f"{target.stem}.*.pyc"):
        cached.unlink()
    return copy


# ------------------------------------------------------------------ running


def _environment(copy: Path) -> dict[str, str]:
    fixtures = os.environ.get(
        "INQUIRY_JP_FIXTURES", str(PROJECT.parent / "shared" / "fixtures" / "jp-conversations")
    )
    paths = [str(copy), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(paths),
        # The real conversations are beside the project, not beside the copy.
        "INQUIRY_JP_FIXTURES": str(Path(fixtures).resolve()),
    }


def _pytest(copy: Path, tests: Sequence[str], *, to_the_end: bool) -> tuple[int, list[str], str]:
    """Run ``tests`` in ``copy``: pytest's exit status, the tests that failed, its last lines."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"]
    if not to_the_end:
        command.append("-x")
    try:
        done = subprocess.run(
            [*command, *tests],
            cwd=copy,
            env=_environment(copy),
            capture_output=True,
            text=True,
            timeout=PLANT_LIMIT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, [], f"gave up after {PLANT_LIMIT} s"
    lines = done.stdout.splitlines()
    failed = [found.group(1) for line in lines if (found := _FAILED_LINE.match(line))]
    tail = " | ".join(line for line in [*lines, *done.stderr.splitlines()][-4:] if line.strip())
    return done.returncode, failed, tail


def judge(
    plant: Plant, pristine: Path, scratch: Path, tests: Sequence[str], *, to_the_end: bool = False
) -> Verdict:
    """Plant ``plant`` in a copy of ``pristine`` (made in ``scratch``), run ``tests``, judge."""
    why = problem(plant, pristine)
    if why is not None:
        return Verdict(plant, "stale", detail=f"no longer applies: {why}")
    copy = planted_copy(pristine, plant, scratch)
    started = time.monotonic()
    try:
        status, failed, tail = _pytest(copy, tests, to_the_end=to_the_end)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    seconds = time.monotonic() - started
    if status == 1:
        return Verdict(plant, "caught", seconds, tuple(failed))
    if status == 0:
        return Verdict(plant, "missed", seconds)
    return Verdict(plant, "error", seconds, detail=f"pytest exited {status}: {tail}")


def _suite_but_slow(named: Iterable[str]) -> list[str]:
    """Every test file but the slow ones, and the named tests that are in those."""
    files = sorted(
        path.relative_to(PROJECT).as_posix() for path in (PROJECT / "tests").glob("test_*.py")
    )
    slow = set(SLOW_FILES)
    return [name for name in files if name not in slow] + [
        test for test in named if test.split("::", 1)[0] in slow
    ]


# ------------------------------------------------------------------ the list


def docs_table(plants: Iterable[Plant] = PLANTS) -> str:
    """The list as ``docs/testing.md`` shows it, its markers included."""
    rows = [
        _BEGIN,
        "",
        "| plant | the bug (the file changed) | caught by |",
        "| --- | --- | --- |",
    ]
    rows += [
        f"| `{plant.name}` | {plant.bug} (`{plant.file}`) | "
        + ", ".join(f"`{test}`" for test in plant.tests)
        + " |"
        for plant in plants
    ]
    return "\n".join([*rows, "", _END])


def documented_table() -> str:
    """The table as ``docs/testing.md`` holds it now, its markers included."""
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(_BEGIN) : text.index(_END) + len(_END)]


def _write_docs() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(_BEGIN), text.index(_END) + len(_END)
    DOC.write_text(text[:start] + docs_table() + text[end:], encoding="utf-8")


# ------------------------------------------------------------------ main


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="planted_bugs.py",
        description="Plant each bug of tests/plants.py in a copy of the tree, run the tests "
        "that must catch it, and say which were caught.",
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="this plant (repeatable)"
    )
    parser.add_argument("--list", action="store_true", help="print the list's table, and stop")
    parser.add_argument(
        "--docs", action="store_true", help="rewrite docs/testing.md's table, and stop"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--full", action="store_true", help="run the suite but its slow files, listing failures"
    )
    which.add_argument(
        "--against", nargs="+", metavar="TEST", help="run these tests instead, listing failures"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run without any plant"
    )
    return parser.parse_args(argv)


def _selected(names: Sequence[str]) -> list[Plant]:
    if not names:
        return list(PLANTS)
    known = {plant.name: plant for plant in PLANTS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"planted_bugs.py: no plant is named {', '.join(unknown)} (see --list)")
    return [known[name] for name in names]


def _say(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)  # noqa: T201 - the command's report


def _check(
    plants: Sequence[Plant],
    tests_for: Callable[[Plant], list[str]],
    *,
    to_the_end: bool,
    baseline: bool,
) -> int:
    with tempfile.TemporaryDirectory(prefix="inquiry-planted-") as scratch:
        pristine = pristine_copy(PROJECT, Path(scratch))
        if baseline:
            union = list(dict.fromkeys(test for plant in plants for test in tests_for(plant)))
            _say(f"baseline: {len(union)} tests or files, nothing planted")
            status, failed, tail = _pytest(pristine, union, to_the_end=True)
            if status != 0:
                _say(f"baseline failed (pytest exited {status}): {_some(failed)}; {tail}")
                return 2
        verdicts = []
        for plant in plants:
            tests = tests_for(plant)
            verdict = judge(plant, pristine, Path(scratch), tests, to_the_end=to_the_end)
            _say(*verdict.lines(every=to_the_end))
            verdicts.append(verdict)
    _say(", ".join(f"{sum(v.kind == kind for v in verdicts)} {kind}" for kind in _KINDS))
    return exit_status(verdicts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check as the command line says; its exit status."""
    options = _arguments(argv)
    if options.list:
        _say(docs_table())
        return 0
    if options.docs:
        _write_docs()
        return 0

    def tests_for(plant: Plant) -> list[str]:
        if options.full:
            return _suite_but_slow(plant.tests)
        return list(options.against or plant.tests)

    return _check(
        _selected(options.only),
        tests_for,
        to_the_end=bool(options.full or options.against),
        baseline=not options.no_baseline,
    )


if __name__ == "__main__":
    sys.exit(main())
