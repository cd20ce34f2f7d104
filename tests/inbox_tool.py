"""A local tool for the inbox tests: asks the question its arguments give, then notes its run.

Arguments: ``question`` (the question, in the local-tool protocol's form)
and ``note`` (a file of the workspace). Asked nothing (no ``question``), or
once its question is answered, it appends one line to ``note`` (what it
was given, a secret's length only) and succeeds: so a test can tell how
often it ran to its end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

request = json.load(sys.stdin)
arguments, answers = request["arguments"], request["answers"]
question = arguments.get("question")
if question is not None and question["id"] not in answers:
    sys.stdout.write(json.dumps({"type": "needs_input", "question": question}) + "\n")
    raise SystemExit(0)
given = answers.get(question["id"]) if question is not None else None
secret = question is not None and question["answer_type"]["type"] == "secret"
shown = f"{len(given)} characters" if secret and isinstance(given, str) else json.dumps(given)
with Path(arguments["note"]).open("a", encoding="utf-8") as note:
    note.write(f"{shown}\n")
sys.stdout.write(json.dumps({"type": "success", "content": f"given {shown}"}) + "\n")
