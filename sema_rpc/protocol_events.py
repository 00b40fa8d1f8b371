"""The wire's events: the notifications the engine emits (one class per event, the
envelope stamped by the session's event bus), the server→client requests, and the types of
context and extensibility (@references, subagents, questions, plan exit, command and tool
lists).

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there).
"""

from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    field_validator,
)

from sema_rpc.protocol_wire import (
    Mode,
    SandboxState,
    SessionErrorDetail,
    TokenUsage,
    UsageTotals,
    WireModel,
    _CarriesTotals,
)

__all__ = [
    "AskQuestion",
    "AskQuestionOption",
    "AskQuestionRequestParams",
    "AskQuestionResult",
    "CommandListItem",
    "CommandListParams",
    "CommandListResult",
    "ConfigNoModelsParams",
    "ConversationUsageParams",
    "EventParams",
    "FileReference",
    "FileReferenceParams",
    "MessageCompleteParams",
    "ModeUpdateEventParams",
    "ModelUpdateParams",
    "PermissionRequestParams",
    "PermissionResult",
    "PlanExitDecision",
    "PlanExitRequestParams",
    "PlanExitResult",
    "RequestResolvedParams",
    "SandboxUpdateParams",
    "ServerRequestParams",
    "SessionErrorParams",
    "SessionInterruptedParams",
    "StateUpdateParams",
    "TaskAgentEndParams",
    "TaskAgentStartParams",
    "TextChunkParams",
    "ThinkingChunkParams",
    "TodoItem",
    "TodosUpdateParams",
    "ToolCallSummary",
    "ToolExecutionCompleteParams",
    "ToolExecutionErrorParams",
    "ToolExecutionStartParams",
    "ToolExecutionUpdateParams",
    "ToolListItem",
    "ToolListParams",
    "ToolListResult",
    "TurnContinuedParams",
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


_CALLER_ID = "The id of the assistant message that called the tool."


class ToolExecutionStartParams(EventParams):
    event: ClassVar[str] = "tool:execution:start"
    tool_call_id: str
    tool_name: str
    title: str
    input: dict[str, Any] = Field(default_factory=dict)
    message_id: str | None = Field(None, description=_CALLER_ID)


class ToolExecutionUpdateParams(EventParams):
    event: ClassVar[str] = "tool:execution:update"
    tool_call_id: str
    tool_name: str
    delta: str = Field(description="New output only (e.g. Bash stdout/stderr), in order.")
    message_id: str | None = Field(None, description=_CALLER_ID)


class ToolExecutionCompleteParams(EventParams):
    event: ClassVar[str] = "tool:execution:complete"
    tool_call_id: str
    tool_name: str
    title: str
    summary: str = ""
    content: str = ""
    message_id: str | None = Field(None, description=_CALLER_ID)


class ToolExecutionErrorParams(EventParams):
    event: ClassVar[str] = "tool:execution:error"
    tool_call_id: str
    tool_name: str
    title: str
    content: str
    message_id: str | None = Field(None, description=_CALLER_ID)


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


class TurnContinuedParams(EventParams):
    """The continuation check (session/create `checkContinuation`) found that the reply
    announced an action without taking it: the turn goes on with `nudge` as a user
    message. At most once per prompt."""

    event: ClassVar[str] = "turn:continued"
    sentence: str = Field(description="The reply's sentence that announced the action.")
    nudge: str = Field(description="The user message the turn continues with.")


class ConfigNoModelsParams(EventParams):
    event: ClassVar[str] = "config:no_models"
    message: str
    suggestion: str


class ModeUpdateEventParams(EventParams):
    event: ClassVar[str] = "mode:update"
    mode: Mode


class SandboxUpdateParams(EventParams, SandboxState):
    """The session's sandbox changed (`session/setSandbox`); the next command runs in it."""

    event: ClassVar[str] = "sandbox:update"


class ModelUpdateParams(EventParams):
    """The session's model changed (`session/setModel`); the next model call uses it."""

    event: ClassVar[str] = "model:update"
    model: str = Field(description="the name, as in `model/list`")
    provider: str
    model_name: str = Field(description="the provider's model id")
    context_length: int
    images: bool
    thinking: bool


class TodoItem(WireModel):
    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str = ""


class TodosUpdateParams(EventParams):
    event: ClassVar[str] = "todos:update"
    todos: list[TodoItem]


# --------------------------------------------------------------------------- server → client requests


class ServerRequestParams(EventParams):
    request_id: str = Field(
        "",
        description="This request's JSON-RPC id, repeated: a `$/cancelRequest` from the server "
        "names it in `id` (for client libraries that hide ids from request handlers).",
    )


class PermissionRequestParams(ServerRequestParams):
    event: ClassVar[str] = "tool:permission:request"
    tool_call_id: str
    tool_name: str
    title: str
    input: dict[str, Any]
    content: str
    content_kind: Literal["text", "diff"] = "text"
    options: list[Literal["allow_once", "allow_always", "reject"]]
    always_rule: str | None = Field(
        None,
        description="With `allow_always` offered: the rule that answer stores, e.g. "
        "`Bash(git commit:*)` or `Edit`, so the editor can show what it grants.",
    )


class PermissionResult(WireModel):
    decision: Literal["allow_once", "allow_always", "reject"]
    feedback: str | None = Field(
        None, description="With `reject`: text returned to the model; the turn continues."
    )


# --------------------------------------------------------------------------- context and extensibility
# @references, subagents, AskUserQuestion, ExitPlanMode, command/list, tool/list.


class FileReference(WireModel):
    type: Literal["file", "dir"]
    name: str = Field(description="Path relative to the working dir, with `:N` / `:N-M` if given.")
    content: str = Field("", description="Numbered lines (file) or the entries (dir).")
    error: str | None = Field(
        None, description="Why it was not read (missing, binary, outside the workspace, …)."
    )


class FileReferenceParams(EventParams):
    event: ClassVar[str] = "file:reference"
    references: list[FileReference]


class TaskAgentStartParams(EventParams):
    event: ClassVar[str] = "task:agent:start"
    task_id: str = Field(description="The subagent's id: its events carry it as `agentId`.")
    subagent_type: str
    description: str
    prompt: str


class TaskAgentEndParams(EventParams):
    event: ClassVar[str] = "task:agent:end"
    task_id: str
    status: Literal["completed", "failed", "interrupted"]
    content: str = Field("", description="The subagent's final text, or the error.")


class RequestResolvedParams(EventParams):
    event: ClassVar[str] = "request:resolved"
    request_id: str = Field(description="The `requestId` of the server→client request.")
    method: str = Field(description="The request's method (`tool:permission:request`...).")
    answered_by: str = Field(
        description="The client that answered: its `clientInfo.name`, or `connection N`."
    )
    outcome: str | None = Field(
        None, description="A permission's `decision`; omitted for other requests."
    )


class AskQuestionOption(WireModel):
    label: str
    description: str = ""


class AskQuestion(WireModel):
    question: str
    header: str
    options: list[AskQuestionOption]
    multi_select: bool = False


class AskQuestionRequestParams(ServerRequestParams):
    event: ClassVar[str] = "ask:question:request"
    tool_call_id: str = Field(
        description="The AskUserQuestion call these questions belong to (the `toolCallId` "
        "of its `tool:execution:*` notifications)."
    )
    questions: list[AskQuestion]


class AskQuestionResult(WireModel):
    answers: dict[str, str] = Field(
        description="Question text → the chosen label, labels joined with `, ` (multiSelect), "
        "or the user's own text."
    )

    @field_validator("answers", mode="before")
    @classmethod
    def _empty_array_is_no_answers(cls, value: Any) -> Any:
        return {} if value == [] else value


PlanExitDecision = Literal["startEditing", "clearContextAndStart", "keepPlanning"]


class PlanExitRequestParams(ServerRequestParams):
    event: ClassVar[str] = "plan:exit:request"
    tool_call_id: str = Field(
        description="The ExitPlanMode call asking (the `toolCallId` of its "
        "`tool:execution:*` notifications)."
    )
    plan_file_path: str = Field(description="Absolute path of the saved plan (.md).")
    plan_content: str
    options: list[PlanExitDecision]


class PlanExitResult(WireModel):
    decision: PlanExitDecision
    feedback: str | None = Field(
        None, description="Returned to the model (with keepPlanning: what to change)."
    )


class CommandListParams(WireModel):
    working_dir: str = Field(description="The project whose `.sema/commands` are listed.")


class CommandListItem(WireModel):
    name: str = Field(description="Without the slash, e.g. `frontend:test`.")
    description: str = ""
    argument_hint: str | None = None
    source: Literal["project", "user"]


class CommandListResult(WireModel):
    commands: list[CommandListItem]


class ToolListParams(WireModel):
    session_id: str


class ToolListItem(WireModel):
    name: str
    description: str
    source: Literal["builtin", "skill", "mcp"]
    enabled: bool = Field(description="Offered to the model this turn (useTools, Plan mode).")
    read_only: bool


class ToolListResult(WireModel):
    tools: list[ToolListItem]
