r"""Secret masking: what a tool echoes of a secret answer is recorded as ``<secret>``.

A secret answer is revealed only inside the executor (DESIGN.md rule 2), but
the tool may print it back: in its output, an error, a traceback, or the
next question it asks. Everything the driver records from a tool goes
through :meth:`SecretMasks.mask` first.

Theory of operation: rather than enumerate how each encoder of each language
might spell a secret, the *candidate text* is decoded, and the secret looked
for in what it decodes to. One decoding pass turns every escape it knows
into the character it stands for, wherever it is:

- percent escapes, ``%2B`` or ``%2b``, runs of them read as UTF-8 (else
  Latin-1, as JavaScript's ``escape()`` writes é as ``%E9``), and ``%uXXXX``;
- backslash escapes: ``\uXXXX`` (surrogate pairs joined), ``\u{X...}``,
  ``\UXXXXXXXX``, ``\xXX`` and octal ``\NNN`` (runs of them read as UTF-8
  bytes when they are, as in a ``bytes`` repr), ``\n``, ``\t`` and the like,
  and ``\X`` for any other ``X`` (``\"``, ``\\``, ``\/``, ``\'``);
- HTML character references: ``&amp;``, ``&#43;``, ``&#x2B;`` and every
  named one of HTML5 (written with its ``;``);
- and, in another reading of the same text, ``+`` as a space (an HTML
  form's encoding, ``urlencode``), tried only when a secret holds a space.

Hex digits are read in either case. Besides the pass decoding every family
of escape the text holds, a pass decodes each family alone, since one
encoding keeps what another would take for an escape (``html.escape`` keeps
a backslash; JSON keeps ``%41`` and ``&amp;``). Each pass is applied again
to what it produced, up to :data:`DEPTH` times (and at most
:data:`MOST_READINGS` readings in all), so a secret escaped twice (a traceback
quoting ``repr(token)``, wrapped as JSON by the local tools' protocol) or
JSON inside a URL is found as well. Each decoded character keeps the span of
the original text it came from; a secret found in a decoded text is masked
by replacing that span of the *original*, so what is not a secret is
recorded as the tool wrote it, escapes and all. Spans found in different
readings that overlap are masked as one: a secret holding another (a PIN
inside a token) is masked whole.

Every spelling above keeps a secret's longest run of ASCII letters and
digits (its *anchor*) as it is. A text up to :data:`WHOLE_TEXT` characters
is decoded whole; in a longer one, only the windows around its anchors'
occurrences are, each reaching as far as the secret escaped three times
could: a long output that does not hold a secret costs a substring search,
not a decoding.

Masks last for the life of the process, and are shared by every coordinator
over the same conversation (:func:`masks_for`): a secret typed in one turn
and printed again by a tool in a later one, even by another coordinator
over the conversation loaded again, is masked. They are not shared between
conversations: another user's conversation in the same process must not
see where this one's secret appears.

Limits: an encoding not listed above is not decoded (base64, hex dumps,
shell quoting, a secret split across lines or spelled with Unicode
normalised otherwise); in a text longer than :data:`WHOLE_TEXT`, nor one
that escapes letters and digits too (``%41`` for ``A``); a secret that is a
common word masks that word wherever a tool prints it. Decoding costs some
microseconds per character of the text decoded, so a long output that
repeats a secret all along is slow to record.
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
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias

import attrs

from machines import JsonValue, MachineError, Question, RunTool, SecretValue

if TYPE_CHECKING:
    from coordinator.store._store import Conversation

__all__ = [
    "DEPTH",
    "MASK",
    "MOST_READINGS",
    "WHOLE_TEXT",
    "MaskedQuestion",
    "SecretMasks",
    "UnmaskableQuestionError",
    "masks_for",
    "unmasked_answers",
]

#: What a secret is replaced by.
MASK: Final = "<secret>"
#: How many times the decoding passes are applied to their own output.
DEPTH: Final = 3
#: How many decoded readings of one text are looked through at most, shallowest first.
MOST_READINGS: Final = 12
#: A text up to this long is decoded whole; a longer one around its secrets' anchors.
WHOLE_TEXT: Final = 4096

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


_PATTERNS: Final = {
    _Family.PERCENT: _PERCENT,
    _Family.BACKSLASH: _BACKSLASH,
    _Family.ENTITY: _ENTITY,
}


@functools.cache
def _decoder(families: frozenset[_Family], *, plus: bool) -> re.Pattern[str]:
    """One pass decoding ``families`` at once (and ``+`` as a space when ``plus``)."""
    alternatives = [_PATTERNS[family] for family in _Family if family in families]
    return re.compile("|".join(alternatives + [_PLUS] * plus))


#: Which families a chain of passes decodes: every one the text holds (``None``), or one.
_Kind: TypeAlias = tuple[_Family | None, bool]


def _kinds(text: str, *, form: bool) -> list[_Kind]:
    """The chains of passes worth starting on ``text``: its families at once, then each alone.

    Each alone as well, since one encoding keeps what another would read as
    an escape: ``html.escape`` keeps a backslash, JSON a ``%41`` or ``&amp;``
    that was in the secret; the pass that decodes them all would misread it.
    ``+`` is read as a space (the bool) only with percent escapes, as a
    form's encoding has it, and only when a secret has a space.
    """
    present = [family for family in _Family if family.value in text]
    kinds: list[_Kind] = [(None, False)] if present else []
    if len(present) > 1:
        kinds += [(family, False) for family in present]
    if form and "+" in text:
        kinds += [(None, True), (_Family.PERCENT, True)]
    return kinds


def _decoder_of(kind: _Kind, text: str) -> re.Pattern[str] | None:
    """The pass of chain ``kind`` over ``text``; ``None`` when it has nothing to decode."""
    family, plus = kind
    families = frozenset(each for each in _Family if each.value in text and family in (None, each))
    plus = plus and "+" in text
    return _decoder(families, plus=plus) if families or plus else None


_NAMED: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "a": "\a"}


#: What one escape stands for: pieces of decoded text, each with the length
#: of the escape text it came from (a run of ``%XX`` is one piece per
#: character, so a secret that begins inside the run is masked from there).
_Pieces: TypeAlias = list[tuple[str, int]]


def _bytes(values: list[int], lengths: list[int]) -> _Pieces:
    """Escaped bytes: UTF-8 when they are, else one Latin-1 character per byte."""
    try:
        text = bytes(values).decode("utf-8")
    except UnicodeDecodeError:
        return [(chr(value), length) for value, length in zip(values, lengths, strict=True)]
    pieces: _Pieces = []
    at = 0
    for char in text:
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


def _readings(text: str, *, form: bool) -> list[_Reading]:
    """``text`` as written, and its readings up to :data:`DEPTH` decodings deep.

    A chain of passes of one kind (:func:`_kinds`) decodes each reading
    again, as a secret escaped twice the same way is; what every family
    decoded also starts chains of each family alone. Shallowest first, each
    decoded text once, at most :data:`MOST_READINGS`.
    """
    original = _Reading(text)
    found = [original]
    seen = {text}
    layer = [(original, kind) for kind in _kinds(text, form=form)]
    for _ in range(DEPTH):
        deeper: list[tuple[_Reading, _Kind]] = []
        for reading, kind in layer:
            decoder = _decoder_of(kind, reading.text)
            if decoder is None or len(found) > MOST_READINGS:
                continue
            decoded = _Reading.of(reading, decoder)
            if decoded is None or decoded.text in seen:
                continue
            seen.add(decoded.text)
            found.append(decoded)
            deeper.append((decoded, kind))
            if kind == (None, False):
                # What every family decoded once may hold one encoding's
                # escapes beside another's literal text (JSON inside a URL
                # that kept a %41): its families alone, too.
                kinds = _kinds(decoded.text, form=False)[1:]
                deeper += [(decoded, each) for each in kinds]
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

    __slots__ = ("__weakref__", "_anchors", "_form", "_lock", "_secrets")

    def __init__(self) -> None:
        """No secret yet."""
        self._secrets: tuple[SecretValue, ...] = ()
        # Each secret's anchor and reach (see _regions); None when one has no anchor.
        self._anchors: tuple[tuple[SecretValue, int], ...] | None = ()
        self._form = False  # some secret holds a space, so "+" may stand for one
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """How many secrets, never which."""
        return f"SecretMasks(<{len(self._secrets)} secrets>)"

    def add(self, secrets: Iterable[SecretValue]) -> None:
        """Mask ``secrets`` too, from now on (the empty secret masks nothing)."""
        with self._lock:
            known = {secret.reveal() for secret in self._secrets}
            added = [s for s in secrets if s.reveal() and s.reveal() not in known]
            if not added:
                return
            every = {*known, *(secret.reveal() for secret in added)}
            ordered = sorted(every, key=len, reverse=True)
            self._secrets = tuple(SecretValue(secret) for secret in ordered)
            anchors = [_anchor(secret) for secret in ordered]
            self._anchors = (
                tuple((SecretValue(a), _reach(s)) for a, s in zip(anchors, ordered, strict=True))
                if all(anchors)
                else None
            )
            self._form = any(" " in secret for secret in every)

    def merge(self, other: SecretMasks) -> None:
        """Mask what ``other`` masks too."""
        self.add(other._secrets)

    def mask(self, text: str) -> str:
        """``text`` with each spelling of each secret replaced by :data:`MASK`."""
        secrets = self._secrets
        if not secrets:
            return text
        spans: list[tuple[int, int]] = []
        for offset, end in self._regions(text):
            part = text if (offset, end) == (0, len(text)) else text[offset:end]
            for reading in _readings(part, form=self._form):
                decoded = reading.text
                for secret in secrets:
                    value = secret.reveal()
                    at = decoded.find(value)
                    while at >= 0:
                        start, stop = reading.original(at, at + len(value))
                        spans.append((offset + start, offset + stop))
                        at = decoded.find(value, at + 1)
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
        if isinstance(default, str) and (masked_default := self.mask(default)) != default:
            originals[masked_default] = SecretValue(default)
            default = masked_default
        elif isinstance(default, list | dict):
            # A default need not fit its question (RFD 082 records it verbatim):
            # an array or object is masked string by string, keys included. It
            # is never offered, so nothing maps it back.
            default = self._mask_json(question.id, default)
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

    def _mask_json(self, question_id: str, value: JsonValue) -> JsonValue:
        """``value`` with every string in it masked, the keys of its objects too."""
        if isinstance(value, str):
            return self.mask(value)
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
