r"""How text from outside the program is shown: the shell's vocabulary for output.

Not a layer: every layer may use it, and it imports nothing of the shell (an
import contract holds it to that). What is here is the one place each rule
lives:

- :func:`shown_path`: a file name as text any output can carry.
- :func:`shown_text`: text from a file, a tool, a model or a server as text a
  terminal only displays; :func:`shown_line`, such text on one bounded line
  (a question, a message, a tool's output in a report); :func:`shown_reason`,
  a cancellation reason's tag as every output shows it.
- :func:`shown_url`: a URL from outside (a provider's ``base_url``, an MCP
  server's address, a link a server asks the person to open) as a record, an
  error or the model may hold it: without the parts that carry credentials
  (:func:`unshown_url_parts` gives them, to redact an echo); and
  :func:`shown_links`, every link in a text so.

Theory of operation for :func:`shown_text`: a terminal acts on some
characters instead of showing them, and a reader is misled by others. Each
such character is replaced by the escape that spells it, so it stays visible
as what it is and nothing reaches the terminal raw:

- C0 controls (but tab), DEL and the C1 controls. That takes every escape
  sequence with it: CSI, OSC (a title, the clipboard by OSC 52, a link), DCS,
  APC, PM and SOS are introduced by ESC (a C0 control) or by their own C1
  control, and with the introducer escaped the rest of a sequence is plain
  text (``\x1b]52;c;...`` reads as those characters and sets nothing). BEL
  and the string terminator go the same way.
- Line endings, in a single line: LF and CR read ``\n`` and ``\r``. A bare CR
  would return the cursor and let the rest overwrite what came before. Where
  line breaks are kept (``lines=True``), CR and CRLF become LF, which a
  terminal shows as the same break.
- What reorders or hides text: the bidi marks, embeddings, overrides and
  isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), the
  line and paragraph separators (U+2028, U+2029), and the invisible
  characters a text can hide words with (soft hyphen, U+180E, zero-width
  space, word joiner and invisible operators U+2060 to U+2064, the
  deprecated format characters U+206A to U+206F, the BOM, the interlinear
  annotation characters U+FFF9 to U+FFFB, the tag characters U+E0000 to
  U+E007F). A tool could otherwise make what is on screen differ from what
  it sent (``Delete \u202essalg/`` shows as ``Delete /glass``).
- Lone surrogates (a file name's undecodable bytes, say), which no UTF-8
  output can carry at all.

Tab stays (it moves nothing but the cursor along its line), and so do the
zero-width joiners emoji and some scripts need (U+200C, U+200D): they move
nothing.

The spelling is Python's (``\x1b``, ``\u202e``, ``\U000e0041``; ``\n`` and
``\r`` by name), or JSON's (``\u001b``, surrogate pairs above U+FFFF) for
text that is JSON already, so a JSON document stays JSON. A backslash already
in the text is not doubled: the rendering is for reading, and the file holds
the exact value.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "REASON_SHOWN",
    "redact",
    "shown_line",
    "shown_links",
    "shown_path",
    "shown_reason",
    "shown_text",
    "shown_url",
    "unshown_url_parts",
]


def shown_path(path: Path | str) -> str:
    """``path`` as text any output can carry: bytes that are not UTF-8 become U+FFFD.

    A file name is bytes, and one that is not UTF-8 decodes to lone
    surrogates, which neither JSON nor a UTF-8 terminal can carry. Replacing
    them is what JP (Rust's ``to_string_lossy``) shows for such a name; the
    text then names the file for a person, not for opening it.
    """
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:  # a surrogate no file name decodes to: not from the OS
        raw = os.fspath(path).encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


# Everything the module docstring lists but line endings, which depend on the
# call. \x09 (tab) and \x0a (LF) are left out of the first range on purpose.
_UNSAFE_ASCII = "\x00-\x08\x0b-\x1f\x7f"
_UNSAFE = (
    f"{_UNSAFE_ASCII}\x80-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
# By (whether line breaks are kept, whether the text is ASCII): most text is
# ASCII, and its class of eight characters is scanned in half the time.
_PATTERNS = {
    (False, False): re.compile(f"[\n\r{_UNSAFE}]"),
    (False, True): re.compile(f"[\n\r{_UNSAFE_ASCII}]"),
    (True, False): re.compile(f"[{_UNSAFE}]"),  # after CR and CRLF became LF
    (True, True): re.compile(f"[{_UNSAFE_ASCII}]"),
}
_LINE_ENDINGS = re.compile(r"\r\n?")
_NAMED = {"\n": r"\n", "\r": r"\r"}
_LATIN_1 = 0xFF  # Python spells up to here `\xNN`
_BMP = 0xFFFF  # and up to here `\uNNNN`; JSON spells what is above as a surrogate pair


def _python_escape(match: re.Match[str]) -> str:
    char = match[0]
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code <= _LATIN_1:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= _BMP else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    if code <= _BMP:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def shown_text(
    text: str, *, lines: bool = False, spelling: Literal["python", "json"] = "python"
) -> str:
    r"""``text`` as a terminal can only display it: every character it acts on escaped.

    The module docstring lists what is escaped and why. With ``lines`` line
    breaks are kept (CR and CRLF as LF); without, the text stays on one line
    (``\n``, ``\r``). ``spelling`` is ``"json"`` for text that is JSON already
    (``orjson`` escapes C0 controls itself but writes the others as they are).
    """
    if lines and "\r" in text:
        text = _LINE_ENDINGS.sub("\n", text)
    pattern = _PATTERNS[lines, text.isascii()]
    return pattern.sub(_python_escape if spelling == "python" else _json_escape, text)


def shown_line(text: str, limit: int | None = None) -> str:
    """``text`` as :func:`shown_text` shows it, on one line, cut to ``limit`` characters.

    Every run of white space, line breaks included, reads as one space: a
    report's line quotes what was said, not how it was laid out. Cut, the
    line ends with ``...`` within the limit. The limit counts what is shown,
    escapes and all, so a text made of control characters is held to it too.
    """
    line = " ".join(shown_text(text, lines=True).split())
    if limit is None or len(line) <= limit:
        return line
    return line[: limit - 3] + "..."


#: The most characters of a cancellation reason's tag shown; a longer one is
#: cut there and ends with an ellipsis.
REASON_SHOWN: Final = 64


def shown_reason(tag: str) -> str:
    """A cancellation reason's ``tag`` as every output shows it: visible, escaped and bounded.

    The tag as recorded, cut at :data:`REASON_SHOWN` characters (then ``…``),
    with nothing a terminal acts on; the empty tag (a reader keeps it, as any
    tag it does not know) is shown as ``""``, so that it is seen. It is free
    text from whoever wrote the file, and a reason is a short tag, never a
    place for a long text.
    """
    if not tag:
        return '""'
    shown = tag if len(tag) <= REASON_SHOWN else f"{tag[:REASON_SHOWN]}\u2026"
    return shown_text(shown)


#: What a URL that cannot be parsed is shown as: none of it, since where its
#: credentials lie cannot be told.
_UNREADABLE_URL: Final = "<a link that cannot be read>"
#: Said after a URL whose query string or fragment was left out.
_CUT = " (query string not shown)"


def shown_url(url: object) -> str:
    """``url`` fit for a record, a message or the model: scheme, host, port and path only.

    The user name and password (``https://user:token@host``), the query
    string (``?code=...``) and the fragment (``#access_token=...``) are left
    out: any of them may carry a credential (OAuth puts tokens in both of
    the last two). When a query string or fragment was left out, the text
    says so, so a reader does not take the link for the whole of it.
    """
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:  # a broken IPv6 host, say
        return _UNREADABLE_URL
    # The parser lowers the scheme; in a sentence ("Go...https://") the
    # letters are the writer's, so they are kept as written.
    scheme = text[: len(parts.scheme)]
    if scheme.lower() != parts.scheme:
        scheme = parts.scheme
    host = parts.netloc.rpartition("@")[2]
    cut = _CUT if parts.query or parts.fragment else ""
    return urlunsplit((scheme, host, parts.path, "", "")) + cut


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every occurrence of each of ``secrets`` replaced by ``<redacted>``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<redacted>")
    return text


def unshown_url_parts(url: object) -> tuple[str, ...]:
    """The parts of ``url`` :func:`shown_url` leaves out, to redact should a message echo them."""
    # Whole, as an echoed URL would hold them: a password alone may be short
    # enough to blot out ordinary words.
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return ()
    userinfo = parts.netloc.rpartition("@")[0]
    return tuple(part for part in (userinfo, parts.query, parts.fragment) if part)


#: A link in free text: a scheme, ``://``, and everything up to the next
#: white space. Greedy on purpose: a quote or bracket inside a query string
#: must not end the link early and leave the rest of a token behind. A
#: scheme is short: bounded, a long run of letters costs each of its letters
#: a few steps, not the rest of the run (a longer one matches by its end).
_LINK = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://\S+")
#: Punctuation that ends a sentence or closes a bracket or quote around a
#: link more often than it ends the link itself: kept as text after it.
_AFTER_LINK = ".,;:!?)]}>'\""


def _shown_link(match: re.Match[str]) -> str:
    link = match[0]
    core = link.rstrip(_AFTER_LINK)
    return shown_url(core) + link[len(core) :]


def shown_links(text: str) -> str:
    """``text`` with every link in it (``scheme://...``) as :func:`shown_url` shows it.

    For text a server wrote around a link (an MCP URL request's message),
    which may repeat the link, token and all.
    """
    if "://" not in text:
        return text
    return _LINK.sub(_shown_link, text)
