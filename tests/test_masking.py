"""Secret masking on its own: real encoders' spellings of a secret, and nothing else, masked.

Python's encoders are called; JavaScript's, Go's, .NET's and PHP's are
reproduced byte for byte from their documented rules (each cites the rule),
so that a tool written in any of them that prints a secret back gets it
masked in the record.
"""

from __future__ import annotations

import gc
import html
import json
import re
import urllib.parse
import xml.sax.saxutils
from typing import TYPE_CHECKING

import orjson
import pytest
from conftest import examples
from coordinator_harness import (
    UNATTENDED,
    assert_invariants,
    assistant_calls,
    conversation_on_disk,
    run,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from coordinator.driver._executors import (
    Ask,
    BuiltinExecutor,
    BuiltinOutcome,
    BuiltinTool,
    Success,
)
from coordinator.driver._masking import (
    MASK,
    SHORTEST_FORM,
    WHOLE_TEXT,
    SecretMasks,
    UnmaskableQuestionError,
    masks_for,
    typed_forms,
    unmasked_answers,
)
from coordinator.driver._prompting import ScriptedPrompter
from coordinator.driver._tool_coordinator import ToolCoordinator
from coordinator.store import Conversation, load_conversation, save_conversation
from machines import JsonValue, Question, RunTool, SecretValue

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

# ------------------------------------------------------------------ encoders


def _utf8(char: str) -> bytes:
    return char.encode("utf-8", errors="surrogatepass")


def _percent(text: str, keep: str, *, space: str | None = None, hexdigits: str = "%02X") -> str:
    """Percent-encode UTF-8 bytes of every character not ASCII-alphanumeric or in ``keep``."""
    out = []
    for char in text:
        if char.isascii() and (char.isalnum() or char in keep):
            out.append(char)
        elif char == " " and space is not None:
            out.append(space)
        else:
            out.extend("%" + hexdigits % byte for byte in _utf8(char))
    return "".join(out)


def _units(char: str) -> list[int]:
    """The UTF-16 code units of ``char`` (a surrogate pair beyond the BMP)."""
    data = char.encode("utf-16-be", errors="surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def js_encode_uri_component(text: str) -> str:
    """ECMAScript 2024 §19.2.6.5: unescaped A-Z a-z 0-9 - _ . ! ~ * ' ( ); UTF-8 as %XX, upper."""
    return _percent(text, "-_.!~*'()")


def js_escape(text: str) -> str:
    """ECMAScript Annex B.2.1.1 escape(): kept A-Z a-z 0-9 @*_+-./; unit < 256 %XX, else %uXXXX."""
    out = []
    for char in text:
        if char.isascii() and (char.isalnum() or char in "@*_+-./"):
            out.append(char)
            continue
        out.extend(f"%{unit:02X}" if unit < 256 else f"%u{unit:04X}" for unit in _units(char))
    return "".join(out)


def js_json_stringify(text: str) -> str:
    r"""ECMAScript §25.5.2.3 QuoteJSONString: \" \\ \b\t\n\f\r; other < 0x20 as \u00xx."""
    named = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
    named["\r"] = "\\r"
    return "".join(
        named.get(char, f"\\u{ord(char):04x}" if ord(char) < 0x20 else char) for char in text
    )


def go_json_marshal(text: str) -> str:
    r"""Go encoding/json (encode.go appendString, escapeHTML): \u003c \u003e \u0026, lower hex.

    ``"`` and ``\`` backslashed; \b \f \n \r \t named (Go 1.22); other
    control characters and U+2028/U+2029 as \u00xx / \u2028, lower-case.
    """
    named = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    named["\t"] = "\\t"
    out = []
    for char in text:
        if char in named:
            out.append(named[char])
        elif ord(char) < 0x20 or char in "<>&\u2028\u2029":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def go_query_escape(text: str) -> str:
    """Go net/url QueryEscape (shouldEscape, encodeQueryComponent): -_.~ kept, space +, %XX."""
    return _percent(text, "-_.~", space="+")


def go_path_escape(text: str) -> str:
    """Go net/url PathEscape (encodePathSegment): also keeps $&+:=@, escapes / ; , ? and space."""
    return _percent(text, "-_.~$&+:=@")


def _go_quote(text: str, *, ascii_only: bool) -> str:
    r"""Go strconv.Quote / QuoteToASCII (appendEscapedRune): lower-case \x, \u, \U."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    named["\v"] = "\\v"
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in named:
            out.append(named[char])
        elif char.isprintable() and (code < 0x80 or not ascii_only):
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def go_quote(text: str) -> str:
    """Go strconv.Quote: printable runes as they are."""
    return _go_quote(text, ascii_only=False)


def go_quote_to_ascii(text: str) -> str:
    """Go strconv.QuoteToASCII (fmt's %+q): every non-ASCII rune escaped."""
    return _go_quote(text, ascii_only=True)


def dotnet_json(text: str) -> str:
    r""".NET System.Text.Json with JavaScriptEncoder.Default: upper-case \uXXXX.

    Only printable Basic Latin passes, less the HTML-sensitive ``"&'+<>`\``;
    ``\`` is \\, \b \t \n \f \r named, and the rest (non-ASCII
    included, by UTF-16 unit) \uXXXX in upper case: ``+`` is ``\u002B``.
    """
    named = {"\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for char in text:
        if char in named:
            out.append(named[char])
        elif 0x20 <= ord(char) < 0x7F and char not in "\"&'+<>`":
            out.append(char)
        else:
            out.extend(f"\\u{unit:04X}" for unit in _units(char))
    return "".join(out)


def dotnet_escape_data_string(text: str) -> str:
    """.NET Uri.EscapeDataString (RFC 3986): unreserved -._~ kept, %XX upper."""
    return _percent(text, "-._~")


def dotnet_http_utility_url_encode(text: str) -> str:
    """.NET HttpUtility.UrlEncode (HttpEncoder.UrlEncode): keep -_.!*(), space +, %xx LOWER."""
    return _percent(text, "-_.!*()", space="+", hexdigits="%02x")


def dotnet_html_encode(text: str) -> str:
    """.NET WebUtility.HtmlEncode: &lt; &gt; &quot; &amp; &#39;; U+00A0-U+00FF, astral: &#N;."""
    named = {"<": "&lt;", ">": "&gt;", '"': "&quot;", "&": "&amp;", "'": "&#39;"}
    return "".join(
        named.get(
            char, f"&#{ord(char)};" if 0xA0 <= ord(char) <= 0xFF or ord(char) > 0xFFFF else char
        )
        for char in text
    )


def php_json_encode(text: str) -> str:
    r"""PHP json_encode, default flags (ext/json php_json_escape_string): \/ and lower \uXXXX.

    ``/`` is ``\/`` (no JSON_UNESCAPED_SLASHES); non-ASCII by UTF-16 unit
    and control characters as \uxxxx from "0123456789abcdef".
    """
    named = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n"}
    named |= {"\r": "\\r", "\t": "\\t"}
    out = []
    for char in text:
        if char in named:
            out.append(named[char])
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _units(char))
        else:
            out.append(char)
    return "".join(out)


def php_json_encode_hex(text: str) -> str:
    r"""PHP json_encode with JSON_HEX_TAG|AMP|APOS|QUOT: those as upper-case \u003C, \u0026..."""
    hexed = {"<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "'": "\\u0027", '"': "\\u0022"}
    return "".join(hexed.get(char) or php_json_encode(char) for char in text)


def php_urlencode(text: str) -> str:
    """PHP urlencode: alphanumerics and -_. kept, space +, %XX upper."""
    return _percent(text, "-_.", space="+")


def php_rawurlencode(text: str) -> str:
    """PHP rawurlencode (RFC 3986): alphanumerics and -_.~ kept, %XX upper."""
    return _percent(text, "-_.~")


def php_htmlspecialchars(text: str) -> str:
    """PHP htmlspecialchars (ENT_QUOTES, the 8.1 default): &amp; &quot; &#039; &lt; &gt;."""
    named = {"&": "&amp;", '"': "&quot;", "'": "&#039;", "<": "&lt;", ">": "&gt;"}
    return "".join(named.get(char, char) for char in text)


def php_addslashes(text: str) -> str:
    r"""PHP addslashes: a backslash before ' " \ and NUL (as \0)."""
    return "".join("\\0" if c == "\0" else "\\" + c if c in "'\"\\" else c for c in text)


ENCODERS: dict[str, Callable[[str], str]] = {
    "as it is": lambda text: text,
    # Python's own.
    "python json.dumps": lambda text: json.dumps(text)[1:-1],
    "python json.dumps ensure_ascii=False": lambda text: json.dumps(text, ensure_ascii=False)[
        1:-1
    ],
    "python orjson.dumps": lambda text: orjson.dumps(text).decode()[1:-1],
    "python repr": lambda text: repr(text)[1:-1],
    "python ascii": lambda text: ascii(text)[1:-1],
    "python bytes repr": lambda text: repr(text.encode())[2:-1],
    "python unicode_escape": lambda text: text.encode("unicode_escape").decode(),
    "python urllib quote": urllib.parse.quote,
    "python urllib quote safe=''": lambda text: urllib.parse.quote(text, safe=""),
    "python urllib quote_plus": urllib.parse.quote_plus,
    "python urlencode": lambda text: urllib.parse.urlencode({"t": text})[2:],
    "python html.escape": html.escape,
    "python xml escape": xml.sax.saxutils.escape,
    # Escaped twice: what a tool printed, inside a wrapper's own encoding.
    "python json in json": lambda text: json.dumps(json.dumps(text)[1:-1])[1:-1],
    "python repr in json": lambda text: json.dumps(repr(text)[1:-1])[1:-1],
    "python json in a url": lambda text: urllib.parse.quote(json.dumps(text)[1:-1], safe=""),
    "python url in json": lambda text: json.dumps(urllib.parse.quote(text, safe=""))[1:-1],
    "python quoted twice": lambda text: urllib.parse.quote(urllib.parse.quote(text, safe="")),
    # JavaScript.
    "js encodeURIComponent": js_encode_uri_component,
    "js escape": js_escape,
    "js JSON.stringify": js_json_stringify,
    # Go.
    "go json.Marshal": go_json_marshal,
    "go url.QueryEscape": go_query_escape,
    "go url.PathEscape": go_path_escape,
    "go strconv.Quote": go_quote,
    "go strconv.QuoteToASCII": go_quote_to_ascii,
    # .NET.
    "dotnet System.Text.Json": dotnet_json,
    "dotnet Uri.EscapeDataString": dotnet_escape_data_string,
    "dotnet HttpUtility.UrlEncode": dotnet_http_utility_url_encode,
    "dotnet WebUtility.HtmlEncode": dotnet_html_encode,
    # PHP.
    "php json_encode": php_json_encode,
    "php json_encode JSON_HEX_*": php_json_encode_hex,
    "php urlencode": php_urlencode,
    "php rawurlencode": php_rawurlencode,
    "php htmlspecialchars": php_htmlspecialchars,
    "php addslashes": php_addslashes,
}

SECRETS = {
    "url-reserved": "pa+ss=w/rd&k=v?#",
    "non-ascii": "Ä-ö ü\u2603 \U0001f600",
    "quotes": "q\"u'o\\te<tag>",
    "controls": "tab\there\nnl\x01",
    "escape-like": "100%41 &amp; \\u0041",
}


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
@pytest.mark.parametrize("encoder", ENCODERS.values(), ids=ENCODERS.keys())
def test_a_secret_as_a_real_encoder_spells_it_is_masked_and_nothing_else(
    encoder: Callable[[str], str], secret: str
) -> None:
    """Each encoder's spelling of each secret becomes <secret>; the text around it is kept."""
    masks = SecretMasks()
    masks.add([SecretValue(secret)])
    before, after = "GET /deploy?x=1&token=", '&y=%41 "done" \\n'
    spelled = encoder(secret)
    assert masks.mask(before + spelled + after) == before + MASK + after


#: More than WHOLE_TEXT of a tool's JSON log around the secret: decoded by windows.
_LONG = json.dumps([{"path": "C:\\x\\%41", "msg": "a &amp; b", "n": n} for n in range(300)])


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
@pytest.mark.parametrize("encoder", ENCODERS.values(), ids=ENCODERS.keys())
def test_a_secret_spelled_in_a_long_text_is_masked_and_nothing_else(
    encoder: Callable[[str], str], secret: str
) -> None:
    """The same in the middle of a long log: only the windows around it are decoded."""
    assert len(_LONG) > 2 * WHOLE_TEXT
    masks = SecretMasks()
    masks.add([SecretValue(secret)])
    assert masks.mask(_LONG + encoder(secret) + _LONG) == _LONG + MASK + _LONG


def test_a_percent_escape_beside_a_secret_does_not_change_how_the_secret_reads() -> None:
    r"""A Latin-1 %E9 (JavaScript's escape()) or \xff just before a secret's UTF-8 bytes."""
    masks = SecretMasks()
    masks.add([SecretValue("Ä-Zq8v")])
    spelled = urllib.parse.quote("Ä-Zq8v")
    assert masks.mask(f"a=%E9{spelled}&b=\\xff{repr('Ä'.encode())[2:-1]}-Zq8v") == (
        f"a=%E9{MASK}&b=\\xff{MASK}"
    )


def test_a_short_text_escaping_even_letters_is_decoded_whole() -> None:
    """Every byte percent-encoded, or every character an entity: found in a short text."""
    masks = SecretMasks()
    masks.add([SecretValue("Zq8v-token")])
    every_byte = "".join(f"%{byte:02x}" for byte in b"Zq8v-token")
    every_char = "".join(f"&#{ord(char)};" for char in "Zq8v-token")
    assert masks.mask(f"a={every_byte}&b={every_char}") == f"a={MASK}&b={MASK}"


@pytest.mark.parametrize("encoder", ENCODERS.values(), ids=ENCODERS.keys())
def test_text_with_no_secret_in_any_spelling_is_kept_byte_for_byte(
    encoder: Callable[[str], str],
) -> None:
    """Escapes galore but no secret: the text comes back exactly as it was."""
    masks = SecretMasks()
    masks.add([SecretValue("hunter2-Zq8v")])
    text = encoder('{"path": "C:\\\\x", "q": "a+b=c&d", "e": "\u00e9 %2B &amp; \\u0041"}')
    assert masks.mask(text) == text


def test_nothing_is_masked_without_a_secret() -> None:
    """No secret revealed: every text is returned as it is (the same object)."""
    text = "%2B \\u0041 &amp;"
    assert SecretMasks().mask(text) is text


def test_a_secret_holding_another_and_secrets_that_overlap_are_masked_whole() -> None:
    """A PIN inside a token, two secrets sharing letters: one mask over their union."""
    masks = SecretMasks()
    masks.add([SecretValue("4711"), SecretValue("ghp_4711_Zq8v"), SecretValue("Zq8vXY")])
    assert masks.mask("a ghp_4711_Zq8vXY b 4711") == f"a {MASK} b {MASK}"
    assert masks.mask(json.dumps("ghp_4711_Zq8v")) == f'"{MASK}"'


def test_a_secret_repeated_and_self_overlapping_is_masked_everywhere() -> None:
    """Every occurrence is masked, encoded or not, including ones that overlap themselves."""
    masks = SecretMasks()
    masks.add([SecretValue("aa")])
    assert masks.mask("aaa %61a b") == f"{MASK} {MASK} b"


def test_a_space_as_plus_is_read_only_where_a_secret_has_a_space() -> None:
    """'+' is a space in a form's encoding; a plus in the text is kept when it is not one."""
    masks = SecretMasks()
    masks.add([SecretValue("open sesame")])
    assert masks.mask("q=open+sesame&r=a+b") == f"q={MASK}&r=a+b"


#: Secrets as a person types or pastes them, each with the form a tool echoes.
TYPED = {
    "trailing-space": ("ghp_Zq8v4711 ", "ghp_Zq8v4711"),
    "pasted-newline": ("ghp_Zq8v4711\n", "ghp_Zq8v4711"),
    "crlf-and-tab": ("\tghp_Zq8v4711\r\n", "ghp_Zq8v4711"),
    "leading-space-only-stripped": ("  pass phrase one", "pass phrase one"),
    "double-quoted": ('"ghp_Zq8v4711"', "ghp_Zq8v4711"),
    "single-quoted-spaced": (" ' ghp_Zq8v4711 ' \n", "ghp_Zq8v4711"),
    "pin-and-newline": ("4711\n", "4711"),
}


@pytest.mark.parametrize(("typed", "echoed"), TYPED.values(), ids=TYPED.keys())
@pytest.mark.parametrize(
    "encoder",
    [
        str,
        ENCODERS["python json.dumps"],
        ENCODERS["python urllib quote"],
        ENCODERS["php htmlspecialchars"],
    ],
    ids=["as-is", "json", "url", "html"],
)
def test_a_secret_a_tool_trims_or_unquotes_before_echoing_is_masked(
    typed: str, echoed: str, encoder: Callable[[str], str]
) -> None:
    """Typed with spaces, a newline or quotes around; echoed trimmed, in any spelling: masked."""
    masks = SecretMasks()
    masks.add([SecretValue(typed)])
    assert masks.mask(f"Logged in with [{encoder(echoed)}]; done.") == (
        f"Logged in with [{MASK}]; done."
    )


@pytest.mark.parametrize("trim", [str.rstrip, str.lstrip, lambda text: text.rstrip("\n")])
def test_a_secret_trimmed_at_one_end_only_is_masked_by_its_trimmed_form(
    trim: Callable[[str], str],
) -> None:
    """A tool stripping one end (or a newline only) echoes the trimmed form and what is left."""
    typed = "  ghp_Zq8v4711 \n"
    masks = SecretMasks()
    masks.add([SecretValue(typed)])
    masked = masks.mask(f"[{trim(typed)}]")
    assert "ghp_Zq8v4711" not in masked
    assert MASK in masked


class TrimsTheToken(BuiltinTool):
    """Asks for a token, then says what it did with it, trimmed (as ``input().strip()`` does)."""

    async def run(
        self, arguments: Mapping[str, JsonValue], answers: Mapping[str, JsonValue]
    ) -> BuiltinOutcome:
        """Ask once; then echo the token trimmed, plain and as JSON."""
        del arguments
        if "token" not in answers:
            return Ask(Question.secret("token", "Token?"))
        token = str(answers["token"]).strip()
        return Success(f"logged in as {token}; config {json.dumps({'token': token})}")


def test_a_pasted_token_the_tool_trims_is_masked_in_what_is_recorded(tmp_path: Path) -> None:
    """Pasted with a trailing space, echoed trimmed: neither the record nor the disk holds it."""
    conversation = conversation_on_disk(tmp_path)
    coordinator = ToolCoordinator(
        conversation,
        tools={"login": BuiltinExecutor(TrimsTheToken())},
        config=UNATTENDED,
        prompter=ScriptedPrompter().answer("ghp_Zq8v4711x "),
    )
    (response,) = run(coordinator.run(assistant_calls(conversation, ("c1", "login"))))
    assert response.content == f'logged in as {MASK}; config {{"token": "{MASK}"}}'
    assert_invariants(conversation, ["ghp_Zq8v4711x"])


@pytest.mark.parametrize(
    ("typed", "kept"),
    [("ok\n", "ok"), (" 42 ", "42"), ('"abc"', "abc"), ("' no '", "no")],
    ids=["two-letters", "two-digits", "three-quoted", "quoted-word"],
)
def test_a_trimmed_form_shorter_than_four_characters_is_not_masked(typed: str, kept: str) -> None:
    """Below SHORTEST_FORM a trimmed form is a fragment any text holds: the typed one masks."""
    assert SHORTEST_FORM == 4
    masks = SecretMasks()
    masks.add([SecretValue(typed)])
    assert masks.mask(f"status {kept}, code {kept}") == f"status {kept}, code {kept}"
    assert masks.mask(f"as typed: [{typed}]") == f"as typed: [{MASK}]"


def test_typed_forms_are_the_typed_secret_trimmed_and_unquoted() -> None:
    """What one typed secret masks: itself, trimmed, unquoted; the empty one, nothing."""
    assert typed_forms(' "hunter2" \n') == {' "hunter2" \n', '"hunter2"', "hunter2"}
    assert typed_forms("hunter2") == {"hunter2"}
    assert typed_forms("'mismatched\"") == {"'mismatched\""}
    assert typed_forms("") == set()


def test_the_masks_never_show_a_secret() -> None:
    """Their repr counts the secrets, never shows one; the empty secret masks nothing."""
    masks = SecretMasks()
    masks.add([SecretValue("hunter2"), SecretValue("")])
    assert "hunter2" not in repr(masks)
    assert repr(masks) == "SecretMasks(<1 secrets>)"
    assert masks.mask("x") == "x"


def test_no_compiled_pattern_in_the_process_holds_a_secrets_characters() -> None:
    """Masking compiles nothing of a secret: the regular-expression cache outlives the masks."""
    secret = "Zж¤Ω 9"  # with a space: a form's "+" is read too
    masks = SecretMasks()
    masks.add([SecretValue(secret)])
    assert masks.mask(f"a={urllib.parse.quote_plus(secret)}&b=x+y") == f"a={MASK}&b=x+y"
    del masks
    gc.collect()
    rare = set("ж¤Ω")
    patterns = [item for item in gc.get_objects() if isinstance(item, re.Pattern)]
    assert patterns  # the walk sees compiled patterns (the module's own, at least)
    assert not [item.pattern for item in patterns if rare <= set(str(item.pattern))]


def test_a_question_is_masked_in_text_context_options_and_default() -> None:
    """Each field that quotes a secret is masked; the masked option maps back to the original."""
    masks = SecretMasks()
    masks.add([SecretValue("2024")])
    question = Question.select(
        "version",
        "Deploy 2024.1.0?",
        ["2024.1.0", "2024.2.0"],
        default="2024.1.0",
        context="PIN 2024",
    )
    masked = masks.mask_question(question)
    assert masked.question.text == f"Deploy {MASK}.1.0?"
    assert masked.question.context == f"PIN {MASK}"
    assert masked.question.answer_type.option_values == (f"{MASK}.1.0", f"{MASK}.2.0")
    assert masked.question.default == f"{MASK}.1.0"
    effect = RunTool(
        tool_call_id="c1", tool_name="t", arguments={}, answers={"version": f"{MASK}.2.0"}
    )
    back = unmasked_answers(effect, {("c1", "version"): masked.originals})
    assert back.answers == {"version": "2024.2.0"}


def test_a_question_that_cannot_be_asked_without_a_secret_is_refused_masked() -> None:
    """An id holding a secret, or options alike once masked: refused, the message masked."""
    masks = SecretMasks()
    masks.add([SecretValue("s3cr3t")])
    with pytest.raises(UnmaskableQuestionError, match="'use-<secret>'") as by_id:
        masks.mask_question(Question.boolean("use-s3cr3t", "Go?"))
    alike = Question.select("pick", "Which?", ["s3cr3t", "%73%33cr3t"])
    with pytest.raises(
        UnmaskableQuestionError, match="cannot be asked without a secret"
    ) as by_options:
        masks.mask_question(alike)
    assert "s3cr3t" not in str(by_id.value) + str(by_options.value)


def test_masks_are_shared_by_a_conversation_and_its_copy_loaded_from_its_directory(
    tmp_path: Path,
) -> None:
    """The same object, or one loaded from the same directory: one set of masks; others apart."""
    first = Conversation.new(metadata={"title": "t"})
    masks_for(first).add([SecretValue("shared-Zq8v")])
    save_conversation(first, tmp_path / "conv")
    assert masks_for(first).mask("shared-Zq8v") == MASK
    again = load_conversation(tmp_path / "conv")
    assert masks_for(again).mask("shared-Zq8v") == MASK
    other = Conversation.new(metadata={"title": "other"})
    assert masks_for(other).mask("shared-Zq8v") == "shared-Zq8v"


# ------------------------------------------- escapes of other families around


def _json(text: str) -> str:
    """``json.dumps`` of a string (ASCII, its default), without its quotes."""
    return json.dumps(text)[1:-1]


def test_a_secret_three_layers_deep_is_masked_beside_a_url_escaped_twice() -> None:
    """The auditor's output: a URL's %252F beside JSON in JSON, all in the tool protocol's JSON."""
    for secret in ("Grüße + Küsse", "tok+en Ä"):
        masks = SecretMasks()
        masks.add([SecretValue(secret)])
        spelled = orjson.dumps(_json(_json(secret))).decode()[1:-1]
        for url in ("POST https://login.example/?next=%252Fhome failed; ", "url=%2520 "):
            message = url + "body=" + json.dumps(json.dumps({"token": secret}))
            text = orjson.dumps({"message": message}).decode()
            assert text.count(spelled) == 1
            assert masks.mask(text) == text.replace(spelled, MASK)


#: Secrets with what each family escapes: '+', a space, '%', '\', '"', '/', '&', non-ASCII.
AWKWARD = {
    "umlauts": "Grüße + Küsse",
    "plus-space": "tok+en Ä",
    "escape-like": 'p%41ss\\"/&amp;€ x',
    "astral": "😀 a+b%20c/d",
}

#: Outputs mixing families: each gives the text and the secret's spelling in it. The
#: text around the secret holds escapes of families other than the secret's own.
MIXED: dict[str, Callable[[str], tuple[str, str]]] = {
    "json in json in json beside %252F": lambda s: (
        orjson.dumps(
            {"message": "GET /?next=%252Fhome body=" + json.dumps(json.dumps({"token": s}))}
        ).decode(),
        _json(_json(_json(s))),
    ),
    "json in json beside entities and %2520": lambda s: (
        _json("&lt;b&gt;&amp;amp; %2520 " + json.dumps({"t": s}) + " &#x2B;"),
        _json(_json(s)),
    ),
    "quoted twice beside json escapes and entities": lambda s: (
        "C:\\\\x \\u00e9 &amp; "
        + urllib.parse.quote(urllib.parse.quote(s, safe=""), safe="")
        + " \\n &quot;",
        urllib.parse.quote(urllib.parse.quote(s, safe=""), safe=""),
    ),
    "upper-case \\u in html beside lower-case %xx": lambda s: (
        "%2f%2F%c3%a9 " + html.escape(dotnet_json(s)) + " \\u00E9\\\\",
        html.escape(dotnet_json(s)),
    ),
    "lower-case %xx in json beside entities and %252F": lambda s: (
        _json("&#x2B; %252F " + dotnet_http_utility_url_encode(s) + " &amp;amp;"),
        _json(dotnet_http_utility_url_encode(s)),
    ),
    "repr in json in a url beside entities": lambda s: (
        "&amp; \\n %2520 " + urllib.parse.quote(_json(repr(s)[1:-1]), safe="") + " &lt;",
        urllib.parse.quote(_json(repr(s)[1:-1]), safe=""),
    ),
    "php json in html in json beside %2520": lambda s: (
        _json("%2520&amp;amp; " + html.escape(php_json_encode(s)) + " \\\\u00e9"),
        _json(html.escape(php_json_encode(s))),
    ),
    "form encoded beside entities and backslashes": lambda s: (
        "&amp; \\u00e9 %2520 q=" + urllib.parse.quote_plus(s) + " &#43; C:\\\\x",
        urllib.parse.quote_plus(s),
    ),
    "form encoded in upper-case \\u beside %2520": lambda s: (
        "url=%2520 &amp;amp; q=" + dotnet_json(urllib.parse.quote_plus(s)) + " \\\\u00e9",
        dotnet_json(urllib.parse.quote_plus(s)),
    ),
    "js escape in go json beside escapes of each family": lambda s: (
        "%2520 &amp;amp; \\\\u00e9 " + go_json_marshal(js_escape(s)) + " %41&#65;\\x41",
        go_json_marshal(js_escape(s)),
    ),
}


@pytest.mark.parametrize("secret", AWKWARD.values(), ids=AWKWARD.keys())
@pytest.mark.parametrize("output", MIXED.values(), ids=MIXED.keys())
def test_a_secret_is_masked_whatever_other_families_the_output_holds(
    output: Callable[[str], tuple[str, str]], secret: str
) -> None:
    """Escapes of other families elsewhere in the output do not hide a secret, nor get masked."""
    masks = SecretMasks()
    masks.add([SecretValue(secret)])
    text, spelled = output(secret)
    assert text.count(spelled) == 1
    assert masks.mask(text) == text.replace(spelled, MASK)


#: The real encoders a property composes, up to three deep.
LAYERS: dict[str, Callable[[str], str]] = {
    "urllib quote": urllib.parse.quote,
    "urllib quote_plus": urllib.parse.quote_plus,
    "json.dumps": _json,
    "json.dumps ensure_ascii=False": lambda text: json.dumps(text, ensure_ascii=False)[1:-1],
    "upper-case \\u (System.Text.Json)": dotnet_json,
    "php json_encode (\\/)": php_json_encode,
    "html.escape": html.escape,
    "python repr": lambda text: repr(text)[1:-1],
}

#: Escapes of every family that spell no secret: a URL escaped twice, JSON in
#: JSON, entities escaped twice, backslashes, a form's plus, hex of either case.
UNRELATED = [
    "next=%252Fhome",
    "url=%2520",
    "%c3%a9%2F",
    "&amp;amp;",
    "&lt;b&gt; &#x2B;&#43;",
    '{\\"k\\": \\"\\\\u00e9\\"}',
    "C:\\\\x\\n",
    "\\u00E9\\/",
    "a+b=c",
]


@settings(max_examples=examples(300))
@given(
    secret=st.text(alphabet='aZ9+ %\\"/&äßé€😀', min_size=4, max_size=12),
    names=st.lists(st.sampled_from(sorted(LAYERS)), min_size=1, max_size=3),
    around=st.lists(st.sampled_from(UNRELATED), min_size=2, max_size=4),
    whole=st.booleans(),
)
def test_a_secret_up_to_three_encoders_deep_is_masked_whatever_is_around_it(
    secret: str, names: list[str], around: list[str], *, whole: bool
) -> None:
    """No spelling of a secret by up to three real encoders survives, amid unrelated escapes.

    The last encoder wraps either the spelling alone or the whole text (a
    tool protocol's JSON around everything the tool printed).
    """
    spellings = [secret]
    for name in names:
        spellings.append(LAYERS[name](spellings[-1]))
    before, after = " ".join(around[::2]), " ".join(around[1::2])
    if whole:
        text = LAYERS[names[-1]](f"{before} {spellings[-2]} {after}")
    else:
        text = f"{before} {spellings[-1]} {after}"
    assume(not any(spelled in MASK or spelled in before + after for spelled in spellings))
    masks = SecretMasks()
    masks.add([SecretValue(secret)])
    masked = masks.mask(text)
    assert MASK in masked
    assert not [spelled for spelled in spellings if spelled in masked]
