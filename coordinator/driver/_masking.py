r"""Secret masking: what a tool echoes of a secret answer is recorded as ``<secret>``.

A secret answer is revealed only inside the executor (DESIGN.md rule 2), but
the tool may print it back: in its output, an error, a traceback, or the
next question it asks. Everything the driver records from a tool goes
through :meth:`SecretMasks.mask` first.

Theory of operation: rather than enumerate how each encoder of each language
might spell a secret, the *candidate text* is decoded, and the secret looked
for in what it decodes to. A decoding pass turns every escape of one
family into the character it stands for, wherever it is. The families:

- percent escapes, ``%2B`` or ``%2b``, runs of them read as UTF-8 where
  they are and each other byte as Latin-1 (as JavaScript's ``escape()``
  writes é as ``%E9``), and ``%uXXXX``;
- backslash escapes: ``\uXXXX`` (surrogate pairs joined), ``\u{X...}``,
  ``\UXXXXXXXX``, ``\xXX`` and octal ``\NNN`` (runs of them read as UTF-8
  bytes where they are, as in a ``bytes`` repr), ``\n``, ``\t`` and the like,
  and ``\X`` for any other ``X`` (``\"``, ``\\``, ``\/``, ``\'``);
- HTML character references: ``&amp;``, ``&#43;``, ``&#x2B;`` and every
  named one of HTML5 (written with its ``;``);
- and, with percent escapes, ``+`` as a space (an HTML form's encoding,
  ``urlencode``), tried only when a secret holds a space.

Hex digits are read in either case. A pass decodes one family (``+`` as a
space is a pass of its own, with percent escapes): each encoder escapes
with one family, its own introducer included, so the pass of its family
undoes it exactly, where a pass of every family at once would misread what
one encoding keeps as it is (``html.escape`` keeps a backslash; JSON keeps
``%41`` and ``&amp;``). *Every* sequence of up to :data:`DEPTH` passes is
tried, whatever else the text holds: a secret escaped twice (a traceback
quoting ``repr(token)``, wrapped as JSON by the local tools' protocol),
JSON inside a URL, or JSON in JSON in that protocol's JSON beside a URL
escaped twice, is found. Each decoded character keeps the span of the
original text it came from; a secret found in a decoded text is masked by
replacing that span of the *original*, so what is not a secret is recorded
as the tool wrote it, escapes and all. Spans found in different readings
that overlap are masked as one: a secret holding another (a PIN inside a
token) is masked whole.

A spelling, however deep, is written with the secret's own characters and
those of escapes only (ASCII letters and digits, ``%\&#;{}``, a form's
``+``): any other character (a quote, a comma, a space when no secret
holds one) ends it. So a text is cut into *stretches* of those characters,
and each stretch holding an escape is decoded on its own: what is escaped
elsewhere (a URL's ``%252F`` beside JSON in JSON) neither changes how a
stretch reads nor costs it a reading. That bounds the cost: a stretch
holding escapes of ``k`` kinds (at most 4: percent, percent with ``+`` as a
space, backslash, entity) is decoded at most ``k + k**2 + k**3`` times
(84), each pass linear in a text no longer than the stretch (decoding never
lengthens), and two sequences that decode it alike (a pass of each of two
families, in either order) go on as one. A stretch shorter than every
secret is not decoded; nor a text with no ``%``, ``\`` or ``&`` (nor a
``+`` when a secret holds a space), which costs a substring search per
secret.

Every spelling above keeps a secret's longest run of ASCII letters and
digits (its *anchor*) as it is. A text up to :data:`WHOLE_TEXT` characters
is looked through whole; in a longer one, only the windows around its
anchors' occurrences are, each reaching as far as the secret escaped three times
could: a long output that does not hold a secret costs a substring search,
not a decoding.

Masks last for the life of the process, and are shared by every coordinator
over the same conversation (:func:`masks_for`): a secret typed in one turn
and printed again by a tool in a later one, even by another coordinator
over the conversation loaded again, is masked. They are not shared between
conversations: another user's conversation in the same process must not
see where this one's secret appears.

A secret is masked as it was typed, and in the forms a tool commonly makes
of what was typed before it uses it, and so echoes (:func:`typed_forms`):
*trimmed* of the whitespace around it (Python's ``strip()``, Go's
``TrimSpace``, JavaScript's ``trim()``, a shell's ``read``: a token pasted
with a trailing space or newline), and *unquoted*, trimmed of one pair of
matching quotes around it (``"..."`` or ``'...'``, as a dotenv or shell
parser reads a value pasted from a configuration file) and of the
whitespace inside them. Each form is masked in every spelling above, as
the secret is. A form that strips only one end, or only a newline, holds
the trimmed form and is masked by it. A form is masked only when it keeps
at least :data:`SHORTEST_FORM` characters: a shorter one (``a``, ``ok``,
``42``, from a secret typed as ``"ok"`` or ``42\n``) is a fragment nearly
every text holds, and masking it would cut every later output of the
conversation to pieces. Four is the length of the shortest secret people
commonly type, a PIN, so a PIN pasted with a newline is masked when the
tool echoes it trimmed. Not covered: a tool that changes a secret's case,
takes out its inner spaces or dashes (a card or licence number
normalised), normalises its Unicode, or prints a part of it (``****1234``,
its own choice of what to show).

Limits: an encoding not listed above is not decoded (base64, hex dumps,
shell quoting, a secret split across lines or spelled with Unicode
normalised otherwise), nor one more than :data:`DEPTH` layers deep; in a
text longer than :data:`WHOLE_TEXT`, nor one that escapes letters and
digits too (``%41`` for ``A``); a secret that is a common word masks that
word wherever a tool prints it. Decoding costs a few microseconds per
character of a stretch per pass, so a long output that repeats a secret
all along, in stretches that hold every family, is slow to record.
"""

from __future__ import annotations

import bisect
import enum
import functools
import html
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs
import orjson

from machines import JsonValue, MachineError, Question, RunTool, SecretValue

if TYPE_CHECKING:
    from coordinator.store import Conversation

__all__ = [
    "DEPTH",
    "MASK",
    "SHORTEST_FORM",
    "WHOLE_TEXT",
    "MaskedQuestion",
    "SecretMasks",
    "UnmaskableQuestionError",
    "masks_for",
    "typed_forms",
    "unmasked_answers",
]

#: What a secret is replaced by.
MASK: Final = "<secret>"
#: How many decoding passes, one after the other, a secret's spelling is read through.
DEPTH: Final = 3
#: A text up to this long is decoded whole; a longer one around its secrets' anchors.
WHOLE_TEXT: Final = 4096
#: The fewest characters a form of a secret other than the one typed must keep to be masked.
SHORTEST_FORM: Final = 4
#: The quotes a value pasted from a configuration file may come in.
_QUOTES: Final = ('"', "'")


def typed_forms(secret: str) -> set[str]:
    """``secret`` as typed, and trimmed and unquoted as a tool may echo it (module docstring).

    A form other than the typed one is left out when it keeps fewer than
    :data:`SHORTEST_FORM` characters; the empty secret has no form at all.
    """
    if not secret:
        return set()
    trimmed = secret.strip()
    unquoted = trimmed
    if len(trimmed) > 1 and trimmed[0] == trimmed[-1] and trimmed[0] in _QUOTES:
        unquoted = trimmed[1:-1].strip()
    return {secret} | {form for form in (trimmed, unquoted) if len(form) >= SHORTEST_FORM}


# The escapes of each family, one alternative per kind; the first that
# matches at a position wins.
_PERCENT: Final = r"(?P<pct>(?:%[0-9A-Fa-f]{2})+)|(?P<pctu>(?:%u[0-9A-Fa-f]{4})+)"
_BACKSLASH: Final = (
    r"\\u\{(?P<brace>[0-9A-Fa-f]{1,6})\}"
    r"|(?P<utf16>(?:\\u[0-9A-Fa-f]{4})+)"
    r"|\\U(?P<wide>[0-9A-Fa-f]{8})"
    r"|(?P<hex>(?:\\x[0-9A-Fa-f]{2})+)"
    r"|(?P<octal>(?:\\[0-7]{1,3})+)"
    r"|\\(?P<char>[^\n])"
)
_ENTITY: Final = r"(?P<entity>&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)"
_PLUS: Final = r"(?P<plus>\+)"


class _Family(enum.Enum):
    """A family of escapes, and the character that opens each of its escapes."""

    PERCENT = "%"
    BACKSLASH = "\\"
    ENTITY = "&"


_FAMILIES: Final = tuple(_Family)
_PATTERNS: Final = {
    _Family.PERCENT: _PERCENT,
    _Family.BACKSLASH: _BACKSLASH,
    _Family.ENTITY: _ENTITY,
}


#: One decoding pass: the family it decodes, and (with percent escapes) whether
#: ``+`` is a space, as a form's encoding has it.
_Pass: TypeAlias = tuple[_Family, bool]
_FORM: Final[_Pass] = (_Family.PERCENT, True)


@functools.cache
def _decoder(family: _Family, *, plus: bool) -> re.Pattern[str]:
    """The pass decoding ``family`` (and ``+`` as a space when ``plus``)."""
    return re.compile("|".join([_PATTERNS[family]] + [_PLUS] * plus))


def _passes(text: str, *, form: bool) -> list[_Pass]:
    """The passes that may decode something of ``text``: one per family it holds.

    One family a pass, since each encoder escapes with one family only, and
    escapes its own introducer: the pass of its family undoes it exactly,
    where a pass decoding every family at once would misread what one
    encoding keeps as it is (``html.escape`` keeps a backslash; JSON keeps
    ``%41`` and ``&amp;``). ``+`` is read as a space only in a pass of its
    own, and only when a secret has a space.
    """
    passes = [(family, False) for family in _FAMILIES if family.value in text]
    if form and "+" in text:
        passes.append(_FORM)
    return passes


_NAMED: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "a": "\a"}


#: What one escape stands for: pieces of decoded text, each with the length
#: of the escape text it came from (a run of ``%XX`` is one piece per
#: character, so a secret that begins inside the run is masked from there).
_Pieces: TypeAlias = list[tuple[str, int]]


def _bytes(values: list[int], lengths: list[int]) -> _Pieces:
    """Escaped bytes: UTF-8 where they are, each other byte one Latin-1 character.

    Byte by byte, so that an escape beside a secret's (``%E9``, as
    JavaScript's ``escape()`` writes é, then a secret's ``%C3%84``) does not
    change how the secret's bytes read.
    """
    pieces: _Pieces = []
    at = 0
    for char in bytes(values).decode("utf-8", errors="surrogateescape"):
        if _NOT_UTF8 <= ord(char) < _LOW_END:  # a byte that is not UTF-8 here
            pieces.append((chr(ord(char) - _LOW), lengths[at]))
            at += 1
            continue
        size = len(char.encode("utf-8"))
        pieces.append((char, sum(lengths[at : at + size])))
        at += size
    return pieces


def _units(units: list[int], length: int) -> _Pieces:
    """UTF-16 code units, each ``length`` long: a surrogate pair is one character."""
    pieces: _Pieces = []
    at = 0
    while at < len(units):
        unit = units[at]
        low = units[at + 1] if at + 1 < len(units) else 0
        if _HIGH <= unit < _LOW <= low < _LOW_END:
            pieces.append((chr(_ASTRAL + ((unit - _HIGH) << 10) + low - _LOW), 2 * length))
            at += 2
        else:
            pieces.append((chr(unit), length))  # a lone surrogate stays one
            at += 1
    return pieces


def _code_point(text: str, digits: str) -> _Pieces | None:
    value = int(digits, 16)
    return [(chr(value), len(text))] if value <= sys.maxunicode else None


def _octal(text: str) -> _Pieces | None:
    parts = text.split("\\")[1:]
    values = [int(digits, 8) for digits in parts]
    if max(values) > _BYTE:
        return None
    return _bytes(values, [len(digits) + 1 for digits in parts])


def _entity(text: str) -> _Pieces | None:
    unescaped = html.unescape(text)
    return [(unescaped, len(text))] if unescaped != text else None  # a name HTML does not know


def _run(text: str, introducer: str) -> list[int]:
    """The values of a run of ``introducer`` and hex digits (``%2B%C3``, ``%u00E4%u00F6``)."""
    width = len(introducer)
    step = width + (4 if introducer.endswith("u") else 2)
    return [int(text[at + width : at + step], 16) for at in range(0, len(text), step)]


_BYTE: Final = 0xFF
# UTF-16: high surrogates, low surrogates up to the end of them, the first astral code point.
_HIGH: Final = 0xD800
_LOW: Final = 0xDC00
_LOW_END: Final = 0xE000
# How the surrogateescape error handler spells a byte (0x80 or above) that is not UTF-8.
_NOT_UTF8: Final = _LOW + 0x80
_ASTRAL: Final = 0x10000
#: What each kind of escape stands for, from its whole text or its named group;
#: ``None`` when it stands for nothing (it stays as written).
_READ: Final[Mapping[str, Callable[[re.Match[str]], _Pieces | None]]] = {
    "pct": lambda found: _bytes(_run(found[0], "%"), [3] * (len(found[0]) // 3)),
    "pctu": lambda found: _units(_run(found[0], "%u"), 6),
    "brace": lambda found: _code_point(found[0], found["brace"]),
    "wide": lambda found: _code_point(found[0], found["wide"]),
    "utf16": lambda found: _units(_run(found[0], "\\u"), 6),
    "hex": lambda found: _bytes(_run(found[0], "\\x"), [4] * (len(found[0]) // 4)),
    "octal": lambda found: _octal(found[0]),
    "entity": lambda found: _entity(found[0]),
    "plus": lambda _: [(" ", 1)],  # a space, in a form's encoding
}


class _Reading:
    """A text decoded once, and where each of its characters came from in the text below.

    The decoded text is cut into segments; within one, every ``width``
    decoded characters came from ``stride`` characters of the text below,
    side by side from ``source`` on. Text copied as it was is one segment of
    width and stride 1; a run of escapes alike (``%41%42%43``) is one segment
    of stride 3; an HTML entity that stands for two characters has width 2.
    So a text costs a segment per change of kind, not one per character.
    ``below`` is the reading this one decoded (``None`` for the original).
    """

    __slots__ = ("below", "source", "starts", "strides", "text", "widths")

    def __init__(self, text: str, below: _Reading | None = None) -> None:
        self.text = text
        self.below = below
        self.starts: list[int] = []  # where each segment begins in ``text``
        self.source: list[int] = []  # where it begins in the text below
        self.strides: list[int] = []
        self.widths: list[int] = []

    @classmethod
    def of(cls, below: _Reading, decoder: re.Pattern[str]) -> _Reading | None:
        """``below`` decoded once by ``decoder``; ``None`` when there is nothing to decode."""
        text = below.text
        pieces: list[str] = []
        reading = cls("", below)
        written = copied = 0
        for found in decoder.finditer(text):
            kind = found.lastgroup
            if kind == "char":  # the commonest by far (\", \\, \n): no call
                char = found[0][1]
                decoded: _Pieces | None = [(_NAMED.get(char, char), 2)]
            else:
                decoded = _READ[kind or ""](found)
            if decoded is None:
                continue
            start = found.start()
            if start > copied:
                reading._add(written, copied, stride=1)
                pieces.append(text[copied:start])
                written += start - copied
            for value, length in decoded:
                reading._add(written, start, stride=length, width=len(value))
                pieces.append(value)
                written += len(value)
                start += length
            copied = start
        if not reading.starts:
            return None
        if copied < len(text):
            reading._add(written, copied, stride=1)
            pieces.append(text[copied:])
        reading.text = "".join(pieces)
        return reading

    def _add(self, start: int, source: int, *, stride: int, width: int = 1) -> None:
        """Units of ``width`` characters from ``start`` on, each of ``stride`` from ``source``."""
        if self.starts and self.strides[-1] == stride and self.widths[-1] == width:
            units = (start - self.starts[-1]) // width
            if self.source[-1] + units * stride == source:
                return  # the run goes on
        self.starts.append(start)
        self.source.append(source)
        self.strides.append(stride)
        self.widths.append(width)  # the segment runs to where the next begins

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text the characters ``start:end`` of this reading came from."""
        reading: _Reading = self
        while reading.below is not None:
            first = bisect.bisect_right(reading.starts, start) - 1
            last = bisect.bisect_right(reading.starts, end - 1) - 1
            unit = (start - reading.starts[first]) // reading.widths[first]
            start = reading.source[first] + unit * reading.strides[first]
            unit = (end - 1 - reading.starts[last]) // reading.widths[last]
            end = reading.source[last] + (unit + 1) * reading.strides[last]
            reading = reading.below
        return start, end


def _decodings(text: str, *, form: bool) -> list[_Reading]:
    """Every reading of ``text`` through a sequence of up to :data:`DEPTH` passes.

    Every sequence, whatever else the text holds: a pass of each family
    ``text`` holds (:func:`_passes`), then of each family what that decoded
    holds, and so on. No count of readings cuts it short; the families do:
    a text holding ``k`` of them (``k`` at most 4, with ``+`` as a space) is
    read at most ``k + k**2 + k**3`` times, each pass linear in a text no
    longer than ``text``. Two sequences that decode to the same text (a
    pass of each of two families, in either order) go on as one.
    """
    found: list[_Reading] = []
    seen = {text}
    layer = [_Reading(text)]
    for _ in range(DEPTH):
        deeper: list[_Reading] = []
        for reading in layer:
            for family, plus in _passes(reading.text, form=form):
                decoded = _Reading.of(reading, _decoder(family, plus=plus))
                if decoded is None or decoded.text in seen:
                    continue
                seen.add(decoded.text)
                deeper.append(decoded)
        found += deeper
        layer = deeper
    return found


class UnmaskableQuestionError(Exception):
    """A question cannot be asked without showing a secret; the message says why (masked)."""


@attrs.frozen
class MaskedQuestion:
    """A question with every secret masked, and the originals of what had to be."""

    question: Question
    #: Each option or default as masked, and what the tool offered (its own value).
    originals: Mapping[str, SecretValue]


class SecretMasks:
    """The secret answers revealed in one conversation, and the masking of text by them.

    Never shows a secret: its ``repr`` counts them. Safe to share between
    threads: :meth:`add` replaces the tuple a :meth:`mask` reads.
    """

    __slots__ = ("__weakref__", "_anchors", "_form", "_lock", "_secrets", "_stretches")

    def __init__(self) -> None:
        """No secret yet."""
        self._secrets: tuple[SecretValue, ...] = ()
        # Each secret's anchor and reach (see _regions); None when one has no anchor.
        self._anchors: tuple[tuple[SecretValue, int], ...] | None = ()
        self._form = False  # some secret holds a space, so "+" may stand for one
        self._stretches = _Stretches(())
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """How many secrets, never which."""
        return f"SecretMasks(<{len(self._secrets)} secrets>)"

    def add(self, secrets: Iterable[SecretValue]) -> None:
        """Mask ``secrets`` too, each in its :func:`typed_forms`, from now on."""
        with self._lock:
            known = {secret.reveal() for secret in self._secrets}
            added = {form for secret in secrets for form in typed_forms(secret.reveal())} - known
            if not added:
                return
            every = known | added
            ordered = sorted(every, key=len, reverse=True)
            self._secrets = tuple(SecretValue(secret) for secret in ordered)
            anchors = [_anchor(secret) for secret in ordered]
            self._anchors = (
                tuple((SecretValue(a), _reach(s)) for a, s in zip(anchors, ordered, strict=True))
                if all(anchors)
                else None
            )
            self._form = any(" " in secret for secret in every)
            self._stretches = _Stretches(ordered, form=self._form)

    def merge(self, other: SecretMasks) -> None:
        """Mask what ``other`` masks too."""
        self.add(other._secrets)

    def mask(self, text: str) -> str:
        """``text`` with each spelling of each secret replaced by :data:`MASK`."""
        secrets = self._secrets
        if not secrets:
            return text
        spans: list[tuple[int, int]] = []
        stretches, form = self._stretches, self._form
        for offset, end in self._regions(text):
            part = text if (offset, end) == (0, len(text)) else text[offset:end]
            spans += _found(secrets, _Reading(part), offset)  # as written
            for first, last in stretches.escaped(part):
                for reading in _decodings(part[first:last], form=form):
                    spans += _found(secrets, reading, offset + first)
        if not spans:
            return text
        pieces: list[str] = []
        copied = 0
        for start, end in _merged(spans):
            pieces += (text[copied:start], MASK)
            copied = end
        pieces.append(text[copied:])
        return "".join(pieces)

    def _regions(self, text: str) -> list[tuple[int, int]]:
        """The parts of ``text`` a secret may be spelled in: all of a short text, else windows.

        Every spelling this module finds keeps a secret's longest run of
        ASCII letters and digits (its anchor) as it is, so in a long text only
        the windows around the anchors' occurrences are decoded, each reaching
        as far as the secret could be spelled.
        """
        anchors = self._anchors
        if len(text) <= WHOLE_TEXT or anchors is None:
            return [(0, len(text))]
        windows: list[tuple[int, int]] = []
        for anchor, reach in anchors:
            value = anchor.reveal()
            at = text.find(value)
            while at >= 0:
                windows.append((max(0, at - reach), min(len(text), at + len(value) + reach)))
                at = text.find(value, at + 1)
        return _merged(windows) if windows else []

    def mask_question(self, question: Question) -> MaskedQuestion:
        """``question`` with every secret masked, or :class:`UnmaskableQuestionError`.

        Text, context, options (values and descriptions) and default (every
        string in it, when it is an array or object) are masked. An option
        or default that had to be is what the record, the person and the
        model see; :attr:`MaskedQuestion.originals` maps it
        back to what the tool offered. A question whose id holds a secret
        cannot be asked (the tool matches answers by the id), nor one whose
        options become alike once masked.
        """
        if not self._secrets:
            return MaskedQuestion(question, {})
        if (masked_id := self.mask(question.id)) != question.id:
            raise UnmaskableQuestionError(
                f"its question's id echoes a secret answer ({masked_id!r})"
            )
        answer_type = question.answer_type
        originals: dict[str, SecretValue] = {}
        options = []
        for option in answer_type.options:
            masked = self.mask(option.value)
            if masked != option.value:
                if masked in originals or masked in answer_type.option_values:
                    # The person could not tell them apart, nor the tool which was chosen.
                    raise UnmaskableQuestionError(
                        f"its question {question.id!r} cannot be asked without a secret: "
                        f"two of its options read {masked!r} once masked"
                    )
                originals[masked] = SecretValue(option.value)
            description = option.description and self.mask(option.description)
            options.append(attrs.evolve(option, value=masked, description=description))
        default = question.default
        if isinstance(default, str):
            if (masked_default := self.mask(default)) != default:
                originals[masked_default] = SecretValue(default)
                default = masked_default
        elif default is not None:
            # A default need not fit its question (RFD 082 records it verbatim):
            # a number, array or object is masked string by string, keys and
            # numbers included. It is never offered, so nothing maps it back.
            default = self._mask_json(question.id, default)
        self._check_form(question)
        try:
            masked_question = attrs.evolve(
                question,
                text=self.mask(question.text),
                context=self.mask(question.context) if question.context is not None else None,
                # Options and default are masked alike, so a default stays among the options.
                default=default,
                answer_type=answer_type
                if tuple(options) == answer_type.options
                else attrs.evolve(answer_type, options=tuple(options)),
            )
        except (ValueError, MachineError) as error:  # say, two options alike once masked
            raise UnmaskableQuestionError(
                f"its question {question.id!r} cannot be asked without a secret: {error}"
            ) from None
        return MaskedQuestion(masked_question, originals)

    def _check_form(self, question: Question) -> None:
        """A form's fields are recorded whole (its schema): none may say a secret answer."""
        form = question.answer_type.form
        if form is not None and any(
            self.mask(text) != text for text in _strings(form.json_schema())
        ):
            raise UnmaskableQuestionError(
                f"its question {question.id!r} cannot be asked without a secret: "
                "its form's fields echo a secret answer"
            )

    def _mask_json(self, question_id: str, value: JsonValue) -> JsonValue:
        """``value`` with every string in it masked, the keys of its objects and its numbers too.

        A number is written as its digits: one that spells a secret answer (a
        PIN, say) is recorded as its masked text, a string.
        """
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            written = orjson.dumps(value).decode("ascii")  # as the record will hold it
            masked_number = self.mask(written)
            return value if masked_number == written else masked_number
        if isinstance(value, list):
            return [self._mask_json(question_id, item) for item in value]
        if isinstance(value, dict):
            masked: dict[str, JsonValue] = {}
            for key, item in value.items():
                masked_key = self.mask(key)
                if masked_key in masked:
                    raise UnmaskableQuestionError(
                        f"its question {question_id!r} cannot be asked without a secret: "
                        f"two keys of its default read {masked_key!r} once masked"
                    )
                masked[masked_key] = self._mask_json(question_id, item)
            return masked
        return value


_ANCHOR: Final = re.compile(r"[A-Za-z0-9]+")
#: What escapes are written with besides their introducers, whatever they
#: stand for: letters (``\u``, ``&amp;``), digits, ``#``, ``;`` and the
#: braces of ``\u{...}``.
_ESCAPE_TEXT: Final = "A-Za-z0-9#;{}"


def _stretch_patterns(introducers: str) -> tuple[str, re.Pattern[str], re.Pattern[str]]:
    """``introducers``, one of them, and the run of characters a spelling may hold.

    In the run, a secret's own characters are read as "a" (see :class:`_Stretches`).
    """
    escaped = re.escape(introducers)
    return introducers, re.compile(f"[{escaped}]"), re.compile(f"[{_ESCAPE_TEXT}{escaped}]*+")


#: The patterns of a text, and of a form's text (where ``+`` is a space).
_STRETCH_PATTERNS: Final = {False: _stretch_patterns("%\\&"), True: _stretch_patterns("%\\&+")}


class _Stretches:
    r"""The stretches of a text that may spell a secret escaped, each decoded on its own.

    A spelling, however many layers deep, is written with a secret's own
    characters and those of escapes only: any other character (a quote, a
    comma, a space when no secret has one) ends it. So each stretch of those
    characters is decoded on its own, and only one holding an escape's
    introducer (``%``, ``\``, ``&``, and ``+`` when it may be a space):
    what is escaped elsewhere in the text neither costs the stretch a
    reading nor changes how it reads.
    """

    __slots__ = ("_introducer", "_introducers", "_own", "_shortest", "_spelled")

    def __init__(self, secrets: Collection[str], *, form: bool = False) -> None:
        """The stretches that may spell one of ``secrets``; ``+`` a space when ``form``."""
        # The secrets' own characters are read as "a", one of the escapes':
        # the patterns hold no character of a secret, and so nothing of one
        # stays in the process-wide cache of compiled patterns after it.
        own = {char for secret in secrets for char in secret}
        self._own = str.maketrans(dict.fromkeys(own, "a"))
        self._introducers, self._introducer, self._spelled = _STRETCH_PATTERNS[form]
        # Decoding never lengthens a text: a stretch shorter than every secret spells none.
        self._shortest = min(map(len, secrets), default=0)

    def escaped(self, text: str) -> list[tuple[int, int]]:
        """Where each stretch of ``text`` holding an introducer begins and ends."""
        if not any(introducer in text for introducer in self._introducers):
            return []  # nothing to decode: most outputs
        stretches = []
        found = self._introducer.search(text)
        read = text.translate(self._own)  # as long as the text: its places are the text's
        backwards = read[::-1]  # where a stretch begins: its end in the text reversed
        while found is not None:
            at = found.start()
            first = len(text) - self._run(backwards, len(text) - at)
            last = self._run(read, at)
            if last - first >= self._shortest:
                stretches.append((first, last))
            found = self._introducer.search(text, last)
        return stretches

    def _run(self, text: str, at: int) -> int:
        """Where the run of characters a spelling may hold that begins at ``at`` ends."""
        run = self._spelled.match(text, at)
        return run.end() if run else at  # (it matches the empty run too)


def _found(
    secrets: Iterable[SecretValue], reading: _Reading, base: int
) -> Iterator[tuple[int, int]]:
    """The span of the original text (from ``base`` on) of each secret in ``reading``."""
    decoded = reading.text
    for secret in secrets:
        value = secret.reveal()
        at = decoded.find(value)
        while at >= 0:
            start, stop = reading.original(at, at + len(value))
            yield base + start, base + stop
            at = decoded.find(value, at + 1)


def _anchor(secret: str) -> str:
    """The secret's longest run of ASCII letters and digits ("" when it has none)."""
    return max(_ANCHOR.findall(secret), key=len, default="")


def _reach(secret: str) -> int:
    """How far from its anchor a spelling of ``secret`` may reach, escaped three times."""
    return 32 * len(secret) + 64


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, those that overlap joined into one."""
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start < last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def unmasked_answers(
    effect: RunTool, originals: Mapping[tuple[str, str], Mapping[str, SecretValue]]
) -> RunTool:
    """``effect`` with each masked option or default chosen turned back into the tool's own.

    ``originals`` maps (tool call id, question id) to what
    :meth:`SecretMasks.mask_question` had to mask for that question.
    """
    if not originals:  # nothing was masked in any question: nothing to give back
        return effect
    answers = dict(effect.answers)
    for question_id, answer in effect.answers.items():
        offered = originals.get((effect.tool_call_id, question_id))
        if offered and isinstance(answer, str) and answer in offered:
            answers[question_id] = offered[answer].reveal()
    return attrs.evolve(effect, answers=answers) if answers != effect.answers else effect


# The masks of each conversation in this process: by the conversation object,
# and by the directory it lives in once it has one (so that the conversation
# loaded again from there shares them). Never emptied: a secret revealed once
# stays masked for the process's life.
_BY_CONVERSATION: weakref.WeakKeyDictionary[Conversation, SecretMasks] = (
    weakref.WeakKeyDictionary()
)
_BY_DIRECTORY: dict[str, SecretMasks] = {}
_REGISTRY_LOCK = threading.Lock()


def masks_for(conversation: Conversation) -> SecretMasks:
    """The masks of ``conversation``, shared with every coordinator over it in this process.

    Called again once the conversation has a directory, it joins the masks
    of that directory (a coordinator over the conversation loaded from there).
    """
    directory = os.path.realpath(conversation.path) if conversation.path is not None else None
    with _REGISTRY_LOCK:
        masks = _BY_CONVERSATION.get(conversation)
        if directory is not None:
            shared = _BY_DIRECTORY.setdefault(directory, masks or SecretMasks())
            if masks is not None and masks is not shared:
                shared.merge(masks)
            masks = shared
        if masks is None:
            masks = SecretMasks()
        _BY_CONVERSATION[conversation] = masks
        return masks


def _strings(value: JsonValue) -> list[str]:
    """Every string in ``value`` (a form's schema: flat, a few levels deep), keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *_strings(item))]
    return []
