r"""The commands a message gives the person to paste: how to go on with a conversation.

``inquiry run`` refuses a conversation whose last turn did not finish, and
``inquiry check`` reports one, each with the command that continues it,
begins a new turn after it or discards it (``docs/resume.md``;
``--discard-turn``, never ``inquiry sanitize``, which repairs rather than
discards). They are
written here, once, as a shell reads them back (:func:`shlex.join`), so that
what one message tells the person is what the other does.

Both messages go out through :func:`coordinator._text.shown_text`, as every
line printed does; what that escapes (a control character in a file name,
``\x1b`` on screen) no longer pastes as it was, and is left so: a terminal
must never be handed it raw.

Nothing here imports the runner: ``inquiry check`` builds its line with it,
and starts without the runner (:mod:`coordinator.cli._main`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final

from coordinator._text import shown_path, shown_url

if TYPE_CHECKING:
    from pathlib import Path

    from coordinator.cli._run_result import RunOptions

__all__ = ["BASE_URL", "command_line", "discard_line"]

#: Written for a ``--base-url`` whose credentials a message must not repeat.
BASE_URL: Final = "BASE_URL"


def command_line(options: RunOptions, flag: str) -> str:
    r"""``inquiry run`` as ``options`` ran it, with ``flag``, as a line for a shell.

    Every argument given is repeated (the scenario, ``--answers``, the
    prompting, the backend, the conversation): a command that left the
    answers file out would ask, or without a terminal cancel, what it answers.

    Pasted, the line runs as given but for what a message cannot carry, which
    the person completes by hand: a base URL with a part
    :func:`~coordinator._text.shown_url` leaves out (a user name and password,
    a query string, a fragment: any may hold a credential, and the line goes
    to stderr, to logs and to bug reports) is written as :data:`BASE_URL`; a
    file name that is not UTF-8 reads with U+FFFD (:func:`~coordinator._text.shown_path`);
    a character the terminal acts on reads as its escape (``\x1b``).
    """
    words = ["inquiry", "run", shown_path(options.scenario)]
    if options.answers is not None:
        words += ["--answers", shown_path(options.answers)]
    if options.interactive is not None:
        words.append("--tty" if options.interactive else "--no-tty")
    backend = dict(options.backend or {})
    for key in ("provider", "model", "base_url", "api_key_env"):
        if backend.get(key) is not None:
            option = "--backend" if key == "provider" else "--" + key.replace("_", "-")
            value = backend[key]
            words += [option, _shown_base_url(value) if key == "base_url" else str(value)]
    if options.verbose:
        words.append("--verbose")
    if options.inbox:
        words.append("--inbox")
    words += ["--conversation", shown_path(options.conversation), flag]
    return shlex.join(words)


def _shown_base_url(url: object) -> str:
    """``url`` as given when :func:`shown_url` shows all of it; else :data:`BASE_URL`."""
    # Shown whole or not at all: a URL cut to what shown_url keeps would run,
    # pasted, without its credentials and fail far from the cause.
    text = str(url)
    return text if shown_url(text) == text else BASE_URL


def discard_line(path: Path | str) -> str:
    """``inquiry run --discard-turn`` of the conversation at ``path`` (no scenario), for a shell.

    It discards the unfinished last turn and plays nothing
    (:mod:`coordinator.cli._run_discard`).
    """
    return shlex.join(["inquiry", "run", "--discard-turn", "--conversation", shown_path(path)])
