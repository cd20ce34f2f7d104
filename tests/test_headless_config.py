"""Configuring what happens with nobody at the terminal, and resolving whether anybody is.

The detached policy's configuration (RFD 049: scalar or table, per tool and
in the defaults, resolved in its order, ``deny`` last), ``result`` and
``exclusive``; promptability resolved once (RFD 104: the flags, the
environment, ``/dev/tty``); and ``exclusive`` as tools set it (the local-tool
protocol, an MCP form, ``ask_user``) and as the conversation records it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from coordinator_harness import payloads
from run_helpers import cli, local_tools, write

from coordinator import ConfigError, load_conversation
from coordinator.adapters import Promptability, PromptabilityError, resolve_promptability
from coordinator.adapters._builtins import AskUser
from coordinator.adapters.mcp._exchange import Request
from coordinator.adapters.mcp._forms import FormFill, UrlFill, fill_for
from coordinator.driver._config import parse_tools_config
from coordinator.driver._executors import Ask
from coordinator.wire._codec import WireError, structure_question, unstructure_question
from machines import (
    AnswerType,
    Cancelled,
    DetachedMode,
    DetachedPolicy,
    InquiryQuestion,
    InquiryRequest,
    Question,
    ResultMode,
)

if TYPE_CHECKING:
    from pathlib import Path

AUTO, DEFAULTS, DENY = DetachedMode.AUTO, DetachedMode.DEFAULTS, DetachedMode.DENY

# ------------------------------------------------------------ the policy


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({}, DetachedPolicy(), id="nothing-configured-is-deny"),
        pytest.param(
            {"defaults": {"detached": "auto"}},
            DetachedPolicy(run=AUTO, deliver=AUTO, tool=AUTO),
            id="defaults-scalar",
        ),
        pytest.param(
            {"defaults": {"detached": {"tool": "defaults"}}},
            DetachedPolicy(tool=DEFAULTS),
            id="defaults-per-kind-rest-deny",
        ),
        pytest.param(
            {"defaults": {"detached": "auto"}, "tools": {"fs": {"detached": "defaults"}}},
            DetachedPolicy(run=DEFAULTS, deliver=DEFAULTS, tool=DEFAULTS),
            id="tool-scalar-over-defaults",
        ),
        pytest.param(
            {
                "defaults": {"detached": {"run": "auto", "tool": "defaults"}},
                "tools": {"fs": {"detached": {"tool": "auto"}}},
            },
            DetachedPolicy(run=AUTO, deliver=DENY, tool=AUTO),
            id="tool-kind-over-defaults-kind-over-deny",
        ),
        pytest.param(
            {"defaults": {"detached": "auto"}, "tools": {"fs": {"detached": {"run": "deny"}}}},
            DetachedPolicy(run=DENY, deliver=AUTO, tool=AUTO),
            id="tool-kind-over-defaults-scalar",
        ),
    ],
)
def test_the_detached_policy_resolves_in_rfd_049s_order(
    data: dict[str, Any], expected: DetachedPolicy
) -> None:
    """tools.X.detached.kind, tools.X.detached, defaults.detached.kind, defaults.detached, deny."""
    assert parse_tools_config(data).detached("fs") == expected
    assert parse_tools_config(data).detached("other") == parse_tools_config(
        {"defaults": data.get("defaults", {})}
    ).detached("other")


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        (
            {"tools": {"fs": {"detached": {"deliver": "park"}}}},
            "tools.fs.detached.deliver",
            "a delivery cannot be parked",
        ),
        ({"defaults": {"prompt_timeout": 30}}, "defaults.prompt_timeout", "a duration"),
        ({"tools": {"fs": {"prompt_timeout": "soon"}}}, "tools.fs.prompt_timeout", '"soon"'),
        (
            {"tools": {"fs": {"questions": {"q": {"prompt_timeout": "0s"}}}}},
            "tools.fs.questions.q.prompt_timeout",
            "more than 0",
        ),
        ({"defaults": {"on_prompt_timeout": "wait"}}, "defaults.on_prompt_timeout", "got 'wait'"),
        ({"defaults": {"detached": "always"}}, "defaults.detached", "got 'always'"),
        (
            {"defaults": {"detached": {"question": "auto"}}},
            "defaults.detached.question",
            "unknown",
        ),
        ({"defaults": {"detached": 1}}, "defaults.detached", "got an integer"),
        ({"tools": {"fs": {"result": "never"}}}, "tools.fs.result", "got 'never'"),
        ({"tools": {"fs": {"questions": {"q": {"exclusive": "yes"}}}}}, "exclusive", "true or"),
    ],
)
def test_a_bad_policy_names_the_key_and_what_was_expected(
    data: dict[str, Any], key: str, problem: str
) -> None:
    """A mode, a duration or a timeout's action this build does not take is refused, named."""
    with pytest.raises(ConfigError) as error:
        parse_tools_config(data, origin="cfg.toml")
    assert key in error.value.key
    assert problem in str(error.value)


def test_result_mode_and_exclusive_are_configured_per_tool_and_question() -> None:
    """result: unattended unless said; exclusive overrides the tool's mark, and only if given."""
    config = parse_tools_config(
        {
            "defaults": {"result": "ask"},
            "tools": {
                "fs": {"result": "unattended", "questions": {"a": {"exclusive": False}}},
                "rm": {"questions": {"b": {"exclusive": True}}},
            },
        }
    )
    assert config.result_mode("fs") is ResultMode.UNATTENDED
    assert config.result_mode("rm") is ResultMode.ASK
    assert parse_tools_config({}).result_mode("fs") is ResultMode.UNATTENDED
    marked = Question.boolean("a", "A?", exclusive=True)
    assert config.asked("fs", marked).exclusive is False
    assert config.asked("rm", Question.boolean("b", "B?")).exclusive is True
    assert config.asked("rm", marked) is marked  # not configured: the tool's mark stands


# ------------------------------------------------------------ promptability


def test_no_interactive_and_the_variables_make_a_run_not_promptable() -> None:
    """--no-interactive, INQUIRY_NONINTERACTIVE or JP_NONINTERACTIVE (1 or true): nobody."""
    assert resolve_promptability(False, {}) == Promptability(
        promptable=False, why="--no-interactive"
    )
    for name in ("INQUIRY_NONINTERACTIVE", "JP_NONINTERACTIVE"):
        for value in ("1", "true", "TRUE"):
            resolved = resolve_promptability(None, {name: value})
            assert resolved == Promptability(promptable=False, why=f"{name}={value}")


def test_the_variables_saying_no_leave_it_to_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0, false or empty say nothing: /dev/tty decides (here: a pseudo-terminal opens)."""
    leader, follower = os.openpty()
    try:
        monkeypatch.setattr(
            "coordinator.adapters._promptability.TERMINAL_DEVICE", os.ttyname(follower)
        )
        for value in ("0", "false", ""):
            resolved = resolve_promptability(None, {"JP_NONINTERACTIVE": value})
            assert resolved.promptable, resolved
        assert resolve_promptability(True, {}).promptable
        # The command line outranks the environment: asked for, a person is asked.
        assert resolve_promptability(True, {"JP_NONINTERACTIVE": "1"}).promptable
    finally:
        os.close(leader)
        os.close(follower)


def test_interactive_without_a_terminal_and_a_bad_variable_are_errors() -> None:
    """--interactive asserts a person is there; a variable saying neither yes nor no is refused."""
    with pytest.raises(PromptabilityError, match=r"--interactive: no controlling terminal \("):
        resolve_promptability(True, {})
    with pytest.raises(PromptabilityError, match="JP_NONINTERACTIVE='yes': expected 1 or true"):
        resolve_promptability(None, {"JP_NONINTERACTIVE": "yes"})
    assert resolve_promptability(None, {}) == Promptability(
        promptable=False,
        why="no controlling terminal (/nonexistent/inquiry-tests-have-no-controlling-terminal: "
        "No such file or directory)",
    )


def test_both_interactive_flags_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--interactive with --no-interactive (or their aliases): exit 2, the two named."""
    for pair in (("--interactive", "--no-interactive"), ("--tty", "--non-interactive")):
        with pytest.raises(SystemExit) as stopped:
            cli("run", "s.toml", "-c", "d", *pair, capsys=capsys)
        assert stopped.value.code == 2
        assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_variable_stops_the_run_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """INQUIRY_NONINTERACTIVE=maybe: exit 2 naming it, and no conversation is made."""
    monkeypatch.setenv("INQUIRY_NONINTERACTIVE", "maybe")
    scenario = write(tmp_path / "s.toml", '[[turns]]\nmessage = "Hi."\n')
    status, _, err = cli("run", scenario, "-c", tmp_path / "c", capsys=capsys)
    assert status == 2
    assert "INQUIRY_NONINTERACTIVE='maybe'" in err
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------ exclusive


def test_a_local_tool_marks_its_question_exclusive_and_the_record_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool's "exclusive": true: refused under auto (not sent to the model), recorded as true."""
    asks = """
import json, sys
json.load(sys.stdin)
question = {"id": "wipe", "text": "Wipe the database?", "answer_type": {"type": "boolean"},
            "exclusive": True}
print(json.dumps({"type": "needs_input", "question": question}))
"""
    scenario = local_tools(tmp_path, {"db": asks}, '{ tool = "db" }', extra=_AUTO)
    answers = write(tmp_path / "answers.toml", "[[model]]\nvalue = true\n")
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 1
    assert "note: entries of the answers file no prompt used: model[0]" in out
    conversation = load_conversation(directory)
    (request,) = payloads(conversation, InquiryRequest)
    assert request.question.exclusive is True
    (cancelled,) = payloads(conversation, Cancelled)
    assert cancelled.reason.as_str() == "no_prompt_backend"
    events = orjson.loads((directory / "events.json").read_bytes())
    (recorded,) = [e["question"] for e in events if e["type"] == "inquiry_request"]
    assert recorded["exclusive"] is True


#: A scenario's extra TOML: nobody to ask, and the detached policy auto for every kind.
_AUTO = '[defaults]\ndetached = "auto"\n'


def test_exclusive_is_recorded_only_when_true_and_read_back_as_written() -> None:
    """Absent is no mark; a file's false is kept as false; true is written and read as true."""
    plain = Question.boolean("q", "Q?")
    assert "exclusive" not in unstructure_question(plain)
    assert InquiryQuestion.from_question(plain).exclusive is None
    marked = Question.boolean("q", "Q?", exclusive=True)
    assert unstructure_question(marked)["exclusive"] is True
    assert structure_question(unstructure_question(marked)) == marked
    assert structure_question({**unstructure_question(plain), "exclusive": None}) == plain
    with pytest.raises(WireError, match="exclusive"):
        structure_question({**unstructure_question(plain), "exclusive": "yes"})
    recorded = InquiryQuestion(text="Q?", answer_type=AnswerType.boolean(), exclusive=False)
    assert recorded.as_asked("q").exclusive is False


def test_ask_user_and_a_url_request_are_a_persons_only() -> None:
    """The assistant asking the user is never answered by the model; nor is a browser link."""
    asked = _run(AskUser().run({"question": "Ship it?", "answer_type": "boolean"}, {}))
    assert isinstance(asked, Ask)
    assert asked.question.exclusive
    url = fill_for(
        Request(key="k", mode="url", message="Sign in", url="https://x.example/a"),
        server="s",
        tool="t",
    )
    assert isinstance(url, UrlFill)
    question = url.question()
    assert question is not None
    assert question.exclusive


@pytest.mark.parametrize("marked", [True, False])
def test_an_mcp_form_marked_exclusive_asks_exclusive_questions(marked: bool) -> None:
    """A form schema's "exclusive": true marks its decision and every field; absent, none."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    if marked:
        schema["exclusive"] = True
    form = fill_for(
        Request(key="k", mode="form", message="Who?", schema=schema), server="s", tool="t"
    )
    assert isinstance(form, FormFill)
    decision = form.question()
    assert decision is not None
    assert decision.exclusive is marked
    form.take("accept")
    field = form.question()
    assert field is not None
    assert field.exclusive is marked


def _run(work: Any) -> Any:
    import asyncio  # noqa: PLC0415 - only these two tests run a coroutine

    return asyncio.run(work)


# ------------------------------------------------------- who decided, shown

_SUCCEEDS = 'print(\'{"type": "success", "content": "done"}\')\n'


def test_an_answers_file_withholds_a_result_recorded_as_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[[deliveries]] reply n: withheld; the response records the answers file as who decided."""
    scenario = local_tools(tmp_path, {"build": _SUCCEEDS}, '{ tool = "build" }')
    scenario.write_text(
        scenario.read_text().replace(
            'run = "unattended"\n', 'run = "unattended"\nresult = "ask"\n'
        )
    )
    answers = write(
        tmp_path / "answers.toml", '[[deliveries]]\nreply = "n"\n[[deliveries]]\nreply = "y"\n'
    )
    directory = tmp_path / "conversation"
    status, out, _ = cli(
        "run", scenario, "--answers", answers, "--conversation", directory, capsys=capsys
    )
    assert status == 0
    assert "! result of build: withheld by the answers file" in out
    assert "note: entries of the answers file no prompt used: deliveries[1]" in out
    status, text, _ = cli("check", directory, capsys=capsys)
    assert "  delivery decided by: 1 answers file\n" in text
    status, markdown, _ = cli("export", directory, capsys=capsys)
    assert "_Delivery of the result decided by: `answers file`._" in markdown


def test_check_and_export_show_who_decided_each_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each response's route, as check counts it and export notes it; none for another writer's."""
    asks = """
import json, sys
answers = json.load(sys.stdin)["answers"]
if "go" not in answers:
    question = {"id": "go", "text": "Go?", "answer_type": {"type": "boolean"}, "default": True}
    print(json.dumps({"type": "needs_input", "question": question}))
else:
    print(json.dumps({"type": "success", "content": "went"}))
"""
    scenario = local_tools(
        tmp_path, {"a": asks}, '{ tool = "a" }', extra='[defaults]\ndetached = "defaults"\n'
    )
    directory = tmp_path / "conversation"
    status, _, _ = cli(
        "run", scenario, "--no-interactive", "--conversation", directory, capsys=capsys
    )
    assert status == 0
    _, text, _ = cli("check", directory, capsys=capsys)
    assert "  decided by: 1 default (detached policy: defaults)\n" in text
    _, summary, _ = cli("check", directory, "--json", capsys=capsys)
    assert orjson.loads(summary)["inquiry_routes"] == {"default (detached policy: defaults)": 1}
    _, markdown, _ = cli("export", directory, capsys=capsys)
    assert "Answer: true\n\n_Decided by: `default (detached policy: defaults)`._" in markdown
