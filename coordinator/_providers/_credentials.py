"""Where an adapter's API key comes from.

Passed explicitly, or read from an environment variable (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY`` or one the configuration names). The SDKs' own fallbacks
(profiles, workload identity) are not consulted: the key is always handed to
the SDK explicitly, so what authenticates a request is never a surprise. A
missing key is reported by the variable's name, never with a value.
"""

from __future__ import annotations

import os

from coordinator._providers._errors import ProviderConfigError

__all__ = ["resolve_api_key"]


def resolve_api_key(api_key: str | None, env_var: str) -> str:
    """``api_key`` if given, else the value of ``env_var``."""
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key:
            raise ProviderConfigError("must be a non-empty string", key="api_key")
        return api_key
    from_env = os.environ.get(env_var)
    if not from_env:
        raise ProviderConfigError(
            f"no API key: pass api_key or set the environment variable {env_var}"
        )
    return from_env
