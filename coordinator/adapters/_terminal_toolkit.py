"""The terminal itself, through prompt_toolkit: seven primitives and nothing else.

Theory of operation: :class:`ToolkitTerminal` offers what the terminal
prompter (:mod:`coordinator.adapters._terminal`) needs of a terminal, and decides
nothing about questions: :meth:`~ToolkitTerminal.show` prints styled lines
(above a prompt, if one is on screen); :meth:`~ToolkitTerminal.line` reads one
checked line (a default shown as a placeholder, which Enter on an empty line
takes); :meth:`~ToolkitTerminal.secret` reads one line that is never
shown; :meth:`~ToolkitTerminal.choose` picks one of a list with the arrow keys
or by number; :meth:`~ToolkitTerminal.choose_many` picks several (Space marks
one); :meth:`~ToolkitTerminal.edit` edits a multi-line text; and
:meth:`~ToolkitTerminal.discard_typeahead` drops every key typed so far.

Why prompt_toolkit (3.0), and not questionary on top of it or a hand-rolled
reader: it is the field's standard line editor, its prompts are coroutines
(``prompt_async``, ``Application.run_async``) that run on the caller's event
loop, it reads keys through its own parser (arrow keys, Escape sequences,
bracketed paste) and renders through its own screen model, so nothing here
handles a terminal escape sequence. Questionary would add a dependency for
prompts we still have to shape ourselves (a boolean with four answers, a
permission prompt with seven), and it hides the session options a secret
prompt must control (history, processors, output).

Rules:

1. prompt_toolkit is always given its input and output explicitly: by
   default the controlling terminal, ``/dev/tty``, never stdin and stdout
   (RFD 104: a prompt is never written to the data channel, and a piped run
   still has a person at the keyboard). When prompt_toolkit creates the
   output itself on a ``TERM=dumb`` terminal it falls back to a "dumb"
   prompt that echoes every typed character, and that would print a secret.
2. A secret is never rendered: a processor replaces its whole line by nothing
   and keeps the cursor at the first column, so not even its length shows. Its
   session keeps no history, suggests nothing and cannot open an editor; the
   value is wrapped in a :class:`~machines.SecretValue` as it leaves.
3. The keys that end a prompt unanswered (RFD 092), at every prompt
   alike: Esc, Ctrl-D on an empty line and end of input raise
   :class:`~coordinator.driver._prompting.PromptCancelled`; Ctrl-C raises
   its subclass :class:`CtrlC`, carrying when the key was read, so that the
   prompter can count presses; the terminal is left in its normal mode,
   ready for the next prompt. Cancelling the awaiting task does the same
   (prompt_toolkit restores the terminal on the way out). A Ctrl-C read once
   the prompt has ended, while its last frame is drawn (prompt_toolkit reads
   on until the terminal answers its cursor-position query, which a slow
   link may take long to, and keeps what it read for the next prompt), ends
   nothing: it is taken out of what is kept, and
   :meth:`~ToolkitTerminal.late_presses` counts it for the prompter, since at
   that moment no prompt was on screen. Esc is the multi-line editor's
   Escape-then-Enter, and ends nothing there. Ctrl-Backslash is SIGQUIT's key:
   :meth:`~ToolkitTerminal.quit_now` sets the terminal back and the process
   dies of SIGQUIT, at once, as it would away from a prompt.
4. Nothing runs in a thread, and no signal handler or loop exception handler
   is installed: the prompts belong to the caller's event loop.
5. Text from tools is printed through prompt_toolkit's output, which turns
   the escape character into ``?``: a tool cannot drive the terminal.
6. Keys typed before a prompt starts never reach it, when the caller asks so
   (:meth:`~ToolkitTerminal.discard_typeahead`, before it shows a question).
   They wait in two places: prompt_toolkit's typeahead store, which keeps
   the keys a prompt read past its answer (``y``, Enter, Enter in one read:
   the second Enter) and feeds them to the next prompt; and the terminal's
   own input queue, which holds what was typed while no prompt was reading
   (tools running). Both are emptied.
7. Keys typed while no prompt is on screen are not echoed, where the caller
   asks so (:meth:`~ToolkitTerminal.unechoed`, around the run's play): the
   terminal's ``ECHO`` (and ``ECHONL``) is off until it leaves, when the
   modes it found are set back, however it is left. A prompt needs nothing
   more: prompt_toolkit reads it in raw mode (echoing nothing itself, and
   drawing what is typed) and sets back the modes it found, the quiet ones.
   ``ICANON`` and ``ISIG`` stay on: Ctrl-C is still SIGINT between prompts,
   and what is typed there waits for the next prompt to discard (rule 6).
   Only a terminal is touched: a pipe has no modes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import TYPE_CHECKING, Any, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, get_app
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import DummyHistory, InMemoryHistory
from prompt_toolkit.input import create_input
from prompt_toolkit.input.typeahead import clear_typeahead, get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput
from prompt_toolkit.output import create_output
from prompt_toolkit.shortcuts import print_formatted_text
from prompt_toolkit.styles import Style
from prompt_toolkit.validation import ValidationError, Validator

from coordinator.adapters._promptability import TerminalDevice, open_terminal
from coordinator.driver import PromptCancelled
from machines import SecretValue

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from prompt_toolkit.document import Document
    from prompt_toolkit.input import Input
    from prompt_toolkit.key_binding import KeyPressEvent
    from prompt_toolkit.output import Output

__all__ = ["ESCAPE_WAIT", "CtrlC", "Fragments", "ToolkitTerminal"]

#: Styled text: ``(style, text)`` pairs, the style a ``class:`` name or empty.
Fragments = list[tuple[str, str]]

_STYLE = Style.from_dict(
    {
        "asker": "bold",
        "ids": "#888888",
        "question": "bold",
        "hint": "#888888",
        "context": "",
        "diff.add": "ansigreen",
        "diff.remove": "ansired",
        "diff.hunk": "ansicyan",
        "notice": "ansiyellow",
        "error": "ansired",
        "progress": "",
        "option": "",
        "option.selected": "reverse",
        "option.description": "#888888",
        "answer": "bold",
        "placeholder": "#888888 italic",
    }
)


#: However short the terminal, a select draws at least this many options.
_FEWEST_OPTIONS_SHOWN = 3

#: Seconds a lone Escape waits for the rest of a key (an arrow key's bytes,
#: Alt-b's ``b``) before it is read as Esc, in the parser and again in the
#: key bindings. prompt_toolkit's own waits (0.5 s, then 1 s) would make Esc
#: take a second and a half to cancel; the bytes of one key arrive together.
ESCAPE_WAIT = 0.1

#: What sets a terminal's display back after a prompt left it abruptly:
#: bracketed paste off, the cursor shown, then a fresh line.
_DISPLAY_RESET = b"\x1b[?2004l\x1b[?25h\r\n"


class _Cancel(Exception):  # noqa: N818 - a signal between a key binding and its prompt
    """Ctrl-C was pressed at a prompt, at ``at`` (``time.monotonic``)."""

    def __init__(self, at: float) -> None:
        super().__init__()
        self.at = at


class _Escape(Exception):  # noqa: N818 - a signal between a key binding and its prompt
    """Esc was pressed at a prompt."""


class CtrlC(PromptCancelled):
    """The prompt was cancelled with Ctrl-C (not Esc, Ctrl-D, nor the end of input).

    ``at`` is when the key was read (``time.monotonic``): a second press is
    counted from the first, not from when the prompt had finished ending.
    """

    def __init__(self, at: float) -> None:
        """Ctrl-C read at ``at``."""
        super().__init__()
        self.at = at


class _Check(Validator):
    """Refuse a line with the message ``check`` returns for it (``None`` accepts)."""

    def __init__(self, check: Callable[[str], str | None]) -> None:
        self._check = check

    def validate(self, document: Document) -> None:
        problem = self._check(document.text)
        if problem is not None:
            raise ValidationError(message=problem, cursor_position=len(document.text))


class _Hidden(Processor):
    """Render nothing of the line, with the cursor at its start."""

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        del transformation_input
        return Transformation([], source_to_display=lambda _: 0, display_to_source=lambda _: 0)


class ToolkitTerminal:
    """A terminal's primitives, on prompt_toolkit.

    ``input`` and ``output`` default to the controlling terminal
    (``/dev/tty``: ``OSError`` when there is none); tests pass a pipe input
    and a recording output.
    """

    def __init__(self, *, input: Input | None = None, output: Output | None = None) -> None:
        """Talk to ``input`` and ``output`` (by default both the controlling terminal)."""
        self._device: TerminalDevice | None = None
        if input is None or output is None:
            self._device = device = open_terminal()
            self._input = input if input is not None else create_input(stdin=device.input)
            self._output = output if output is not None else create_output(stdout=device.output)
        else:
            self._input, self._output = input, output
        # Earlier text answers, for the up arrow; never a secret, a reply key or an edit.
        self._history = InMemoryHistory()
        # Ctrl-C presses read after their prompt ended (rule 3), for the prompter.
        self._late = 0
        # The terminal's modes before any prompt, to set back on a quit (rule 3).
        self._modes = _terminal_modes(self._input)

    def late_presses(self) -> int:
        """How many Ctrl-C presses were read after their prompt had ended, since the last call."""
        late, self._late = self._late, 0
        return late

    def _take_late_presses(self) -> None:
        """Count the Ctrl-C presses a prompt read as it ended, and keep them from the next.

        prompt_toolkit stops handling keys once a prompt has its result, and
        keeps what it reads after (waiting for the terminal's answer to its
        cursor-position query) for the next prompt, which discards it.
        """
        kept = get_typeahead(self._input)
        self._late += sum(key.key is Keys.ControlC for key in kept)
        store_typeahead(self._input, [key for key in kept if key.key is not Keys.ControlC])

    def restore(self) -> None:
        """Set the terminal back as it was before any prompt: its modes, the cursor, a new line.

        For a prompt left abruptly (a quit, a signal): prompt_toolkit, not
        given the chance, would leave the terminal raw. Written straight to
        the descriptors, so that it is safe in a signal handler; does nothing
        where the input is no terminal.
        """
        if self._modes is None:
            return
        import termios  # noqa: PLC0415 - POSIX only; _modes is None elsewhere

        with contextlib.suppress(OSError, ValueError, NotImplementedError, termios.error):
            termios.tcsetattr(self._input.fileno(), termios.TCSANOW, self._modes)
        with contextlib.suppress(OSError, ValueError, NotImplementedError):
            os.write(self._output.fileno(), _DISPLAY_RESET)

    @contextlib.contextmanager
    def unechoed(self) -> Iterator[None]:
        """While inside, keys typed away from a prompt are not echoed (rule 7).

        The modes found on entry are set back on leaving; where the input is
        no terminal nothing is done.
        """
        found = _terminal_modes(self._input)
        if found is None:
            yield
            return
        import termios  # noqa: PLC0415 - POSIX only; found is None elsewhere

        quiet = list(found)
        quiet[3] &= ~(termios.ECHO | termios.ECHONL)
        descriptor = self._input.fileno()
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(descriptor, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(descriptor, termios.TCSANOW, found)

    def quit_now(self) -> None:
        """Ctrl-Backslash at a prompt: what SIGQUIT does, the terminal set back first.

        The process dies of SIGQUIT at once (its handler, if one is set,
        runs first), saving nothing more: what the conversation holds is on
        disk already, and ``--continue-turn`` takes it up. Nothing happens
        where SIGQUIT is ignored, as the key would do nothing away from a
        prompt either.
        """
        quit_signal = getattr(signal, "SIGQUIT", None)
        if quit_signal is None or signal.getsignal(quit_signal) is signal.SIG_IGN:
            return
        self.restore()
        signal.raise_signal(quit_signal)

    def _keys(
        self, on_cancel: Callable[[], None] | None = None, *, escape: bool = True
    ) -> KeyBindings:
        """The keys that end a prompt unanswered (rule 3), and Ctrl-Backslash.

        Ctrl-C ends the prompt with :class:`_Cancel` rather than
        prompt_toolkit's ``KeyboardInterrupt``, which asyncio would take for
        a reason to stop the loop. ``on_cancel`` runs first, so the last
        frame drawn can say nothing was chosen. ``escape``: whether Esc
        cancels (not in the multi-line editor, where it begins Escape-Enter).
        """
        keys = KeyBindings()

        @keys.add("c-c", eager=True)
        def _ctrl_c(event: KeyPressEvent) -> None:
            if on_cancel is not None:
                on_cancel()
            event.app.exit(exception=_Cancel(time.monotonic()), style="class:aborting")

        if escape:
            # Not eager: Alt-b arrives as Escape then b, which the editing
            # keys read as one; a lone Escape is Esc once ESCAPE_WAIT passes.
            @keys.add("escape")
            def _escape(event: KeyPressEvent) -> None:
                if on_cancel is not None:
                    on_cancel()
                event.app.exit(exception=_Escape(), style="class:aborting")

        @keys.add("c-\\", eager=True)
        def _quit(event: KeyPressEvent) -> None:
            del event
            self.quit_now()

        return keys

    def close(self) -> None:
        """Let go of the controlling terminal, if this opened it."""
        if self._device is not None:
            self._device.close()
            self._device = None

    def discard_typeahead(self) -> None:
        """Drop every key typed so far and not yet read by a prompt.

        The keys a finished prompt read past its answer (prompt_toolkit keeps
        them for the next prompt), any half-read key sequence, and, on a
        terminal, everything typed since (``tcflush``): a prompt then reads
        only what is typed once it is on screen.
        """
        clear_typeahead(self._input)
        self._input.flush_keys()
        _flush_terminal_input(self._input)

    def show(self, fragments: Fragments) -> None:
        """Print ``fragments`` (ending a line is the caller's business)."""
        print_formatted_text(
            FormattedText(fragments),
            end="",
            output=self._output,
            style=_STYLE,
            include_default_pygments_style=False,
            flush=True,
        )

    def _session(
        self, *, secret: bool = False, multiline: bool = False, history: bool = False
    ) -> PromptSession[str]:
        session: PromptSession[str] = PromptSession(
            input=self._input,
            output=self._output,
            style=_STYLE,
            include_default_pygments_style=False,
            key_bindings=self._keys(escape=not multiline),
            history=self._history if history and not secret else DummyHistory(),
            enable_history_search=False,
            enable_open_in_editor=False,
            enable_system_prompt=False,
            enable_suspend=False,
            auto_suggest=None,
            multiline=multiline,
            input_processors=[_Hidden()] if secret else None,
            validate_while_typing=False,
        )
        if not multiline:  # the editor keeps prompt_toolkit's waits, for Escape then Enter
            _quick_escape(session.app)
        return session

    async def _ask(
        self,
        session: PromptSession[str],
        message: Fragments,
        *,
        default: str = "",
        placeholder: str | None = None,
        check: Callable[[str], str | None] | None = None,
    ) -> str:
        try:
            return await session.prompt_async(
                FormattedText(message),
                default=default,
                placeholder=(
                    FormattedText([("class:placeholder", placeholder)]) if placeholder else None
                ),
                validator=_Check(check) if check is not None else None,
                prompt_continuation="  ",
                handle_sigint=False,
                set_exception_handler=False,
            )
        except _Cancel as pressed:
            raise CtrlC(pressed.at) from None
        except (_Escape, KeyboardInterrupt, EOFError):
            raise PromptCancelled from None
        finally:
            self._take_late_presses()

    async def line(
        self,
        message: Fragments,
        *,
        check: Callable[[str], str | None],
        placeholder: str | None = None,
        history: bool = False,
    ) -> str:
        """Read a line that ``check`` accepts (it returns the problem, or ``None``).

        ``placeholder`` is shown on the empty line (nothing to delete before
        typing another answer); Enter there reads an empty line, which the
        caller takes as the placeholder's value. With ``history``, the up
        arrow recalls earlier lines read with ``history``.
        """
        session = self._session(history=history)
        return await self._ask(session, message, placeholder=placeholder, check=check)

    async def secret(self, message: Fragments) -> SecretValue:
        """Read a line without showing anything of it."""
        return SecretValue(await self._ask(self._session(secret=True), message))

    async def edit(self, message: Fragments, text: str) -> str:
        """Edit ``text`` over several lines; Escape then Enter (or Alt-Enter) accepts."""
        return await self._ask(self._session(multiline=True), message, default=text)

    async def choose(self, options: Sequence[tuple[str, str | None]], *, default: int = 0) -> int:
        """The index of the option (value, description) picked: arrows or number, then Enter."""
        return cast("int", await self._run_choice(_Choice(options, default)))

    async def choose_many(
        self,
        options: Sequence[tuple[str, str | None]],
        *,
        marked: Sequence[int] = (),
        check: Callable[[list[int]], str | None] = lambda _: None,
    ) -> list[int]:
        """The indices of the options marked (Space marks one), in order; Enter accepts.

        ``marked`` are marked to begin with; ``check`` refuses a marking with
        the problem it returns (shown, and the prompt stays).
        """
        return cast("list[int]", await self._run_choice(_Choices(options, marked, check)))

    async def _run_choice(self, chosen: _Choice) -> Any:
        application: Application[Any] = Application(
            layout=Layout(
                HSplit(
                    [
                        Window(
                            FormattedTextControl(chosen.render, focusable=True, show_cursor=False),
                            dont_extend_height=True,
                            always_hide_cursor=True,
                        )
                    ]
                )
            ),
            key_bindings=merge_key_bindings([self._keys(chosen.cancel), chosen.keys()]),
            style=_STYLE,
            include_default_pygments_style=False,
            input=self._input,
            output=self._output,
            full_screen=False,
            mouse_support=False,
        )
        _quick_escape(application)
        try:
            return await application.run_async(handle_sigint=False, set_exception_handler=False)
        except _Cancel as pressed:
            raise CtrlC(pressed.at) from None
        except (_Escape, KeyboardInterrupt, EOFError):
            raise PromptCancelled from None
        finally:
            self._take_late_presses()


def _quick_escape(application: Application[Any]) -> None:
    """Read a lone Escape as Esc after :data:`ESCAPE_WAIT`, not prompt_toolkit's 1.5 s."""
    application.ttimeoutlen = ESCAPE_WAIT
    application.timeoutlen = ESCAPE_WAIT


def _terminal_modes(source: Input) -> list[Any] | None:
    """The modes (``termios``) of the terminal behind ``source``; ``None`` if there is none."""
    try:
        import termios  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - Windows
        return None
    try:
        descriptor = source.fileno()
        return termios.tcgetattr(descriptor) if os.isatty(descriptor) else None
    except (OSError, ValueError, NotImplementedError, termios.error):
        return None


def _flush_terminal_input(source: Input) -> None:
    """Discard what the terminal behind ``source`` received and no one read.

    Only a terminal has such a queue (a pipe's contents are data, not
    typing), and only POSIX can flush it.
    """
    try:
        import termios  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - Windows
        return
    try:
        descriptor = source.fileno()
        if os.isatty(descriptor):
            termios.tcflush(descriptor, termios.TCIFLUSH)
    except (OSError, ValueError, NotImplementedError, termios.error):
        return  # no descriptor, or not one to flush: nothing was typed ahead there


class _Choice:
    """The state of one :meth:`ToolkitTerminal.choose`: the highlighted option, digits typed.

    Only the options that fit the terminal are drawn, a window that follows
    the highlight, with a line above and below saying how many more there are:
    drawn in full, a list taller than the terminal would hide the highlight.
    """

    def __init__(self, options: Sequence[tuple[str, str | None]], default: int) -> None:
        self.options = list(options)
        self.index = default
        self.typed = ""
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def visible(self, rows: int) -> range:
        """The options drawn on a terminal ``rows`` high (the hint takes a row, one is spare)."""
        room = max(rows - 2, _FEWEST_OPTIONS_SHOWN)
        if len(self.options) <= room:
            return range(len(self.options))
        room = max(room - 2, 1)  # the "more above" and "more below" lines
        start = min(max(self.index - room // 2, 0), len(self.options) - room)
        return range(start, start + room)

    def render(self) -> FormattedText:
        app = get_app()
        return FormattedText(self.fragments(rows=app.output.get_size().rows, done=app.is_done))

    def fragments(self, *, rows: int, done: bool) -> Fragments:
        """What to draw on a terminal ``rows`` high; ``done``: the prompt has ended."""
        if done:
            if self.cancelled:
                return [("class:hint", "  (nothing chosen)")]
            value, _ = self.options[self.index]
            return [("class:hint", f"  {self.index + 1}. "), ("class:answer", value)]
        fragments = self.option_lines(rows)
        typed = f"  number: {self.typed}" if self.typed else ""
        fragments.append(("class:hint", f"   up/down or a number, then Enter; Esc cancels{typed}"))
        return fragments

    def mark(self, _index: int) -> str:
        """What goes before an option's number (a multi-choice's ``[x]``); nothing here."""
        return ""

    def option_lines(self, rows: int) -> Fragments:
        """The options in view on a terminal ``rows`` high, the highlight and each mark."""
        fragments: Fragments = []
        width = len(str(len(self.options)))
        shown = self.visible(rows)
        if shown.start:
            fragments.append(("class:hint", f"   ({shown.start} more above)\n"))
        for index in shown:
            value, description = self.options[index]
            selected = index == self.index
            style = "class:option.selected" if selected else "class:option"
            fragments.append(("", " > " if selected else "   "))
            fragments.append((style, f"{self.mark(index)}{index + 1:>{width}}. {value}"))
            if description:
                fragments.append(("class:option.description", f"  {description}"))
            fragments.append(("", "\n"))
        if shown.stop < len(self.options):
            fragments.append(("class:hint", f"   ({len(self.options) - shown.stop} more below)\n"))
        return fragments

    def type_digit(self, digit: str) -> None:
        """Select by number; digits add up while they still name an option."""
        for candidate in (self.typed + digit, digit):
            number = int(candidate)
            if 1 <= number <= len(self.options):
                self.typed = candidate.lstrip("0")
                self.index = number - 1
                return
        self.typed = ""

    def move(self, step: int) -> None:
        self.typed = ""
        self.index = min(max(self.index + step, 0), len(self.options) - 1)

    def accept(self, app: Application[Any]) -> None:
        """Enter: the highlighted option is the result."""
        app.exit(result=self.index)

    def keys(self) -> KeyBindings:
        """The keys that choose (and Ctrl-D; the terminal adds the other keys that cancel)."""
        keys = KeyBindings()

        @keys.add("up")
        def _up(event: KeyPressEvent) -> None:
            del event
            self.move(-1)

        @keys.add("down")
        def _down(event: KeyPressEvent) -> None:
            del event
            self.move(1)

        @keys.add("enter")
        def _accept(event: KeyPressEvent) -> None:
            self.accept(event.app)

        @keys.add("c-d")
        def _eof(event: KeyPressEvent) -> None:
            self.cancel()
            event.app.exit(exception=EOFError(), style="class:exiting")

        for digit in "0123456789":

            @keys.add(digit)
            def _number(event: KeyPressEvent, digit: str = digit) -> None:
                del event
                self.type_digit(digit)

        return keys


class _Choices(_Choice):
    """The state of one :meth:`ToolkitTerminal.choose_many`: the highlight, and what is marked.

    Space marks or unmarks the highlighted option; Enter accepts what is
    marked, unless ``check`` refuses it (its problem is shown until a key
    changes the marking).
    """

    def __init__(
        self,
        options: Sequence[tuple[str, str | None]],
        marked: Sequence[int],
        check: Callable[[list[int]], str | None],
    ) -> None:
        super().__init__(options, 0)
        self.marked = set(marked)
        self.check = check
        self.problem: str | None = None

    def marks(self) -> list[int]:
        """The indices marked, in the options' order."""
        return sorted(self.marked)

    def toggle(self) -> None:
        self.problem = None
        self.marked ^= {self.index}

    def mark(self, index: int) -> str:
        """``[x]`` before a marked option, ``[ ]`` before the others."""
        return "[x] " if index in self.marked else "[ ] "

    def fragments(self, *, rows: int, done: bool) -> Fragments:
        """What to draw: each option with its mark; the chosen ones once done."""
        if done:
            if self.cancelled:
                return [("class:hint", "  (nothing chosen)")]
            values = ", ".join(self.options[index][0] for index in self.marks())
            return [("class:answer", f"  {values}" if values else "  (none)")]
        fragments = self.option_lines(rows)
        typed = f"  number: {self.typed}" if self.typed else ""
        fragments.append(
            ("class:hint", f"   up/down or a number, Space marks, then Enter; Esc cancels{typed}")
        )
        if self.problem is not None:
            fragments.append(("class:error", f"\n   {self.problem}"))
        return fragments

    def accept(self, app: Application[Any]) -> None:
        """Enter: what is marked is the result, unless the check refuses it (then it says why)."""
        self.problem = self.check(self.marks())
        if self.problem is None:
            app.exit(result=self.marks())

    def keys(self) -> KeyBindings:
        """The keys that choose, and Space to mark."""
        keys = super().keys()

        @keys.add("space")
        def _mark(event: KeyPressEvent) -> None:
            del event
            self.toggle()

        return keys
