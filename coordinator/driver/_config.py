"""Tool and question configuration.

Per tool: how it may run (``run = "ask" | "unattended" | "skip"``), and per
question who answers it (``target = "user" | "assistant"``) and an optional
static ``answer``. In TOML::

    [defaults]
    run = "ask"

    [tools.fs_modify_file]
    run = "ask"

    [tools.fs_modify_file.questions.apply_changes]
    target = "user"
    answer = true

Configuration decides *who answers*, never *who asked*: the recorded source of
a question is fixed in code where a tool's result crosses the executor
boundary. A ``source`` (or similar) key is rejected with an error saying so,
as is every other key this build does not know, so a typo never silently
changes behaviour. So are an empty tool name or question id (nothing is ever
called or asked by one), and a static answer the conversation could not
record (an integer beyond 64 bits, nesting deeper than
:data:`~coordinator.driver._toml_fields.DEEPEST_JSON`): refused here rather than
mid-run. Errors name the file, the key and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from coordinator._errors import ConfigError
from coordinator.driver._toml_fields import (
    check_keys,
    choice,
    json_value,
    load_toml,
    name_key,
    table,
)
from machines import (
    CachedAnswer,
    InquiryFacts,
    Question,
    RunMode,
    StaticAnswer,
    Target,
    TurnState,
)
from machines.validators import mapping_of, of_type, optional_of_type

__all__ = [
    "QuestionConfig",
    "ToolConfig",
    "ToolsConfig",
    "load_tools_config",
    "parse_tools_config",
]

#: Keys someone might reach for to relabel who asked; provenance is not configurable.
_PROVENANCE_KEYS = frozenset({"source", "inquiry_source", "attribution", "asked_by", "author"})


@attrs.frozen(kw_only=True)
class QuestionConfig:
    """Who answers a question, and an answer given in advance.

    Built in Python, the three config classes check their fields' types (a
    :class:`~machines.RecordError` naming the class and field, never the
    value): ``target="assistant"`` where :class:`Target` belongs would
    otherwise match no routing rule and leave the question unanswered.
    """

    target: Target = attrs.field(default=Target.USER, validator=of_type(Target))
    answer: StaticAnswer | None = attrs.field(
        default=None, validator=optional_of_type(StaticAnswer)
    )


#: A question nothing configures (one value, shared: every question asked looks it up).
_NO_CONFIG = QuestionConfig()


@attrs.frozen(kw_only=True)
class ToolConfig:
    """How a tool may run, and its questions' configuration."""

    run: RunMode | None = attrs.field(default=None, validator=optional_of_type(RunMode))
    questions: Mapping[str, QuestionConfig] = attrs.field(
        factory=dict, validator=mapping_of(QuestionConfig)
    )


@attrs.frozen(kw_only=True)
class ToolsConfig:
    """Every tool's configuration, and the run mode of tools not listed."""

    tools: Mapping[str, ToolConfig] = attrs.field(factory=dict, validator=mapping_of(ToolConfig))
    default_run: RunMode = attrs.field(default=RunMode.ASK, validator=of_type(RunMode))

    def run_mode(self, tool_name: str) -> RunMode:
        """How ``tool_name`` may run."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.run is not None:
            return tool.run
        return self.default_run

    def question(self, tool_name: str, question_id: str) -> QuestionConfig:
        """The configuration of one question (defaults when none is given)."""
        tool = self.tools.get(tool_name)
        if tool is None:
            return _NO_CONFIG
        return tool.questions.get(question_id, _NO_CONFIG)

    def facts(
        self, tool_name: str, question: Question, *, terminal: bool, turn: TurnState
    ) -> InquiryFacts:
        """The facts the inquiry machine decides from, for ``question`` now."""
        config = self.question(tool_name, question.id)
        cached: CachedAnswer | None = turn.remembered_tool_answer(tool_name, question)
        return InquiryFacts(
            terminal=terminal,
            target=config.target,
            static_answer=config.answer,
            cached_answer=cached,
        )


def _check_keys(data: Mapping[str, Any], allowed: set[str], origin: str, key: str) -> None:
    # Checked first, so the error says why provenance keys are refused.
    for name in data:
        where = f"{key}.{name}" if key else name
        if name in _PROVENANCE_KEYS:
            raise ConfigError(
                origin,
                where,
                "the recorded source of a question cannot be configured: it is decided by "
                "the tool that asks (built-in tools declare it in code; local and MCP tools "
                "are always the tool itself)",
            )
    check_keys(data, origin, key, allowed=allowed)


def _enum(kind: type[RunMode | Target], value: object, origin: str, key: str) -> Any:
    return kind(choice(value, origin, key, [member.value for member in kind]))


def _question(value: object, origin: str, key: str) -> QuestionConfig:
    data = table(value, origin, key)
    _check_keys(data, {"target", "answer"}, origin, key)
    target = Target.USER
    if "target" in data:
        target = _enum(Target, data["target"], origin, f"{key}.target")
    answer = None
    if "answer" in data:
        answer = StaticAnswer(json_value(data["answer"], origin, f"{key}.answer"))
    # Whether the answer fits is the question's business, known only when it
    # is asked: a misfit is recorded as invalid_static_answer then.
    return QuestionConfig(target=target, answer=answer)


def _tool(value: object, origin: str, key: str, extra: set[str]) -> ToolConfig:
    data = table(value, origin, key)
    _check_keys(data, {"run", "questions", *extra}, origin, key)
    run = _enum(RunMode, data["run"], origin, f"{key}.run") if "run" in data else None
    questions = {
        name: _question(
            config, origin, name_key(origin, f"{key}.questions", name, what="a question id")
        )
        for name, config in table(data.get("questions", {}), origin, f"{key}.questions").items()
    }
    return ToolConfig(run=run, questions=questions)


def parse_tools_config(
    data: Mapping[str, Any],
    *,
    origin: str = "<config>",
    tool_keys: set[str] | frozenset[str] = frozenset(),
) -> ToolsConfig:
    """Read ``[defaults]`` and ``[tools.*]`` from parsed TOML.

    ``tool_keys`` names extra keys a tool table may carry for the caller (a
    scenario's ``command``, say); they are accepted here and ignored.
    """
    _check_keys(data, {"defaults", "tools"}, origin, "")
    extra = set(tool_keys)
    defaults = table(data.get("defaults", {}), origin, "defaults")
    _check_keys(defaults, {"run"}, origin, "defaults")
    default_run = RunMode.ASK
    if "run" in defaults:
        default_run = _enum(RunMode, defaults["run"], origin, "defaults.run")
    tools = {
        name: _tool(config, origin, name_key(origin, "tools", name, what="a tool name"), extra)
        for name, config in table(data.get("tools", {}), origin, "tools").items()
    }
    return ToolsConfig(tools=tools, default_run=default_run)


def load_tools_config(path: Path | str) -> ToolsConfig:
    """Load a TOML configuration file."""
    path = Path(path)
    return parse_tools_config(load_toml(path), origin=str(path))
