"""How a recorded route reads: the ``inquiry`` key of an entry's metadata.

Theory of operation: the driver (:mod:`coordinator.driver._routes`) records
with each response who decided it, under one key of the entry's
``metadata``, :data:`ROUTE_KEY` (``docs/wire.md``). This module is the one
place that key is named, and reads it back for ``inquiry export`` and
``inquiry check``; it sits beside the layers, as the shell's shared
vocabulary does, so that reading a conversation never imports the driver.

Rules: a value of another shape (another writer's, or a newer build's) is no
route to this build: it is kept as it is on disk, and read as none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ROUTE_KEY", "RecordedRoute", "recorded_route"]

#: The metadata key this engine writes its routes under.
ROUTE_KEY = "inquiry"


@attrs.frozen(kw_only=True)
class RecordedRoute:
    """A route as an entry records it: who decided, and the detached policy's mode if it did."""

    route: str
    detached: str | None = None

    def __str__(self) -> str:
        """As ``export`` and ``check`` show it: ``person``, ``denied (detached policy: deny)``.

        A permission or a delivery the policy decided reads ``detached policy: auto``.
        """
        said = self.route.replace("_", " ")
        if self.detached is None:
            return said
        if said == "detached policy":
            return f"{said}: {self.detached}"
        return f"{said} (detached policy: {self.detached})"


def _route(value: object) -> RecordedRoute | None:
    if not isinstance(value, Mapping):
        return None
    route, detached = value.get("route"), value.get("detached")
    if not isinstance(route, str) or not (detached is None or isinstance(detached, str)):
        return None
    return RecordedRoute(route=route, detached=detached)


def recorded_route(
    metadata: Mapping[str, Any], decision: str | None = None
) -> RecordedRoute | None:
    """The route an entry's (decoded) ``metadata`` records, if it records one this build reads.

    ``decision``: ``"permission"`` or ``"delivery"`` for a tool call's
    response; ``None`` for an inquiry response.
    """
    recorded = metadata.get(ROUTE_KEY)
    if not isinstance(recorded, Mapping):
        return None
    return _route(recorded if decision is None else recorded.get(decision))
