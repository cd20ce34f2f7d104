"""A run's live channel: its questions on the inbox as they are asked, and answers from there.

Theory of operation: :meth:`LiveChannel.open` listens on a Unix socket of
the run's own in the user's live directory (:mod:`._spool`); every inbox
that connects is told who the run is and every question waiting now, then
each change as it happens. The coordinator tells the channel of its steps
(:meth:`LiveChannel.observe`, its ``on_step``): a question queued for the
person or shown (the driver's ``QueueQuestion`` and ``ShowQuestion``
effects) is put on the page, with its tool, text, context, type and
default; a question closed, however (the terminal, a remembered answer, a
cancel, the run stopping), is taken off it. So the parallel questions of
a turn show together, while the driver still shows the terminal one at a
time.

:class:`LivePrompter` is the prompter the coordinator is given. Asked a
question, it waits for whichever comes first: the person at the terminal
(the ``inner`` prompter, when there is one) or an answer from the inbox;
the other is withdrawn (the terminal prompt is cancelled, and comes off
the screen; the page is told). An answer from the inbox to a question
still queued is held until the driver shows it, and is then taken at
once. Permission and delivery prompts go to the inner prompter alone;
with none, they are unanswered (:class:`~coordinator.driver.PromptUnanswered`),
and the tool's detached policy decides.

Rules:

1. The first answer wins, and is recorded once, by the driver, through
   the machine rows, as any answer given at the terminal: route
   ``person``, with ``"by": "inbox"`` when it came from the page.
2. An answer from the inbox is held to its question before it is taken
   (its type, its options): one that does not fit is refused, saying what
   it must be, and nothing changes.
3. An answer to a secret crosses only the socket, and is handed to the
   tool wrapped (:class:`~machines.SecretValue`); it is never remembered,
   written or logged.
4. A peer of another user is refused where the system tells who it is
   (``SO_PEERCRED``); the directory is the user's alone in any case.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import secrets
import socket
import struct
from typing import TYPE_CHECKING

import attrs

from coordinator.adapters.live._messages import (
    LINE_LIMIT,
    Answer,
    Asked,
    Gone,
    MessageError,
    Reply,
    RunHello,
    decode,
    encode,
)
from coordinator.adapters.live._spool import SOCKET_SUFFIX, live_directory
from coordinator.driver import DeliveryPrompter, PromptUnanswered, QuestionAnswer
from coordinator.stream import Timestamp
from machines import QueueQuestion, SecretValue, ShowQuestion

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from coordinator.driver import (
        DeliveryAnswer,
        PermissionAnswer,
        Prompter,
        StepFacts,
    )
    from machines import Question, ShowDeliveryPrompt, ShowPermissionPrompt, ToolAnswer

__all__ = ["INBOX", "LiveChannel", "LivePrompter", "peer_uid"]

_LOG = logging.getLogger("coordinator")

#: Who answered, as recorded with an answer given on the page.
INBOX = "inbox"


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of ``sock``, where the system tells it."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or sock.family != socket.AF_UNIX:
        return None
    credentials = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", credentials)
    return int(uid)


@attrs.define
class _Waiting:
    """A question on the page, and the answer the inbox gave it (done once given).

    An answer given is kept here until the driver shows the question and
    takes it (:meth:`LiveChannel.answer_for`); the page is told at once.
    """

    asked: Asked
    answer: asyncio.Future[QuestionAnswer]


def _now() -> str:
    """Now, as a conversation stamps its records (and so as a parked question's ``since``)."""
    return str(Timestamp.from_datetime(dt.datetime.now(dt.UTC)))


class LiveChannel:
    """The run's end of the live inbox: its socket, and the questions waiting on the page."""

    def __init__(self, path: Path, *, conversation: str | None, title: str | None) -> None:
        """Prepare a channel listening at ``path`` (see :meth:`open`)."""
        self.path = path
        self._hello = RunHello(pid=os.getpid(), conversation=conversation, title=title)
        self._waiting: dict[str, _Waiting] = {}
        self._peers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[object]] = set()
        self._server: asyncio.Server | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        *,
        conversation: Path | None = None,
        title: str | None = None,
        directory: Path | None = None,
    ) -> AsyncIterator[LiveChannel]:
        """Listen for inboxes while the block runs; the socket is removed after it.

        ``conversation`` and ``title`` say on the page whose questions these
        are. ``directory``: the live directory (by default the user's,
        :func:`~coordinator.adapters.live.live_directory`, checked).
        """
        where = live_directory() if directory is None else directory
        path = where / f"{os.getpid()}-{secrets.token_hex(4)}{SOCKET_SUFFIX}"
        channel = cls(
            path, conversation=None if conversation is None else str(conversation), title=title
        )
        channel._server = await asyncio.start_unix_server(
            channel._serve, path=str(path), limit=LINE_LIMIT
        )
        path.chmod(0o600)
        try:
            yield channel
        finally:
            await channel.close()

    async def close(self) -> None:
        """Stop listening: the page is told every question is gone, and the socket removed."""
        if self._server is None:
            return
        self._server.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        for key in list(self._waiting):
            self._withdraw(key, "the run stopped")
        for peer in list(self._peers):
            peer.close()
        # Each connection's reader then sees its end, and its handler returns.
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=1.0)
        await self._server.wait_closed()
        self._server = None

    def prompter(self, inner: Prompter | None = None) -> LivePrompter:
        """The prompter that asks on the page and, with ``inner``, at the terminal too."""
        return LivePrompter(self, inner)

    @property
    def waiting(self) -> tuple[Asked, ...]:
        """The questions on the page now, in the order they were asked."""
        return tuple(w.asked for w in self._waiting.values() if not w.answer.done())

    # ------------------------------------------------------------- the steps

    def observe(self, step: StepFacts) -> None:
        """Told each step of the coordinator: put queued questions up, take closed ones down."""
        for effect in step.effects:
            if isinstance(effect, QueueQuestion | ShowQuestion):
                self.offer(
                    effect.inquiry_id, effect.tool_call_id, effect.tool_name, effect.question
                )
        question = step.question
        if question is not None and question.resolution is not None and question.inquiry_id:
            how = question.resolution.name.lower().replace("_", " ")
            self._withdraw(question.inquiry_id, f"closed ({how})")

    def offer(self, key: str, tool_call_id: str, tool_name: str, question: Question) -> None:
        """Put a question on the page (once: offered again, it stays as it was)."""
        if key in self._waiting:
            return
        asked = Asked(
            key=key,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            inquiry_id=key,
            since=_now(),
            question=question,
        )
        future: asyncio.Future[QuestionAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[key] = _Waiting(asked=asked, answer=future)
        self._tell(asked)

    def _withdraw(self, key: str, why: str) -> None:
        waiting = self._waiting.pop(key, None)
        if waiting is None:
            return
        if not waiting.answer.done():
            waiting.answer.cancel()
        self._tell(Gone(key=key, why=why))

    async def answer_for(self, key: str) -> QuestionAnswer:
        """The inbox's answer to question ``key`` (waits for it); the question is then done."""
        answer = await asyncio.shield(self._waiting[key].answer)
        self._waiting.pop(key, None)
        return answer

    def done(self, key: str, why: str) -> None:
        """Question ``key`` was answered elsewhere (the terminal): it leaves the page."""
        self._withdraw(key, why)

    # ----------------------------------------------------------- the inboxes

    def _tell(self, message: Asked | Gone) -> None:
        line = encode(message)
        for peer in list(self._peers):
            if peer.is_closing():
                self._peers.discard(peer)
                continue
            peer.write(line)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None and peer_uid(sock) not in (None, os.geteuid()):
            _LOG.warning("live inbox: a process of another user connected; refused")
            writer.close()
            return
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
            handler.add_done_callback(self._handlers.discard)
        writer.write(encode(self._hello))
        for waiting in self._waiting.values():
            if not waiting.answer.done():
                writer.write(encode(waiting.asked))
        self._peers.add(writer)
        try:
            while line := await reader.readline():
                writer.write(encode(self._take(_answer(decode(line)))))
        except (MessageError, ValueError, ConnectionError) as error:
            _LOG.warning("live inbox: a connection was dropped: %s", error)
        finally:
            self._peers.discard(writer)
            writer.close()

    def _take(self, answer: Answer) -> Reply:
        waiting = self._waiting.get(answer.key)
        if waiting is None or waiting.answer.done():
            return Reply(
                ask=answer.ask,
                taken=False,
                reason="the question is no longer asked: it was answered or closed meanwhile",
            )
        question = waiting.asked.question
        answer_type = question.answer_type
        if not answer_type.accepts(answer.value):
            return Reply(
                ask=answer.ask,
                taken=False,
                reason=f"question {question.id!r} takes {answer_type.expected()}; nothing taken",
            )
        value: ToolAnswer = answer.value
        if answer_type.is_secret and isinstance(answer.value, str):
            value = SecretValue(answer.value)
        # Kept until the driver asks for it (a queued question's turn may come later).
        waiting.answer.set_result(QuestionAnswer(value=value, by=INBOX))
        self._tell(Gone(key=answer.key, why="answered from the inbox"))
        return Reply(ask=answer.ask, taken=True)


def _answer(message: object) -> Answer:
    if not isinstance(message, Answer):
        raise MessageError("an inbox sends answers only")
    return message


class LivePrompter:
    """Asks on the live inbox and, with ``inner``, at the terminal: the first answer wins."""

    def __init__(self, channel: LiveChannel, inner: Prompter | None = None) -> None:
        """Ask through ``channel``; ``inner`` (the terminal prompter) alongside, when given."""
        self.channel = channel
        self.inner = inner

    async def ask_question(self, prompt: ShowQuestion) -> QuestionAnswer:
        """The first answer: the page's, or the terminal's."""
        channel = self.channel
        key = prompt.inquiry_id
        channel.offer(key, prompt.tool_call_id, prompt.tool_name, prompt.question)
        from_page = asyncio.ensure_future(channel.answer_for(key))
        if self.inner is None:
            return await from_page
        if from_page.done():
            return from_page.result()
        at_terminal = asyncio.ensure_future(self.inner.ask_question(prompt))
        try:
            await asyncio.wait((from_page, at_terminal), return_when=asyncio.FIRST_COMPLETED)
            if at_terminal.done() and isinstance(at_terminal.exception(), PromptUnanswered):
                # Whoever stands in at the terminal (an answers file) has no
                # reply: the page may have one.
                return await from_page
        finally:
            for pending in (from_page, at_terminal):
                if not pending.done():
                    pending.cancel()
            # The terminal lets go of the screen before anything else is shown.
            await asyncio.wait((from_page, at_terminal))
        if at_terminal.done() and not at_terminal.cancelled():
            # Its answer, or the person's cancel at the terminal: their word either way.
            channel.done(key, "answered at the terminal")
            return at_terminal.result()
        return from_page.result()

    async def ask_permission(self, prompt: ShowPermissionPrompt) -> PermissionAnswer:
        """At the terminal alone; with none, the detached policy decides."""
        if self.inner is None:
            raise PromptUnanswered("the live inbox answers questions, not permissions")
        return await self.inner.ask_permission(prompt)

    async def ask_delivery(self, prompt: ShowDeliveryPrompt) -> DeliveryAnswer:
        """At the terminal alone; with none, the detached policy decides."""
        if not isinstance(self.inner, DeliveryPrompter):
            raise PromptUnanswered("the live inbox answers questions, not deliveries")
        return await self.inner.ask_delivery(prompt)
