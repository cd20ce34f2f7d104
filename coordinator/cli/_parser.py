"""The ``inquiry`` command's argument parser: no abbreviations, and a near flag named.

argparse takes any unambiguous prefix of a long option for the option
(``--cont`` for ``--continue-turn``, ``--new`` for ``--new-turn``): beside
flags that differ in what they do to a conversation, a prefix is a guess
made for the person, so every parser here is built with
``allow_abbrev=False``. And a flag argparse does not know reaches the
top-level parser as "unrecognized arguments", with ``inquiry``'s usage and
no hint; here each parser looks at its own arguments first, so that an
unknown flag is refused in the subcommand's own usage, with the nearest
flags it has (those it begins, else :func:`difflib.get_close_matches`).

Only names argparse would read as options are looked at: up to ``--``
(after it everything is an argument), and for the top-level parser only
those before the subcommand, whose own parser reads the rest. A value that
begins with ``-`` where an option expects one is refused by argparse as it
always was.

Building the parser imports nothing of the engine (``inquiry --version``);
:mod:`difflib` is imported only to name a near flag.
"""

from __future__ import annotations

import argparse
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["Parser"]

#: What argparse reads as a negative number, not as an option.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class _PathsWhole(argparse.HelpFormatter):
    """Help wrapped between words only: a path the help names (``site-packages``) stays whole.

    argparse wraps at hyphens and inside words longer than a line, which would
    cut an installed doc page's path in two, so that it could be neither
    copied nor found (:mod:`coordinator.cli._docs`).
    """

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap  # noqa: PLC0415 - only when help is printed, as argparse does

        return textwrap.wrap(
            " ".join(text.split()), width, break_on_hyphens=False, break_long_words=False
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap  # noqa: PLC0415 - only when help is printed, as argparse does

        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` without abbreviations, naming near flags.

    ``command_follows``: the parser's first argument that is not an option
    names a subcommand, whose parser (built as this one is, through
    ``add_subparsers``) reads what follows it.
    """

    def __init__(self, *args: Any, command_follows: bool = False, **kwargs: Any) -> None:
        """Build it as argparse does, with ``allow_abbrev`` off and help that keeps paths whole."""
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", _PathsWhole)
        super().__init__(*args, **kwargs)
        self.command_follows = command_follows

    def parse_known_args(  # type: ignore[override] # argparse's overloads, one shape here
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Refuse an unknown flag in this parser's usage before argparse reads the arguments."""
        if args is None:
            args = sys.argv[1:]  # as argparse reads them
        for arg in args:
            if arg == "--" or (self.command_follows and not arg.startswith("-")):
                break
            if self._unknown(arg):
                self.error(f"unrecognized arguments: {arg}{self._nearest(arg)}")
        return super().parse_known_args(args, namespace)

    def _unknown(self, arg: str) -> bool:
        """Whether ``arg`` is a flag this parser does not have."""
        if not arg.startswith("-") or arg == "-" or _NEGATIVE_NUMBER.match(arg):
            return False
        if arg.startswith("--"):
            return arg.partition("=")[0] not in self._option_string_actions
        # A short flag may carry its value, or other short flags, joined: -cDIR, -vc DIR.
        return arg[:2] not in self._option_string_actions

    def _nearest(self, arg: str) -> str:
        """`` (did you mean --x?)`` for the flags nearest ``arg``, or nothing when none is near."""
        import difflib  # noqa: PLC0415 - only to name a near flag

        name = arg.partition("=")[0]
        flags = sorted(flag for flag in self._option_string_actions if flag.startswith("--"))
        near = [flag for flag in flags if flag.startswith(name)] if len(name) > 2 else []  # noqa: PLR2004 - beyond "--"
        near = near or difflib.get_close_matches(name, flags, n=1)
        if not near:
            return ""
        return f" (did you mean {' or '.join(near)}?)"
