# Scripts the tour runs as commands, not a package to import.
# ruff: noqa: INP001
"""deploy: pretend to deploy, with a token only a person may give.

Asks ``token`` (a secret: the person types it, nothing shows, nothing is
recorded). The token is checked against the SHA-256 fingerprint in the tool's
options, so the tour can show the tool received exactly what was typed; the
token itself is never printed, logged or written anywhere.
"""

from __future__ import annotations

import hashlib

from protocol import ask, fail, read_request, succeed

request = read_request()
arguments, answers, options = request["arguments"], request["answers"], request["options"]
environment = arguments["environment"]
if "token" not in answers:
    ask("token", f"The deploy token for {environment}?", {"type": "secret"})
token = answers["token"]
fingerprint = hashlib.sha256(token.encode()).hexdigest()
if fingerprint != options.get("token_sha256"):
    fail(f"The token ({len(token)} characters) is not the {environment} token; nothing deployed.")
succeed(
    f"Deployed to {environment}. The token ({len(token)} characters) matched the expected "
    "fingerprint."
)
