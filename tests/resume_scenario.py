"""What the resume tests share: a two-turn scenario whose tools count their runs.

The tool (``resume_tool.py``) appends ``start <tag>`` to ``runs.log`` in the
workspace each time it starts, so a test can tell whether a finished call ran
again. The scenario's first turn runs two tools at once (one slow), one that
asks the person a boolean and then a secret, and one that asks the model;
its second turn runs one more tool.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from run_helpers import write

__all__ = [
    "ASKS",
    "A_WORKS",
    "CALLS",
    "MODEL",
    "PERSON",
    "SECRET",
    "TAGS",
    "TOOL",
    "resume_files",
    "run_argv",
    "runs",
    "scenario",
]

HERE = Path(__file__).resolve().parent
TOOL = HERE / "resume_tool.py"
SECRET = "pin-secret-4711"

#: What the third call asks: a boolean, then a secret.
ASKS = '[["go", "boolean"], ["pin", "secret"]]'
#: How long the first call's tool (tag ``a``) works, in seconds, unless told.
A_WORKS = 0.15


def scenario(a_works: float = A_WORKS) -> str:
    """The scenario, the first call's tool working ``a_works`` seconds.

    Two turns: two tools at once (``a`` the slow one), one asking the person
    (a boolean, then a secret), one asking the model; then a turn of one more
    tool.
    """
    return f"""
[defaults]
run = "unattended"

[tools.work]
command = ["{sys.executable}", "{TOOL}"]

[tools.work.questions.fix]
target = "assistant"

[[turns]]
message = "one"
reply = "done one"

[[turns.cycles]]
message = "Two at once."
calls = [
    {{ tool = "work", arguments = {{ tag = "a", sleep = {a_works} }} }},
    {{ tool = "work", arguments = {{ tag = "b" }} }},
]

[[turns.cycles]]
calls = [{{ tool = "work", arguments = {{ tag = "c", asks = {ASKS} }} }}]

[[turns.cycles]]
calls = [{{ tool = "work", arguments = {{ tag = "d", asks = [["fix", "boolean"]] }} }}]

[[turns]]
message = "two"
reply = "done two"

[[turns.cycles]]
calls = [{{ tool = "work", arguments = {{ tag = "e", sleep = 0.05 }} }}]
"""


PERSON = f"""
[[answers]]
question = "go"
value = true

[[answers]]
question = "pin"
value = "{SECRET}"
"""

MODEL = """
[[model]]
question = "fix"
value = true
"""

TAGS = ("a", "b", "c", "d", "e")
#: The scenario's tool calls, by id.
CALLS = ("call_1_1_1", "call_1_1_2", "call_1_2_1", "call_1_3_1", "call_2_1_1")


def resume_files(root: Path, *, model: str = MODEL, a_works: float = A_WORKS) -> tuple[Path, Path]:
    """Write the scenario and its answers (the person; the model unless told) under ``root``."""
    return (
        write(root / "scenario.toml", scenario(a_works)),
        write(root / "answers.toml", PERSON + model),
    )


def runs(conversation: Path) -> Counter[str]:
    """How many times each tag's tool started in the conversation's workspace."""
    log = conversation / "workspace" / "runs.log"
    text = log.read_text() if log.exists() else ""
    return Counter(line.split()[1] for line in text.splitlines() if line.startswith("start "))


def run_argv(scenario: Path, answers: Path, directory: Path, *extra: str) -> list[str]:
    """``inquiry run`` of ``scenario`` into ``directory``, its answers file playing the person."""
    return [
        "run",
        str(scenario),
        "--answers",
        str(answers),
        "--conversation",
        str(directory),
        *extra,
    ]
