"""``inquiry check`` pairing, ``inquiry sanitize`` and ``inquiry export``, built and real."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import jp_params
from os_refusals import refuse_creating_files, refuse_searching
from process_helpers import PATIENCE
from reader_streams import (
    answer,
    ask,
    call,
    chat,
    config,
    labels,
    make_stream,
    reply,
    result,
    turn,
)

from coordinator import Conversation, load_conversation, save_conversation
from coordinator.cli._check import EXIT_INCOMPLETE_TURN
from coordinator.cli._main import main

if TYPE_CHECKING:
    from collections.abc import Callable


def run(*argv: str) -> tuple[int, str]:
    """Run the CLI; return its exit status and what it printed on stdout."""
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``directory`` with its bytes and modification time."""
    return {
        path.name: (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(directory.iterdir())
    }


@pytest.fixture
def blocked(tmp_path: Path) -> Path:
    """A conversation with a pending inquiry, an orphaned response and an open tool call."""
    stream = make_stream(
        config(),
        turn(), chat(), call("t1"), ask("t1.q"), answer("t1.q"), result("t1"), reply(),
        turn(), chat(), call("t2"), ask("t2.q"), answer("gone"),
    )  # fmt: skip
    save_conversation(Conversation(stream, metadata={"title": "Blocked"}), tmp_path)
    return tmp_path


def test_check_prints_pairing_totals(blocked: Path) -> None:
    """The human summary gives paired, pending and orphaned totals for both kinds."""
    status, out = run("check", str(blocked))
    assert status == EXIT_INCOMPLETE_TURN  # its last turn is blocked
    assert "  inquiry pairs: 1 paired, 1 pending (blocking), 1 orphaned responses\n" in out
    assert "  tool-call pairs: 1 paired, 1 pending (blocking), 0 orphaned responses\n" in out


def test_check_json_pairs_per_turn(blocked: Path) -> None:
    """``--json`` gives each turn's counts (turns numbered from 1) and the ids left open."""
    status, out = run("check", str(blocked), "--json")
    assert status == EXIT_INCOMPLETE_TURN
    pairing = json.loads(out)["pairing"]
    assert pairing["inquiries"] == {
        "totals": {"paired": 1, "pending": 1, "orphaned": 1},
        "turns": [
            {"turn": 1, "paired": 1, "pending": 0, "orphaned": 0}
            | {"pending_ids": [], "orphaned_ids": []},
            {"turn": 2, "paired": 0, "pending": 1, "orphaned": 1}
            | {"pending_ids": ["t2.q"], "orphaned_ids": ["gone"]},
        ],
    }
    assert [turn["pending_ids"] for turn in pairing["tool_calls"]["turns"]] == [[], ["t2"]]


def test_sanitize_dry_run_reports_and_writes_nothing(blocked: Path) -> None:
    """``--dry-run`` lists what would change and leaves every file as it was."""
    before = snapshot(blocked)
    status, out = run("sanitize", str(blocked), "--dry-run")
    assert status == 0
    assert snapshot(blocked) == before
    lines = out.splitlines()
    assert lines[0] == str(blocked)
    assert lines[1:3] == [
        (
            "  would remove entry 11 (inquiry_request, event e000012, id 't2.q'): "
            "unanswered inquiry request"
        ),
        (
            "  would remove entry 12 (inquiry_response, event e000013, id 'gone'): "
            "orphaned inquiry response"
        ),
    ]
    # The inserted response's event id is fresh, drawn at load: only its shape is known.
    assert re.fullmatch(
        r"  would insert a tool_call_response 'Tool call was interrupted\.' \(event \w+, "
        r"id 't2'\) after entry 10, its unanswered request",
        lines[3],
    )
    assert lines[4:] == ["  dry run: nothing written"]


def test_sanitize_saves_once_then_has_nothing_to_do(blocked: Path) -> None:
    """Without ``--dry-run`` the repair is saved; a second run changes and writes nothing."""
    status, out = run("sanitize", str(blocked), "--json")
    assert status == 0
    report = json.loads(out)
    assert report["dry_run"] is False
    assert report["written"] == [str(blocked / "events.json")]
    assert report["counts"]["removed_unanswered_inquiry_request"] == 1
    assert report["counts"]["removed_orphaned_inquiry_response"] == 1
    assert report["counts"]["inserted_interrupted_tool_call"] == 1
    assert labels(load_conversation(blocked).stream)[-4:] == ["ts", "chat", "call t2", "error t2"]

    after_first = snapshot(blocked)
    status, out = run("sanitize", str(blocked))
    assert status == 0
    assert out == f"{blocked}\n  nothing to sanitize; nothing written\n"
    assert snapshot(blocked) == after_first


def test_sanitize_human_output_names_what_was_written(blocked: Path) -> None:
    """The human report ends with the files it wrote."""
    status, out = run("sanitize", str(blocked))
    assert status == 0
    assert out.endswith(f"  wrote {blocked / 'events.json'}\n")
    assert "  removed entry 11 (inquiry_request" in out


def _unreadable(directory: Path) -> Path:
    (directory / "events.json").write_text('[{"type": "turn_start", "timestamp": ')
    return directory


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["sanitize"],
        ["sanitize", "--dry-run"],
        ["sanitize", "--json"],
        ["export"],
    ],
)
def test_an_unreadable_conversation_exits_2_and_writes_nothing(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that cannot be read gives exit 2, one line on stderr naming it, and no write."""
    directory = _unreadable(tmp_path)
    before = snapshot(directory)
    status, out = run(argv[0], str(directory), *argv[1:])
    assert status == 2
    assert out == ""
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith(f"inquiry: {directory / 'events.json'}: is not valid JSON")
    assert snapshot(directory) == before


def test_export_to_stdout_and_to_a_file(blocked: Path, tmp_path: Path) -> None:
    """``export`` prints Markdown, or writes the same text to ``--output``."""
    status, out = run("export", str(blocked))
    assert status == 0
    assert out.startswith("# Blocked\n\n_Configuration changed._\n\n## Turn 1\n")
    target = tmp_path / "out.md"
    status, printed = run("export", str(blocked), "--output", str(target))
    assert status == 0
    assert printed == ""
    assert target.read_text() == out


def test_export_to_an_unwritable_place_exits_2(
    blocked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An output file that cannot be written gives exit 2 and one line naming it."""
    target = tmp_path / "missing" / "out.md"
    status, _ = run("export", str(blocked), "--output", str(target))
    assert status == 2
    assert capsys.readouterr().err.startswith(f"inquiry: {target}: cannot be written")


def test_export_onto_a_link_writes_through_it(blocked: Path, tmp_path: Path) -> None:
    """``--output`` naming a symbolic link replaces the file it leads to; the link stays."""
    real = tmp_path / "notes" / "conversation.md"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "out.md"
    link.symlink_to(real)
    status, _ = run("export", str(blocked), "--output", str(link))
    assert status == 0
    assert link.is_symlink()
    assert real.read_text().startswith("# Blocked\n")


def test_sanitize_of_a_stream_in_another_file_exits_2_and_writes_nothing(
    blocked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sanitizing backup.json never saves it over its directory's events.json."""
    backup = blocked / "backup.json"
    backup.write_bytes((blocked / "events.json").read_bytes())
    (blocked / "events.json").write_text("[]\n")
    before = snapshot(blocked)
    status, out = run("sanitize", str(backup))
    assert status == 2
    assert out == f"{blocked}\n"  # the report's first line, which tests the output
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"inquiry: {blocked / 'events.json'}: is not the file this conversation's stream was "
        f"read from ({backup}); not overwriting it"
    )
    assert snapshot(blocked) == before


def test_sanitize_in_a_directory_that_cannot_be_written_exits_2(
    blocked: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OS refusing the save is one line naming the file and why: exit 2, nothing written."""
    before = snapshot(blocked)
    refuse_creating_files(monkeypatch, blocked)
    status, out = run("sanitize", str(blocked))
    assert status == 2
    assert out == f"{blocked}\n"  # the report's first line, which tests the output
    assert capsys.readouterr().err == (
        f"inquiry: {blocked / 'events.json'}: cannot be written: Permission denied; "
        "nothing was saved\n"
    )
    assert snapshot(blocked) == before


@pytest.mark.parametrize("command", ["check", "sanitize", "export"])
def test_a_directory_that_cannot_be_searched_exits_2(
    blocked: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """A directory whose files cannot be reached is one line naming the file: exit 2."""
    refuse_searching(monkeypatch, blocked)
    status, out = run(command, str(blocked))
    assert status == 2
    assert out == ""
    assert capsys.readouterr().err == (
        f"inquiry: {blocked / 'events.json'}: cannot be read: Permission denied\n"
    )


@pytest.fixture
def undecodable(blocked: Path) -> Path:
    """The blocked conversation moved into a directory whose name is not UTF-8."""
    target = blocked / os.fsdecode(b"caf\xe9")
    target.mkdir()
    for name in ("events.json", "metadata.json"):
        (blocked / name).rename(target / name)
    return target


@pytest.mark.parametrize("command", ["check", "sanitize"])
def test_json_output_shows_a_name_that_is_not_utf8_with_replacement_characters(
    undecodable: Path, command: str
) -> None:
    """The path in ``--json`` has U+FFFD for each undecodable byte; sanitize still saves."""
    status, out = run(command, str(undecodable), "--json")
    assert status == (EXIT_INCOMPLETE_TURN if command == "check" else 0)  # check: it is blocked
    report = json.loads(out)
    shown = f"{undecodable.parent}/caf\ufffd"
    assert report["path"] == shown
    if command == "sanitize":
        assert report["written"] == [f"{shown}/events.json"]
        assert labels(load_conversation(undecodable).stream)[-1] == "error t2"


@pytest.mark.parametrize("command", ["check", "sanitize"])
def test_a_name_that_is_not_utf8_reaches_a_utf8_terminal(undecodable: Path, command: str) -> None:
    """The installed command prints such a path on a strict UTF-8 stdout (check: blocked, 3)."""
    script = Path(sys.executable).parent / "inquiry"
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "coordinator"]
    done = subprocess.run(
        [*launcher, command, undecodable],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=PATIENCE,
    )
    assert done.returncode == (EXIT_INCOMPLETE_TURN if command == "check" else 0), done.stderr
    assert done.stdout.decode().startswith(f"{undecodable.parent}/caf\ufffd")


# ------------------------------------------------------------ real conversations

# Pair totals in the fixtures folder, verified by hand: a script split each
# events.json into turns at turn_start (an implicit first turn before any),
# listed request and response ids per turn and checked that each id occurs
# once as a request and once, later, as a response in its turn (nothing is
# pending or orphaned anywhere). Keyed by the conversation id.
HAND_COUNTED = {
    "17653152345": {"inquiries": 0, "tool_calls": 5},
    "17662304290": {"inquiries": 0, "tool_calls": 0},
    "17665556205": {"inquiries": 0, "tool_calls": 0},
    "17673969718": {"inquiries": 0, "tool_calls": 0},
    "17727391057": {"inquiries": 3, "tool_calls": 35},
    "17727484633": {"inquiries": 2, "tool_calls": 7},
    "17728322628": {"inquiries": 41, "tool_calls": 230},
    "17732257364": {"inquiries": 4, "tool_calls": 27},
    "17758406187": {"inquiries": 0, "tool_calls": 10},
    "17800836875": {"inquiries": 0, "tool_calls": 24},
}

_KINDS = {
    "inquiries": ("inquiry_request", "inquiry_response"),
    "tool_calls": ("tool_call_request", "tool_call_response"),
}


_TURN_EVENTS = {"chat_request", "chat_response"} | {k for pair in _KINDS.values() for k in pair}


def _raw_turns(raw: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The conversation events of each turn; events before any turn start make the first."""
    turns: list[list[dict[str, Any]]] = []
    for entry in raw:
        if entry["type"] == "turn_start":
            turns.append([])
        elif entry["type"] in _TURN_EVENTS:
            if not turns:
                turns.append([])
            turns[-1].append(entry)
    return turns


def derive_turn_counts(raw: list[dict[str, Any]], kind: str) -> list[dict[str, int]]:
    """Per-turn counts straight from the raw JSON, for files whose ids are unique per turn.

    Independent of the pairing code: with unique ids a request is paired when
    a response of its id comes later in its turn, and that is all it takes.
    """
    request_type, response_type = _KINDS[kind]
    counts = []
    for entries in _raw_turns(raw):
        requests = [(i, e["id"]) for i, e in enumerate(entries) if e["type"] == request_type]
        responses = [(i, e["id"]) for i, e in enumerate(entries) if e["type"] == response_type]
        for listed in (requests, responses):
            repeated = [key for key, n in Counter(key for _, key in listed).items() if n > 1]
            assert not repeated, f"this derivation needs unique ids per turn: {repeated}"
        answered_at = {key: i for i, key in responses}
        paired = sum(1 for i, key in requests if answered_at.get(key, -1) > i)
        pending, orphaned = len(requests) - paired, len(responses) - paired
        counts.append({"paired": paired, "pending": pending, "orphaned": orphaned})
    return counts


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_check_pairs(path: Path) -> None:
    """``check --json`` pair counts, per turn, match the raw file's."""
    raw = json.loads((path / "events.json").read_text())
    status, out = run("check", str(path), "--json")
    assert status == 0
    pairing = json.loads(out)["pairing"]
    for kind in _KINDS:
        per_turn = [
            {key: turn[key] for key in ("paired", "pending", "orphaned")}
            for turn in pairing[kind]["turns"]
        ]
        derived = derive_turn_counts(raw, kind)
        assert per_turn == derived
        totals = pairing[kind]["totals"]
        assert totals == {key: sum(turn[key] for turn in derived) for key in totals}
        hand = HAND_COUNTED.get(path.name.split("-", 1)[0])
        if hand is not None:
            assert totals == {"paired": hand[kind], "pending": 0, "orphaned": 0}


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_sanitize_dry_run(
    path: Path, copy_conversation: Callable[[Path], Path]
) -> None:
    """A dry run succeeds and writes nothing; only a file without turn starts needs one."""
    directory = copy_conversation(path)
    raw = json.loads((directory / "events.json").read_text())
    before = snapshot(directory)
    status, out = run("sanitize", str(directory), "--dry-run", "--json")
    assert status == 0
    assert snapshot(directory) == before
    first_chat = next(i for i, e in enumerate(raw) if e["type"] == "chat_request")
    leading = {e["type"] for e in raw[:first_chat]}
    assert leading <= {"config_delta", "turn_start"}  # so step 1 has nothing to drop
    expected = {} if "turn_start" in leading else {"inserted_missing_turn_start": 1}
    counts = json.loads(out)["counts"]
    assert {reason: n for reason, n in counts.items() if n} == expected


@pytest.mark.parametrize("path", jp_params())
def test_real_conversations_check_and_export(path: Path) -> None:
    """``check`` and ``export`` succeed on every real conversation."""
    status, out = run("check", str(path))
    assert status == 0
    assert "inquiry pairs: " in out
    status, out = run("export", str(path))
    assert status == 0
    title = json.loads((path / "metadata.json").read_text())["title"]
    assert out.startswith(f"# {title}\n")
