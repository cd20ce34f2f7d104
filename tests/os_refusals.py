"""The OS refusing the store, without needing its permissions.

The tests run as root too, where a read-only or unsearchable directory is
neither: instead of ``chmod``, the calls that would fail are made to fail,
with the error the OS gives.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest


def refuse_creating_files(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Make ``directory`` one the OS creates no file in, as if it were read-only."""
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT and Path(os.fsdecode(path)).parent == directory:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)


def refuse_searching(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Make the files of ``directory`` unreachable, as without its search permission."""
    real_stat, real_open = Path.stat, Path.open

    def refuse(path: Path) -> None:
        if path.parent == directory:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))

    def stat(self: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        refuse(self)
        return real_stat(self, *args, **kwargs)

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        refuse(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    monkeypatch.setattr(Path, "open", open_)


def refuse_writing(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Make ``path`` a file its writer may not write, as a read-only file is to its owner."""
    real_access = os.access

    def access(target: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if mode & os.W_OK and Path(os.fsdecode(target)) == path:
            return False
        return real_access(target, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
