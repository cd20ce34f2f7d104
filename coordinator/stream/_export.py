r"""A conversation as Markdown, for people to read.

Theory of operation: the stream is rendered in order, one ``## Turn N``
section per turn (``N`` counts from 1), each event a ``###`` block. Global
entries render where they sit: a compaction with its summary, a
configuration change or reset as a one-line note (its contents are
configuration, not conversation), an event overlay as a note (it changes
what a provider is sent, not what was recorded, which is what is shown), an
unknown entry as a note naming its kind.

Each event shows under the user's message it answers. Its request link (RFD
098) says which: an event whose link names another message than the one it
follows (an edited file, a message moved) gets a note naming the message it
answers (its turn and time); one whose link binds nothing gets a note saying
why, and that it is not sent to a model. An event without a link (written
before links) shows where it sits, as it always did.

Inquiry responses render as RFD 082 "Reader behavior" says:

- ``Answered``: ``Answer: <value>``, the value as JSON (``true``, ``"main"``);
- ``Redacted``: ``Answer: <redacted>``;
- ``Cancelled``: ``Cancelled (<reason>)``, the reason's wire tag from
  ``reason.as_str()``, so a reason added later renders without a change here.
  A reason this build does not know is shown as its tag too, escaped and
  cut as every output shows a reason (:func:`coordinator._text.shown_reason`,
  ``inquiry check`` and ``inquiry run`` alike): it is free text from whoever
  wrote the file (neither JP nor this project ever writes one of their own).
  The empty tag reads ``Cancelled ("")``.

Each line is followed by what the stream records of who ended the question,
where it records that: a secret's answer came from the person at the
terminal or from the configuration (RFD 082 never routes a secret to the
model); a cancellation's reason says who or what closed it. Who gave an
``Answered`` (the person, the turn's memory, the configuration or the model)
is not recorded, and nothing is said. A tool call's response says whether
permission to run it was refused, and by whom, when its content is one of
JP's wordings for that (``Tool skipped by user.`` ...); a note says so.

Rules:

- Deterministic: the same stream always gives the same text (JSON keeps the
  recorded key order; nothing reads a clock).
- A secret answer never appears. None is on disk, and should a file hold one
  anyway it renders as ``<redacted>``. Which responses answer a secret
  question is decided as RFD 082's readers decide what answers what:
  pairing by id within the turn (:mod:`coordinator.stream._pairing`), the
  question's recorded answer type saying whether it is secret. Ids are
  opaque: nothing here splits or parses one. An ``Answered`` that pairs with
  a secret question is masked; so is a stray (one that pairs with no
  request: a repeat, one before its question, one in another turn) carrying
  the id of a secret question asked anywhere in the stream, since a response
  matched only by its id may hold the secret as well as the paired one.
  Everything else shows, so the masking follows the asking tool's question:
  a plain answer is shown even when another tool asks a secret question of
  the same question id. A secret question's ``default`` is not shown.
- Text written by people, models and tools (messages, question text) is
  Markdown already and is copied as it is, but for the three rules below;
  reasoning and compaction summaries are quoted, so that what they hold,
  headings included, stays inside the quote; tool output, arguments and
  preambles go in code fences long enough never to be closed by their
  content.

The file may come from anyone, and the export is often printed to a
terminal, so what a conversation holds cannot change the document's outline
or drive the terminal:

- A single-line slot (a heading, inline code, an option's description, a
  response line) never holds a line ending or a character a terminal acts
  on: it is shown as :func:`coordinator._text.shown_text` shows a line (LF
  and CR read ``\n`` and ``\r``, ESC ``\x1b``, a bidi override ``\u202e``:
  Python's spellings, so each reads as what it is).
- Free text keeps its line breaks (CR and CRLF become LF, which changes
  nothing a Markdown reader shows, as all three end a line there, and a
  terminal never meets a bare CR) and escapes the other characters the same
  way. JSON spells them with JSON's own escape (``\u001b``, as orjson
  already writes C0 controls), so a JSON block stays JSON.
- One entry's text cannot swallow the entries after it. Markdown copied as
  it is could: a code fence left open (a message cut off in the middle of a
  code block) or an HTML block whose end never comes (``<!--``,
  ``<script``, ``<?``, ``<!X``, ``<![CDATA[``) runs to the end of the
  document. So free text is read for its block structure as CommonMark
  reads it (containers, fences and HTML blocks; no inlines): a fence still
  open at its end is closed there, and the ``<`` that starts such an HTML
  block outside any container, with no end after it, is escaped (``\<``),
  so the text shows instead of vanishing. Everything else is left as
  written: a fence or HTML block inside a list or a quote ends with its
  container, and the blank line and heading that follow every text end
  every other block.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
import orjson

from coordinator._recorded_routes import recorded_park, recorded_route
from coordinator._text import shown_reason, shown_text
from coordinator.stream._entries import (
    Compaction,
    ConfigDelta,
    EventEntry,
    EventOverlay,
    UnknownEntry,
)
from coordinator.stream._links import LinkProblem
from coordinator.stream._pairing import pair_events
from coordinator.stream._stream import ConversationStream
from machines import (
    Answered,
    AnswerKind,
    CancellationReason,
    Cancelled,
    ChatRequest,
    ChatResponse,
    ChatResponseKind,
    InquiryRequest,
    InquirySource,
    Redacted,
    SourceKind,
    ToolCallRequest,
    ToolCallResponse,
    TurnStart,
)
from machines.wording import (
    DELIVERY_CANCELLED,
    DISCARDED,
    INPUT_CANCELLED,
    INTERRUPTED,
    RESULT_WITHHELD,
    SKIPPED_BY_CONFIGURATION,
    SKIPPED_BY_USER,
    SKIPPED_REMEMBERED,
    skipped_with_reason,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coordinator.stream._entries import StreamEntry
    from coordinator.stream._stream import Turn
    from machines import InquiryResponse

__all__ = ["describe_inquiry_response", "export_markdown"]

_REDACTED = "Answer: <redacted>"
_BACKTICKS = re.compile(r"`+")


def describe_inquiry_response(response: InquiryResponse) -> str:
    """The one line RFD 082 gives a response: ``Answer: true``, ``Cancelled (user)``..."""
    if isinstance(response, Answered):
        return f"Answer: {_json(response.answer)}"
    if isinstance(response, Redacted):
        return _REDACTED
    return f"Cancelled ({shown_reason(response.reason.as_str())})"


def _line(text: str) -> str:
    """``text`` for a single-line slot: no line ending, nothing a terminal acts on."""
    return shown_text(text)


def _verbatim(text: str) -> str:
    """``text`` with LF line endings only and nothing else a terminal acts on."""
    return shown_text(text, lines=True)


def _text(text: str) -> str:
    """Markdown written by someone else, made safe to print and unable to swallow what follows."""
    return _contained(_verbatim(text))


def _json(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return shown_text(orjson.dumps(value, option=option).decode(), lines=True, spelling="json")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def _code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    if not text:
        return "(empty)"  # an empty code span is not one in Markdown
    text = _line(text)
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence its own content cannot close."""
    text = _verbatim(text)
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in _verbatim(text).split("\n"))


# ------------------------------------------------------------ block structure
#
# Free text is read as the CommonMark spec's parsing strategy reads blocks
# (commonmark.js is its reference implementation; the names follow it), as far
# as it takes to know two things: which HTML blocks that only their end marker
# closes start outside any container, and whether a fence outside any
# container is still open at the end. Inlines, link reference definitions and
# list looseness change neither and are not read. Tabs are expanded to stops
# of 4 first, which is how CommonMark counts indentation; the expanded lines
# are only read, never written. Where a parser strays from the spec (markdown-it
# lets a line indented 4 columns go on a quote), this follows the spec.

_BlockKind = Literal["document", "quote", "item", "paragraph", "fence", "code", "html"]
_LEAVES = frozenset({"fence", "code", "html"})  # these take every line they continue on
_CONTAINERS = frozenset({"document", "quote", "item"})  # these hold blocks
_SPACES = re.compile(" *")
_ATX_HEADING = re.compile(r"#{1,6}(?: |$)")
_FENCE_OPENING = re.compile(r"`{3,}(?!.*`)|~{3,}")
_FENCE_CLOSING = re.compile(r"(`{3,}|~{3,}) *$")
_SETEXT_UNDERLINE = re.compile(r"(?:=+|-+) *$")
_THEMATIC_BREAK = re.compile(r"(?:(?:\* *){3,}|(?:_ *){3,}|(?:- *){3,})$")
_LIST_MARKER = re.compile(r"[*+-]|(\d{1,9})[.)]")
_TAG_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|"
    "optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|"
    "tr|track|ul"
)
_ATTRIBUTE = (
    r"""(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>`\x00-\x20]+|'[^']*'|"[^"]*"))?)"""
)
# The seven kinds of HTML block, by number as CommonMark numbers them; only
# 1 to 5 have an end marker (6 and 7 end at a blank line, which every text
# is followed by).
_HTML_STARTS = (
    re.compile(r"<(?:script|pre|style|textarea)(?=\s|>|$)", re.IGNORECASE),
    re.compile(r"<!--"),
    re.compile(r"<\?"),
    re.compile(r"<![A-Za-z]"),
    re.compile(r"<!\[CDATA\["),
    re.compile(rf"</?(?:{_TAG_NAMES})(?=\s|/?>|$)", re.IGNORECASE),
    re.compile(rf"(?:<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"),
)
_HTML_ENDS = (
    re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    re.compile(r"-->"),
    re.compile(r"\?>"),
    re.compile(r">"),
    re.compile(r"\]\]>"),
)
_ENDS_AT_MARKER = len(_HTML_ENDS)  # the kinds up to this one end only at their marker
_CODE_INDENT = 4  # columns; tabs stop every 4 columns too


def _after_spaces(line: str, pos: int) -> int:
    spaces = _SPACES.match(line, pos)
    return spaces.end() if spaces else pos


@attrs.define
class _Block:
    """An open block: what it is, and what continuing or ending it takes."""

    kind: _BlockKind
    fence: str = ""  # a fence's opening run (its character and length)
    offset: int = 0  # a fence's indentation, stripped from its lines
    html: int = 0  # an HTML block's kind, 1 to 7
    width: int = 0  # a list item's content indentation
    filled: bool = False  # holds a block (a list item begun empty ends at a blank line)


class _BlockReader:
    """The block structure of one text, read line by line (see the comment above)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.open: list[_Block] = [_Block("document")]
        self.escaped: list[int] = []  # lines whose `<` must not start an HTML block
        self._last_end: dict[int, int] = {}  # per HTML kind: the last line with its end
        self.index = 0
        self.line = ""
        self.pos = 0
        self.matched = 1  # how many open blocks the line continues
        self.all_closed = True  # whether the line continues all of them
        self.container = self.open[0]  # where a block the line starts goes

    def read(self) -> _Block | None:
        """Read every line; return the fence left open outside any container, if one is."""
        after_blank = False
        for index, line in enumerate(self.lines):
            blank = not line.strip(" ")
            if blank and after_blank:
                continue  # changes nothing the blank line before did not (and costs the depth)
            after_blank = blank
            self.index, self.line, self.pos = index, line, 0
            if self._continue_open_blocks():
                self.container = self.open[self.matched - 1]
                self.all_closed = self.matched == len(self.open)
                if self.container.kind in _LEAVES or not self._start_blocks():
                    self._add_text()
        top = self.open[1] if len(self.open) > 1 else None
        return top if top is not None and top.kind == "fence" else None

    def _peek(self) -> tuple[int, int, bool]:
        """Where the next non-space is, the indentation before it, whether the rest is blank."""
        next_nonspace = _after_spaces(self.line, self.pos)
        return next_nonspace, next_nonspace - self.pos, next_nonspace == len(self.line)

    def _continue_open_blocks(self) -> bool:
        """Match the line against the open blocks; false when a closing fence took it."""
        self.matched = 1
        for block in self.open[1:]:
            if block.kind == "fence" and self._closes(block):
                self.open.pop()
                return False
            if not self._continues(block):
                break
            self.matched += 1
        return True

    def _closes(self, fence: _Block) -> bool:
        next_nonspace, indent, _ = self._peek()
        closing = _FENCE_CLOSING.match(self.line, next_nonspace)
        return (
            indent < _CODE_INDENT
            and closing is not None
            and closing[1][0] == fence.fence[0]
            and len(closing[1]) >= len(fence.fence)
        )

    def _continues(self, block: _Block) -> bool:
        next_nonspace, indent, blank = self._peek()
        match block.kind:
            case "quote":
                return self._continues_quote(next_nonspace, indent)
            case "item":
                return self._continues_item(block, next_nonspace, indent, blank)
            case "fence":
                self.pos += min(indent, block.offset)
            case "code":
                if not blank and indent < _CODE_INDENT:
                    return False
                self.pos += min(indent, _CODE_INDENT)
            case "html":
                return not (blank and block.html > _ENDS_AT_MARKER)
            case "paragraph":
                return not blank
        return True

    def _continues_quote(self, next_nonspace: int, indent: int) -> bool:
        if indent >= _CODE_INDENT or not self.line.startswith(">", next_nonspace):
            return False
        self.pos = next_nonspace + 1 + self.line.startswith(" ", next_nonspace + 1)
        return True

    def _continues_item(self, item: _Block, next_nonspace: int, indent: int, blank: bool) -> bool:
        if blank:
            self.pos = next_nonspace
            return item.filled  # an item begun empty ends at the first blank line
        if indent < item.width:
            return False
        self.pos += item.width
        return True

    def _close_unmatched(self) -> None:
        if not self.all_closed:
            del self.open[self.matched :]
            self.all_closed = True

    def _add(self, block: _Block | None) -> None:
        """Start ``block`` in the container (``None``: a heading or break, closed at once)."""
        self._close_unmatched()
        while self.open[-1].kind not in _CONTAINERS:
            self.open.pop()  # a paragraph the new block interrupts ends
        self.open[-1].filled = True
        if block is not None:
            self.open.append(block)
            self.container = block

    def _start_blocks(self) -> bool:
        """Start the blocks the line opens; true when a leaf took the rest of it."""
        while True:
            next_nonspace, indent, blank = self._peek()
            if indent >= _CODE_INDENT:  # nothing but indented code starts this deep
                if blank or self.open[-1].kind == "paragraph":
                    return False
                self.pos += _CODE_INDENT
                self._add(_Block("code"))
                return True
            if self.line.startswith(">", next_nonspace):
                self._add(_Block("quote"))
                self._continues_quote(next_nonspace, indent)  # steps over the marker
            elif self._starts_leaf(next_nonspace, indent):
                return True
            elif not self._starts_item(next_nonspace, indent):
                return False

    def _starts_leaf(self, next_nonspace: int, indent: int) -> bool:
        line = self.line
        if _ATX_HEADING.match(line, next_nonspace):
            self._add(None)  # a heading ends on its line
            return True
        if opening := _FENCE_OPENING.match(line, next_nonspace):
            self._add(_Block("fence", fence=opening[0], offset=indent))
            return True
        if line.startswith("<", next_nonspace) and self._starts_html(next_nonspace):
            return True
        if self.container.kind == "paragraph" and _SETEXT_UNDERLINE.match(line, next_nonspace):
            self._close_unmatched()
            self.open.pop()  # the paragraph is a heading now, and ends
            return True
        if _THEMATIC_BREAK.match(line, next_nonspace):
            self._add(None)  # checked before list items: "- - -" is a break
            return True
        return False

    def _starts_html(self, start: int) -> bool:
        kind = next(
            (n for n, opening in enumerate(_HTML_STARTS, 1) if opening.match(self.line, start)), 0
        )
        if not kind or (
            kind == len(_HTML_STARTS)
            and (
                self.container.kind == "paragraph"
                or (not self.all_closed and self.open[-1].kind == "paragraph")
            )
        ):
            return False  # the last kind cannot interrupt a paragraph, even a lazy one
        if kind <= _ENDS_AT_MARKER and self._at_top_level() and not self._ends(kind):
            # It would run to the end of the document: escaped, the line is text.
            self.escaped.append(self.index)
            self.line = f"{self.line[:start]}\\{self.line[start:]}"
            return False
        self._add(_Block("html", html=kind))
        if kind <= _ENDS_AT_MARKER and _HTML_ENDS[kind - 1].search(self.line, start):
            self.open.pop()
        return True

    def _at_top_level(self) -> bool:
        """Whether a block the line starts goes in the document itself, outside any container."""
        container = self.container
        if container.kind not in _CONTAINERS:  # a paragraph, which the block ends: its parent
            container = self.open[self.matched - 2]
        return container is self.open[0]

    def _ends(self, kind: int) -> bool:
        """Whether an HTML block of ``kind`` starting on this line at the top level ends."""
        if kind not in self._last_end:
            end = _HTML_ENDS[kind - 1]
            self._last_end[kind] = next(
                (n for n in range(len(self.lines) - 1, -1, -1) if end.search(self.lines[n])), -1
            )
        return self._last_end[kind] >= self.index

    def _starts_item(self, next_nonspace: int, indent: int) -> bool:
        line = self.line
        marker = _LIST_MARKER.match(line, next_nonspace)
        if marker is None:
            return False
        end = marker.end()
        if end < len(line) and line[end] != " ":
            return False
        spaces = _after_spaces(line, end) - end
        if self.container.kind == "paragraph" and (
            end + spaces == len(line) or (marker[1] is not None and int(marker[1]) != 1)
        ):
            return False  # an empty item, or a list not counting from 1, cannot interrupt one
        if 1 <= spaces < _CODE_INDENT + 1 and end + spaces < len(line):
            padding, self.pos = end - next_nonspace + spaces, end + spaces
        else:  # begun empty, or with indented code: content one space after the marker
            padding, self.pos = end - next_nonspace + 1, end + min(spaces, 1)
        self._add(_Block("item", width=indent + padding))
        return True

    def _add_text(self) -> None:
        """Give the rest of the line to the paragraph or leaf it belongs to, or start one."""
        _, _, blank = self._peek()
        if not self.all_closed and not blank and self.open[-1].kind == "paragraph":
            return  # a lazy continuation line: the paragraph, and its containers, go on
        self._close_unmatched()
        container = self.container
        if container.kind == "html":
            kind = container.html
            if kind <= _ENDS_AT_MARKER and _HTML_ENDS[kind - 1].search(self.line, self.pos):
                self.open.pop()
        elif container.kind not in {"paragraph", "fence", "code"} and not blank:
            self._add(_Block("paragraph"))


def _contained(text: str) -> str:
    """``text`` unable to swallow what follows it (the module docstring says how)."""
    if not any(char in text for char in "`~<"):
        return text  # no fence and no HTML block can start: most prose
    lines = text.split("\n")
    reader = _BlockReader([line.expandtabs(_CODE_INDENT) for line in lines])
    fence = reader.read()
    for index in reader.escaped:
        line = lines[index]
        indent = len(line) - len(line.lstrip(" "))
        lines[index] = f"{line[:indent]}\\{line[indent:]}"
    if fence is not None:
        lines.append(fence.fence)
    return "\n".join(lines)


def _source(source: InquirySource) -> str:
    if source.kind is SourceKind.TOOL:
        return f"tool {_code(source.name or '')}"
    if source.kind is SourceKind.OTHER:
        return _code(source.name or "")
    return f"the {source.kind.value}"


_EXPECTS = {
    AnswerKind.BOOLEAN: "yes or no (boolean)",
    AnswerKind.SELECT: "one of the options below",
    AnswerKind.TEXT: "free text",
    AnswerKind.SECRET: "a secret (never recorded)",
    AnswerKind.FORM: "a form: an object of the fields below, or `decline`",
}


def _question(request: InquiryRequest) -> list[str]:
    question = request.question
    answer_type = question.answer_type
    asked_as = f" as {_code(question.id)}" if question.id else ""
    blocks = [
        f"### Question ({_code(request.id)})",
        f"Asked by {_source(request.source)}{asked_as}; expects {_EXPECTS[answer_type.kind]}.",
    ]
    if question.context:
        blocks.append(_fence(question.context, "text"))
    blocks.append(_text(question.text))
    if answer_type.options:
        lines = ["Options:", ""]
        for option in answer_type.options:
            line = f"- {_code(option.value)}"
            if option.description:
                line += f": {_line(option.description)}"
            lines.append(line)
        blocks.append("\n".join(lines))
    if answer_type.form is not None and answer_type.form.fields:
        lines = ["Fields:", ""]
        for field in answer_type.form.fields:
            need = "required" if field.required else "optional"
            lines.append(f"- {_code(field.name)} ({need}): {_line(field.expected())}")
        blocks.append("\n".join(lines))
    if question.default is not None and not answer_type.is_secret:
        blocks.append(f"Default: {_code(_json(question.default))}")
    return blocks


def _chat_request(request: ChatRequest) -> list[str]:
    heading = "### User" + (f" ({_line(request.author)})" if request.author else "")
    blocks = [heading, _text(request.content)]
    if request.schema is not None:
        blocks += [
            "Asked for structured output with this schema:",
            _fence(_json(request.schema, indent=True), "json"),
        ]
    return blocks


def _chat_response(response: ChatResponse) -> list[str]:
    if response.kind is ChatResponseKind.MESSAGE:
        return ["### Assistant", _text(str(response.content))]
    if response.kind is ChatResponseKind.REASONING:
        return ["### Reasoning", _quote(str(response.content))]
    return ["### Structured data", _fence(_json(response.content, indent=True), "json")]


#: What a tool call's response says of its end when it is one of JP's
#: wordings for a call that did not run, or did not finish. Only the content
#: records it: a tool that printed exactly one of these is read the same way.
_CALL_ENDS = {
    SKIPPED_BY_USER: "Permission refused by the person: the tool did not run.",
    SKIPPED_REMEMBERED: (
        "Permission refused by the person's `N` earlier in this turn, remembered: "
        "the tool did not run."
    ),
    SKIPPED_BY_CONFIGURATION: (
        "Permission refused by the configuration (run mode `skip`): the tool did not run."
    ),
    INPUT_CANCELLED: "The person cancelled a question the tool asked: the tool did not finish.",
    INTERRUPTED: "The call was interrupted: the tool did not finish.",
    DISCARDED: (
        "The call was open when its turn stopped, and the turn was discarded: "
        "the tool did not finish."
    ),
    RESULT_WITHHELD: "The tool ran, and its result was withheld from the model.",
    DELIVERY_CANCELLED: "The tool ran, and the prompt delivering its result was cancelled.",
}
_SKIPPED_WITH_REASON = skipped_with_reason("")  # its wording, before the reason


def _call_end(response: ToolCallResponse) -> str | None:
    """The note on a tool call that did not run or did not finish, if its response says so."""
    if response.content.startswith(_SKIPPED_WITH_REASON):
        return "Permission refused by the person, who said why (below): the tool did not run."
    return _CALL_ENDS.get(response.content)


def _decided(metadata: Mapping[str, Any], decision: str | None, what: str) -> list[str]:
    """The line saying who decided ``what``, as the entry's metadata records it (if it does)."""
    route = recorded_route(metadata, decision)
    return [] if route is None else [f"_{what}: {_code(str(route))}._"]


def _parked(metadata: Mapping[str, Any], what: str) -> list[str]:
    """The line saying the writer parked ``what`` (the detached policy ``park``), if it did."""
    park = recorded_park(metadata)
    if park is None:
        return []
    said = f"{what} was parked by the detached policy at {_code(park.since)}"
    return [f"_{said}: it waited for an answer given later._"]


def _tool_call(
    payload: ToolCallRequest | ToolCallResponse, metadata: Mapping[str, Any]
) -> list[str]:
    if isinstance(payload, ToolCallRequest):
        heading = f"### Tool call {_code(payload.name)} ({_code(payload.id)})"
        parked = _parked(metadata, "Its permission to run")
        return [heading, *parked, _fence(_json(payload.arguments, indent=True), "json")]
    what = "Tool error" if payload.is_error else "Tool result"
    blocks = [f"### {what} ({_code(payload.id)})"]
    if (end := _call_end(payload)) is not None:
        blocks.append(f"_{end}_")
    blocks += _decided(metadata, "permission", "Permission to run decided by")
    blocks += _decided(metadata, "delivery", "Delivery of the result decided by")
    blocks.append(_fence(payload.content, "text"))
    return blocks


#: Who or what closed a question without an answer, by its reason. The
#: reasons after the first four are not RFD 082's: JP reads them as unknown
#: reasons and shows their tag (docs/rfd082-conformance.md).
_CLOSED_BY: dict[CancellationReason, str] = {
    CancellationReason.USER: (
        "the person cancelled it (Ctrl-C or end of input at the prompt), "
        "or the request to the model was cancelled"
    ),
    CancellationReason.BACKEND_ERROR: (
        "what was to answer it (the terminal prompter or the model) failed"
    ),
    CancellationReason.NO_PROMPT_BACKEND: (
        "only a person may answer it, and nobody could be asked (no terminal, or the detached "
        "policy would not answer for them)"
    ),
    CancellationReason.ASSISTANT_ROUTING_DENIED: (
        "only a person may answer it, and the configuration sent it to the assistant"
    ),
    CancellationReason.INVALID_STATIC_ANSWER: (
        "the answer the configuration gives it does not fit it"
    ),
    CancellationReason.ATTEMPTS_EXHAUSTED: ("the tool asked it more often than one tool call may"),
    CancellationReason.INTERRUPTED: (
        "it waited when the process running the turn stopped, and was not asked again as it "
        "stood when the turn was continued"
    ),
    CancellationReason.WITHDRAWN: (
        "its tool call was stopped while it was open (the run was stopped or failed); nobody "
        "answered or cancelled it"
    ),
    CancellationReason.DISCARDED: (
        "it waited when the process running the turn stopped, and the turn was discarded "
        "rather than continued; nobody answered it"
    ),
    CancellationReason.TIMED_OUT: (
        "it was on screen for longer than the time configured for a person to answer it "
        "(its prompt_timeout)"
    ),
}
_REDACTED_BY = (
    "Answered by the person at the terminal or by the configuration (a secret is never "
    "sent to the model); the answer is not recorded."
)
#: Why an ``Answered`` is shown as ``<redacted>``, by what it pairs with.
_MASKED_PAIRED = (
    "Recorded as an answer to a secret question, which no writer should do: not shown."
)
_MASKED_STRAY = (
    "Recorded as an answer under the id of a secret question, answering no question of its "
    "turn: not shown, as it may hold the secret."
)


def _response(
    response: InquiryResponse, masked: str | None, metadata: Mapping[str, Any]
) -> list[str]:
    """The blocks of one inquiry response; ``masked`` says why its answer is hidden, if it is."""
    blocks = [f"### Response ({_code(response.id)})"]
    if masked is not None:
        return [*blocks, _REDACTED, f"_{masked}_"]
    blocks.append(describe_inquiry_response(response))
    blocks += _decided(metadata, None, "Decided by")
    if isinstance(response, Redacted):
        blocks.append(f"_{_REDACTED_BY}_")
    elif isinstance(response, Cancelled):
        reason = response.reason
        if isinstance(reason, CancellationReason):
            blocks.append(f"_Closed without an answer: {_CLOSED_BY[reason]}._")
        else:
            blocks.append("_Closed without an answer, for a reason this build does not know._")
    return blocks


def _event(entry: EventEntry, *, masked: str | None) -> list[str]:
    """The blocks of one event; ``masked`` says why an answer it records is hidden, if it is."""
    payload = entry.payload
    if isinstance(payload, ChatRequest):
        return _chat_request(payload)
    if isinstance(payload, ChatResponse):
        return _chat_response(payload)
    if isinstance(payload, ToolCallRequest | ToolCallResponse):
        return _tool_call(payload, entry.metadata)
    if isinstance(payload, InquiryRequest):
        return [*_question(payload), *_parked(entry.metadata, "The question")]
    if isinstance(payload, Answered | Cancelled | Redacted):
        return _response(payload, masked, entry.metadata)
    return []  # a turn start: its turn's heading stands for it


def _global(entry: StreamEntry) -> list[str]:
    if isinstance(entry, Compaction):
        blocks = [f"### Compaction of turns {entry.from_turn} to {entry.to_turn}"]
        if entry.summary_text:
            blocks.append(_quote(entry.summary_text))
        return blocks
    if isinstance(entry, ConfigDelta):
        if entry.reset:
            return ["_Configuration reset: no change before it applies any more, nor the base._"]
        return ["_Configuration changed._"]
    if isinstance(entry, EventOverlay):
        count = len(entry.patches)
        patches = f"{count} patch{'' if count == 1 else 'es'}"
        note = (
            f"_Event overlay ({patches}): what a model is sent of the events it matches is "
            "patched; they are shown here as recorded._"
        )
        return [note]
    if isinstance(entry, UnknownEntry):
        return [f"_An entry of unknown kind {_code(entry.kind)}, kept in the file, not shown._"]
    return []


def _masked_answers(stream: ConversationStream) -> dict[int, str]:
    """The positions of the answers that may hold a secret, each with why (there should be none).

    Pairing decides, as for every RFD 082 reader (see the module docstring):
    an ``Answered`` paired with a secret question, and a stray one (paired
    with nothing) carrying the id of a secret question asked anywhere.
    Hiding a stray that was not secret costs a reader one answer; showing
    one that was costs the secret.
    """
    secret_ids = {
        entry.payload.id
        for entry in stream
        if isinstance(entry, EventEntry)
        and isinstance(entry.payload, InquiryRequest)
        and entry.payload.question.answer_type.is_secret
    }
    if not any(
        isinstance(entry, EventEntry)
        and isinstance(entry.payload, Answered)
        and entry.payload.id in secret_ids
        for entry in stream
    ):
        return {}  # no answer carries a secret question's id: nothing to pair (most files)
    inquiries = pair_events(stream).inquiries
    masked: dict[int, str] = {}
    for pair in inquiries.pairs:
        request = pair.request.entry.payload
        response = pair.response.entry.payload
        if (
            isinstance(response, Answered)
            and isinstance(request, InquiryRequest)
            and request.question.answer_type.is_secret
        ):
            masked[pair.response.index] = _MASKED_PAIRED
    for stray in inquiries.orphaned:
        if isinstance(stray.entry.payload, Answered) and stray.id in secret_ids:
            masked[stray.index] = _MASKED_STRAY
    return masked


#: What a note says of a link that binds nothing, by why.
_UNRESOLVED = {
    LinkProblem.MISSING: "no entry has that id",
    LinkProblem.NOT_A_CHAT_REQUEST: "the entry with that id is not a user's message",
    LinkProblem.DUPLICATED: "more than one entry had that id when the file was read",
}


def _link_notes(stream: ConversationStream, turns: list[Turn]) -> dict[int, str]:
    """The notes on events whose request link says other than their place (see the docstring)."""
    links = stream.request_links()
    if not links.unresolved and not links.elsewhere:
        return {}  # every link names the message its event follows (most files)
    starts = [turn.start for turn in turns]
    notes: dict[int, str] = {}
    for index in links.elsewhere:
        target = links.answers[index]
        request = cast("EventEntry", stream[target])  # a resolved link names a chat request
        turn = bisect.bisect_right(starts, target)
        notes[index] = (
            f"_In answer to the user's message of turn {turn} (at {request.timestamp}), "
            "not the one it follows here._"
        )
    for link in links.unresolved:
        notes[link.index] = (
            f"_Its request link {_code(link.request_id)} binds nothing "
            f"({_UNRESOLVED[link.problem]}): it answers no message on record, "
            "and is not sent to a model._"
        )
    return notes


def export_markdown(stream: ConversationStream, *, title: str | None = None) -> str:
    """Render ``stream`` as Markdown under the heading ``title``.

    Ends with exactly one newline.
    """
    if not isinstance(stream, ConversationStream):
        # A Conversation is the likeliest mistake; name what to pass instead.
        raise TypeError(
            f"export_markdown takes a ConversationStream (a Conversation's .stream), "
            f"not {type(stream).__name__}"
        )
    masked = _masked_answers(stream)
    blocks = [f"# {_line(title or 'Conversation')}"]
    turns = stream.turns()
    notes = _link_notes(stream, turns)
    first_turn = turns[0].start if turns else len(stream)
    for entry in stream[:first_turn]:
        blocks += _global(entry)
    for turn in turns:
        blocks.append(f"## Turn {turn.index + 1}")
        if turn.marked:
            start = turn.entries[0]
            if isinstance(start, EventEntry) and isinstance(start.payload, TurnStart):
                blocks.append(f"_Started {start.timestamp}._")
        for offset, entry in enumerate(turn.entries):
            if isinstance(entry, EventEntry):
                index = turn.start + offset
                shown = _event(entry, masked=masked.get(index))
                if index in notes:
                    shown.insert(1, notes[index])  # under its heading
                blocks += shown
            else:
                blocks += _global(entry)
    return "\n\n".join(blocks) + "\n"
