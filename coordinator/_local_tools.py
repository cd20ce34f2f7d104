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
``{"type": "needs_input", "question": {...}}``. Anything else on stdout is raw
output: success with that text on exit 0, otherwise an error carrying
``{"message": "Tool '<name>' execution failed.", "stderr", "stdout"}`` (JP's
shape). A tool that runs past its timeout, prints more than its output limit,
cannot be started, or prints a malformed outcome fails with an error naming
what happened; a tool whose run is cancelled is killed (its whole process
group). To answer a question the whole tool runs again with every answer so
far, so a tool must be idempotent up to its question.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from coordinator._codec import WireError, structure_question
from coordinator._executors import Completed, ExecutorResult, NeedsInput, reveal_answers
from machines import InquirySource, SecretValue, ToolAnswer, ToolCallRequest

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LocalTool", "LocalToolExecutor", "check_arguments", "schema_problem"]

_LOG = logging.getLogger("coordinator.local_tools")
_CHUNK = 64 * 1024


def _argv(value: str | Sequence[str]) -> tuple[str, ...]:
    return tuple(shlex.split(value)) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class LocalTool:
    """A command-backed tool.

    ``command`` is an argv list (or a string split like a shell would, without
    running one). ``parameters`` is the tool's JSON schema; the subset
    :func:`check_arguments` understands is checked before the tool runs.
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


def _fits(value: object, kind: object) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for name in kinds:
        types = _JSON_TYPES.get(str(name))
        if types is None:
            return True  # a type this checker does not know: let the tool judge
        if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
            return True
    return False


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
    ``additionalProperties: false``. Deeper validation is the tool's own job.
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
        if "enum" in spec and value not in spec["enum"]:
            return f"argument {name!r} must be one of {spec['enum']}"
    return None


def _error(message: str, **details: str) -> Completed:
    return Completed(content=orjson.dumps({"message": message, **details}).decode(), is_error=True)


class _OutputTooLargeError(Exception):
    pass


async def _read(stream: asyncio.StreamReader | None, limit: int) -> bytes:
    if stream is None:  # pragma: no cover - both pipes are always opened
        return b""
    chunks: list[bytes] = []
    total = 0
    while chunk := await stream.read(_CHUNK):
        total += len(chunk)
        if total > limit:
            raise _OutputTooLargeError
        chunks.append(chunk)
    return b"".join(chunks)


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:  # pragma: no cover - stdin is always opened
        return
    # A tool that never reads stdin closes it early; that is its right.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(data)
        await stream.drain()
    stream.close()


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _drain(stream: asyncio.StreamReader | None) -> None:
    if stream is None:  # pragma: no cover - both pipes are always opened
        return
    while await stream.read(_CHUNK):
        pass


async def _stop(
    process: asyncio.subprocess.Process, tasks: tuple[asyncio.Future[Any], ...]
) -> None:
    """Kill the tool's process group and wait until it and its pipes are gone.

    The readers are cancelled first and the pipes then read to their end:
    a reader stopped part-way leaves its pipe paused and never closed, and
    on Python 3.11 ``wait()`` does not return until every pipe is closed.
    """
    _kill(process)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(_drain(process.stdout), _drain(process.stderr))
    await process.wait()


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
    ) -> None:
        """Run ``tool`` in ``root`` (the project), reporting the ids in its context."""
        self.tool = tool
        self._root = root.resolve()
        self._conversation_id = conversation_id
        self._workspace_id = workspace_id
        self._env = dict(env) if env is not None else None

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
                "root": str(self._root),
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
        context = self._context().decode()
        argv = [
            part.replace("{{tool}}", request.decode()).replace("{{context}}", context)
            for part in self.tool.command
        ]
        return await self._run(call, answers, argv, request)

    async def _run(
        self,
        call: ToolCallRequest,
        answers: Mapping[str, ToolAnswer],
        argv: list[str],
        request: bytes,
    ) -> ExecutorResult:
        name = call.name
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._root,
                env=self._env,
                start_new_session=True,  # so a stop reaches the tool's children too
            )
        except OSError as error:
            return _error(f"Tool '{name}' could not be started: {error.strerror or error}.")
        limit = self.tool.max_output
        tasks = (
            asyncio.ensure_future(_read(process.stdout, limit)),
            asyncio.ensure_future(_read(process.stderr, limit)),
            asyncio.ensure_future(_feed(process.stdin, request + b"\n")),
            asyncio.ensure_future(process.wait()),
        )
        try:
            async with asyncio.timeout(self.tool.timeout):
                await asyncio.gather(*tasks)
        except TimeoutError:
            await _stop(process, tasks)
            timeout = self.tool.timeout
            return _error(f"Tool '{name}' ran longer than {timeout:g} s and was stopped.")
        except _OutputTooLargeError:
            await _stop(process, tasks)
            return _error(f"Tool '{name}' printed more than {limit} bytes and was stopped.")
        except BaseException:
            # Cancelled (the turn was interrupted) or worse: never leave it running.
            with contextlib.suppress(BaseException):
                await asyncio.shield(_stop(process, tasks))
            raise
        stdout, stderr = tasks[0].result(), tasks[1].result()
        return self._outcome(
            call,
            answers,
            stdout.decode("utf-8", errors="replace"),
            stderr.decode("utf-8", errors="replace"),
            process.returncode or 0,
        )

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
            return _error(f"Tool '{name}' execution failed.", stderr=stderr, stdout=stdout)
        kind = outcome["type"]
        if kind == "success":
            return _success_outcome(name, outcome)
        if kind == "error":
            return _error_outcome(name, outcome)
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


def _outcome_object(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and value.get("type") in ("success", "error", "needs_input"):
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


def _malformed(name: str, problem: str) -> Completed:
    return _error(f"Tool '{name}' printed a malformed outcome: {problem}.")
