"""The wire's models as plain classes: what the running server and clients build.

Generated from the pydantic declarations in sema_rpc/protocol_*.py (the schema's source of
truth) by `make generate` (python -m sema_rpc.plain_gen); do not edit by hand. What a plain
class is and how it follows its declaration: sema_rpc/plain_model.py. Import the models from
sema_rpc.protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sema_rpc.plain_checks import (
    check_any,
    check_bool,
    check_dict,
    check_float,
    check_int,
    check_int_range,
    check_list,
    check_literal,
    check_model,
    check_optional,
    check_optional_str,
    check_str,
    check_tagged,
    check_union,
    never,
)
from sema_rpc.plain_model import Field, PlainModel

if TYPE_CHECKING:
    from sema_rpc.protocol_wire import McpServerParams


class WireModel(PlainModel):
    __plain_source__ = "sema_rpc.protocol_wire:WireModel"
    __plain_empty_list_is_empty__ = True
    __plain_fields__: ClassVar[tuple[Field, ...]] = ()

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class AskQuestion(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:AskQuestion"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("question", check_str, scalar=True),
        Field("header", check_str, scalar=True),
        Field("options", check_list(check_model(lambda: AskQuestionOption))),
        Field("multi_select", check_bool, alias="multiSelect", default=False, scalar=True),
    )
    question: str
    header: str
    options: list[AskQuestionOption]
    multi_select: bool

    if TYPE_CHECKING:

        def __init__(
            self, *, question: Any, header: Any, options: Any, multi_select: Any = ...
        ) -> None: ...


class AskQuestionOption(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:AskQuestionOption"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("label", check_str, scalar=True),
        Field("description", check_str, default="", scalar=True),
    )
    label: str
    description: str

    if TYPE_CHECKING:

        def __init__(self, *, label: Any, description: Any = ...) -> None: ...


class EventParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_events:EventParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
    )
    event: ClassVar[str] = ""
    session_id: str
    agent_id: str
    seq: int

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ...
        ) -> None: ...


class ServerRequestParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:ServerRequestParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("request_id", check_str, alias="requestId", default="", scalar=True),
    )
    request_id: str

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            request_id: Any = ...,
        ) -> None: ...


class AskQuestionRequestParams(ServerRequestParams):
    __plain_source__ = "sema_rpc.protocol_tools:AskQuestionRequestParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("request_id", check_str, alias="requestId", default="", scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("questions", check_list(check_model(lambda: AskQuestion))),
    )
    event: ClassVar[str] = "ask:question:request"
    tool_call_id: str
    questions: list[AskQuestion]

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            request_id: Any = ...,
            tool_call_id: Any,
            questions: Any,
        ) -> None: ...


class AskQuestionResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:AskQuestionResult"
    __plain_fast__ = False  # a validator of its own: the declaration's
    __plain_fields__: ClassVar[tuple[Field, ...]] = (Field("answers", check_dict(check_str)),)
    answers: dict[str, str]

    if TYPE_CHECKING:

        def __init__(self, *, answers: Any) -> None: ...


class ClientCapabilities(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ClientCapabilities"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("permissions", check_bool, default=False, scalar=True),
        Field("ask_question", check_bool, alias="askQuestion", default=False, scalar=True),
        Field("plan_exit", check_bool, alias="planExit", default=False, scalar=True),
    )
    permissions: bool
    ask_question: bool
    plan_exit: bool

    if TYPE_CHECKING:

        def __init__(
            self, *, permissions: Any = ..., ask_question: Any = ..., plan_exit: Any = ...
        ) -> None: ...


class ClientInfo(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ClientInfo"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("version", check_optional_str, default=None, scalar=True),
    )
    name: str
    version: str | None

    if TYPE_CHECKING:

        def __init__(self, *, name: Any, version: Any = ...) -> None: ...


class CommandListItem(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:CommandListItem"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("description", check_str, default="", scalar=True),
        Field("argument_hint", check_optional_str, alias="argumentHint", default=None, scalar=True),
        Field("source", check_literal("project", "user"), scalar=True),
    )
    name: str
    description: str
    argument_hint: str | None
    source: Literal["project", "user"]

    if TYPE_CHECKING:

        def __init__(
            self, *, name: Any, description: Any = ..., argument_hint: Any = ..., source: Any
        ) -> None: ...


class CommandListParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:CommandListParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("working_dir", check_str, alias="workingDir", scalar=True),
    )
    working_dir: str

    if TYPE_CHECKING:

        def __init__(self, *, working_dir: Any) -> None: ...


class CommandListResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:CommandListResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("commands", check_list(check_model(lambda: CommandListItem))),
    )
    commands: list[CommandListItem]

    if TYPE_CHECKING:

        def __init__(self, *, commands: Any) -> None: ...


class CompactFigures(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:CompactFigures"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("strategy", check_literal("summary", "truncate", "none"), scalar=True),
        Field("token_before", check_int, alias="tokenBefore", scalar=True),
        Field("token_compact", check_int, alias="tokenCompact", scalar=True),
        Field("compact_rate", check_float, alias="compactRate", scalar=True),
        Field("err_msg", check_optional_str, alias="errMsg", default=None, scalar=True),
    )
    strategy: Literal["summary", "truncate", "none"]
    token_before: int
    token_compact: int
    compact_rate: float
    err_msg: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            strategy: Any,
            token_before: Any,
            token_compact: Any,
            compact_rate: Any,
            err_msg: Any = ...,
        ) -> None: ...


class CompactExecParams(EventParams, CompactFigures):
    __plain_source__ = "sema_rpc.protocol_sessions:CompactExecParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("strategy", check_literal("summary", "truncate", "none"), scalar=True),
        Field("token_before", check_int, alias="tokenBefore", scalar=True),
        Field("token_compact", check_int, alias="tokenCompact", scalar=True),
        Field("compact_rate", check_float, alias="compactRate", scalar=True),
        Field("err_msg", check_optional_str, alias="errMsg", default=None, scalar=True),
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("trigger", check_literal("auto", "manual", "overflow"), default="auto", scalar=True),
    )
    event: ClassVar[str] = "compact:exec"
    trigger: Literal["auto", "manual", "overflow"]

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            strategy: Any,
            token_before: Any,
            token_compact: Any,
            compact_rate: Any,
            err_msg: Any = ...,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            trigger: Any = ...,
        ) -> None: ...


class ConfigNoModelsParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:ConfigNoModelsParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("message", check_str, scalar=True),
        Field("suggestion", check_str, scalar=True),
    )
    event: ClassVar[str] = "config:no_models"
    message: str
    suggestion: str

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            message: Any,
            suggestion: Any,
        ) -> None: ...


class _CarriesTotals(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:_CarriesTotals"
    __plain_fields__: ClassVar[tuple[Field, ...]] = ()

    def wire(self) -> dict[str, Any]:
        data = super().wire()
        for key in ("turn", "session"):
            totals = getattr(self, key, None)
            if isinstance(totals, UsageTotals) and totals.cost_usd is None:
                data[key]["costUsd"] = None
        return data


class ConversationUsageParams(_CarriesTotals, EventParams):
    __plain_source__ = "sema_rpc.protocol_events:ConversationUsageParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("usage", check_model(lambda: TokenUsage)),
        Field("turn", check_optional(check_model(lambda: UsageTotals)), default=None),
        Field("session", check_optional(check_model(lambda: UsageTotals)), default=None),
    )
    event: ClassVar[str] = "conversation:usage"
    usage: TokenUsage
    turn: UsageTotals | None
    session: UsageTotals | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            usage: Any,
            turn: Any = ...,
            session: Any = ...,
        ) -> None: ...


class EmptyParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:EmptyParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = ()


class EmptyResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:EmptyResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = ()


class FileReference(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:FileReference"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("type", check_literal("file", "dir"), scalar=True),
        Field("name", check_str, scalar=True),
        Field("content", check_str, default="", scalar=True),
        Field("error", check_optional_str, default=None, scalar=True),
    )
    type: Literal["file", "dir"]
    name: str
    content: str
    error: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, type: Any, name: Any, content: Any = ..., error: Any = ...
        ) -> None: ...


class FileReferenceParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:FileReferenceParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("references", check_list(check_model(lambda: FileReference))),
    )
    event: ClassVar[str] = "file:reference"
    references: list[FileReference]

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ..., references: Any
        ) -> None: ...


class ImageInputBlock(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ImageInputBlock"
    __plain_fast__ = False  # a validator of its own: the declaration's
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("type", check_literal("image"), scalar=True),
        Field("data", check_optional_str, default=None, scalar=True),
        Field("media_type", check_optional_str, alias="mediaType", default=None, scalar=True),
        Field("path", check_optional_str, default=None, scalar=True),
    )
    type: Literal["image"]
    data: str | None
    media_type: str | None
    path: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, type: Any, data: Any = ..., media_type: Any = ..., path: Any = ...
        ) -> None: ...


class InitializeParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:InitializeParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("protocol_version", check_int, alias="protocolVersion", default=1, scalar=True),
        Field(
            "client_info",
            check_optional(check_model(lambda: ClientInfo)),
            alias="clientInfo",
            default=None,
        ),
        Field(
            "capabilities",
            check_model(lambda: ClientCapabilities),
            factory=lambda: ClientCapabilities(),
        ),
        Field("token", check_optional_str, default=None, scalar=True),
    )
    protocol_version: int
    client_info: ClientInfo | None
    capabilities: ClientCapabilities
    token: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            protocol_version: Any = ...,
            client_info: Any = ...,
            capabilities: Any = ...,
            token: Any = ...,
        ) -> None: ...


class InitializeResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:InitializeResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("protocol_version", check_int, alias="protocolVersion", scalar=True),
        Field("server_info", check_model(lambda: ServerInfo), alias="serverInfo"),
        Field("capabilities", check_model(lambda: ServerCapabilities)),
    )
    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities

    if TYPE_CHECKING:

        def __init__(
            self, *, protocol_version: Any, server_info: Any, capabilities: Any
        ) -> None: ...


class McpServerStatus(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:McpServerStatus"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("state", check_literal("connected", "failed", "stopped", "untrusted"), scalar=True),
        Field("error", check_optional_str, default=None, scalar=True),
        Field("tools", check_list(check_str), factory=list),
        Field("source", check_optional_str, default=None, scalar=True),
    )
    name: str
    state: Literal["connected", "failed", "stopped", "untrusted"]
    error: str | None
    tools: list[str]
    source: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, name: Any, state: Any, error: Any = ..., tools: Any = ..., source: Any = ...
        ) -> None: ...


class MessageCompleteParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:MessageCompleteParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("reasoning", check_str, default="", scalar=True),
        Field("content", check_str, default="", scalar=True),
        Field("has_tool_calls", check_bool, alias="hasToolCalls", default=False, scalar=True),
        Field(
            "tool_calls",
            check_list(check_model(lambda: ToolCallSummary)),
            alias="toolCalls",
            factory=list,
        ),
        Field("stop_reason", check_optional_str, alias="stopReason", default=None, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "message:complete"
    reasoning: str
    content: str
    has_tool_calls: bool
    tool_calls: list[ToolCallSummary]
    stop_reason: str | None
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            reasoning: Any = ...,
            content: Any = ...,
            has_tool_calls: Any = ...,
            tool_calls: Any = ...,
            stop_reason: Any = ...,
            message_id: Any = ...,
        ) -> None: ...


class ModeUpdateEventParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_settings:ModeUpdateEventParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("mode", check_literal("Agent", "Plan"), scalar=True),
    )
    event: ClassVar[str] = "mode:update"
    mode: Literal["Agent", "Plan"]

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ..., mode: Any
        ) -> None: ...


class ModeUpdateParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModeUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("mode", check_literal("Agent", "Plan"), scalar=True),
    )
    session_id: str
    mode: Literal["Agent", "Plan"]

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, mode: Any) -> None: ...


class ModeUpdateResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModeUpdateResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("mode", check_literal("Agent", "Plan"), scalar=True),
    )
    mode: Literal["Agent", "Plan"]

    if TYPE_CHECKING:

        def __init__(self, *, mode: Any) -> None: ...


class ModelInfo(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModelInfo"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("provider", check_str, scalar=True),
        Field("model", check_str, scalar=True),
        Field("context_length", check_int, alias="contextLength", scalar=True),
        Field("images", check_bool, scalar=True),
        Field("thinking", check_bool, scalar=True),
        Field("default", check_bool, scalar=True),
        Field("price", check_optional(check_model(lambda: ModelPrice)), default=None),
    )
    name: str
    provider: str
    model: str
    context_length: int
    images: bool
    thinking: bool
    default: bool
    price: ModelPrice | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            name: Any,
            provider: Any,
            model: Any,
            context_length: Any,
            images: Any,
            thinking: Any,
            default: Any,
            price: Any = ...,
        ) -> None: ...


class ModelListParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModelListParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_optional_str, alias="sessionId", default=None, scalar=True),
    )
    session_id: str | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any = ...) -> None: ...


class ModelListResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModelListResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("models", check_list(check_model(lambda: ModelInfo))),
        Field("current", check_optional_str, default=None, scalar=True),
    )
    models: list[ModelInfo]
    current: str | None

    if TYPE_CHECKING:

        def __init__(self, *, models: Any, current: Any = ...) -> None: ...


class ModelPrice(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:ModelPrice"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("input", check_float, scalar=True),
        Field("output", check_float, scalar=True),
        Field("cache_read", check_float, alias="cacheRead", scalar=True),
        Field("cache_write", check_float, alias="cacheWrite", scalar=True),
    )
    input: float
    output: float
    cache_read: float
    cache_write: float

    if TYPE_CHECKING:

        def __init__(
            self, *, input: Any, output: Any, cache_read: Any, cache_write: Any
        ) -> None: ...


class ModelUpdateParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_settings:ModelUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("model", check_str, scalar=True),
        Field("provider", check_str, scalar=True),
        Field("model_name", check_str, alias="modelName", scalar=True),
        Field("context_length", check_int, alias="contextLength", scalar=True),
        Field("images", check_bool, scalar=True),
        Field("thinking", check_bool, scalar=True),
    )
    event: ClassVar[str] = "model:update"
    model: str
    provider: str
    model_name: str
    context_length: int
    images: bool
    thinking: bool

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            model: Any,
            provider: Any,
            model_name: Any,
            context_length: Any,
            images: Any,
            thinking: Any,
        ) -> None: ...


class PendingRequest(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:PendingRequest"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("method", check_str, scalar=True),
        Field("params", check_dict()),
    )
    method: str
    params: dict[str, Any]

    if TYPE_CHECKING:

        def __init__(self, *, method: Any, params: Any) -> None: ...


class PermissionModeUpdateParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:PermissionModeUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            scalar=True,
        ),
    )
    session_id: str
    permission_mode: Literal["default", "acceptEdits", "bypass"]

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, permission_mode: Any) -> None: ...


class PermissionModeUpdateResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:PermissionModeUpdateResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            scalar=True,
        ),
    )
    permission_mode: Literal["default", "acceptEdits", "bypass"]

    if TYPE_CHECKING:

        def __init__(self, *, permission_mode: Any) -> None: ...


class PermissionRequestParams(ServerRequestParams):
    __plain_source__ = "sema_rpc.protocol_tools:PermissionRequestParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("request_id", check_str, alias="requestId", default="", scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("tool_name", check_str, alias="toolName", scalar=True),
        Field("title", check_str, scalar=True),
        Field("input", check_dict()),
        Field("content", check_str, scalar=True),
        Field(
            "content_kind",
            check_literal("text", "diff"),
            alias="contentKind",
            default="text",
            scalar=True,
        ),
        Field("options", check_list(check_literal("allow_once", "allow_always", "reject"))),
        Field("always_rule", check_optional_str, alias="alwaysRule", default=None, scalar=True),
    )
    event: ClassVar[str] = "tool:permission:request"
    tool_call_id: str
    tool_name: str
    title: str
    input: dict[str, Any]
    content: str
    content_kind: Literal["text", "diff"]
    options: list[Literal["allow_once", "allow_always", "reject"]]
    always_rule: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            request_id: Any = ...,
            tool_call_id: Any,
            tool_name: Any,
            title: Any,
            input: Any,
            content: Any,
            content_kind: Any = ...,
            options: Any,
            always_rule: Any = ...,
        ) -> None: ...


class PermissionResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:PermissionResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("decision", check_literal("allow_once", "allow_always", "reject"), scalar=True),
        Field("feedback", check_optional_str, default=None, scalar=True),
    )
    decision: Literal["allow_once", "allow_always", "reject"]
    feedback: str | None

    if TYPE_CHECKING:

        def __init__(self, *, decision: Any, feedback: Any = ...) -> None: ...


class PlanExitRequestParams(ServerRequestParams):
    __plain_source__ = "sema_rpc.protocol_tools:PlanExitRequestParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("request_id", check_str, alias="requestId", default="", scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("plan_file_path", check_str, alias="planFilePath", scalar=True),
        Field("plan_content", check_str, alias="planContent", scalar=True),
        Field(
            "options",
            check_list(check_literal("startEditing", "clearContextAndStart", "keepPlanning")),
        ),
    )
    event: ClassVar[str] = "plan:exit:request"
    tool_call_id: str
    plan_file_path: str
    plan_content: str
    options: list[Literal["startEditing", "clearContextAndStart", "keepPlanning"]]

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            request_id: Any = ...,
            tool_call_id: Any,
            plan_file_path: Any,
            plan_content: Any,
            options: Any,
        ) -> None: ...


class PlanExitResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:PlanExitResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field(
            "decision",
            check_literal("startEditing", "clearContextAndStart", "keepPlanning"),
            scalar=True,
        ),
        Field("feedback", check_optional_str, default=None, scalar=True),
    )
    decision: Literal["startEditing", "clearContextAndStart", "keepPlanning"]
    feedback: str | None

    if TYPE_CHECKING:

        def __init__(self, *, decision: Any, feedback: Any = ...) -> None: ...


class RequestResolvedParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:RequestResolvedParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("request_id", check_str, alias="requestId", scalar=True),
        Field("method", check_str, scalar=True),
        Field("answered_by", check_str, alias="answeredBy", scalar=True),
        Field("outcome", check_optional_str, default=None, scalar=True),
    )
    event: ClassVar[str] = "request:resolved"
    request_id: str
    method: str
    answered_by: str
    outcome: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            request_id: Any,
            method: Any,
            answered_by: Any,
            outcome: Any = ...,
        ) -> None: ...


class ResourceInputBlock(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ResourceInputBlock"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("type", check_literal("resource"), scalar=True),
        Field("uri", check_str, scalar=True),
        Field("text", check_optional_str, default=None, scalar=True),
        Field("mime_type", check_optional_str, alias="mimeType", default=None, scalar=True),
    )
    type: Literal["resource"]
    uri: str
    text: str | None
    mime_type: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, type: Any, uri: Any, text: Any = ..., mime_type: Any = ...
        ) -> None: ...


class RewindConflict(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:RewindConflict"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("path", check_str, scalar=True),
        Field("reason", check_literal("modified", "notCaptured"), scalar=True),
    )
    path: str
    reason: Literal["modified", "notCaptured"]

    if TYPE_CHECKING:

        def __init__(self, *, path: Any, reason: Any) -> None: ...


class SandboxState(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SandboxState"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("mode", check_literal("read-only", "workspace-write", "off"), scalar=True),
        Field("network", check_bool, default=False, scalar=True),
        Field("available", check_bool, scalar=True),
        Field("reason", check_optional_str, default=None, scalar=True),
    )
    mode: Literal["read-only", "workspace-write", "off"]
    network: bool
    available: bool
    reason: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, mode: Any, network: Any = ..., available: Any, reason: Any = ...
        ) -> None: ...


class SandboxUpdateParams(EventParams, SandboxState):
    __plain_source__ = "sema_rpc.protocol_settings:SandboxUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("mode", check_literal("read-only", "workspace-write", "off"), scalar=True),
        Field("network", check_bool, default=False, scalar=True),
        Field("available", check_bool, scalar=True),
        Field("reason", check_optional_str, default=None, scalar=True),
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
    )
    event: ClassVar[str] = "sandbox:update"

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            mode: Any,
            network: Any = ...,
            available: Any,
            reason: Any = ...,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
        ) -> None: ...


class ServerCapabilities(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ServerCapabilities"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("methods", check_list(check_str)),
        Field("notifications", check_list(check_str)),
        Field("server_requests", check_list(check_str), alias="serverRequests"),
        Field(
            "prompt_delivery",
            check_list(check_str),
            alias="promptDelivery",
            factory=lambda: ["followUp", "steer"],
        ),
    )
    methods: list[str]
    notifications: list[str]
    server_requests: list[str]
    prompt_delivery: list[str]

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            methods: Any,
            notifications: Any,
            server_requests: Any,
            prompt_delivery: Any = ...,
        ) -> None: ...


class ServerInfo(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:ServerInfo"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, default="sema-rpc", scalar=True),
        Field("version", check_str, scalar=True),
    )
    name: str
    version: str

    if TYPE_CHECKING:

        def __init__(self, *, name: Any = ..., version: Any) -> None: ...


class SessionAttachParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionAttachParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("after_seq", never, alias="afterSeq", default=None, scalar=True),
    )
    session_id: str
    after_seq: int | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, after_seq: Any = ...) -> None: ...


class SessionAttachResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionAttachResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("state", check_literal("idle", "processing"), scalar=True),
        Field("queued_prompts", check_int, alias="queuedPrompts", scalar=True),
        Field(
            "pending_requests",
            check_list(check_model(lambda: PendingRequest)),
            alias="pendingRequests",
        ),
        Field("last_seq", check_int, alias="lastSeq", scalar=True),
        Field("replayed", check_int, scalar=True),
        Field("truncated", check_bool, scalar=True),
        Field("working_dir", check_str, alias="workingDir", scalar=True),
        Field("mode", check_str, scalar=True),
        Field("permission_mode", check_str, alias="permissionMode", scalar=True),
        Field("model", check_optional_str, default=None, scalar=True),
    )
    session_id: str
    state: Literal["idle", "processing"]
    queued_prompts: int
    pending_requests: list[PendingRequest]
    last_seq: int
    replayed: int
    truncated: bool
    working_dir: str
    mode: str
    permission_mode: str
    model: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any,
            state: Any,
            queued_prompts: Any,
            pending_requests: Any,
            last_seq: Any,
            replayed: Any,
            truncated: Any,
            working_dir: Any,
            mode: Any,
            permission_mode: Any,
            model: Any = ...,
        ) -> None: ...


class SessionClearedParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionClearedParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
    )
    event: ClassVar[str] = "session:cleared"

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ...
        ) -> None: ...


class SessionCompactParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionCompactParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("instructions", check_optional_str, default=None, scalar=True),
    )
    session_id: str
    instructions: str | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, instructions: Any = ...) -> None: ...


class SessionCompactResult(CompactFigures):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionCompactResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("strategy", check_literal("summary", "truncate", "none"), scalar=True),
        Field("token_before", check_int, alias="tokenBefore", scalar=True),
        Field("token_compact", check_int, alias="tokenCompact", scalar=True),
        Field("compact_rate", check_float, alias="compactRate", scalar=True),
        Field("err_msg", check_optional_str, alias="errMsg", default=None, scalar=True),
        Field("usage", check_model(lambda: TokenUsage)),
    )
    usage: TokenUsage

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            strategy: Any,
            token_before: Any,
            token_compact: Any,
            compact_rate: Any,
            err_msg: Any = ...,
            usage: Any,
        ) -> None: ...


class SessionCreateParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionCreateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_optional_str, alias="sessionId", default=None, scalar=True),
        Field("working_dir", check_str, alias="workingDir", scalar=True),
        Field("mode", check_literal("Agent", "Plan"), default="Agent", scalar=True),
        Field("model", check_optional_str, default=None, scalar=True),
        Field("use_tools", check_optional(check_list(check_str)), alias="useTools", default=None),
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            default="default",
            scalar=True,
        ),
        Field("mcp_servers", check_optional(check_list(never)), alias="mcpServers", default=None),
        Field("record_dir", check_optional_str, alias="recordDir", default=None, scalar=True),
        Field(
            "check_continuation", check_bool, alias="checkContinuation", default=False, scalar=True
        ),
        Field(
            "sandbox",
            check_optional(check_literal("read-only", "workspace-write", "off")),
            default=None,
            scalar=True,
        ),
        Field("sandbox_network", check_bool, alias="sandboxNetwork", default=False, scalar=True),
    )
    session_id: str | None
    working_dir: str
    mode: Literal["Agent", "Plan"]
    model: str | None
    use_tools: list[str] | None
    permission_mode: Literal["default", "acceptEdits", "bypass"]
    mcp_servers: list[McpServerParams] | None
    record_dir: str | None
    check_continuation: bool
    sandbox: Literal["read-only", "workspace-write", "off"] | None
    sandbox_network: bool

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            working_dir: Any,
            mode: Any = ...,
            model: Any = ...,
            use_tools: Any = ...,
            permission_mode: Any = ...,
            mcp_servers: Any = ...,
            record_dir: Any = ...,
            check_continuation: Any = ...,
            sandbox: Any = ...,
            sandbox_network: Any = ...,
        ) -> None: ...


class SessionDeleteResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionDeleteResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (Field("deleted", check_bool, scalar=True),)
    deleted: bool

    if TYPE_CHECKING:

        def __init__(self, *, deleted: Any) -> None: ...


class SessionDisposeResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionDisposeResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("disposed", check_bool, default=True, scalar=True),
        Field("interrupted", check_bool, default=False, scalar=True),
    )
    disposed: bool
    interrupted: bool

    if TYPE_CHECKING:

        def __init__(self, *, disposed: Any = ..., interrupted: Any = ...) -> None: ...


class SessionErrorDetail(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionErrorDetail"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("code", check_str, scalar=True),
        Field("message", check_str, scalar=True),
        Field("details", check_any, default=None),
    )
    code: str
    message: str
    details: Any

    if TYPE_CHECKING:

        def __init__(self, *, code: Any, message: Any, details: Any = ...) -> None: ...


class SessionErrorParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:SessionErrorParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field(
            "type",
            check_literal(
                "api_error",
                "fatal_error",
                "context_length_exceeded",
                "model_error",
                "compact_error",
                "mcp_error",
            ),
            scalar=True,
        ),
        Field("error", check_model(lambda: SessionErrorDetail)),
    )
    event: ClassVar[str] = "session:error"
    type: Literal[
        "api_error",
        "fatal_error",
        "context_length_exceeded",
        "model_error",
        "compact_error",
        "mcp_error",
    ]
    error: SessionErrorDetail

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            type: Any,
            error: Any,
        ) -> None: ...


class SessionForkParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionForkParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    session_id: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, message_id: Any = ...) -> None: ...


class SessionReadyParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionReadyParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("working_dir", check_str, alias="workingDir", scalar=True),
        Field("history_loaded", check_bool, alias="historyLoaded", default=False, scalar=True),
        Field("usage", check_model(lambda: TokenUsage), factory=lambda: TokenUsage()),
        Field(
            "project_input_history",
            check_list(check_str),
            alias="projectInputHistory",
            factory=list,
        ),
        Field("mode", check_literal("Agent", "Plan"), default="Agent", scalar=True),
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            default="default",
            scalar=True,
        ),
        Field("model", check_optional_str, default=None, scalar=True),
        Field(
            "mcp_servers",
            check_list(check_model(lambda: McpServerStatus)),
            alias="mcpServers",
            factory=list,
        ),
        Field("sandbox", check_optional(check_model(lambda: SandboxState)), default=None),
    )
    session_id: str
    working_dir: str
    history_loaded: bool
    usage: TokenUsage
    project_input_history: list[str]
    mode: Literal["Agent", "Plan"]
    permission_mode: Literal["default", "acceptEdits", "bypass"]
    model: str | None
    mcp_servers: list[McpServerStatus]
    sandbox: SandboxState | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any,
            working_dir: Any,
            history_loaded: Any = ...,
            usage: Any = ...,
            project_input_history: Any = ...,
            mode: Any = ...,
            permission_mode: Any = ...,
            model: Any = ...,
            mcp_servers: Any = ...,
            sandbox: Any = ...,
        ) -> None: ...


class SessionForkResult(SessionReadyParams):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionForkResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("working_dir", check_str, alias="workingDir", scalar=True),
        Field("history_loaded", check_bool, alias="historyLoaded", default=False, scalar=True),
        Field("usage", check_model(lambda: TokenUsage), factory=lambda: TokenUsage()),
        Field(
            "project_input_history",
            check_list(check_str),
            alias="projectInputHistory",
            factory=list,
        ),
        Field("mode", check_literal("Agent", "Plan"), default="Agent", scalar=True),
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            default="default",
            scalar=True,
        ),
        Field("model", check_optional_str, default=None, scalar=True),
        Field(
            "mcp_servers",
            check_list(check_model(lambda: McpServerStatus)),
            alias="mcpServers",
            factory=list,
        ),
        Field("sandbox", check_optional(check_model(lambda: SandboxState)), default=None),
        Field("input", check_optional_str, default=None, scalar=True),
    )
    input: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any,
            working_dir: Any,
            history_loaded: Any = ...,
            usage: Any = ...,
            project_input_history: Any = ...,
            mode: Any = ...,
            permission_mode: Any = ...,
            model: Any = ...,
            mcp_servers: Any = ...,
            sandbox: Any = ...,
            input: Any = ...,
        ) -> None: ...


class SessionInterruptResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionInterruptResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (Field("interrupted", check_bool, scalar=True),)
    interrupted: bool

    if TYPE_CHECKING:

        def __init__(self, *, interrupted: Any) -> None: ...


class SessionInterruptedParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:SessionInterruptedParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("content", check_str, scalar=True),
        Field("checkpoint", check_int, scalar=True),
    )
    event: ClassVar[str] = "session:interrupted"
    content: str
    checkpoint: int

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            content: Any,
            checkpoint: Any,
        ) -> None: ...


class SessionListItem(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionListItem"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("working_dir", check_optional_str, alias="workingDir", default=None, scalar=True),
        Field("title", check_optional_str, default=None, scalar=True),
        Field("updated_at", check_str, alias="updatedAt", scalar=True),
        Field("message_count", check_int, alias="messageCount", scalar=True),
        Field("live", check_optional(check_bool), default=None, scalar=True),
        Field(
            "state", check_optional(check_literal("idle", "processing")), default=None, scalar=True
        ),
    )
    session_id: str
    working_dir: str | None
    title: str | None
    updated_at: str
    message_count: int
    live: bool | None
    state: Literal["idle", "processing"] | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any,
            working_dir: Any = ...,
            title: Any = ...,
            updated_at: Any,
            message_count: Any,
            live: Any = ...,
            state: Any = ...,
        ) -> None: ...


class SessionListParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionListParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("working_dir", check_optional_str, alias="workingDir", default=None, scalar=True),
    )
    working_dir: str | None

    if TYPE_CHECKING:

        def __init__(self, *, working_dir: Any = ...) -> None: ...


class SessionListResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionListResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("sessions", check_list(check_model(lambda: SessionListItem))),
    )
    sessions: list[SessionListItem]

    if TYPE_CHECKING:

        def __init__(self, *, sessions: Any) -> None: ...


class SessionMessagesParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionMessagesParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("cursor", check_optional_str, default=None, scalar=True),
        Field("limit", check_int_range(1, 1000), default=100, scalar=True),
    )
    session_id: str
    cursor: str | None
    limit: int

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, cursor: Any = ..., limit: Any = ...) -> None: ...


class SessionMessagesResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionMessagesResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("messages", check_list(check_model(lambda: TranscriptMessage))),
        Field("next_cursor", check_optional_str, alias="nextCursor", default=None, scalar=True),
    )
    messages: list[TranscriptMessage]
    next_cursor: str | None

    if TYPE_CHECKING:

        def __init__(self, *, messages: Any, next_cursor: Any = ...) -> None: ...


class SessionPromptParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionPromptParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field(
            "input",
            check_union(
                check_str,
                check_list(
                    check_tagged(
                        "type",
                        lambda: {
                            "text": TextInputBlock,
                            "image": ImageInputBlock,
                            "resource": ResourceInputBlock,
                        },
                    )
                ),
            ),
        ),
        Field("delivery", check_literal("followUp", "steer"), default="followUp", scalar=True),
    )
    session_id: str
    input: str | list[TextInputBlock | ImageInputBlock | ResourceInputBlock]
    delivery: Literal["followUp", "steer"]

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, input: Any, delivery: Any = ...) -> None: ...


class SessionPromptResult(_CarriesTotals):
    __plain_source__ = "sema_rpc.protocol_wire:SessionPromptResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field(
            "stop_reason",
            check_literal("end_turn", "interrupted", "max_turns", "error", "command"),
            alias="stopReason",
            scalar=True,
        ),
        Field("usage", check_model(lambda: TokenUsage)),
        Field("error", check_optional(check_model(lambda: SessionErrorDetail)), default=None),
        Field("turn", check_optional(check_model(lambda: UsageTotals)), default=None),
        Field("session", check_optional(check_model(lambda: UsageTotals)), default=None),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    stop_reason: Literal["end_turn", "interrupted", "max_turns", "error", "command"]
    usage: TokenUsage
    error: SessionErrorDetail | None
    turn: UsageTotals | None
    session: UsageTotals | None
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            stop_reason: Any,
            usage: Any,
            error: Any = ...,
            turn: Any = ...,
            session: Any = ...,
            message_id: Any = ...,
        ) -> None: ...


class SessionReadyEventParams(EventParams, SessionReadyParams):
    __plain_source__ = "sema_rpc.protocol_events:SessionReadyEventParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("working_dir", check_str, alias="workingDir", scalar=True),
        Field("history_loaded", check_bool, alias="historyLoaded", default=False, scalar=True),
        Field("usage", check_model(lambda: TokenUsage), factory=lambda: TokenUsage()),
        Field(
            "project_input_history",
            check_list(check_str),
            alias="projectInputHistory",
            factory=list,
        ),
        Field("mode", check_literal("Agent", "Plan"), default="Agent", scalar=True),
        Field(
            "permission_mode",
            check_literal("default", "acceptEdits", "bypass"),
            alias="permissionMode",
            default="default",
            scalar=True,
        ),
        Field("model", check_optional_str, default=None, scalar=True),
        Field(
            "mcp_servers",
            check_list(check_model(lambda: McpServerStatus)),
            alias="mcpServers",
            factory=list,
        ),
        Field("sandbox", check_optional(check_model(lambda: SandboxState)), default=None),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
    )
    event: ClassVar[str] = "session:ready"

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            working_dir: Any,
            history_loaded: Any = ...,
            usage: Any = ...,
            project_input_history: Any = ...,
            mode: Any = ...,
            permission_mode: Any = ...,
            model: Any = ...,
            mcp_servers: Any = ...,
            sandbox: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
        ) -> None: ...


class SessionRef(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:SessionRef"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
    )
    session_id: str

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any) -> None: ...


class SessionRenameParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionRenameParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("title", check_str, scalar=True),
    )
    session_id: str
    title: str

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, title: Any) -> None: ...


class SessionRenameResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionRenameResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("title", check_optional_str, scalar=True),
    )
    title: str | None

    if TYPE_CHECKING:

        def __init__(self, *, title: Any) -> None: ...


class SessionRewindParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionRewindParams"
    __plain_fast__ = False  # a validator of its own: the declaration's
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
        Field(
            "restore", check_literal("code", "conversation", "both"), default="both", scalar=True
        ),
        Field("redo", check_bool, default=False, scalar=True),
        Field("force", check_bool, default=False, scalar=True),
    )
    session_id: str
    message_id: str | None
    restore: Literal["code", "conversation", "both"]
    redo: bool
    force: bool

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any,
            message_id: Any = ...,
            restore: Any = ...,
            redo: Any = ...,
            force: Any = ...,
        ) -> None: ...


class SessionRewindResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:SessionRewindResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("rewound", check_bool, scalar=True),
        Field("restore", check_literal("code", "conversation", "both"), scalar=True),
        Field("restored_files", check_list(check_str), alias="restoredFiles", factory=list),
        Field("conflicts", check_list(check_model(lambda: RewindConflict)), factory=list),
        Field("input", check_optional_str, default=None, scalar=True),
        Field("message_count", check_int, alias="messageCount", scalar=True),
    )
    rewound: bool
    restore: Literal["code", "conversation", "both"]
    restored_files: list[str]
    conflicts: list[RewindConflict]
    input: str | None
    message_count: int

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            rewound: Any,
            restore: Any,
            restored_files: Any = ...,
            conflicts: Any = ...,
            input: Any = ...,
            message_count: Any,
        ) -> None: ...


class SessionSetModelParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:SessionSetModelParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("model", check_str, scalar=True),
        Field("thinking", check_optional(check_bool), default=None, scalar=True),
    )
    session_id: str
    model: str
    thinking: bool | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, model: Any, thinking: Any = ...) -> None: ...


class SessionSetModelResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:SessionSetModelResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("model", check_str, scalar=True),
        Field("thinking", check_bool, scalar=True),
    )
    model: str
    thinking: bool

    if TYPE_CHECKING:

        def __init__(self, *, model: Any, thinking: Any) -> None: ...


class SessionSetSandboxParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_settings:SessionSetSandboxParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
        Field("mode", check_literal("read-only", "workspace-write", "off"), scalar=True),
        Field("network", check_optional(check_bool), default=None, scalar=True),
    )
    session_id: str
    mode: Literal["read-only", "workspace-write", "off"]
    network: bool | None

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any, mode: Any, network: Any = ...) -> None: ...


class StateUpdateParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:StateUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("state", check_literal("idle", "processing"), scalar=True),
    )
    event: ClassVar[str] = "state:update"
    state: Literal["idle", "processing"]

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ..., state: Any
        ) -> None: ...


class TaskAgentEndParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:TaskAgentEndParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("task_id", check_str, alias="taskId", scalar=True),
        Field("status", check_literal("completed", "failed", "interrupted"), scalar=True),
        Field("content", check_str, default="", scalar=True),
    )
    event: ClassVar[str] = "task:agent:end"
    task_id: str
    status: Literal["completed", "failed", "interrupted"]
    content: str

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            task_id: Any,
            status: Any,
            content: Any = ...,
        ) -> None: ...


class TaskAgentStartParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:TaskAgentStartParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("task_id", check_str, alias="taskId", scalar=True),
        Field("subagent_type", check_str, alias="subagentType", scalar=True),
        Field("description", check_str, scalar=True),
        Field("prompt", check_str, scalar=True),
    )
    event: ClassVar[str] = "task:agent:start"
    task_id: str
    subagent_type: str
    description: str
    prompt: str

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            task_id: Any,
            subagent_type: Any,
            description: Any,
            prompt: Any,
        ) -> None: ...


class TextChunkParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:TextChunkParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("delta", check_str, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "message:text:chunk"
    delta: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            delta: Any,
            message_id: Any = ...,
        ) -> None: ...


class TextInputBlock(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:TextInputBlock"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("type", check_literal("text"), scalar=True),
        Field("text", check_str, scalar=True),
    )
    type: Literal["text"]
    text: str

    if TYPE_CHECKING:

        def __init__(self, *, type: Any, text: Any) -> None: ...


class ThinkingChunkParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_events:ThinkingChunkParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("delta", check_str, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "message:thinking:chunk"
    delta: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            delta: Any,
            message_id: Any = ...,
        ) -> None: ...


class TodoItem(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:TodoItem"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("content", check_str, scalar=True),
        Field("status", check_literal("pending", "in_progress", "completed"), scalar=True),
        Field("active_form", check_str, alias="activeForm", default="", scalar=True),
    )
    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str

    if TYPE_CHECKING:

        def __init__(self, *, content: Any, status: Any, active_form: Any = ...) -> None: ...


class TodosUpdateParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:TodosUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("todos", check_list(check_model(lambda: TodoItem))),
    )
    event: ClassVar[str] = "todos:update"
    todos: list[TodoItem]

    if TYPE_CHECKING:

        def __init__(
            self, *, session_id: Any = ..., agent_id: Any = ..., seq: Any = ..., todos: Any
        ) -> None: ...


class TokenUsage(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:TokenUsage"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("use_tokens", check_int, alias="useTokens", default=0, scalar=True),
        Field("max_tokens", check_int, alias="maxTokens", default=0, scalar=True),
        Field("prompt_tokens", check_int, alias="promptTokens", default=0, scalar=True),
    )
    use_tokens: int
    max_tokens: int
    prompt_tokens: int

    if TYPE_CHECKING:

        def __init__(
            self, *, use_tokens: Any = ..., max_tokens: Any = ..., prompt_tokens: Any = ...
        ) -> None: ...


class ToolCallSummary(WireModel):
    __plain_source__ = "sema_rpc.protocol_events:ToolCallSummary"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("id", check_str, scalar=True),
        Field("name", check_str, scalar=True),
        Field("args", check_dict()),
    )
    id: str
    name: str
    args: dict[str, Any]

    if TYPE_CHECKING:

        def __init__(self, *, id: Any, name: Any, args: Any) -> None: ...


class ToolExecutionCompleteParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:ToolExecutionCompleteParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("tool_name", check_str, alias="toolName", scalar=True),
        Field("title", check_str, scalar=True),
        Field("summary", check_str, default="", scalar=True),
        Field("content", check_str, default="", scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "tool:execution:complete"
    tool_call_id: str
    tool_name: str
    title: str
    summary: str
    content: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            tool_call_id: Any,
            tool_name: Any,
            title: Any,
            summary: Any = ...,
            content: Any = ...,
            message_id: Any = ...,
        ) -> None: ...


class ToolExecutionErrorParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:ToolExecutionErrorParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("tool_name", check_str, alias="toolName", scalar=True),
        Field("title", check_str, scalar=True),
        Field("content", check_str, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "tool:execution:error"
    tool_call_id: str
    tool_name: str
    title: str
    content: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            tool_call_id: Any,
            tool_name: Any,
            title: Any,
            content: Any,
            message_id: Any = ...,
        ) -> None: ...


class ToolExecutionStartParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:ToolExecutionStartParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("tool_name", check_str, alias="toolName", scalar=True),
        Field("title", check_str, scalar=True),
        Field("input", check_dict(), factory=dict),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "tool:execution:start"
    tool_call_id: str
    tool_name: str
    title: str
    input: dict[str, Any]
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            tool_call_id: Any,
            tool_name: Any,
            title: Any,
            input: Any = ...,
            message_id: Any = ...,
        ) -> None: ...


class ToolExecutionUpdateParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:ToolExecutionUpdateParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("tool_call_id", check_str, alias="toolCallId", scalar=True),
        Field("tool_name", check_str, alias="toolName", scalar=True),
        Field("delta", check_str, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
    )
    event: ClassVar[str] = "tool:execution:update"
    tool_call_id: str
    tool_name: str
    delta: str
    message_id: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            tool_call_id: Any,
            tool_name: Any,
            delta: Any,
            message_id: Any = ...,
        ) -> None: ...


class ToolListItem(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:ToolListItem"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("name", check_str, scalar=True),
        Field("description", check_str, scalar=True),
        Field("source", check_literal("builtin", "skill", "mcp"), scalar=True),
        Field("enabled", check_bool, scalar=True),
        Field("read_only", check_bool, alias="readOnly", scalar=True),
    )
    name: str
    description: str
    source: Literal["builtin", "skill", "mcp"]
    enabled: bool
    read_only: bool

    if TYPE_CHECKING:

        def __init__(
            self, *, name: Any, description: Any, source: Any, enabled: Any, read_only: Any
        ) -> None: ...


class ToolListParams(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:ToolListParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", scalar=True),
    )
    session_id: str

    if TYPE_CHECKING:

        def __init__(self, *, session_id: Any) -> None: ...


class ToolListResult(WireModel):
    __plain_source__ = "sema_rpc.protocol_tools:ToolListResult"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("tools", check_list(check_model(lambda: ToolListItem))),
    )
    tools: list[ToolListItem]

    if TYPE_CHECKING:

        def __init__(self, *, tools: Any) -> None: ...


class TranscriptContent(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:TranscriptContent"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("type", check_literal("text", "image"), default="text", scalar=True),
        Field("text", check_optional_str, default=None, scalar=True),
        Field("media_type", check_optional_str, alias="mediaType", default=None, scalar=True),
        Field("path", check_optional_str, default=None, scalar=True),
    )
    type: Literal["text", "image"]
    text: str | None
    media_type: str | None
    path: str | None

    if TYPE_CHECKING:

        def __init__(
            self, *, type: Any = ..., text: Any = ..., media_type: Any = ..., path: Any = ...
        ) -> None: ...


class TranscriptMessage(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:TranscriptMessage"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("id", check_str, scalar=True),
        Field("role", check_literal("user", "assistant"), scalar=True),
        Field("content", check_list(check_model(lambda: TranscriptContent)), factory=list),
        Field("thinking", check_optional_str, default=None, scalar=True),
        Field(
            "tool_calls",
            check_optional(check_list(check_model(lambda: TranscriptToolCall))),
            alias="toolCalls",
            default=None,
        ),
        Field(
            "kind",
            check_optional(check_literal("prompt", "summary", "notice")),
            default=None,
            scalar=True,
        ),
    )
    id: str
    role: Literal["user", "assistant"]
    content: list[TranscriptContent]
    thinking: str | None
    tool_calls: list[TranscriptToolCall] | None
    kind: Literal["prompt", "summary", "notice"] | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: Any,
            role: Any,
            content: Any = ...,
            thinking: Any = ...,
            tool_calls: Any = ...,
            kind: Any = ...,
        ) -> None: ...


class TranscriptToolCall(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:TranscriptToolCall"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("id", check_str, scalar=True),
        Field("name", check_str, scalar=True),
        Field("title", check_str, scalar=True),
        Field("input", check_dict(), factory=dict),
        Field("status", check_literal("completed", "error", "interrupted", "running"), scalar=True),
        Field("result", check_optional_str, default=None, scalar=True),
    )
    id: str
    name: str
    title: str
    input: dict[str, Any]
    status: Literal["completed", "error", "interrupted", "running"]
    result: str | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: Any,
            name: Any,
            title: Any,
            input: Any = ...,
            status: Any,
            result: Any = ...,
        ) -> None: ...


class TurnContinuedParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_tools:TurnContinuedParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("sentence", check_str, scalar=True),
        Field("nudge", check_str, scalar=True),
    )
    event: ClassVar[str] = "turn:continued"
    sentence: str
    nudge: str

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            sentence: Any,
            nudge: Any,
        ) -> None: ...


class TurnDiffFile(WireModel):
    __plain_source__ = "sema_rpc.protocol_sessions:TurnDiffFile"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("path", check_str, scalar=True),
        Field("status", check_literal("added", "modified", "deleted"), scalar=True),
        Field("additions", check_int, scalar=True),
        Field("deletions", check_int, scalar=True),
        Field("diff", check_str, scalar=True),
    )
    path: str
    status: Literal["added", "modified", "deleted"]
    additions: int
    deletions: int
    diff: str

    if TYPE_CHECKING:

        def __init__(
            self, *, path: Any, status: Any, additions: Any, deletions: Any, diff: Any
        ) -> None: ...


class TurnDiffParams(EventParams):
    __plain_source__ = "sema_rpc.protocol_sessions:TurnDiffParams"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("session_id", check_str, alias="sessionId", default="", scalar=True),
        Field("agent_id", check_str, alias="agentId", default="main", scalar=True),
        Field("seq", check_int, default=0, scalar=True),
        Field("message_id", check_optional_str, alias="messageId", default=None, scalar=True),
        Field("files", check_list(check_model(lambda: TurnDiffFile))),
        Field("diff", check_str, scalar=True),
        Field("truncated", check_bool, default=False, scalar=True),
    )
    event: ClassVar[str] = "turn:diff"
    message_id: str | None
    files: list[TurnDiffFile]
    diff: str
    truncated: bool

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            session_id: Any = ...,
            agent_id: Any = ...,
            seq: Any = ...,
            message_id: Any = ...,
            files: Any,
            diff: Any,
            truncated: Any = ...,
        ) -> None: ...


class UsageTotals(WireModel):
    __plain_source__ = "sema_rpc.protocol_wire:UsageTotals"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("input_tokens", check_int, alias="inputTokens", default=0, scalar=True),
        Field("output_tokens", check_int, alias="outputTokens", default=0, scalar=True),
        Field("cache_read_tokens", check_int, alias="cacheReadTokens", default=0, scalar=True),
        Field("cache_write_tokens", check_int, alias="cacheWriteTokens", default=0, scalar=True),
        Field("cost_usd", check_optional(check_float), alias="costUsd", default=0.0, scalar=True),
    )
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            input_tokens: Any = ...,
            output_tokens: Any = ...,
            cache_read_tokens: Any = ...,
            cache_write_tokens: Any = ...,
            cost_usd: Any = ...,
        ) -> None: ...


CompactStrategy = Literal["summary", "truncate", "none"]
CompactTrigger = Literal["auto", "manual", "overflow"]
Mode = Literal["Agent", "Plan"]
PermissionMode = Literal["default", "acceptEdits", "bypass"]
PlanExitDecision = Literal["startEditing", "clearContextAndStart", "keepPlanning"]
PromptInput = str | list[TextInputBlock | ImageInputBlock | ResourceInputBlock]
PromptInputBlock = TextInputBlock | ImageInputBlock | ResourceInputBlock
RewindRestore = Literal["code", "conversation", "both"]
SandboxMode = Literal["read-only", "workspace-write", "off"]
SessionCreateResult = SessionReadyParams
SessionDeleteParams = SessionRef
SessionDetachParams = SessionRef
SessionDisposeParams = SessionRef
SessionInterruptParams = SessionRef
SessionSetSandboxResult = SandboxState
StopReasonWire = Literal["end_turn", "interrupted", "max_turns", "error", "command"]

__all__ = [
    "AskQuestion",
    "AskQuestionOption",
    "AskQuestionRequestParams",
    "AskQuestionResult",
    "ClientCapabilities",
    "ClientInfo",
    "CommandListItem",
    "CommandListParams",
    "CommandListResult",
    "CompactExecParams",
    "CompactFigures",
    "CompactStrategy",
    "CompactTrigger",
    "ConfigNoModelsParams",
    "ConversationUsageParams",
    "EmptyParams",
    "EmptyResult",
    "EventParams",
    "FileReference",
    "FileReferenceParams",
    "ImageInputBlock",
    "InitializeParams",
    "InitializeResult",
    "McpServerParams",
    "McpServerStatus",
    "MessageCompleteParams",
    "Mode",
    "ModeUpdateEventParams",
    "ModeUpdateParams",
    "ModeUpdateResult",
    "ModelInfo",
    "ModelListParams",
    "ModelListResult",
    "ModelPrice",
    "ModelUpdateParams",
    "PendingRequest",
    "PermissionMode",
    "PermissionModeUpdateParams",
    "PermissionModeUpdateResult",
    "PermissionRequestParams",
    "PermissionResult",
    "PlanExitDecision",
    "PlanExitRequestParams",
    "PlanExitResult",
    "PromptInput",
    "PromptInputBlock",
    "RequestResolvedParams",
    "ResourceInputBlock",
    "RewindConflict",
    "RewindRestore",
    "SandboxMode",
    "SandboxState",
    "SandboxUpdateParams",
    "ServerCapabilities",
    "ServerInfo",
    "ServerRequestParams",
    "SessionAttachParams",
    "SessionAttachResult",
    "SessionClearedParams",
    "SessionCompactParams",
    "SessionCompactResult",
    "SessionCreateParams",
    "SessionCreateResult",
    "SessionDeleteParams",
    "SessionDeleteResult",
    "SessionDetachParams",
    "SessionDisposeParams",
    "SessionDisposeResult",
    "SessionErrorDetail",
    "SessionErrorParams",
    "SessionForkParams",
    "SessionForkResult",
    "SessionInterruptParams",
    "SessionInterruptResult",
    "SessionInterruptedParams",
    "SessionListItem",
    "SessionListParams",
    "SessionListResult",
    "SessionMessagesParams",
    "SessionMessagesResult",
    "SessionPromptParams",
    "SessionPromptResult",
    "SessionReadyEventParams",
    "SessionReadyParams",
    "SessionRef",
    "SessionRenameParams",
    "SessionRenameResult",
    "SessionRewindParams",
    "SessionRewindResult",
    "SessionSetModelParams",
    "SessionSetModelResult",
    "SessionSetSandboxParams",
    "SessionSetSandboxResult",
    "StateUpdateParams",
    "StopReasonWire",
    "TaskAgentEndParams",
    "TaskAgentStartParams",
    "TextChunkParams",
    "TextInputBlock",
    "ThinkingChunkParams",
    "TodoItem",
    "TodosUpdateParams",
    "TokenUsage",
    "ToolCallSummary",
    "ToolExecutionCompleteParams",
    "ToolExecutionErrorParams",
    "ToolExecutionStartParams",
    "ToolExecutionUpdateParams",
    "ToolListItem",
    "ToolListParams",
    "ToolListResult",
    "TranscriptContent",
    "TranscriptMessage",
    "TranscriptToolCall",
    "TurnContinuedParams",
    "TurnDiffFile",
    "TurnDiffParams",
    "UsageTotals",
    "WireModel",
]

KEPT = ("McpServerParams",)
"""Models that stay pydantic (`extra="allow"`): from their own modules."""
