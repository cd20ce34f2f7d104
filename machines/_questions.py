"""What a tool asks, and who is asking.

Two shapes of one question exist. The tool-facing :class:`Question` is what a
tool emits when it needs input (it carries the tool's question id and its
preamble). The recorded :class:`InquiryQuestion` is what the stream keeps in an
``inquiry_request``. Both share one :class:`AnswerType`; only their wire forms
differ (the codec in ``coordinator`` owns those).

Secret-ness is a property of the answer type, declared by the tool author:
a secret is free text that is never echoed, never remembered and never
persisted. Configuration has no say in it.

A form (:class:`~machines.Form`) is an answer type too: several typed fields
asked at once, answered by one JSON object (or ``"decline"``). A form is
never a secret: a secret is asked as a question of its own.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from machines._errors import RecordError
from machines._forms import Form
from machines._json import JsonValue
from machines._options import SelectOption, to_options
from machines._secret import SecretValue
from machines.validators import (
    json_value,
    non_empty_string,
    of_type,
    optional_of_type,
    string,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "AnswerKind",
    "AnswerReusePolicy",
    "AnswerType",
    "InquiryQuestion",
    "InquirySource",
    "Question",
    "SelectOption",
    "SourceKind",
]


class AnswerKind(enum.Enum):
    """The kinds of answer a question can expect; values are their names (and wire tags).

    ``form`` is no wire tag JP reads: a form is recorded as a ``text``
    question (``docs/wire.md``, *Forms*).
    """

    BOOLEAN = "boolean"
    SELECT = "select"
    TEXT = "text"
    SECRET = "secret"  # noqa: S105 - a wire tag, not a password
    FORM = "form"


class AnswerReusePolicy(enum.Enum):
    """Whether a person's answer may be remembered for the rest of the turn (RFD 083).

    The tool decides, per question: ``TURN`` (the default, JP's behaviour
    before RFD 083) lets a person's ``Y`` or ``N`` answer the same question
    of later calls in the turn; ``NONE`` asks it every time, offers no
    ``Y``/``N`` and never looks in the turn's memory (``ask_user``, a
    high-risk confirmation). Values are wire tags.
    """

    NONE = "none"
    TURN = "turn"


def _answer_options(value: Iterable[str | SelectOption]) -> tuple[SelectOption, ...]:
    return to_options(value, where="AnswerType.options")


@attrs.frozen(kw_only=True)
class AnswerType:
    """What form of answer a question expects.

    ``options`` is set for :attr:`AnswerKind.SELECT` only; ``form`` for
    :attr:`AnswerKind.FORM` only, and always there.
    """

    kind: AnswerKind = attrs.field(validator=of_type(AnswerKind))
    options: tuple[SelectOption, ...] = attrs.field(default=(), converter=_answer_options)
    form: Form | None = attrs.field(default=None, validator=optional_of_type(Form))

    def __attrs_post_init__(self) -> None:
        """Options belong to selects and nothing else; a form to forms, each of which has one."""
        if self.options and self.kind is not AnswerKind.SELECT:
            raise RecordError(f"a {self.kind.value} answer type has no options")
        if (self.form is not None) != (self.kind is AnswerKind.FORM):
            raise RecordError(
                "a form answer type needs its form"
                if self.kind is AnswerKind.FORM
                else f"a {self.kind.value} answer type has no form"
            )

    @classmethod
    def boolean(cls) -> AnswerType:
        """Yes or no."""
        return cls(kind=AnswerKind.BOOLEAN)

    @classmethod
    def select(cls, options: Iterable[str | SelectOption]) -> AnswerType:
        """One of ``options``."""
        return cls(kind=AnswerKind.SELECT, options=options)

    @classmethod
    def text(cls) -> AnswerType:
        """Free-form text."""
        return cls(kind=AnswerKind.TEXT)

    @classmethod
    def secret(cls) -> AnswerType:
        """Free-form text that is never echoed, remembered or persisted."""
        return cls(kind=AnswerKind.SECRET)

    @classmethod
    def form_of(cls, form: Form) -> AnswerType:
        """The fields of ``form``, answered as one object (or ``"decline"``)."""
        return cls(kind=AnswerKind.FORM, form=form)

    @property
    def is_secret(self) -> bool:
        """Whether answers to this question must never be persisted."""
        return self.kind is AnswerKind.SECRET

    @property
    def option_values(self) -> tuple[str, ...]:
        """The values a select answer may take, in order."""
        return tuple(option.value for option in self.options)

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is a valid answer of this type."""
        if self.kind is AnswerKind.BOOLEAN:
            return type(value) is bool
        if self.kind is AnswerKind.SELECT:
            return type(value) is str and value in self.option_values
        if self.kind is AnswerKind.TEXT:
            return type(value) is str
        if self.form is not None:
            return self.form.problem(value) is None
        return type(value) is str or isinstance(value, SecretValue)

    def problem(self, value: object) -> str | None:
        """Why ``value`` is no answer of this type (never quoting it); ``None``: it is one."""
        if self.accepts(value):
            return None
        if self.form is not None:
            return self.form.problem(value)
        return f"the answer must be {self.expected()}"

    def expected(self) -> str:
        """Say in words what an answer must be, for error messages."""
        if self.kind is AnswerKind.BOOLEAN:
            return "a boolean (true or false)"
        if self.kind is AnswerKind.SELECT:
            return "one of " + ", ".join(repr(value) for value in self.option_values)
        if self.kind is AnswerKind.TEXT:
            return "a string"
        if self.form is not None:
            return self.form.expected()
        return "a string (secret)"


@attrs.frozen(kw_only=True, repr=False)
class Question:
    """The question a tool emits when it needs input.

    ``id`` is the tool's own question id: answers come back keyed by it.
    ``context`` is the tool's preamble (a diff, say), shown above the question.
    ``default`` is the answer Enter takes at a prompt; ``None`` means none.
    It is any JSON value, as the tool gave it: RFD 082 propagates it to the
    record "verbatim regardless of the answer type", as JP's
    ``Question.default`` (an ``Option<Value>``) does. So a default that is not
    an answer to the question (``"yes"`` for a boolean, ``1234`` for a
    secret) is recorded, and only a prompt decides what it offers
    (:attr:`offered_default`). A secret question's default is never offered
    (a secret is typed, never taken as it stands; its tool must not put a
    sensitive value there), and its ``repr`` hides it all the same.
    ``exclusive`` marks a question only a person may answer (RFD 049): when
    nobody can be asked, the detached policy ``auto`` fails it instead of
    putting it to the model. The tool sets it; the user's configuration
    overrides it, both ways. A secret is always answered by a person,
    exclusive or not. ``persistence`` says whether a person's answer may be
    remembered for the turn (:class:`AnswerReusePolicy`, RFD 083); a secret
    never is, whatever it says.
    """

    id: str = attrs.field(validator=non_empty_string)
    text: str = attrs.field(validator=string)
    answer_type: AnswerType = attrs.field(validator=of_type(AnswerType))
    context: str | None = attrs.field(default=None, validator=optional_of_type(str))
    default: JsonValue = attrs.field(default=None, validator=json_value)
    exclusive: bool = attrs.field(default=False, validator=of_type(bool))
    persistence: AnswerReusePolicy = attrs.field(
        default=AnswerReusePolicy.TURN, validator=of_type(AnswerReusePolicy)
    )

    def __attrs_post_init__(self) -> None:
        """A question must be answerable (its default is whatever the tool gave)."""
        if self.answer_type.kind is AnswerKind.SELECT and not self.answer_type.options:
            raise RecordError(f"select question {self.id!r} has no options")

    @property
    def offered_default(self) -> JsonValue:
        """The default a prompt may take for Enter alone: ``None`` when there is none to offer.

        That is the default when it is an answer to the question, and never a
        secret question's.
        """
        if self.answer_type.is_secret or not self.answer_type.accepts(self.default):
            return None
        return self.default

    @property
    def reusable(self) -> bool:
        """Whether a person's answer to it may be remembered for the turn (and looked up)."""
        return self.persistence is AnswerReusePolicy.TURN and not self.answer_type.is_secret

    def __repr__(self) -> str:
        """The fields, with a secret question's default hidden."""
        return _repr_hiding_secret_default(self)

    @classmethod
    def boolean(
        cls,
        id: str,
        text: str,
        *,
        default: bool | None = None,
        context: str | None = None,
        exclusive: bool = False,
        persistence: AnswerReusePolicy = AnswerReusePolicy.TURN,
    ) -> Question:
        """A yes/no question."""
        return cls(
            id=id,
            text=text,
            answer_type=AnswerType.boolean(),
            default=default,
            context=context,
            exclusive=exclusive,
            persistence=persistence,
        )

    @classmethod
    def select(
        cls,
        id: str,
        text: str,
        options: Iterable[str | SelectOption],
        *,
        default: str | None = None,
        context: str | None = None,
        exclusive: bool = False,
        persistence: AnswerReusePolicy = AnswerReusePolicy.TURN,
    ) -> Question:
        """A choice among ``options``."""
        return cls(
            id=id,
            text=text,
            answer_type=AnswerType.select(options),
            default=default,
            context=context,
            exclusive=exclusive,
            persistence=persistence,
        )

    @classmethod
    def text_input(
        cls,
        id: str,
        text: str,
        *,
        default: str | None = None,
        context: str | None = None,
        exclusive: bool = False,
        persistence: AnswerReusePolicy = AnswerReusePolicy.TURN,
    ) -> Question:
        """A free-text question."""
        return cls(
            id=id,
            text=text,
            answer_type=AnswerType.text(),
            default=default,
            context=context,
            exclusive=exclusive,
            persistence=persistence,
        )

    @classmethod
    def secret(cls, id: str, text: str, *, context: str | None = None) -> Question:
        """A question whose answer is never echoed, remembered or persisted."""
        return cls(id=id, text=text, answer_type=AnswerType.secret(), context=context)

    @classmethod
    def form(
        cls,
        id: str,
        text: str,
        form: Form,
        *,
        context: str | None = None,
        exclusive: bool = False,
        persistence: AnswerReusePolicy = AnswerReusePolicy.TURN,
    ) -> Question:
        """The fields of ``form``, asked as one question; its default, the fields' defaults.

        The default (what Enter takes, and the detached policy ``defaults``)
        is the object of the fields' defaults, when every required field has
        one that fits; otherwise there is none.
        """
        return cls(
            id=id,
            text=text,
            answer_type=AnswerType.form_of(form),
            default=form.defaults(),
            context=context,
            exclusive=exclusive,
            persistence=persistence,
        )


def _repr_hiding_secret_default(question: Question | InquiryQuestion) -> str:
    shown = {
        field.name: repr(getattr(question, field.name)) for field in attrs.fields(type(question))
    }
    if question.answer_type.is_secret and question.default is not None:
        shown["default"] = "<redacted>"
    return f"{type(question).__name__}({', '.join(f'{k}={v}' for k, v in shown.items())})"


@attrs.frozen(kw_only=True, repr=False)
class InquiryQuestion:
    """The question as recorded in an ``inquiry_request``.

    Lenient where the tool-facing question is strict (a select may be
    recorded without options), because it is read back from files other
    writers made. Its default, like the tool's, is any JSON value (RFD 082
    records it verbatim); a secret question's is hidden by its ``repr``.
    ``exclusive`` is recorded only when the question was exclusive (``True``);
    ``None`` is its absence, so that a file's ``false`` reads back as written.
    ``persistence`` likewise (RFD 083): ``"none"`` is recorded for a question
    whose answer may not be remembered, nothing for the default; a file's
    value is kept as it is, even one this build does not know (a newer
    writer's), which reads as the default.
    """

    text: str = attrs.field(validator=string)
    answer_type: AnswerType = attrs.field(validator=of_type(AnswerType))
    default: JsonValue = attrs.field(default=None, validator=json_value)
    id: str | None = attrs.field(default=None, validator=optional_of_type(str))
    context: str | None = attrs.field(default=None, validator=optional_of_type(str))
    exclusive: bool | None = attrs.field(default=None, validator=optional_of_type(bool))
    persistence: str | None = attrs.field(default=None, validator=optional_of_type(str))

    def __repr__(self) -> str:
        """The fields, with a secret question's default hidden."""
        return _repr_hiding_secret_default(self)

    def as_asked(self, question_id: str) -> Question:
        """The tool-facing question this record holds, under the bare ``question_id``.

        For a question recorded before its turn stopped and closed when the
        turn is continued, without being asked again: only its ids are read
        then. A select recorded without options (which no tool can ask) reads
        as a text question; the default is kept as recorded.
        """
        answer_type = self.answer_type
        if answer_type.kind is AnswerKind.SELECT and not answer_type.options:
            answer_type = AnswerType.text()
        return Question(
            id=question_id,
            text=self.text,
            answer_type=answer_type,
            context=self.context,
            default=self.default,
            exclusive=self.exclusive is True,
            persistence=(
                AnswerReusePolicy.NONE
                if self.persistence == AnswerReusePolicy.NONE.value
                else AnswerReusePolicy.TURN
            ),
        )

    @classmethod
    def from_question(cls, question: Question) -> InquiryQuestion:
        """Record what the tool asked, answer type included (``secret`` too).

        ``exclusive`` is recorded only when it holds, and ``persistence``
        only when it is not the default: JP keeps a field it does not know
        verbatim, and a question that is neither says nothing.
        """
        return cls(
            text=question.text,
            answer_type=question.answer_type,
            default=question.default,
            id=question.id,
            context=question.context,
            exclusive=True if question.exclusive else None,
            persistence=(
                question.persistence.value
                if question.persistence is not AnswerReusePolicy.TURN
                else None
            ),
        )


class SourceKind(enum.Enum):
    """Who asked; values are the wire tags of ``source``."""

    TOOL = "tool"
    ASSISTANT = "assistant"
    USER = "user"
    OTHER = "other"


_NAMED = frozenset({SourceKind.TOOL, SourceKind.OTHER})


def _source_name(instance: InquirySource, attribute: attrs.Attribute[Any], value: object) -> None:
    if instance.kind in _NAMED:
        non_empty_string(instance, attribute, value)
    elif value is not None:
        raise RecordError(f"a {instance.kind.value} inquiry source has no name")


@attrs.frozen(kw_only=True)
class InquirySource:
    """The recorded provenance of a question.

    Decided in code where a tool's result crosses the executor boundary, never
    by configuration: a tool is ``tool`` with its name unless it is a built-in
    that declares otherwise (``ask_user`` is ``assistant``).
    """

    kind: SourceKind = attrs.field(validator=of_type(SourceKind))
    name: str | None = attrs.field(default=None, validator=_source_name)

    @classmethod
    def tool(cls, name: str) -> InquirySource:
        """Asked by the tool ``name``."""
        return cls(kind=SourceKind.TOOL, name=name)

    @classmethod
    def assistant(cls) -> InquirySource:
        """Asked by the assistant itself (``ask_user``)."""
        return cls(kind=SourceKind.ASSISTANT)

    @classmethod
    def user(cls) -> InquirySource:
        """Asked on the user's behalf."""
        return cls(kind=SourceKind.USER)

    @classmethod
    def other(cls, name: str) -> InquirySource:
        """Asked by something else, named ``name``."""
        return cls(kind=SourceKind.OTHER, name=name)
