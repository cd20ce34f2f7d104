"""When the driver saves, how many tools it runs at once, and how long it remembers a secret."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from coordinator_harness import (
    UNATTENDED,
    AskingTool,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    executor,
    payloads,
    run,
)

from coordinator import Conversation, load_conversation
from coordinator.driver import _tool_coordinator
from coordinator.driver._executors import (
    Ask,
    BuiltinOutcome,
    BuiltinTool,
    Completed,
    ExecutorResult,
    NeedsInput,
    Success,
)
from coordinator.driver._prompting import ScriptedPrompter
from coordinator.driver._scripted_backend import ScriptedInquiryBackend
from coordinator.driver._tool_coordinator import (
    FDS_PER_TOOL,
    MOST_PARALLEL_TOOLS,
    ToolCoordinator,
    default_parallel_tools,
)
from coordinator.store import Durability, save_conversation
from machines import (
    ChatRequest,
    ChatResponse,
    InquirySource,
    JsonValue,
    Question,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from coordinator.driver._backend import InquiryTask
    from machines import ToolAnswer

TOKEN = Question.secret("token", "Token?")
APPLY = Question.boolean("apply", "Apply?")


def _on_disk(conversation: Conversation) -> list[dict[str, object]]:
    assert conversation.path is not None
    entries: list[dict[str, object]] = orjson.loads(
        (conversation.path / "events.json").read_bytes()
    )
    return entries


class LooksAtTheDisk:
    """An executor that notes, as it starts, what events.json holds of its call."""

    def __init__(self, conversation: Conversation, questions: tuple[Question, ...] = ()) -> None:
        """Watch ``conversation``'s file; ask ``questions`` in order first."""
        self.conversation = conversation
        self.questions = questions
        self.seen: list[tuple[str, int, int]] = []

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Note the request and the answers on disk, then finish or ask."""
        entries = _on_disk(self.conversation)
        requests = sum(
            1 for e in entries if e.get("type") == "tool_call_request" and e.get("id") == call.id
        )
        responses = sum(1 for e in entries if e.get("type") == "inquiry_response")
        self.seen.append((call.id, requests, responses))
        for question in self.questions:
            if question.id not in answers:
                return NeedsInput(
                    question=question,
                    source=InquirySource.tool(call.name),
                    accumulated_answers=dict(answers),
                )
        return Completed(content="done")


def test_a_tools_request_is_on_disk_when_its_executor_starts(tmp_path: Path) -> None:
    """Each call's request, and each answer it runs again with, is saved before the tool runs."""
    conversation = conversation_on_disk(tmp_path)
    asks = LooksAtTheDisk(conversation, (APPLY, Question.boolean("push", "Push?")))
    quiet = LooksAtTheDisk(conversation)
    coordinator = ToolCoordinator(
        conversation,
        tools={"asks": asks, "quiet": quiet},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True).answer(value=False),
    )
    run(coordinator.run(assistant_calls(conversation, ("c1", "asks"), ("c2", "quiet"))))
    # (call, its request on disk, inquiry responses on disk) as each run began.
    assert asks.seen == [("c1", 1, 0), ("c1", 1, 1), ("c1", 1, 2)]
    assert quiet.seen == [("c2", 1, 0)]
    assert_invariants(conversation)


def test_no_tool_runs_when_its_request_cannot_be_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save before the tools fails: no tool starts, every call is closed, run raises."""
    conversation = conversation_on_disk(tmp_path)
    tool = LooksAtTheDisk(conversation)

    def refuse(_: Conversation, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_tool_coordinator, "save_conversation", refuse)
    coordinator = ToolCoordinator(conversation, tools={"fs": tool}, config=UNATTENDED)
    requests = assistant_calls(conversation, ("c1", "fs"), ("c2", "fs"))
    with pytest.raises(OSError, match="No space left"):
        run(coordinator.run(requests))
    assert tool.seen == []
    assert len(payloads(conversation, ToolCallResponse)) == 2


class NotesTheLastSave:
    """An executor that notes, as it starts, how the save before it was made."""

    def __init__(self, saves: list[Durability]) -> None:
        """Read the durabilities of the saves from ``saves`` (appended to as they are made)."""
        self.saves = saves
        self.seen: list[Durability] = []

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Note the last save's durability, then ask ``apply`` once."""
        self.seen.append(self.saves[-1])
        if APPLY.id not in answers:
            return NeedsInput(
                question=APPLY, source=InquirySource.tool(call.name), accumulated_answers={}
            )
        return Completed(content="done")


def test_the_save_before_a_tool_starts_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save a tool's run waits for survives a power loss (LOGGED), not just a crash."""
    conversation = conversation_on_disk(tmp_path)
    saves: list[Durability] = []

    def noting(conversation: Conversation, **options: Any) -> object:
        saves.append(options.get("durability", Durability.FILES))
        return save_conversation(conversation, **options)

    monkeypatch.setattr(_tool_coordinator, "save_conversation", noting)
    tool = NotesTheLastSave(saves)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": tool},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(value=True),
    )
    run(coordinator.run(assistant_calls(conversation, ("c1", "fs"))))
    assert tool.seen == [Durability.LOGGED, Durability.LOGGED]
    assert_invariants(conversation)


# ----------------------------------------------------------------- the limit


def _numbered_calls(conversation: Conversation, numbers: range) -> list[ToolCallRequest]:
    """Append an assistant response calling tool ``t`` with each of ``numbers`` as ``n``."""
    conversation.stream.append(ChatResponse.message("On it."))
    requests = [ToolCallRequest(id=f"c{n}", name="t", arguments={"n": n}) for n in numbers]
    for request in requests:
        conversation.stream.append(request)
    return requests


class CountsRunning(BuiltinTool):
    """A tool that notes how many of its kind run at once."""

    def __init__(self) -> None:
        """Nothing running yet."""
        self.running = 0
        self.most = 0
        self.started: list[str] = []

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Run for a few loop turns, counting."""
        del answers
        self.started.append(str(arguments.get("n")))
        self.running += 1
        self.most = max(self.most, self.running)
        for _ in range(5):
            await asyncio.sleep(0)
        self.running -= 1
        return Success("ok")


def test_at_most_the_limit_of_tools_run_at_once_the_rest_in_order(tmp_path: Path) -> None:
    """Twelve calls with a limit of three: never more than three running; started in order."""
    conversation = conversation_on_disk(tmp_path)
    tool = CountsRunning()
    coordinator = ToolCoordinator(
        conversation, tools={"t": executor(tool)}, config=UNATTENDED, max_parallel_tools=3
    )
    requests = _numbered_calls(conversation, range(12))
    responses = run(coordinator.run(requests))
    assert [r.content for r in responses] == ["ok"] * 12
    assert tool.most == 3
    assert tool.started == [str(n) for n in range(12)]


def test_a_tool_waiting_for_an_answer_holds_no_place(tmp_path: Path) -> None:
    """Limit one: a call waits on the model, who answers only once the other call has run."""
    conversation = conversation_on_disk(tmp_path)
    other_ran = asyncio.Event()

    class Other(BuiltinTool):
        async def run(
            self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
        ) -> BuiltinOutcome:
            del arguments, answers
            other_ran.set()
            return Success("other")

    class Patient:
        async def answer(self, task: InquiryTask) -> JsonValue:
            del task
            await asyncio.wait_for(other_ran.wait(), timeout=10)
            return True

    coordinator = ToolCoordinator(
        conversation,
        tools={"asks": executor(AskingTool([APPLY])), "other": executor(Other())},
        config=UNATTENDED,
        backend=Patient(),
        max_parallel_tools=1,
    )
    responses = run(
        coordinator.run(assistant_calls(conversation, ("c1", "asks"), ("c2", "other")))
    )
    assert [r.is_error for r in responses] == [False, False]


def test_a_tool_run_again_with_its_answer_waits_behind_the_calls_already_waiting(
    tmp_path: Path,
) -> None:
    """Limit one: the first call asks, is answered at once, and runs again only after the rest."""
    conversation = conversation_on_disk(tmp_path)
    started: list[str] = []

    class AsksFirst(BuiltinTool):
        async def run(
            self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
        ) -> BuiltinOutcome:
            started.append(str(arguments["n"]))
            for _ in range(5):  # long enough for the model's answer to come meanwhile
                await asyncio.sleep(0)
            if arguments["n"] == 0 and "apply" not in answers:
                return Ask(APPLY)
            return Success("ok")

    coordinator = ToolCoordinator(
        conversation,
        tools={"t": executor(AsksFirst())},
        config=UNATTENDED,
        backend=ScriptedInquiryBackend().respond(value=True),
        max_parallel_tools=1,
    )
    requests = _numbered_calls(conversation, range(4))
    responses = run(coordinator.run(requests))
    assert [r.content for r in responses] == ["ok"] * 4
    assert started == ["0", "1", "2", "3", "0"]
    assert_invariants(conversation)


def test_calls_waiting_for_a_place_when_the_batch_stops_never_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Limit one; the running tool stops the batch as it ends, handing its place on as it does.

    The calls that waited never start and each is answered; nothing is left
    behind (no error logged by the loop), and the next batch runs every call.
    """
    conversation = conversation_on_disk(tmp_path)
    started: list[str] = []
    stopping = True

    class StopsTheBatch(BuiltinTool):
        async def run(
            self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
        ) -> BuiltinOutcome:
            del answers
            started.append(str(arguments["n"]))
            if stopping:
                await asyncio.sleep(0)  # the other calls queue for its place meanwhile
                coordinator.cancel()
            return Success("ok")

    coordinator = ToolCoordinator(
        conversation,
        tools={"t": executor(StopsTheBatch())},
        config=UNATTENDED,
        max_parallel_tools=1,
    )
    requests = _numbered_calls(conversation, range(4))
    responses = run(coordinator.run(requests))
    assert started == ["0"]
    assert [(r.id, r.content) for r in responses] == [
        (f"c{n}", "Tool call was interrupted.") for n in range(4)
    ]
    stopping = False
    again = _numbered_calls(conversation, range(4, 8))
    assert [r.content for r in run(coordinator.run(again))] == ["ok"] * 4
    assert started == ["0", "4", "5", "6", "7"]
    assert [record for record in caplog.records if record.name == "asyncio"] == []
    assert_invariants(conversation)


def test_the_default_limit_follows_the_open_file_limit() -> None:
    """(soft RLIMIT_NOFILE - 64) // 4, at least 1, at most MOST_PARALLEL_TOOLS."""
    import resource  # noqa: PLC0415 - POSIX only, like the limit itself

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    expected = min(MOST_PARALLEL_TOOLS, max(1, (soft - 64) // FDS_PER_TOOL))
    assert default_parallel_tools() == expected
    with pytest.raises(ValueError, match="at least 1"):
        ToolCoordinator(Conversation.new(), tools={}, max_parallel_tools=0)


_MANY_LOCAL_TOOLS = textwrap.dedent(
    """
    import asyncio, collections, json, resource, sys
    from pathlib import Path

    from coordinator import Conversation, LocalTool, LocalToolExecutor, ToolCoordinator
    from coordinator import parse_tools_config
    from coordinator.driver._tool_coordinator import default_parallel_tools
    from machines import ChatRequest, ChatResponse, ToolCallRequest, TurnStart

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    directory = Path(sys.argv[1])
    conversation = Conversation.new()
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="many"))
    conversation.stream.append(ChatResponse.message("On it."))
    requests = [ToolCallRequest(id=f"c{n}", name="echo", arguments={}) for n in range(2000)]
    for request in requests:
        conversation.stream.append(request)
    tool = LocalTool(name="echo", command=["/bin/echo", "ok"])
    coordinator = ToolCoordinator(
        conversation,
        tools={"echo": LocalToolExecutor(tool, root=directory)},
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
    )
    responses = asyncio.run(coordinator.run(requests))
    print(json.dumps({
        "limit": default_parallel_tools(),
        "contents": collections.Counter(r.content for r in responses),
        "errors": sum(r.is_error for r in responses),
    }))
    """
)


def test_two_thousand_local_tools_at_once_all_succeed(tmp_path: Path) -> None:
    """2,000 calls of a local tool under a 1,024 open-file limit: queued, and every one runs."""
    done = subprocess.run(
        [sys.executable, "-c", _MANY_LOCAL_TOOLS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result == {"limit": (1024 - 64) // 4, "contents": {"ok\n": 2000}, "errors": 0}


# ---------------------------------------------------- masks, turn after turn


class RemembersTheToken(BuiltinTool):
    """Asks for a token once; in every later turn prints it back (as a config file would)."""

    token: str | None = None

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask for the token the first time; else print it, JSON-escaped in a URL."""
        del arguments
        if RemembersTheToken.token is None:
            if "token" not in answers:
                return Ask(TOKEN)
            RemembersTheToken.token = str(answers["token"])
            return Success("stored")
        return Success(f"GET https://x.test/?config={json.dumps({'t': RemembersTheToken.token})}")


def _next_turn(conversation: Conversation) -> None:
    conversation.stream.append(TurnStart())
    conversation.stream.append(ChatRequest(content="again"))


def test_a_secret_from_turn_one_is_masked_in_later_turns_and_by_later_coordinators(
    tmp_path: Path,
) -> None:
    """Typed in turn 1; printed by a tool in turn 2, and by a new coordinator over the reload."""
    secret = "tok+en/Zq8v \u00e4"
    RemembersTheToken.token = None
    conversation = conversation_on_disk(tmp_path)
    first = ToolCoordinator(
        conversation,
        tools={"t": executor(RemembersTheToken())},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret),
    )
    run(first.run(assistant_calls(conversation, ("c1", "t"))))
    _next_turn(conversation)
    (same,) = run(first.run(assistant_calls(conversation, ("c2", "t"))))
    assert same.content == 'GET https://x.test/?config={"t": "<secret>"}'

    reloaded = load_conversation(tmp_path)
    _next_turn(reloaded)
    later = ToolCoordinator(
        reloaded, tools={"t": executor(RemembersTheToken())}, config=UNATTENDED
    )
    (again,) = run(later.run(assistant_calls(reloaded, ("c3", "t"))))
    assert again.content == 'GET https://x.test/?config={"t": "<secret>"}'
    assert_invariants(reloaded, [secret, json.dumps(secret)[1:-1]])
