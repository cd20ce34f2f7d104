"""`inquiry check PATH [--json]`: what it reports, and its exit status."""

from __future__ import annotations

import io
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import jp_conversation, jp_params
from process_helpers import PATIENCE

from coordinator.cli._main import main

STAMP = "2026-03-05 19:31:45.7"
EVENT_KINDS = {
    "chat_request",
    "chat_response",
    "tool_call_request",
    "tool_call_response",
    "inquiry_request",
    "inquiry_response",
}


def check(*args: str) -> tuple[int, str]:
    """Run `inquiry check` in process; the exit status and stdout."""
    out = io.StringIO()
    status = main(["check", *args], out=out)
    return status, out.getvalue()


def check_json(path: Path) -> dict[str, Any]:
    """Run `inquiry check --json`; stdout must be exactly one JSON object."""
    status, text = check(str(path), "--json")
    assert status == 0
    summary = orjson.loads(text)
    assert isinstance(summary, dict)
    return summary


def expected_from_raw(directory: Path) -> dict[str, Any]:
    """The counts check should report, computed from the raw events.json."""
    raw = orjson.loads((directory / "events.json").read_bytes())
    kinds = Counter(entry["type"] for entry in raw)
    markers = [index for index, entry in enumerate(raw) if entry["type"] == "turn_start"]
    first = markers[0] if markers else len(raw)
    leading = any(entry["type"] in EVENT_KINDS for entry in raw[:first])
    return {
        "entries": len(raw),
        "kinds": dict(kinds),
        "turns": len(markers) + leading,
        "inquiry_requests": kinds["inquiry_request"],
        "inquiry_responses": kinds["inquiry_response"],
        "assigned": sum(not isinstance(entry.get("event_id"), str) for entry in raw),
        "layout": "current" if (directory / "base_config.json").is_file() else "legacy",
    }


@pytest.mark.parametrize("source", jp_params())
def test_check_json_reports_what_the_raw_file_holds(source: Path) -> None:
    """--json counts entries, turns, kinds, inquiries and repaired ids like the raw file does."""
    expected = expected_from_raw(source)
    summary = check_json(source)
    assert summary["entries"] == expected["entries"]
    assert summary["kinds"] == expected["kinds"]
    assert summary["turns"] == expected["turns"]
    assert summary["inquiry_requests"] == expected["inquiry_requests"]
    assert summary["inquiry_responses"] == expected["inquiry_responses"]
    assert summary["ids_repaired"] == {"assigned": expected["assigned"], "regenerated": 0}
    assert summary["layout"] == expected["layout"]
    assert summary["unknown_kinds"] == []


@pytest.mark.parametrize("source", jp_params())
def test_check_prints_the_counts_for_a_person(source: Path) -> None:
    """The text report states entries, turns, each kind, inquiries and ids."""
    expected = expected_from_raw(source)
    status, text = check(str(source))
    assert status == 0
    turns = expected["turns"]
    assert f"entries: {expected['entries']} in {turns} turn{'' if turns == 1 else 's'}" in text
    for kind, count in expected["kinds"].items():
        assert f"    {kind}: {count}\n" in text
    assert (
        f"inquiries: {expected['inquiry_requests']} requests, "
        f"{expected['inquiry_responses']} responses"
    ) in text
    assert f"event ids: {expected['assigned']} assigned, 0 regenerated" in text


def test_the_bear_mcp_conversation_has_692_entries_and_41_inquiry_pairs() -> None:
    """The issue's numbers, checked against the raw file and against the report."""
    source = jp_conversation("17728322628-")
    raw = orjson.loads((source / "events.json").read_bytes())
    kinds = Counter(entry["type"] for entry in raw)
    assert (len(raw), kinds["inquiry_request"], kinds["inquiry_response"]) == (692, 41, 41)
    summary = check_json(source)
    assert (summary["entries"], summary["inquiry_requests"], summary["inquiry_responses"]) == (
        692,
        41,
        41,
    )
    assert summary["inquiry_outcomes"] == {"answered": 41, "cancelled": 0, "redacted": 0}


def _inline(tmp_path: Path) -> Path:
    entries: list[dict[str, Any]] = [
        {"event_id": "d0", "type": "config_delta", "timestamp": STAMP, "delta": {}},
        {"timestamp": STAMP, "type": "chat_request", "content": "before any turn"},
        {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
        {
            "event_id": "q1",
            "timestamp": STAMP,
            "type": "inquiry_request",
            "id": "c.a.1",
            "source": {"source": "tool", "name": "t"},
            "question": {"text": "?", "answer_type": {"type": "boolean"}},
        },
        {
            "event_id": "r1",
            "timestamp": STAMP,
            "type": "inquiry_response",
            "id": "c.a.1",
            "answer": 1,
        },
        {
            "event_id": "r2",
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "cancelled",
            "id": "c.b.1",
        },
        {
            "event_id": "r2",
            "timestamp": STAMP,
            "type": "inquiry_response",
            "outcome": "redacted",
            "id": "c.c.1",
        },
        {"event_id": "x1", "type": "hologram", "timestamp": STAMP},
        {"event_id": "x2", "type": "annotation", "timestamp": STAMP},
    ]
    path = tmp_path / "conv" / "events.json"
    path.parent.mkdir()
    path.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def test_check_json_counts_outcomes_unknown_kinds_and_repairs(tmp_path: Path) -> None:
    """Outcomes by kind, unknown kinds kept, one id assigned and one regenerated."""
    path = _inline(tmp_path)
    summary = check_json(path.parent)
    assert summary["path"] == str(path.parent)
    assert summary["layout"] == "legacy"
    assert summary["entries"] == 9
    assert summary["turns"] == 2
    assert summary["kinds"] == {
        "annotation": 1,
        "chat_request": 1,
        "config_delta": 1,
        "hologram": 1,
        "inquiry_request": 1,
        "inquiry_response": 3,
        "turn_start": 1,
    }
    assert summary["unknown_kinds"] == ["annotation", "hologram"]
    assert (summary["inquiry_requests"], summary["inquiry_responses"]) == (1, 3)
    assert summary["inquiry_outcomes"] == {"answered": 1, "cancelled": 1, "redacted": 1}
    assert summary["ids_repaired"] == {"assigned": 1, "regenerated": 1}


def test_check_accepts_the_events_file_path_and_writes_nothing(tmp_path: Path) -> None:
    """The events.json path works as well as the directory, and check never writes."""
    path = _inline(tmp_path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    by_file = check_json(path)
    by_directory = check_json(path.parent)
    assert {k: v for k, v in by_file.items() if k != "path"} == {
        k: v for k, v in by_directory.items() if k != "path"
    }
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.json"]


def test_check_as_a_real_process_prints_json_and_exits_0(tmp_path: Path) -> None:
    """The installed `inquiry` command prints one JSON object, warns of the repair, exits 0."""
    path = _inline(tmp_path)
    script = Path(sys.executable).parent / "inquiry"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "coordinator"]
    done = subprocess.run(
        [*command, "check", "--json", str(path.parent)],
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == 0
    assert orjson.loads(done.stdout)["entries"] == 9
    (warning,) = done.stderr.splitlines()
    assert warning.startswith(f"inquiry: {path}: entry 6 repeats event id 'r2'; regenerated as ")


def test_the_library_itself_prints_no_warnings(tmp_path: Path) -> None:
    """Loading through the API logs the repair but writes nothing to stderr itself."""
    path = _inline(tmp_path)
    code = f"import coordinator; coordinator.load_conversation({str(path.parent)!r})"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_check_needs_a_path() -> None:
    """Without a path the command line is a usage error (argparse exits 2)."""
    with pytest.raises(SystemExit) as caught:
        main(["check"])
    assert caught.value.code == 2
