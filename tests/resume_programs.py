"""``inquiry`` with a pause inside a save of ``events.json``, for the resume crash tests to kill.

``python resume_programs.py POINT N ARGV...`` runs ``inquiry ARGV`` (its
real ``main``, in this process) and stops it in the middle of writing
``events.json``, at the N-th time it reaches POINT:

- ``fsync``: the bytes of the file (or of its temporary file, for a full
  rewrite) are written and not yet synced;
- ``replace``: a full rewrite's temporary file is synced and not yet renamed
  into place;
- ``pwrite``: an append has written half of its bytes.

There it writes ``paused POINT N`` on stderr and waits to be killed. A run
that never gets there ends as ``inquiry`` does, having written
``reached POINT <count>`` on stderr (how many times it passed the point).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from coordinator.cli._main import main

_REAL_FSYNC, _REAL_REPLACE, _REAL_PWRITE = os.fsync, os.replace, os.pwrite
_PAUSE: dict[str, Any] = {"point": "none", "at": 0, "count": 0}
#: How long a paused run waits to be killed before it gives up.
PATIENCE = 60


def _of_events(path: object) -> bool:
    # "events.json" and its temporary files (".events.json.<pid>.<random>.tmp").
    return "events.json" in os.fsdecode(path)  # type: ignore[arg-type]


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")  # noqa: PTH115 - an fd, not a path


def _reached(point: str) -> bool:
    """Count one more pass at ``point``; whether it is the one to stop at."""
    if _PAUSE["point"] != point:
        return False
    _PAUSE["count"] += 1
    return bool(_PAUSE["count"] == _PAUSE["at"])


def _stop() -> None:
    os.write(2, f"paused {_PAUSE['point']} {_PAUSE['at']}\n".encode())
    time.sleep(PATIENCE)
    os._exit(3)  # never killed: the test has failed already


def _fsync(fd: int) -> None:
    if _of_events(_fd_path(fd)) and _reached("fsync"):
        _stop()
    _REAL_FSYNC(fd)


def _replace(source: Any, target: Any, **kwargs: Any) -> None:
    if _of_events(target) and _reached("replace"):
        _stop()
    _REAL_REPLACE(source, target, **kwargs)


def _pwrite(fd: int, data: Any, offset: int) -> int:
    if _of_events(_fd_path(fd)) and _reached("pwrite"):
        _REAL_PWRITE(fd, bytes(data[: len(data) // 2]), offset)
        _stop()
    return _REAL_PWRITE(fd, data, offset)


if __name__ == "__main__":
    point, at, *argv = sys.argv[1:]
    _PAUSE.update(point=point, at=int(at))
    os.fsync, os.replace, os.pwrite = _fsync, _replace, _pwrite  # type: ignore[assignment]
    try:
        status = main(argv)
    finally:
        os.write(2, f"reached {point} {_PAUSE['count']}\n".encode())
    sys.exit(status)
