"""How a recorded route reads: the ``inquiry`` key of an entry's metadata.

Theory of operation: the driver (:mod:`coordinator.driver._routes`) records
with each response who decided it, under one key of the entry's
``metadata``, :data:`ROUTE_KEY` (``docs/wire.md``). This module is the one
place that key is named, and reads it back for ``inquiry export`` and
``inquiry check``; it sits beside the layers, as the shell's shared
vocabulary does, so that reading a conversation never imports the driver.

The same key marks a request the detached policy parked (``park``, ours):
an ``inquiry_request`` (a question) or a ``tool_call_request`` (a
permission) whose entry's metadata holds
``{"inquiry": {"parked": {"prompt": "tool", "since": "<time>"}}}`` was
parked by its writer, which is how a reader tells a prompt parked on
purpose from one a run left open when it died (``docs/headless.md``).
:func:`with_park` writes the mark into a metadata, :func:`recorded_park`
reads it back. A question parked and answered later records with its
route who gave the answer: ``{"route": "parked_then_answered", "by":
"inbox"}``.

A discarded turn (``ToolCoordinator.discard_turn``, ``inquiry run
--discard-turn``) is closed with records whose route is
:data:`DISCARDED_ROUTE`: each question that was open, ``{"inquiry":
{"route": "discarded"}}`` on its ``Cancelled(discarded)``, and each tool
call that was open, the same on its ``tool_call_response``. A turn whose
last event is such a close was discarded, and is finished
(:func:`~coordinator.stream.find_incomplete_turn`).

Rules: a value of another shape (another writer's, or a newer build's) is no
route to this build: it is kept as it is on disk, and read as none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "DISCARDED_ROUTE",
    "PARKED_KEY",
    "ROUTE_KEY",
    "RecordedPark",
    "RecordedRoute",
    "recorded_park",
    "recorded_route",
    "with_park",
]

#: The metadata key this engine writes its routes under.
ROUTE_KEY = "inquiry"
#: Under :data:`ROUTE_KEY` of a request's metadata: the writer parked it.
PARKED_KEY = "parked"
#: The route of what a discarded turn's closes record (a question's and a tool call's).
DISCARDED_ROUTE = "discarded"


@attrs.frozen(kw_only=True)
class RecordedRoute:
    """A route as an entry records it: who decided, and the detached policy's mode if it did."""

    route: str
    detached: str | None = None
    #: Who gave the answer, for a prompt parked and answered later (``person``, ``inbox``).
    by: str | None = None

    def __str__(self) -> str:
        """As ``export`` and ``check`` show it: ``person``, ``denied (detached policy: deny)``.

        A permission or a delivery the policy decided reads ``detached policy: auto``; a
        prompt parked and answered later, ``parked then answered (by inbox)``.
        """
        said = self.route.replace("_", " ")
        if self.by is not None:
            said += f" (by {self.by.replace('_', ' ')})"
        if self.detached is None:
            return said
        if said == "detached policy":
            return f"{said}: {self.detached}"
        return f"{said} (detached policy: {self.detached})"


def _route(value: object) -> RecordedRoute | None:
    if not isinstance(value, Mapping):
        return None
    route, detached, by = value.get("route"), value.get("detached"), value.get("by")
    if not isinstance(route, str) or not all(
        field is None or isinstance(field, str) for field in (detached, by)
    ):
        return None
    return RecordedRoute(route=route, detached=detached, by=by)


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


@attrs.frozen(kw_only=True)
class RecordedPark:
    """A request's park mark: the kind of prompt (``tool``: a question; ``run``: a permission).

    ``since`` is when it was parked, as recorded (a timestamp's text).
    """

    prompt: str
    since: str


def recorded_park(metadata: Mapping[str, Any]) -> RecordedPark | None:
    """The park mark a request's (decoded) ``metadata`` holds, if it holds one this build reads."""
    recorded = metadata.get(ROUTE_KEY)
    parked = recorded.get(PARKED_KEY) if isinstance(recorded, Mapping) else None
    if not isinstance(parked, Mapping):
        return None
    prompt, since = parked.get("prompt"), parked.get("since")
    if not isinstance(prompt, str) or not isinstance(since, str):
        return None
    return RecordedPark(prompt=prompt, since=since)


def with_park(metadata: Mapping[str, Any], park: RecordedPark) -> dict[str, Any]:
    """``metadata`` with the park mark ``park`` added; everything else in it kept as it is.

    Another writer's value under the key, of a shape this build does not
    read, is kept too: the mark is then not written (the request reads as
    left open).
    """
    recorded = metadata.get(ROUTE_KEY)
    if recorded is not None and not isinstance(recorded, Mapping):
        return dict(metadata)
    ours = dict(recorded) if recorded is not None else {}
    ours[PARKED_KEY] = {"prompt": park.prompt, "since": park.since}
    return {**metadata, ROUTE_KEY: ours}
