# Scripts the tour runs as commands, not a package to import.
# ruff: noqa: INP001
"""lint: find trailing whitespace in the workspace's text files, and fix it if told to.

Asks ``scope`` (select: which files to look at) and, when it finds anything,
``fix`` (boolean: strip the trailing whitespace?). In the tour, ``scope`` has a
static answer in the scenario's configuration and ``fix`` is put to the model.
"""

from __future__ import annotations

from pathlib import Path

from protocol import ask, read_request, succeed

SCOPES = [
    {"value": "notes", "description": "notes.txt only"},
    {"value": "all", "description": "every .txt and .md file"},
]

answers = read_request()["answers"]
if "scope" not in answers:
    ask("scope", "Which files should be checked?", {"type": "select", "options": SCOPES})
root = Path.cwd()
files = (
    [root / "notes.txt"]
    if answers["scope"] == "notes"
    else sorted([*root.glob("*.txt"), *root.glob("*.md")])
)
findings = []
for path in files:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line != line.rstrip():
            findings.append(f"{path.name}:{number}")
if not findings:
    succeed(f"No trailing whitespace in {len(files)} file(s).")
if "fix" not in answers:
    ask(
        "fix",
        f"Strip the trailing whitespace on {len(findings)} line(s) ({', '.join(findings)})?",
        {"type": "boolean"},
    )
if answers["fix"] is not True:
    succeed(
        f"Trailing whitespace on {len(findings)} line(s), left as it is: {', '.join(findings)}."
    )
for path in files:
    text = path.read_text(encoding="utf-8")
    fixed = "\n".join(line.rstrip() for line in text.split("\n"))
    if fixed != text:
        path.write_text(fixed, encoding="utf-8")
succeed(f"Stripped trailing whitespace on {len(findings)} line(s): {', '.join(findings)}.")
