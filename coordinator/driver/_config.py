"""Tool and question configuration.

Per tool: whether it is there at all (``enable = false`` turns it off by
name: a call to it is answered as for a tool that is not there, as JP
answers a disabled one), how it may run (``run = "ask" | "unattended" | "skip"``), whether
its result reaches the model as it is or once a person confirms it
(``result = "unattended" | "ask"``), what happens to a prompt when nobody
can be asked (``detached``, RFD 049, and ours: ``park``), how long a prompt
on screen waits for the person (``prompt_timeout``, a duration; none: for
ever) and what then (``on_prompt_timeout = "close" | "detached"``), and per
question who answers it (``target = "user" | "assistant"``), an optional
static ``answer``, whether only a person may answer it (``exclusive``,
overriding the tool's own mark, both ways), and its own
``prompt_timeout``. In TOML::

    [defaults]
    run = "ask"
    detached = "deny"                # or a table: run, deliver, tool
    prompt_timeout = "10m"           # a prompt waits at most this long
    on_prompt_timeout = "detached"   # then the detached policy decides

    [tools.fs_modify_file]
    run = "ask"
    result = "ask"

    [tools.fs_modify_file.detached]
    run = "auto"
    tool = "defaults"

    [tools.fs_modify_file.questions.apply_changes]
    target = "user"
    answer = true
    exclusive = true
    prompt_timeout = "30s"

The detached policy is resolved per prompt kind in RFD 049's order, first
match wins: ``tools.<name>.detached.<kind>``, ``tools.<name>.detached``
(the scalar), ``defaults.detached.<kind>``, ``defaults.detached``, and
``deny``. (A level is a scalar or a table, never both, so the tool's level
is looked at before the defaults'.) ``park`` keeps a question or a
permission for an answer given later; a delivery cannot wait (its result is
held in memory only), so ``detached = "park"`` parks the other two kinds and
denies a delivery, and ``detached.deliver = "park"`` is refused, naming the
key (``docs/headless.md``).

``prompt_timeout`` is named so because a scenario's tool table has a
``timeout`` of its own (a local tool's execution limit, which never counts
the time a person takes to answer). It resolves question, then tool, then
``[defaults]``; ``on_prompt_timeout``, tool then ``[defaults]``, ``close``
unless given.

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
    boolean,
    check_keys,
    choice,
    duration,
    json_value,
    load_toml,
    name_key,
    table,
)
from machines import (
    CachedAnswer,
    DetachedMode,
    DetachedPolicy,
    InquiryFacts,
    OnTimeout,
    PromptKind,
    Question,
    ResultMode,
    RunMode,
    StaticAnswer,
    Target,
    TurnState,
)
from machines.validators import mapping_of, of_type, optional_of_type

__all__ = [
    "DetachedConfig",
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
    #: Only a person may answer it (``True``), or the model may after all
    #: (``False``), whatever the tool said; ``None`` keeps the tool's mark.
    exclusive: bool | None = attrs.field(default=None, validator=optional_of_type(bool))
    #: Seconds the question may stay on screen unanswered (``None``: its tool's, or the default).
    prompt_timeout: float | None = attrs.field(default=None, validator=optional_of_type(float))


@attrs.frozen(kw_only=True)
class DetachedConfig:
    """One level's ``detached`` setting: a mode per prompt kind, or ``None`` where it says none.

    ``detached = "auto"`` sets all three; the table form sets those it names.
    """

    run: DetachedMode | None = attrs.field(default=None, validator=optional_of_type(DetachedMode))
    deliver: DetachedMode | None = attrs.field(
        default=None, validator=optional_of_type(DetachedMode)
    )
    tool: DetachedMode | None = attrs.field(default=None, validator=optional_of_type(DetachedMode))

    def mode(self, kind: PromptKind) -> DetachedMode | None:
        """The mode this level sets for ``kind``, if it sets one."""
        if kind is PromptKind.RUN:
            return self.run
        if kind is PromptKind.DELIVER:
            return self.deliver
        return self.tool


#: A level that sets nothing.
_NO_DETACHED = DetachedConfig()


def _policy(*levels: DetachedConfig) -> DetachedPolicy:
    """Each kind's mode from the first of ``levels`` that sets it, else ``deny`` (RFD 049)."""

    def resolved(kind: PromptKind) -> DetachedMode:
        for level in levels:
            mode = level.mode(kind)
            if mode is not None:
                return mode
        return DetachedMode.DENY

    return DetachedPolicy(
        run=resolved(PromptKind.RUN),
        deliver=resolved(PromptKind.DELIVER),
        tool=resolved(PromptKind.TOOL),
    )


# attrs makes these before it runs the validators: a field of the wrong type
# (configuration built in Python) is left to them, to refuse with their words.


def _resolved_policies(config: ToolsConfig) -> Mapping[str, DetachedPolicy]:
    defaults = _default_level(config)
    return {
        name: _policy(tool.detached, defaults)
        for name, tool in config.tools.items()
        if isinstance(tool, ToolConfig) and isinstance(tool.detached, DetachedConfig)
    }


def _default_policy(config: ToolsConfig) -> DetachedPolicy:
    return _policy(_default_level(config))


def _default_level(config: ToolsConfig) -> DetachedConfig:
    defaults = config.default_detached
    return defaults if isinstance(defaults, DetachedConfig) else _NO_DETACHED


#: A question nothing configures (one value, shared: every question asked looks it up).
_NO_CONFIG = QuestionConfig()


@attrs.frozen(kw_only=True)
class ToolConfig:
    """Whether a tool is on, how it may run, and its questions' configuration.

    ``None`` in a field is "not said here": the defaults (or a built-in's
    own, merged under) decide.
    """

    run: RunMode | None = attrs.field(default=None, validator=optional_of_type(RunMode))
    result: ResultMode | None = attrs.field(default=None, validator=optional_of_type(ResultMode))
    detached: DetachedConfig = attrs.field(default=_NO_DETACHED, validator=of_type(DetachedConfig))
    questions: Mapping[str, QuestionConfig] = attrs.field(
        factory=dict, validator=mapping_of(QuestionConfig)
    )
    #: ``False`` turns the tool off by name; ``None`` (unsaid) and ``True`` leave it on.
    enable: bool | None = attrs.field(default=None, validator=optional_of_type(bool))
    #: Seconds a prompt of the tool may stay on screen unanswered (``None``: the default).
    prompt_timeout: float | None = attrs.field(default=None, validator=optional_of_type(float))
    on_prompt_timeout: OnTimeout | None = attrs.field(
        default=None, validator=optional_of_type(OnTimeout)
    )


@attrs.frozen(kw_only=True)
class ToolsConfig:
    """Every tool's configuration, and the defaults of tools that leave a setting out."""

    tools: Mapping[str, ToolConfig] = attrs.field(factory=dict, validator=mapping_of(ToolConfig))
    default_run: RunMode = attrs.field(default=RunMode.ASK, validator=of_type(RunMode))
    default_result: ResultMode = attrs.field(
        default=ResultMode.UNATTENDED, validator=of_type(ResultMode)
    )
    default_detached: DetachedConfig = attrs.field(
        default=_NO_DETACHED, validator=of_type(DetachedConfig)
    )
    #: Seconds a prompt may stay on screen unanswered; ``None``: for ever.
    default_prompt_timeout: float | None = attrs.field(
        default=None, validator=optional_of_type(float)
    )
    default_on_prompt_timeout: OnTimeout = attrs.field(
        default=OnTimeout.CLOSE, validator=of_type(OnTimeout)
    )
    # Resolved once, as the configuration is made (it is frozen): each listed
    # tool's policy, and the one every other tool has. Every call and every
    # question asks for its tool's, which would otherwise be resolved anew.
    _policies: Mapping[str, DetachedPolicy] = attrs.field(
        init=False,
        repr=False,
        eq=False,
        default=attrs.Factory(_resolved_policies, takes_self=True),
    )
    _default_policy: DetachedPolicy = attrs.field(
        init=False, repr=False, eq=False, default=attrs.Factory(_default_policy, takes_self=True)
    )

    def enabled(self, tool_name: str) -> bool:
        """Whether ``tool_name`` is on (every tool is, unless its ``enable`` is false)."""
        tool = self.tools.get(tool_name)
        return tool is None or tool.enable is not False

    def run_mode(self, tool_name: str) -> RunMode:
        """How ``tool_name`` may run."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.run is not None:
            return tool.run
        return self.default_run

    def result_mode(self, tool_name: str) -> ResultMode:
        """Whether ``tool_name``'s result reaches the model as it is, or once a person confirms."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.result is not None:
            return tool.result
        return self.default_result

    def detached(self, tool_name: str) -> DetachedPolicy:
        """``tool_name``'s detached policy, each kind resolved in RFD 049's order."""
        return self._policies.get(tool_name, self._default_policy)

    def prompt_timeout(self, tool_name: str, question_id: str | None = None) -> float | None:
        """Seconds a prompt of ``tool_name`` may stay on screen (its question ``question_id``'s).

        The question's, else the tool's, else the default; ``None``: it waits for ever.
        """
        tool = self.tools.get(tool_name)
        if tool is not None:
            if question_id is not None:
                question = tool.questions.get(question_id)
                if question is not None and question.prompt_timeout is not None:
                    return question.prompt_timeout
            if tool.prompt_timeout is not None:
                return tool.prompt_timeout
        return self.default_prompt_timeout

    def on_timeout(self, tool_name: str) -> OnTimeout:
        """What a prompt of ``tool_name`` on screen past its timeout becomes."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.on_prompt_timeout is not None:
            return tool.on_prompt_timeout
        return self.default_on_prompt_timeout

    def asked(self, tool_name: str, question: Question) -> Question:
        """``question`` as asked here: its ``exclusive`` mark as configuration overrides it."""
        exclusive = self.question(tool_name, question.id).exclusive
        if exclusive is None or exclusive == question.exclusive:
            return question
        return attrs.evolve(question, exclusive=exclusive)

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
            detached=self.detached(tool_name).tool,
            on_timeout=self.on_timeout(tool_name),
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


def _enum(kind: type[RunMode | ResultMode | Target], value: object, origin: str, key: str) -> Any:
    return kind(choice(value, origin, key, [member.value for member in kind]))


def _mode(value: object, origin: str, key: str) -> DetachedMode:
    return DetachedMode(choice(value, origin, key, [mode.value for mode in DetachedMode]))


def _detached(value: object, origin: str, key: str) -> DetachedConfig:
    """``detached``: one mode for every kind, or a table of modes by kind (scalar-or-struct).

    A delivery cannot be parked (its result is held in memory only): the
    scalar ``park`` denies it, and ``deliver = "park"`` is refused.
    """
    if not isinstance(value, Mapping):
        mode = _mode(value, origin, key)
        deliver = DetachedMode.DENY if mode is DetachedMode.PARK else mode
        return DetachedConfig(run=mode, deliver=deliver, tool=mode)
    kinds = [kind.value for kind in PromptKind]
    check_keys(value, origin, key, allowed=kinds)
    modes = {name: _mode(value[name], origin, f"{key}.{name}") for name in kinds if name in value}
    if modes.get(PromptKind.DELIVER.value) is DetachedMode.PARK:
        raise ConfigError(
            origin,
            f"{key}.{PromptKind.DELIVER.value}",
            "a delivery cannot be parked: a finished tool's result is held in memory only, "
            "and could not wait for a later answer (use 'auto', 'defaults' or 'deny')",
        )
    return DetachedConfig(**modes)


def _on_timeout(data: Mapping[str, Any], origin: str, key: str) -> OnTimeout | None:
    if "on_prompt_timeout" not in data:
        return None
    where = f"{key}.on_prompt_timeout" if key else "on_prompt_timeout"
    return OnTimeout(
        choice(data["on_prompt_timeout"], origin, where, [m.value for m in OnTimeout])
    )


def _timeout(data: Mapping[str, Any], origin: str, key: str) -> float | None:
    if "prompt_timeout" not in data:
        return None
    return duration(
        data["prompt_timeout"], origin, f"{key}.prompt_timeout" if key else "prompt_timeout"
    )


def _question(value: object, origin: str, key: str) -> QuestionConfig:
    data = table(value, origin, key)
    _check_keys(data, {"target", "answer", "exclusive", "prompt_timeout"}, origin, key)
    target = Target.USER
    if "target" in data:
        target = _enum(Target, data["target"], origin, f"{key}.target")
    answer = None
    if "answer" in data:
        answer = StaticAnswer(json_value(data["answer"], origin, f"{key}.answer"))
    exclusive = None
    if "exclusive" in data:
        exclusive = boolean(data["exclusive"], origin, f"{key}.exclusive")
    # Whether the answer fits is the question's business, known only when it
    # is asked: a misfit is recorded as invalid_static_answer then.
    return QuestionConfig(
        target=target,
        answer=answer,
        exclusive=exclusive,
        prompt_timeout=_timeout(data, origin, key),
    )


def _tool(value: object, origin: str, key: str, extra: set[str]) -> ToolConfig:
    data = table(value, origin, key)
    _check_keys(
        data,
        {"enable", "run", "result", "detached", "questions", *_TIMEOUT_KEYS, *extra},
        origin,
        key,
    )
    enable = boolean(data["enable"], origin, f"{key}.enable") if "enable" in data else None
    run = _enum(RunMode, data["run"], origin, f"{key}.run") if "run" in data else None
    result = (
        _enum(ResultMode, data["result"], origin, f"{key}.result") if "result" in data else None
    )
    detached = (
        _detached(data["detached"], origin, f"{key}.detached") if "detached" in data else None
    )
    questions = {
        name: _question(
            config, origin, name_key(origin, f"{key}.questions", name, what="a question id")
        )
        for name, config in table(data.get("questions", {}), origin, f"{key}.questions").items()
    }
    return ToolConfig(
        run=run,
        result=result,
        detached=detached or _NO_DETACHED,
        questions=questions,
        enable=enable,
        prompt_timeout=_timeout(data, origin, key),
        on_prompt_timeout=_on_timeout(data, origin, key),
    )


#: The keys of a prompt's timeout, at a tool's level and the defaults'.
_TIMEOUT_KEYS = ("prompt_timeout", "on_prompt_timeout")


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
    _check_keys(defaults, {"run", "result", "detached", *_TIMEOUT_KEYS}, origin, "defaults")
    default_run = RunMode.ASK
    if "run" in defaults:
        default_run = _enum(RunMode, defaults["run"], origin, "defaults.run")
    default_result = ResultMode.UNATTENDED
    if "result" in defaults:
        default_result = _enum(ResultMode, defaults["result"], origin, "defaults.result")
    default_detached = _NO_DETACHED
    if "detached" in defaults:
        default_detached = _detached(defaults["detached"], origin, "defaults.detached")
    tools = {
        name: _tool(config, origin, name_key(origin, "tools", name, what="a tool name"), extra)
        for name, config in table(data.get("tools", {}), origin, "tools").items()
    }
    return ToolsConfig(
        tools=tools,
        default_run=default_run,
        default_result=default_result,
        default_detached=default_detached,
        default_prompt_timeout=_timeout(defaults, origin, "defaults"),
        default_on_prompt_timeout=_on_timeout(defaults, origin, "defaults") or OnTimeout.CLOSE,
    )


def load_tools_config(path: Path | str) -> ToolsConfig:
    """Load a TOML configuration file."""
    path = Path(path)
    return parse_tools_config(load_toml(path), origin=str(path))
