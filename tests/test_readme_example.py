"""The README's embedding example runs as printed and does what the README says."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
MARKER = "<!-- example: embedding -->"
SECRET = "correct-horse-battery"


def _example() -> str:
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    found = re.search(re.escape(MARKER) + r"\n```python\n(.*?)\n```", text, re.DOTALL)
    assert found is not None, f"README.md has no python block after {MARKER}"
    return found.group(1)


def test_the_embedding_example_runs_and_keeps_the_secret_out(tmp_path: Path) -> None:
    """The tool gets both answers; the export names both questions and redacts the token."""
    script = tmp_path / "example.py"
    script.write_text(_example(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"deployed to staging with a {len(SECRET)}-character token"
    assert "### Question (`call_1.target.1`)" in done.stdout
    assert "### Question (`call_1.token.1`)" in done.stdout
    assert "Answer: <redacted>" in done.stdout
    assert SECRET not in done.stdout
    assert SECRET not in done.stderr


def test_the_embedding_example_imports_only_the_two_faces() -> None:
    """The example takes every name of ours from `coordinator` or `machines`, nothing deeper."""
    tree = ast.parse(_example())
    ours = {"coordinator", "machines"}
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    plain = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert {m for m in modules | plain if m and m.split(".")[0] in ours} == ours
