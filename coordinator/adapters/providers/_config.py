"""Building a model inquiry backend from configuration.

``inquiry run`` reads a mapping like ``{"provider": "anthropic", "model":
"claude-sonnet-4-5", "api_key_env": "MY_KEY"}`` and hands it to
:func:`backend_from_config`. Every key is checked, and an error names the key
at fault. The API key itself is never configuration: it is read from the
environment variable the mapping names (or passed in by the caller).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from coordinator.adapters.providers._errors import ProviderConfigError
from coordinator.adapters.providers._model_backend import (
    DEFAULT_ANSWER_RETRIES,
    ModelInquiryBackend,
)
from coordinator.adapters.providers._tools import turn_tools

if TYPE_CHECKING:
    from coordinator.adapters.providers._model_backend import ProviderAdapter
    from coordinator.adapters.providers._tools import ToolDefinition

__all__ = ["CONFIG_KEYS", "backend_from_config", "check_backend_config", "key_variable"]

#: A tool name both APIs accept (Anthropic's and OpenAI's rule are the same).
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")

_PROVIDERS = ("anthropic", "openai")
_DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
_DEFAULT_HTTP_RETRIES = 2  # the SDKs' own default

#: Every key :func:`backend_from_config` reads.
CONFIG_KEYS = (
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "timeout",
    "http_retries",
    "answer_retries",
    "max_tokens",
    "prompt_cache",
)


def _string(config: Mapping[str, object], key: str, *, required: bool = False) -> str | None:
    value = config.get(key)
    if value is None:
        if required:
            raise ProviderConfigError("is required", key=key)
        return None
    if not isinstance(value, str) or not value:
        raise ProviderConfigError(f"must be a non-empty string, not {_shown(value)}", key=key)
    return value


def _whole(config: Mapping[str, object], key: str, *, least: int) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if type(value) is not int or value < least:
        raise ProviderConfigError(f"must be a whole number of {least} or more", key=key)
    return value


def _seconds(config: Mapping[str, object], key: str) -> float | None:
    value = config.get(key)
    if value is None:
        return None
    problem = "must be a finite number of seconds greater than 0"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProviderConfigError(problem, key=key)
    try:
        seconds = float(value)
    except OverflowError:  # an integer past the largest float: no timeout anyone means
        raise ProviderConfigError(problem, key=key) from None
    if not 0 < seconds < math.inf:
        raise ProviderConfigError(problem, key=key)
    return seconds


def _flag(config: Mapping[str, object], key: str) -> bool | None:
    value = config.get(key)
    if value is None:
        return None
    if type(value) is not bool:
        raise ProviderConfigError("must be true or false", key=key)
    return value


def _shown(value: object) -> str:
    return repr(value) if isinstance(value, str) else type(value).__name__


@attrs.frozen(kw_only=True)
class _Settings:
    """A backend configuration, every key checked."""

    provider: str
    model: str
    base_url: str | None
    api_key_env: str
    timeout: float | None
    http_retries: int
    answer_retries: int
    max_tokens: int | None
    prompt_cache: bool | None


def _settings(config: Mapping[str, object]) -> _Settings:
    if not isinstance(config, Mapping):
        raise ProviderConfigError(
            f"the inquiry backend configuration must be a mapping, not {type(config).__name__}"
        )
    _check_keys(config)
    provider = _string(config, "provider", required=True)
    if provider not in _PROVIDERS:
        raise ProviderConfigError(
            f"must be one of {', '.join(map(repr, _PROVIDERS))}, not {provider!r}", key="provider"
        )
    model = _string(config, "model", required=True) or ""
    base_url = _string(config, "base_url")
    api_key_env = _string(config, "api_key_env") or _DEFAULT_KEY_ENV[provider]
    timeout = _seconds(config, "timeout")
    http_retries = _whole(config, "http_retries", least=0)
    answer_retries = _whole(config, "answer_retries", least=0)
    max_tokens = _whole(config, "max_tokens", least=1)
    prompt_cache = _flag(config, "prompt_cache")
    if provider != "anthropic" and prompt_cache is not None:
        raise ProviderConfigError("only the anthropic provider takes this key", key="prompt_cache")
    return _Settings(
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout=timeout,
        http_retries=_DEFAULT_HTTP_RETRIES if http_retries is None else http_retries,
        answer_retries=DEFAULT_ANSWER_RETRIES if answer_retries is None else answer_retries,
        max_tokens=max_tokens,
        prompt_cache=prompt_cache,
    )


def key_variable(config: Mapping[str, object]) -> str:
    """The environment variable a backend set up from ``config`` reads its API key from.

    Raises :class:`ProviderConfigError` as :func:`check_backend_config` does.
    """
    return _settings(config).api_key_env


def check_backend_config(config: Mapping[str, object]) -> None:
    """Check ``config`` as :func:`backend_from_config` would, building nothing.

    No SDK is loaded and no API key is looked for: a configuration can be
    checked where it is read, whether or not it will be used.
    Raises :class:`ProviderConfigError` whose ``key`` names the bad key.
    """
    _settings(config)


def backend_from_config(
    config: Mapping[str, object],
    *,
    tools: Iterable[ToolDefinition] = (),
    api_key: str | None = None,
) -> ModelInquiryBackend:
    """A :class:`ModelInquiryBackend` for the turn's ``tools``, as ``config`` describes.

    Keys (only ``provider`` and ``model`` are required):

    ``provider``
        ``"anthropic"`` (Messages API) or ``"openai"`` (Chat Completions API).
    ``model``
        The model name, passed to the API as it is.
    ``base_url``
        Where the API is; defaults to the SDK's (its ``*_BASE_URL`` variable,
        then the provider's public endpoint).
    ``api_key_env``
        The environment variable holding the API key; defaults to
        ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY``. (``api_key`` itself is not
        a key: pass it to this function, never write it in configuration.)
    ``timeout``
        Seconds the SDK waits for a reply; defaults to the SDK's.
    ``http_retries``
        How often the SDK itself retries a failed request (default 2).
    ``answer_retries``
        How often a rejected answer is asked for again (default 2).
    ``max_tokens``
        The reply's token limit (Anthropic default 4096; OpenAI: unset).
    ``prompt_cache``
        Anthropic only: send the automatic cache marker (default true).

    Raises :class:`ProviderConfigError` whose ``key`` names the bad key.
    """
    settings = _settings(config)
    # Everything that can be refused is refused before the SDK client exists,
    # so an error never leaves a client behind unclosed.
    enabled = tuple(tools)
    turn_tools(enabled)
    for tool in enabled:
        if not _TOOL_NAME.fullmatch(tool.name):
            raise ProviderConfigError(
                f"every tool is sent to {settings.provider}, whose API takes a tool name of "
                "letters, digits, '_' and '-' only, 1 to 64 of them",
                tool=tool.name,
            )
    adapter: ProviderAdapter
    if settings.provider == "anthropic":
        from coordinator.adapters.providers._anthropic import (  # noqa: PLC0415 - load one SDK only
            DEFAULT_MAX_TOKENS,
            AnthropicAdapter,
        )

        adapter = AnthropicAdapter(
            model=settings.model,
            api_key=api_key,
            api_key_env=settings.api_key_env,
            base_url=settings.base_url,
            max_tokens=DEFAULT_MAX_TOKENS if settings.max_tokens is None else settings.max_tokens,
            timeout=settings.timeout,
            max_retries=settings.http_retries,
            prompt_cache=True if settings.prompt_cache is None else settings.prompt_cache,
        )
    else:
        from coordinator.adapters.providers._openai import OpenAIAdapter  # noqa: PLC0415 - load one SDK only

        adapter = OpenAIAdapter(
            model=settings.model,
            api_key=api_key,
            api_key_env=settings.api_key_env,
            base_url=settings.base_url,
            max_tokens=settings.max_tokens,
            timeout=settings.timeout,
            max_retries=settings.http_retries,
        )
    return ModelInquiryBackend(adapter, tools=enabled, answer_retries=settings.answer_retries)


def _check_keys(config: Mapping[str, object]) -> None:
    for key in config:
        if key == "api_key":
            raise ProviderConfigError(
                "an API key is never configuration: put it in an environment variable "
                "and name that variable with api_key_env",
                key=key,
            )
        if key not in CONFIG_KEYS:
            raise ProviderConfigError(
                f"unknown key (known keys: {', '.join(CONFIG_KEYS)})", key=str(key)
            )
