"""Files that are not files, directories that are not conversations, outputs that are devices.

A conversation file is opened without blocking and checked on the open
descriptor: a FIFO, a device (a link to ``/dev/zero``), a directory, or a
file over the size limit is refused in one line (exit 2 from the command),
before a byte of it is read. ``inquiry export -o`` writes to a device, a
FIFO or a pipe (``/dev/stdout``) and never replaces it with a regular file.
A directory without ``events.json`` is said to be no conversation; a
directory that may be written but not listed no longer makes a save that
succeeded say that nothing was saved.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from process_helpers import PATIENCE
from run_helpers import TOUR_ANSWERS, TOUR_SCENARIO, cli

from coordinator import ConfigError, StreamFormatError, load_conversation, save_conversation
from coordinator.cli._main import main
from coordinator.store._files import MAX_FILE_SIZE_VARIABLE
from coordinator.store._store import dump_json
from machines import ChatRequest, ChatResponse, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterator

STAMP = "2026-03-05 19:31:45.7"
EVENTS = [
    {"event_id": "t1", "timestamp": STAMP, "type": "turn_start"},
    {"event_id": "c1", "timestamp": STAMP, "type": "chat_request", "content": "hi"},
]
INQUIRY = [sys.executable, "-m", "coordinator"]


def _conversation(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "events.json").write_bytes(dump_json(EVENTS))
    (directory / "metadata.json").write_bytes(dump_json({"title": "files"}))
    (directory / "base_config.json").write_bytes(b"{}\n")
    return directory


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A FIFO nobody writes to or reads from."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _one_error_line(err: str) -> str:
    (line,) = err.splitlines()
    return line


# --------------------------------------------------- not a regular file


@pytest.mark.parametrize("name", ["events.json", "metadata.json", "base_config.json"])
def test_a_fifo_in_place_of_a_conversation_file_is_refused_at_once(
    tmp_path: Path, fifo: Path, name: str
) -> None:
    """A FIFO would block a read for ever: it is refused, naming the file and what it is."""
    directory = _conversation(tmp_path / "conv")
    (directory / name).unlink()
    (directory / name).symlink_to(fifo)
    with pytest.raises(StreamFormatError) as caught:
        load_conversation(directory)
    assert str(caught.value) == (
        f"{directory / name}: is not a regular file but a FIFO; not reading it"
    )


def test_events_json_linked_to_dev_zero_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An endless device is refused before a byte is read: check and run exit 2, one line."""
    directory = _conversation(tmp_path / "conv")
    (directory / "events.json").unlink()
    (directory / "events.json").symlink_to("/dev/zero")
    expected = f"inquiry: {directory / 'events.json'}: is not a regular file but a character "
    status, _, err = cli("check", directory, capsys=capsys)
    assert status == 2
    assert _one_error_line(err).startswith(expected)
    run = ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty", "-c", directory)
    status, _, err = cli(*run, capsys=capsys)
    assert status == 2
    assert _one_error_line(err) == f"{expected}device; not reading it"
    assert sorted(path.name for path in directory.iterdir()) == [
        "base_config.json",
        "events.json",
        "metadata.json",
    ]


def test_events_json_as_a_directory_is_refused(tmp_path: Path) -> None:
    """A directory named events.json is not read as one, nor written over."""
    directory = _conversation(tmp_path / "conv")
    (directory / "events.json").unlink()
    (directory / "events.json").mkdir()
    with pytest.raises(StreamFormatError, match=r"events\.json: is not a regular file but a d"):
        load_conversation(directory)


def test_a_fifo_met_while_saving_is_refused_and_kept(tmp_path: Path, fifo: Path) -> None:
    """Saving into a directory whose events.json is a FIFO reads no byte of it and keeps it."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "events.json").symlink_to(fifo)
    conversation = load_conversation(_conversation(tmp_path / "source"))
    with pytest.raises(StreamFormatError, match="is not a regular file but a FIFO"):
        save_conversation(conversation, directory)
    assert stat.S_ISFIFO((directory / "events.json").stat().st_mode)


# --------------------------------------------------------- the size limit


def test_a_file_over_the_size_limit_is_refused_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """INQUIRY_MAX_FILE_SIZE bounds what is read: a larger file is refused in one line, exit 2."""
    directory = _conversation(tmp_path / "conv")
    size = (directory / "events.json").stat().st_size
    monkeypatch.setenv(MAX_FILE_SIZE_VARIABLE, str(size))
    assert len(load_conversation(directory).stream) == len(EVENTS)  # at the limit: read
    monkeypatch.setenv(MAX_FILE_SIZE_VARIABLE, str(size - 1))
    status, _, err = cli("check", directory, capsys=capsys)
    assert status == 2
    assert _one_error_line(err) == (
        f"inquiry: {directory / 'events.json'}: is {size} bytes, more than the {size - 1} a "
        f"conversation file may be (set {MAX_FILE_SIZE_VARIABLE} to allow more); not reading it"
    )


def test_the_size_limit_is_a_gibibyte_unless_set() -> None:
    """The documented default: 1 GiB."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from coordinator.store._files import max_file_size; print(max_file_size())",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != MAX_FILE_SIZE_VARIABLE},
        timeout=PATIENCE,
    )
    assert done.stdout.strip() == str(1 << 30)


@pytest.mark.parametrize("value", ["lots", "-1", "1.5", "\x1b[2J"])
def test_a_size_limit_that_is_not_a_number_of_bytes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A wrong INQUIRY_MAX_FILE_SIZE is named, never ignored; a control character is escaped."""
    directory = _conversation(tmp_path / "conv")
    monkeypatch.setenv(MAX_FILE_SIZE_VARIABLE, value)
    with pytest.raises(ConfigError) as caught:
        load_conversation(directory)
    assert str(caught.value).startswith(
        f"the environment: {MAX_FILE_SIZE_VARIABLE}: must be a whole number of bytes, not "
    )
    assert "\x1b" not in str(caught.value)


# ---------------------------------------------------------- export -o


def _mknod_null(path: Path) -> None:
    """A character device like /dev/null, made in the test's own directory."""
    null = Path("/dev/null").stat().st_rdev
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, null)
    except PermissionError:
        pytest.skip("device nodes cannot be made here")


def test_export_onto_a_device_node_writes_to_it_and_keeps_it(tmp_path: Path) -> None:
    """-o DEVICE: the export goes to the device; it stays a device, no file replaces it."""
    directory = _conversation(tmp_path / "conv")
    device = tmp_path / "null"
    _mknod_null(device)
    assert main(["export", str(directory), "-o", str(device)], out=io.StringIO()) == 0
    assert stat.S_ISCHR(device.stat().st_mode)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["conv", "null"]


def test_export_into_a_fifo_writes_to_its_reader(tmp_path: Path, fifo: Path) -> None:
    """-o FIFO with a reader: the reader gets the Markdown; the FIFO stays a FIFO."""
    directory = _conversation(tmp_path / "conv")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there first
    try:
        assert main(["export", str(directory), "-o", str(fifo)], out=io.StringIO()) == 0
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert received.startswith(b"# files\n")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_export_into_a_fifo_nobody_reads_is_an_error_not_a_wait(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No reader: one line, exit 2, at once."""
    directory = _conversation(tmp_path / "conv")
    status, _, err = cli("export", directory, "-o", fifo, capsys=capsys)
    assert status == 2
    assert _one_error_line(err) == (
        f"inquiry: {fifo}: cannot be written: No such device or address"
    )
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_export_to_dev_stdout_into_a_pipe_works(tmp_path: Path) -> None:
    """`inquiry export DIR -o /dev/stdout | ...`: the Markdown comes down the pipe."""
    directory = _conversation(tmp_path / "conv")
    done = subprocess.run(
        [*INQUIRY, "export", str(directory), "-o", "/dev/stdout"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"# files\n")
    assert done.stderr == b""


def test_export_to_a_file_named_with_255_bytes_replaces_it(tmp_path: Path) -> None:
    """-o NAME of the longest length a name may have: its temporary file is not too long."""
    directory = _conversation(tmp_path / "conv")
    output = tmp_path / ("o" * 255)
    for _ in range(2):  # created, then replaced
        assert main(["export", str(directory), "-o", str(output)], out=io.StringIO()) == 0
        assert output.read_bytes().startswith(b"# files\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["conv", output.name]


# --------------------------------------------- directories that are not ones


def test_a_directory_that_is_not_a_conversation_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not `.../events.json: does not exist`, but what the directory is and lacks; exit 2."""
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine\n")
    for command in ("check", "export", "sanitize"):
        status, _, err = cli(command, directory, capsys=capsys)
        assert status == 2
        assert _one_error_line(err) == (
            f"inquiry: {directory}: is not a conversation: it has no events.json"
        )
    run = ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty", "-c", directory)
    status, _, err = cli(*run, capsys=capsys)
    assert status == 2
    assert _one_error_line(err).endswith("is not a conversation: it has no events.json")
    assert sorted(path.name for path in directory.iterdir()) == ["notes.txt"]


# ------------------------------------ a directory that may be written, not listed


@pytest.fixture
def unlistable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A conversation directory that may be written and searched, but not read (``-wx``).

    The tests run as root, which mode bits do not stop: the calls that read
    the directory fail as the OS fails them.
    """
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / "events.json").write_bytes(
        dump_json(
            [
                *EVENTS,
                {
                    "event_id": "r1",
                    "timestamp": STAMP,
                    "type": "tool_call_response",
                    "id": "nobody",
                    "content": "b3JwaGFu",
                    "is_error": False,
                },
            ]
        )
    )
    real_open, real_listdir, real_scandir = os.open, os.listdir, os.scandir

    def refused(path: Any) -> bool:
        return Path(os.fsdecode(path)) == directory

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if refused(path) and flags & os.O_ACCMODE == os.O_RDONLY:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    def listdir(path: Any = ".") -> list[str]:
        if refused(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_listdir(path)

    def scandir(path: Any = ".") -> Any:
        if refused(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", scandir)
    yield directory
    monkeypatch.undo()


def test_sanitize_in_an_unlistable_directory_reports_what_it_wrote(
    unlistable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is replaced: the report says so, and warns that the directory was not synced."""
    status, out, err = cli("sanitize", unlistable, capsys=capsys)
    assert status == 0
    assert out.endswith(f"  wrote {unlistable / 'events.json'}\n")
    assert "nothing was saved" not in err
    assert f"inquiry: {unlistable}: cannot be synced (Permission denied)" in err
    kinds = [entry["type"] for entry in orjson.loads((unlistable / "events.json").read_bytes())]
    assert "tool_call_response" not in kinds


def test_appends_in_an_unlistable_directory_are_saved(unlistable: Path) -> None:
    """Writes that succeed are reported as saved there too, appends included."""
    conversation = load_conversation(unlistable, clock=FixedClock(), new_id=CountingIds())
    conversation.stream.append(TurnStart())
    save_conversation(conversation)
    conversation.stream.append(ChatRequest(content="again"))
    conversation.stream.append(ChatResponse.message("and again"))
    assert save_conversation(conversation).appended == (unlistable / "events.json",)
    assert len(orjson.loads((unlistable / "events.json").read_bytes())) == 6


def test_inquiry_run_completes_a_conversation_whose_first_save_was_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock file and metadata.json, no events.json: run goes on, the title kept, one warning."""
    directory = tmp_path / "conv"
    directory.mkdir()
    (directory / ".inquiry.lock").write_bytes(b"999999999\n")
    (directory / "metadata.json").write_bytes(dump_json({"title": "cut short"}))
    run = ("run", TOUR_SCENARIO, "--answers", TOUR_ANSWERS, "--no-tty", "-c", directory)
    status, out, err = cli(*run, capsys=capsys)
    assert status == 0, err
    assert "(0 turns)" in out
    assert err.count("the first save of this conversation did not finish") == 1
    conversation = load_conversation(directory)
    assert conversation.metadata == {"title": "cut short"}
    assert len(conversation.stream.turns()) == 1  # the tour's one turn
    status, out, err = cli(*run, capsys=capsys)
    assert status == 0, err
    assert "(1 turn)" in out
    assert (directory / "base_config.json").read_bytes() == b"{}\n"
