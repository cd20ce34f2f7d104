# Scripts the tour runs as commands, not a package to import.
# ruff: noqa: INP001
"""fs_modify_file: replace text in a workspace file, once the person has seen the diff.

Arguments: ``path`` (relative to the workspace), ``pattern`` (the exact text to
replace, every occurrence) and ``replacement``. Asks ``apply_changes``
(boolean, default yes) with the unified diff as the question's context, then
writes the file, or leaves it alone when the answer is no.
"""

from __future__ import annotations

import difflib

from protocol import ask, fail, read_request, succeed, workspace_path

request = read_request()
arguments, answers = request["arguments"], request["answers"]
name, pattern, replacement = arguments["path"], arguments["pattern"], arguments["replacement"]
path = workspace_path(name)
if not path.is_file():
    fail(f"{name} does not exist in the workspace")
before = path.read_text(encoding="utf-8")
count = before.count(pattern)
if not pattern or count == 0:
    fail(f"{name} does not contain {pattern!r}")
after = before.replace(pattern, replacement)
diff = "".join(
    difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
)

if "apply_changes" not in answers:
    ask(
        "apply_changes",
        f"Apply this change to {name}?",
        {"type": "boolean"},
        default=True,
        context=diff,
    )
if answers["apply_changes"] is not True:
    succeed(f"The change to {name} was not applied: the user declined it.")
path.write_text(after, encoding="utf-8")
succeed(f"Replaced {count} occurrence{'s' if count > 1 else ''} of {pattern!r} in {name}.")
