"""Building a model backend from a configuration mapping, and importing without SDKs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import pytest
from fake_api import (
    TOOLS,
    FakeAPI,
    answer_args,
    anthropic_error,
    anthropic_tool_use,
    make_task,
    openai_tool_call,
)
from process_helpers import PATIENCE

from coordinator.adapters.providers import (
    ANSWER_INQUIRY,
    AnthropicAdapter,
    ModelInquiryBackend,
    OpenAIAdapter,
    ProviderConfigError,
    ToolDefinition,
    backend_from_config,
)
from coordinator.driver._backend import BackendErrorKind, InquiryBackendError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from machines import JsonValue


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    """A running fake API server."""
    with FakeAPI() as server:
        yield server


def ask(config: Mapping[str, object], **kwargs: Any) -> JsonValue:
    """Build a backend from ``config`` and ask the backup question."""

    async def scenario() -> JsonValue:
        async with backend_from_config(config, tools=TOOLS, **kwargs) as backend:
            return await backend.answer(make_task())

    return asyncio.run(scenario())


def test_an_anthropic_backend_from_config(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """provider, model, base_url, api_key_env and max_tokens reach the Messages API."""
    monkeypatch.setenv("TEAM_ANTHROPIC_KEY", "sk-team-anthropic")
    api.reply(anthropic_tool_use("toolu_1", ANSWER_INQUIRY, answer_args("true")))
    config = {
        "provider": "anthropic",
        "model": "claude-from-config",
        "base_url": api.base_url,
        "api_key_env": "TEAM_ANTHROPIC_KEY",
        "max_tokens": 100,
        "prompt_cache": False,
    }
    assert ask(config) is True
    [request] = api.requests
    assert request.path == "/v1/messages"
    body = request.json()
    assert body["model"] == "claude-from-config"
    assert body["max_tokens"] == 100
    assert "cache_control" not in body
    assert any("sk-team-anthropic" in value for value in request.headers.values())


def test_an_openai_backend_from_config(api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """provider, model, base_url and the default OPENAI_API_KEY reach Chat Completions."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-openai")
    api.reply(openai_tool_call("call_a", ANSWER_INQUIRY, answer_args("false")))
    config = {"provider": "openai", "model": "gpt-from-config", "base_url": api.base_url + "/v1"}
    assert ask(config) is False
    [request] = api.requests
    assert request.path == "/v1/chat/completions"
    assert request.json()["model"] == "gpt-from-config"
    assert any("sk-default-openai" in value for value in request.headers.values())


def test_the_retry_settings_are_applied(api: FakeAPI) -> None:
    """http_retries lets the SDK retry a 500; answer_retries=0 stops after one bad answer."""
    api.reply(
        anthropic_error(500, "blip", {"retry-after-ms": "1"}),
        anthropic_tool_use("toolu_1", ANSWER_INQUIRY, answer_args("perhaps")),
    )
    config = {
        "provider": "anthropic",
        "model": "claude-test",
        "base_url": api.base_url,
        "http_retries": 1,
        "answer_retries": 0,
    }
    with pytest.raises(InquiryBackendError) as caught:
        ask(config, api_key="sk-passed-in")
    assert caught.value.kind is BackendErrorKind.ANSWER_EXTRACTION
    assert len(api.requests) == 2


def test_the_timeout_is_applied(api: FakeAPI) -> None:
    """A configured timeout makes a held reply a provider error."""
    api.reply(openai_tool_call("call_a", ANSWER_INQUIRY, answer_args("true")).held())
    config = {
        "provider": "openai",
        "model": "gpt-test",
        "base_url": api.base_url + "/v1",
        "timeout": 0.2,
        "http_retries": 0,
    }
    with pytest.raises(InquiryBackendError) as caught:
        ask(config, api_key="sk-passed-in")
    assert caught.value.kind is BackendErrorKind.PROVIDER
    assert "timed out" in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "adapter_type"), [("anthropic", AnthropicAdapter), ("openai", OpenAIAdapter)]
)
def test_the_provider_picks_the_adapter(provider: str, adapter_type: type) -> None:
    """Each provider name builds its own adapter, with the model and tools given."""

    async def scenario() -> None:
        backend = backend_from_config(
            {"provider": provider, "model": "m-1", "base_url": "http://127.0.0.1:9"},
            tools=TOOLS,
            api_key="sk-passed-in",
        )
        assert isinstance(backend, ModelInquiryBackend)
        assert isinstance(backend.adapter, adapter_type)
        assert backend.tools[0] == TOOLS[0]
        assert backend.tools[-1].name == ANSWER_INQUIRY
        await backend.aclose()

    asyncio.run(scenario())


BASE = {"provider": "anthropic", "model": "claude-test"}


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"model": "m"}, "provider"),
        ({"provider": "gemini", "model": "m"}, "provider"),
        ({"provider": 3, "model": "m"}, "provider"),
        ({"provider": "anthropic"}, "model"),
        ({**BASE, "model": ""}, "model"),
        ({**BASE, "colour": "blue"}, "colour"),
        ({**BASE, "api_key": "sk-in-a-file"}, "api_key"),
        ({**BASE, "base_url": 8080}, "base_url"),
        ({**BASE, "api_key_env": ""}, "api_key_env"),
        ({**BASE, "timeout": 0}, "timeout"),
        ({**BASE, "timeout": -1.5}, "timeout"),
        ({**BASE, "timeout": "30"}, "timeout"),
        ({**BASE, "timeout": True}, "timeout"),
        ({**BASE, "timeout": float("inf")}, "timeout"),
        ({**BASE, "http_retries": -1}, "http_retries"),
        ({**BASE, "http_retries": 1.5}, "http_retries"),
        ({**BASE, "http_retries": True}, "http_retries"),
        ({**BASE, "answer_retries": "2"}, "answer_retries"),
        ({**BASE, "max_tokens": 0}, "max_tokens"),
        ({**BASE, "prompt_cache": "yes"}, "prompt_cache"),
        ({"provider": "openai", "model": "m", "prompt_cache": True}, "prompt_cache"),
    ],
)
def test_a_bad_key_is_named(config: dict[str, object], key: str) -> None:
    """Every refused setting raises an error that names its key."""
    with pytest.raises(ProviderConfigError) as caught:
        backend_from_config(config, api_key="sk-passed-in")
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{key}: ")
    assert "sk-in-a-file" not in str(caught.value)


def test_a_configuration_must_be_a_mapping() -> None:
    """Anything but a mapping is refused."""
    with pytest.raises(ProviderConfigError, match="mapping"):
        backend_from_config(["anthropic"])  # type: ignore[arg-type]


def test_a_missing_key_names_the_configured_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key in the named variable: the error says which variable."""
    monkeypatch.delenv("NOWHERE_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="NOWHERE_KEY"):
        backend_from_config({**BASE, "api_key_env": "NOWHERE_KEY"})


@pytest.mark.parametrize("name", ["fs.read", "two words", "x" * 65, "caf\u00e9"])
def test_a_tool_name_the_providers_refuse_is_named(name: str) -> None:
    """Every tool goes to the provider: a name its API refuses is refused here, naming it."""
    tool = ToolDefinition(name=name, parameters={"type": "object"})
    with pytest.raises(ProviderConfigError) as caught:
        backend_from_config(BASE, tools=[tool], api_key="sk-passed-in")
    assert caught.value.tool == name
    assert caught.value.key is None
    assert str(caught.value).startswith(f"tool {name!r}: every tool is sent to ")
    assert "1 to 64" in caught.value.problem
    allowed = ToolDefinition(name="fs_read-2" + "x" * 55, parameters={"type": "object"})
    backend_from_config(BASE, tools=[allowed], api_key="sk-passed-in")


def test_a_reserved_tool_name_is_refused() -> None:
    """An embedder tool that pretends to be answer_inquiry is refused."""
    impostor = ToolDefinition(name=ANSWER_INQUIRY, parameters={"type": "object"})
    with pytest.raises(ValueError, match="reserved"):
        backend_from_config(BASE, tools=[impostor], api_key="sk-passed-in")


def test_the_package_imports_without_either_sdk() -> None:
    """With both SDKs unimportable the package loads, and asking for one names its extra."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["anthropic"] = None
        sys.modules["openai"] = None
        import coordinator
        import coordinator.adapters.providers as providers
        for name in ("anthropic", "openai"):
            try:
                providers.backend_from_config({"provider": name, "model": "m"}, api_key="k")
            except providers.ProviderConfigError as error:
                print(error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        (
            "the Anthropic provider needs the anthropic SDK: "
            "pip install 'inquiry-coordinator[anthropic]'"
        ),
        "the OpenAI provider needs the openai SDK: pip install 'inquiry-coordinator[openai]'",
    ]
