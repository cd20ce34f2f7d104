# A program the resume tests run as a local tool, not a module to import.
"""A local tool for the resume tests: it counts its runs in the workspace, may sleep, may ask.

Arguments: ``tag`` names the call in ``runs.log`` (in the workspace, its
working directory), where each run appends ``start <tag> <pid>`` as it
starts; ``sleep`` is how long it works before it answers (not at all when
``RESUME_TOOL_NO_SLEEP`` is set in its environment); ``hold`` makes it hold
an exclusive lock on ``<tag>.running`` while it works, and append
``overlap <tag>`` to ``runs.log`` when another run of it holds the lock
already; ``asks`` lists the questions it asks, in order, as ``[id, answer
type]``: it asks the first one not yet answered, and succeeds once all are.
A secret it is given is never written anywhere.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path

request = json.loads(sys.stdin.read())
arguments, answers = request["arguments"], request["answers"]
tag = arguments["tag"]
with Path("runs.log").open("a", encoding="utf-8") as log:
    log.write(f"start {tag} {os.getpid()}\n")
if arguments.get("hold"):
    held = Path(f"{tag}.running").open("w")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        with Path("runs.log").open("a", encoding="utf-8") as log:
            log.write(f"overlap {tag}\n")
if not os.environ.get("RESUME_TOOL_NO_SLEEP"):
    time.sleep(float(arguments.get("sleep", 0)))
for question_id, kind in arguments.get("asks", []):
    if question_id not in answers:
        question = {
            "id": question_id,
            "text": f"{tag}: {question_id}?",
            "answer_type": {"type": kind},
        }
        sys.stdout.write(json.dumps({"type": "needs_input", "question": question}) + "\n")
        raise SystemExit(0)
sys.stdout.write(json.dumps({"type": "success", "content": f"done {tag}"}) + "\n")
