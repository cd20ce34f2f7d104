"""RFD 083's ``ask_user``: its arguments, its one question, its answer, its routing, its defaults.

Each test holds one statement of the RFD (``docs/rfd083-conformance.md``
lists them with their tests): the tool as the model meets it (what it is
told of the tool, what it is told back), the question as the person meets it
and as the conversation records it, and where it goes when nobody can be
asked or configuration points it elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
from coordinator_harness import (
    AskingTool,
    assert_invariants,
    conversation_on_disk,
    executor,
    payloads,
    recorded_routes,
    run,
)
from run_helpers import cli, local_tools, write

from coordinator import ScriptedPrompter, ToolCoordinator, builtin_executors, parse_tools_config
from coordinator._recorded_routes import RecordedRoute
from coordinator.adapters import (
    ASK_USER_DESCRIPTION,
    ASK_USER_PARAMETERS,
    AskUser,
    with_builtin_defaults,
)
from coordinator.cli._scenario import load_scenario
from coordinator.driver import Ask, Failure, ScriptedInquiryBackend, Success
from coordinator.wire._codec import structure_question, unstructure_question
from machines import (
    Answered,
    AnswerReusePolicy,
    AnswerType,
    CancellationReason,
    Cancelled,
    DetachedMode,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    MachineError,
    Question,
    ResultMode,
    RunMode,
    ToolCallRequest,
    ToolCallResponse,
    TurnState,
)

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator import Conversation, ToolsConfig
    from machines import JsonValue

BOOLEAN: dict[str, JsonValue] = {"question": "Ship it?", "answer_type": "boolean"}


def _config(data: dict[str, Any] | None = None) -> ToolsConfig:
    """A configuration, with the built-ins' defaults merged under it as an embedder does."""
    return with_builtin_defaults(parse_tools_config(data or {}))


def _play(
    tmp_path: Path,
    *calls: dict[str, JsonValue],
    prompter: ScriptedPrompter | None = None,
    config: ToolsConfig | None = None,
    backend: ScriptedInquiryBackend | None = None,
) -> tuple[Conversation, list[ToolCallResponse]]:
    """Run ``ask_user`` calls with these arguments, in one batch of one turn."""
    conversation = conversation_on_disk(tmp_path)
    requests = [
        ToolCallRequest(id=f"call_{n}", name="ask_user", arguments=arguments)
        for n, arguments in enumerate(calls, 1)
    ]
    for request in requests:
        conversation.stream.append(request)
    coordinator = ToolCoordinator(
        conversation,
        tools=builtin_executors(),
        config=config or _config(),
        prompter=prompter,
        backend=backend,
    )
    responses = run(coordinator.run(requests))
    assert_invariants(conversation)
    return conversation, responses


def _told(arguments: dict[str, JsonValue], answers: dict[str, JsonValue] | None = None) -> object:
    """What ``ask_user`` run once with ``arguments`` (and ``answers``) returns."""
    return run(AskUser().run(arguments, answers or {}))


def _assert_refused(
    conversation: Conversation,
    response: ToolCallResponse,
    reason: CancellationReason,
    *said: str,
) -> None:
    """Its one question was closed for ``reason``; the call failed, telling the model ``said``."""
    (cancelled,) = payloads(conversation, Cancelled)
    assert cancelled.reason is reason
    assert response.is_error
    for words in said:
        assert words in response.content


# ------------------------------------------------------------ the arguments


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        pytest.param({}, "'question' is required", id="question-missing"),
        pytest.param({"question": ""}, "'question' is required", id="question-empty"),
        pytest.param({"question": " \t"}, "'question' is required", id="question-blank"),
        pytest.param({"question": 3}, "'question' is required", id="question-not-a-string"),
        pytest.param(
            {"question": "Which one?\nThe first is faster."},
            "'question' must be a single line: put the background in 'context'",
            id="question-multi-line",
        ),
        pytest.param(
            {"question": "Which one?\r"}, "'question' must be a single line", id="question-cr"
        ),
        pytest.param(
            {"question": "Go?", "context": ["a"]},
            "'context' must be a string, not an array",
            id="context-not-a-string",
        ),
        pytest.param(
            {"question": "Go?", "answer_type": "colour"},
            '\'answer_type\' must be "boolean", "select" or "text" (default), not \'colour\'',
            id="answer-type-unknown",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select"},
            "a \"select\" question needs 'options'",
            id="select-without-options",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": []},
            "a \"select\" question needs 'options'",
            id="select-with-empty-options",
        ),
        pytest.param(
            {"question": "Which?", "options": ["a", "b"]},
            "'options' are for answer_type \"select\" only, not 'text'",
            id="options-on-a-text",
        ),
        pytest.param(
            {"question": "Sure?", "answer_type": "boolean", "options": ["a"]},
            "'options' are for answer_type \"select\" only, not 'boolean'",
            id="options-on-a-boolean",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": ["a", 1]},
            "option 1 must be a string, not an integer",
            id="option-not-a-string",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": ["a", "b", "a"]},
            "option 2 ('a') repeats an earlier option",
            id="option-repeated",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": ["a", " "]},
            "option 1 is empty",
            id="option-empty",
        ),
        pytest.param(
            {"question": "Sure?", "answer_type": "boolean", "default": "yes"},
            "the default of a boolean question must be true or false, not a string",
            id="boolean-default-a-string",
        ),
        pytest.param(
            {"question": "Name?", "default": True},
            "the default of a text question must be a string, not a boolean",
            id="text-default-a-boolean",
        ),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": ["a", "b"], "default": "c"},
            "the default must be one of the options ('a', 'b'), not 'c'",
            id="select-default-not-an-option",
        ),
        pytest.param({"question": "Hi?", "mood": "sunny"}, "unknown argument 'mood'", id="extra"),
    ],
)
def test_each_bad_argument_is_told_to_the_model_and_nothing_is_asked(
    tmp_path: Path, arguments: dict[str, JsonValue], problem: str
) -> None:
    """An argument RFD 083 refuses: a tool error naming it and how to call again; no question."""
    conversation, (response,) = _play(tmp_path, arguments, prompter=ScriptedPrompter())
    assert response.is_error
    assert response.content.startswith("Invalid arguments for tool 'ask_user': ")
    assert problem in response.content
    assert response.content.endswith("Call ask_user again with the arguments corrected.")
    assert payloads(conversation, InquiryRequest) == []


def test_its_one_question_is_the_assistants_exclusive_and_asked_afresh() -> None:
    """Its question: id ``answer``, the arguments as given, exclusive, and not to be reused."""
    asked = _told(
        {
            "question": "Which approach?",
            "context": "The first rewrites the config.\nThe second keeps a backup.",
            "answer_type": "select",
            "options": ["backup", "overwrite", "abort"],
            "default": "backup",
        }
    )
    assert asked == Ask(
        Question(
            id="answer",
            text="Which approach?",
            context="The first rewrites the config.\nThe second keeps a backup.",
            answer_type=AnswerType.select(["backup", "overwrite", "abort"]),
            default="backup",
            exclusive=True,
            persistence=AnswerReusePolicy.NONE,
        )
    )
    assert AskUser().inquiry_source("ask_user") == InquirySource.assistant()
    assert _told({"question": "Name?"}) == Ask(
        Question(
            id="answer",
            text="Name?",
            answer_type=AnswerType.text(),
            exclusive=True,
            persistence=AnswerReusePolicy.NONE,
        )
    )


@pytest.mark.parametrize(
    ("arguments", "answer", "body"),
    [
        pytest.param(BOOLEAN, True, {"answer_type": "boolean", "answer": True}, id="boolean"),
        pytest.param(
            {"question": "Which?", "answer_type": "select", "options": ["true", "false"]},
            "true",
            {"answer_type": "select", "answer": "true"},
            id="select",
        ),
        pytest.param(
            {"question": "Where to?"},
            "out/notes.md",
            {"answer_type": "text", "answer": "out/notes.md"},
            id="text",
        ),
    ],
)
def test_the_answer_comes_back_as_json_with_its_type(
    tmp_path: Path, arguments: dict[str, JsonValue], answer: JsonValue, body: JsonValue
) -> None:
    """The person's answer reaches the model as {"answer_type", "answer"}: true is not "true"."""
    conversation, (response,) = _play(
        tmp_path, arguments, prompter=ScriptedPrompter().answer(value=answer)
    )
    assert not response.is_error
    assert orjson.loads(response.content) == body
    (request,) = payloads(conversation, InquiryRequest)
    assert request.source == InquirySource.assistant()
    assert payloads(conversation, Answered) == [Answered(id=request.id, answer=answer)]


def test_an_answer_of_another_type_is_refused_in_generic_words() -> None:
    """The second run checks the accumulated answer against the question (any routing path)."""
    said = _told(BOOLEAN, {"answer": "yes"})
    assert said == Failure(
        "ask_user: the accumulated answer does not match the requested answer type."
    )
    picked = _told(
        {"question": "Which?", "answer_type": "select", "options": ["a", "b"]}, {"answer": "c"}
    )
    assert isinstance(picked, Failure)
    assert _told(BOOLEAN, {"answer": False}) == Success('{"answer_type":"boolean","answer":false}')


def test_the_record_keeps_context_exclusive_and_persistence(tmp_path: Path) -> None:
    """The request records the context, ``exclusive: true`` and ``persistence: "none"``."""
    conversation, _ = _play(
        tmp_path,
        {"question": "Proceed?", "context": "Two files change.", "answer_type": "boolean"},
        prompter=ScriptedPrompter().answer(value=True),
    )
    assert conversation.path is not None
    events = orjson.loads((conversation.path / "events.json").read_bytes())
    (request,) = [event for event in events if event["type"] == "inquiry_request"]
    assert request["source"] == {"source": "assistant"}
    assert request["question"] == {
        "text": "Proceed?",
        "answer_type": {"type": "boolean"},
        "id": "answer",
        "context": "Two files change.",
        "exclusive": True,
        "persistence": "none",
    }


def test_a_record_without_persistence_reads_as_turn_and_is_written_back_as_it_was() -> None:
    """Legacy questions (no ``persistence``) keep today's default; a file's value is kept."""
    legacy = InquiryQuestion(text="Go?", answer_type=AnswerType.boolean())
    assert legacy.as_asked("go").persistence is AnswerReusePolicy.TURN
    assert InquiryQuestion.from_question(Question.boolean("go", "Go?")).persistence is None
    newer = InquiryQuestion(text="Go?", answer_type=AnswerType.boolean(), persistence="session")
    assert newer.persistence == "session"  # a newer writer's value, kept verbatim
    assert newer.as_asked("go").persistence is AnswerReusePolicy.TURN
    tool_side = structure_question({"id": "go", "text": "Go?", "answer_type": {"type": "boolean"}})
    assert tool_side.persistence is AnswerReusePolicy.TURN
    once = Question.boolean("go", "Go?", persistence=AnswerReusePolicy.NONE)
    assert structure_question(unstructure_question(once)) == once


# ------------------------------------------------------- no turn memory


def test_asked_once_per_call_never_answered_from_the_turns_memory(tmp_path: Path) -> None:
    """Two calls asking the same question are both asked, whatever the first answer asked for."""
    prompter = ScriptedPrompter().answer(value=True, remember=True).answer(value=False)
    conversation, responses = _play(tmp_path, BOOLEAN, BOOLEAN, prompter=prompter)
    assert len(prompter.shown) == 2
    assert [orjson.loads(r.content)["answer"] for r in responses] == [True, False]
    assert recorded_routes(tmp_path) == [RecordedRoute(route="person")] * 2
    assert len(payloads(conversation, InquiryRequest)) == 2


def test_a_question_not_to_be_reused_is_neither_looked_up_nor_remembered() -> None:
    """The turn's memory: bypassed on read and refused on write for ``persistence`` none."""
    turn = TurnState()
    reused = Question.boolean("go", "Go?")
    once = Question.boolean("go", "Go?", persistence=AnswerReusePolicy.NONE)
    turn.remember_tool_answer("t", reused, value=True)
    assert turn.remembered_tool_answer("t", reused) is not None
    assert turn.remembered_tool_answer("t", once) is None
    with pytest.raises(MachineError, match="may not be reused"):
        turn.remember_tool_answer("t", once, value=True)


def test_any_tool_may_ask_afresh_each_time(tmp_path: Path) -> None:
    """Persistence is generic: a tool's question marked none is asked though the turn has a Y."""
    conversation = conversation_on_disk(tmp_path)
    remembered = Question.boolean("force", "Force push?")
    afresh = Question.boolean("force", "Force push?", persistence=AnswerReusePolicy.NONE)
    request = ToolCallRequest(id="c1", name="git", arguments={})
    conversation.stream.append(request)
    prompter = ScriptedPrompter().answer(value=False)
    coordinator = ToolCoordinator(
        conversation,
        tools={"git": executor(AskingTool([afresh]))},
        config=parse_tools_config({"defaults": {"run": "unattended"}}),
        prompter=prompter,
    )
    # An earlier call's Y to the same question, remembered for the turn.
    coordinator.turn_state.remember_tool_answer("git", remembered, value=True)
    run(coordinator.run([request]))
    assert len(prompter.shown) == 1
    assert payloads(conversation, Answered)[0].answer is False
    assert recorded_routes(tmp_path) == [RecordedRoute(route="person")]


# ------------------------------------------------------------- routing


def test_a_static_answer_is_used_and_nothing_is_asked(tmp_path: Path) -> None:
    """``questions.answer.answer`` set: the configured answer, exclusive or not; no prompt."""
    config = _config({"tools": {"ask_user": {"questions": {"answer": {"answer": True}}}}})
    prompter = ScriptedPrompter()
    _, (response,) = _play(tmp_path, BOOLEAN, prompter=prompter, config=config)
    assert orjson.loads(response.content) == {"answer_type": "boolean", "answer": True}
    assert prompter.shown == []
    assert recorded_routes(tmp_path) == [RecordedRoute(route="configuration")]


def test_a_static_answer_that_does_not_fit_is_refused_naming_the_configuration(
    tmp_path: Path,
) -> None:
    """A misfit static answer: Cancelled(invalid_static_answer), the model told not to retry."""
    config = _config({"tools": {"ask_user": {"questions": {"answer": {"answer": "yes"}}}}})
    conversation, (response,) = _play(tmp_path, BOOLEAN, config=config)
    _assert_refused(
        conversation,
        response,
        CancellationReason.INVALID_STATIC_ANSWER,
        "The static answer configured for question 'answer' of tool 'ask_user'",
        "Update the configuration; do not retry this tool call.",
    )


@pytest.mark.parametrize("mode", ["auto", "defaults", "deny"])
def test_nobody_to_ask_fails_the_call_whatever_the_runs_detached_policy(
    tmp_path: Path, mode: str
) -> None:
    """No terminal: Cancelled(no_prompt_backend), never the model, never its own default.

    RFD 083's table wins over ``[defaults] detached`` for ``ask_user``: its
    built-in configuration says ``deny`` for its questions.
    """
    backend = ScriptedInquiryBackend().respond(value=True)
    conversation, (response,) = _play(
        tmp_path,
        {**BOOLEAN, "default": True},
        config=_config({"defaults": {"detached": mode}}),
        backend=backend,
    )
    _assert_refused(
        conversation,
        response,
        CancellationReason.NO_PROMPT_BACKEND,
        "no person can be asked in this run",
        "Do not retry this tool call",
    )
    assert backend.tasks == []
    assert recorded_routes(tmp_path) == [RecordedRoute(route="denied", detached="deny")]


def test_configured_for_the_assistant_it_is_refused_and_the_model_never_asked(
    tmp_path: Path,
) -> None:
    """``target = "assistant"`` on an exclusive question: Cancelled(assistant_routing_denied)."""
    config = _config({"tools": {"ask_user": {"questions": {"answer": {"target": "assistant"}}}}})
    backend = ScriptedInquiryBackend().respond(value=True)
    conversation, (response,) = _play(
        tmp_path, BOOLEAN, prompter=ScriptedPrompter(), config=config, backend=backend
    )
    _assert_refused(
        conversation,
        response,
        CancellationReason.ASSISTANT_ROUTING_DENIED,
        "requires a human answer",
        "Do not retry this tool call in this turn.",
    )
    assert backend.tasks == []
    assert recorded_routes(tmp_path) == [RecordedRoute(route="refused")]


def test_the_exclusive_check_is_the_mark_not_the_name(tmp_path: Path) -> None:
    """Any tool's exclusive question for the assistant is refused; unmarked, the model answers."""
    conversation = conversation_on_disk(tmp_path)
    marked = Question.boolean("drop", "Drop the table?", exclusive=True)
    unmarked = Question.boolean("drop", "Drop the table?")
    tools = {"db": executor(AskingTool([marked])), "db2": executor(AskingTool([unmarked]))}
    requests = [ToolCallRequest(id="c1", name="db", arguments={})]
    requests.append(ToolCallRequest(id="c2", name="db2", arguments={}))
    for request in requests:
        conversation.stream.append(request)
    assistant = {"questions": {"drop": {"target": "assistant"}}}
    config = parse_tools_config(
        {"defaults": {"run": "unattended"}, "tools": {"db": assistant, "db2": assistant}}
    )
    backend = ScriptedInquiryBackend().respond(value=False)
    coordinator = ToolCoordinator(conversation, tools=tools, config=config, backend=backend)
    run(coordinator.run(requests))
    assert [task.tool_name for task in backend.tasks] == ["db2"]
    (cancelled,) = payloads(conversation, Cancelled)
    assert cancelled.reason is CancellationReason.ASSISTANT_ROUTING_DENIED


def test_the_user_may_lift_exclusive_and_route_it_to_the_model(tmp_path: Path) -> None:
    """``exclusive = false`` in configuration (RFD 049's override): then the assistant answers."""
    lifted = {"questions": {"answer": {"target": "assistant", "exclusive": False}}}
    backend = ScriptedInquiryBackend().respond(value=True)
    _, (response,) = _play(
        tmp_path, BOOLEAN, config=_config({"tools": {"ask_user": lifted}}), backend=backend
    )
    assert orjson.loads(response.content) == {"answer_type": "boolean", "answer": True}
    assert recorded_routes(tmp_path) == [RecordedRoute(route="model")]


# ------------------------------------------------------ its configuration


def test_it_runs_and_delivers_unattended_whatever_the_defaults_say(tmp_path: Path) -> None:
    """Built-in defaults merge under the user's: ``[defaults]`` asking does not reach ask_user."""
    config = _config({"defaults": {"run": "ask", "result": "ask"}})
    assert config.run_mode("ask_user") is RunMode.UNATTENDED
    assert config.result_mode("ask_user") is ResultMode.UNATTENDED
    assert config.run_mode("other") is RunMode.ASK
    prompter = ScriptedPrompter().answer(value=True)
    _, (response,) = _play(tmp_path, BOOLEAN, prompter=prompter, config=config)
    assert [type(prompt).__name__ for prompt in prompter.shown] == ["ShowQuestion"]
    assert not response.is_error


def test_a_field_the_user_sets_wins_and_the_rest_stay_the_builtins() -> None:
    """One field overridden (``run = "ask"``): the others keep the built-in's defaults."""
    config = _config(
        {
            "defaults": {"detached": "auto"},
            "tools": {"ask_user": {"run": "ask", "questions": {"answer": {"answer": True}}}},
        }
    )
    assert config.run_mode("ask_user") is RunMode.ASK
    assert config.result_mode("ask_user") is ResultMode.UNATTENDED
    assert config.detached("ask_user").tool is DetachedMode.DENY
    assert config.detached("ask_user").run is DetachedMode.AUTO  # not the built-in's to say
    assert config.question("ask_user", "answer").answer is not None
    assert config.enabled("ask_user")


def test_disabled_by_name_a_call_is_answered_as_for_a_tool_that_is_not_there(
    tmp_path: Path,
) -> None:
    """``enable = false``: the call is not run and the model is told the tool is not available."""
    prompter = ScriptedPrompter()
    config = _config({"tools": {"ask_user": {"enable": False}}})
    conversation, (response,) = _play(tmp_path, BOOLEAN, prompter=prompter, config=config)
    assert response.is_error
    assert response.content.startswith("Tool 'ask_user' is not available.")
    assert prompter.shown == []
    assert payloads(conversation, InquiryRequest) == []


SCENARIO = """
[[turns]]
message = "Go."
[[turns.cycles]]
calls = [{ tool = "ask_user", arguments = { question = "Ship it?", answer_type = "boolean" } }]
"""


def test_a_scenario_has_it_on_by_default_and_tells_the_model_of_it(tmp_path: Path) -> None:
    """Not declared, it is there: the model gets RFD 083's description and the argument schema."""
    scenario = load_scenario(write(tmp_path / "scenario.toml", SCENARIO))
    (definition,) = scenario.definitions
    assert definition.name == "ask_user"
    assert definition.description == ASK_USER_DESCRIPTION
    assert definition.parameters == dict(ASK_USER_PARAMETERS)
    assert "When in doubt, answer the user's original question directly" in ASK_USER_DESCRIPTION
    assert "Do not use `ask_user` to collect secrets" in ASK_USER_DESCRIPTION
    schema = ASK_USER_PARAMETERS["properties"]
    assert schema["default"]["type"] == ["boolean", "string"]  # provider-valid: no "any"
    assert schema["answer_type"]["enum"] == ["boolean", "select", "text"]
    assert ASK_USER_PARAMETERS["required"] == ["question"]
    assert scenario.hidden_tools == frozenset({"ask_user"})
    assert scenario.config.run_mode("ask_user") is RunMode.UNATTENDED


def test_a_scenario_turning_it_off_plays_the_call_as_unavailable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[tools.ask_user] enable = false``: not told to the model; its call fails, not asked."""
    text = "[tools.ask_user]\nenable = false\n" + SCENARIO
    scenario = load_scenario(write(tmp_path / "scenario.toml", text))
    assert scenario.definitions == ()
    status, out, _ = cli(
        "run",
        tmp_path / "scenario.toml",
        "--no-interactive",
        "--conversation",
        tmp_path / "conversation",
        capsys=capsys,
    )
    assert status == 1
    assert "<- ask_user unavailable" in out
    assert "? the assistant asks" not in out


#: A local tool asking "Force push?", marked to be asked afresh each time, twice in a turn.
FORCE = """
import json, sys
answers = json.load(sys.stdin)["answers"]
if "force" not in answers:
    question = {"id": "force", "text": "Force push?", "answer_type": {"type": "boolean"},
                "persistence": "none"}
    print(json.dumps({"type": "needs_input", "question": question}))
    sys.exit(0)
print(json.dumps({"type": "success", "content": f"force={answers['force']}"}))
"""


def test_a_local_tool_marks_a_question_to_be_asked_afresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local tool's "persistence": "none": a remembered answer does not answer the next call."""
    scenario = local_tools(tmp_path, {"git": FORCE}, '{ tool = "git" }, { tool = "git" }')
    answers = write(
        tmp_path / "answers.toml",
        "[[answers]]\nvalue = true\nremember = true\n[[answers]]\nvalue = false\n",
    )
    directory = tmp_path / "conversation"
    status, _, _ = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 0
    events = orjson.loads((directory / "events.json").read_bytes())
    recorded = [e["question"] for e in events if e["type"] == "inquiry_request"]
    assert [question["persistence"] for question in recorded] == ["none", "none"]
    assert recorded_routes(directory) == [RecordedRoute(route="answers_file")] * 2


def test_a_local_tool_with_an_unknown_persistence_fails_its_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anything but "none" or "turn" is a malformed question: the call fails saying so."""
    scenario = local_tools(
        tmp_path, {"git": FORCE.replace('"none"', '"forever"')}, '{ tool = "git" }'
    )
    status, out, _ = cli(
        "run", scenario, "--no-interactive", "--conversation", tmp_path / "c", capsys=capsys
    )
    assert status == 1
    assert 'question.persistence must be "none" or "turn", not \'forever\'' in out


def test_a_scenario_may_run_it_under_another_name_and_its_defaults_follow(
    tmp_path: Path,
) -> None:
    """``[tools.ask] builtin = "ask_user"``: unattended and hidden too (JP refuses aliases)."""
    text = '[defaults]\nrun = "ask"\n[tools.ask]\nbuiltin = "ask_user"\n' + SCENARIO
    scenario = load_scenario(write(tmp_path / "scenario.toml", text))
    assert scenario.config.run_mode("ask") is RunMode.UNATTENDED
    assert scenario.config.detached("ask").tool is DetachedMode.DENY
    assert scenario.hidden_tools == frozenset({"ask", "ask_user"})
