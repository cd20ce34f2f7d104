"""The driver against what embedders' code may do: odd ids, stray cancels, echoed secrets."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import TYPE_CHECKING

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

from coordinator import EventEntry, export_markdown
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import (
    Ask,
    BuiltinOutcome,
    BuiltinTool,
    Completed,
    ExecutorResult,
    Failure,
    NeedsInput,
    Success,
)
from coordinator.driver._prompting import QuestionAnswer, ScriptedPrompter
from coordinator.driver._tool_coordinator import ToolCoordinator
from machines import (
    Answered,
    Cancelled,
    InquiryRequest,
    InquirySource,
    JsonValue,
    Question,
    ShowQuestion,
    ToolAnswer,
    ToolCallRequest,
    ToolCallResponse,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from coordinator import Conversation
    from coordinator.driver._executors import Executor
    from coordinator.driver._observing import StepFacts

TOKEN = Question.secret("token", "Deploy token?")
PIN = Question.secret("pin", "PIN?")
APPLY = Question.boolean("apply", "Apply?")
#: Long enough for a hang to fail the test, never reached when the driver is sound.
PATIENCE = 10.0


def _on_disk(conversation: Conversation) -> bytes:
    assert conversation.path is not None
    return b"".join(p.read_bytes() for p in sorted(conversation.path.rglob("*")) if p.is_file())


def _decoded_stream(conversation: Conversation) -> str:
    """The stream as saved, with its base64 fields decoded (where an echo would hide)."""
    return str([e.payload for e in conversation.stream if isinstance(e, EventEntry)])


# ---------------------------------------------------------------- inquiry ids


def test_dotted_ids_that_join_alike_still_give_each_question_its_own_id(
    tmp_path: Path,
) -> None:
    """Call "a.b" asking "c" and call "a" asking "b.c": two inquiry ids, each answer paired."""
    conversation = conversation_on_disk(tmp_path)
    c = Question.text_input("c", "First?")
    b_c = Question.text_input("b.c", "Second?")
    prompter = ScriptedPrompter()
    prompter.answer("for a.b", tool="first").answer("for a", tool="second")
    coordinator = ToolCoordinator(
        conversation,
        tools={"first": executor(AskingTool([c])), "second": executor(AskingTool([b_c]))},
        config=UNATTENDED,
        prompter=prompter,
    )
    responses = run(
        coordinator.run(assistant_calls(conversation, ("a.b", "first"), ("a", "second")))
    )
    assert [r.content for r in responses] == ["answers: c='for a.b'", "answers: b.c='for a'"]
    ids = [request.id for request in payloads(conversation, InquiryRequest)]
    assert ids == ["a.b.c.1", "a.b.c.2"]
    assert_invariants(conversation)


# ------------------------------------------------------- cancellation of work


class CancelledInside:
    """An executor whose tool awaits something that was cancelled elsewhere."""

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Await a future cancelled before it could finish."""
        del call, answers
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.cancel()
        await future
        return Completed(content="never")  # pragma: no cover


def test_a_tool_raising_cancelled_error_of_its_own_fails_only_its_call(tmp_path: Path) -> None:
    """CancelledError from inside a tool (nobody cancelled the batch) fails that call; run ends."""
    conversation = conversation_on_disk(tmp_path)
    tools: dict[str, Executor] = {"odd": CancelledInside(), "good": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED)

    async def scenario() -> list[ToolCallResponse]:
        requests = assistant_calls(conversation, ("c1", "odd"), ("c2", "good"))
        return await asyncio.wait_for(coordinator.run(requests), PATIENCE)

    responses = run(scenario())
    assert responses[0] == ToolCallResponse(
        id="c1", content="Tool 'odd' failed: CancelledError: ", is_error=True
    )
    assert responses[1].content == "answers: "
    assert_invariants(conversation)


class CancelledPrompter(ScriptedPrompter):
    """A prompter whose terminal library raises CancelledError by itself."""

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Fail as a cancelled read of the terminal would."""
        self.shown.append(prompt)
        raise asyncio.CancelledError


def test_a_prompter_raising_cancelled_error_of_its_own_cancels_the_question(
    tmp_path: Path,
) -> None:
    """CancelledError from the prompter alone closes its question as cancelled; run ends."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY]))},
        config=UNATTENDED,
        prompter=CancelledPrompter(),
    )

    async def scenario() -> list[ToolCallResponse]:
        requests = assistant_calls(conversation, ("c1", "fs"))
        return await asyncio.wait_for(coordinator.run(requests), PATIENCE)

    (response,) = run(scenario())
    assert response.content == "Tool input cancelled by user."
    assert [c.id for c in payloads(conversation, Cancelled)] == ["c1.apply.1"]
    assert_invariants(conversation)


class SlowToStop:
    """An executor that runs until cancelled, then takes a while to clean up."""

    def __init__(self) -> None:
        """Nothing started yet."""
        self.started = asyncio.Event()
        self.stopping = asyncio.Event()

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Wait to be cancelled; then clean up for a moment before giving in."""
        del call, answers
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopping.set()
            await asyncio.sleep(0.05)
            raise
        return Completed(content="never")  # pragma: no cover


def test_cancelling_twice_while_tools_stop_leaves_the_coordinator_usable(tmp_path: Path) -> None:
    """A second cancel during the first's clean-up: every call closed, the next batch runs."""
    conversation = conversation_on_disk(tmp_path)
    slow = SlowToStop()
    tools: dict[str, Executor] = {"slow": slow, "fs": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED)

    async def scenario() -> list[ToolCallResponse]:
        batch = asyncio.create_task(coordinator.run(assistant_calls(conversation, ("c1", "slow"))))
        await slow.started.wait()
        batch.cancel()
        await slow.stopping.wait()
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        return await coordinator.run(assistant_calls(conversation, ("c2", "fs")))

    (response,) = run(scenario())
    assert response.content == "answers: "
    responses = payloads(conversation, ToolCallResponse)
    assert [(r.id, r.content) for r in responses] == [
        ("c1", "Tool call was interrupted."),
        ("c2", "answers: "),
    ]
    assert_invariants(conversation)


# ------------------------------------------------------------ echoed secrets


class EchoInQuestion(BuiltinTool):
    """Asks for a token, then asks a select question built from it."""

    def __init__(self, *, in_id: bool = False) -> None:
        """Put the token in the options (and, if told, in the question's id)."""
        self.in_id = in_id
        self.runs: list[dict[str, JsonValue]] = []

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """The token first; then which use of it, the default quoting it too."""
        del arguments
        self.runs.append(dict(answers))
        if "token" not in answers:
            return Ask(TOKEN)
        token = str(answers["token"])
        question_id = f"use-{token}" if self.in_id else "use"
        if question_id in answers:
            return Success(f"chose {answers[question_id]}")
        options = [f"deploy with {token}", "abort"]
        return Ask(
            Question.select(
                question_id,
                f"Deploy with {token}?",
                options,
                default=options[0],
                context=f"token {token}",
            )
        )


def test_a_secret_echoed_in_a_select_question_is_masked_in_options_and_default(
    tmp_path: Path,
) -> None:
    """Options, default, text and context quoting a secret are masked; nothing leaks or crashes."""
    conversation = conversation_on_disk(tmp_path)
    secret = "tok-3v1l-secret"
    prompter = ScriptedPrompter().answer(secret).answer("deploy with <secret>")
    tool = EchoInQuestion()
    coordinator = ToolCoordinator(
        conversation, tools={"deploy": executor(tool)}, config=UNATTENDED, prompter=prompter
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert response.content == "chose deploy with <secret>"
    asked = payloads(conversation, InquiryRequest)[1].question
    assert asked.text == "Deploy with <secret>?"
    assert asked.context == "token <secret>"
    assert [o.value for o in asked.answer_type.options] == ["deploy with <secret>", "abort"]
    assert asked.default == "deploy with <secret>"
    assert secret not in _decoded_stream(conversation)
    assert secret not in export_markdown(conversation.stream)
    assert_invariants(conversation, [secret])


def test_a_question_whose_id_holds_a_secret_fails_its_call(tmp_path: Path) -> None:
    """A question id cannot be masked (the tool matches answers by it): the call fails, masked."""
    conversation = conversation_on_disk(tmp_path)
    secret = "tok-3v1l-secret"
    prompter = ScriptedPrompter().answer(secret)
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(EchoInQuestion(in_id=True))},
        config=UNATTENDED,
        prompter=prompter,
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert response.is_error
    assert response.content == (
        "Tool 'deploy' failed: its question's id echoes a secret answer ('use-<secret>')"
    )
    assert secret not in _decoded_stream(conversation)
    assert_invariants(conversation, [secret])


class EchoEscaped(BuiltinTool):
    """Asks for its secrets, then fails quoting them in the way ``how`` names."""

    def __init__(self, how: str, questions: tuple[Question, ...] = (TOKEN,)) -> None:
        """``how``: "repr" (raises with repr), "orjson" or "json" (a JSON error body)."""
        self.how = how
        self.questions = questions

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask what is missing; then report every answer escaped."""
        del arguments
        for question in self.questions:
            if question.id not in answers:
                return Ask(question)
        values = [str(answers[q.id]) for q in self.questions]
        if self.how == "repr":
            raise ValueError(f"rejected {values!r}")
        if self.how == "orjson":
            return Failure(orjson.dumps({"stderr": " ".join(values)}).decode())
        return Failure(json.dumps({"stderr": " ".join(values)}))


@pytest.mark.parametrize(
    ("how", "secret"),
    [
        ("repr", "C:\\keys\\prod 'x' \"y\""),
        ("repr", "it's"),
        ("orjson", 'pa"ss\\word\n'),
        ("json", "pässwörd\t\u2603"),
    ],
)
def test_a_secret_echoed_escaped_is_masked(tmp_path: Path, how: str, secret: str) -> None:
    """A secret quoted by repr() or escaped by a JSON encoder is masked all the same."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(EchoEscaped(how))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert response.is_error
    assert "<secret>" in response.content
    for spelling in (secret, repr(secret)[1:-1], json.dumps(secret)[1:-1]):
        assert spelling not in response.content
    assert_invariants(conversation, [secret])


class EchoTwice(BuiltinTool):
    """Asks for a token, then fails with an error body that escapes it again (or in a URL)."""

    def __init__(self, how: str) -> None:
        """``how``: "repr-in-json", "json-in-json", "go" or "url"."""
        self.how = how

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask for the token; then report it the way ``how`` says."""
        del arguments
        if "token" not in answers:
            return Ask(TOKEN)
        token = str(answers["token"])
        body = {
            # A Python traceback quoting repr(token), wrapped as JSON by a caller.
            "repr-in-json": lambda: orjson.dumps({"stderr": f"bad token {token!r}"}).decode(),
            # A tool that printed its JSON request, wrapped as JSON again.
            "json-in-json": lambda: orjson.dumps({"stdout": json.dumps({"t": token})}).decode(),
            # Go's encoding/json: & < > escaped.
            "go": lambda: (
                json.dumps({"t": token})
                .replace("&", "\\u0026")
                .replace("<", "\\u003c")
                .replace(">", "\\u003e")
            ),
            "url": lambda: "GET https://x.test/deploy?token=" + urllib.parse.quote(token, safe=""),
        }[self.how]()
        return Failure(body)


@pytest.mark.parametrize("how", ["repr-in-json", "json-in-json", "go", "url"])
@pytest.mark.parametrize(
    "secret", ["C:\\keys\\prod", 'p"ss\\w0rd', "cl\u00e9-secr\u00e8te", "a&b<c>d e"]
)
def test_a_secret_escaped_twice_or_put_in_a_url_is_masked(
    tmp_path: Path, how: str, secret: str
) -> None:
    """Escaped once by the tool and again by a wrapper, or URL-encoded: still masked."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(EchoTwice(how))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(secret),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert "<secret>" in response.content
    decoded = orjson.loads(response.content) if response.content.startswith("{") else None
    shown = json.dumps(decoded) + str(decoded) if decoded is not None else response.content
    for text in (response.content, shown, urllib.parse.unquote(response.content)):
        assert secret not in text
    assert secret not in _decoded_stream(conversation)
    assert_invariants(conversation, [secret])


class OffersVersions(BuiltinTool):
    """Asks for a PIN, then which version to deploy, offering versions the PIN is part of."""

    def __init__(self) -> None:
        """Remember what each run received."""
        self.runs: list[dict[str, JsonValue]] = []

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """The PIN; then the version (the default a version too); then what was chosen."""
        del arguments
        self.runs.append({k: v for k, v in answers.items() if k != "pin"})
        if "pin" not in answers:
            return Ask(PIN)
        versions = ["2024.1.0", "2024.2.0"]
        if "version" not in answers:
            return Ask(Question.select("version", "Which version?", versions, default=versions[0]))
        if answers["version"] not in versions:
            return Failure(f"unknown version {answers['version']}")
        return Success(f"deployed {answers['version']}")


def test_an_option_a_secret_is_part_of_is_recorded_masked_and_given_to_the_tool_whole(
    tmp_path: Path,
) -> None:
    """PIN 2024, versions 2024.x offered: the record says <secret>.2.0, the tool gets 2024.2.0."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer("2024").answer("<secret>.2.0")
    tool = OffersVersions()
    coordinator = ToolCoordinator(
        conversation, tools={"deploy": executor(tool)}, config=UNATTENDED, prompter=prompter
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert tool.runs[-1] == {"version": "2024.2.0"}
    assert response == ToolCallResponse(id="c1", content="deployed <secret>.2.0", is_error=False)
    shown = prompter.shown[-1]
    assert isinstance(shown, ShowQuestion)
    assert [o.value for o in shown.question.answer_type.options] == [
        "<secret>.1.0",
        "<secret>.2.0",
    ]
    assert shown.question.default == "<secret>.1.0"
    assert payloads(conversation, Answered)[-1].answer == "<secret>.2.0"
    assert "2024" not in _decoded_stream(conversation)
    assert_invariants(conversation, ["2024"])


def test_a_masked_default_taken_as_it_is_reaches_the_tool_whole(tmp_path: Path) -> None:
    """Enter on a default that had to be masked: the tool gets the default it offered."""
    conversation = conversation_on_disk(tmp_path)
    prompter = ScriptedPrompter().answer("2024").answer("<secret>.1.0")
    tool = OffersVersions()
    coordinator = ToolCoordinator(
        conversation, tools={"deploy": executor(tool)}, config=UNATTENDED, prompter=prompter
    )
    run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert tool.runs[-1] == {"version": "2024.1.0"}


def test_a_secret_holding_another_is_masked_whole(tmp_path: Path) -> None:
    """The PIN 4711 inside the token ghp_4711_Zq8v: the token is masked whole, not around it."""
    conversation = conversation_on_disk(tmp_path)
    pin, token = "4711", "ghp_4711_Zq8vLr2kT9wX"
    coordinator = ToolCoordinator(
        conversation,
        tools={"deploy": executor(EchoEscaped("json", (PIN, TOKEN)))},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer(pin).answer(token),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "deploy"))))
    assert response.content == '{"stderr": "<secret> <secret>"}'
    assert_invariants(conversation, [pin, token, "Zq8vLr2kT9wX"])


# ------------------------------------------------------ the embedder's callback


def test_a_failing_on_step_stops_the_batch_with_the_stream_whole(tmp_path: Path) -> None:
    """on_step raising: run raises it, every record of the step and every call are on disk."""
    conversation = conversation_on_disk(tmp_path)
    config = parse_tools_config(
        {
            "defaults": {"run": "unattended"},
            "tools": {"fs": {"questions": {"apply": {"answer": True}}}},
        }
    )
    seen: list[StepFacts] = []

    def on_step(step: StepFacts) -> None:
        seen.append(step)
        if any(isinstance(record, InquiryRequest) for record in step.records):
            raise BrokenPipeError("progress pipe closed")

    coordinator = ToolCoordinator(
        conversation,
        tools={"fs": executor(AskingTool([APPLY])), "other": executor(AskingTool([]))},
        config=config,
        on_step=on_step,
    )
    requests = assistant_calls(conversation, ("c1", "fs"), ("c2", "other"))
    with pytest.raises(BrokenPipeError, match="progress pipe closed"):
        run(coordinator.run(requests))
    # Told of the failing step whole, and of nothing after it (c2's end included).
    assert [type(record) for record in seen[-1].records] == [InquiryRequest, Answered]
    assert not any(isinstance(r, ToolCallResponse) for step in seen for r in step.records)
    assert_invariants(conversation)
    kinds = [e["type"] for e in orjson.loads((tmp_path / "events.json").read_bytes())]
    assert kinds.count("tool_call_response") == 2
    assert kinds.count("inquiry_response") == 1


# ----------------------------------------------------- executors out of contract


class Malformed:
    """An executor that returns what ``value`` is, whatever its type says."""

    def __init__(self, value: object) -> None:
        """Return ``value`` from every run."""
        self.value = value

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Break the protocol."""
        del call, answers
        return self.value  # type: ignore[return-value] # the point of the test


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "its executor returned NoneType, not a result"),
        ({"content": "ok"}, "its executor returned dict, not a result"),
        (Completed(content=None), "its executor returned a malformed Completed"),  # type: ignore[arg-type]
        (
            NeedsInput(question=APPLY, source="assistant", accumulated_answers={}),  # type: ignore[arg-type]
            "its executor returned a malformed NeedsInput",
        ),
        (
            NeedsInput(question=APPLY, source=InquirySource.tool("bad"), accumulated_answers=None),  # type: ignore[arg-type]
            "its executor returned a malformed NeedsInput",
        ),
        (
            NeedsInput(
                question=APPLY,
                source=InquirySource.tool("bad"),
                accumulated_answers={1: True},  # type: ignore[dict-item]
            ),
            "its executor returned a malformed NeedsInput",
        ),
    ],
)
def test_an_executor_returning_what_it_must_not_fails_only_its_call(
    tmp_path: Path, value: object, problem: str
) -> None:
    """A malformed result gives its own call an error response; the sibling call runs."""
    conversation = conversation_on_disk(tmp_path)
    tools: dict[str, Executor] = {"bad": Malformed(value), "good": executor(AskingTool([]))}
    coordinator = ToolCoordinator(conversation, tools=tools, config=UNATTENDED)
    responses = run(coordinator.run(assistant_calls(conversation, ("c1", "bad"), ("c2", "good"))))
    assert responses[0] == ToolCallResponse(
        id="c1", content=f"Tool 'bad' failed: {problem}", is_error=True
    )
    assert responses[1].content == "answers: "
    assert_invariants(conversation)
