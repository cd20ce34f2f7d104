"""The package imports its public names lazily; every one of them is still there."""

from __future__ import annotations

import subprocess
import sys

import coordinator


def test_every_public_name_has_a_home_and_imports() -> None:
    """Each name in __all__ is mapped to a module, and importing it gives that module's object."""
    assert set(coordinator._LAZY) == set(coordinator.__all__)
    for name in coordinator.__all__:
        value = getattr(coordinator, name)
        module = sys.modules[coordinator._LAZY[name]]
        assert value is getattr(module, name)
    assert set(coordinator.__all__) <= set(dir(coordinator))


def test_the_check_command_does_not_import_the_runner_or_the_providers() -> None:
    """`inquiry check` starts without the runner, the providers, asyncio or transitions."""
    probe = (
        "import sys; from coordinator._cli import main; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'transitions') or m.startswith(('coordinator._run', "
        "'coordinator._providers', 'coordinator._terminal')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == []
