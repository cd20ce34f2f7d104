"""Where an adapter's API key comes from.

Passed explicitly, or read from an environment variable (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY`` or one the configuration names). The SDKs' own fallbacks
(profiles, workload identity) are not consulted: the key is always handed to
the SDK explicitly, so what authenticates a request is never a surprise. A
missing key is reported by the variable's name, never with a value, and not
even the name when it does not look like one: a key pasted where the
variable's name goes (``--api-key-env sk-...``) must not be echoed.
"""

from __future__ import annotations

import os
import re

from coordinator.adapters.providers._errors import ProviderConfigError

__all__ = ["resolve_api_key"]

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: Longer names in mixed case are more like a random key than a variable.
_MIXED_CASE_LIMIT = 16


def _looks_like_a_variable(name: str) -> bool:
    """Whether ``name`` can be shown: a variable name, and not a key's random characters."""
    if not _VARIABLE_NAME.fullmatch(name):
        return False  # keys have dashes (sk-...); variable names do not
    return name.isupper() or name.islower() or len(name) <= _MIXED_CASE_LIMIT


def resolve_api_key(api_key: str | None, env_var: str) -> str:
    """``api_key`` if given, else the value of ``env_var``."""
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key:
            raise ProviderConfigError("must be a non-empty string", key="api_key")
        return api_key
    from_env = os.environ.get(env_var)
    if not from_env:
        if not _looks_like_a_variable(env_var):
            raise ProviderConfigError(
                "no API key: no environment variable has the name given, which looks like "
                "a key rather than a variable name (so it is not shown): give the name of "
                "the variable that holds the key",
                key="api_key_env",
            )
        raise ProviderConfigError(f"no API key: the environment variable {env_var} is not set")
    return from_env
