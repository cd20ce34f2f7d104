"""Bad input: a file that cannot be read is refused by name, index and problem, never written."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from process_helpers import PATIENCE

from coordinator import StreamFormatError, load_conversation
from coordinator.cli._main import main

STAMP = "2026-03-05 19:31:45.7"
GOOD: list[dict[str, Any]] = [
    {"timestamp": STAMP, "type": "turn_start"},
    {"timestamp": STAMP, "type": "chat_request", "content": "hi"},
]


def _entries(bad: dict[str, Any] | object) -> bytes:
    return orjson.dumps([*GOOD, bad], option=orjson.OPT_INDENT_2) + b"\n"


# (case id, file bytes, entry index or None, words of the problem)
CASES: list[tuple[str, bytes, int | None, str]] = [
    ("not-json", b'[{"type": "turn_start",', None, "is not valid JSON"),
    ("empty-file", b"", None, "is not valid JSON"),
    ("object", b'{"events": []}', None, "must hold an array of entries, not an object"),
    ("string", b'"events"', None, "must hold an array of entries, not a string"),
    ("entry-not-object", _entries(["turn_start"]), 2, "entry is not an object but an array"),
    ("entry-is-null", _entries(None), 2, "entry is not an object but null"),
    ("missing-type", _entries({"timestamp": STAMP, "content": "x"}), 2, "no string 'type'"),
    ("type-not-string", _entries({"timestamp": STAMP, "type": 7}), 2, "no string 'type'"),
    ("type-is-array", _entries({"timestamp": STAMP, "type": ["x"]}), 2, "no string 'type'"),
    (
        "is-error-yes",
        _entries(
            {
                "timestamp": STAMP,
                "type": "tool_call_response",
                "id": "c",
                "content": "",
                "is_error": "yes",
            }
        ),
        2,
        "tool_call_response: ToolCallResponse.is_error must be bool, not a string",
    ),
    (
        "response-without-outcome-or-answer",
        _entries({"timestamp": STAMP, "type": "inquiry_response", "id": "c.q"}),
        2,
        "inquiry_response: inquiry_response has neither an 'outcome' nor an 'answer'",
    ),
    (
        "chat-response-two-kinds",
        _entries({"timestamp": STAMP, "type": "chat_response", "message": "a", "data": {}}),
        2,
        "chat_response: a chat_response needs exactly one of 'message', 'reasoning', 'data'",
    ),
    (
        "arguments-not-object",
        _entries(
            {
                "timestamp": STAMP,
                "type": "tool_call_request",
                "id": "c",
                "name": "t",
                "arguments": 1,
            }
        ),
        2,
        "tool_call_request: ToolCallRequest.arguments must be an object",
    ),
    (
        "unknown-source",
        _entries(
            {
                "timestamp": STAMP,
                "type": "inquiry_request",
                "id": "c.q",
                "source": {"source": "robot"},
                "question": {"text": "?", "answer_type": {"type": "text"}},
            }
        ),
        2,
        "inquiry_request: unknown inquiry source 'robot'",
    ),
    (
        "metadata-not-object",
        _entries({"timestamp": STAMP, "type": "turn_start", "metadata": "m"}),
        2,
        "turn_start: 'metadata' must be an object",
    ),
    (
        "delta-not-object",
        _entries({"timestamp": STAMP, "type": "config_delta", "delta": [1]}),
        2,
        "config_delta: 'delta' must be an object",
    ),
    (
        "compaction-without-range",
        _entries({"timestamp": STAMP, "type": "compaction", "from_turn": 0}),
        2,
        "compaction: compaction has no 'to_turn'",
    ),
    (
        "bad-timestamp",
        _entries({"timestamp": "last tuesday", "type": "turn_start"}),
        2,
        "turn_start: timestamp 'last tuesday' is not",
    ),
    (
        # orjson says "line 1 column 1 (char 0)" for a byte that is not UTF-8, wherever it is.
        "not-utf8",
        _entries({"timestamp": STAMP, "type": "chat_request", "content": "café"}).replace(
            "é".encode(), b"\xe9"
        ),
        None,
        "is not valid JSON: invalid UTF-8 (byte 0xe9): line 14 column 20 (byte offset 270)",
    ),
]
PARAMS = [pytest.param(data, index, problem, id=case) for case, data, index, problem in CASES]
IS_ERROR_YES = {case: data for case, data, _, _ in CASES}["is-error-yes"]


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "conv" / "events.json"
    path.parent.mkdir()
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("data", "index", "problem"), PARAMS)
def test_a_malformed_stream_is_refused_naming_file_entry_and_problem(
    tmp_path: Path, data: bytes, index: int | None, problem: str
) -> None:
    """Load raises StreamFormatError: '<file>: entry <n>: <problem>' (no entry for whole-file)."""
    path = _write(tmp_path, data)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(path.parent)
    error = caught.value
    assert (error.path, error.index) == (path, index)
    where = f"{path}: entry {index}: " if index is not None else f"{path}: "
    assert str(error).startswith(where)
    assert problem in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize(("data", "index", "problem"), PARAMS)
def test_a_malformed_stream_is_never_written(
    tmp_path: Path, data: bytes, index: int | None, problem: str
) -> None:
    """Neither loading nor `inquiry check` touches the file (bytes and mtime)."""
    del index, problem
    path = _write(tmp_path, data)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    with pytest.raises(StreamFormatError):
        load_conversation(path)
    assert main(["check", str(path.parent)], out=io.StringIO()) == 2
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.json"]


@pytest.mark.parametrize(("data", "index", "problem"), PARAMS)
def test_inquiry_check_prints_one_line_and_exits_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    data: bytes,
    index: int | None,
    problem: str,
) -> None:
    """`inquiry check` on a broken file: one stderr line naming it, no stdout, exit 2."""
    path = _write(tmp_path, data)
    out = io.StringIO()
    assert main(["check", str(path)], out=out) == 2
    assert out.getvalue() == ""
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"inquiry: {path}: ")
    assert problem in lines[0]
    if index is not None:
        assert f"entry {index}:" in lines[0]


def test_inquiry_check_as_a_real_process_exits_2_with_one_line(tmp_path: Path) -> None:
    """The installed command behaves the same: exit 2, one stderr line, nothing written."""
    path = _write(tmp_path, IS_ERROR_YES)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    script = Path(sys.executable).parent / "inquiry"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "coordinator"]
    done = subprocess.run(
        [*command, "check", str(path.parent)],
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"inquiry: {path}: entry 2: tool_call_response: ")
    assert "is_error" in line
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_inquiry_check_on_a_missing_path_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path that holds no conversation cannot be read: exit 2, one line."""
    assert main(["check", str(tmp_path / "nowhere")], out=io.StringIO()) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "does not exist" in line


def test_a_broken_metadata_file_is_refused_by_name(tmp_path: Path) -> None:
    """metadata.json that is not an object names metadata.json, not events.json."""
    path = _write(tmp_path, orjson.dumps(GOOD))
    (path.parent / "metadata.json").write_bytes(b"[]")
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(path.parent)
    assert caught.value.path == path.parent / "metadata.json"
    assert "must hold an object, not an array" in str(caught.value)
