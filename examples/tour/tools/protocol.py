# Scripts the tour runs as commands, not a package to import.
# ruff: noqa: INP001
"""The local-tool protocol, for the tour's tools: read the request, print one outcome.

The engine writes the request to the tool's stdin as JSON::

    {"name": ..., "arguments": {...}, "answers": {"question_id": answer, ...}, "options": {...}}

and the tool prints exactly one JSON outcome on stdout: a success, an error,
or a question (``needs_input``). To answer a question the engine runs the tool
again with the answer added to ``answers``, so a tool does nothing it cannot
do again until every question it needs is answered.

The tools run with the workspace (inside the conversation directory) as their
working directory; :func:`workspace_path` keeps a path inside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn


def read_request() -> dict[str, Any]:
    """The request, from stdin (never from the command line, where others can read it)."""
    request = json.load(sys.stdin)
    if not isinstance(request, dict):
        fail("the request is not a JSON object")
    return request


def _print(outcome: dict[str, Any]) -> NoReturn:
    sys.stdout.write(json.dumps(outcome) + "\n")
    raise SystemExit(0)


def succeed(content: str) -> NoReturn:
    """Finish: ``content`` is what the model is told."""
    _print({"type": "success", "content": content})


def fail(message: str) -> NoReturn:
    """Fail: ``message`` is what the model is told."""
    _print({"type": "error", "message": message, "transient": False})


def ask(
    question_id: str,
    text: str,
    answer_type: dict[str, Any],
    *,
    default: Any = None,
    context: str | None = None,
) -> NoReturn:
    """Stop and ask: the engine runs the tool again with the answer under ``question_id``."""
    question = {
        "id": question_id,
        "text": text,
        "pre_amble": context,
        "answer_type": answer_type,
        "default": default,
    }
    _print({"type": "needs_input", "question": question})


def workspace_path(relative: str) -> Path:
    """``relative`` inside the workspace (the working directory); refuse a way out."""
    root = Path.cwd().resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        fail(f"{relative!r} is outside the workspace")
    return path
