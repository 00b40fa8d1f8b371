"""What `initialize` tells an ACP client about this agent: capabilities, authentication
methods, and the extensions it speaks; and which `initialize` params are plainly valid.
Standard library only (with `core.config`), and no event loop: the front answers
`initialize` with it before pydantic loads (front.py), and a stdio server before its
event loop exists (cli.py, frames.read_first)."""

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


_FS_KEYS = frozenset({"readTextFile", "writeTextFile"})


def initialize_capabilities_plain(params: Any) -> dict[str, Any] | None:
    """`initialize`'s params checked without pydantic, for the plainly valid shapes only
    (every key a wire name `InitializeRequest` reads, every value of its exact type): the
    client's capabilities as given (wire names), for `AcpClientCapabilities`. None for
    anything else, which the server's models then validate (and refuse with their usual
    -32602 data, or accept)."""
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientCapabilities",
        "clientInfo",
        "_meta",
    }:
        return None
    if type(params.get("protocolVersion")) is not int:
        return None
    for key in ("clientInfo", "_meta"):
        if params.get(key) is not None and type(params[key]) is not dict:
            return None
    caps = params.get("clientCapabilities", {})
    if type(caps) is not dict or not caps.keys() <= {
        "fs",
        "terminal",
        "elicitation",
        "auth",
        "_meta",
    }:
        return None
    for key in ("auth", "_meta"):
        if caps.get(key) is not None and type(caps[key]) is not dict:
            return None
    fs = caps.get("fs", {})
    if type(fs) is not dict or not fs.keys() <= _FS_KEYS:
        return None
    if any(type(value) is not bool for value in fs.values()):
        return None
    if "terminal" in caps and type(caps["terminal"]) is not bool:
        return None
    if caps.get("elicitation") is not None and type(caps["elicitation"]) is not dict:
        return None
    return caps


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


def initialize_answer(params: Any) -> dict[str, Any] | None:
    """`initialize`'s result for `params` when they are plainly valid; None for any
    other (frames.read_first leaves that one to the server)."""
    caps = initialize_capabilities_plain(params)
    return None if caps is None else initialize_result(caps)
