r"""What it takes to reach one MCP server: a command started over stdio, or a URL.

A server started over stdio gets the SDK's short list of environment
variables (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``)
and ``env`` on top: nothing else of the embedding process's environment
reaches it, so no secret of the run does either. Its standard error goes to
``stderr`` when one is named (appended to), and is discarded otherwise: a
server's log may hold whatever it was sent, secrets included, so keeping it
is a choice made by name.

What the OS would refuse to start a program with is refused when a server is
described, not when it is started: a NUL byte in the program, an argument,
a variable's name or value, or a file name (C strings end there), and a
variable's name that is empty or holds ``=`` (the environment is a list of
``NAME=value`` strings, so the name would end at the first ``=``).
:func:`os_text_problem` and :func:`variable_name_problem` say why, for the
scenario reader to name the key at fault.

``max_reply`` bounds one message from the server: a line of its stdout, or
over HTTP a response body or an event of its stream. A larger one fails the
calls it would have answered, saying so, and the run goes on
(:mod:`coordinator.adapters.mcp._stdio`). The default,
:data:`DEFAULT_MAX_REPLY` (16 MiB), is four times a local tool's output
bound: a reply is JSON, escaped (a quote or a newline takes two bytes, a
character beyond ASCII up to twelve as ``\u`` escapes), and may carry an
image or a file as base64 (a third larger again); and a reply costs the run
about six times its size while the SDK parses it (a 15 MiB reply took a
run's peak from 71 MB to 161 MB), within what a run may take.

``secret_fields`` names form fields this server's tools ask for that are
secrets, whatever the server calls or marks them (``docs/mcp.md``).

``headers`` are HTTP headers sent with every request to a server reached
by ``url`` (a hosted server's ``Authorization: Bearer ...``, an API key).
A value may name environment variables, ``${NAME}``, each replaced by the
variable's value when the server is reached (:meth:`McpServer.sent_headers`;
a variable that is not set fails the calls that need the server, naming it
and the header, never a value): a token is then kept in the environment,
not in a configuration file. Every value is a secret: the ``repr`` names
the headers only, and what the server sends back is masked
(:meth:`McpServer.header_secrets`, ``docs/mcp.md``). What the OS or HTTP
would refuse is refused when the server is described: a name that is no
HTTP token, a value holding a line break or a NUL byte (a header injected).
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "DEFAULT_MAX_REPLY",
    "DEFAULT_TIMEOUT",
    "SHORTEST_MASKED",
    "HeaderVariableError",
    "McpServer",
    "header_problem",
    "os_text_problem",
    "variable_name_problem",
]

#: Seconds a server may take to answer one request, and to start.
DEFAULT_TIMEOUT = 60.0
#: The most bytes one message from a server may take (see the module's docstring).
DEFAULT_MAX_REPLY = 16 * 1024 * 1024


def os_text_problem(text: str) -> str | None:
    """Why the OS cannot take ``text`` as a program, an argument, a value or a file name."""
    return "holds a NUL byte, which the OS cannot pass to a program" if "\0" in text else None


def variable_name_problem(name: str) -> str | None:
    """Why the OS cannot take ``name`` as an environment variable's name."""
    if not name:
        return "a variable's name must not be empty"
    if "=" in name:
        return "a variable's name cannot hold '=' (the OS would end the name there)"
    return os_text_problem(name)


def _as_tuple(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError("McpServer.command must be a sequence of strings, not a string")
    return tuple(value)


def _command(_instance: Any, _attribute: Any, value: tuple[str, ...]) -> None:
    if not all(isinstance(part, str) for part in value):
        raise TypeError("McpServer.command must be a sequence of strings")
    if value and not value[0]:
        raise ValueError("McpServer.command names no program")
    for index, part in enumerate(value):
        if (problem := os_text_problem(part)) is not None:
            raise ValueError(f"McpServer.command[{index}] {problem}")


def _env(_instance: Any, _attribute: Any, value: Mapping[str, str]) -> None:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError("McpServer.env must map strings to strings")
    for name, text in value.items():
        # The name may be shown (it is no secret); the value never is.
        if (problem := variable_name_problem(name)) is not None:
            raise ValueError(f"McpServer.env[{name!r}]: {problem}")
        if (problem := os_text_problem(text)) is not None:
            raise ValueError(f"McpServer.env[{name!r}]: its value {problem}")


def _path(_instance: Any, attribute: Any, value: Path | None) -> None:
    if value is not None and (problem := os_text_problem(str(value))) is not None:
        raise ValueError(f"McpServer.{attribute.name} {problem}")


def _timeout(_instance: Any, _attribute: Any, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("an McpServer timeout must be a number of seconds")
    if not (math.isfinite(value) and value > 0):
        raise ValueError("an McpServer timeout must be a number of seconds greater than 0")


def _max_reply(_instance: Any, _attribute: Any, value: int) -> None:
    if type(value) is not int:
        raise TypeError("McpServer.max_reply must be a whole number of bytes")
    if value < 1:
        raise ValueError("McpServer.max_reply must be a number of bytes greater than 0")


def _field_names(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError("McpServer.secret_fields must be a collection of names, not a string")
    names = frozenset(value)
    if not all(isinstance(name, str) and name for name in names):
        raise TypeError("McpServer.secret_fields must hold field names (non-empty strings)")
    return names


#: An HTTP header's name: a token (RFC 9110), nothing else.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: A reference to an environment variable in a header's value.
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: A header's value (or a variable's in it) shorter than this is not masked in
#: what a server sends back: a fragment that short is in nearly every text.
SHORTEST_MASKED = 4


class HeaderVariableError(ValueError):
    """A header names an environment variable that is not set (the message names both)."""


def header_problem(name: str, value: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why ``name: value`` cannot be sent as a header (and, given ``environ``, its variables).

    Never quotes the value: it is a secret.
    """
    if not _HEADER_NAME.fullmatch(name):
        return "not an HTTP header's name"
    if any(character in value for character in "\r\n\0"):
        return "its value holds a line break or a NUL byte, which no header may hold"
    if environ is not None:
        for variable in _REFERENCE.findall(value):
            if (problem := _variable_problem(environ.get(variable))) is not None:
                return f"it names the environment variable {variable!r}, {problem}"
    return None


def _headers(_instance: Any, _attribute: Any, value: Mapping[str, str]) -> None:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError("McpServer.headers must map strings to strings")
    for name, text in value.items():
        # The name may be shown (it is no secret); the value never is.
        if (problem := header_problem(name, text)) is not None:
            raise ValueError(f"McpServer.headers[{name!r}]: {problem}")


def _header_names(value: Mapping[str, str]) -> str:
    """The headers as a ``repr`` shows them: their names, never their values."""
    return repr(sorted(value))


def _name(_instance: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError("McpServer.name must be a non-empty string")


@attrs.frozen(kw_only=True)
class McpServer:
    """One MCP server: ``command`` (program, then arguments) over stdio, or ``url``.

    ``cwd`` is where a started server runs (by default, where the embedding
    process runs). ``timeout`` bounds each request to it (time spent waiting
    for a person's answer never counts), ``start_timeout`` starting it and
    the handshake (a server fetched by ``npx`` or ``uvx`` may take a while).
    ``max_reply`` bounds the bytes of one message from it; ``secret_fields``
    names the form fields of its tools that are always asked as secrets.
    ``headers`` go with every request to a ``url`` (values may name
    environment variables, ``${NAME}``; every value is a secret).
    """

    name: str = attrs.field(validator=_name)
    command: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple, validator=_command)
    url: str | None = None
    env: Mapping[str, str] = attrs.field(factory=dict, validator=_env)
    cwd: Path | None = attrs.field(default=None, validator=_path)
    timeout: float = attrs.field(default=DEFAULT_TIMEOUT, validator=_timeout)
    start_timeout: float = attrs.field(default=DEFAULT_TIMEOUT, validator=_timeout)
    stderr: Path | None = attrs.field(default=None, validator=_path)
    max_reply: int = attrs.field(default=DEFAULT_MAX_REPLY, validator=_max_reply)
    secret_fields: frozenset[str] = attrs.field(factory=frozenset, converter=_field_names)
    headers: Mapping[str, str] = attrs.field(factory=dict, validator=_headers, repr=_header_names)

    def __attrs_post_init__(self) -> None:
        """Exactly one way to reach the server; headers only over HTTP."""
        if bool(self.command) == (self.url is not None):
            raise ValueError(f"MCP server {self.name!r} needs a command or a url, not both")
        if self.headers and self.url is None:
            raise ValueError(f"MCP server {self.name!r}: headers go with a url, not a command")
        if self.url is not None:
            parts = urllib.parse.urlsplit(self.url)
            if parts.scheme not in {"http", "https"} or not parts.netloc:
                raise ValueError(f"MCP server {self.name!r}: the url must be http or https")

    def header_variables(self) -> dict[str, tuple[str, ...]]:
        """The environment variables each header names (``${NAME}``), by header."""
        return {
            header: tuple(_REFERENCE.findall(value))
            for header, value in self.headers.items()
            if _REFERENCE.search(value)
        }

    def sent_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The headers as sent: each ``${NAME}`` replaced by ``environ``'s value.

        :class:`HeaderVariableError` when a variable is not set, or its value
        would put a line break or a NUL byte in the header; the message names
        the header and the variable, never a value.
        """
        sent = {}
        for header, value in self.headers.items():
            if (problem := header_problem(header, value, environ)) is not None:
                raise HeaderVariableError(
                    f"MCP server {self.name!r}: header {header!r}: {problem}"
                )
            sent[header] = _REFERENCE.sub(lambda match: environ[match[1]], value)
        return sent

    def header_secrets(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """What to mask in what the server sends back: each value sent, each variable's value.

        Longest first (a value holding a variable's is masked whole), none
        shorter than :data:`SHORTEST_MASKED`.
        """
        try:
            sent = self.sent_headers(environ)
        except HeaderVariableError:
            return ()  # nothing was sent: the server was never reached
        found = set(sent.values())
        for names in self.header_variables().values():
            found.update(environ[name] for name in names)
        return tuple(
            sorted((text for text in found if len(text) >= SHORTEST_MASKED), key=len, reverse=True)
        )


def _variable_problem(value: str | None) -> str | None:
    if value is None:
        return "which is not set"
    if any(character in value for character in "\r\n\0"):
        return "whose value holds a line break or a NUL byte, which no header may hold"
    return None
