"""The built-in tools and the tool configuration file, as an embedder meets them."""

from __future__ import annotations

import datetime as dt
import gc
import re
import weakref
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from coordinator_harness import UNATTENDED, conversation_on_disk, payloads, run

from coordinator import (
    ConfigError,
    ToolCoordinator,
    ToolsConfig,
    builtin_executors,
    load_tools_config,
    parse_tools_config,
)
from coordinator.adapters.providers import ANSWER_INQUIRY_TOOL
from coordinator.driver import QuestionConfig, ToolConfig
from coordinator.driver._toml_fields import DEEPEST_JSON
from machines import (
    CachedAnswer,
    InquiryFacts,
    InquiryRequest,
    Question,
    RecordError,
    RunMode,
    StaticAnswer,
    Target,
    ToolCallRequest,
    ToolCallResponse,
    TurnState,
)

if TYPE_CHECKING:
    from pathlib import Path

    from machines import JsonValue


def test_answer_inquiry_called_on_its_own_is_an_error(tmp_path: Path) -> None:
    """The model calling answer_inquiry outside an inquiry is told it cannot."""
    conversation = conversation_on_disk(tmp_path)
    request = ToolCallRequest(
        id="call_1", name=ANSWER_INQUIRY_TOOL.name, arguments={"answer": True}
    )
    conversation.stream.append(request)
    coordinator = ToolCoordinator(conversation, tools=builtin_executors(), config=UNATTENDED)
    (response,) = run(coordinator.run([request]))
    assert response.is_error
    assert "answer_inquiry" in response.content
    assert payloads(conversation, InquiryRequest) == []
    assert payloads(conversation, ToolCallResponse) == [response]


# ------------------------------------------------------------ configuration


def nested(levels: int) -> list[Any]:
    """An array nested ``levels`` deep: ``[]`` is one level."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_a_config_file_is_read(tmp_path: Path) -> None:
    """Defaults, per-tool run modes, targets and static answers."""
    path = tmp_path / "tools.toml"
    path.write_text(
        '[defaults]\nrun = "unattended"\n\n'
        '[tools.fs]\nrun = "ask"\n\n'
        '[tools.fs.questions.apply]\ntarget = "assistant"\nanswer = true\n'
    )
    config = load_tools_config(path)
    assert config.run_mode("fs") is RunMode.ASK
    assert config.run_mode("other") is RunMode.UNATTENDED
    assert config.question("fs", "apply").target is Target.ASSISTANT
    assert config.question("fs", "apply").answer == StaticAnswer(True)
    assert config.question("fs", "other").target is Target.USER


def test_each_question_is_given_the_facts_of_its_own_configuration() -> None:
    """Configurations made and dropped one after another (memory reused): each its own facts."""
    turn = TurnState()
    question = Question.boolean("q", "Apply?")
    for number in range(600):
        target = (Target.USER, Target.ASSISTANT)[number % 2]
        answer = StaticAnswer(number)
        config = ToolsConfig(
            tools={"fs": ToolConfig(questions={"q": QuestionConfig(target=target, answer=answer)})}
        )
        for terminal in (False, True):
            facts = config.facts("fs", question, terminal=terminal, turn=turn)
            assert facts == InquiryFacts(terminal=terminal, target=target, static_answer=answer)
        del config
        if number % 100 == 0:
            gc.collect()


def test_a_static_answer_is_not_kept_once_its_configuration_is_dropped() -> None:
    """The facts shared between questions go with their configuration (a secret's answer too)."""
    answer = StaticAnswer("hunter2")
    config = ToolsConfig(tools={"fs": ToolConfig(questions={"q": QuestionConfig(answer=answer)})})
    facts = config.facts("fs", Question.boolean("q", "Apply?"), terminal=False, turn=TurnState())
    assert facts.static_answer is answer
    gone = weakref.ref(answer)
    del answer, config, facts
    gc.collect()
    assert gone() is None


def test_a_questions_facts_carry_what_the_turn_remembered_and_check_the_terminal() -> None:
    """A remembered answer is in the facts; a terminal that is not a bool is refused."""
    turn = TurnState()
    question = Question.boolean("q", "Apply?")
    config = parse_tools_config({"tools": {"fs": {"questions": {"q": {"answer": True}}}}})
    assert config.facts("fs", question, terminal=True, turn=turn).cached_answer is None
    turn.remember_tool_answer("fs", question, value=False)
    facts = config.facts("fs", question, terminal=True, turn=turn)
    assert facts.cached_answer == CachedAnswer(False)
    assert facts.static_answer == StaticAnswer(True)
    with pytest.raises(RecordError, match=r"InquiryFacts\.terminal must be bool"):
        config.facts("fs", Question.boolean("other", "Sure?"), terminal=1, turn=turn)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({"default": {}}, "default", "unknown key (expected one of: defaults, tools)"),
        ({"defaults": {"run": "sometimes"}}, "defaults.run", "got 'sometimes' (expected one of:"),
        ({"defaults": {"run": True}}, "defaults.run", "got a boolean"),
        ({"tools": []}, "tools", "expected a table, got an array"),
        ({"tools": {"fs": {"runs": "ask"}}}, "tools.fs.runs", "unknown key"),
        (
            {"tools": {"fs": {"questions": {"apply": {"target": "model"}}}}},
            "tools.fs.questions.apply.target",
            "got 'model' (expected one of: 'user', 'assistant')",
        ),
        (
            {"tools": {"fs": {"questions": {"apply": {"answer": dt.date(2026, 1, 1)}}}}},
            "tools.fs.questions.apply.answer",
            "must be a JSON value, not a date",
        ),
        (
            {"tools": {"fs": {"questions": {"apply": {"answer": float("nan")}}}}},
            "tools.fs.questions.apply.answer",
            "finite number",
        ),
        # orjson writes integers from -2**63 to 2**64 - 1 and 254 levels of
        # nesting: anything past that would fail mid-run, when first written.
        (
            {"tools": {"fs": {"questions": {"apply": {"answer": 2**64}}}}},
            "tools.fs.questions.apply.answer",
            "it must lie from -9223372036854775808 to 18446744073709551615",
        ),
        (
            {"tools": {"fs": {"questions": {"apply": {"answer": {"n": [-(2**63) - 1]}}}}}},
            "tools.fs.questions.apply.answer.n[0]",
            "is an integer out of range",
        ),
        (
            {"tools": {"fs": {"questions": {"apply": {"answer": nested(DEEPEST_JSON + 1)}}}}},
            "tools.fs.questions.apply.answer",
            f"is nested too deeply: a JSON value may nest at most {DEEPEST_JSON} levels",
        ),
        ({"tools": {"": {"run": "ask"}}}, 'tools.""', "a tool name must not be empty"),
        (
            {"tools": {"fs": {"questions": {"": {"target": "user"}}}}},
            'tools.fs.questions.""',
            "a question id must not be empty",
        ),
    ],
)
def test_a_bad_config_names_the_key_and_what_was_expected(
    data: dict[str, Any], key: str, problem: str
) -> None:
    """Every mistake is an error naming where it is; nothing is silently ignored."""
    with pytest.raises(ConfigError) as caught:
        parse_tools_config(data, origin="tools.toml")
    assert caught.value.origin == "tools.toml"
    assert caught.value.key == key
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"tools.toml: {key}: ")


def _wrong(value: object) -> Any:
    """``value`` where the type checker would refuse it: what a caller without one passes."""
    return value


@pytest.mark.parametrize(
    ("build", "field", "expected"),
    [
        (lambda: QuestionConfig(target=_wrong("assistant")), "QuestionConfig.target", "Target"),
        (
            lambda: QuestionConfig(answer=_wrong("hunter2")),
            "QuestionConfig.answer",
            "StaticAnswer",
        ),
        (lambda: ToolConfig(run=_wrong("unattended")), "ToolConfig.run", "RunMode"),
        (
            lambda: ToolConfig(questions=_wrong({"q": {}})),
            "ToolConfig.questions['q']",
            "QuestionConfig",
        ),
        (
            lambda: ToolsConfig(tools=_wrong({"fs": ToolConfig(), 1: ToolConfig()})),
            "ToolsConfig.tools",
            "str",
        ),
        (lambda: ToolsConfig(default_run=_wrong("skip")), "ToolsConfig.default_run", "RunMode"),
        (
            lambda: InquiryFacts(terminal=True, target=_wrong("user")),
            "InquiryFacts.target",
            "Target",
        ),
        (lambda: InquiryFacts(terminal=_wrong("yes")), "InquiryFacts.terminal", "bool"),
    ],
)
def test_configuration_built_in_python_is_refused_when_a_field_has_the_wrong_type(
    build: Any, field: str, expected: str
) -> None:
    """A plain string where an enum belongs would match no routing rule: refused at once.

    The message names the class, the field and the expected type, never the value.
    """
    with pytest.raises(RecordError, match=re.escape(field) + ".* must be .*" + expected) as caught:
        build()
    assert "hunter2" not in str(caught.value)
    assert "assistant" not in str(caught.value)


def test_json_values_at_the_limits_are_read_and_can_be_written() -> None:
    """The largest values configuration accepts are ones orjson writes, inside an entry too."""
    answer: JsonValue = {"big": 2**64 - 1, "small": -(2**63), "deep": nested(DEEPEST_JSON - 1)}
    config = parse_tools_config({"tools": {"fs": {"questions": {"q": {"answer": answer}}}}})
    static = config.question("fs", "q").answer
    assert static == StaticAnswer(answer)
    # As events.json holds it: the array, the entry, then the value.
    orjson.dumps([{"answer": answer}])
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(2**64)  # the limits are orjson's: past them it refuses to write


@pytest.mark.parametrize("name", ["source", "inquiry_source", "asked_by"])
def test_the_source_of_a_question_cannot_be_configured(name: str) -> None:
    """Configuration decides who answers, never who asked."""
    data = {"tools": {"fs": {"questions": {"apply": {name: "assistant"}}}}}
    with pytest.raises(ConfigError) as caught:
        parse_tools_config(data, origin="tools.toml")
    assert caught.value.key == f"tools.fs.questions.apply.{name}"
    assert "cannot be configured" in caught.value.problem


def test_an_unreadable_config_file_is_named(tmp_path: Path) -> None:
    """A missing file and a file that is not TOML are told apart."""
    with pytest.raises(ConfigError, match="cannot be read"):
        load_tools_config(tmp_path / "absent.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[tools\n")
    with pytest.raises(ConfigError, match="is not valid TOML") as caught:
        load_tools_config(broken)
    assert caught.value.origin == str(broken)
