"""Every printer of `inquiry`: what a file, a tool or a server wrote reaches no terminal raw.

A crafted conversation carries every dangerous sequence (escape sequences that
clear the screen, retitle the window or set the clipboard; C1 controls; DEL;
bidi controls; line and paragraph separators; a line ending followed by a
forged line) in every slot a printer shows. Each command's output is captured
as the bytes written, and must hold none of those characters raw.
"""

from __future__ import annotations

import io
import json
import re
import sys
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from reliability_inputs import STAMP
from run_helpers import write
from test_terminal import asked, at_terminal

from coordinator._text import shown_text
from coordinator.adapters._terminal import printable
from coordinator.cli._check import EXIT_INCOMPLETE_TURN
from coordinator.cli._main import main
from machines import InquirySource, Question, SelectOption, ShowPermissionPrompt

if TYPE_CHECKING:
    from pathlib import Path

    from prompt_toolkit.input import PipeInput

    from coordinator.adapters._terminal import TerminalPrompter

#: Every sequence the printers must defuse, by name.
DANGEROUS = {
    "CSI clear screen": "\x1b[2J\x1b[H",
    "SGR colour": "\x1b[31m",
    "OSC 52 clipboard": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "OSC 0 title": "\x1b]0;pwned\x1b\\",
    "OSC 8 link": "\x1b]8;;https://example.invalid\x1b\\",
    "DCS": "\x1bP+q544e\x1b\\",
    "APC": "\x1b_x\x1b\\",
    "PM": "\x1b^x\x1b\\",
    "SOS": "\x1bXx\x1b\\",
    "C1 CSI": "\x9b2J",
    "C1 OSC": "\x9d0;t\x9c",
    "C1 DCS": "\x90x\x9c",
    "NEL": "\x85",
    "BEL": "\x07",
    "BS": "\x08",
    "NUL": "\x00",
    "VT": "\x0b",
    "FF": "\x0c",
    "DEL": "\x7f",
    "CR": "\rFORGED",
    "LF": "\nFORGED",
    "CRLF": "\r\nFORGED",
    "LRE": "\u202a",
    "RLE": "\u202b",
    "PDF": "\u202c",
    "LRO": "\u202d",
    "RLO": "\u202e",
    "LRI": "\u2066",
    "RLI": "\u2067",
    "FSI": "\u2068",
    "PDI": "\u2069",
    "LRM": "\u200e",
    "RLM": "\u200f",
    "ALM": "\u061c",
    "LS": "\u2028FORGED",
    "PS": "\u2029FORGED",
}
#: All of them in one text.
PAYLOAD = "x" + "".join(DANGEROUS.values())
#: What no output may hold raw: the characters the sequences above are built of.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def assert_defused(written: bytes, *, lines_kept: bool = False) -> None:
    """``written`` holds no raw control, escape or bidi character, and no forged line."""
    text = written.decode("utf-8")
    raw = _RAW.search(text)
    assert raw is None, f"raw {raw[0]!r} at {raw.start()}: {text[raw.start() - 40 : raw.end()]!r}"
    if not lines_kept:  # a single-line slot never starts a line of its own
        assert not any(line.startswith("FORGED") for line in text.split("\n"))


#: What the prompter draws with itself: CSI sequences, and BS and CR to move the cursor.
_PROMPTER_OWN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x08\r]")


def assert_screen_defused(screen: str) -> None:
    """What the prompter drew holds the tool's text, but none of its sequences raw."""
    assert "FORGED" in screen
    for name, sequence in DANGEROUS.items():
        core = sequence.replace("FORGED", "")
        if core not in {"\r", "\n", "\r\n", "\x08"}:  # the prompter's own moves
            assert core not in screen, name
    raw = _RAW.search(_PROMPTER_OWN.sub("", screen))
    assert raw is None, f"raw {raw[0]!r}"


@pytest.mark.parametrize("name", list(DANGEROUS))
def test_the_escaping_function_defuses_each_sequence(name: str) -> None:
    """``shown_text`` leaves none of a sequence's characters raw, in either mode and spelling."""
    for lines in (False, True):
        for shown in (
            shown_text(f"a{DANGEROUS[name]}b", lines=lines),
            shown_text(f"a{DANGEROUS[name]}b", lines=lines, spelling="json"),
        ):
            assert_defused(shown.encode(), lines_kept=lines)


def _entry(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": STAMP, "type": kind, **payload}


def crafted(directory: Path) -> Path:
    """A conversation whose every shown slot holds :data:`PAYLOAD`; its events.json."""
    directory.mkdir(parents=True)
    entries = [
        _entry("turn_start"),
        _entry("chat_request", content=PAYLOAD, author=PAYLOAD),
        # Orphaned: sanitize removes it, naming its kind, event id and id.
        _entry("inquiry_response", event_id=PAYLOAD, outcome="answered", id=PAYLOAD, answer=1),
        _entry("chat_response", message=PAYLOAD),
        # Unanswered: sanitize closes it, naming its id.
        _entry("tool_call_request", id=f"c{PAYLOAD}", name=PAYLOAD, arguments={PAYLOAD: PAYLOAD}),
        _entry(
            "inquiry_request",
            id=f"q{PAYLOAD}",
            source={"source": "other", "name": PAYLOAD},
            question={
                "text": PAYLOAD,
                "answer_type": {
                    "type": "select",
                    "options": [{"value": PAYLOAD, "description": PAYLOAD}],
                },
                "id": PAYLOAD,
                "context": PAYLOAD,
                "default": PAYLOAD,
            },
        ),
        _entry("inquiry_response", outcome="cancelled", id=f"q{PAYLOAD}", reason=PAYLOAD),
        _entry("tool_call_response", id=f"k{PAYLOAD}", content=PAYLOAD, is_error=False),
        # Unknown kinds, kept verbatim: check names them; two share an event id (a warning).
        _entry(PAYLOAD, event_id=f"u{PAYLOAD}"),
        _entry(f"2{PAYLOAD}", event_id=f"u{PAYLOAD}"),
        _entry("compaction", from_turn=0, to_turn=1, summary=PAYLOAD),
    ]
    events = directory / "events.json"
    events.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2))
    (directory / "metadata.json").write_bytes(orjson.dumps({"title": PAYLOAD}))
    return events


def _run_cli(argv: list[str], capfdbinary: pytest.CaptureFixture[bytes]) -> tuple[int, bytes]:
    """Run ``inquiry`` in process; its status, and every byte it wrote to stdout and stderr."""
    capfdbinary.readouterr()
    stdout = io.BytesIO()
    out = io.TextIOWrapper(stdout, encoding="utf-8", write_through=True)
    status = main(argv, out=out)
    captured = capfdbinary.readouterr()
    return status, stdout.getvalue() + captured.out + captured.err


#: A directory name holding every sequence a file name can (a name cannot hold NUL or /).
_NAME = "conv" + PAYLOAD.replace("\x00", "").replace("/", "")


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["check", "--json"],
        ["sanitize", "--dry-run"],
        ["sanitize", "--dry-run", "--json"],
        ["sanitize"],
        ["sanitize", "--json"],
        ["export"],
    ],
    ids=" ".join,
)
def test_a_crafted_conversation_drives_no_terminal(
    command: list[str], tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """check, sanitize (also --dry-run) and export write every file-given text escaped."""
    directory = tmp_path / _NAME
    crafted(directory)
    status, written = _run_cli([*command, str(directory)], capfdbinary)
    # check exits 3: the crafted conversation's last turn is blocked (and reported, escaped).
    assert status == (EXIT_INCOMPLETE_TURN if command[0] == "check" else 0), written
    assert_defused(written, lines_kept=command == ["export"])
    assert b"FORGED" in written  # the text is there, escaped, not dropped
    if command[0] == "sanitize" and "--json" not in command:
        assert b"would remove" in written or b"removed" in written


@pytest.mark.parametrize(
    "fault",
    [
        {"type": "inquiry_response", "outcome": PAYLOAD, "id": "q"},
        {"type": "inquiry_request", "id": "q", "source": {"source": PAYLOAD}, "question": {}},
        {"type": "tool_call_request", "id": "c", "name": "t", "arguments": PAYLOAD},
        {"type": "chat_request"},
    ],
    ids=["outcome", "source", "arguments", "no content"],
)
def test_a_load_error_quoting_the_file_drives_no_terminal(
    fault: dict[str, Any], tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """An error naming a file's entry, its values or its path is one escaped line."""
    directory = tmp_path / _NAME
    directory.mkdir()
    (directory / "events.json").write_bytes(
        orjson.dumps([_entry("turn_start"), fault | {"timestamp": STAMP}])
    )
    for command in (["check"], ["sanitize", "--dry-run"], ["export"]):
        status, written = _run_cli([*command, str(directory)], capfdbinary)
        assert status == 2
        assert written.startswith(b"inquiry: ")
        assert written.count(b"\n") == 1
        assert_defused(written)


def test_a_missing_conversation_named_by_a_crafted_path_drives_no_terminal(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The error naming a directory (say, unpacked from a shared archive) is escaped."""
    status, written = _run_cli(["check", str(tmp_path / _NAME)], capfdbinary)
    assert status == 2
    assert written.count(b"\n") == 1
    assert_defused(written)


def test_the_prompter_shows_a_tools_text_escaped() -> None:
    """Question, context, options, tool and source names reach the screen with nothing raw."""
    question = Question.select(
        "q", PAYLOAD, [SelectOption(value=PAYLOAD, description=PAYLOAD)], context=PAYLOAD
    )

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("\r")
        return await prompter.ask_question(asked(question, InquirySource.other(PAYLOAD)))

    _, screen = at_terminal(work)
    assert_screen_defused(screen)
    assert_defused(printable(PAYLOAD).encode(), lines_kept=True)


def test_the_permission_prompt_shows_a_tools_name_and_arguments_escaped() -> None:
    """A tool name and arguments from the model reach the screen with nothing raw."""

    async def work(prompter: TerminalPrompter, pipe: PipeInput) -> object:
        pipe.send_text("p\rn\r")  # p prints the arguments in full
        return await prompter.ask_permission(
            ShowPermissionPrompt(tool_call_id="c", tool_name=PAYLOAD, arguments={PAYLOAD: PAYLOAD})
        )

    _, screen = at_terminal(work)
    assert_screen_defused(screen)


def test_run_progress_shows_messages_arguments_questions_and_results_escaped(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """``inquiry run`` prints what the scenario, the tool and the answers hold with nothing raw."""
    # As JSON, all but DEL escaped: a TOML basic string spells it the same.
    payload = json.dumps(PAYLOAD).replace("\x7f", "\\u007f")
    tool = write(
        tmp_path / "tool.py",
        f"""\
        import json, sys
        request = json.loads(sys.stdin.readline())
        if "q" in request["answers"]:
            print(json.dumps({{"type": "success", "content": {payload}}}))
        else:
            question = {{"id": "q", "text": {payload}, "answer_type": {{"type": "text"}}}}
            print(json.dumps({{"type": "needs_input", "question": question}}))
        """,
    )
    scenario = write(
        tmp_path / "scenario.toml",
        f"""\
        [tools.t]
        command = ["{sys.executable}", "{tool}"]
        run = "unattended"

        [[turns]]
        message = {payload}
        reply = {payload}

        [[turns.cycles]]
        message = {payload}
        calls = [{{ tool = "t", arguments = {{ a = {payload} }} }}]
        """,
    )
    answers = write(
        tmp_path / "answers.toml",
        f"""\
        [[answers]]
        value = {payload}
        """,
    )
    status, written = _run_cli(
        ["run", str(scenario), "--answers", str(answers), "--conversation", str(tmp_path / "c")],
        capfdbinary,
    )
    assert status == 0, written
    # The message, the reply, the arguments, the question, the answer and the
    # result are shown (cut to a line), the OSC 52 in each escaped.
    assert written.count(b"]52;c;") >= 6
    assert_defused(written)
