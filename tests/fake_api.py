"""A local stand-in for the Anthropic and OpenAI HTTP APIs.

:class:`FakeAPI` is an HTTP server on 127.0.0.1 (stdlib, one thread per
connection) that records every request body as it arrived and answers with
the replies a test scripted, in order. The real SDKs talk to it through their
``base_url``; nothing of theirs is mocked. A reply may be *held* until the test
releases it, to exercise timeouts and cancellation. Like the real APIs, it
refuses (HTTP 400, before any scripted reply is used) a conversation they
refuse: see :func:`anthropic_refusal` and :func:`openai_refusal`.

Also here: the reply bodies each API sends (``anthropic_*``, ``openai_*``);
:func:`raw_members` / :func:`raw_elements`, which cut a JSON text into the
exact source text of its members, so tests can compare request fields byte for
byte; a :class:`ProviderKit` per provider; and the conversation the tests ask
about (a turn whose ``fs_modify_file`` call asks whether to make backups).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self

import pytest

from coordinator.adapters.providers import (
    AnthropicAdapter,
    ModelInquiryBackend,
    OpenAIAdapter,
    ToolDefinition,
)
from coordinator.driver._backend import InquiryBackendError, InquiryTask
from coordinator.stream._stream import ConversationStream
from machines import (
    ChatRequest,
    InquiryQuestion,
    InquiryRequest,
    InquirySource,
    Question,
    ToolCallRequest,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from coordinator.adapters.providers import ProviderAdapter
    from coordinator.stream._stream import ProviderView
    from machines import JsonValue

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


class _Server(ThreadingHTTPServer):
    # Join every handler thread on close, so no thread outlives a test.
    daemon_threads = False
    block_on_close = True


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body, parsed."""
        return json.loads(self.body)

    def text(self) -> str:
        """The body as text."""
        return self.body.decode()


@dataclass(frozen=True)
class Reply:
    """What the server answers one request with.

    A ``bytes`` body is sent as it is, with ``content_type`` (a page that is
    not JSON, say); any other body as JSON.
    """

    body: object
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False
    content_type: str = "application/json"

    def held(self) -> Reply:
        """This reply, sent only once the test releases it (or the server stops)."""
        return replace(self, hold=True)


class FakeAPI:
    """An HTTP server that records requests and plays scripted replies.

    Use it as a context manager; leaving stops the server, releases held
    replies and joins every thread. A request with no reply left goes to the
    responder, or gets a 500 when there is none.
    """

    def __init__(
        self, responder: Callable[[Recorded], Reply] | None = None, *, strict: bool = True
    ) -> None:
        """Bind to a free port on 127.0.0.1 (serving starts on ``__enter__``).

        ``responder``, when given, answers requests for which no reply is queued.
        ``strict`` refuses what the real APIs refuse.
        """
        self.responder = responder
        self.strict = strict
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Condition()
        self._released = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: Reply) -> None:
        """Queue ``replies``, answered in order."""
        with self._lock:
            self._replies.extend(replies)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> bool:
        """Block until ``count`` requests have arrived (false if ``timeout`` ran out)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def release(self) -> None:
        """Let held replies go."""
        self._released.set()

    def __enter__(self) -> Self:
        """Start serving."""
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving and join every thread."""
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _record(self, request: Recorded) -> Reply:
        refusal = _refusal(request) if self.strict else None
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            if refusal is not None:
                return refusal
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return Reply({"error": {"type": "test_error", "message": "no reply scripted"}}, 500)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                reply = fake._record(
                    Recorded(
                        method="POST",
                        path=self.path,
                        headers={key.lower(): value for key, value in self.headers.items()},
                        body=body,
                    )
                )
                if reply.hold:
                    fake._released.wait()
                if isinstance(reply.body, bytes):
                    payload = reply.body
                else:
                    payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    # The client gave up (timeout, cancellation): nobody to answer.
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""

        return Handler


# ------------------------------------------------------------------ Anthropic


def anthropic_message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> Reply:
    """A Messages API reply holding ``content`` blocks."""
    return Reply(
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def anthropic_tool_use(id: str, name: str, arguments: dict[str, Any]) -> Reply:
    """A Messages API reply that calls one tool."""
    return anthropic_message(
        [{"type": "tool_use", "id": id, "name": name, "input": arguments}], "tool_use"
    )


def anthropic_text(text: str) -> Reply:
    """A Messages API reply that only says ``text``."""
    return anthropic_message([{"type": "text", "text": text}])


def anthropic_error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """A Messages API error reply."""
    return Reply(
        {"type": "error", "error": {"type": "api_error", "message": message}},
        status,
        headers or {},
    )


# --------------------------------------------------------------------- OpenAI


def openai_completion(message: dict[str, Any], finish_reason: str = "stop") -> Reply:
    """A Chat Completions reply whose one choice is ``message``."""
    return Reply(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1767225600,
            "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


def openai_tool_call(id: str, name: str, arguments: dict[str, Any] | str) -> Reply:
    """A Chat Completions reply that calls one function (``arguments`` as sent)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return openai_completion(
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": raw}}
            ],
        },
        "tool_calls",
    )


def openai_text(text: str) -> Reply:
    """A Chat Completions reply that only says ``text``."""
    return openai_completion({"role": "assistant", "content": text, "refusal": None})


def openai_error(
    status: int, message: str, headers: dict[str, str] | None = None, kind: str = "server_error"
) -> Reply:
    """A Chat Completions error reply."""
    return Reply(
        {"error": {"message": message, "type": kind, "param": None, "code": None}},
        status,
        headers or {},
    )


# ------------------------------------------------------------------ refusals

_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
_OPENAI_MAX_ID_LENGTH = 40


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _anthropic_text_refusals(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    system = body.get("system", [])
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    problems.extend(
        "system: text content blocks must contain non-whitespace text"
        for block in blocks
        if not block["text"].strip()
    )
    for index, message in enumerate(body["messages"]):
        for number, block in enumerate(_blocks(message)):
            where = f"messages.{index}.content.{number}"
            if block["type"] == "text" and not block["text"].strip():
                problems.append(f"{where}: text content blocks must contain non-whitespace text")
            if (
                block["type"] == "tool_result"
                and block.get("is_error")
                and not block.get("content")
            ):
                problems.append(f"{where}: content cannot be empty if `is_error` is true")
    return problems


def _anthropic_tool_refusals(messages: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        uses = [block["id"] for block in blocks if block["type"] == "tool_use"]
        for use in uses:
            if not _TOOL_USE_ID.fullmatch(use):
                problems.append(f"messages.{index}: tool_use.id: String should match pattern")
            if use in seen:
                problems.append(f"messages.{index}: `tool_use` ids must be unique")
            seen.add(use)
        if uses:
            following = _blocks(messages[index + 1]) if index + 1 < len(messages) else []
            answered = {b["tool_use_id"] for b in following if b["type"] == "tool_result"}
            if not set(uses) <= answered:
                problems.append(
                    f"messages.{index}: `tool_use` ids were found without `tool_result` "
                    "blocks immediately after"
                )
        previous = _blocks(messages[index - 1]) if index else []
        offered = {block["id"] for block in previous if block["type"] == "tool_use"}
        problems.extend(
            f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks"
            for block in blocks
            if block["type"] == "tool_result" and block["tool_use_id"] not in offered
        )
    return problems


def anthropic_refusal(body: dict[str, Any]) -> str | None:
    """Why the Messages API would refuse ``body`` (``None`` if it would not)."""
    problems = [*_anthropic_text_refusals(body), *_anthropic_tool_refusals(body["messages"])]
    return problems[0] if problems else None


def _openai_message_refusal(messages: list[dict[str, Any]], index: int) -> str | None:
    message = messages[index]
    calls = [call["id"] for call in message.get("tool_calls") or []]
    if any(len(call) > _OPENAI_MAX_ID_LENGTH for call in calls):
        return f"Invalid 'messages[{index}].tool_calls[].id': string too long"
    if message["role"] == "assistant" and not message.get("content") and not calls:
        return f"Invalid 'messages[{index}]': an assistant message needs content or tool_calls"
    answered = []
    for following in messages[index + 1 :]:
        if following["role"] != "tool":
            break
        answered.append(following["tool_call_id"])
    if not set(calls) <= set(answered):
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id' (messages[{index}])"
        )
    if message["role"] == "tool":
        before = index - 1
        while before >= 0 and messages[before]["role"] == "tool":
            before -= 1
        offered = [call["id"] for call in messages[before].get("tool_calls") or []]
        if before < 0 or message["tool_call_id"] not in offered:
            return (
                "Invalid parameter: messages with role 'tool' must be a response to a "
                f"preceding message with 'tool_calls' (messages[{index}])"
            )
    return None


def openai_refusal(body: dict[str, Any]) -> str | None:
    """Why Chat Completions would refuse ``body`` (``None`` if it would not)."""
    messages: list[dict[str, Any]] = body["messages"]
    for index in range(len(messages)):
        problem = _openai_message_refusal(messages, index)
        if problem is not None:
            return problem
    return None


def _refusal(request: Recorded) -> Reply | None:
    """The 400 the real API would answer ``request`` with, if any."""
    try:
        body = request.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or "messages" not in body:
        return None
    if request.path.endswith("/messages"):
        problem = anthropic_refusal(body)
        if problem is not None:
            error = {"type": "invalid_request_error", "message": problem}
            return Reply({"type": "error", "error": error}, 400)
    elif request.path.endswith("/chat/completions"):
        problem = openai_refusal(body)
        if problem is not None:
            return openai_error(400, problem, kind="invalid_request_error")
    return None


# ------------------------------------------------------------------ raw JSON


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def raw_members(text: str) -> dict[str, str]:
    """The members of the JSON object ``text``, each as its exact source text."""
    members: dict[str, str] = {}
    index = _skip(text, 0)
    if text[index] != "{":
        raise ValueError("not a JSON object")
    index = _skip(text, index + 1)
    while text[index] != "}":
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] != ":":
            raise ValueError(f"expected ':' at {index}")
        start = _skip(text, index + 1)
        _, end = _DECODER.raw_decode(text, start)
        members[key] = text[start:end]
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)
    return members


def raw_elements(text: str) -> list[str]:
    """The elements of the JSON array ``text``, each as its exact source text."""
    elements: list[str] = []
    index = _skip(text, 0)
    if text[index] != "[":
        raise ValueError("not a JSON array")
    index = _skip(text, index + 1)
    while text[index] != "]":
        _, end = _DECODER.raw_decode(text, index)
        elements.append(text[index:end])
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)
    return elements


# ---------------------------------------------------------------- the kits


@dataclass(frozen=True)
class ProviderKit:
    """What a test needs to know of one provider: its replies and its request shape."""

    name: str
    #: The path requests are posted to.
    path: str
    #: The ``tool_choice`` of an inquiry request.
    forced_choice: object
    make: Callable[..., ProviderAdapter]
    url_suffix: str
    tool_call: Callable[[str, str, dict[str, Any]], Reply]
    text: Callable[[str], Reply]
    error: Callable[..., Reply]
    #: The exact text of the system prompt and of the tools in a request body.
    system_raw: Callable[[str], str]
    tools_raw: Callable[[str], str]
    #: The exact text of each conversation message of a request body.
    conversation: Callable[[str], list[str]]
    #: The (id, name, arguments) of each tool call in one raw message.
    tool_calls_in: Callable[[str], list[tuple[str, str, Any]]]
    #: The (id, content) of each tool result in raw messages.
    tool_results: Callable[[list[str]], list[tuple[str, str]]]
    #: The text a raw message says as the user (``None`` if it is not a user message).
    user_text: Callable[[str], str | None]

    def adapter(self, base_url: str, api_key: str, **settings: Any) -> ProviderAdapter:
        """An adapter for this provider sending to ``base_url``."""
        return self.make(base_url=base_url + self.url_suffix, api_key=api_key, **settings)


def _anthropic_conversation(body: str) -> list[str]:
    return raw_elements(raw_members(body)["messages"])


def _anthropic_calls(raw: str) -> list[tuple[str, str, Any]]:
    message = json.loads(raw)
    if message["role"] != "assistant":
        return []
    return [
        (block["id"], block["name"], block["input"])
        for block in message["content"]
        if block["type"] == "tool_use"
    ]


def _anthropic_results(raws: list[str]) -> list[tuple[str, str]]:
    results: list[tuple[str, str]] = []
    for raw in raws:
        message = json.loads(raw)
        if message["role"] == "user" and isinstance(message["content"], list):
            results.extend(
                (block["tool_use_id"], block.get("content", ""))
                for block in message["content"]
                if block["type"] == "tool_result"
            )
    return results


def _anthropic_user_text(raw: str) -> str | None:
    message = json.loads(raw)
    if message["role"] != "user":
        return None
    if isinstance(message["content"], str):
        return str(message["content"])
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


def _openai_messages(body: str) -> list[str]:
    return raw_elements(raw_members(body)["messages"])


def _openai_calls(raw: str) -> list[tuple[str, str, Any]]:
    message = json.loads(raw)
    return [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
        for call in message.get("tool_calls", [])
    ]


def _openai_results(raws: list[str]) -> list[tuple[str, str]]:
    messages = [json.loads(raw) for raw in raws]
    return [
        (message["tool_call_id"], message["content"])
        for message in messages
        if message["role"] == "tool"
    ]


def _openai_user_text(raw: str) -> str | None:
    message = json.loads(raw)
    return str(message["content"]) if message["role"] == "user" else None


ANTHROPIC = ProviderKit(
    name="anthropic",
    path="/v1/messages",
    forced_choice={"type": "tool", "name": "answer_inquiry", "disable_parallel_tool_use": True},
    make=lambda **settings: AnthropicAdapter(model="claude-test", **settings),
    url_suffix="",
    tool_call=anthropic_tool_use,
    text=anthropic_text,
    error=anthropic_error,
    system_raw=lambda body: raw_members(body)["system"],
    tools_raw=lambda body: raw_members(body)["tools"],
    conversation=_anthropic_conversation,
    tool_calls_in=_anthropic_calls,
    tool_results=_anthropic_results,
    user_text=_anthropic_user_text,
)

OPENAI = ProviderKit(
    name="openai",
    path="/v1/chat/completions",
    forced_choice={"type": "function", "function": {"name": "answer_inquiry"}},
    make=lambda **settings: OpenAIAdapter(model="gpt-test", **settings),
    url_suffix="/v1",
    tool_call=openai_tool_call,
    text=openai_text,
    error=openai_error,
    system_raw=lambda body: _openai_messages(body)[0],
    tools_raw=lambda body: raw_members(body)["tools"],
    conversation=lambda body: _openai_messages(body)[1:],
    tool_calls_in=_openai_calls,
    tool_results=_openai_results,
    user_text=_openai_user_text,
)

PROVIDER_KITS = (ANTHROPIC, OPENAI)


# ------------------------------------------------- the conversation under test

SYSTEM = ("You are a careful coding agent.", "The project is called demo.")
TOOLS = (
    ToolDefinition(
        name="fs_modify_file",
        description="Replace text in a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}},
            "required": ["path", "pattern"],
        },
    ),
)
CALL_ID = "call_1"
INQUIRY_ID = "call_1.backup.1"
BACKUP = Question.boolean("backup", "Create backup files?")
KEY = "sk-test-0123456789-very-secret"


def asking_view() -> ProviderView:
    """A turn whose model called fs_modify_file, which now asks a question."""
    stream = ConversationStream()
    stream.append(ChatRequest(content="Rename the project in README.md."))
    stream.append(
        ToolCallRequest(
            id=CALL_ID, name="fs_modify_file", arguments={"path": "README.md", "pattern": "demo"}
        )
    )
    stream.append(
        InquiryRequest(
            id=INQUIRY_ID,
            source=InquirySource.tool("fs_modify_file"),
            question=InquiryQuestion.from_question(BACKUP),
        )
    )
    return stream.provider_view(SYSTEM)


def make_task(question: Question = BACKUP, view: ProviderView | None = None) -> InquiryTask:
    """The inquiry for ``question`` asked by fs_modify_file's call."""
    return InquiryTask(
        inquiry_id=INQUIRY_ID,
        tool_call_id=CALL_ID,
        tool_name="fs_modify_file",
        question=question,
        view=view or asking_view(),
    )


def answer_args(answer: str, inquiry_id: str = INQUIRY_ID) -> dict[str, Any]:
    """The arguments of an answer_inquiry call."""
    return {"inquiry_id": inquiry_id, "answer": answer}


def run_answer(kit: ProviderKit, base_url: str, task: InquiryTask, **settings: Any) -> JsonValue:
    """Ask ``task`` through a fresh backend for ``kit``'s provider at ``base_url``."""
    answer_retries = settings.pop("answer_retries", 2)

    async def scenario() -> JsonValue:
        async with ModelInquiryBackend(
            kit.adapter(base_url, KEY, **settings), tools=TOOLS, answer_retries=answer_retries
        ) as backend:
            return await backend.answer(task)

    return asyncio.run(scenario())


def failure(
    kit: ProviderKit, base_url: str, task: InquiryTask, **settings: Any
) -> InquiryBackendError:
    """The error asking ``task`` raises."""
    with pytest.raises(InquiryBackendError) as caught:
        run_answer(kit, base_url, task, **settings)
    return caught.value
