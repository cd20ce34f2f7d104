"""The ``inquiry`` command: the top layer, an application of the library.

``inquiry run`` plays a scenario file's turns through the
:class:`~coordinator.driver.ToolCoordinator` (``_run``, ``_scenario``,
``_answer_script``); ``check``, ``sanitize`` and ``export`` read a
conversation (``_check``; ``export`` renders with
:func:`~coordinator.stream.export_markdown`); ``diagram`` and ``table``
render the machines' tables (``_diagram_files``). :func:`main` is the entry
point.

Nothing below imports this package. Its modules import what only they need
when they run, so that ``inquiry check`` starts without the runner, the
providers, asyncio or ``transitions``.
"""

from coordinator.cli._main import main

__all__ = ["main"]
