"""The authentication methods `initialize` advertises, and `authenticate`.

There is nothing to log into over the wire: keys come from the environment,
`$SEMA_ROOT/models.json`, or what `sema-rpc login` stored (`core.credentials`).
`environment` (an `agent` method) is always advertised: `authenticate` with it checks that
a model is usable. `login` (a `terminal` method: the client runs this agent's own command
with `args` instead of its usual ones, in a terminal, for the user to type a key) is
advertised only to a client that declares terminal authentication
(`clientCapabilities.auth.terminal`, or the older `_meta["terminal-auth"]`, which also
gets the command line to run in `_meta`). `authenticate` with `login` afterwards says
whether a key is now usable (the stored file is read again).
"""

from __future__ import annotations

import sys
from typing import Any

ENVIRONMENT_METHOD: dict[str, Any] = {
    "id": "environment",
    "name": "API key from the environment or models.json",
    "description": "sema-rpc reads ANTHROPIC_API_KEY / OPENAI_API_KEY (or ANTHROPIC_AUTH_TOKEN) "
    "from the environment it was started with, profiles with their own apiKey from "
    "$SEMA_ROOT/models.json, and keys stored by `sema-rpc login`. Set one and restart the "
    "agent; authenticate only checks.",
}
LOGIN_ARGS = ["login"]
LOGIN_METHOD: dict[str, Any] = {
    "id": "login",
    "name": "Log in with an API key",
    "description": "Runs `sema-rpc login` in a terminal: pick Anthropic, OpenAI or an "
    "OpenAI-compatible endpoint and type its key (checked, then stored for this user).",
    "type": "terminal",
    "args": LOGIN_ARGS,
}
METHOD_IDS = (ENVIRONMENT_METHOD["id"], LOGIN_METHOD["id"])


def auth_methods(auth: dict[str, Any] | None, meta: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The methods for a client that declared `auth` / `_meta` in its capabilities."""
    legacy = isinstance(meta, dict) and meta.get("terminal-auth") is True
    if not (isinstance(auth, dict) and auth.get("terminal") is True) and not legacy:
        return [ENVIRONMENT_METHOD]
    login = dict(LOGIN_METHOD)
    if legacy:
        login["_meta"] = {
            "terminal-auth": {
                "command": sys.executable,
                "args": ["-m", "sema_rpc", *LOGIN_ARGS],
                "label": "sema-rpc login",
            }
        }
    return [ENVIRONMENT_METHOD, login]


async def usable_model() -> bool:
    """Whether a model is configured now (the environment, models.json, stored keys)."""
    import asyncio  # here: `initialize` (auth_methods) is answered before the event loop

    from sema_rpc.core.config import resolve_model

    return await asyncio.to_thread(resolve_model, None) is not None
