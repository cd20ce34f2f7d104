# A script to run, not a package to import.
# ruff: noqa: INP001
"""A real agent loop: the model calls a tool, the tool asks a question, the answer goes back.

Run it from the repository's root (the README beside this file says more)::

    .venv/bin/python examples/agent-loop/agent.py --provider anthropic --answer staging

The loop speaks to the model through the provider's official SDK
(``anthropic`` or ``openai``). With no ``--base-url`` it starts the local
stand-in for the provider's API the tests use (``tests/fake_api.py``),
scripted as a model that calls ``deploy`` and then reports what the tool
said; ``--base-url`` (and the provider's API key in its usual variable)
points it anywhere else.

Each turn of the loop: send the messages, read the reply's tool calls
(``anthropic_tool_calls`` / ``openai_tool_calls``), record them, let the
coordinator run them (the tool's question goes to the person: the terminal,
or ``--answer``), send the results back (``anthropic_tool_results`` /
``openai_tool_results``), and stop when the reply calls no tool.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coordinator import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    Conversation,
    Prompter,
    ScriptedPrompter,
    Success,
    TerminalPrompter,
    ToolCoordinator,
    anthropic_tool_calls,
    anthropic_tool_results,
    openai_tool_calls,
    openai_tool_results,
    parse_tools_config,
    save_conversation,
)
from machines import ChatRequest, ChatResponse, JsonValue, Question, ToolCallRequest, TurnStart

if TYPE_CHECKING:
    from collections.abc import Mapping

TESTS = Path(__file__).resolve().parents[2] / "tests"
PROMPT = "Deploy the api service, please."
DEPLOY_TOOL = {
    "name": "deploy",
    "description": "Deploy a service; it asks the person where.",
    "parameters": {
        "type": "object",
        "properties": {"service": {"type": "string"}},
        "required": ["service"],
    },
}


class Deploy(BuiltinTool):
    """Asks where to deploy the service, then deploys it there."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask for the target the first time; deploy once it is answered."""
        if "target" not in answers:
            return Ask(
                Question.select(
                    "target", f"Deploy {arguments['service']} where?", ["staging", "production"]
                )
            )
        return Success(f"deployed {arguments['service']} to {answers['target']}")


# ------------------------------------------------------------- the model's side


def fake_model(provider: str) -> Any:
    """The stand-in API, scripted as a model: call ``deploy``, then say what it returned."""
    sys.path.insert(0, str(TESTS))
    import fake_api  # noqa: PLC0415 - the tests' stand-in, found beside them

    def respond(request: Any) -> Any:
        messages = request.json()["messages"]
        last = messages[-1]
        if provider == "anthropic":
            content = last["content"]
            results = [b for b in content if isinstance(b, dict) and b["type"] == "tool_result"]
            if not results:
                return fake_api.anthropic_tool_use("toolu_1", "deploy", {"service": "api"})
            return fake_api.anthropic_text(f"Done: {results[0]['content']}.")
        if last["role"] != "tool":
            return fake_api.openai_tool_call("call_1", "deploy", {"service": "api"})
        return fake_api.openai_text(f"Done: {last['content']}.")

    return fake_api.FakeAPI(respond)


async def ask_anthropic(client: Any, messages: list[dict[str, Any]]) -> tuple[str, Any]:
    """One reply of the Messages API: its text, and what to append to the messages."""
    reply = await client.messages.create(
        model=os.environ.get("AGENT_MODEL", "claude-sonnet-5"),
        max_tokens=1024,
        messages=messages,
        tools=[
            {
                "name": DEPLOY_TOOL["name"],
                "description": DEPLOY_TOOL["description"],
                "input_schema": DEPLOY_TOOL["parameters"],
            }
        ],
    )
    text = "".join(block.text for block in reply.content if block.type == "text")
    return text, reply


async def ask_openai(client: Any, messages: list[dict[str, Any]]) -> tuple[str, Any]:
    """One reply of Chat Completions: its text, and the reply."""
    reply = await client.chat.completions.create(
        model=os.environ.get("AGENT_MODEL", "gpt-4.1"),
        messages=messages,
        tools=[{"type": "function", "function": DEPLOY_TOOL}],
    )
    return reply.choices[0].message.content or "", reply


# --------------------------------------------------------------------- the loop


async def agent_loop(provider: str, base_url: str, prompter: Prompter, directory: Path) -> str:
    """Run one turn to its end; the model's last words."""
    conversation = Conversation.new()
    save_conversation(conversation, directory)  # saved as it goes from now on
    stream = conversation.stream
    stream.append(TurnStart())
    stream.append(ChatRequest(content=PROMPT))
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": BuiltinExecutor(Deploy())},
        # deploy runs without asking leave: its own question is the person's part.
        config=parse_tools_config({"tools": {"deploy": {"run": "unattended"}}}),
        prompter=prompter,
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    if provider == "anthropic":
        import anthropic  # noqa: PLC0415 - the `anthropic` extra

        client: Any = anthropic.AsyncAnthropic(base_url=base_url)
    else:
        import openai  # noqa: PLC0415 - the `openai` extra

        client = openai.AsyncOpenAI(base_url=base_url)
    async with client:
        while True:
            if provider == "anthropic":
                text, reply = await ask_anthropic(client, messages)
                calls: list[ToolCallRequest] = anthropic_tool_calls(reply)
            else:
                text, reply = await ask_openai(client, messages)
                calls = openai_tool_calls(reply)
            if text:
                stream.append(ChatResponse.message(text))
            if not calls:
                save_conversation(conversation)  # the model's last words, kept too
                return text
            for call in calls:
                stream.append(call)  # a call is in the stream before it runs
            responses = await coordinator.run(calls)
            if provider == "anthropic":
                messages.append({"role": "assistant", "content": reply.content})
                messages.append(anthropic_tool_results(responses))
            else:
                messages.append(reply.choices[0].message.model_dump(exclude_none=True))
                messages.extend(openai_tool_results(responses))


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the loop, print the model's last words."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--provider", choices=("anthropic", "openai"), default="anthropic")
    parser.add_argument("--base-url", help="the provider's API (default: the local stand-in)")
    parser.add_argument("--answer", help="answer the tool's question so, without a terminal")
    parser.add_argument("--conversation", type=Path, help="where the conversation is saved")
    options = parser.parse_args(argv)
    directory = options.conversation or Path(tempfile.mkdtemp()) / "conversation"
    prompter: Prompter
    if options.answer is not None:
        prompter = ScriptedPrompter().answer(options.answer)
    else:
        prompter = TerminalPrompter()
    with ExitStack() as stack:
        base_url = options.base_url
        if base_url is None:
            fake = stack.enter_context(fake_model(options.provider))
            suffix = "/v1" if options.provider == "openai" else ""
            base_url = fake.base_url + suffix
            # The SDKs insist on a key; the stand-in takes any.
            os.environ.setdefault(f"{options.provider.upper()}_API_KEY", "example-key")
        said = asyncio.run(agent_loop(options.provider, base_url, prompter, directory))
    print(said)  # noqa: T201 - what the script is run for
    print(f"conversation: {directory}")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
