"""ACP v1 request params, as far as we read them (unknown fields are ignored, wrong types
are -32602): the declarations. The server validates with their plain forms
(wire_plain.py, generated from these by `make generate`). Results are built as plain dicts
in server.py."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sema_rpc.protocol_wire import WireModel


class AcpParams(WireModel):
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class FsCapabilities(WireModel):
    read_text_file: bool = False
    write_text_file: bool = False


class AcpClientCapabilities(WireModel):
    fs: FsCapabilities = Field(default_factory=FsCapabilities)
    terminal: bool = False
    elicitation: dict[str, Any] | None = None
    auth: dict[str, Any] | None = None
    """`{terminal: true}`: the client runs `terminal` authentication methods."""
    meta: dict[str, Any] | None = Field(None, alias="_meta")


class InitializeRequest(AcpParams):
    protocol_version: int
    client_capabilities: AcpClientCapabilities = Field(default_factory=AcpClientCapabilities)
    client_info: dict[str, Any] | None = None


class AuthenticateRequest(AcpParams):
    method_id: str


class McpServer(WireModel):
    """stdio (`command`, `args`, `env` as `[{name, value}]`), or http/sse (`type`, `url`,
    `headers`)."""

    name: str
    type: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: list[dict[str, str]] = Field(default_factory=list)
    url: str | None = None
    headers: list[dict[str, str]] = Field(default_factory=list)


class NewSessionRequest(AcpParams):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] = Field(default_factory=list)


class LoadSessionRequest(NewSessionRequest):
    session_id: str


class ForkRequest(LoadSessionRequest):
    """`session/fork` (unstable): `messageId` (the draft's) forks just before that user
    message; `_meta.jetbrains.air.fork` `{version: 1, messageId}` keeps that message's
    turn. `cwd` and `mcpServers` as for `session/load`."""

    message_id: str | None = None


class RewindRequest(AcpParams):
    """`_session/rewind`: back to just before a user message (`messageId`), restoring
    `mode` (`files` / `code`, `conversation`, `both`), or `redo` the last rewind."""

    session_id: str
    message_id: str | None = None
    mode: str = "both"
    redo: bool = False
    force: bool = False


class SessionRequest(AcpParams):
    session_id: str


class ListSessionsRequest(AcpParams):
    cwd: str | None = None
    cursor: str | None = None


class PromptRequest(AcpParams):
    session_id: str
    prompt: list[dict[str, Any]]


class SteeringRequest(PromptRequest):
    """`_session/steering`: `prompt` as `session/prompt` takes it; `_meta.steering.idleBehavior`
    `"promptRequired"` asks for that outcome instead of a new turn when none runs."""


class SetModeRequest(AcpParams):
    session_id: str
    mode_id: str


class SetConfigOptionRequest(AcpParams):
    session_id: str
    config_id: str
    value: str | bool


class CancelRequest(AcpParams):
    request_id: str | int
