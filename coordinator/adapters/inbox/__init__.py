"""The web inbox: waiting questions answered from a browser (the ``web`` extra).

``inquiry serve ROOT`` lists the conversations under ``ROOT`` with
questions waiting (parked by a run nobody could answer, or left open by
one that stopped) and the questions of the user's live runs (``inquiry
run --inbox``, or an embedder's :class:`~coordinator.adapters.live.LiveChannel`),
newest first, and answers them: a parked one through the engine's
``answer_waiting`` (under the writer lock, through the machine rows,
recorded ``parked_then_answered`` by ``inbox``), a live one by handing
the answer to the run that asked. See ``docs/inbox.md``.

The application reads and writes through :class:`InboxSource` alone
(:mod:`._source`); :class:`LocalSource` is the embedded default. Starlette,
uvicorn and Jinja2 are imported with this package, never by the rest of
the library.
"""

from coordinator.adapters.inbox._app import TICK, InboxSettings, make_app, new_token
from coordinator.adapters.inbox._serve import bind, serve
from coordinator.adapters.inbox._source import (
    AnswerRefusedError,
    Inbox,
    InboxSource,
    LocalSource,
    Place,
    Skipped,
    Waiting,
    WaitingGroup,
    value_from_form,
)

__all__ = [
    "TICK",
    "AnswerRefusedError",
    "Inbox",
    "InboxSettings",
    "InboxSource",
    "LocalSource",
    "Place",
    "Skipped",
    "Waiting",
    "WaitingGroup",
    "bind",
    "make_app",
    "new_token",
    "serve",
    "value_from_form",
]
