"""Checked reading of parsed TOML, for the files ``inquiry run`` reads.

Theory of operation: a file is parsed with :mod:`tomllib`, then every value is
taken out through one of these functions, which name the file and the dotted
key (arrays of tables as ``turns[0].cycles[1]``, counting from 0; a name
that is not a bare key quoted as TOML quotes it, ``tools."x.y"``, so that it
reads as one name and the error stays on one line) in the
:class:`~coordinator.ConfigError` they raise. A reader asks for each
table's keys with :func:`check_keys` first, so an unknown key (a typo) is an
error rather than a setting silently ignored.

Rules: values that reach a tool or a model must be JSON that the conversation
can record and a tool's request can carry, so wherever JSON is expected
(:func:`json_table`, :func:`json_value`) these are refused when the file is
read, before anything is written: TOML's dates and times, the floats ``inf``
and ``nan``, integers outside what ``orjson`` writes (-2**63 to 2**64-1), and
values nested more than :data:`DEEPEST_JSON` levels (``orjson`` writes 254,
and a value is written inside up to two more: an entry of ``events.json``, the
``answers`` of a tool's request).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from coordinator._errors import ConfigError, StreamFormatError, os_reason
from coordinator._text import shown_path
from coordinator.store import read_regular
from machines import TOO_DEEP, WRITE_DEPTH, json_fault, json_type, leaf_rules

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from machines import JsonValue

__all__ = [
    "DEEPEST_JSON",
    "LARGEST_INTEGER",
    "LONGEST_DURATION",
    "SMALLEST_INTEGER",
    "boolean",
    "check_keys",
    "choice",
    "duration",
    "join_key",
    "json_table",
    "json_value",
    "load_toml",
    "name_key",
    "optional_string",
    "quoted_name",
    "shown_error",
    "string",
    "table",
    "tables",
]


#: The range of integers ``orjson`` writes; the store, the local-tool protocol
#: and JP's readers (64-bit integers) all go through it.
SMALLEST_INTEGER = -(2**63)
LARGEST_INTEGER = 2**64 - 1
#: How many levels a JSON value from a file may nest (a table or an array is a
#: level). ``orjson`` writes ``WRITE_DEPTH`` (254); the deepest place a value
#: is written is two levels down (``events.json``'s array, then the entry; a
#: tool request, then its ``answers``), and two more are kept spare.
DEEPEST_JSON = WRITE_DEPTH - 4


def load_toml(path: Path) -> dict[str, Any]:
    """Parse the TOML file ``path``; an error names the file.

    The file is read as the store reads a conversation file
    (:func:`~coordinator.store._files.read_regular`): a FIFO, a device (a
    link to ``/dev/zero``) or a file over the size limit is refused before a
    byte of it is read, rather than waited on or read for ever.
    """
    try:
        data = read_regular(path, what="a TOML file")
    except StreamFormatError as error:
        raise ConfigError(str(path), "(file)", error.problem) from None
    except OSError as error:
        raise ConfigError(str(path), "(file)", f"cannot be read: {os_reason(error)}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(str(path), "(file)", "is not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(str(path), "(file)", f"is not valid TOML: {error}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(str(path), "(file)", "is nested too deeply to read") from None


def shown_error(error: ConfigError) -> ConfigError:
    """``error`` with its file, and any path in its problem, shown as every path is shown.

    A file name that is not UTF-8 decodes to lone surrogates, which print as
    escapes; shown, each byte that does not decode is U+FFFD.
    """
    return ConfigError(shown_path(error.origin), error.key, shown_path(error.problem))


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC_PLANE = 0xFFFF  # TOML escapes a character past it with \U and eight digits


def quoted_name(name: str) -> str:
    """``name`` as a part of a dotted key: bare when TOML allows, else quoted as TOML quotes it.

    ``"x.y"`` stays one name (not ``x`` then ``y``), and escapes keep an error
    on one line whatever the name holds (a newline, a control character, a
    line or paragraph separator).
    """
    if _BARE_KEY.fullmatch(name):
        return name
    quoted = json.dumps(name, ensure_ascii=False)  # TOML's basic string escapes are JSON's
    return "".join(_escaped(char) for char in quoted)


def _escaped(char: str) -> str:
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= _BASIC_PLANE else f"\\U{code:08x}"


def join_key(key: str, name: str) -> str:
    """The dotted key of ``name`` under ``key`` (``""``: the top), ``name`` quoted if need be."""
    return f"{key}.{quoted_name(name)}" if key else quoted_name(name)


def name_key(origin: str, key: str, name: str, *, what: str) -> str:
    """The dotted key of the table ``name`` under ``key``; an empty ``name`` is refused.

    ``what`` says what the name is (``"a tool name"``). A name that is not a
    bare key is quoted as TOML quotes it (``tools."a.b"``, ``tools.""``), so
    an error names the table as the file wrote it.
    """
    if not isinstance(name, str):  # a table built in Python may have other keys
        raise ConfigError(
            origin, f"{key}.{name!r}" if key else repr(name), f"{what} must be a string"
        )
    where = join_key(key, name)
    if not name:
        # Nothing is ever called or asked by an empty name: refused here, as a
        # slip in the file, rather than by a record mid-run.
        raise ConfigError(origin, where, f"{what} must not be empty")
    return where


def check_keys(
    data: Mapping[str, Any],
    origin: str,
    key: str,
    *,
    allowed: Iterable[str],
    required: Iterable[str] = (),
) -> None:
    """Refuse a key not in ``allowed``, and a missing one of ``required``."""
    known = set(allowed)
    for name in data:
        if name not in known:
            expected = ", ".join(sorted(known))
            problem = f"unknown key (expected one of: {expected})"
            raise ConfigError(origin, join_key(key, name), problem)
    for name in required:
        if name not in data:
            raise ConfigError(origin, join_key(key, name), "is required")


def table(value: object, origin: str, key: str) -> Mapping[str, Any]:
    """``value``, which must be a table."""
    if not isinstance(value, Mapping):
        raise ConfigError(origin, key, f"expected a table, got {json_type(value, toml=True)}")
    return value


def tables(value: object, origin: str, key: str) -> list[Mapping[str, Any]]:
    """``value``, which must be an array of tables (``[[key]]``)."""
    if not isinstance(value, list):
        raise ConfigError(
            origin, key, f"expected an array of tables, got {json_type(value, toml=True)}"
        )
    return [table(item, origin, f"{key}[{index}]") for index, item in enumerate(value)]


def string(value: object, origin: str, key: str, *, empty: bool = True) -> str:
    """``value``, which must be a string (not empty, unless ``empty``)."""
    if not isinstance(value, str):
        raise ConfigError(origin, key, f"expected a string, got {json_type(value, toml=True)}")
    if not empty and not value:
        raise ConfigError(origin, key, "must not be empty")
    return value


def choice(value: object, origin: str, key: str, options: Sequence[str], *, what: str = "") -> str:
    """``value``, which must be one of the strings ``options``; ``what`` names it in the error."""
    if type(value) is str and value in options:
        return value
    expected = ", ".join(map(repr, options))
    if type(value) is not str:
        problem = f"got {json_type(value, toml=True)}"
    else:
        problem = f"no {what} {value!r}" if what else f"got {value!r}"
    raise ConfigError(origin, key, f"{problem} (expected one of: {expected})")


def optional_string(
    data: Mapping[str, Any], name: str, origin: str, key: str, *, empty: bool = True
) -> str | None:
    """``data[name]`` as a string (not empty, unless ``empty``), or ``None`` when absent."""
    if name not in data:
        return None
    return string(data[name], origin, join_key(key, name), empty=empty)


def boolean(value: object, origin: str, key: str) -> bool:
    """``value``, which must be ``true`` or ``false``."""
    if not isinstance(value, bool):
        raise ConfigError(
            origin, key, f"expected true or false, got {json_type(value, toml=True)}"
        )
    return value


#: A duration as written: a number and its unit (``30s``, ``5m``, ``1.5h``, ``250ms``).
_DURATION = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<unit>ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: The longest duration taken (about 31 years): past this a duration is a mistake.
LONGEST_DURATION = 1e9


def duration(value: object, origin: str, key: str) -> float:
    """``value``, a duration such as ``"30s"``, ``"5m"`` or ``"1.5h"``, in seconds (> 0)."""
    expected = 'a duration such as "30s" or "5m" (a number, then one of ms, s, m, h, d)'
    if type(value) is not str:
        raise ConfigError(origin, key, f"expected {expected}, got {json_type(value, toml=True)}")
    match = _DURATION.fullmatch(value)
    if match is None:
        raise ConfigError(origin, key, f"expected {expected}, got {json.dumps(value)}")
    seconds = float(match["number"]) * _UNIT_SECONDS[match["unit"]]
    if not 0 < seconds <= LONGEST_DURATION:
        raise ConfigError(
            origin, key, f"a duration must be more than 0 and at most {LONGEST_DURATION:g} s"
        )
    return seconds


def _integer(value: int) -> str | None:
    if SMALLEST_INTEGER <= value <= LARGEST_INTEGER:
        return None
    return (
        f"is an integer out of range: it must lie from {SMALLEST_INTEGER} to "
        f"{LARGEST_INTEGER} (64 bits), the integers a conversation can record"
    )


def _finite(value: float) -> str | None:
    return None if math.isfinite(value) else "must be a finite number (JSON has no inf or nan)"


def _not_json(value: object) -> str:
    return f"must be a JSON value, not {json_type(value, toml=True)}"


#: What a value from a file must be to be recorded and carried (see the module's rules).
_RECORDABLE = leaf_rules(
    {str: None, bool: None, type(None): None, int: _integer, float: _finite}, others=_not_json
)


def _json(value: object, origin: str, key: str) -> JsonValue:
    fault = json_fault(value, _RECORDABLE, max_depth=DEEPEST_JSON)
    if fault is None:
        return cast("JsonValue", value)
    if fault.problem == TOO_DEEP:
        # Named where the value was given, not by a path hundreds of levels long.
        problem = f"is nested too deeply: a JSON value may nest at most {DEEPEST_JSON} levels"
        raise ConfigError(origin, key, problem)
    where = key
    for step in fault.path:
        where = f"{where}[{step}]" if type(step) is int else join_key(where, str(step))
    raise ConfigError(origin, where, fault.problem)


def json_table(value: object, origin: str, key: str) -> dict[str, JsonValue]:
    """``value``, which must be a table of JSON values."""
    checked = _json(table(value, origin, key), origin, key)
    if not isinstance(checked, dict):  # pragma: no cover - a table stays a table
        raise ConfigError(origin, key, "expected a table")
    return checked


def json_value(value: object, origin: str, key: str) -> JsonValue:
    """``value``, which must be JSON (a TOML date or ``nan`` is not)."""
    return _json(value, origin, key)
