"""The web inbox: a small server-rendered application over an :class:`InboxSource`.

Theory of operation: four pages and two files, every one behind the
token (rules below):

======================  ==============================================================
``GET /``               the inbox: every conversation and live run with questions
                        waiting, newest first, each question with its form
``GET /questions``      the list alone, which the page's script fetches on a change
``GET /events``         server-sent events: one each time the live runs change, and a
                        tick every few seconds (a run that parked something since)
``POST /answer``        one answer; the inbox again, saying whether it was taken
``GET /inbox.css``,     the style sheet and the script (a few lines: on each event,
``GET /inbox.js``       fetch the list, add what is new, drop what is gone, and leave
                        alone a question being answered)
======================  ==============================================================

Rules:

1. A request whose ``Host`` is not the server's own address is refused
   (a web page elsewhere that rebinds a name to 127.0.0.1 gets nothing).
2. Every request carries the token printed at start: the address with
   ``?token=`` sets it as a cookie (``HttpOnly``, ``SameSite=Strict``) and
   sends the browser on to ``/`` without it, so it leaves the address bar;
   a request without it is refused (403).
3. A form carries a second value made from the token (``csrf``), checked
   on every ``POST``, with the request's ``Origin`` when the browser sends
   one: another site's page can neither read nor submit the forms.
4. Every text from a conversation, a tool or a run is escaped by the
   templates (Jinja2's autoescape): a question's text, context, options,
   tool names. The responses forbid scripts but the page's own, framing,
   and sending forms elsewhere (``Content-Security-Policy``).
5. What a form says is handed to the source as text (a boolean's
   ``true``/``false`` made a boolean there): the engine holds it to the
   question and refuses what does not fit, and the page shows why.
6. Nothing of a request is logged: not its address (the token may be in
   it), not its form (a secret may be).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from importlib import resources
from typing import TYPE_CHECKING, Literal

import attrs
import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from coordinator.adapters.inbox._source import AnswerRefusedError, InboxSource, Place
from machines import AnswerKind

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from starlette.requests import Request

    from coordinator.adapters.inbox._source import Inbox, Waiting, WaitingGroup

__all__ = ["TICK", "InboxSettings", "make_app", "new_token"]

_COOKIE = "inquiry_inbox"
#: Seconds between ticks of the event stream, when nothing live changed.
TICK = 5.0
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: a browser would then send a form's Origin as "null" (refused).
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


@attrs.frozen(kw_only=True)
class InboxSettings:
    """The served source, the token, the address served, and what the page says it serves."""

    source: InboxSource
    token: str = attrs.field(repr=False)
    host: str
    port: int
    root_label: str

    @property
    def hosts(self) -> frozenset[str] | None:
        """The ``Host`` values taken (``None``: any, for an address that is not loopback)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        if shown not in _LOOPBACK:
            return None
        return frozenset(f"{host}:{self.port}" for host in (*_LOOPBACK, shown))

    @property
    def csrf(self) -> str:
        """The value a form carries: made from the token, never the token itself."""
        return hmac.new(self.token.encode(), b"inquiry inbox form", hashlib.sha256).hexdigest()


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def group_id(group: WaitingGroup) -> str:
    """The page's id of a group (stable while it waits)."""
    return "g-" + _digest(group.label, group.live, group.busy)


def question_id(group: WaitingGroup, waiting: Waiting) -> str:
    """The page's id of a question: a new one when what can be done with it changes."""
    return "q-" + _digest(
        group.label, waiting.tool_call_id, waiting.question_id, waiting.status, waiting.place
    )


def kind_label(waiting: Waiting) -> str:
    """The answer type, in words."""
    if waiting.answer_type is None:
        return "permission"
    return waiting.answer_type.kind.value


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("coordinator.adapters.inbox", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals.update(
        group_id=group_id,
        question_id=question_id,
        kind_label=kind_label,
        BOOLEAN=AnswerKind.BOOLEAN,
        SELECT=AnswerKind.SELECT,
        TEXT=AnswerKind.TEXT,
        SECRET=AnswerKind.SECRET,
    )
    return environment


class _Pages:
    """The application's handlers, over one source and its settings."""

    def __init__(self, settings: InboxSettings) -> None:
        self.settings = settings
        self.templates = _environment()

    def page(self, inbox: Inbox, *, message: str | None = None, refused: bool = False) -> str:
        return self.templates.get_template("inbox.html").render(
            inbox=inbox,
            csrf=self.settings.csrf,
            root=self.settings.root_label,
            message=message,
            refused=refused,
        )

    async def index(self, _request: Request) -> Response:
        return HTMLResponse(self.page(await self.settings.source.waiting()))

    async def questions(self, _request: Request) -> Response:
        inbox = await self.settings.source.waiting()
        return HTMLResponse(
            self.templates.get_template("_list.html").render(inbox=inbox, csrf=self.settings.csrf)
        )

    async def events(self, _request: Request) -> Response:
        source = self.settings.source

        async def stream() -> AsyncIterator[str]:
            seen = 0
            yield "retry: 2000\n\n"
            while True:
                seen = await source.changed(seen, timeout=TICK)
                yield f"data: {seen}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def answer(self, request: Request) -> Response:
        form = await request.form()
        csrf = form.get("csrf")
        if not isinstance(csrf, str) or not hmac.compare_digest(csrf, self.settings.csrf):
            return PlainTextResponse("the form is not this inbox's (reload the page)", 403)
        place = _place(form.get("kind"), form.get("name"), form.get("inquiry_id"))
        if place is None:
            return PlainTextResponse("the form does not name a question", 400)
        value = form.get("value")
        message, refused = "Answered: the answer was taken.", False
        if not isinstance(value, str):
            message, refused = "No answer was given: choose or type one, then Answer.", True
        else:
            try:
                await self.settings.source.answer(place, value)
            except AnswerRefusedError as error:
                message, refused = f"Not taken: {error}", True
        inbox = await self.settings.source.waiting()
        return HTMLResponse(
            self.page(inbox, message=message, refused=refused),
            status_code=409 if refused else 200,
        )

    async def guard(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        refusal = _refusal(request, self.settings)
        if isinstance(refusal, Response):
            response = refusal
        elif refusal == "set":
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                _COOKIE, self.settings.token, httponly=True, samesite="strict", path="/"
            )
        else:
            response = await call_next(request)
        response.headers.update(_SECURITY_HEADERS)
        return response


def _place(kind: object, name: object, inquiry_id: object) -> Place | None:
    """The place a form names, or ``None`` when it names none."""
    if not isinstance(name, str) or not isinstance(inquiry_id, str):
        return None
    if kind == "live":
        return Place(kind="live", name=name, inquiry_id=inquiry_id)
    if kind == "parked":
        return Place(kind="parked", name=name, inquiry_id=inquiry_id)
    return None


def _file(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    body = resources.files("coordinator.adapters.inbox").joinpath("static", name).read_bytes()

    async def serve(_request: Request) -> Response:
        return Response(body, media_type=media_type)

    return serve


def make_app(settings: InboxSettings) -> Starlette:
    """The inbox application over ``settings.source``."""
    pages = _Pages(settings)
    routes = [
        Route("/", pages.index),
        Route("/questions", pages.questions),
        Route("/events", pages.events),
        Route("/answer", pages.answer, methods=["POST"]),
        Route("/inbox.css", _file("inbox.css", "text/css; charset=utf-8")),
        Route("/inbox.js", _file("inbox.js", "text/javascript; charset=utf-8")),
    ]
    middleware = [Middleware(BaseHTTPMiddleware, dispatch=pages.guard)]
    return Starlette(routes=routes, middleware=middleware)


def _refusal(request: Request, settings: InboxSettings) -> Response | Literal["set"] | None:
    """Why ``request`` is refused (a response); ``"set"``: set the token's cookie; or ``None``."""
    hosts = settings.hosts
    if hosts is not None and request.headers.get("host") not in hosts:
        return PlainTextResponse("this inbox answers at its own address only", 403)
    given = request.query_params.get("token")
    if given is not None:
        if hmac.compare_digest(given.encode(), settings.token.encode()):
            return "set"
        return PlainTextResponse("the token is not this inbox's", 403)
    cookie = request.cookies.get(_COOKIE, "")
    if not hmac.compare_digest(cookie.encode(), settings.token.encode()):
        return PlainTextResponse(
            "open the address `inquiry serve` printed: it carries the inbox's token", 403
        )
    if request.method == "POST":
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host')}"
        if origin is not None and origin != own:
            return PlainTextResponse("a form from another site is refused", 403)
    return None


def new_token() -> str:
    """A fresh random token."""
    return secrets.token_urlsafe(24)
