"""The ``inquiry`` command.

- ``inquiry check PATH [--json]``: what a conversation holds, and how its
  inquiries and tool calls pair up (totals; per turn with ``--json``).
- ``inquiry sanitize PATH [--dry-run] [--json]``: repair the stream as
  ``sanitize()`` does before a provider request, print what changed, and save
  (atomically, and only when something changed) unless ``--dry-run``.
- ``inquiry export PATH [--output FILE]``: the conversation as Markdown.
- ``inquiry diagram [--check] [--root DIR]``: regenerate ``diagrams/`` and the
  generated section of ``docs/machines.md`` from the machines' tables; with ``--check`` only
  name what is stale (exit 1).
- ``inquiry table [MACHINE]``: print machines' transition tables as Markdown.
- ``inquiry run SCENARIO --conversation DIR [--parents] [--answers FILE]
  [--interactive | --no-interactive] [--backend PROVIDER --model NAME
  [--base-url URL] [--api-key-env VAR]] [--verbose] [--continue-turn | --new-turn]``:
  play a scenario's turns through the tool coordinator into a conversation
  directory (created if missing, its parents only with ``--parents``;
  appended to if not), prompting at the
  controlling terminal when a person can be asked (RFD 104's promptability,
  :mod:`coordinator.adapters._promptability`), and following the tools'
  detached policy (RFD 049, ``docs/headless.md``) when nobody can be
  (:mod:`coordinator.cli._run`; the scenario and answers formats are in
  ``examples/README.md``). ``--tty`` and ``--no-tty`` are the old spellings
  of ``--interactive`` and ``--no-interactive``, and ``--non-interactive``
  RFD 104's alias; giving both directions is a usage error (exit 2). Exit status 1 when a tool
  call failed or a question went unanswered, 3 when a turn was left
  incomplete (stopped, or a prompt parked for later: the last line is the
  command that continues it), 128+N when signal N (SIGTERM, SIGHUP) stopped it
  (:mod:`coordinator.cli._run_result`, ``docs/cli.md``).
  A conversation whose last turn did not finish is refused (exit 2) unless
  ``--continue-turn`` continues it, or ``--new-turn`` begins a turn after it
  (when nothing is open in it), or the scenario played it to its end without
  a reply (``docs/resume.md``).

- ``inquiry tour [DIR] [--interactive | --no-interactive | --write DIR]``:
  ``inquiry run`` over the tour as installed with the command
  (:mod:`coordinator.cli._tour`), or the installed examples copied to a new
  DIR. Help names doc pages and examples by their installed paths
  (:mod:`coordinator.cli._docs`).

- ``inquiry serve [ROOT] [--host H] [--port N] [--no-live]``: the web inbox
  (the ``web`` extra): answer the questions waiting under ROOT, and those
  of live runs (``inquiry run --inbox``), from a browser
  (:mod:`coordinator.cli._serve`, ``docs/inbox.md``).

``inquiry check`` exits 3 (:data:`~coordinator.cli._check.EXIT_INCOMPLETE_TURN`)
when the conversation's last turn is blocked on an open (or parked) tool call
or question, 4 (:data:`~coordinator.cli._check.EXIT_AWAITING_MODEL`) when it did not
finish and nothing is open in it, and 5
(:data:`~coordinator.cli._check.EXIT_BEING_WRITTEN`) when a live process, its
pid checked, is writing it.

Every subcommand prints errors as one line on stderr. Exit status: 0 on
success, 1 when diagrams are stale or a tool call of ``inquiry run`` failed,
2 when an input cannot be read or an output cannot be written (nothing is
written then). Paths are printed, and put in JSON, with any bytes
of their names that are not UTF-8 shown as U+FFFD
(:func:`coordinator._text.shown_path`), in errors too.

Nothing a file, a tool or a server wrote reaches the terminal raw: every
line printed here (reports, errors, the library's warnings) goes through
:func:`coordinator._text.shown_text`, which escapes control characters,
escape sequences, DEL and the characters that reorder or hide text; JSON
output spells them with JSON's escapes, so it stays the same JSON.

An output that cannot be written (a full disk, a pipe its reader closed, a
terminal whose encoding cannot show the text) is such an error. ``inquiry
sanitize`` learns what it can of its output before it saves (that it takes
the first line, and can encode the report); with ``--json`` the report comes
after the save, since it lists the files written, and an error then says
what was saved. ``inquiry export --output``
never writes over the files of the conversation it exports; a FILE that is a
device, a FIFO or a pipe (``/dev/stdout``) is written to, a regular one
replaced atomically.
"""

from __future__ import annotations

import sys

from coordinator.cli._docs import doc_path, example_path, help_path
from coordinator.cli._exit_statuses import (
    EXIT_AWAITING_MODEL,
    EXIT_BEING_WRITTEN,
    EXIT_INCOMPLETE_TURN,
)
from coordinator.cli._parser import Parser

# What this module imports at its top is what `inquiry --version` and
# `--help` import: argparse, and nothing of the engine, its dependencies,
# `logging` or `typing` (`tests/test_lazy_exports.py` holds it; the cost of
# each is in docs/performance.md, *Start-up*). Each subcommand imports what
# it uses when it runs, so that `inquiry check` starts without the runner,
# the providers, asyncio or the exporter. mypy and ruff read a
# `TYPE_CHECKING` of this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Sequence
    from typing import TextIO

    from coordinator.stream import Insertion, Removal, SanitizeReport

__all__ = ["main"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_UNREADABLE = 2


def _print_json(value: object, out: TextIO) -> None:
    import orjson  # noqa: PLC0415 - see the imports

    from coordinator._text import shown_text  # noqa: PLC0415 - see the imports

    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    out.write(shown_text(text, lines=True, spelling="json") + "\n")


def _shown(text: str) -> str:
    """``text`` from outside (a name, an id, a kind, a path) as one line a terminal only shows."""
    from coordinator._text import shown_path, shown_text  # noqa: PLC0415 - see the imports

    return shown_text(shown_path(text))


def _error(problem: str) -> None:
    """Say what went wrong, as one line on stderr (it may quote a file, a tool or a server).

    A stderr its reader closed (``inquiry run ... 2>&1 | head``) takes the
    line nowhere: the exit status still says what happened, and a
    traceback on the way out would replace it with 1.
    """
    try:
        sys.stderr.write(f"inquiry: {_shown(problem)}\n")
        sys.stderr.flush()
    except BrokenPipeError:
        from coordinator.cli._check import to_null_device  # noqa: PLC0415 - see the imports

        to_null_device(sys.stderr)


def _check(args: argparse.Namespace, out: TextIO) -> int:
    from coordinator.cli._check import (  # noqa: PLC0415 - see the imports
        exit_status,
        incomplete_lines,
        request_link_lines,
        summarize,
        writer_lines,
    )
    from coordinator.store import load_conversation  # noqa: PLC0415 - see the imports

    conversation = load_conversation(args.path)
    summary = summarize(conversation)
    # A last turn that did not finish: to be continued or discarded (docs/resume.md).
    status = exit_status(summary)
    if args.json:
        _print_json(summary, out)
        return status
    out.write(f"{_shown(str(summary['path']))} ({summary['layout']} layout)\n")
    turns = summary["turns"]
    out.write(f"  entries: {summary['entries']} in {turns} turn{'' if turns == 1 else 's'}\n")
    out.writelines(f"    {_shown(kind)}: {count}\n" for kind, count in summary["kinds"].items())
    if summary["unknown_kinds"]:
        kinds = ", ".join(_shown(kind) for kind in summary["unknown_kinds"])
        out.write(f"  kept verbatim (unknown kinds): {kinds}\n")
    outcomes = ", ".join(f"{n} {k}" for k, n in summary["inquiry_outcomes"].items())
    out.write(
        f"  inquiries: {summary['inquiry_requests']} requests, "
        f"{summary['inquiry_responses']} responses ({outcomes})\n"
    )
    routes = ", ".join(f"{n} {_shown(route)}" for route, n in summary["inquiry_routes"].items())
    if routes:
        out.write(f"  decided by: {routes}\n")
    for decision, counted in summary["call_decisions"].items():
        if counted:
            decided = ", ".join(f"{n} {_shown(route)}" for route, n in counted.items())
            out.write(f"  {decision} decided by: {decided}\n")
    pairing = summary["pairing"]
    for label, key in (("inquiry pairs", "inquiries"), ("tool-call pairs", "tool_calls")):
        totals = pairing[key]["totals"]
        out.write(
            f"  {label}: {totals['paired']} paired, {totals['pending']} pending "
            f"(blocking), {totals['orphaned']} orphaned responses\n"
        )
    repaired = summary["ids_repaired"]
    out.write(
        f"  event ids: {repaired['assigned']} assigned, {repaired['regenerated']} regenerated\n"
    )
    out.writelines(f"{_shown(line)}\n" for line in request_link_lines(summary["request_links"]))
    writer = summary["being_written_by"]
    out.writelines(f"{_shown(line)}\n" for line in writer_lines(writer))
    lines = incomplete_lines(summary["incomplete_turn"], str(summary["path"]), writer=writer)
    out.writelines(f"{_shown(line)}\n" for line in lines)
    return status


def _describe_removal(removal: Removal) -> str:
    # The kind, the event id and the id are the file's: a crafted one must
    # not drive the terminal (even in a --dry-run).
    carried = f", id '{_shown(removal.id)}'" if removal.id is not None else ""
    return (
        f"entry {removal.index} ({_shown(removal.kind)}, event {_shown(removal.event_id)}"
        f"{carried}): {removal.reason.value.replace('_', ' ')}"
    )


def _describe_insertion(insertion: Insertion) -> str:
    from coordinator.stream import (  # noqa: PLC0415 - see the imports
        INTERRUPTED_TOOL_CALL,
        InsertionReason,
    )

    entry = insertion.entry
    event = _shown(entry.event_id)
    if insertion.reason is InsertionReason.INTERRUPTED_TOOL_CALL:
        return (
            f"a {entry.kind} {INTERRUPTED_TOOL_CALL!r} (event {event}, "
            f"id '{_shown(insertion.id or '')}') after entry {insertion.anchor}, "
            "its unanswered request"
        )
    return (
        f"a {entry.kind} (event {event}) before entry {insertion.anchor}, the first chat_request"
    )


def _report_lines(report: SanitizeReport, *, dry_run: bool) -> list[str]:
    removing, inserting = ("would remove", "would insert") if dry_run else ("removed", "inserted")
    return [f"  {removing} {_describe_removal(r)}\n" for r in report.removed] + [
        f"  {inserting} {_describe_insertion(i)}\n" for i in report.inserted
    ]


def _sanitize(args: argparse.Namespace, out: TextIO) -> int:
    from coordinator._text import shown_path  # noqa: PLC0415 - see the imports
    from coordinator.store import (  # noqa: PLC0415 - see the imports
        ConversationLockedError,
        holder_of,
        load_conversation,
        save_conversation,
    )
    from coordinator.stream import plan_sanitize  # noqa: PLC0415 - see the imports

    conversation = load_conversation(args.path)
    plan = plan_sanitize(conversation.stream)
    report = plan.report
    shown = shown_path(conversation.path) if conversation.path else None
    lines = _report_lines(report, dry_run=args.dry_run)
    if report.changed and not args.dry_run and conversation.path is not None:
        # Another process at work there refuses the command before a word is
        # printed (a reader's question: the lock file is left untouched); a
        # holder whose pid cannot be checked is refused by the save itself.
        pid = holder_of(conversation.path)
        if pid is not None:
            raise ConversationLockedError(conversation.path, pid)
    if not args.json:
        # Before the save, what can be learnt of the output: that it can
        # encode the report, and that it takes the first line. Then a dead
        # output stops the command with nothing saved; the report itself
        # follows the save, which may yet be refused.
        encoding = getattr(out, "encoding", None)
        if isinstance(encoding, str):
            "".join(lines).encode(encoding)
        out.write(f"{_shown(str(shown))}\n")
        out.flush()
    written: list[str] = []
    if report.changed and not args.dry_run:
        plan.apply()
        written = [shown_path(path) for path in save_conversation(conversation).written]
    if args.json:
        try:
            _print_json(
                {"path": shown, "dry_run": args.dry_run, **report.as_dict(), "written": written},
                out,
            )
            out.flush()
        except (OSError, UnicodeEncodeError) as error:
            saved = ", ".join(written) or "nothing"
            _error(f"{saved} was saved, but the report cannot be written: {_failed(error, out)}")
            return EXIT_UNREADABLE
        return EXIT_OK
    if not report.changed:
        out.write("  nothing to sanitize; nothing written\n")
        return EXIT_OK
    out.writelines(lines)
    if args.dry_run:
        out.write("  dry run: nothing written\n")
    else:
        out.writelines(f"  wrote {_shown(path)}\n" for path in written)
    return EXIT_OK


def _export(args: argparse.Namespace, out: TextIO) -> int:
    import os  # noqa: PLC0415 - see the imports
    from pathlib import Path  # noqa: PLC0415 - see the imports

    from coordinator._errors import os_reason  # noqa: PLC0415 - see the imports
    from coordinator._text import shown_path  # noqa: PLC0415 - see the imports
    from coordinator.store import load_conversation, write_output  # noqa: PLC0415 - see the imports
    from coordinator.stream import export_markdown  # noqa: PLC0415 - see the imports

    conversation = load_conversation(args.path)
    title = (conversation.metadata or {}).get("title")
    markdown = export_markdown(
        conversation.stream, title=title if isinstance(title, str) else None
    )
    if args.output is None:
        out.write(markdown)
        return EXIT_OK
    target = Path(args.output)
    if os.path.realpath(target) in {os.path.realpath(path) for path in conversation.files}:
        _error(
            f"{shown_path(target)}: is a file of the conversation being exported; "
            "not writing over it (give another --output)"
        )
        return EXIT_UNREADABLE
    try:
        # A device, a FIFO or a pipe (``-o /dev/stdout``) is written to, never replaced.
        write_output(target, markdown.encode())
    except OSError as error:
        _error(f"{shown_path(target)}: cannot be written: {os_reason(error)}")
        return EXIT_UNREADABLE
    return EXIT_OK


def _diagram(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path  # noqa: PLC0415 - see the imports

    from coordinator._text import shown_path  # noqa: PLC0415 - see the imports
    from coordinator.cli._diagram_files import (  # noqa: PLC0415 - see the imports
        MACHINES_PAGE,
        stale_files,
        write_files,
    )

    root = Path(args.root)
    if not (root / MACHINES_PAGE).is_file():
        # The files it writes belong to a checkout of this project; an installed
        # wheel run elsewhere has none, and a bare "No such file" would not say so.
        _error(
            f"{shown_path(root)}: not a checkout of inquiry-coordinator (no {MACHINES_PAGE}); "
            "run `inquiry diagram` at the project's top, or pass --root DIR"
        )
        return EXIT_UNREADABLE
    try:
        if args.check:
            stale = stale_files(root)
            out.writelines(
                f"stale: {_shown(str(path))} (regenerate with `inquiry diagram`)\n"
                for path in stale
            )
            return EXIT_FINDINGS if stale else EXIT_OK
        out.writelines(f"wrote {_shown(str(path))}\n" for path in write_files(root))
    except (OSError, ValueError) as error:
        _error(str(error))
        return EXIT_UNREADABLE
    return EXIT_OK


def _table(args: argparse.Namespace, out: TextIO) -> int:
    from machines import MACHINES, render_markdown_table  # noqa: PLC0415 - see the imports

    for machine in MACHINES:
        if args.machine in (None, machine.name):
            out.write(f"## The {machine.name} machine\n\n{render_markdown_table(machine)}\n")
    return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio  # noqa: PLC0415 - see the imports
    from pathlib import Path  # noqa: PLC0415 - see the imports

    from coordinator.cli._run import run_scenario  # noqa: PLC0415 - see the imports
    from coordinator.cli._run_result import (  # noqa: PLC0415 - see the imports
        EXIT_INCOMPLETE_TURN,
        RunError,
        RunOptions,
    )

    backend: dict[str, object] | None = None
    if args.backend is not None:
        backend = {"provider": args.backend, "model": args.model}
        if args.base_url is not None:
            backend["base_url"] = args.base_url
        if args.api_key_env is not None:
            backend["api_key_env"] = args.api_key_env
    elif any(value is not None for value in (args.model, args.base_url, args.api_key_env)):
        _error("--model, --base-url and --api-key-env go with --backend")
        return EXIT_UNREADABLE
    if args.scenario is None:
        return _discard_only(args, out)
    options = RunOptions(
        scenario=Path(args.scenario),
        conversation=Path(args.conversation),
        answers=Path(args.answers) if args.answers is not None else None,
        interactive=args.interactive,
        backend=backend,
        verbose=args.verbose,
        inbox=args.inbox,
        parents=args.parents,
    )
    try:
        result = asyncio.run(
            run_scenario(
                options,
                out=out,
                continue_turn=args.continue_turn,
                new_turn=args.new_turn,
                discard_turn=args.discard_turn,
            )
        )
    except RunError as error:
        _error(str(error))
        return error.status
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INCOMPLETE_TURN
    if result.reason is not None:
        _error(result.reason)
    return result.status


def _discard_only(args: argparse.Namespace, out: TextIO) -> int:
    """``inquiry run`` without a scenario: only ``--discard-turn`` goes without one."""
    from pathlib import Path  # noqa: PLC0415 - see the imports

    from coordinator.cli._run_discard import discard_only  # noqa: PLC0415 - see the imports
    from coordinator.cli._run_result import RunError  # noqa: PLC0415 - see the imports

    if not args.discard_turn:
        _error("inquiry run: a SCENARIO is required (only --discard-turn goes without one)")
        return EXIT_UNREADABLE
    given = [
        flag
        for flag, value in (
            ("--answers", args.answers),
            ("--backend", args.backend),
            ("--inbox", args.inbox or None),
            ("--parents", args.parents or None),
        )
        if value is not None
    ]
    if given:
        _error(
            f"inquiry run --discard-turn without a SCENARIO plays nothing: {', '.join(given)} "
            "goes with a SCENARIO"
        )
        return EXIT_UNREADABLE
    try:
        discard_only(Path(args.conversation), emit=lambda line: out.write(f"{_shown(line)}\n"))
    except RunError as error:
        _error(str(error))
        return error.status
    return EXIT_OK


def _tour(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path  # noqa: PLC0415 - see the imports

    from coordinator._text import shown_path  # noqa: PLC0415 - see the imports
    from coordinator.cli._tour import (  # noqa: PLC0415 - see the imports
        DEFAULT_CONVERSATION,
        TourError,
        tour_arguments,
        write_examples,
    )

    if args.write is not None and args.conversation is not None:
        _error("inquiry tour: give a conversation DIR to play it, or --write DIR, not both")
        return EXIT_UNREADABLE
    if args.write is not None:
        try:
            written = write_examples(Path(args.write))
        except TourError as error:
            _error(str(error))
            return EXIT_UNREADABLE
        tour = shown_path(written / "tour")
        out.write(
            f"wrote the examples to {_shown(shown_path(written))}; play the tour with\n"
            f"  inquiry run {_shown(tour)}/scenario.toml --answers {_shown(tour)}/answers.toml "
            "--conversation DIR\n"
        )
        return EXIT_OK
    # The very command a checkout's README gives, over the installed files.
    target = args.conversation if args.conversation is not None else DEFAULT_CONVERSATION
    played = _parser().parse_args(tour_arguments(target, interactive=args.interactive))
    status = _run(played, out)
    conversation = _shown(shown_path(target))
    out.write(
        f"see what it recorded: inquiry check {conversation}; inquiry export {conversation}\n"
    )
    return status


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    # The web stack (Starlette, uvicorn, Jinja2) is imported here alone: no
    # other command pays for it, nor needs the web extra.
    try:
        from coordinator.cli._serve import serve_inbox  # noqa: PLC0415 - see above
    except ImportError as error:
        _error(
            f"inquiry serve needs the web extra (pip install 'inquiry-coordinator[web]'): {error}"
        )
        return EXIT_UNREADABLE
    return serve_inbox(args, out)


def _parser() -> argparse.ArgumentParser:
    # No abbreviations, and an unknown flag named with the nearest in its
    # subcommand's usage (coordinator.cli._parser); subcommands are built so too.
    parser = Parser(
        prog="inquiry",
        description="Resolve, record and inspect tool questions.",
        command_follows=True,
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_version()}", help="print the version"
    )
    # Not `required=True`: a bare `inquiry` prints the whole help, not only an error.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    check = commands.add_parser(
        "check",
        help="load a conversation and report what it holds",
        description="Load a conversation and report what it holds: its entries, how its "
        "inquiries and tool calls pair up, and what is left of a last turn that did not "
        "finish (turns are numbered from 1, in the text and the JSON).",
        epilog=f"exit status: {EXIT_OK} when the last turn finished (or there is none); "
        f"{EXIT_UNREADABLE} when the conversation cannot be read or the output written; "
        f"{EXIT_INCOMPLETE_TURN} when the last turn did not finish and is blocked on an open "
        "tool call or question (a run that died, or a prompt parked for later by the detached "
        f"policy park, {help_path(doc_path('headless.md'))}): inquiry run refuses it, "
        "with --new-turn too, until it is continued (--continue-turn) or discarded "
        "(--discard-turn: what is open is closed, nothing deleted); "
        f"{EXIT_AWAITING_MODEL} when it did not finish and nothing is "
        "open in it (it waits for the model's response or follow-up: a stopped run, or a "
        "scenario turn without a reply): inquiry run continues it with --continue-turn or "
        "begins a new turn after it with --new-turn, and refuses it with neither unless its "
        "scenario played it to the end (a turn without a reply). --continue-turn continues "
        f"only a turn the same scenario played ({help_path(doc_path('resume.md'))}); "
        f"{EXIT_BEING_WRITTEN} when a "
        "live process (its pid checked) holds the conversation's writer lock: a run at work "
        "there, its last turn in progress (said as 'being written by pid N'; "
        "being_written_by in the JSON).",
    )
    check.add_argument("path", help="a conversation directory or its events.json")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_check)

    sanitize = commands.add_parser(
        "sanitize", help="repair a conversation as before a provider request, and save it"
    )
    sanitize.add_argument("path", help="a conversation directory or its events.json")
    sanitize.add_argument(
        "--dry-run", action="store_true", help="report what would change; write nothing"
    )
    sanitize.add_argument("--json", action="store_true", help="print one JSON object")
    sanitize.set_defaults(handler=_sanitize)

    export = commands.add_parser("export", help="print a conversation as Markdown")
    export.add_argument("path", help="a conversation directory or its events.json")
    export.add_argument(
        "--output", "-o", metavar="FILE", help="write the Markdown to FILE instead of stdout"
    )
    export.set_defaults(handler=_export)

    diagram = commands.add_parser("diagram", help="regenerate diagrams/ and docs/machines.md")
    diagram.add_argument("--check", action="store_true", help="only report stale files (exit 1)")
    diagram.add_argument("--root", default=".", help="the project directory (default: here)")
    diagram.set_defaults(handler=_diagram)

    table = commands.add_parser("table", help="print the machines' transition tables")
    table.add_argument(
        "machine",
        nargs="?",
        choices=_MachineNames(),
        # A metavar of its own: argparse would otherwise spell the choices
        # out as it builds the parser; %(choices)s reads them only for help.
        metavar="MACHINE",
        help="just this machine: %(choices)s",
    )
    table.set_defaults(handler=_table)

    run = commands.add_parser(
        "run", help="play a scenario's tool calls, asking its questions, into a conversation"
    )
    run.add_argument(
        "scenario",
        nargs="?",
        help=f"the scenario file (TOML; see {help_path(example_path('README.md'))}; "
        "inquiry tour --write DIR copies the examples); required unless --discard-turn",
    )
    run.add_argument(
        "--conversation",
        "-c",
        required=True,
        metavar="DIR",
        help="the conversation directory: created if missing (its parent must exist), a new "
        "turn appended if not",
    )
    run.add_argument(
        "--parents",
        action="store_true",
        help="create the conversation directory's missing parents too (as mkdir -p)",
    )
    run.add_argument(
        "--answers",
        metavar="FILE",
        help="play the person and the model from this answers file (TOML): no prompts; what "
        "it does not answer follows the detached policy",
    )
    # RFD 104: the two contradict, so both given is a usage error (argparse: exit 2).
    prompting = run.add_mutually_exclusive_group()
    prompting.add_argument(
        "--interactive",
        "--tty",
        dest="interactive",
        action="store_const",
        const=True,
        help="ask at the controlling terminal, and fail at once if there is none; with "
        "--answers, you answer and the file plays only the model (--tty: the old spelling)",
    )
    prompting.add_argument(
        "--no-interactive",
        "--non-interactive",
        "--no-tty",
        dest="interactive",
        action="store_const",
        const=False,
        help="never prompt: what nobody can answer follows the tools' detached policy, "
        f"deny unless configured ({help_path(doc_path('headless.md'))}; also "
        "INQUIRY_NONINTERACTIVE=1 or JP_NONINTERACTIVE=1)",
    )
    run.add_argument(
        "--backend",
        choices=["anthropic", "openai"],
        help="answer questions for the model with this provider (replaces the scenario's)",
    )
    run.add_argument("--model", metavar="NAME", help="the model, with --backend")
    run.add_argument(
        "--base-url", metavar="URL", help="the provider's API address, with --backend"
    )
    run.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the API key, with --backend",
    )
    run.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="show the internal ids of tool calls and questions",
    )
    run.add_argument(
        "--inbox",
        action="store_true",
        help="put the run's questions on the web inbox too (inquiry serve), and take the first "
        "answer, the page's or the terminal's; with nobody at the terminal, the page answers "
        f"({help_path(doc_path('inbox.md'))})",
    )
    last_turn = run.add_mutually_exclusive_group()
    last_turn.add_argument(
        "--continue-turn",
        action="store_true",
        help="continue the conversation's last turn where it stopped (a killed or stopped run), "
        "then the rest of the scenario; finished tool calls are not run again",
    )
    last_turn.add_argument(
        "--new-turn",
        action="store_true",
        help="begin a new turn even though the conversation's last turn did not finish, "
        "leaving it as it is (nothing may be open in it: discard a blocked one with "
        "--discard-turn)",
    )
    last_turn.add_argument(
        "--discard-turn",
        action="store_true",
        help="discard the conversation's unfinished last turn: close its open questions and "
        "tool calls as discarded, deleting nothing; then play the scenario in a new turn, or "
        f"without SCENARIO play nothing ({help_path(doc_path('resume.md'))})",
    )
    run.set_defaults(handler=_run)

    _add_tour(commands)

    serve = commands.add_parser(
        "serve",
        help="answer waiting questions from a browser: the web inbox (the web extra)",
        description="Serve the web inbox: the questions waiting in the conversation "
        "directories under ROOT (parked, or left open by a run that stopped) and in your live "
        "runs (inquiry run --inbox), newest first, each answered with a form made from its "
        "answer type. It prints the address to open, with a token that every request must "
        f"carry ({help_path(doc_path('inbox.md'))}).",
    )
    serve.add_argument(
        "root", nargs="?", default=".", help="the directory of conversations (default: here)"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only)",
    )
    serve.add_argument(
        "--port", type=int, default=8765, help="the port (default 8765; 0 picks a free one)"
    )
    serve.add_argument(
        "--no-live",
        action="store_true",
        help="show only what waits under ROOT, not the questions of live runs",
    )
    serve.set_defaults(handler=_serve)
    return parser


def _add_tour(commands: argparse._SubParsersAction[Parser]) -> None:
    tour = commands.add_parser(
        "tour",
        help="play the tour from the installed examples, or write them out to read and edit",
        description="Play the tour: one turn of a scripted assistant's tool calls whose "
        "questions take every path a question can take, answered by the tour's answers file "
        "(or by you, with --interactive; the deploy token is tour-s3cret-token). It is "
        "inquiry run over the scenario and answers file installed with the command, in "
        f"{help_path(example_path('tour'))}; the examples' README explains every key: "
        f"{help_path(example_path('README.md'))}. The project's docs are installed too, in "
        f"{help_path(doc_path(''))}",
    )
    tour.add_argument(
        "conversation",
        nargs="?",
        metavar="DIR",
        help="the conversation directory to record it in (default: inquiry-tour in the "
        "temporary directory, /tmp/inquiry-tour unless TMPDIR says otherwise)",
    )
    tour_prompting = tour.add_mutually_exclusive_group()
    tour_prompting.add_argument(
        "--interactive",
        dest="interactive",
        action="store_const",
        const=True,
        help="you answer at the terminal; the answers file plays only the model",
    )
    tour_prompting.add_argument(
        "--no-interactive",
        dest="interactive",
        action="store_const",
        const=False,
        help="never prompt (as inquiry run --no-interactive)",
    )
    tour_prompting.add_argument(
        "--write",
        metavar="DIR",
        help="instead of playing it, copy the installed examples (the tour and the others) "
        "to DIR, new or empty, to read, edit and play with inquiry run",
    )
    tour.set_defaults(handler=_tour)


def _failed(error: OSError | UnicodeEncodeError, output: TextIO) -> str:
    """Why ``output`` could not be written; a pipe its reader closed is let go quietly."""
    from coordinator._errors import os_reason  # noqa: PLC0415 - see the imports
    from coordinator.cli._check import to_null_device  # noqa: PLC0415 - see the imports

    if isinstance(error, BrokenPipeError):
        to_null_device(output)
        return "its reader closed it"
    if isinstance(error, UnicodeEncodeError):
        return f"its encoding ({error.encoding}) cannot show the text"
    return os_reason(error)


class _MachineNames:
    """``inquiry table``'s choices: the machines' names, read from :mod:`machines` when asked.

    argparse asks only when it checks ``table``'s argument or shows its
    help (``in`` and iteration are all it uses of choices, and the
    argument's own ``metavar`` spares it spelling them out as the parser is
    built); the parser is
    built for every command, ``--version`` included, which would otherwise
    import the machines (and ``attrs``) for a list it never reads.
    """

    def __iter__(self) -> Iterator[str]:
        """Each machine's name, in the machines' order."""
        from machines import MACHINES  # noqa: PLC0415 - see the class docstring

        return iter([machine.name for machine in MACHINES])

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a machine's name."""
        return name in list(self)


def _version() -> str:
    """The distribution's version: ``pyproject.toml`` reads it from ``coordinator.__version__``.

    The version pip reports is the same one; reading it from
    :mod:`importlib.metadata` would cost ``inquiry --version`` more than all
    the rest it does.
    """
    from coordinator import __version__  # noqa: PLC0415 - --version and --help only

    return __version__


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_UNREADABLE
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    # After the parse: --version and --help have returned by now, with none of it imported.
    from coordinator._errors import CoordinatorError  # noqa: PLC0415 - see the imports
    from coordinator.cli._warnings import shown_warnings  # noqa: PLC0415 - see the imports

    output = out or sys.stdout
    try:
        with shown_warnings(sys.stderr):
            return handler(args, output)
    except CoordinatorError as error:
        # The message may quote the file (an entry's type, a value) or a
        # file name that is not UTF-8, which shows U+FFFD as paths do.
        _error(str(error))
        return EXIT_UNREADABLE
    except (OSError, UnicodeEncodeError) as error:
        # Reading and saving conversations raise CoordinatorErrors; what
        # reaches here is the output failing (subcommands that write files
        # of their own catch their errors).
        _error(f"the output cannot be written: {_failed(error, output)}")
        return EXIT_UNREADABLE
