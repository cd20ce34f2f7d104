"""Where a doc page or an example lives, in a checkout and in an installed wheel alike.

Theory of operation: the wheel carries the project's ``docs/*.md`` and the
whole of ``examples/`` as package data under ``coordinator/cli/_shipped/``
(``pyproject.toml``, ``[tool.setuptools.package-data]``). In a checkout that
directory holds two symbolic links, ``docs -> ../../../docs`` and
``examples -> ../../../examples``: the top-level directories stay the single
source, and the build copies their files into the wheel, so there is no
second copy to drift (``tests/test_packaging.py`` compares a built wheel
with them file by file).

Help and error messages name a page through :func:`doc_path` and an example
through :func:`example_path`: the path of a file that exists wherever the
command runs from, rather than a repository-relative ``docs/X.md`` that an
installed wheel does not have, or an address that is not public. In a
checkout the path is the real one (``docs/X.md`` under the checkout); from a
wheel, the file in ``site-packages``.

Only :mod:`os.path` is used (``os`` is loaded by every interpreter): the help
of every command names pages, and ``inquiry --help`` imports nothing it can
avoid (``tests/test_lazy_exports.py``).
"""

from __future__ import annotations

import os

__all__ = ["SHIPPED", "doc_path", "example_path", "help_path"]

#: The directory of the shipped files: ``docs/`` and ``examples/`` below it.
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shipped")


def doc_path(page: str) -> str:
    """The path of doc page ``page`` (``"headless.md"``) as installed."""
    return os.path.realpath(os.path.join(SHIPPED, "docs", page))


def example_path(*parts: str) -> str:
    """The path of ``examples/<parts...>`` as installed."""
    return os.path.realpath(os.path.join(SHIPPED, "examples", *parts))


def help_path(path: str) -> str:
    """``path`` as argparse help text shows it: ``%`` is its formatting character."""
    return path.replace("%", "%%")
