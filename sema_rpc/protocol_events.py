"""The wire's events that every turn may send: the envelope every notification carries
(`EventParams`, stamped by the session's event bus), `session:ready`, `state:update`, the
streamed chunks, `message:complete`, `conversation:usage`, and how a turn ends early
(`session:interrupted`, `session:error`, `config:no_models`).

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there). The events of tool calls, server→client requests and
settings live in protocol_tools.py and protocol_settings.py.
"""

from typing import Any, ClassVar, Literal

from pydantic import Field

from sema_rpc.protocol_wire import (
    SessionErrorDetail,
    SessionReadyParams,
    TokenUsage,
    UsageTotals,
    WireModel,
    _CarriesTotals,
)

__all__ = [
    "ConfigNoModelsParams",
    "ConversationUsageParams",
    "EventParams",
    "MessageCompleteParams",
    "SessionErrorParams",
    "SessionInterruptedParams",
    "SessionReadyEventParams",
    "StateUpdateParams",
    "TextChunkParams",
    "ThinkingChunkParams",
    "ToolCallSummary",
]

# --------------------------------------------------------------------------- notifications
# Each notification is one engine event. The method is the event name; params are the
# event's payload plus the envelope below, stamped by the session's event bus.


class EventParams(WireModel):
    event: ClassVar[str] = ""

    session_id: str = ""
    agent_id: str = Field("main", description="`main`, or the id of the subagent that emitted it")
    seq: int = Field(0, description="Per-session sequence number, increasing by one per event.")


class StateUpdateParams(EventParams):
    event: ClassVar[str] = "state:update"
    state: Literal["idle", "processing"]


_STREAMED_ID = "The id of the assistant message being streamed (as session/messages lists it)."


class ThinkingChunkParams(EventParams):
    event: ClassVar[str] = "message:thinking:chunk"
    delta: str = Field(description="New thinking text only, never the accumulated text.")
    message_id: str | None = Field(None, description=_STREAMED_ID)


class TextChunkParams(EventParams):
    event: ClassVar[str] = "message:text:chunk"
    delta: str = Field(description="New answer text only, never the accumulated text.")
    message_id: str | None = Field(None, description=_STREAMED_ID)


class ToolCallSummary(WireModel):
    id: str
    name: str
    args: dict[str, Any]


class MessageCompleteParams(EventParams):
    event: ClassVar[str] = "message:complete"
    reasoning: str = ""
    content: str = ""
    has_tool_calls: bool = False
    tool_calls: list[ToolCallSummary] = Field(default_factory=list)
    stop_reason: str | None = None
    message_id: str | None = Field(None, description=_STREAMED_ID)


class ConversationUsageParams(_CarriesTotals, EventParams):
    event: ClassVar[str] = "conversation:usage"
    usage: TokenUsage
    turn: UsageTotals | None = Field(None, description="the running turn's tokens and cost")
    session: UsageTotals | None = Field(None, description="the session's tokens and cost so far")


class SessionInterruptedParams(EventParams):
    event: ClassVar[str] = "session:interrupted"
    content: str
    checkpoint: int = Field(description="1-4, the interrupt checkpoint that stopped the turn.")


class SessionErrorParams(EventParams):
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


class ConfigNoModelsParams(EventParams):
    event: ClassVar[str] = "config:no_models"
    message: str
    suggestion: str


class SessionReadyEventParams(EventParams, SessionReadyParams):
    event: ClassVar[str] = "session:ready"
