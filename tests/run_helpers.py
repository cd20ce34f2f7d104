"""What the `inquiry run` tests share: the tour, scenarios written on the fly, the records."""

from __future__ import annotations

import io
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coordinator_harness import payloads

from coordinator import load_conversation, pair_events
from coordinator.cli._main import main
from machines import (
    Answered,
    Cancelled,
    InquiryRequest,
    Redacted,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest
    from fake_api import ProviderKit, Recorded, Reply

    from coordinator import Conversation

PROJECT = Path(__file__).resolve().parent.parent
TOUR = PROJECT / "examples" / "tour"
TOUR_SCENARIO = TOUR / "scenario.toml"
TOUR_ANSWERS = TOUR / "answers.toml"
TOOLS = TOUR / "tools"
#: The tour's deploy token (its fingerprint is in the scenario).
TOUR_SECRET = "tour-s3cret-token"


def cli(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the `inquiry` command in process: exit status, stdout, stderr."""
    capsys.readouterr()
    out = io.StringIO()
    status = main([str(arg) for arg in args], out=out)
    return status, out.getvalue(), capsys.readouterr().err


def write(path: Path, text: str) -> Path:
    """Write ``text`` (dedented) to ``path``; return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def tool_command(name: str) -> str:
    """A TOML array running one of the tour's tools by absolute path."""
    return f'["python3", "{TOOLS / name}.py"]'


#: The fingerprint of the tour's token, which its deploy tool checks.
TOKEN_SHA256 = "4e11b4aa74cac3be99bd491a76356c7a56e3847bcf4275ee1e416a99c108a3e2"

#: The tour's tools, defined for scenarios written by the tests.
TOUR_TOOLS = f"""
    [tools.fs_modify_file]
    command = {tool_command("fs_modify_file")}

    [tools.release]
    command = {tool_command("release")}

    [tools.deploy]
    command = {tool_command("deploy")}
    options = {{ token_sha256 = "{TOKEN_SHA256}" }}
"""


def modify(pattern: str, replacement: str) -> str:
    """An fs_modify_file call on the seeded notes."""
    arguments = f'{{ path = "notes.txt", pattern = "{pattern}", replacement = "{replacement}" }}'
    return f'{{ tool = "fs_modify_file", arguments = {arguments} }}'


def tour_scenario(tmp_path: Path, calls: str, *, run: str = "unattended", extra: str = "") -> Path:
    """One turn of one cycle of ``calls`` to the tour's tools (each of run mode ``run``).

    ``extra`` is TOML put in the scenario's ``[defaults]`` table, after ``run``.
    """
    seeded(tmp_path)
    return write(
        tmp_path / "scenario.toml",
        f"""
        [workspace]
        seed = "seed"
        [defaults]
        run = "{run}"
        {extra}
        {TOUR_TOOLS}
        [[turns]]
        message = "Go."
        [[turns.cycles]]
        calls = [{calls}]
        """,
    )


def seeded(path: Path) -> Path:
    """A workspace seed beside a scenario: the tour's notes, version and changelog."""
    seed = path / "seed"
    for name in ("notes.txt", "VERSION", "CHANGELOG.md"):
        target = seed / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((TOUR / "workspace" / name).read_bytes())
    return seed


def local_tools(
    tmp_path: Path,
    tools: dict[str, str],
    calls: str,
    *,
    runs: dict[str, str] | None = None,
    extra: str = "",
) -> Path:
    """A one-turn, one-cycle scenario of local tools given by their Python source.

    Each runs unattended, unless ``runs`` gives it another run mode; ``extra``
    is TOML added after the tools (their questions' configuration, say).
    """
    defined = []
    for name, source in tools.items():
        program = write(tmp_path / f"{name}.py", source)
        mode = (runs or {}).get(name, "unattended")
        defined.append(
            f'[tools.{name}]\ncommand = ["{sys.executable}", "{program}"]\nrun = "{mode}"\n'
        )
    turn = f'\n[[turns]]\nmessage = "Go."\n[[turns.cycles]]\ncalls = [{calls}]\n'
    return write(tmp_path / "scenario.toml", "".join(defined) + extra + turn)


#: A local tool asking ``proceed`` again at every run, whatever it was told:
#: the bug a limit on attempts is for.
LOOPING = """
import json, sys
json.load(sys.stdin)
question = {"id": "proceed", "text": "Proceed?", "answer_type": {"type": "boolean"}}
print(json.dumps({"type": "needs_input", "question": question}))
"""


def every_byte(directory: Path) -> bytes:
    """Every file under ``directory``, concatenated."""
    return b"".join(path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file())


def outcomes(conversation: Conversation) -> dict[str, Any]:
    """Each inquiry's question id (`tool.question`) and its response, by inquiry id."""
    requests = {r.id: r for r in payloads(conversation, InquiryRequest)}
    return {
        inquiry_id: response
        for inquiry_id in requests
        for response in payloads(conversation, (Answered, Cancelled, Redacted))
        if response.id == inquiry_id
    }


def responses(conversation: Conversation) -> dict[str, ToolCallResponse]:
    """Each tool call's response, by tool call id."""
    return {r.id: r for r in payloads(conversation, ToolCallResponse)}


def calls(conversation: Conversation) -> dict[str, ToolCallRequest]:
    """Each tool call request, by id."""
    return {r.id: r for r in payloads(conversation, ToolCallRequest)}


def answering(kit: ProviderKit) -> Callable[[Recorded], Reply]:
    """A fake model that answers every inquiry it is asked `true`, by its id."""

    def respond(request: Recorded) -> Reply:
        inquiry_id = re.findall(r"inquiry_id `([^`]+)`", request.text())[-1]
        arguments = {"inquiry_id": inquiry_id, "answer": "true"}
        return kit.tool_call("call_answer", "answer_inquiry", arguments)

    return respond


def assert_paired(directory: Path) -> Conversation:
    """The saved conversation loads and every request in it has its response."""
    conversation = load_conversation(directory)
    pairing = pair_events(conversation.stream)
    assert pairing.inquiries.pending == ()
    assert pairing.inquiries.orphaned == ()
    assert pairing.tool_calls.pending == ()
    assert pairing.tool_calls.orphaned == ()
    return conversation


__all__ = [
    "LOOPING",
    "PROJECT",
    "TOKEN_SHA256",
    "TOOLS",
    "TOUR",
    "TOUR_ANSWERS",
    "TOUR_SCENARIO",
    "TOUR_SECRET",
    "TOUR_TOOLS",
    "answering",
    "assert_paired",
    "calls",
    "cli",
    "every_byte",
    "local_tools",
    "outcomes",
    "payloads",
    "responses",
    "seeded",
    "tool_command",
    "write",
]
