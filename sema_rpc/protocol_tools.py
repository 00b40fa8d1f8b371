"""The wire of what a turn does beyond answering: its tool calls' events, the
server→client requests (consent, questions, plan exit), todos, and the types of context
and extensibility (@references, subagents, command and tool lists).

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there). Not imported by a turn that only answers in text.
"""

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from sema_rpc.protocol_events import EventParams
from sema_rpc.protocol_wire import WireModel

__all__ = [
    "AskQuestion",
    "AskQuestionOption",
    "AskQuestionRequestParams",
    "AskQuestionResult",
    "CommandListItem",
    "CommandListParams",
    "CommandListResult",
    "FileReference",
    "FileReferenceParams",
    "PermissionRequestParams",
    "PermissionResult",
    "PlanExitDecision",
    "PlanExitRequestParams",
    "PlanExitResult",
    "RequestResolvedParams",
    "ServerRequestParams",
    "TaskAgentEndParams",
    "TaskAgentStartParams",
    "TodoItem",
    "TodosUpdateParams",
    "ToolExecutionCompleteParams",
    "ToolExecutionErrorParams",
    "ToolExecutionStartParams",
    "ToolExecutionUpdateParams",
    "ToolListItem",
    "ToolListParams",
    "ToolListResult",
    "TurnContinuedParams",
]


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


class TurnContinuedParams(EventParams):
    """The continuation check (session/create `checkContinuation`) found that the reply
    announced an action without taking it: the turn goes on with `nudge` as a user
    message. At most once per prompt."""

    event: ClassVar[str] = "turn:continued"
    sentence: str = Field(description="The reply's sentence that announced the action.")
    nudge: str = Field(description="The user message the turn continues with.")


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
