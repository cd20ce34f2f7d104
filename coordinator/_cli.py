"""The ``inquiry`` command.

Every subcommand prints errors as one line on stderr. Exit status: 0 on
success, 1 when a check finds something to act on, 2 when an input cannot be
read (nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

import orjson

from coordinator._check import summarize
from coordinator._errors import CoordinatorError
from coordinator._store import load_conversation

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["main"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_UNREADABLE = 2


def _print_json(value: object, out: TextIO) -> None:
    out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def _check(args: argparse.Namespace, out: TextIO) -> int:
    conversation = load_conversation(args.path)
    summary = summarize(conversation)
    if args.json:
        _print_json(summary, out)
        return EXIT_OK
    out.write(f"{summary['path']} ({summary['layout']} layout)\n")
    out.write(f"  entries: {summary['entries']} in {summary['turns']} turns\n")
    out.writelines(f"    {kind}: {count}\n" for kind, count in summary["kinds"].items())
    if summary["unknown_kinds"]:
        out.write(f"  kept verbatim (unknown kinds): {', '.join(summary['unknown_kinds'])}\n")
    outcomes = ", ".join(f"{n} {k}" for k, n in summary["inquiry_outcomes"].items())
    out.write(
        f"  inquiries: {summary['inquiry_requests']} requests, "
        f"{summary['inquiry_responses']} responses ({outcomes})\n"
    )
    repaired = summary["ids_repaired"]
    out.write(
        f"  event ids: {repaired['assigned']} assigned, {repaired['regenerated']} regenerated\n"
    )
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inquiry", description="Resolve, record and inspect tool questions."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="load a conversation and report what it holds")
    check.add_argument("path", help="a conversation directory or its events.json")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_check)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    try:
        return handler(args, out or sys.stdout)
    except CoordinatorError as error:
        sys.stderr.write(f"inquiry: {error}\n")
        return EXIT_UNREADABLE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
