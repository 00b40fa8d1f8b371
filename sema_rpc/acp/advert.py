"""What `initialize` tells an ACP client about this agent: capabilities, authentication
methods, and the extensions it speaks. Standard library only (with `core.config`): the
front answers `initialize` with it before pydantic loads (front.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sema_rpc
from sema_rpc.acp.auth import auth_methods

ACP_PROTOCOL_VERSION = 1

STEERING_METHOD = "_session/steering"
"""The steering extension as claude-agent-acp and codex-acp speak it (protocol/acp.md)."""

STEERING_ADVERT = {"supported": True, "idlePromptRequired": True}
"""`idlePromptRequired`: `_meta.steering.idleBehavior: "promptRequired"` is honoured."""

REWIND_METHOD = "_session/rewind"
"""Ours (protocol/acp.md): the native `session/rewind` for ACP clients."""

FORK_ADVERT = {"version": 1, "inclusive": True}
"""`agentCapabilities._meta.jetbrains.air.fork`: JetBrains' fork point is honoured."""


def default_model_takes_images() -> bool:
    """`promptCapabilities.image`: whether the model a new session starts with takes
    images (a profile's `images`, or what its model id implies). Capabilities are fixed
    at `initialize`, so this is the promise for `session/new`; after a model switch an
    image the new model cannot take is refused (-32602), see protocol/acp.md. Reads
    models.json and the stored keys (core.config: standard library only)."""
    from sema_rpc.core.config import resolve_model
    from sema_rpc.core.errors import DomainError

    try:
        profile = resolve_model(None)
    except DomainError:
        return False
    return bool(profile is not None and profile.images)


def initialize_result(capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`initialize`'s result for a client with `capabilities` (wire names), whatever
    version it asked for: ACP has the agent answer with the version it speaks."""
    caps = capabilities or {}
    return {
        "protocolVersion": ACP_PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {
                "image": default_model_takes_images(),
                "audio": False,
                "embeddedContext": True,
            },
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
            },
            "_meta": {
                "jetbrains": {"air": {"fork": FORK_ADVERT}},
                "sema": {"rewind": {"method": REWIND_METHOD}},
            },
        },
        "authMethods": auth_methods(caps.get("auth"), caps.get("_meta")),
        "agentInfo": {"name": "sema-rpc", "title": "sema", "version": sema_rpc.__version__},
        # Where claude-agent-acp and codex-acp advertise `_session/steering`.
        "_meta": {"steering": STEERING_ADVERT},
    }
