"""`inquiry run` keeps the backend's API key from its tools, even through /proc.

A tool can read its parent's first environment block from
`/proc/<parent pid>/environ`, whatever the parent's `os.environ` says now:
the run reads the key into memory and wipes it there before any tool runs,
and the provider still gets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from fake_api import KEY, PROVIDER_KITS, FakeAPI
from process_helpers import PATIENCE
from run_helpers import answering, assert_paired, every_byte, responses, write

if TYPE_CHECKING:
    from pathlib import Path

#: A tool that asks the model whether to go on, then prints what it can read
#: of its parent's environment through /proc.
PEEK = """
    import json, os, sys
    request = json.load(sys.stdin)
    if "go" not in request["answers"]:
        question = {"id": "go", "text": "Peek?", "answer_type": {"type": "boolean"}}
        print(json.dumps({"type": "needs_input", "question": question}))
        sys.exit(0)
    with open(f"/proc/{os.getppid()}/environ", "rb") as environ:
        names = environ.read().split(b"\\0")
    seen = sorted(entry.decode(errors="replace") for entry in names if b"KEY" in entry)
    print(json.dumps({"type": "success", "content": json.dumps(seen)}))
"""


def test_a_tool_cannot_read_the_api_key_from_its_parent(tmp_path: Path) -> None:
    """The key is not in /proc/<parent>/environ nor in the tool's output, and the API got it."""
    kit = PROVIDER_KITS[0]  # the key is handled before either provider's SDK sees it
    peek = write(tmp_path / "peek.py", PEEK)
    conversation = tmp_path / "conversation"
    environment = {**os.environ, "ANTHROPIC_API_KEY": KEY, "PLAIN_KEY": "kept"}
    with FakeAPI(answering(kit)) as api:
        scenario = write(
            tmp_path / "scenario.toml",
            f"""
            [defaults]
            run = "unattended"
            [tools.peek]
            command = ["{sys.executable}", "{peek}"]
            [tools.peek.questions.go]
            target = "assistant"
            [backend]
            provider = "{kit.name}"
            model = "m"
            base_url = "{api.base_url}{kit.url_suffix}"
            [[turns]]
            message = "Peek."
            [[turns.cycles]]
            calls = [{{ tool = "peek" }}]
            """,
        )
        done = subprocess.run(
            [sys.executable, "-m", "coordinator", "run", scenario, "--no-tty", "-c", conversation],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
            timeout=PATIENCE,
        )
    assert done.returncode == 0, done.stderr
    (request,) = api.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"  # the provider still got it
    seen = responses(assert_paired(conversation))["call_1_1_1"].content
    assert "PLAIN_KEY=kept" in seen  # the tool did read its parent's environment
    assert KEY not in seen
    assert KEY not in done.stdout + done.stderr
    assert KEY.encode() not in every_byte(conversation)
    assert "tools run without ANTHROPIC_API_KEY in their environment" in done.stdout
