# A program the kill-and-continue test runs as a local tool, not a module to import.
"""A local tool whose side effect must happen once: it refuses to repeat it under a key it has.

Arguments: ``before`` and ``after`` are how long it works (seconds) before
and after its side effect. It appends ``start <pid>`` to ``runs.log`` in
its working directory as it starts. The side effect is one line appended
to ``effects.log``: the call's idempotency key (``INQUIRY_IDEMPOTENCY_KEY``),
written under an exclusive lock only when no line holds that key already,
so that the effect and the note that it was done are one write, as a
payment service records a payment with its key.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path

arguments = json.loads(sys.stdin.read())["arguments"]
key = os.environ["INQUIRY_IDEMPOTENCY_KEY"]
with Path("runs.log").open("a", encoding="utf-8") as log:
    log.write(f"start {os.getpid()}\n")
time.sleep(float(arguments.get("before", 0)))
with Path("effects.log").open("a+", encoding="utf-8") as effects:
    fcntl.flock(effects, fcntl.LOCK_EX)
    effects.seek(0)
    if key not in effects.read().split():
        effects.write(f"{key}\n")
time.sleep(float(arguments.get("after", 0)))
sys.stdout.write(json.dumps({"type": "success", "content": "paid"}) + "\n")
