#!/usr/bin/env python3
"""A local tool in Python: publish a file of the workspace, asking where, what, and a token.

It shows every question type but the boolean (clean.sh has that one) and
both outcomes: it asks one question per run, and is run again with each
answer added to the request's "answers", until it has all three.
"""

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, NoReturn


def reply(outcome: dict[str, Any]) -> NoReturn:
    """Print the one outcome of this run on stdout, and stop."""
    sys.stdout.write(json.dumps(outcome) + "\n")
    sys.exit(0)


def ask(question: dict[str, Any]) -> NoReturn:
    """Ask ``question``: this run ends, and the next has its answer."""
    reply({"type": "needs_input", "question": question})


request = json.load(sys.stdin)  # {"name", "arguments", "answers", "options"}
arguments, answers = request["arguments"], request["answers"]

# Check what it can before asking anything: a question is a round trip.
path = Path(arguments.get("file", ""))
if not path.is_file():
    reply({"type": "error", "message": f"no file {str(path)!r} in the workspace"})

if "channel" not in answers:
    ask(
        {
            "id": "channel",
            "text": f"Publish {path} where?",
            "answer_type": {
                "type": "select",
                "options": [
                    {"value": "beta", "description": "testers only"},
                    {"value": "stable", "description": "everyone"},
                ],
            },
            "default": "beta",
        }
    )
if "summary" not in answers:
    ask(
        {
            "id": "summary",
            "text": "A one-line summary?",
            "pre_amble": path.read_text(encoding="utf-8")[:200],
            "answer_type": {"type": "text"},
            "default": "Small fixes",
        }
    )
if "token" not in answers:
    # A secret: the answer reaches this tool only, on stdin; it is never recorded.
    ask({"id": "token", "text": "The publishing token?", "answer_type": {"type": "secret"}})

token = answers["token"]
fingerprint = hashlib.sha256(token.encode()).hexdigest()[:12]
reply(
    {
        "type": "success",
        # Never print a secret: the run masks it, but the tool should not rely on that.
        "content": f"Published {path} to {answers['channel']} ({answers['summary']!r}), "
        f"signed with a token whose SHA-256 starts {fingerprint}.",
    }
)
