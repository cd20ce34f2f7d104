"""Answers files: the person's and the model's replies, scripted, for ``inquiry run --answers``.

Theory of operation: an answers file (TOML, ``examples/README.md`` lists every
key) holds four arrays of tables. ``[[permissions]]`` are the person's replies
to "may this tool run?", written as the keys they would press (``y``, ``Y``,
``n``, ``N``, ``r`` with a reason, ``e`` with arguments, or ``cancel``).
``[[answers]]`` are the person's answers to questions (a value, possibly
remembered, or a cancellation). ``[[deliveries]]`` are the person's replies
to "may this result reach the model?" for a tool whose result mode is
``ask`` (``y``, ``n`` or ``cancel``). ``[[model]]`` are the model's answers,
or the backend failures to play instead. Each entry may name the ``tool``
and (for questions) the ``question`` id it is for; a prompt takes the first
unused entry that matches it, so parallel tools get their own answers
whatever order their prompts come in. :meth:`AnswerScript.prompter` and
:meth:`AnswerScript.backend` turn the file into a
:class:`~coordinator.driver._prompting.ScriptedPrompter` standing in for the
person (``from_file``: what it answers is recorded as the answers file's,
and a prompt it has no entry for falls to the tool's detached policy) and a
:class:`~coordinator.driver._scripted_backend.ScriptedInquiryBackend`.

Rules: the file is checked completely when it is read (unknown keys, wrong
types, a key that does not go with the reply, an empty ``tool`` or
``question`` (it could match nothing), ``remember`` on an answer that is not
a boolean, a ``value_env`` variable that is not set), with errors naming the
file and the key. ``remember`` is the terminal's ``Y``/``N``: the terminal
remembers only a boolean's answer, so a text, select or secret answer cannot
ask for it. An answer read from ``value_env`` is a secret from the moment it is read (a
:class:`~machines.SecretValue`): it is meant for secret questions, and no
error message or ``repr`` shows it. The variables it is read from are
:attr:`AnswerScript.secret_variables`: ``inquiry run`` keeps them out of the
local tools' environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from coordinator._errors import ConfigError
from coordinator.driver import (
    BackendErrorKind,
    ScriptedInquiryBackend,
    ScriptedPrompter,
    boolean,
    check_keys,
    choice,
    json_table,
    json_value,
    load_toml,
    optional_string,
    shown_error,
    string,
    tables,
)
from machines import JsonValue, SecretValue, ToolAnswer, json_type

__all__ = [
    "AnswerScript",
    "DeliveryReply",
    "ModelAnswer",
    "PermissionReply",
    "PersonAnswer",
    "load_answer_script",
    "parse_answer_script",
]

_PERMISSION_REPLIES = ("y", "Y", "n", "N", "r", "e", "cancel")
_DELIVERY_REPLIES = ("y", "n", "cancel")
_FAILURES = tuple(kind.value for kind in BackendErrorKind)


@attrs.frozen(kw_only=True)
class PermissionReply:
    """A reply to a permission prompt, as the key pressed."""

    reply: str
    tool: str | None = None
    reason: str | None = None
    arguments: Mapping[str, JsonValue] | None = None


@attrs.frozen(kw_only=True)
class DeliveryReply:
    """A reply to a delivery prompt: ``y`` deliver, ``n`` withhold, or ``cancel``."""

    reply: str
    tool: str | None = None


@attrs.frozen(kw_only=True)
class PersonAnswer:
    """The person's answer to a question (``value``), or a cancellation (``cancel``)."""

    # Not in the repr: the answer may be meant for a secret question.
    value: ToolAnswer = attrs.field(default=None, repr=False)
    remember: bool = False
    cancel: bool = False
    tool: str | None = None
    question: str | None = None
    #: The environment variable the answer was read from (``value_env``), if it was.
    value_env: str | None = None


@attrs.frozen(kw_only=True)
class ModelAnswer:
    """The model's answer (``value``), or a backend failure of kind ``failure``."""

    value: JsonValue = None
    failure: BackendErrorKind | None = None
    message: str = ""
    tool: str | None = None
    question: str | None = None


@attrs.frozen(kw_only=True)
class AnswerScript:
    """An answers file, read and checked."""

    path: Path
    permissions: tuple[PermissionReply, ...] = ()
    answers: tuple[PersonAnswer, ...] = ()
    deliveries: tuple[DeliveryReply, ...] = ()
    model: tuple[ModelAnswer, ...] = ()

    @property
    def plays_the_person(self) -> bool:
        """Whether the file has any reply of the person's (not only the model's)."""
        return bool(self.permissions or self.answers or self.deliveries)

    @property
    def secret_variables(self) -> tuple[str, ...]:
        """The environment variables answers are read from (``value_env``), each once."""
        return tuple(dict.fromkeys(a.value_env for a in self.answers if a.value_env is not None))

    def prompter(self) -> ScriptedPrompter:
        """A prompter standing in for the person, from this script (its replies are the file's)."""
        prompter = ScriptedPrompter(from_file=True)
        for permission in self.permissions:
            _script_permission(prompter, permission)
        for answer in self.answers:
            if answer.cancel:
                prompter.cancel(tool=answer.tool, question=answer.question)
            else:
                prompter.answer(
                    answer.value,
                    remember=answer.remember,
                    tool=answer.tool,
                    question=answer.question,
                )
        for delivery in self.deliveries:
            if delivery.reply == "y":
                prompter.deliver(tool=delivery.tool)
            elif delivery.reply == "n":
                prompter.withhold(tool=delivery.tool)
            else:
                prompter.cancel_delivery(tool=delivery.tool)
        return prompter

    def backend(self) -> ScriptedInquiryBackend | None:
        """A backend that plays the model from this script (``None`` if it has no entries)."""
        if not self.model:
            return None
        backend = ScriptedInquiryBackend()
        for reply in self.model:
            if reply.failure is not None:
                backend.fail(
                    reply.failure, reply.message, tool=reply.tool, question=reply.question
                )
            else:
                backend.respond(reply.value, tool=reply.tool, question=reply.question)
        return backend


def _script_permission(prompter: ScriptedPrompter, permission: PermissionReply) -> None:
    tool = permission.tool
    if permission.reply in ("y", "Y"):
        prompter.permit(remember=permission.reply == "Y", tool=tool)
    elif permission.reply in ("n", "N"):
        prompter.deny(remember=permission.reply == "N", tool=tool)
    elif permission.reply == "r":
        prompter.deny(reason=permission.reason, tool=tool)
    elif permission.reply == "e":
        prompter.permit(arguments=permission.arguments, tool=tool)
    else:
        prompter.cancel_permission(tool=tool)


def load_answer_script(path: Path | str) -> AnswerScript:
    """Read and check the answers file ``path``.

    An error shows the file's name with U+FFFD for each byte that is not
    UTF-8, as every path is shown; :attr:`AnswerScript.path` keeps the name as it is.
    """
    path = Path(path)
    try:
        return parse_answer_script(load_toml(path), origin=str(path))
    except ConfigError as error:
        raise shown_error(error) from None


def parse_answer_script(data: Mapping[str, Any], *, origin: str) -> AnswerScript:
    """Check a parsed answers file."""
    check_keys(data, origin, "", allowed=("permissions", "answers", "deliveries", "model"))
    return AnswerScript(
        path=Path(origin),
        permissions=tuple(
            _permission(entry, origin, f"permissions[{index}]")
            for index, entry in enumerate(
                tables(data.get("permissions", []), origin, "permissions")
            )
        ),
        answers=tuple(
            _answer(entry, origin, f"answers[{index}]")
            for index, entry in enumerate(tables(data.get("answers", []), origin, "answers"))
        ),
        deliveries=tuple(
            _delivery(entry, origin, f"deliveries[{index}]")
            for index, entry in enumerate(tables(data.get("deliveries", []), origin, "deliveries"))
        ),
        model=tuple(
            _model(entry, origin, f"model[{index}]")
            for index, entry in enumerate(tables(data.get("model", []), origin, "model"))
        ),
    )


def _only_with(
    data: Mapping[str, Any], origin: str, key: str, name: str, *, allowed: bool, why: str
) -> None:
    if name in data and not allowed:
        raise ConfigError(origin, f"{key}.{name}", f"only {why} takes this key")


def _permission(data: Mapping[str, Any], origin: str, key: str) -> PermissionReply:
    check_keys(
        data, origin, key, allowed=("tool", "reply", "reason", "arguments"), required=("reply",)
    )
    reply = choice(data["reply"], origin, f"{key}.reply", _PERMISSION_REPLIES)
    _only_with(data, origin, key, "reason", allowed=reply == "r", why='reply = "r"')
    _only_with(data, origin, key, "arguments", allowed=reply == "e", why='reply = "e"')
    if reply == "e" and "arguments" not in data:
        raise ConfigError(origin, f"{key}.arguments", 'is required with reply = "e"')
    return PermissionReply(
        reply=reply,
        tool=optional_string(data, "tool", origin, key, empty=False),
        reason=optional_string(data, "reason", origin, key) or None,
        arguments=json_table(data["arguments"], origin, f"{key}.arguments")
        if reply == "e"
        else None,
    )


def _delivery(data: Mapping[str, Any], origin: str, key: str) -> DeliveryReply:
    check_keys(data, origin, key, allowed=("tool", "reply"), required=("reply",))
    return DeliveryReply(
        reply=choice(data["reply"], origin, f"{key}.reply", _DELIVERY_REPLIES),
        tool=optional_string(data, "tool", origin, key, empty=False),
    )


def _answer(data: Mapping[str, Any], origin: str, key: str) -> PersonAnswer:
    check_keys(
        data,
        origin,
        key,
        allowed=("tool", "question", "value", "value_env", "remember", "cancel"),
    )
    given = [name for name in ("value", "value_env", "cancel") if name in data]
    if len(given) != 1:
        raise ConfigError(
            origin,
            key,
            "give exactly one of `value`, `value_env` (a secret read from the environment) "
            f"or `cancel = true`; found {', '.join(given) or 'none'}",
        )
    tool = optional_string(data, "tool", origin, key, empty=False)
    question = optional_string(data, "question", origin, key, empty=False)
    if "cancel" in data:
        if not boolean(data["cancel"], origin, f"{key}.cancel"):
            raise ConfigError(origin, f"{key}.cancel", "can only be true (or leave it out)")
        _only_with(data, origin, key, "remember", allowed=False, why="an answer with a value")
        return PersonAnswer(cancel=True, tool=tool, question=question)
    remember = boolean(data.get("remember", False), origin, f"{key}.remember")
    value: ToolAnswer
    name: str | None = None
    if "value_env" in data:
        name = string(data["value_env"], origin, f"{key}.value_env", empty=False)
        secret = os.environ.get(name)
        if secret is None:
            raise ConfigError(
                origin, f"{key}.value_env", f"the environment variable {name} is not set"
            )
        value = SecretValue(secret)
    else:
        value = json_value(data["value"], origin, f"{key}.value")
    if remember and not isinstance(value, bool):
        # Refused rather than quietly dropped: the engine would remember a text
        # or a choice the terminal never could, and a secret never is.
        what = (
            "a secret (`value_env`)"
            if "value_env" in data
            else f"{json_type(value, toml=True)} answer"
        )
        raise ConfigError(
            origin,
            f"{key}.remember",
            f"is the Y or N of a boolean question: only `value = true` or `false` takes it, "
            f"not {what} (text, select and secret answers are never remembered)",
        )
    return PersonAnswer(
        value=value, remember=remember, tool=tool, question=question, value_env=name
    )


def _model(data: Mapping[str, Any], origin: str, key: str) -> ModelAnswer:
    check_keys(data, origin, key, allowed=("tool", "question", "value", "fail", "message"))
    if ("value" in data) == ("fail" in data):
        raise ConfigError(
            origin, key, "give exactly one of `value` (the model's answer) or `fail` (a failure)"
        )
    tool = optional_string(data, "tool", origin, key, empty=False)
    question = optional_string(data, "question", origin, key, empty=False)
    if "value" in data:
        _only_with(data, origin, key, "message", allowed=False, why="a failure (`fail`)")
        return ModelAnswer(
            value=json_value(data["value"], origin, f"{key}.value"), tool=tool, question=question
        )
    failure = choice(data["fail"], origin, f"{key}.fail", _FAILURES)
    return ModelAnswer(
        failure=BackendErrorKind(failure),
        message=optional_string(data, "message", origin, key) or "scripted failure",
        tool=tool,
        question=question,
    )
