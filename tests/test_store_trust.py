"""A conversation directory is data from anywhere: what its lock file may and may not direct.

The lock file is trusted by a writer only when it is a regular file with one
link, owned by the writer's user, writable by nobody else, and opened for
writing; otherwise the writer refuses, naming it and why, and writes
nothing; a reader warns and acts on no record in it. An undo record planted
by another user cuts nothing. ``inquiry export -o`` never replaces a file of
the conversation's own. A refusal names the holder's pid only when it is
checked (this user's process, holding a lock on that very file), and no
text tells anyone to kill a pid read from the file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from conftest import CountingIds, FixedClock
from process_helpers import CRASH_PROGRAMS, PATIENCE, other_process_saves
from run_helpers import cli

from coordinator import Conversation, StreamFormatError, load_conversation, save_conversation
from coordinator.store import ConversationLockedError
from coordinator.store._lock import LOCK_FILE
from coordinator.store._running import RUNNING_FILE
from machines import ChatRequest, ChatResponse, TurnStart

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
#: Entries of the conversations here: enough that a cut to one is plain to see.
ENTRIES = 36


def _conversation(directory: Path, entries: int = ENTRIES) -> Path:
    """A conversation of ``entries`` entries, saved and let go."""
    conversation = Conversation.new(
        metadata={"title": "t"}, base_config={}, clock=FixedClock(), new_id=CountingIds()
    )
    conversation.stream.append(TurnStart())
    for number in range(entries - 1):
        conversation.stream.append(ChatRequest(content=f"message {number}"))
    save_conversation(conversation, directory)
    conversation.close()
    return directory


def _entries(directory: Path) -> int:
    return len(orjson.loads((directory / "events.json").read_bytes()))


def _forged_record(directory: Path) -> bytes:
    """A forged undo record naming events.json, its very device and inode.

    As if the first entry had been all there was before an append: acted
    on, it would cut the file to that one entry.
    """
    events = directory / "events.json"
    status = events.stat()
    data = events.read_bytes()
    start = data.index(b"\n  },\n") + len(b"\n  }")  # just after the first entry
    record = {
        "device": status.st_dev,
        "inode": status.st_ino,
        "size": start + 3,
        "new_size": status.st_size + 10,
        "digest": hashlib.sha256(b"not what is there").hexdigest(),
        "pid": 1,
    }
    return orjson.dumps({"append": record}) + b"\n"


def _another_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on this process is another user than the one owning every file so far."""
    euid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: euid + 1)


# ------------------------------------------------------ a lock file another user planted


def test_an_undo_record_another_user_planted_cuts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another user's lock file in a shared directory: the writer refuses it, readers warn.

    Its forged undo record would cut events.json from 36 entries to 1: the
    writer refuses, naming the file and its owner, and writes nothing; a
    reader reads all 36 entries and says why it ignored the record.
    """
    directory = _conversation(tmp_path / "shared")
    (directory / LOCK_FILE).write_bytes(b"1\n" + _forged_record(directory))
    before = (directory / "events.json").read_bytes()
    _another_user(monkeypatch)  # the victim: the lock file is the planter's
    loaded = load_conversation(directory)
    assert len(loaded.stream) == ENTRIES
    assert "is owned by another user" in caplog.text
    assert "what it records is not acted on" in caplog.text
    loaded.stream.append(ChatResponse.message("the victim's"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(loaded)
    assert str(caught.value).startswith(
        f"{directory / LOCK_FILE}: is owned by another user (uid {directory.stat().st_uid}); "
        "not writing with it"
    )
    assert (directory / "events.json").read_bytes() == before


def test_a_lock_file_others_may_write_is_narrowed_or_refused(tmp_path: Path) -> None:
    """Mode 0666: made 0644 when empty; refused when holding a record anyone could have written."""
    directory = _conversation(tmp_path / "conv")
    lock = directory / LOCK_FILE
    lock.chmod(0o666)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("narrowed"))
    save_conversation(conversation)
    conversation.close()
    assert lock.stat().st_mode & 0o777 == 0o644
    lock.write_bytes(b"\n" + _forged_record(directory))
    lock.chmod(0o666)
    before = (directory / "events.json").read_bytes()
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("refused"))
    with pytest.raises(StreamFormatError, match="can be written by other users"):
        save_conversation(conversation)
    assert (directory / "events.json").read_bytes() == before


# ------------------------------------------------------ around the writer lock


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A conversation and a real process holding its writer lock (killed afterwards)."""
    directory = _conversation(tmp_path / "conv")
    process = subprocess.Popen(
        [sys.executable, str(CRASH_PROGRAMS), "hold", str(directory)], stdout=subprocess.PIPE
    )
    with process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().decode().strip() == f"holding {process.pid}"
            yield directory, process
        finally:
            process.kill()
            process.wait(timeout=PATIENCE)


def test_a_lock_file_that_cannot_be_opened_is_no_way_around_the_lock(
    holder: tuple[Path, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode 000 as an archive can leave it: not "no lock" (a second writer), but a refusal."""
    directory, _ = holder
    lock = directory / LOCK_FILE
    real_open = os.open

    def mode_000(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(os.fsdecode(path)) == lock:
            if flags & os.O_CREAT and flags & os.O_EXCL:  # it exists, whatever its mode
                raise FileExistsError(errno.EEXIST, "File exists", os.fsdecode(path))
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    before = (directory / "events.json").read_bytes()
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("a second writer"))
    monkeypatch.setattr(os, "open", mode_000)
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value).startswith(
        f"{lock}: cannot be opened for writing (Permission denied); not writing to this "
        "conversation without its lock"
    )
    monkeypatch.undo()
    assert (directory / "events.json").read_bytes() == before


def test_a_lock_file_hard_linked_to_events_json_empties_nothing(tmp_path: Path) -> None:
    """A lock file sharing events.json's inode (tar and cp -a keep hard links): refused."""
    directory = _conversation(tmp_path / "conv")
    (directory / LOCK_FILE).unlink()
    os.link(directory / "events.json", directory / LOCK_FILE)
    before = (directory / "events.json").read_bytes()
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("linked"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert str(caught.value).startswith(f"{directory / LOCK_FILE}: has 2 links ")
    assert (directory / "events.json").read_bytes() == before
    assert _entries(directory) == ENTRIES


@pytest.mark.parametrize("own", [LOCK_FILE, RUNNING_FILE])
def test_export_never_writes_over_a_file_of_the_conversations_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own: str
) -> None:
    """`inquiry export DIR -o DIR/.inquiry.lock` (or the running record): refused, kept."""
    directory = _conversation(tmp_path / "conv")
    target = directory / own
    target.write_bytes(b"kept\n")
    status, _, err = cli("export", directory, "-o", target, capsys=capsys)
    assert status == 2
    assert err == (
        f"inquiry: {target}: is a file of the conversation being exported; not writing over "
        "it (give another --output)\n"
    )
    assert target.read_bytes() == b"kept\n"


# ------------------------------------------------------ the pid a refusal names


#: Hold the lock of sys.argv[1], its first line naming the pid sys.argv[2] (not this process).
_LYING_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1] + "/.inquiry.lock", os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0)
os.write(fd, (sys.argv[2] + "\\n").encode())
print("holding", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("named", ["init", "this test"])
def test_a_refusal_names_no_pid_it_cannot_check(tmp_path: Path, named: str) -> None:
    """The lock file says pid 1 (or this very process): the holder is said not known."""
    directory = _conversation(tmp_path / "conv")
    pid = 1 if named == "init" else os.getpid()
    with subprocess.Popen(
        [sys.executable, "-c", _LYING_HOLDER, str(directory), str(pid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == b"holding\n"
            conversation = load_conversation(directory)
            conversation.stream.append(ChatResponse.message("mine"))
            with pytest.raises(ConversationLockedError) as caught:
                save_conversation(conversation)
            assert other_process_saves(directory).startswith(
                f"refused {directory}: is being written by another process (its pid is not known)"
            )
        finally:
            process.communicate(timeout=PATIENCE)
    assert caught.value.pid is None
    assert "(its pid is not known)" in str(caught.value)


def test_a_lock_another_user_holds_names_no_pid(
    holder: tuple[Path, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held by another user's process: the refusal says whose file it is, and names no pid."""
    directory, process = holder
    _another_user(monkeypatch)
    conversation = load_conversation(directory)
    conversation.stream.append(ChatResponse.message("mine"))
    with pytest.raises(StreamFormatError) as caught:
        save_conversation(conversation)
    assert "is owned by another user" in str(caught.value)
    assert str(process.pid) not in str(caught.value)


#: A kill whose pid is read out of the lock file (by head, cat, sed, awk or a redirection).
_UNCHECKED_KILL = re.compile(r"kill[^\n]*(head|cat|sed|awk|<)[^\n]*\.inquiry\.lock")


def test_no_text_suggests_killing_a_pid_read_from_the_lock_file() -> None:
    """The README, the docs and the messages never say to kill whatever pid the file names."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "coordinator").rglob("*.py"))
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in texts
        for match in _UNCHECKED_KILL.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
