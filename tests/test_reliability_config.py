"""Bad input beyond the stream: configuration, scenarios, answers and local-tool output.

A valid configuration, scenario and answers file (the tour's) with values of
the wrong type put anywhere is either read or refused with a
:class:`ConfigError` naming the file and the key: never another exception.
A file nested too deeply for the TOML parser is refused the same way. A local
tool's output, however malformed, becomes a completed call or a question the
stream can hold and save; never an exception.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import math
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_helpers import TOUR, TOUR_ANSWERS, TOUR_SCENARIO

from coordinator import (
    ConfigError,
    Conversation,
    EventEntry,
    LocalTool,
    LocalToolExecutor,
    load_conversation,
    load_tools_config,
    parse_tools_config,
    save_conversation,
)
from coordinator.cli._answer_script import load_answer_script, parse_answer_script
from coordinator.cli._scenario import load_scenario, parse_scenario
from coordinator.driver._executors import Completed, NeedsInput
from machines import InquiryQuestion, InquiryRequest, ToolCallRequest, ToolCallResponse

if TYPE_CHECKING:
    from collections.abc import Callable

_WRONG: list[Any] = [
    None,
    True,
    0,
    -3,
    2.5,
    float("nan"),
    float("inf"),
    "",
    "x",
    "sometimes",
    [],
    [1, "a"],
    {},
    {"unexpected": 1},
    dt.date(2026, 1, 1),
    dt.datetime(2026, 1, 1, 9, 30, tzinfo=dt.UTC),
    dt.time(9, 30),
]
CONFIG: dict[str, Any] = {
    "defaults": {"run": "ask"},
    "tools": {
        "fs": {"run": "unattended", "questions": {"apply": {"target": "user", "answer": True}}},
        "ssh": {"questions": {"token": {"target": "assistant"}}},
    },
}


def _places(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a parsed TOML document."""
    found: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = (
            item.items()
            if isinstance(item, dict)
            else enumerate(item)
            if isinstance(item, list)
            else ()
        )
        for key, child in pairs:
            found.append((item, key))
            stack.append(child)
    return found


def _copy(valid: Any) -> Any:
    """A deep copy of plain JSON-like data."""
    return orjson.loads(orjson.dumps(valid))


def _check_refused_or_read(
    parse: Callable[[dict[str, Any]], object], data: dict[str, Any]
) -> None:
    """``data`` parses, or is refused with a one-line ConfigError naming the file and a key."""
    try:
        parse(data)
    except ConfigError as error:
        refused = error
    else:
        return
    assert refused.origin == "the.toml"
    assert refused.key
    assert refused.problem
    assert str(refused) == f"the.toml: {refused.key}: {refused.problem}"
    assert "\n" not in str(refused)


@st.composite
def _mutated(draw: st.DrawFn, valid: dict[str, Any]) -> dict[str, Any]:
    """``valid`` with one to three values of the wrong type (or misspelt keys) put in."""
    data: dict[str, Any] = _copy(valid)
    for _ in range(draw(st.integers(1, 3))):
        places = _places(data)
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        if draw(st.integers(0, 4)) == 0 and isinstance(container[key], dict):
            container[key]["misspelt_key"] = copy.deepcopy(draw(st.sampled_from(_WRONG)))
        else:
            container[key] = copy.deepcopy(draw(st.sampled_from(_WRONG)))
    return data


FUZZ = settings(max_examples=examples(150))


@FUZZ
@given(data=_mutated(CONFIG))
def test_a_misconfigured_tools_config_is_read_or_refused_by_key(data: dict[str, Any]) -> None:
    """Wrong types anywhere in a tools configuration: read, or a ConfigError naming the key."""
    _check_refused_or_read(lambda d: parse_tools_config(d, origin="the.toml"), data)


_SCENARIO: dict[str, Any] = tomllib.loads(TOUR_SCENARIO.read_text())
_ANSWERS: dict[str, Any] = tomllib.loads(TOUR_ANSWERS.read_text())


@FUZZ
@given(data=_mutated(_SCENARIO))
def test_a_misconfigured_scenario_is_read_or_refused_by_key(data: dict[str, Any]) -> None:
    """Wrong types anywhere in the tour's scenario: read, or a ConfigError naming the key."""
    _check_refused_or_read(lambda d: parse_scenario(d, origin="the.toml", directory=TOUR), data)


@FUZZ
@given(data=_mutated(_ANSWERS))
def test_a_misconfigured_answers_file_is_read_or_refused_by_key(data: dict[str, Any]) -> None:
    """Wrong types anywhere in the tour's answers: read, or a ConfigError naming the key."""
    _check_refused_or_read(lambda d: parse_answer_script(d, origin="the.toml"), data)


@pytest.mark.parametrize("load", [load_tools_config, load_scenario, load_answer_script])
@pytest.mark.parametrize("nesting", ["[" * 2000 + "]" * 2000, "{a = " * 2000 + "1" + "}" * 2000])
def test_a_file_nested_too_deeply_for_toml_is_refused_by_name(
    tmp_path: Path, load: Callable[[Path], object], nesting: str
) -> None:
    """A TOML file nested past what the parser can read is a ConfigError, not a RecursionError."""
    path = tmp_path / "deep.toml"
    path.write_text(f"value = {nesting}\n")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(caught.value) == f"{path}: (file): is nested too deeply to read"


# ----------------------------------------------------------- local-tool output

_QUESTION: dict[str, Any] = {
    "id": "apply",
    "text": "Apply?",
    "pre_amble": "--- a\n+++ b",
    "answer_type": {"type": "select", "options": ["yes", {"value": "no", "description": "d"}]},
    "default": "yes",
}
_OUTCOMES: list[dict[str, Any]] = [
    {"type": "success", "content": "done"},
    {"type": "error", "message": "nope", "trace": ["a", "b"], "transient": False},
    {"type": "needs_input", "question": _QUESTION},
    {"type": "needs_input", "question": {**_QUESTION, "answer_type": "Boolean", "default": None}},
]
_EXECUTOR = LocalToolExecutor(LocalTool(name="demo", command=["true"]), root=Path.cwd())
_CALL = ToolCallRequest(id="call_1", name="demo", arguments={})


@st.composite
def _printed(draw: st.DrawFn) -> str:
    """What a local tool prints: an outcome, mutated, maybe wrapped in noise."""
    outcome = _mutated_outcome(draw, draw(st.sampled_from(_OUTCOMES)))
    text = orjson.dumps(outcome).decode()
    return draw(st.sampled_from(["{}", "  {}\n", "{}\ntrailing", "\ufffd{}"])).format(text)


def _mutated_outcome(draw: st.DrawFn, outcome: dict[str, Any]) -> Any:
    data = _copy(outcome)
    for _ in range(draw(st.integers(0, 3))):
        places = _places(data)
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        container[key] = copy.deepcopy(draw(st.sampled_from([v for v in _WRONG if _json_safe(v)])))
    return data


def _json_safe(value: object) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return not isinstance(value, float) or math.isfinite(value)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(stdout=_printed(), returncode=st.sampled_from([0, 1]))
def test_malformed_local_tool_output_completes_or_asks_a_recordable_question(
    stdout: str, returncode: int
) -> None:
    """Any output: a completed call, or a question that can be recorded and saved; no exception."""
    result = _EXECUTOR._outcome(_CALL, {}, stdout, "", returncode)
    if isinstance(result, Completed):
        if result.is_error:
            assert isinstance(orjson.loads(result.content)["message"], str)
        return
    assert isinstance(result, NeedsInput)
    conversation = Conversation.new()
    question = InquiryQuestion.from_question(result.question)
    conversation.stream.append(
        InquiryRequest(id="call_1.q.1", source=result.source, question=question)
    )
    with tempfile.TemporaryDirectory(prefix="inquiry-tool-output-") as directory:
        save_conversation(conversation, directory)


def test_a_local_tool_printing_bytes_that_are_not_text_completes(tmp_path: Path) -> None:
    """Output that is not UTF-8 (NULs, stray bytes) is raw output, recorded and saved."""
    script = tmp_path / "tool.py"
    script.write_text("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00 not \\xc3 utf-8')\n")
    tool = LocalTool(name="demo", command=[sys.executable, str(script)])
    result = asyncio.run(LocalToolExecutor(tool, root=tmp_path).execute(_CALL, {}))
    assert result == Completed(content="\ufffd\ufffd\x00 not \ufffd utf-8")
    conversation = Conversation.new()
    conversation.stream.append(
        ToolCallResponse(id="call_1", content=result.content, is_error=False)
    )
    save_conversation(conversation, tmp_path / "conversation")
    (entry,) = load_conversation(tmp_path / "conversation").stream
    assert isinstance(entry, EventEntry)
    assert entry.payload == ToolCallResponse(id="call_1", content=result.content, is_error=False)
