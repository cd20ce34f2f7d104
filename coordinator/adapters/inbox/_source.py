"""Where the inbox reads waiting questions and writes answers: one narrow interface.

Theory of operation: the web application knows only :class:`InboxSource`,
three calls: :meth:`~InboxSource.waiting` (everything waiting now, each
question with a :class:`Place` that names it), :meth:`~InboxSource.answer`
(answer one, or be refused with the reason) and :meth:`~InboxSource.changed`
(wait for the next change, so that a live question reaches the page as
soon as it is asked). :class:`LocalSource`, the embedded default, serves
the conversation directories directly under a root (their parked
questions, and those a run left open, through
:func:`~coordinator.driver.waiting_prompts` and
:func:`~coordinator.driver.answer_waiting`) and the user's live runs
(:class:`~coordinator.adapters.live.LiveRuns`). A shared database serving
agents on many machines would be another implementation of the same three
calls (``docs/inbox.md`` says how).

Rules:

1. Only a directory directly under the root is read or written, never
   one reached through a symbolic link, nor one that holds a symbolic
   link (which could lead a read or a write outside the root); a place
   named in a request is looked up among those, never joined to a path.
2. A conversation a run is writing (a live process holds its writer lock)
   is shown busy and never written: the answer is refused, saying so.
3. Every refusal is an :class:`AnswerRefusedError` with a reason a
   person can act on; nothing is written then.
4. A conversation's listing is read again only when its ``events.json``
   changed (its inode, size, or times); the writer is asked every time.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import stat
from pathlib import Path
from typing import Literal, Protocol

import attrs

from coordinator._errors import CoordinatorError
from coordinator.adapters.live import INBOX, LiveRuns, NoLongerAskedError
from coordinator.driver import (
    WaitingAnswerError,
    WaitingPrompt,
    answer_waiting,
    waiting_prompts,
)
from coordinator.store import ConversationLockedError, holder_of
from coordinator.stream import Timestamp
from machines import AnswerKind, AnswerType, JsonValue, PromptKind

__all__ = [
    "AnswerRefusedError",
    "Inbox",
    "InboxSource",
    "LocalSource",
    "Place",
    "Skipped",
    "Waiting",
    "WaitingGroup",
    "moment",
    "value_from_form",
]


class AnswerRefusedError(CoordinatorError):
    """An answer was not taken; the message says why, and nothing was written."""


@attrs.frozen(kw_only=True)
class Place:
    """Where a waiting question is: a conversation under the root, or a live run."""

    kind: Literal["parked", "live"]
    #: The conversation directory's name under the root, or the live run's socket name.
    name: str
    inquiry_id: str


@attrs.frozen(kw_only=True)
class Waiting:
    """One question (or permission) waiting, as the page shows it.

    ``answer_type`` and ``default`` are the question's (a secret's default
    is never carried); ``place`` is ``None`` for what cannot be answered
    here, and ``note`` says why (or what is special about it).
    """

    tool_name: str
    tool_call_id: str
    text: str
    context: str | None
    question_id: str | None
    answer_type: AnswerType | None
    default: JsonValue
    since: str
    status: str
    place: Place | None
    note: str | None = None


@attrs.frozen(kw_only=True)
class WaitingGroup:
    """The waiting questions of one conversation or live run, newest first."""

    label: str
    live: bool
    busy: str | None
    questions: tuple[Waiting, ...]
    #: What else says whose questions these are (a live run's conversation directory).
    detail: str | None = None

    @property
    def newest(self) -> dt.datetime:
        """When its newest question began waiting."""
        return max(moment(question.since) for question in self.questions)


@attrs.frozen(kw_only=True)
class Skipped:
    """A directory under the root that is not shown, and why."""

    name: str
    why: str


@attrs.frozen(kw_only=True)
class Inbox:
    """Everything waiting now: the groups newest first, and what was passed over."""

    groups: tuple[WaitingGroup, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def count(self) -> int:
        """How many questions wait, in all."""
        return sum(len(group.questions) for group in self.groups)


class InboxSource(Protocol):
    """What the inbox reads waiting questions from, and writes answers to."""

    async def waiting(self) -> Inbox:
        """Everything waiting now."""
        ...

    async def answer(self, place: Place, value: JsonValue) -> None:
        """Answer the question at ``place``; :class:`AnswerRefusedError` when not taken."""
        ...

    async def changed(self, seen: int, *, timeout: float) -> int:  # noqa: ASYNC109
        """Wait for a change after change number ``seen`` (at most ``timeout`` s); the number."""
        ...


#: The files whose state says whether a conversation's listing must be read again.
_WATCHED = "events.json"

_PERSONS_ONLY = (
    "a secret is handed only to a live run waiting for it, never written: continue the turn "
    "with `inquiry run --continue-turn --inbox` and answer it here, or at its terminal"
)
_PERMISSION_NOTE = (
    "permission to run the tool: given when the turn is continued (inquiry run --continue-turn)"
)
_OPEN_NOTE = (
    "left open by a run that stopped: its tool may ask otherwise now, so it is asked again "
    "when the turn is continued (inquiry run --continue-turn)"
)


def value_from_form(answer_type: AnswerType, text: str) -> JsonValue:
    """What a form's field means for ``answer_type``: a boolean's ``true``/``false``, else text.

    Anything else is handed on as it is, for the engine to refuse, saying
    what the question takes.
    """
    if answer_type.kind is AnswerKind.BOOLEAN and text in {"true", "false"}:
        return text == "true"
    return text


def moment(since: str) -> dt.datetime:
    """When ``since`` (a timestamp's text, as recorded) was; the earliest time if unreadable."""
    try:
        return Timestamp(since).datetime
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)


def _key(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


@attrs.define
class _Listed:
    key: tuple[int, ...]
    prompts: tuple[WaitingPrompt, ...]


class LocalSource:
    """The embedded default: the conversations directly under ``root``, and the live runs."""

    def __init__(self, root: Path, live: LiveRuns | None = None) -> None:
        """Serve the conversations under ``root`` (resolved now) and ``live``'s questions."""
        self.root = Path(os.path.realpath(root))
        self.live = live
        self._listed: dict[str, _Listed] = {}

    # --------------------------------------------------------------- reading

    async def waiting(self) -> Inbox:
        """Everything waiting now, newest first."""
        parked, skipped = await asyncio.to_thread(self.scan)
        live = self._live_groups()
        # A conversation a live run is writing is shown as that run's questions.
        running = (
            {question.conversation for question in self.live.questions()}
            if self.live is not None
            else set()
        )
        parked = [group for group in parked if str(self.root / group.label) not in running]
        groups = [*parked, *live]
        groups.sort(key=lambda group: group.newest, reverse=True)
        return Inbox(groups=tuple(groups), skipped=tuple(skipped))

    def scan(self) -> tuple[list[WaitingGroup], list[Skipped]]:
        """The conversations under the root with something waiting, and those passed over."""
        groups: list[WaitingGroup] = []
        skipped: list[Skipped] = []
        seen: set[str] = set()
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            seen.add(entry.name)
            try:
                group = self._conversation(entry.name)
            except (CoordinatorError, OSError) as error:
                skipped.append(Skipped(name=entry.name, why=str(error)))
                continue
            if group is not None:
                groups.append(group)
        for gone in set(self._listed) - seen:
            del self._listed[gone]
        return groups, skipped

    def _directory(self, name: str) -> Path:
        """The conversation directory ``name`` under the root, checked (rule 1)."""
        if not name or name in {".", ".."} or "/" in name or "\0" in name:
            raise AnswerRefusedError(f"{name!r} names no conversation under the inbox's root")
        path = self.root / name
        try:
            status = path.lstat()
        except OSError:
            raise AnswerRefusedError(
                f"{name!r} names no conversation under the inbox's root"
            ) from None
        if not stat.S_ISDIR(status.st_mode):
            raise AnswerRefusedError(f"{name!r} is not a directory under the inbox's root")
        with os.scandir(path) as entries:
            linked = sorted(entry.name for entry in entries if entry.is_symlink())
        if linked:
            raise AnswerRefusedError(
                f"{name!r} holds a symbolic link ({', '.join(linked)}), which could lead "
                "outside the inbox's root: not read, not written"
            )
        return path

    def _conversation(self, name: str) -> WaitingGroup | None:
        path = self._directory(name)
        try:
            status = (path / _WATCHED).lstat()
        except FileNotFoundError:
            return None  # not a conversation (yet)
        listed = self._listed.get(name)
        if listed is None or listed.key != _key(status):
            found = waiting_prompts(path)
            listed = _Listed(key=_key(status), prompts=found.prompts)
            self._listed[name] = listed
            writer = found.writer
        else:
            writer = holder_of(path)
        if not listed.prompts:
            return None
        busy = None if writer is None else f"a run (pid {writer}) is writing it now"
        questions = tuple(_parked(name, prompt, busy=busy) for prompt in listed.prompts)
        return WaitingGroup(
            label=name,
            live=False,
            busy=busy,
            questions=tuple(sorted(questions, key=lambda q: moment(q.since), reverse=True)),
        )

    def _live_groups(self) -> list[WaitingGroup]:
        if self.live is None:
            return []
        runs: dict[str, list[Waiting]] = {}
        labels: dict[str, str] = {}
        details: dict[str, str | None] = {}
        for live in self.live.questions():
            asked = live.asked
            question = asked.question
            labels[live.run] = (
                f"{live.title or live.conversation or 'a run'} (live: pid {live.pid})"
            )
            details[live.run] = live.conversation and f"conversation {live.conversation}"
            runs.setdefault(live.run, []).append(
                Waiting(
                    tool_name=asked.tool_name,
                    tool_call_id=asked.tool_call_id,
                    text=question.text,
                    context=question.context,
                    question_id=question.id,
                    answer_type=question.answer_type,
                    default=question.default,
                    since=asked.since,
                    status="live",
                    place=Place(kind="live", name=live.run, inquiry_id=asked.key),
                )
            )
        return [
            WaitingGroup(
                label=labels[run],
                live=True,
                busy=None,
                detail=details[run],
                questions=tuple(sorted(questions, key=lambda q: moment(q.since), reverse=True)),
            )
            for run, questions in runs.items()
        ]

    async def changed(self, seen: int, *, timeout: float) -> int:  # noqa: ASYNC109
        """The live runs' next change (parked questions are read afresh on each listing)."""
        if self.live is None:
            await asyncio.sleep(timeout)
            return seen
        return await self.live.changed(seen, timeout=timeout)

    # --------------------------------------------------------------- writing

    async def answer(self, place: Place, value: JsonValue) -> None:
        """Answer the question at ``place`` with ``value`` (a form's text, converted here)."""
        if place.kind == "live":
            await self._answer_live(place, value)
        else:
            await asyncio.to_thread(self._answer_parked, place, value)

    async def _answer_live(self, place: Place, value: JsonValue) -> None:
        if self.live is None:
            raise AnswerRefusedError("this inbox does not follow live runs")
        questions = {(q.run, q.asked.key): q for q in self.live.questions()}
        live = questions.get((place.name, place.inquiry_id))
        if live is None:
            raise AnswerRefusedError(
                "the run no longer asks this question: it was answered (at its terminal, or "
                "here) or closed, or the run ended"
            )
        if isinstance(value, str):
            value = value_from_form(live.asked.question.answer_type, value)
        try:
            reply = await self.live.answer(place.name, place.inquiry_id, value)
        except NoLongerAskedError as error:
            raise AnswerRefusedError(str(error)) from None
        if not reply.taken:
            raise AnswerRefusedError(reply.reason or "the run did not take the answer")

    def _answer_parked(self, place: Place, value: JsonValue) -> None:
        path = self._directory(place.name)
        found = waiting_prompts(path)
        prompt = next((p for p in found.prompts if p.inquiry_id == place.inquiry_id), None)
        if prompt is not None and prompt.question is not None and isinstance(value, str):
            value = value_from_form(prompt.question.answer_type, value)
        try:
            answer_waiting(path, place.inquiry_id, value, by=INBOX)
        except ConversationLockedError as error:
            raise AnswerRefusedError(
                f"a run is writing this conversation now ({error}); the inbox does not write "
                "it meanwhile: answer when it is done"
            ) from None
        except WaitingAnswerError as error:
            raise AnswerRefusedError(str(error)) from None


def _parked(name: str, prompt: WaitingPrompt, *, busy: str | None) -> Waiting:
    """How ``prompt``, waiting in conversation ``name``, is shown, and whether it is answerable."""
    question = prompt.question
    if prompt.kind is PromptKind.RUN or question is None:
        return Waiting(
            tool_name=prompt.tool_name,
            tool_call_id=prompt.tool_call_id,
            text=f"May {prompt.tool_name} run?",
            context=None,
            question_id=None,
            answer_type=None,
            default=None,
            since=prompt.since,
            status="parked permission",
            place=None,
            note=_PERMISSION_NOTE,
        )
    answer_type = question.answer_type
    place = None
    note = busy
    if not prompt.parked:
        note = _OPEN_NOTE
    elif answer_type.is_secret:
        note = _PERSONS_ONLY
    elif busy is None and prompt.inquiry_id is not None:
        place = Place(kind="parked", name=name, inquiry_id=prompt.inquiry_id)
    return Waiting(
        tool_name=prompt.tool_name,
        tool_call_id=prompt.tool_call_id,
        text=question.text,
        context=question.context,
        question_id=question.id,
        answer_type=answer_type,
        default=None if answer_type.is_secret else question.default,
        since=prompt.since,
        status="parked" if prompt.parked else "left open",
        place=place,
        note=note,
    )
