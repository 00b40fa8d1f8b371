"""The ACP dialect's request params as plain classes: what the ACP server validates
requests with.

Generated from the pydantic declarations in sema_rpc/acp/wire.py by `make generate`
(python -m sema_rpc.plain_gen); do not edit by hand. What a plain class is and how it
follows its declaration: sema_rpc/plain_model.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from sema_rpc.plain_checks import (
    check_bool,
    check_dict,
    check_int,
    check_list,
    check_model,
    check_optional,
    check_optional_str,
    check_str,
    check_union,
)
from sema_rpc.plain_model import Field
from sema_rpc.protocol_plain.wire import WireModel


class AcpClientCapabilities(WireModel):
    __plain_source__ = "sema_rpc.acp.wire:AcpClientCapabilities"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("fs", check_model(lambda: FsCapabilities), factory=lambda: FsCapabilities()),
        Field("terminal", check_bool, default=False, scalar=True),
        Field("elicitation", check_optional(check_dict()), default=None),
        Field("auth", check_optional(check_dict()), default=None),
        Field("meta", check_optional(check_dict()), alias="_meta", default=None),
    )
    fs: FsCapabilities
    terminal: bool
    elicitation: dict[str, Any] | None
    auth: dict[str, Any] | None
    meta: dict[str, Any] | None

    if TYPE_CHECKING:

        def __init__(self, *, fs: Any = ..., terminal: Any = ..., elicitation: Any = ..., auth: Any = ..., meta: Any = ...) -> None: ...  # fmt: skip


class AcpParams(WireModel):
    __plain_source__ = "sema_rpc.acp.wire:AcpParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("meta", check_optional(check_dict()), alias="_meta", default=None),
    )
    meta: dict[str, Any] | None

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ...) -> None: ...  # fmt: skip


class AuthenticateRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:AuthenticateRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("method_id", check_str, alias="methodId", scalar=True),
    )
    method_id: str

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., method_id: Any) -> None: ...  # fmt: skip


class CancelRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:CancelRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("request_id", check_union(check_str, check_int), alias="requestId", scalar=True),
    )
    request_id: str | int

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., request_id: Any) -> None: ...  # fmt: skip


class NewSessionRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:NewSessionRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("cwd", check_str, scalar=True),
        Field(
            "mcp_servers",
            check_list(check_model(lambda: McpServer)),
            alias="mcpServers",
            factory=list,
        ),
        Field(
            "additional_directories",
            check_list(check_str),
            alias="additionalDirectories",
            factory=list,
        ),
    )
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str]

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., cwd: Any, mcp_servers: Any = ..., additional_directories: Any = ...) -> None: ...  # fmt: skip


class LoadSessionRequest(NewSessionRequest):
    __plain_source__ = "sema_rpc.acp.wire:LoadSessionRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *NewSessionRequest.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
    )
    session_id: str

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., cwd: Any, mcp_servers: Any = ..., additional_directories: Any = ..., session_id: Any) -> None: ...  # fmt: skip


class ForkRequest(LoadSessionRequest):
    __plain_source__ = "sema_rpc.acp.wire:ForkRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *LoadSessionRequest.__plain_fields__,
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., cwd: Any, mcp_servers: Any = ..., additional_directories: Any = ..., session_id: Any, message_id: Any = ...) -> None: ...  # fmt: skip


class FsCapabilities(WireModel):
    __plain_source__ = "sema_rpc.acp.wire:FsCapabilities"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("read_text_file", check_bool, alias="readTextFile", default=False, scalar=True),
        Field("write_text_file", check_bool, alias="writeTextFile", default=False, scalar=True),
    )
    read_text_file: bool
    write_text_file: bool

    if TYPE_CHECKING:

        def __init__(self, *, read_text_file: Any = ..., write_text_file: Any = ...) -> None: ...  # fmt: skip


class InitializeRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:InitializeRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("protocol_version", check_int, alias="protocolVersion", scalar=True),
        Field(
            "client_capabilities",
            check_model(lambda: AcpClientCapabilities),
            alias="clientCapabilities",
            factory=lambda: AcpClientCapabilities(),
        ),
        Field("client_info", check_optional(check_dict()), alias="clientInfo", default=None),
    )
    protocol_version: int
    client_capabilities: AcpClientCapabilities
    client_info: dict[str, Any] | None

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., protocol_version: Any, client_capabilities: Any = ..., client_info: Any = ...) -> None: ...  # fmt: skip


class ListSessionsRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:ListSessionsRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("cwd", check_optional_str, default=None, scalar=True),
        Field("cursor", check_optional_str, default=None, scalar=True),
    )
    cwd: str | None
    cursor: str | None

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., cwd: Any = ..., cursor: Any = ...) -> None: ...  # fmt: skip


class McpServer(WireModel):
    __plain_source__ = "sema_rpc.acp.wire:McpServer"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("type", check_optional_str, default=None, scalar=True),
        Field("command", check_optional_str, default=None, scalar=True),
        Field("args", check_list(check_str), factory=list),
        Field("env", check_list(check_dict(check_str)), factory=list),
        Field("url", check_optional_str, default=None, scalar=True),
        Field("headers", check_list(check_dict(check_str)), factory=list),
    )
    name: str
    type: str | None
    command: str | None
    args: list[str]
    env: list[dict[str, str]]
    url: str | None
    headers: list[dict[str, str]]

    if TYPE_CHECKING:

        def __init__(self, *, name: Any, type: Any = ..., command: Any = ..., args: Any = ..., env: Any = ..., url: Any = ..., headers: Any = ...) -> None: ...  # fmt: skip


class PromptRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:PromptRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("prompt", check_list(check_dict())),
    )
    session_id: str
    prompt: list[dict[str, Any]]

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any, prompt: Any) -> None: ...  # fmt: skip


class RewindRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:RewindRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
        Field("mode", check_str, default="both", scalar=True),
        Field("redo", check_bool, default=False, scalar=True),
        Field("force", check_bool, default=False, scalar=True),
    )
    session_id: str
    message_id: str | None
    mode: str
    redo: bool
    force: bool

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any, message_id: Any = ..., mode: Any = ..., redo: Any = ..., force: Any = ...) -> None: ...  # fmt: skip


class SessionRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:SessionRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
    )
    session_id: str

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any) -> None: ...  # fmt: skip


class SetConfigOptionRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:SetConfigOptionRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("config_id", check_str, alias="configId", scalar=True),
        Field("value", check_union(check_str, check_bool), scalar=True),
    )
    session_id: str
    config_id: str
    value: str | bool

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any, config_id: Any, value: Any) -> None: ...  # fmt: skip


class SetModeRequest(AcpParams):
    __plain_source__ = "sema_rpc.acp.wire:SetModeRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        *AcpParams.__plain_fields__,
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("mode_id", check_str, alias="modeId", scalar=True),
    )
    session_id: str
    mode_id: str

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any, mode_id: Any) -> None: ...  # fmt: skip


class SteeringRequest(PromptRequest):
    __plain_source__ = "sema_rpc.acp.wire:SteeringRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (*PromptRequest.__plain_fields__,)

    if TYPE_CHECKING:

        def __init__(self, *, meta: Any = ..., session_id: Any, prompt: Any) -> None: ...  # fmt: skip


__all__ = [
    "AcpClientCapabilities",
    "AcpParams",
    "AuthenticateRequest",
    "CancelRequest",
    "ForkRequest",
    "FsCapabilities",
    "InitializeRequest",
    "ListSessionsRequest",
    "LoadSessionRequest",
    "McpServer",
    "NewSessionRequest",
    "PromptRequest",
    "RewindRequest",
    "SessionRequest",
    "SetConfigOptionRequest",
    "SetModeRequest",
    "SteeringRequest",
]
