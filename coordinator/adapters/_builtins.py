"""Built-in tools, and what each is besides its code.

- ``ask_user`` (RFD 083): the assistant asks the person a typed question
  (boolean, select or text) and is told the answer. Its arguments are
  checked in full before anything is asked, each problem told to the model
  in words it can correct its call by. Its one question, id ``answer``, is
  the assistant's (:meth:`AskUser.inquiry_source`, decided here in code;
  configuration cannot say otherwise), exclusive (a person's only: never put
  to the model) and asked afresh every time (``persistence`` none: no ``Y``
  or ``N`` remembers it for the turn).
- ``answer_inquiry`` (RFD 033): in every request of a turn so the provider's
  prompt cache holds, but only meaningful when an inquiry forces it. A call
  the model makes on its own is answered with an error saying so.

Theory of operation: a built-in is three things, declared here and nowhere
else. Its code (a :class:`~coordinator.driver.BuiltinTool`, run by
:func:`builtin_executors`); what the model is told of it
(:data:`ASK_USER_DESCRIPTION`, :data:`ASK_USER_PARAMETERS`); and its
configuration defaults (:data:`BUILTIN_DEFAULTS`), which
:func:`with_builtin_defaults` merges *under* the user's configuration of the
tool, field by field (RFD 083: a user overriding one field keeps the rest).
``ask_user``'s defaults are RFD 083's: it runs unattended, its result is
delivered unattended (the question is the interaction), and when nobody can
be asked its question is refused (``detached.tool = "deny"``): RFD 083's
routing table wins over a ``[defaults] detached`` a run sets for other tools,
since the default it would take is the model's own argument. It is on by
default; ``enable = false`` in its configuration turns it off by name.

Rules:

1. The model is told what is wrong with its arguments, never an exception:
   every check is an error result naming the argument and what it must be.
2. The answer the tool reports is checked against the question asked (a
   routing path that produced another type of answer is an error, in RFD
   083's generic words), then reported as JSON with its type, so ``true``
   and ``"true"`` stay apart whatever the provider does with the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import orjson

from coordinator.adapters.providers import ANSWER_INQUIRY, ANSWER_INQUIRY_OUTSIDE_INQUIRY
from coordinator.driver import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    DetachedConfig,
    DetachedMode,
    Failure,
    ResultMode,
    Success,
    ToolConfig,
    ToolsConfig,
)
from machines import (
    AnswerKind,
    AnswerReusePolicy,
    AnswerType,
    InquirySource,
    JsonValue,
    Question,
    RunMode,
    json_type,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ASK_USER",
    "ASK_USER_ANSWER_ID",
    "ASK_USER_DESCRIPTION",
    "ASK_USER_PARAMETERS",
    "BUILTIN_DEFAULTS",
    "HIDDEN_BUILTINS",
    "AnswerInquiry",
    "AskUser",
    "builtin_executors",
    "with_builtin_defaults",
]

_V = TypeVar("_V")

#: The built-in's name.
ASK_USER: Final = "ask_user"
#: The id of the one question ``ask_user`` asks: where its answer is kept,
#: and what ``[tools.ask_user.questions.answer]`` configures.
ASK_USER_ANSWER_ID: Final = "answer"

#: What the model is told of ``ask_user``: RFD 083's wording, which says when
#: not to call it (the guard must reach the model to work) and that an answer
#: is no place for a secret (it is returned to the model and recorded).
ASK_USER_DESCRIPTION: Final = (
    "Ask the user a typed question (boolean, select, or text) and receive their answer. "
    "Use only when the conversation does not provide the information you need and the user "
    "can reasonably be expected to answer. When in doubt, answer the user's original question "
    "directly; do not call `ask_user` for clarification you can derive from context or for "
    "confirmation of obvious next steps. Do not use `ask_user` to collect secrets (passwords, "
    "API keys, SSH passphrases): answers are returned to the model and persisted in the "
    "conversation stream."
)

_ANSWER_TYPES: Final = ("boolean", "select", "text")

#: The JSON schema of ``ask_user``'s arguments (RFD 083's table). Provider-valid:
#: what depends on another argument (``options`` for a select only, a default
#: that fits) is checked when the tool runs, and told to the model.
ASK_USER_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "description": "The question to ask the user, on a single line.",
        },
        "context": {
            "type": "string",
            "description": "Optional context shown above the question; may span several lines.",
        },
        "answer_type": {
            "type": "string",
            "enum": list(_ANSWER_TYPES),
            "description": "The form of answer expected (default: text).",
        },
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": ('The choices: required when answer_type is "select", and only then.'),
        },
        "default": {
            "type": ["boolean", "string"],
            "description": (
                "The answer the prompt offers: true or false for a boolean, one of the options "
                "for a select, a string for a text."
            ),
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}

#: Built-ins whose call and result are not shown as tool chrome (RFD 083's
#: ``style.hidden``): the person sees the question and their answer only.
HIDDEN_BUILTINS: Final = frozenset({ASK_USER})

#: Each built-in's configuration defaults, merged under the user's
#: (:func:`with_builtin_defaults`). ``ask_user``'s are RFD 083's.
BUILTIN_DEFAULTS: Final[Mapping[str, ToolConfig]] = {
    ASK_USER: ToolConfig(
        run=RunMode.UNATTENDED,
        result=ResultMode.UNATTENDED,
        detached=DetachedConfig(tool=DetachedMode.DENY),
        enable=True,
    ),
}


def _said(user: _V | None, builtin: _V | None) -> _V | None:
    """What the user said, or where they said nothing, the built-in's default."""
    return builtin if user is None else user


def _merged(user: ToolConfig | None, builtin: ToolConfig) -> ToolConfig:
    """``builtin`` with every field ``user`` sets taken from ``user`` instead."""
    if user is None:
        return builtin
    mine, theirs = user.detached, builtin.detached
    return ToolConfig(
        run=_said(user.run, builtin.run),
        result=_said(user.result, builtin.result),
        detached=DetachedConfig(
            run=_said(mine.run, theirs.run),
            deliver=_said(mine.deliver, theirs.deliver),
            tool=_said(mine.tool, theirs.tool),
        ),
        questions={**builtin.questions, **user.questions},
        enable=_said(user.enable, builtin.enable),
    )


def with_builtin_defaults(
    config: ToolsConfig, builtins: Mapping[str, str] | None = None
) -> ToolsConfig:
    """``config`` with each built-in's defaults merged under its own settings.

    ``builtins`` maps a tool's name to the built-in it runs (by default each
    built-in under its own name): a scenario may run ``ask_user`` under
    another name, and its defaults go with it. A field the user set for the
    tool wins; ``[defaults]`` does not, since it is for the tools that say
    nothing themselves, and a built-in does.
    """
    names = {name: name for name in BUILTIN_DEFAULTS} if builtins is None else builtins
    tools = dict(config.tools)
    for name, builtin in names.items():
        defaults = BUILTIN_DEFAULTS.get(builtin)
        if defaults is not None:
            tools[name] = _merged(config.tools.get(name), defaults)
    return attrs.evolve(config, tools=tools)


# ---------------------------------------------------------------- ask_user


def _options(options: object) -> list[str] | str:
    """A select's options, or what is wrong with them (refused, never dropped)."""
    if not isinstance(options, list) or not options:
        return (
            "a \"select\" question needs 'options': a non-empty array of the choices, "
            "one string each"
        )
    for index, option in enumerate(options):
        if not isinstance(option, str):
            return f"option {index} must be a string, not {json_type(option)}"
        if not option.strip():
            return f"option {index} is empty: each option is a choice the user can read"
        if option in options[:index]:
            return f"option {index} ({option!r}) repeats an earlier option: each must differ"
    return options


def _default_problem(answer_type: AnswerType, default: JsonValue) -> str | None:
    """What keeps ``default`` from being an answer the prompt can offer, if anything."""
    if default is None or answer_type.accepts(default):
        return None
    kind = answer_type.kind
    if kind is AnswerKind.BOOLEAN:
        return f"the default of a boolean question must be true or false, not {json_type(default)}"
    if not isinstance(default, str):
        return f"the default of a {kind.value} question must be a string, not {json_type(default)}"
    listed = ", ".join(repr(option) for option in answer_type.option_values)
    return f"the default must be one of the options ({listed}), not {default!r}"


def _text_problem(arguments: Mapping[str, JsonValue]) -> str | None:
    """What is wrong with the arguments besides the answer type, options and default."""
    for name in arguments:
        if name not in ASK_USER_PARAMETERS["properties"]:
            return (
                f"unknown argument {name!r}: ask_user takes question, context, answer_type, "
                "options and default"
            )
    text = arguments.get("question")
    if not isinstance(text, str) or not text.strip():
        return "'question' is required: the question to ask, a non-empty string on one line"
    if text.splitlines() != [text]:
        return (
            "'question' must be a single line: put the background in 'context' "
            "(shown above the question) and ask the question itself in 'question'"
        )
    context = arguments.get("context")
    if context is not None and not isinstance(context, str):
        return f"'context' must be a string, not {json_type(context)}"
    return None


def _answer_type(arguments: Mapping[str, JsonValue]) -> AnswerType | str:
    """The answer type the arguments ask for, with its options; or what is wrong with them."""
    kind = arguments.get("answer_type", "text")
    if kind == "select":
        options = _options(arguments.get("options"))
        return options if isinstance(options, str) else AnswerType.select(options)
    if kind not in _ANSWER_TYPES:
        shown = repr(kind) if isinstance(kind, str) else json_type(kind)
        return f'\'answer_type\' must be "boolean", "select" or "text" (default), not {shown}'
    if "options" in arguments:
        return (
            f"'options' are for answer_type \"select\" only, not {kind!r}: "
            "give answer_type \"select\" or leave 'options' out"
        )
    return AnswerType.boolean() if kind == "boolean" else AnswerType.text()


def _ask_user_question(arguments: Mapping[str, JsonValue]) -> Question | str:
    """The question ``ask_user`` is told to ask, or what is wrong with its arguments."""
    problem = _text_problem(arguments)
    if problem is not None:
        return problem
    answer_type = _answer_type(arguments)
    if isinstance(answer_type, str):
        return answer_type
    default = arguments.get("default")
    problem = _default_problem(answer_type, default)
    if problem is not None:
        return problem
    context = arguments.get("context")
    return Question(
        id=ASK_USER_ANSWER_ID,
        text=str(arguments["question"]),
        answer_type=answer_type,
        context=context if isinstance(context, str) and context else None,
        default=default,
        # The assistant asks the person: the model answering its own question
        # is no answer, so only a person may (RFD 083, RFD 049).
        exclusive=True,
        # Asked afresh each time: every call is a question of its own (RFD 083).
        persistence=AnswerReusePolicy.NONE,
    )


#: Who every ``ask_user`` question is recorded as asked by (a value, shared).
_ASSISTANT: Final = InquirySource.assistant()


class AskUser(BuiltinTool):
    """The assistant asks the user a question and is told the answer (RFD 083)."""

    def inquiry_source(self, name: str) -> InquirySource:
        """The assistant asked, not a tool."""
        del name
        return _ASSISTANT

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask the question the first time; report the answer, typed, the second."""
        question = _ask_user_question(arguments)
        if isinstance(question, str):
            return Failure(
                f"Invalid arguments for tool 'ask_user': {question}. "
                "Call ask_user again with the arguments corrected."
            )
        if ASK_USER_ANSWER_ID not in answers:
            return Ask(question)
        answer = answers[ASK_USER_ANSWER_ID]
        if not question.answer_type.accepts(answer):
            # RFD 083's generic words: a misfit static answer is refused before,
            # naming the configuration; this guards every other path.
            return Failure(
                "ask_user: the accumulated answer does not match the requested answer type."
            )
        kind = question.answer_type.kind.value
        return Success(orjson.dumps({"answer_type": kind, "answer": answer}).decode())


class AnswerInquiry(BuiltinTool):
    """``answer_inquiry`` called outside an inquiry: always an error."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Tell the model this tool answers questions only when one is put to it."""
        del arguments, answers
        return Failure(ANSWER_INQUIRY_OUTSIDE_INQUIRY)


def builtin_executors() -> dict[str, BuiltinExecutor]:
    """The built-in tools, by name, ready to merge into a tool registry.

    Pair them with :func:`with_builtin_defaults` of the configuration, so
    that ``ask_user`` runs as RFD 083 says (unattended, refused when nobody
    can be asked) unless the configuration says otherwise for it.
    """
    return {
        ASK_USER: BuiltinExecutor(AskUser()),
        ANSWER_INQUIRY: BuiltinExecutor(AnswerInquiry()),
    }
