"""What the tests that start other processes share: a save from another process, a pid's life."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["CRASH_PROGRAMS", "PATIENCE", "is_running", "other_process_saves"]

#: The programs the crash and lock tests run as other processes.
CRASH_PROGRAMS = Path(__file__).with_name("crash_programs.py")
#: How long a test waits for another process before it fails, in seconds.
PATIENCE = 60


def other_process_saves(directory: Path) -> str:
    """What a save from another process says: ``saved`` or ``refused <error>``."""
    done = subprocess.run(
        [sys.executable, str(CRASH_PROGRAMS), "save", str(directory)],
        capture_output=True,
        check=True,
        timeout=PATIENCE,
    )
    return done.stdout.decode().strip()


def is_running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return False
    return fields[0] not in (b"Z", b"X")
