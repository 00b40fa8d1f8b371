"""The wire's base model and the requests every one-shot turn makes: the handshake, session
create / prompt / interrupt (their params and results, and the shared types they hold).

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there). Conventions: field names are snake_case in Python and
camelCase on the wire; params ignore unknown fields (forward compatibility) and reject
wrong types (-32602); results are dumped with `by_alias=True`. Models use `defer_build`
(a validator is built on first use).
"""

import functools
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic.alias_generators import to_camel

from sema_rpc.protocol_core import PROTOCOL_VERSION

__all__ = [
    "ClientCapabilities",
    "ClientInfo",
    "EmptyParams",
    "EmptyResult",
    "ImageInputBlock",
    "InitializeParams",
    "InitializeResult",
    "McpServerParams",
    "McpServerStatus",
    "Mode",
    "PermissionMode",
    "PromptInput",
    "PromptInputBlock",
    "ResourceInputBlock",
    "SandboxMode",
    "SandboxState",
    "ServerCapabilities",
    "ServerInfo",
    "SessionCreateParams",
    "SessionCreateResult",
    "SessionErrorDetail",
    "SessionInterruptParams",
    "SessionInterruptResult",
    "SessionPromptParams",
    "SessionPromptResult",
    "SessionReadyParams",
    "SessionRef",
    "StopReasonWire",
    "TextInputBlock",
    "TokenUsage",
    "UsageTotals",
    "WireModel",
]


# This module is imported on the way to a session's first answer, so its classes are
# created at every start. Two things keep that cheap: annotations are evaluated as
# written (no `from __future__ import annotations`: pydantic would evaluate every field's
# string, one `compile` each; a name defined further down is written in quotes), and the
# camelCase alias of a field name is computed once per name (`session_id`, `seq`... recur
# in every event) without a regular expression when the name is plain lowercase words
# (what pydantic's own `to_camel`, three regular expressions a name, gives for them;
# anything else goes to it).
@functools.cache
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    if head.isalpha() and head.islower() and all(w.isalpha() and w.islower() for w in rest):
        return head + "".join(w.capitalize() for w in rest)
    return to_camel(name)


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=_camel,
        populate_by_name=True,
        extra="ignore",
        defer_build=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _empty_array_is_empty_object(cls, data: Any) -> Any:
        # Lua's JSON encoders (Neovim's `vim.json`) write an empty table `{}` as `[]`.
        return {} if data == [] else data

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------- shared types

Mode = Literal["Agent", "Plan"]
PermissionMode = Literal["default", "acceptEdits", "bypass"]
SandboxMode = Literal["read-only", "workspace-write", "off"]
StopReasonWire = Literal["end_turn", "interrupted", "max_turns", "error", "command"]


class TokenUsage(WireModel):
    """The session's current context size: a snapshot, not a running total."""

    use_tokens: int = Field(0, description="promptTokens + output tokens of the last response")
    max_tokens: int = Field(0, description="the model's context window (contextLength)")
    prompt_tokens: int = Field(0, description="tokens of the whole prompt the model last read")


class UsageTotals(WireModel):
    """Running token and cost totals (of a turn, or of a session over its whole life)."""

    input_tokens: int = Field(0, description="input tokens not read from or written to the cache")
    output_tokens: int = Field(0, description="tokens the model wrote (reasoning included)")
    cache_read_tokens: int = Field(0, description="input tokens read from the prompt cache")
    cache_write_tokens: int = Field(0, description="input tokens written to the prompt cache")
    cost_usd: float | None = Field(
        0.0,
        description="USD at the models' prices; null when a model that used tokens has no "
        "known price",
    )


class _CarriesTotals(WireModel):
    """A message with `turn` / `session` totals: their `costUsd: null` is information
    ("unknown"), not an absent field, so it survives the `exclude_none` of `wire()`."""

    def wire(self) -> dict[str, Any]:
        data = super().wire()
        for key in ("turn", "session"):
            totals = getattr(self, key, None)
            if isinstance(totals, UsageTotals) and totals.cost_usd is None:
                data[key]["costUsd"] = None
        return data


class ClientInfo(WireModel):
    name: str
    version: str | None = None


class ClientCapabilities(WireModel):
    permissions: bool = Field(
        False, description="The client answers `tool:permission:request` requests."
    )
    ask_question: bool = Field(False, description="The client answers `ask:question:request`.")
    plan_exit: bool = Field(False, description="The client answers `plan:exit:request`.")


class ServerInfo(WireModel):
    name: str = "sema-rpc"
    version: str


class ServerCapabilities(WireModel):
    methods: list[str]
    notifications: list[str]
    server_requests: list[str]
    prompt_delivery: list[str] = ["followUp", "steer"]


# --------------------------------------------------------------------------- requests


class InitializeParams(WireModel):
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    token: str | None = Field(
        None,
        description="On a TCP listener: the token of the server's token file (required "
        "there, in the first message); ignored elsewhere.",
    )


class InitializeResult(WireModel):
    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities


class EmptyParams(WireModel):
    pass


class EmptyResult(WireModel):
    pass


class McpServerParams(WireModel):
    """An MCP server the editor passes in `session/create` (ACP's shapes): stdio
    (`{name, command, args, env}`, `env` a list of `{name, value}` or an object), or remote
    (`{type: "http"|"sse", name, url, headers}`, `headers` in the same two shapes)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True
    )
    name: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: list[dict[str, str]] | dict[str, str] = Field(default_factory=list)


class McpServerStatus(WireModel):
    name: str
    state: Literal["connected", "failed", "stopped", "untrusted"] = Field(
        description="untrusted: a project's server the user has not trusted; not started"
    )
    error: str | None = Field(
        None, description="Why it is not connected; for untrusted, how to trust it."
    )
    tools: list[str] = Field(default_factory=list)
    source: str | None = Field(None, description="editor, project, user, or a config file path")


class SandboxState(WireModel):
    """The OS sandbox the session's commands run in (protocol/README.md, Sandbox)."""

    mode: SandboxMode = Field(
        description="`workspace-write`: commands write only inside the workspace (never "
        "`.git/`, `.sema/`) and a private temp dir; `read-only`: only the temp dir; `off`: "
        "unconfined. A command the server judges read-only runs `read-only` in any mode but off."
    )
    network: bool = Field(False, description="TCP connections allowed inside the sandbox.")
    available: bool = Field(description="Whether this machine's kernel can sandbox at all.")
    reason: str | None = Field(
        None, description="Why the sandbox is unavailable (then `mode` is `off`)."
    )


class SessionCreateParams(WireModel):
    session_id: str | None = Field(
        None, description="Resume this session when known; otherwise a new id is generated."
    )
    working_dir: str = Field(description="Absolute path of the workspace the agent works in.")
    mode: Mode = "Agent"
    model: str | None = Field(
        None, description="`provider/model-id`, a profile name from models.json, or omitted."
    )
    use_tools: list[str] | None = Field(None, description="Only these tools (by name).")
    permission_mode: PermissionMode = "default"
    mcp_servers: list[McpServerParams] | None = Field(
        None,
        description="MCP servers to start for this session, on top of .sema/mcp.json and "
        "$SEMA_ROOT/mcp.json (the editor's entry wins on a name clash).",
    )
    record_dir: str | None = Field(
        None,
        description="Record this session (like `sema-rpc --record`, for this session only): "
        "an absolute path; its wire transcript and model cassette go to "
        "`<recordDir>/<timestamp>-<pid>-<sessionId>/`, replayable with `sema-rpc replay`.",
    )
    check_continuation: bool = Field(
        False,
        description="When a reply without a tool call announces an action it did not take "
        '("Now I\'ll run the tests."), continue the turn once (`turn:continued`).',
    )
    sandbox: SandboxMode | None = Field(
        None,
        description="The OS sandbox for the session's commands; omitted: `workspace-write` "
        "where the kernel can, else `off`. A mode other than `off` where it cannot: -32602.",
    )
    sandbox_network: bool = Field(False, description="Allow TCP inside the sandbox.")


class SessionReadyParams(WireModel):
    """Payload of `session:ready`; also the result of `session/create`."""

    session_id: str
    working_dir: str
    history_loaded: bool = False
    usage: TokenUsage = Field(default_factory=TokenUsage)
    project_input_history: list[str] = Field(default_factory=list)
    mode: Mode = "Agent"
    permission_mode: PermissionMode = "default"
    model: str | None = None
    mcp_servers: list[McpServerStatus] = Field(default_factory=list)
    sandbox: SandboxState | None = Field(
        None, description="The session's OS sandbox: its mode, or why there is none."
    )


SessionCreateResult = SessionReadyParams


class TextInputBlock(WireModel):
    type: Literal["text"]
    text: str


class ImageInputBlock(WireModel):
    """An image: its bytes (`data`, base64, with `mediaType`) or a file in the workspace
    (`path`, absolute or relative to the workspace)."""

    type: Literal["image"]
    data: str | None = Field(None, description="The image's bytes, base64-encoded.")
    media_type: str | None = Field(
        None, description="image/png, image/jpeg, image/gif or image/webp (with `data`)."
    )
    path: str | None = Field(None, description="A PNG, JPEG, GIF or WebP file in the workspace.")

    @model_validator(mode="after")
    def _data_or_path(self) -> "ImageInputBlock":
        if (self.data is None) == (self.path is None):
            raise ValueError("an image block has either `data` (with `mediaType`) or `path`")
        if self.data is not None and not self.media_type:
            raise ValueError("an image block with `data` needs its `mediaType`")
        return self


class ResourceInputBlock(WireModel):
    """A file's content for the model: `text` as given, else the server reads the
    `file://` uri (inside the workspace, text only)."""

    type: Literal["resource"]
    uri: str
    text: str | None = None
    mime_type: str | None = None


PromptInputBlock = Annotated[
    TextInputBlock | ImageInputBlock | ResourceInputBlock, Field(discriminator="type")
]


def _input_kind(value: Any) -> str:
    return "blocks" if isinstance(value, list) else "text"


PromptInput = Annotated[
    Annotated[str, Tag("text")] | Annotated[list[PromptInputBlock], Tag("blocks")],
    # Chosen by the value's JSON type, so an error names the block at fault only.
    Discriminator(_input_kind),
]


class SessionPromptParams(WireModel):
    session_id: str
    input: PromptInput = Field(
        description="What the user typed, or a list of content blocks (text, image, resource)."
    )
    delivery: Literal["followUp", "steer"] = "followUp"


class SessionErrorDetail(WireModel):
    code: str
    message: str
    details: Any = None


class SessionPromptResult(_CarriesTotals):
    stop_reason: StopReasonWire
    usage: TokenUsage
    error: SessionErrorDetail | None = None
    turn: UsageTotals | None = Field(None, description="this turn's tokens and cost")
    session: UsageTotals | None = Field(
        None, description="the session's tokens and cost so far (across restarts)"
    )
    message_id: str | None = Field(
        None,
        description="The id of the user message this prompt added to the conversation "
        "(absent when it added none: a command such as /clear, or cancelled before it ran).",
    )


class SessionRef(WireModel):
    session_id: str


SessionInterruptParams = SessionRef


class SessionInterruptResult(WireModel):
    interrupted: bool = Field(description="True when a turn was running and is now stopping.")
