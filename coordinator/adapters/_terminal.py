"""The terminal prompter: the person at the terminal answers.

Theory of operation: :class:`TerminalPrompter` is a
:class:`~coordinator.driver._prompting.Prompter`. The coordinator hands it one prompt
at a time; it prints who is asking and what (the question's context first: a
diff, say), reads the person's reply with the terminal primitives of
:mod:`coordinator.adapters._terminal_toolkit` (prompt_toolkit, the standard async
line editor; that module says why it and not questionary; it is imported only
when a prompter is made, so the package works without it), and turns the
reply into an answer. The conventions are JP's (``wire-format.md``, "Prompter
conventions"):

- boolean: ``y`` or ``yes``, ``n`` or ``no`` (in any case), then Enter;
  ``Y`` alone yes and ``N`` alone no, then Enter, remembered for the rest of
  the turn; Enter alone takes the question's default, if it has one. A
  capital letter waits for the rest of the word like any other: ``Yes`` is a
  plain yes, never a remembered ``Y`` with ``es`` left over. A question
  whose answer may not be reused (``persistence`` none, RFD 083: ``ask_user``)
  offers no ``Y`` or ``N``: typed, they are a plain yes and no;
- select: the options with their descriptions, picked with the arrow keys or
  by number, then Enter (the default is highlighted first); never remembered;
- text: a line editor showing the default as a placeholder, which Enter on
  the empty line takes (typing replaces it; nothing to delete); never
  remembered;
- secret: nothing of what is typed appears, and it is never remembered; a
  default the tool gave (RFD 082 records it) is never pre-filled nor taken;
- form: one prompt flow. First *fill it in* or *decline* (picked as a
  select; declining answers ``"decline"``), then each field in order, typed:
  a boolean as ``y``/``n``, one choice picked from its options (their titles
  beside them), several choices marked with Space, text checked against its
  length and format, a number parsed and held to its bounds; each field says
  whether it is required, and offers its default (Enter takes it). Enter on
  an optional field left empty leaves it out. A reply that does not fit is
  refused where it is typed, saying why. The answer is one object; Esc or
  Ctrl-C at any field cancels the whole form (nothing of it is answered);
- a default that is no answer to its question (``"yes"`` for a boolean, a
  value none of a select's options; RFD 082 records it all the same) is not
  offered, and the prompt says so: only :attr:`~machines.Question.offered_default`
  is ever taken for Enter alone;
- permission to run a tool: ``y``/``Y`` run (``Y`` remembers), ``n``/``N``
  skip (``N`` remembers), ``p`` prints the arguments as JSON and asks again,
  ``r`` asks for a reason and skips, ``e`` opens the arguments as JSON in a
  multi-line editor and runs the tool with what was accepted (invalid JSON is
  refused with the parser's message and the editor opens again). Ctrl-C in the
  reason or the editor goes back to the permission prompt;
- whether a finished tool's result may reach the model (result mode
  ``ask``): ``y`` delivers it, ``n`` withholds it (the model is told the
  person did), ``p`` prints it whole and asks again.

Every prompt is read from and written to the controlling terminal
(``/dev/tty``), never stdout: a run whose output is piped (``inquiry run
... | less``) still asks the person at the keyboard, and its data channel
carries no prompt (RFD 104).

Every reply is keys *and* Enter, so a stray keypress never lets a tool run
nor answers a question, and a remembered answer (which answers the same
question for the rest of the turn) is never given by the first letter of a
word.

Each prompt starts by discarding every key typed before it (what a previous
prompt read past its answer, what was typed while tools ran): a question is
answered only by keys typed once it is on screen.

Internal ids (the tool call's, the inquiry's) are shown only when the
prompter is made ``verbose`` (``inquiry run --verbose``): the person is told
which tool asks what, in words.

The keys that end a prompt unanswered (RFD 092), at every prompt: the
permission prompt, the delivery prompt, a boolean, a select, a text and a
secret:

- **Esc** cancels the prompt: the question is cancelled by the person
  (``user``), the permission refused (the tool is skipped), the result not
  delivered. So do Ctrl-D on an empty line and the end of input. At the
  reason and the argument editor of a permission prompt, Esc and Ctrl-C go
  back to the permission prompt (in the editor, Esc then Enter accepts, so
  there Esc alone does nothing).
- **Ctrl-C** is the run's interrupt. The first, at a prompt, cancels it as
  Esc does, and the screen says that Ctrl-C again stops the run; a second
  within :data:`CTRL_C_WINDOW` seconds of the first (counted from when the
  first was read) cancels its prompt too and calls ``on_stop``: the run
  stops, as on a Ctrl-C while no prompt is on screen. A Ctrl-C read after
  its prompt had ended (while its last frame was drawn) is such a Ctrl-C
  away from any prompt, and calls ``on_stop`` too: whatever the timing, the
  Ctrl-C after the first is never lost.
- **Ctrl-Backslash** is SIGQUIT: the process exits at once, the terminal
  set back first (:meth:`TerminalPrompter.restore_terminal`).

Rules:

1. Esc, Ctrl-C, and Ctrl-D or end of input, at a prompt raise
   :class:`~coordinator.driver._prompting.PromptCancelled`: that question (or that
   permission) is cancelled and the next prompt works as before; the ladder
   of Ctrl-C presses is above.
2. A secret answer is never echoed, never remembered (``remember=False``), and
   leaves as a :class:`~machines.SecretValue`; nothing here prints, logs or
   raises with it.
3. One prompt at a time, even if called concurrently (a lock, in call order).
   A question stays in one piece on screen: lines given to :meth:`show` while
   a prompt is on screen (progress of tools running in parallel) are held
   and printed when it is answered.
4. Text from tools (questions, contexts, option descriptions, arguments) is
   printed with its control characters replaced by ``?``, so a tool cannot
   move the cursor or clear the screen.
5. Keys typed while no prompt is on screen are neither read nor shown: the
   next prompt discards them, and inside :meth:`TerminalPrompter.between_prompts`
   (the run's play) the terminal does not echo them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

import orjson

from coordinator._errors import CoordinatorError, os_reason
from coordinator._text import shown_text
from coordinator.adapters._promptability import TERMINAL_DEVICE
from coordinator.driver import (
    DeliveryAnswer,
    Deny,
    Permit,
    PromptCancelled,
    QuestionAnswer,
)
from machines import DECLINE, AnswerKind, FieldKind, SourceKind, json_type, typed_number

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from coordinator.adapters._terminal_toolkit import Fragments, ToolkitTerminal
    from coordinator.driver import PermissionAnswer
    from machines import (
        Form,
        FormField,
        JsonValue,
        Question,
        ShowDeliveryPrompt,
        ShowPermissionPrompt,
        ShowQuestion,
    )

__all__ = [
    "CTRL_C_WINDOW",
    "TERMINAL_EXTRA",
    "TerminalPrompter",
    "TerminalUnavailableError",
    "asker",
    "boolean_answer",
    "parse_arguments",
    "printable",
]

#: What to install for the terminal prompter.
TERMINAL_EXTRA = "inquiry-coordinator[terminal]"

#: Seconds within which a second Ctrl-C at a prompt stops the run.
CTRL_C_WINDOW = 2.0

_T = TypeVar("_T")

#: A boolean's replies (in any case), and the two that are remembered for the
#: turn (exactly these, alone on the line): each is typed, then Enter.
_BOOLEAN_WORDS: Mapping[str, bool] = {"y": True, "yes": True, "n": False, "no": False}
_BOOLEAN_REMEMBERED: Mapping[str, bool] = {"Y": True, "N": False}
_PERMISSION_REPLIES = ("y", "Y", "n", "N", "p", "r", "e")
_SHORT_ARGUMENTS = 160
#: Said when the tool's default is no answer to its question (``"yes"`` for a
#: boolean, ``5`` for a text): recorded as given (RFD 082), never offered. The
#: value itself is not shown: the prompt is for answering, the record keeps it.
_UNFIT_DEFAULT = "the tool's default does not fit this question and is not offered"
#: What a yes-or-no question takes, said whenever a reply is not one (without
#: ``Y`` or ``N`` when its answer may not be reused).
_BOOLEAN_REPLIES = "type y, yes, n or no (or Y or N), then Enter"
_BOOLEAN_REPLIES_NOT_REUSED = "type y, yes, n or no, then Enter"
_UNFIT_BOOLEAN_DEFAULT = (
    "the tool's default does not fit this question: Enter alone does not answer; "
)
_NO_BOOLEAN_DEFAULT = "there is no default: "


class TerminalUnavailableError(CoordinatorError):
    """The terminal prompter cannot work: no prompt_toolkit installed, or no terminal."""


def _toolkit() -> type[ToolkitTerminal]:
    try:
        from coordinator.adapters._terminal_toolkit import ToolkitTerminal  # noqa: PLC0415 - optional
    except ImportError as error:
        if (error.name or "").partition(".")[0] != "prompt_toolkit":
            raise
        raise TerminalUnavailableError(
            f"prompting at the terminal needs prompt_toolkit: pip install '{TERMINAL_EXTRA}'"
        ) from None
    return ToolkitTerminal


def printable(text: str) -> str:
    r"""``text`` as the terminal only displays it, line breaks and tabs kept.

    Every control character, escape sequence and character that reorders or
    hides text is shown escaped, as :func:`coordinator._text.shown_text`
    shows it everywhere (``\x1b``, ``\u202e``).
    """
    return shown_text(text, lines=True)


def asker(prompt: ShowQuestion) -> str:
    """Who is asking, in words: the tool, or the assistant through a tool."""
    source = prompt.source
    tool = printable(prompt.tool_name)
    if source.kind is SourceKind.TOOL:
        return f"{printable(source.name or prompt.tool_name)} asks"
    if source.kind is SourceKind.ASSISTANT:
        return f"The assistant asks (through {tool})"
    if source.kind is SourceKind.USER:
        return f"Asked on your behalf (through {tool})"
    return f"{printable(source.name or '')} asks (through {tool})"


def boolean_answer(
    reply: str, default: JsonValue, *, reusable: bool = True
) -> QuestionAnswer | None:
    """The answer a boolean reply gives, or ``None`` when it gives none.

    ``reusable``: whether the answer may be remembered for the turn; when
    not, ``Y`` and ``N`` are a plain yes and no.
    """
    reply = reply.strip()
    if not reply:
        return QuestionAnswer(value=default) if isinstance(default, bool) else None
    if reusable and reply in _BOOLEAN_REMEMBERED:
        return QuestionAnswer(value=_BOOLEAN_REMEMBERED[reply], remember=True)
    value = _BOOLEAN_WORDS.get(reply.lower())
    return None if value is None else QuestionAnswer(value=value)


def parse_arguments(text: str) -> dict[str, JsonValue] | str:
    """Edited arguments: the JSON object ``text`` holds, or what is wrong with it."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        return f"not valid JSON: {error}"
    if not isinstance(value, dict):
        return f"the arguments must be a JSON object, not {json_type(value)}"
    return value


def _json(value: object, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, option=option).decode()


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "class:context"
    if line.startswith("+"):
        return "class:diff.add"
    if line.startswith("-"):
        return "class:diff.remove"
    if line.startswith("@@"):
        return "class:diff.hunk"
    return "class:context"


def _context(context: str) -> Fragments:
    lines = printable(context).rstrip("\n").split("\n")
    diff = any(line.startswith("@@") for line in lines)
    fragments: Fragments = []
    for line in lines:
        fragments.append(("class:hint", "  | "))
        fragments.append((_diff_style(line) if diff else "class:context", line))
        fragments.append(("", "\n"))
    return fragments


def _hint(text: str) -> Fragments:
    return [("class:hint", f"  {text}\n")]


def _boolean_hint(default: JsonValue, *, reusable: bool) -> str:
    enter = ""
    if isinstance(default, bool):
        enter = " · Enter alone: yes" if default else " · Enter alone: no"
    remembered = " · Y or N, then Enter: remembered for this turn" if reusable else ""
    return f"y or yes · n or no, then Enter{remembered}{enter}"


class TerminalPrompter:
    """Asks the person at the terminal (a :class:`~coordinator.driver._prompting.Prompter`).

    ``input`` and ``output`` are prompt_toolkit's (by default the
    controlling terminal, ``/dev/tty``). Raises
    :class:`TerminalUnavailableError` when prompt_toolkit is not installed,
    or there is no controlling terminal. :meth:`show` prints a line of
    progress above any prompt on screen; :meth:`close` lets the terminal go.
    """

    def __init__(
        self,
        *,
        input: Input | None = None,
        output: Output | None = None,
        verbose: bool = False,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        """Prompt on ``input`` and ``output`` (by default the controlling terminal).

        ``verbose`` shows the internal ids; ``on_stop`` is called on a second
        Ctrl-C at a prompt within :data:`CTRL_C_WINDOW` seconds of the first.
        """
        toolkit = _toolkit()
        try:
            self._terminal = toolkit(input=input, output=output)
        except OSError as error:
            raise TerminalUnavailableError(
                f"prompting needs the controlling terminal ({TERMINAL_DEVICE}: {os_reason(error)})"
            ) from None
        self._lock = asyncio.Lock()
        self._held: Fragments = []
        self._verbose = verbose
        self.on_stop = on_stop
        self._last_ctrl_c: float | None = None

    def close(self) -> None:
        """Let go of the controlling terminal (if this prompter opened it)."""
        self._terminal.close()

    def between_prompts(self) -> contextlib.AbstractContextManager[None]:
        """While inside, keys typed while no prompt is on screen are not echoed.

        The next prompt discards them (it answers only keys typed once it is
        on screen), so echoing them would only show what is thrown away. On leaving (however it is
        left) the terminal's modes are set back as they were found.
        """
        return self._terminal.unechoed()

    def restore_terminal(self) -> None:
        """Set the terminal back as before any prompt (for a quit, from a signal handler)."""
        self._terminal.restore()

    def show(self, text: str, *, style: str = "progress") -> None:
        """Print ``text`` as one line (``style``: progress, notice or error).

        While a prompt is on screen the line is held, and printed once the
        prompt is answered, so it cannot split the question from its answer.
        """
        line: Fragments = [(f"class:{style}", printable(text)), ("", "\n")]
        if self._lock.locked():
            self._held += line
        else:
            self._terminal.show(line)

    def _notice(self, text: str, *, style: str = "notice") -> None:
        self._terminal.show([(f"class:{style}", printable(text)), ("", "\n")])

    def _stops(self, cancelled: PromptCancelled | None) -> bool | None:
        """Count the Ctrl-C presses a prompt ended with (``cancelled``) or after.

        ``True``: the run stops (a second press within the window, or one
        read once the prompt had ended); ``False``: a first press; ``None``:
        no Ctrl-C, or nothing to stop (no ``on_stop``).
        """
        from coordinator.adapters._terminal_toolkit import CtrlC  # noqa: PLC0415 - optional

        late = self._terminal.late_presses()
        if self.on_stop is None:
            return None
        if late:
            self._last_ctrl_c = None
            return True
        if not isinstance(cancelled, CtrlC):
            return None
        last, self._last_ctrl_c = self._last_ctrl_c, cancelled.at
        if last is not None and cancelled.at - last <= CTRL_C_WINDOW:
            self._last_ctrl_c = None
            return True
        return False

    def _stop_soon(self) -> None:
        """Call ``on_stop`` once what the prompt decided has been reported, not before.

        The prompt's own outcome (a cancel is the person's: ``user``) reaches
        the coordinator first; what the stop closes besides is withdrawn.
        """
        if self.on_stop is not None:
            asyncio.get_running_loop().call_soon(self.on_stop)

    def _cancelled(self, cancelled: PromptCancelled, outcome: str) -> None:
        """Say what a cancelled prompt did; on a second Ctrl-C (or one after it), stop the run."""
        stops = self._stops(cancelled)
        if stops is None:
            self._notice(f"  cancelled: {outcome}")
        elif stops:
            self._notice(f"  cancelled: {outcome}; Ctrl-C again: stopping the run")
            self._stop_soon()
        else:
            self._notice(f"  cancelled: {outcome} · Ctrl-C again stops the run")

    def _answered(self) -> None:
        """A prompt was answered: a Ctrl-C read as it ended was pressed away from it, and stops."""
        if self._stops(None):
            self._notice("  Ctrl-C: stopping the run")
            self._stop_soon()

    async def _read(self, reading: Awaitable[_T], outcome: str) -> _T:
        """What one prompt read; cancelled, say what that means (``outcome``) and count Ctrl-C."""
        try:
            value = await reading
        except PromptCancelled as cancelled:
            self._cancelled(cancelled, outcome)
            raise
        self._answered()
        return value

    async def _read_or_back(self, reading: Awaitable[_T]) -> _T | None:
        """A reply at the reason or the editor; ``None`` to go back to the permission prompt.

        A Ctrl-C there counts as any other: the second cancels the
        permission prompt itself (the tool is skipped) and stops the run.
        """
        try:
            value = await reading
        except PromptCancelled as cancelled:
            stops = self._stops(cancelled)
            if stops:
                self._notice("  cancelled: the tool is skipped; Ctrl-C again: stopping the run")
                self._stop_soon()
                raise
            again = " · Ctrl-C again stops the run" if stops is False else ""
            self._notice(f"  back to the permission prompt{again}")
            return None
        self._answered()
        return value

    @contextlib.asynccontextmanager
    async def _prompting(self) -> AsyncIterator[None]:
        async with self._lock:
            # Before anything of the prompt is shown: what was typed until
            # now was typed for something else (or for nothing on screen).
            self._terminal.discard_typeahead()
            try:
                yield
            finally:
                held, self._held = self._held, []
                if held:
                    self._terminal.show(held)

    # ---------------------------------------------------------- permission

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """May the tool run? ``y``/``Y``/``n``/``N``/``p``/``r``/``e``."""
        async with self._prompting():
            return await self._permission(prompt)

    async def _permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        tool = printable(prompt.tool_name)
        shown = printable(_json(prompt.arguments))
        if len(shown) > _SHORT_ARGUMENTS:
            shown = shown[:_SHORT_ARGUMENTS] + "... (p prints them all)"
        ids = f"  {printable(prompt.tool_call_id)}" if self._verbose else ""
        self._terminal.show(
            [
                ("class:asker", f"! {tool} wants to run"),
                ("class:ids", f"{ids}\n"),
                ("class:hint", "  arguments: "),
                ("class:context", f"{shown}\n"),
                *_hint(
                    "y run · Y run, and remember it for this turn · "
                    "n skip · N skip, and remember it for this turn"
                ),
                *_hint("p print the arguments · r skip with a reason · e edit the arguments"),
            ]
        )
        message: Fragments = [("class:question", f"Run {tool}?"), ("", " [y/Y/n/N/p/r/e] > ")]
        while True:
            reply = await self._reply(message, _check_permission, "the tool is skipped")
            if reply in ("y", "Y"):
                return Permit(remember=reply == "Y")
            if reply in ("n", "N"):
                return Deny(remember=reply == "N")
            if reply == "p":
                self._terminal.show(_context(_json(prompt.arguments, indent=True)))
                continue
            if reply == "r":
                reason = await self._reason()
                if reason is None:
                    continue
                return Deny(reason=reason or None)
            edited = await self._edit(prompt.arguments)
            if edited is None:
                continue
            return Permit(arguments=edited if edited != prompt.arguments else None)

    async def _reply(
        self, message: Fragments, check: Callable[[str], str | None], cancelled: str
    ) -> str:
        """One reply to a prompt of keys (stripped); on cancel, say what ``cancelled`` means."""
        reply = await self._read(self._terminal.line(message, check=check), cancelled)
        return reply.strip()

    async def _reason(self) -> str | None:
        """The reason for skipping (empty for none), or ``None`` to go back."""
        reason = await self._read_or_back(
            self._terminal.line(
                [("class:question", "Why skip it?"), ("", " (Enter for no reason) > ")],
                check=lambda _: None,
            )
        )
        return None if reason is None else reason.strip()

    async def _edit(self, arguments: Mapping[str, JsonValue]) -> dict[str, JsonValue] | None:
        """Arguments edited as JSON, or ``None`` to go back."""
        text = _json(arguments, indent=True)
        self._terminal.show(
            _hint("edit the arguments as JSON · Escape then Enter (or Alt-Enter) runs the tool")
            + _hint("with them · Ctrl-C goes back to the permission prompt")
        )
        while True:
            edited = await self._read_or_back(
                self._terminal.edit([("class:question", "arguments (JSON):\n")], text)
            )
            if edited is None:
                return None
            text = edited
            parsed = parse_arguments(text)
            if isinstance(parsed, dict):
                return parsed
            self._notice(f"  {parsed}; edit them again", style="error")

    # ------------------------------------------------------------ delivery

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        """May the finished tool's result reach the model? ``y``/``n``/``p``."""
        async with self._prompting():
            tool = printable(prompt.tool_name)
            ended = "failed" if prompt.is_error else "finished"
            first = printable(prompt.content).split("\n", 1)[0]
            if len(first) > _SHORT_ARGUMENTS or "\n" in prompt.content:
                first = first[:_SHORT_ARGUMENTS] + "... (p prints it all)"
            ids = f"  {printable(prompt.tool_call_id)}" if self._verbose else ""
            self._terminal.show(
                [
                    (
                        "class:asker",
                        f"! {tool} {ended}: its result reaches the model if you say so",
                    ),
                    ("class:ids", f"{ids}\n"),
                    ("class:hint", "  result: "),
                    ("class:context", f"{first}\n"),
                    *_hint(
                        "y deliver it · n withhold it (the model is told you did) · p print it"
                    ),
                ]
            )
            message: Fragments = [
                ("class:question", f"Deliver {tool}'s result?"),
                ("", " [y/n/p] > "),
            ]
            while True:
                reply = await self._reply(message, _check_delivery, "the result is not delivered")
                if reply in ("y", "n"):
                    return DeliveryAnswer(deliver=reply == "y")
                self._terminal.show(_context(prompt.content))

    # ----------------------------------------------------------- questions

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """Answer the question, in the form its answer type asks for."""
        async with self._prompting():
            self._terminal.show(self._header(prompt))
            return await self._read(self._answer(prompt.question), "the tool is told so")

    def _header(self, prompt: ShowQuestion) -> Fragments:
        question = prompt.question
        ids = f"  {printable(question.id)} · {printable(prompt.inquiry_id)}"
        fragments: Fragments = [
            ("class:asker", f"? {asker(prompt)}"),
            ("class:ids", f"{ids if self._verbose else ''}\n"),
        ]
        if question.context:
            fragments += _context(question.context)
        fragments += [("class:question", printable(question.text)), ("", "\n")]
        return fragments

    async def _answer(self, question: Question) -> QuestionAnswer:
        kind = question.answer_type.kind
        # Only a default that answers the question is offered; RFD 082 records
        # any other as the tool gave it, and the person is told it is not offered.
        default = question.offered_default
        unoffered = question.default is not None and default is None
        if kind is AnswerKind.BOOLEAN:
            return await self._boolean(default, unoffered=unoffered, reusable=question.reusable)
        if kind is AnswerKind.SELECT:
            if unoffered:
                self._terminal.show(_hint(_UNFIT_DEFAULT))
            values = list(question.answer_type.option_values)
            index = await self._terminal.choose(
                [
                    (printable(o.value), printable(o.description) if o.description else None)
                    for o in question.answer_type.options
                ],
                default=values.index(default) if isinstance(default, str) else 0,
            )
            return QuestionAnswer(value=values[index])
        if kind is AnswerKind.TEXT:
            return await self._text(default, unoffered=unoffered)
        if question.answer_type.form is not None:
            return await self._form(question.answer_type.form)
        hint = "a secret: nothing you type is shown, and it is not recorded"
        if unoffered:  # RFD 082 records it, but it is never typed for the person
            hint += "; the tool's default is not offered"
        self._terminal.show(_hint(hint))
        secret = await self._terminal.secret([("", "(hidden) > ")])
        return QuestionAnswer(value=secret, remember=False)

    async def _boolean(
        self, default: JsonValue, *, unoffered: bool, reusable: bool
    ) -> QuestionAnswer:
        self._terminal.show(_hint(_boolean_hint(default, reusable=reusable)))
        replies = _BOOLEAN_REPLIES if reusable else _BOOLEAN_REPLIES_NOT_REUSED
        if unoffered:
            self._terminal.show(_hint(_UNFIT_BOOLEAN_DEFAULT + replies))
        reply = await self._terminal.line(
            [("", "[y/n/Y/N] > " if reusable else "[y/n] > ")],
            check=lambda text: _check_boolean_reply(
                text, default, unoffered=unoffered, reusable=reusable
            ),
        )
        answer = boolean_answer(reply, default, reusable=reusable)
        if answer is None:  # pragma: no cover - the check refused such a reply
            raise PromptCancelled
        return answer

    async def _form(self, form: Form) -> QuestionAnswer:
        """A form, in one flow: fill it in or decline, then each field; one object."""
        count = len(form.fields)
        fields = f"{count} field{'' if count == 1 else 's'}"
        self._terminal.show(_hint(f"a form of {fields} · Esc or Ctrl-C cancels the whole form"))
        index = await self._terminal.choose(
            [
                ("fill it in", f"answer its {fields}, one by one") if count else ("confirm", None),
                (DECLINE, "refuse to fill it in; the tool is told so"),
            ]
        )
        if index == 1:
            return QuestionAnswer(value=DECLINE)
        answer: dict[str, JsonValue] = {}
        for number, field in enumerate(form.fields, 1):
            self._terminal.show(_field_header(field, number, count))
            value = await _FIELD_READERS[field.kind](self, field)
            if not isinstance(value, _Marker):
                answer[field.name] = value
        return QuestionAnswer(value=answer)

    async def _field_line(self, field: FormField, parse: _Parse) -> _Value:
        """A typed field (text, a number): a line ``parse`` takes, its default for Enter."""
        default = field.offered_default
        placeholder = None if default is None else printable(_json(default).strip('"'))
        reply = await self._terminal.line(
            [("", "> ")],
            check=lambda text: _problem(parse(text, field)),
            placeholder=placeholder,
            history=True,
        )
        value = parse(reply, field)
        if isinstance(value, _Refused):  # pragma: no cover - the check refused such a reply
            raise PromptCancelled
        return value

    async def _field_text(self, field: FormField) -> _Value:
        return await self._field_line(field, _text_value)

    async def _field_number(self, field: FormField) -> _Value:
        return await self._field_line(field, _number_value)

    async def _field_boolean(self, field: FormField) -> _Value:
        default = field.offered_default
        reply = await self._terminal.line(
            [("", "[y/n] > ")], check=lambda text: _problem(_boolean_value(text, field))
        )
        value = _boolean_value(reply, field)
        if isinstance(value, _Refused):  # pragma: no cover - the check refused such a reply
            raise PromptCancelled
        return default if value is _DEFAULT else value

    async def _field_choice(self, field: FormField) -> _Value:
        options: list[tuple[str, str | None]] = [
            (printable(o.value), printable(o.description) if o.description else None)
            for o in field.options
        ]
        if not field.required:
            options.append(("(leave it out)", "this field is optional"))
        default = field.offered_default
        values = field.option_values
        index = await self._terminal.choose(
            options, default=values.index(default) if isinstance(default, str) else 0
        )
        return values[index] if index < len(values) else _LEFT_OUT

    async def _field_choices(self, field: FormField) -> _Value:
        values = field.option_values
        default = field.offered_default
        marked = [values.index(v) for v in default] if isinstance(default, list) else []

        def check(indices: list[int]) -> str | None:
            if not indices and not field.required:
                return None  # left out
            return field.problem([values[index] for index in indices])

        indices = await self._terminal.choose_many(
            [
                (printable(o.value), printable(o.description) if o.description else None)
                for o in field.options
            ],
            marked=marked,
            check=check,
        )
        if not indices and not field.required:
            return _LEFT_OUT
        return [values[index] for index in indices]

    async def _text(self, default: JsonValue, *, unoffered: bool) -> QuestionAnswer:
        placeholder = printable(default) if isinstance(default, str) and default else None
        if placeholder is not None:
            self._terminal.show(_hint("Enter alone accepts the default shown; typing replaces it"))
        elif unoffered:
            self._terminal.show(_hint(_UNFIT_DEFAULT))
        reply = await self._terminal.line(
            [("", "> ")], check=lambda _: None, placeholder=placeholder, history=True
        )
        if not reply and isinstance(default, str):
            reply = default  # Enter alone: the default itself, not how it was shown
        return QuestionAnswer(value=reply)


def _check_permission(reply: str) -> str | None:
    if reply.strip() in _PERMISSION_REPLIES:
        return None
    return "type y, Y, n, N, p, r or e, then Enter"


def _check_delivery(reply: str) -> str | None:
    if reply.strip() in ("y", "n", "p"):
        return None
    return "type y, n or p, then Enter"


def _check_boolean_reply(
    reply: str, default: JsonValue, *, unoffered: bool, reusable: bool
) -> str | None:
    if boolean_answer(reply, default, reusable=reusable) is not None:
        return None
    replies = _BOOLEAN_REPLIES if reusable else _BOOLEAN_REPLIES_NOT_REUSED
    if not reply.strip():  # Enter alone, and no default it takes (a yes or no)
        return (_UNFIT_BOOLEAN_DEFAULT if unoffered else _NO_BOOLEAN_DEFAULT) + replies
    return replies


# ----------------------------------------------------------------- form fields


class _Marker:
    """A reply that is no value of a field: :data:`_LEFT_OUT`, :data:`_DEFAULT`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: An optional field left out of the answer.
_LEFT_OUT: Final = _Marker("left out")
#: Enter alone, at a field whose default is offered.
_DEFAULT: Final = _Marker("the default")


class _Refused(str):
    """Why a reply to a field does not fit, in words (what it is shown as)."""

    __slots__ = ()


#: A field's value as read: JSON, or left out.
_Value: TypeAlias = "JsonValue | _Marker"
#: What a reply to a typed field is: its value, left out, or refused (why).
_Parse: TypeAlias = "Callable[[str, FormField], _Value | _Refused]"


def _problem(value: object) -> str | None:
    return str(value) if isinstance(value, _Refused) else None


def _field_header(field: FormField, number: int, count: int) -> Fragments:
    """A field's lines: its label and place, what it takes, its default or how to leave it out."""
    name = printable(field.name)
    label = printable(field.title) if field.title and field.title != field.name else None
    named = f"{label} ({name})" if label else name
    need = "required" if field.required else "optional"
    fragments: Fragments = [
        ("class:question", f"  {named}"),
        ("class:hint", f"  · field {number} of {count} · {need}\n"),
    ]
    if field.description and field.description != field.title:
        fragments.append(("class:context", f"  {printable(field.description)}\n"))
    takes = [printable(field.expected())]
    if field.kind is FieldKind.BOOLEAN:
        takes = ["y or yes · n or no, then Enter"]
    elif field.kind is FieldKind.CHOICES:
        takes = ["Space marks each value wanted, then Enter"]
    default = field.offered_default
    if default is not None:
        takes.append(f"Enter alone: {printable(_json(default))}")
    elif not field.required and field.kind is FieldKind.CHOICES:
        takes.append("mark none to leave it out")
    elif not field.required and field.kind is not FieldKind.CHOICE:
        takes.append("Enter alone leaves it out")
    return [*fragments, *_hint(" · ".join(takes))]


def _empty(text: str, field: FormField) -> _Value | None:
    """What Enter alone gives at a typed field: its default, left out, or ``None`` (typed on)."""
    if text.strip():
        return None
    if field.offered_default is not None:
        return field.offered_default
    if not field.required:
        return _LEFT_OUT
    return None


def _text_value(text: str, field: FormField) -> _Value | _Refused:
    if (empty := _empty(text, field)) is not None:
        return empty
    problem = field.problem(text)
    return _Refused(problem) if problem else text


def _number_value(text: str, field: FormField) -> _Value | _Refused:
    if (empty := _empty(text, field)) is not None:
        return empty
    number = typed_number(text)
    if number is None:
        return _Refused(f"field {field.name!r} must be {field.expected()}")
    problem = field.problem(number)
    return _Refused(problem) if problem else number


def _boolean_value(text: str, field: FormField) -> _Value | _Refused:
    word = text.strip().lower()
    if word in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[word]
    if not word:
        if isinstance(field.offered_default, bool):
            return _DEFAULT
        if not field.required:
            return _LEFT_OUT
        return _Refused("there is no default: type y, yes, n or no, then Enter")
    return _Refused("type y, yes, n or no, then Enter")


#: How each kind of field is read.
_FIELD_READERS: Mapping[FieldKind, Callable[[TerminalPrompter, FormField], Awaitable[_Value]]] = {
    FieldKind.BOOLEAN: TerminalPrompter._field_boolean,  # noqa: SLF001 - its own methods
    FieldKind.CHOICE: TerminalPrompter._field_choice,  # noqa: SLF001
    FieldKind.CHOICES: TerminalPrompter._field_choices,  # noqa: SLF001
    FieldKind.TEXT: TerminalPrompter._field_text,  # noqa: SLF001
    FieldKind.INTEGER: TerminalPrompter._field_number,  # noqa: SLF001
    FieldKind.NUMBER: TerminalPrompter._field_number,  # noqa: SLF001
}
