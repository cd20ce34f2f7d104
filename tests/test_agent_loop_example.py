"""examples/agent-loop: the loop runs against the local stand-in API, for both providers."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from coordinator_harness import assert_invariants, payloads
from run_helpers import PROJECT

from coordinator import load_conversation
from machines import Answered, ChatResponse, InquiryRequest, ToolCallRequest, ToolCallResponse

if TYPE_CHECKING:
    from pathlib import Path

AGENT = PROJECT / "examples" / "agent-loop" / "agent.py"


@pytest.mark.parametrize(
    ("provider", "answer"), [("anthropic", "staging"), ("openai", "production")]
)
def test_the_agent_loop_runs_a_tool_that_asks_and_the_model_reads_its_result(
    tmp_path: Path, provider: str, answer: str
) -> None:
    """The model calls deploy: its question answered, its result sent back; the model says so."""
    directory = tmp_path / "conversation"
    done = subprocess.run(
        [
            sys.executable,
            str(AGENT),
            "--provider",
            provider,
            "--answer",
            answer,
            "--conversation",
            str(directory),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"Done: deployed api to {answer}.",
        f"conversation: {directory}",
    ]
    conversation = load_conversation(directory)
    (call,) = payloads(conversation, ToolCallRequest)
    assert (call.name, dict(call.arguments)) == ("deploy", {"service": "api"})
    (asked,) = payloads(conversation, InquiryRequest)
    assert asked.question.text == "Deploy api where?"
    assert payloads(conversation, Answered) == [Answered(id=asked.id, answer=answer)]
    (result,) = payloads(conversation, ToolCallResponse)
    assert (result.id, result.content) == (call.id, f"deployed api to {answer}")
    said = [p.content for p in payloads(conversation, ChatResponse)]
    assert said[-1] == f"Done: deployed api to {answer}."
    assert_invariants(conversation)
