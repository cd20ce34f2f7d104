"""Secrets never leak (DESIGN.md rule 2), over the random runs of the coordinator model.

Every secret answer in :class:`reliability_model.CoordinatorModel` is a
distinctive string (typed at a secret prompt, garbage typed there, or
configured as a static answer, fitting or not). After every step its bytes
must appear nowhere: not in any file of the conversation directory, not in a
log line at any level, not in an exception message, not in the ``repr`` or
``str`` of anything the library returned or handed out, not in the Markdown
export.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from conftest import examples, steps
from coordinator_harness import (
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    run,
)
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant
from reliability_model import CoordinatorModel

from coordinator import (
    ScriptedPrompter,
    ToolCoordinator,
    export_markdown,
    pair_events,
    parse_tools_config,
    save_conversation,
)
from machines import Question

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from coordinator.driver import PermissionAnswer
    from machines import ShowPermissionPrompt, ToolCallRequest, ToolCallResponse


class SecretsModel(CoordinatorModel):
    """The coordinator model, looking for secret bytes everywhere the library writes."""

    def leaks(self, text: str, where: str) -> None:
        """Fail if any secret appears in ``text``."""
        for secret in self.world.secrets:
            assert secret not in text, f"secret {secret!r} leaked into {where}"

    def check_batch(
        self, requests: list[ToolCallRequest], responses: list[ToolCallResponse] | None
    ) -> None:
        """What a batch returned holds no secret, in repr or str."""
        self.leaks(repr(responses), "the responses' repr")
        self.leaks(str(responses), "the responses' str")
        self.leaks(repr(requests), "the requests' repr")

    @invariant()
    def no_secret_on_disk(self) -> None:
        """No file of the conversation directory (temp files included) holds a secret."""
        for path in sorted(self.directory.rglob("*")):
            if path.is_file():
                self.leaks(path.read_text(errors="replace"), str(path))

    @invariant()
    def no_secret_in_logs_or_errors(self) -> None:
        """No log record at any level, and no exception raised, mentions a secret."""
        self.leaks("\n".join(self.logs.lines), "the logs")
        for error in self.errors:
            self.leaks(f"{error!s} {error!r}", "an exception")

    @invariant()
    def no_secret_in_what_the_library_returns(self) -> None:
        """Reprs of the stream, entries, turn state, pairing, prompts, tasks and a save."""
        stream = self.conversation.stream
        self.leaks(repr(self.conversation), "the conversation's repr")
        self.leaks(repr(stream), "the stream's repr")
        for entry in stream:
            self.leaks(f"{entry!r} {entry!s}", "an entry's repr")
        self.leaks(repr(pair_events(stream)), "the pairing's repr")
        self.leaks(repr(stream.provider_view()), "the provider view's repr")
        self.leaks(repr(self.config), "the configuration's repr")
        if self.coordinator is not None:
            self.leaks(repr(self.coordinator.turn_state), "the turn state's repr")
            self.leaks(repr(vars(self.coordinator)), "the coordinator's attributes")
        for thing in self.world.handed_out:
            self.leaks(f"{thing!r} {thing!s}", f"a {type(thing).__name__} handed out")
        self.leaks(repr(save_conversation(self.conversation)), "a SaveResult")

    @invariant()
    def no_secret_in_the_export(self) -> None:
        """The Markdown export shows secret answers as redacted."""
        self.leaks(export_markdown(self.conversation.stream, title="t"), "the export")


TestSecretsNeverLeak = SecretsModel.TestCase
TestSecretsNeverLeak.settings = settings(
    max_examples=examples(150),
    stateful_step_count=steps(10),
    suppress_health_check=[HealthCheck.too_slow],
)


# ---------------------------------------------------- what the model found, pinned down


def test_a_failing_permission_prompt_does_not_log_a_secret_it_quotes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A permission prompter failing with a secret of the turn in its message: logged masked."""
    caplog.set_level(logging.DEBUG)
    conversation = conversation_on_disk(tmp_path)
    secret = "sEcReT-permission-Qz7Xw"

    class Quoting(ScriptedPrompter):
        async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
            del prompt
            raise RuntimeError(f"could not draw the prompt; last input was {secret}")

    config = parse_tools_config({"tools": {"ssh": {"run": "unattended"}, "fs": {"run": "ask"}}})
    coordinator = ToolCoordinator(
        conversation,
        tools={
            "ssh": executor(AskingTool([Question.secret("token", "Token?")])),
            "fs": executor(AskingTool([])),
        },
        config=config,
        prompter=Quoting().answer(secret),
    )
    run(coordinator.run(assistant_calls(conversation, ("call_1", "ssh"))))
    run(coordinator.run(assistant_calls(conversation, ("call_2", "fs"))))
    assert "permission prompt for fs failed" in caplog.text
    assert secret not in caplog.text
    assert "<secret>" in caplog.text
    assert_invariants(conversation, [secret])
