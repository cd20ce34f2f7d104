"""When the `inquiry` command's output or its paths misbehave (coordinator.cli._main).

An output that cannot be written is an error of one line and exit status 2,
found before anything is saved where it can be; `export --output` never
writes over the conversation it reads; what a file names is printed on one
line, and names that are not UTF-8 show U+FFFD in errors as elsewhere.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

import orjson
import pytest
from os_refusals import refuse_writing

from coordinator.cli._main import main

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-03-05 19:31:45.7"


def _needs_sanitizing(directory: Path) -> bytes:
    """A conversation with an orphaned tool-call response; the bytes of its events.json."""
    directory.mkdir()
    events = [
        {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
        {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
        {
            "event_id": "r1",
            "timestamp": STAMP,
            "type": "tool_call_response",
            "id": "nobody",
            "content": "b3JwaGFu",
            "is_error": False,
        },
    ]
    data = orjson.dumps(events, option=orjson.OPT_INDENT_2) + b"\n"
    (directory / "events.json").write_bytes(data)
    (directory / "base_config.json").write_bytes(b"{}\n")
    return data


class _Refusing(io.StringIO):
    """An output that fails as ``error`` once something is written and flushed."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def flush(self) -> None:
        if self.getvalue():
            raise self.error


@pytest.mark.parametrize("json", [False, True], ids=["text", "json"])
def test_sanitize_to_a_full_disk_says_so_in_one_line_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], json: bool
) -> None:
    """Text: the report fails before the save, so nothing is saved.

    JSON: the error says what was saved, since the report lists it and comes after.
    """
    directory = tmp_path / "conv"
    before = _needs_sanitizing(directory)
    args = ["sanitize", str(directory), *(["--json"] if json else [])]
    status = main(args, out=_Refusing(OSError(28, "No space left on device")))
    assert status == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    if json:
        assert error == (
            f"inquiry: {directory / 'events.json'} was saved, but the report cannot be "
            "written: No space left on device\n"
        )
        assert (directory / "events.json").read_bytes() != before
    else:
        assert error == "inquiry: the output cannot be written: No space left on device\n"
        assert (directory / "events.json").read_bytes() == before


def test_a_reader_that_closed_the_pipe_is_told_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inquiry export DIR | head -0`: no traceback."""
    directory = tmp_path / "conv"
    _needs_sanitizing(directory)

    class Closed(io.StringIO):
        def write(self, _: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    assert main(["export", str(directory)], out=Closed()) == 2
    assert (
        capsys.readouterr().err == "inquiry: the output cannot be written: its reader closed it\n"
    )


def test_an_output_whose_encoding_cannot_show_the_text_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PYTHONIOENCODING=latin-1 and a message in Greek: status 2, the encoding named."""
    directory = tmp_path / "conv"
    _needs_sanitizing(directory)
    raw = orjson.loads((directory / "events.json").read_bytes())
    raw[1]["content"] = "καλημέρα"
    (directory / "events.json").write_bytes(orjson.dumps(raw))
    out = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert main(["export", str(directory)], out=out) == 2
    assert capsys.readouterr().err == (
        "inquiry: the output cannot be written: its encoding (latin-1) cannot show the text\n"
    )


@pytest.mark.parametrize("name", ["events.json", "metadata.json", "base_config.json"])
def test_export_never_writes_over_the_conversation_it_exports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """-o DIR/events.json (or its siblings, or through a link): refused, nothing written."""
    directory = tmp_path / "conv"
    _needs_sanitizing(directory)
    (directory / "metadata.json").write_bytes(b'{"title": "t"}\n')
    (tmp_path / "link").symlink_to(directory)
    before = {path.name: path.read_bytes() for path in directory.iterdir()}
    for target in (directory / name, tmp_path / "link" / name):
        assert main(["export", str(directory), "--output", str(target)], out=io.StringIO()) == 2
        assert capsys.readouterr().err == (
            f"inquiry: {target}: is a file of the conversation being exported; "
            "not writing over it (give another --output)\n"
        )
    assert {path.name: path.read_bytes() for path in directory.iterdir()} == before


def test_export_never_writes_over_the_file_a_stream_was_read_from(tmp_path: Path) -> None:
    """Exporting backup.json to backup.json is refused too."""
    directory = tmp_path / "conv"
    data = _needs_sanitizing(directory)
    backup = directory / "backup.json"
    backup.write_bytes(data)
    assert main(["export", str(backup), "--output", str(backup)], out=io.StringIO()) == 2
    assert backup.read_bytes() == data


def test_check_prints_an_unknown_kind_with_line_breaks_or_escapes_on_one_line(
    tmp_path: Path,
) -> None:
    """A kind a file names may hold a newline or an escape sequence: shown escaped."""
    directory = tmp_path / "conv"
    directory.mkdir()
    kind = "weird\n## Turn 5\x1b[31m"
    (directory / "events.json").write_bytes(
        orjson.dumps([{"timestamp": STAMP, "type": kind}, {"timestamp": STAMP, "type": "fine"}])
    )
    out = io.StringIO()
    assert main(["check", str(directory)], out=out) == 0
    (line,) = [line for line in out.getvalue().splitlines() if "kept verbatim" in line]
    assert line == "  kept verbatim (unknown kinds): fine, weird\\n## Turn 5\\x1b[31m"


def test_an_error_shows_a_name_that_is_not_utf8_with_replacement_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As stdout and --json do: the byte 0xff shows as U+FFFD, not a lone surrogate."""
    missing = os.fsdecode(bytes(tmp_path) + b"/bad\xffname/nothing")
    assert main(["check", missing], out=io.StringIO()) == 2
    error = capsys.readouterr().err
    assert "bad\ufffdname" in error
    assert "\udcff" not in error


def test_sanitize_to_an_output_that_cannot_encode_its_report_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report names an id in Greek; a latin-1 output is found out before the save."""
    directory = tmp_path / "conv"
    _needs_sanitizing(directory)
    raw = orjson.loads((directory / "events.json").read_bytes())
    raw[2]["id"] = "κλήση"
    before = orjson.dumps(raw)
    (directory / "events.json").write_bytes(before)
    out = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert main(["sanitize", str(directory)], out=out) == 2
    assert capsys.readouterr().err == (
        "inquiry: the output cannot be written: its encoding (latin-1) cannot show the text\n"
    )
    assert (directory / "events.json").read_bytes() == before


def test_sanitize_does_not_replace_a_read_only_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renaming over it would succeed; a file made read-only is kept: exit 2, nothing saved."""
    directory = tmp_path / "conv"
    before = _needs_sanitizing(directory)
    refuse_writing(monkeypatch, directory / "events.json")
    assert main(["sanitize", str(directory)], out=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        f"inquiry: {directory / 'events.json'}: cannot be written: Permission denied; "
        "nothing was saved\n"
    )
    assert (directory / "events.json").read_bytes() == before
