"""Local tools: commands that speak JP's local-tool protocol.

A local tool is an argv template. ``{{tool}}`` and ``{{context}}`` in any
argument are replaced by JSON::

    {"name": ..., "arguments": {...}, "answers": {"apply_changes": true}, "options": {...}}
    {"action": "run", "root": "/abs/project", "access": null,
     "workspace_id": null, "conversation_id": ...}

No shell is involved, so arguments cannot inject commands. The ``{{tool}}``
JSON is also written to the tool's stdin: an argument list is visible to
every user of the machine (``ps``) while the tool runs, so a tool that asks
secret questions should read its request from stdin and leave ``{{tool}}``
out of its command (a warning is logged otherwise).

The tool prints one JSON outcome on stdout: ``{"type": "success", "content"}``,
``{"type": "error", "message", "trace"?, "transient"?}`` or
``{"type": "needs_input", "question": {...}}``; a JSON object whose ``type``
is another string is an error naming it (``docs/local-tools.md`` has the
whole protocol). Anything else on stdout is raw output: success with that
text on exit 0, otherwise an error carrying
``{"message": "Tool '<name>' execution failed.", "stderr", "stdout"}`` (JP's
shape; a tool killed by a signal is said to be, naming the signal). A tool that
runs past its timeout, prints more than its output limit (stdout and stderr
together), cannot be started, or prints a malformed outcome fails with an
error naming what happened; a tool whose run is cancelled is killed (its whole
process group). To answer a question the whole tool runs again with every
answer so far, so a tool must be idempotent up to its question.

The call ends when the tool process exits, not when its output pipes close: a
process it started outside its process group (a daemon, ``setsid``, coreutils
``timeout``) may keep them open for as long as it lives. Once the tool has
exited, or been killed, its output is read for at most :data:`OUTPUT_GRACE`
seconds more and the pipes are closed; such a process is neither waited for
nor killed (it is no longer the tool's to stop).

The tool inherits the environment its executor is given (by default this
process's, all of it): what a tool may see is the caller's decision. To it
the executor adds :data:`IDEMPOTENCY_KEY_VARIABLE`, the call's idempotency
key (:func:`idempotency_key`: the same for every run of one call with the
same answers, across a kill of the process and a continued turn), so that a
tool whose side effect must happen once (a payment, a deploy) can refuse to
repeat it.

A tool never runs on its own: it runs under a guard
(:mod:`coordinator.adapters._tool_guard`) that leads its process group and
kills that group when this process dies, even by SIGKILL. Given a
:class:`~coordinator.store._running.RunningTools` (``inquiry run`` gives one
for the conversation's directory), the executor also gives each tool the
run's token and notes its group there while it runs, so that a next writer
taking over at once waits for the group to be gone (and stops a group that
checks out as this run's, should the guard not have yet): a continued call
never runs beside the run it replaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import re
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from coordinator._text import shown_path
from coordinator.adapters import _tool_guard
from coordinator.driver import Completed, ExecutorResult, NeedsInput, reveal_answers
from coordinator.wire import WireError, structure_question
from machines import InquirySource, SecretValue, ToolAnswer, ToolCallRequest

if TYPE_CHECKING:
    from coordinator.store import RunningTools

__all__ = [
    "IDEMPOTENCY_KEY_VARIABLE",
    "LocalTool",
    "LocalToolExecutor",
    "check_arguments",
    "idempotency_key",
    "schema_problem",
]

_LOG = logging.getLogger("coordinator.local_tools")

#: Seconds the output pipes are still read once the tool process has exited
#: (or been killed). What it printed before it exited is already in the pipes
#: and is read within milliseconds; the pipes' end may never come, since a
#: process the tool started outside its group can hold them open for as long
#: as it lives, and that must not hold up the call, its timeout or a cancel.
OUTPUT_GRACE = 0.5

#: The outcomes a tool may print, by their ``type``.
_OUTCOME_TYPES = ("success", "error", "needs_input")
#: How much of an unknown outcome type an error quotes.
_SHOWN_TYPE = 40

#: ``{{tool}}`` and ``{{context}}``, found in one pass so that one's JSON is
#: never searched for the other.
_PLACEHOLDER = re.compile(r"\{\{(tool|context)\}\}")

#: The environment variable a tool finds its call's idempotency key in.
IDEMPOTENCY_KEY_VARIABLE = "INQUIRY_IDEMPOTENCY_KEY"
#: The guard every tool runs under, run as a file (it imports nothing of this package).
_GUARD = Path(_tool_guard.__file__)
#: The most digits an errno the guard reports has.
_ERRNO_DIGITS = 5


def idempotency_key(
    conversation_id: str | None, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
) -> str:
    """The idempotency key of one run of ``call``'s tool: hex SHA-256 of a JSON array.

    The array is ``[conversation_id, call id, attempt]``, the attempt being
    how many answers the run carries (0 on its first run, one more after each
    question answered). A run of the call is known by those: killed and
    continued, the call runs again with the answers it had, and gets the same
    key; a question answered gets the next one. ``conversation_id`` is the
    executor's (``null`` when it has none).
    """
    return hashlib.sha256(orjson.dumps([conversation_id, call.id, len(answers)])).hexdigest()


def _argv(value: str | Sequence[str]) -> tuple[str, ...]:
    return tuple(shlex.split(value)) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class LocalTool:
    """A command-backed tool.

    ``command`` is an argv list (or a string split like a shell would, without
    running one). ``parameters`` is the tool's JSON schema; the subset
    :func:`check_arguments` understands is checked before the tool runs.
    ``timeout`` is in seconds; ``max_output`` counts the bytes the tool
    prints, stdout and stderr together.
    """

    name: str
    command: tuple[str, ...] = attrs.field(converter=_argv)
    parameters: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)
    timeout: float = 60.0
    max_output: int = 4 * 1024 * 1024

    def __attrs_post_init__(self) -> None:
        """A command needs a program to run, and its schema a shape arguments can be checked by."""
        if not self.command:
            raise ValueError(f"local tool {self.name!r} has an empty command")
        if self.parameters is not None:
            if not isinstance(self.parameters, Mapping):
                raise ValueError(f"local tool {self.name!r}: parameters must be an object")
            if (found := schema_problem(self.parameters)) is not None:
                where, problem = found
                raise ValueError(f"local tool {self.name!r}: parameters.{where}: {problem}")


_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits(value: object, kind: object) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for name in kinds:
        types = _JSON_TYPES.get(str(name))
        if types is None:
            return True  # a type this checker does not know: let the tool judge
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True  # JSON Schema: an integer is any number with no fractional part
        if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
            return True
    return False


def _same_json(one: object, other: object) -> bool:
    """Whether two JSON values are equal as JSON Schema compares them.

    Not Python's ``==``: ``true`` is not the number ``1`` (nor ``false`` ``0``),
    while ``1`` and ``1.0`` are the same number.
    """
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if _is_number(one) or _is_number(other):
        return _is_number(one) and _is_number(other) and one == other
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(map(_same_json, one, other))
    if isinstance(one, Mapping) and isinstance(other, Mapping):
        return one.keys() == other.keys() and all(_same_json(one[k], other[k]) for k in one)
    return type(one) is type(other) and one == other


def schema_problem(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """A part of ``schema`` that :func:`check_arguments` reads but cannot use: (key, problem).

    ``None`` when every part it reads is well formed; the rest of the schema is
    the tool's and the model's business.
    """
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return "required", "expected an array of property names"
    if not isinstance(schema.get("additionalProperties", True), bool | Mapping):
        return "additionalProperties", "expected true, false or an object"
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        return "properties", "expected an object"
    return next(
        (found for name, spec in properties.items() if (found := _property_problem(name, spec))),
        None,
    )


def _property_problem(name: str, spec: object) -> tuple[str, str] | None:
    where = f"properties.{name}"
    if not isinstance(spec, Mapping):
        return where, "expected an object"
    kind = spec.get("type", "string")
    if not isinstance(kind, str) and not (
        isinstance(kind, list) and all(isinstance(k, str) for k in kind)
    ):
        return f"{where}.type", "expected a type name or an array of them"
    if not isinstance(spec.get("enum", []), list):
        return f"{where}.enum", "expected an array of the allowed values"
    return None


def check_arguments(schema: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> str | None:
    """What is wrong with ``arguments`` for ``schema`` (top level only), or ``None``.

    Checks ``required``, the JSON ``type`` and ``enum`` of each property, and
    ``additionalProperties: false``, as JSON Schema does (``true`` is no
    number, ``2.0`` is an integer). Deeper validation is the tool's own job.
    Raises ``ValueError`` naming the key when ``schema`` itself is malformed
    (see :func:`schema_problem`).
    """
    if not schema:
        return None
    if (found := schema_problem(schema)) is not None:
        where, problem = found
        raise ValueError(f"tool schema {where}: {problem}")
    properties: Mapping[str, Any] = schema.get("properties") or {}
    missing = [name for name in schema.get("required") or () if name not in arguments]
    if missing:
        return "missing required argument " + ", ".join(repr(name) for name in missing)
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"unknown argument {name!r}"
            continue
        if "type" in spec and not _fits(value, spec["type"]):
            return f"argument {name!r} must be of type {spec['type']}"
        if "enum" in spec and not any(_same_json(value, allowed) for allowed in spec["enum"]):
            return f"argument {name!r} must be one of {spec['enum']}"
    return None


def _error(message: str, **details: str) -> Completed:
    return Completed(content=orjson.dumps({"message": message, **details}).decode(), is_error=True)


class _ToolPipes(asyncio.SubprocessProtocol):
    """What a running tool prints, and the moment it exits.

    A protocol of its own, not asyncio's streams: on Python 3.11
    ``Process.wait()`` returns only once every pipe has closed, which a
    process the tool started outside its group may put off for ever; here the
    exit is known when it happens. Output is kept up to ``limit`` bytes,
    stdout and stderr together; past that, :attr:`overflowed` is set and
    nothing more is kept.
    """

    def __init__(self, limit: int) -> None:
        """Keep at most ``limit`` bytes of output."""
        loop = asyncio.get_running_loop()
        self.limit = limit
        self.output: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.overflowed: asyncio.Future[None] = loop.create_future()
        #: Both output pipes have reached their end.
        self.ended: asyncio.Future[None] = loop.create_future()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        """Keep ``data``, unless it takes the output past its limit."""
        if self.overflowed.done() or fd not in self.output:
            return
        if sum(map(len, self.output.values())) + len(data) > self.limit:
            self.overflowed.set_result(None)
            return
        self.output[fd] += data

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        """Note the end of an output pipe (stdin's end is of no interest)."""
        del exc  # a pipe that fails ends all the same
        self._open.discard(fd)
        if not self._open and not self.ended.done():
            self.ended.set_result(None)

    def process_exited(self) -> None:
        """Note that the tool process itself has gone."""
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self, fd: int) -> str:
        """What the tool printed on ``fd`` (1 or 2), as text."""
        return self.output[fd].decode("utf-8", errors="replace")


def _kill(pid: int) -> None:
    """Kill the tool's whole process group (it leads one of its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _first(*futures: asyncio.Future[None]) -> None:
    await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)


async def _rest_of_output(pipes: _ToolPipes) -> None:
    """Wait for the tool process to be gone, then for its output's end, but not long.

    The exit is awaited through a shield: a cancel must not cancel the future
    itself, which the process's end sets, or the stop that follows the cancel
    would find it done and not wait for the process, leaving it unreaped.
    """
    await asyncio.shield(pipes.exited)  # the tool itself: killed, it goes at once
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(OUTPUT_GRACE):
            await _first(pipes.ended, pipes.overflowed)


async def _abandon(
    starting: asyncio.Future[tuple[asyncio.SubprocessTransport, Any]], pipes: _ToolPipes
) -> None:
    """Stop a tool whose start was cancelled, once it has started (if it does)."""
    try:
        transport, _ = await starting
    except BaseException:  # noqa: BLE001 - it did not start: nothing to stop
        return
    try:
        _kill(transport.get_pid())
        await asyncio.shield(pipes.exited)  # as in _rest_of_output
    finally:
        transport.close()


def _guarded(argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` under the guard (see :mod:`~._tool_guard`)."""
    return [sys.executable, "-I", "-S", str(_GUARD), str(os.getpid()), "--", *argv]


def _start_failure(pipes: _ToolPipes, returncode: int | None) -> OSError | None:
    """Why the guard could not start the tool, as it said on stderr (exiting so), or ``None``."""
    said = bytes(pipes.output[2])
    if returncode != _tool_guard.EXEC_FAILED or not said.startswith(_tool_guard.FAILURE_MARK):
        return None
    number = said.removeprefix(_tool_guard.FAILURE_MARK)
    if not number.isdigit() or len(number) > _ERRNO_DIGITS:
        return None
    return OSError(int(number), os.strerror(int(number)))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _is(path: Path, test: Callable[[Path], bool]) -> bool:
    """``test(path)``, false when the path cannot even be looked at (a name too long, say)."""
    try:
        return test(path)
    except OSError:
        return False


def _interpreter(program: Path) -> str | None:
    """The program named by the ``#!`` line of the file ``program``, if it has one."""
    try:
        with program.open("rb") as file:
            first = file.readline(4096)
    except OSError:
        return None
    words = first[2:].split() if first.startswith(b"#!") else []
    return words[0].decode("utf-8", errors="replace") if words else None


class LocalToolExecutor:
    """Runs a :class:`LocalTool` once per call of :meth:`execute`."""

    def __init__(
        self,
        tool: LocalTool,
        *,
        root: Path,
        conversation_id: str | None = None,
        workspace_id: str | None = None,
        env: Mapping[str, str] | None = None,
        running: RunningTools | None = None,
    ) -> None:
        """Run ``tool`` in ``root`` (the project), reporting the ids in its context.

        ``env`` is the whole environment the tool and its children get;
        ``None`` passes on this process's environment, every variable of it.
        The caller decides what tools inherit: leave out what they must not
        see (``inquiry run`` leaves out the answers file's secrets and the
        model backend's API key), since a tool may print anything it can read.
        ``running`` is told of each tool process while it runs, and its
        :attr:`~coordinator.store._running.RunningTools.environment` is added
        to each tool's (see the module's docstring).
        """
        self.tool = tool
        self._root = root.resolve()
        self._conversation_id = conversation_id
        self._workspace_id = workspace_id
        self._env = dict(env) if env is not None else None
        self._running = running

    def _request(self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]) -> bytes:
        return orjson.dumps(
            {
                "name": call.name,
                "arguments": call.arguments,
                "answers": reveal_answers(answers),
                "options": self.tool.options,
            }
        )

    def _context(self) -> bytes:
        return orjson.dumps(
            {
                "action": "run",
                # JSON cannot hold a name that is not UTF-8: such bytes show as
                # U+FFFD here; the tool runs in the root itself, whatever its name.
                "root": shown_path(self._root),
                "access": None,
                "workspace_id": self._workspace_id,
                "conversation_id": self._conversation_id,
            }
        )

    async def execute(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> ExecutorResult:
        """Run the tool once; its question, if it asks one, is always the tool's own."""
        problem = check_arguments(self.tool.parameters, call.arguments)
        if problem is not None:
            return Completed(
                content=f"Invalid arguments for tool '{call.name}': {problem}.", is_error=True
            )
        request = self._request(call, answers)
        uses_argv = any("{{tool}}" in part for part in self.tool.command)
        if uses_argv and any(isinstance(value, SecretValue) for value in answers.values()):
            _LOG.warning(
                "tool %s gets a secret answer on its command line, where other users of "
                "this machine can read it; have it read its request from stdin instead",
                call.name,
            )
        values = {"tool": request.decode(), "context": self._context().decode()}
        # One pass: an argument or answer holding the text "{{context}}" stays
        # as it is inside the request's JSON.
        argv = [
            _PLACEHOLDER.sub(lambda found: values[found[1]], part) for part in self.tool.command
        ]
        return await self._run(call, answers, argv, request)

    def _environment(
        self, call: ToolCallRequest, answers: Mapping[str, ToolAnswer]
    ) -> dict[str, str]:
        """The tool's environment: the one given (or this process's), and what is added."""
        environment = dict(os.environ if self._env is None else self._env)
        if self._running is not None:
            environment.update(self._running.environment)
        environment[IDEMPOTENCY_KEY_VARIABLE] = idempotency_key(
            self._conversation_id, call, answers
        )
        return environment

    async def _run(
        self,
        call: ToolCallRequest,
        answers: Mapping[str, ToolAnswer],
        argv: list[str],
        request: bytes,
    ) -> ExecutorResult:
        name = call.name
        for index, part in enumerate(self.tool.command):
            if "\0" in part:
                return _error(
                    f"Tool '{name}' could not be started: argument {index} of its command "
                    "contains a NUL byte."
                )
        pipes = _ToolPipes(self.tool.max_output)
        starting = asyncio.ensure_future(
            asyncio.get_running_loop().subprocess_exec(
                lambda: pipes,
                *_guarded(argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._root,
                env=self._environment(call, answers),
                start_new_session=True,  # so a stop reaches the tool's children too
            )
        )
        try:
            transport, _ = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Not left to asyncio: cancelled while it connects the new process's
            # pipes, it kills the process but not its group, and then may wait
            # for ever (Python 3.11). The start is let finish, then stopped here.
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.ensure_future(_abandon(starting, pipes)))
            raise
        except OSError as error:
            problem = self._start_problem(error, argv[0])
            return _error(f"Tool '{name}' could not be started: {problem}.")
        except ValueError as error:
            # A NUL byte in the environment given, say; Python's message quotes no value.
            return _error(f"Tool '{name}' could not be started: {error}.")
        pid = transport.get_pid()
        if self._running is not None:
            self._running.started(pid)
        try:
            result = await self._watch(call, answers, transport, pipes, request)
            failed = _start_failure(pipes, transport.get_returncode())
            if failed is not None:
                problem = self._start_problem(failed, argv[0])
                return _error(f"Tool '{name}' could not be started: {problem}.")
            return result
        finally:
            # Whatever happened, even a second cancel during the stop: the
            # pipes are closed here, never left to a process that outlives the tool.
            transport.close()
            if self._running is not None:
                self._running.ended(pid)

    async def _watch(
        self,
        call: ToolCallRequest,
        answers: Mapping[str, ToolAnswer],
        transport: asyncio.SubprocessTransport,
        pipes: _ToolPipes,
        request: bytes,
    ) -> ExecutorResult:
        name, pid = call.name, transport.get_pid()
        stdin = transport.get_pipe_transport(0)
        if isinstance(stdin, asyncio.WriteTransport):
            # Not awaited: a tool that never reads its stdin must not hold the call.
            # A tool that closes it early is in its right; the pipe just ends.
            stdin.write(request + b"\n")
            stdin.write_eof()
        timed_out = False
        try:
            try:
                async with asyncio.timeout(self.tool.timeout):
                    await _first(pipes.exited, pipes.overflowed)
            except TimeoutError:
                timed_out = True
            if timed_out or pipes.overflowed.done():
                _kill(pid)
            await _rest_of_output(pipes)
        except BaseException:
            # Cancelled (the turn was interrupted) or worse: never leave it running.
            _kill(pid)
            with contextlib.suppress(BaseException):
                await asyncio.shield(pipes.exited)
            raise
        if pipes.overflowed.done():
            _kill(pid)  # what the tool left behind printing is stopped with it
            limit = self.tool.max_output
            return _error(
                f"Tool '{name}' printed more than {limit} bytes (stdout and stderr together) "
                "and was stopped."
            )
        if timed_out:
            message = f"Tool '{name}' ran longer than {self.tool.timeout:g} s and was stopped"
            if not pipes.ended.done():
                message += (
                    "; a process it started outside its process group still held its "
                    "output and may still be running"
                )
            return _error(message + ".")
        if not pipes.ended.done():
            _LOG.info(
                "tool %s exited while a process it started still held its output; "
                "its output was read up to %g s after the exit",
                name,
                OUTPUT_GRACE,
            )
        return self._outcome(
            call, answers, pipes.text(1), pipes.text(2), transport.get_returncode() or 0
        )

    def _start_problem(self, error: OSError, program: str) -> str:
        """What kept the tool from starting, naming the program, interpreter or directory.

        The program is named as configured, and the error by its ``strerror``
        alone: the command as run may hold the request, answers and all,
        should ``{{tool}}`` be its first word.
        """
        shown = self.tool.command[0]
        problem = error.strerror or f"error {error.errno}"
        # The working directory is entered first: when it cannot be, that is the error.
        if not _is(self._root, Path.is_dir) or not os.access(self._root, os.X_OK):
            return f"its working directory {str(self._root)!r} cannot be entered: {problem}"
        if "/" in program:
            found: Path | None = self._root / program  # relative to the tool's directory, as exec
        else:
            environment = os.environ if self._env is None else self._env
            on_path = shutil.which(program, path=environment.get("PATH", os.defpath))
            found = None if on_path is None else Path(on_path)
        if error.errno == errno.ENOENT:
            if found is None or not _is(found, Path.exists):
                where = "does not exist" if "/" in program else "is not found on PATH"
                return f"the program {shown!r} {where}"
            interpreter = _interpreter(found)
            if interpreter is not None:
                return (
                    f"the interpreter {interpreter!r} named by the #! line of {shown!r} "
                    "is not found"
                )
            return f"{shown!r} needs an interpreter or loader that is not found"
        if found is not None and _is(found, Path.is_dir):
            return f"{shown!r} is a directory"
        return f"{shown!r}: {problem}"

    def _outcome(
        self,
        call: ToolCallRequest,
        answers: Mapping[str, ToolAnswer],
        stdout: str,
        stderr: str,
        returncode: int,
    ) -> ExecutorResult:
        name = call.name
        outcome = _outcome_object(stdout)
        if outcome is None:
            if returncode == 0:
                return Completed(content=stdout)
            failed = f"Tool '{name}' execution failed."
            if returncode < 0:
                failed = f"Tool '{name}' execution failed: killed by {_signal_name(-returncode)}."
            return _error(failed, stderr=stderr, stdout=stdout)
        kind = outcome["type"]
        if kind == "success":
            return _success_outcome(name, outcome)
        if kind == "error":
            return _error_outcome(name, outcome)
        if kind == "needs_input":
            return _needs_input_outcome(name, outcome, answers)
        # Not raw output: a tool that names a type means an outcome, and one
        # this build cannot read must not pass for a success.
        shown = kind if len(kind) <= _SHOWN_TYPE else kind[:_SHOWN_TYPE] + "..."
        return _malformed(
            name, f"its type {shown!r} is none of {', '.join(map(repr, _OUTCOME_TYPES))}"
        )


def _outcome_object(stdout: str) -> dict[str, Any] | None:
    """The outcome ``stdout`` holds: one JSON object with a string ``type``, or ``None``."""
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    return None


def _success_outcome(name: str, outcome: Mapping[str, Any]) -> Completed:
    content = outcome.get("content")
    if not isinstance(content, str):
        return _malformed(name, "'content' of a success must be a string")
    return Completed(content=content)


def _error_outcome(name: str, outcome: Mapping[str, Any]) -> Completed:
    message = outcome.get("message")
    if not isinstance(message, str):
        return _malformed(name, "'message' of an error must be a string")
    trace = outcome.get("trace") or []
    if not isinstance(trace, list) or not all(isinstance(t, str) for t in trace):
        return _malformed(name, "'trace' of an error must be an array of strings")
    body: dict[str, Any] = {"message": message}
    if trace:
        body["trace"] = trace
    return Completed(content=orjson.dumps(body).decode(), is_error=True)


def _needs_input_outcome(
    name: str, outcome: Mapping[str, Any], answers: Mapping[str, ToolAnswer]
) -> ExecutorResult:
    try:
        question = structure_question(outcome.get("question"))
    except WireError as error:
        return _malformed(name, f"its question cannot be read: {error}")
    # Whatever the tool printed, its question is recorded as the tool's own.
    return NeedsInput(
        question=question,
        source=InquirySource.tool(name),
        accumulated_answers=dict(answers),
    )


def _malformed(name: str, problem: str) -> Completed:
    return _error(f"Tool '{name}' printed a malformed outcome: {problem}.")
