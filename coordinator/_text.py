"""How text from outside the program is shown: the shell's vocabulary for output.

Not a layer: every layer may use it, and it imports nothing of the shell (an
import contract holds it to that). What is here is the one place each rule
lives:

- :func:`shown_path`: a file name as text any output can carry.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["shown_path"]


def shown_path(path: Path | str) -> str:
    """``path`` as text any output can carry: bytes that are not UTF-8 become U+FFFD.

    A file name is bytes, and one that is not UTF-8 decodes to lone
    surrogates, which neither JSON nor a UTF-8 terminal can carry. Replacing
    them is what JP (Rust's ``to_string_lossy``) shows for such a name; the
    text then names the file for a person, not for opening it.
    """
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:  # a surrogate no file name decodes to: not from the OS
        raw = os.fspath(path).encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")
