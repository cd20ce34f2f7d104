"""docs/local-tools.md: every command of its `console` blocks prints what the page shows.

The page's examples are run exactly as written (each `$ ` line through
bash, from a copy of the repository's `examples/local-tools/` at the same
relative path, with this environment's `inquiry` first on PATH), so a
newcomer who copies them sees what the page promises.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import PATIENCE
from run_helpers import PROJECT

PAGE = PROJECT / "docs" / "local-tools.md"
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    """Each documented command, with the output the page shows for it."""
    found: list[tuple[str, str]] = []
    for block in _BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            found.append((command, output))
    return found


EXAMPLES = _examples()


def test_the_page_has_examples_of_both_tools_and_of_a_run() -> None:
    """The page shows the shell tool, the Python tool and `inquiry run` at work."""
    commands = " ".join(command for command, _ in EXAMPLES)
    for shown in ("sh examples/local-tools/tools/clean.sh", "publish.py", "inquiry run"):
        assert shown in commands


@pytest.mark.parametrize(("command", "output"), EXAMPLES, ids=[c[:60] for c, _ in EXAMPLES])
def test_a_documented_command_prints_what_the_page_shows(
    tmp_path: Path, command: str, output: str
) -> None:
    """The command, run as written from the top directory, prints exactly the shown output."""
    shutil.copytree(PROJECT / "examples" / "local-tools", tmp_path / "examples" / "local-tools")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        check=False,
        timeout=PATIENCE,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == output
