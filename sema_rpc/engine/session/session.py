"""A session as data: what one conversation holds between and during its turns.

A `Session` is built whole: `sessions.build_session` gathers everything it needs (the
history read back, the model, the stores, the sandbox) and then constructs it in one
call; `__post_init__` wires the parts that point back at the session (its input
pipeline, the tool services that record and ask through it). Nothing is completed
later, so a collaborator is never None. What is None while no turn runs (`control`,
`policy`, `runner`, `conversation`) or when absent (`profile`: no model configured;
`mcp`: no MCP servers) says so in its type."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.messages import ContentBlock, Message, new_message_id
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.compaction import CompactionState
from sema_rpc.engine.loop.control import TurnControl
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.loop.tokens import TokenTracker
from sema_rpc.engine.loop.usage import UsageMeter
from sema_rpc.engine.prompt.pipeline import InputPipeline
from sema_rpc.engine.session.lifecycle import Life
from sema_rpc.engine.store.checkpoints import CheckpointStore
from sema_rpc.engine.store.history_format import Redo
from sema_rpc.engine.store.history_writer import HistoryStore
from sema_rpc.engine.store.input_history import InputHistory
from sema_rpc.protocol import (
    ConversationUsageParams,
    McpServerStatus,
    Mode,
    PermissionMode,
    SandboxMode,
    SandboxState,
    SessionErrorDetail,
    SessionPromptResult,
    SessionReadyParams,
    StopReasonWire,
    TokenUsage,
    UsageTotals,
)
from sema_rpc.tools.base import FileSnapshot, ToolServices

if TYPE_CHECKING:
    from sema_rpc.engine.loop.conversation import Conversation
    from sema_rpc.mcp import McpManager, McpServerConfig
    from sema_rpc.protocol import PlanExitResult, TodoItem

log = logging.getLogger(__name__)


@dataclass
class SteerInput:
    input: str | list[ContentBlock]
    """Typed text, or content (inputs.to_content) when the input had blocks."""
    message_id: str = field(default_factory=new_message_id)
    """The id of the user message it becomes when it joins the running turn."""
    joined: bool = False
    result: SessionPromptResult | None = None
    failed: BaseException | None = None
    """The turn it joined raised: it fails with that turn."""
    settled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class TrustAsk:
    """The project's MCP servers held at `session/create`, until the user answers
    (project_trust.py)."""

    file: str
    digest: str
    servers: list[McpServerConfig]


@dataclass(eq=False)
class Session:
    # ---- given whole by `sessions.build_session`
    id: str
    working_dir: Path
    """Resolved."""
    bus: EventBus
    store: HistoryStore
    """The comprehensive history on disk (the curated one is `history`)."""
    inputs: InputHistory
    """What the user typed in this project (`session:ready`'s `projectInputHistory`)."""
    checkpoints: CheckpointStore
    """What the tools did to files (turn:diff, session/rewind)."""
    rules: RuleStore
    """The permission rules the user allowed for good, for this project."""
    tokens: TokenTracker
    services: ToolServices
    """What the session lends its tools; `__post_init__` binds the todo, question and
    plan-approval services to this session."""
    read_files: dict[str, FileSnapshot] = field(default_factory=dict)
    """The files the model read, as it read them (an Edit needs a fresh Read)."""
    mode: Mode = "Agent"
    permission_mode: PermissionMode = "default"
    model_spec: str | None = None
    profile: ModelProfile | None = None
    """None: no model is configured (a prompt is refused, `/clear` still works)."""
    use_tools: list[str] | None = None
    history: list[Message] = field(default_factory=list)
    """The curated history: what the model sees. The comprehensive one is on disk."""
    history_loaded: bool = False
    redo: Redo | None = None
    """The last rewind while nothing happened since: what `redo` puts back."""
    meter: UsageMeter = field(default_factory=UsageMeter)
    """Tokens and cost: the session's running totals and the current turn's."""
    record_dir: Path | None = None
    """session/create `recordDir`: this session's recording folder (its cassette)."""
    unrecorded_model: str | None = None
    """A model session/create named that the history does not say yet: recorded with the
    next prompt (engine.py), or made moot by session/setModel."""
    check_continuation: bool = False
    """session/create `checkContinuation`: a reply that announces an action without
    taking it continues the turn once (conversation.py)."""
    client_system_prompt: tuple[str, str] | None = None
    """The client's own system prompt, `("append", text)` (after ours) or `("override",
    text)` (instead of ours): an ACP client's `_meta.systemPrompt`. Not recorded: each
    session/new, load or resume says it again."""

    # ---- built by the constructor
    pipeline: InputPipeline = field(init=False)
    usage: TokenUsage = field(default_factory=TokenUsage)
    compaction: CompactionState = field(default_factory=CompactionState)

    # ---- what changes while the session lives
    turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    disposed: bool = False
    life: Life = field(default_factory=Life)
    """Prompts read and not answered; closed (lifecycle.py)."""
    steering: list[SteerInput] = field(default_factory=list)
    """`delivery: steer` inputs waiting for the running turn's next tool batch to end."""
    mcp: McpManager | None = None
    """The session's MCP servers (None: it has none, or they were stopped)."""
    mcp_status: list[dict[str, Any]] = field(default_factory=list)
    trust_pending: TrustAsk | None = None
    """The project's MCP servers waiting for the user's trust: asked before the next
    turn runs."""
    control: TurnControl | None = None
    """The running turn's control (None: no turn runs)."""
    policy: PermissionPolicy | None = None
    runner: ToolRunner | None = None
    """The running turn's permission policy and tool runner: a mode change applies to
    the turn's next tool call, not only to the next turn."""
    conversation: Conversation | None = None
    """The running turn's main-agent loop: a model switch reaches its next model call."""

    def __post_init__(self) -> None:
        self.pipeline = InputPipeline(self)
        self.services.on_todos = self.todos_changed
        self.services.ask_user = self.ask_user
        self.services.plan_exit = self.plan_exit
        store = self.store
        self.meter.on_change = lambda totals: store.append_event("usage", **totals.as_dict())

    # ---- the services the session lends its tools

    def todos_changed(self, todos: list[Any]) -> None:
        from sema_rpc.protocol import TodosUpdateParams

        dicts = as_dicts(todos)
        self.store.append_event("todos", todos=dicts)
        self.bus.emit(TodosUpdateParams(todos=todo_items(dicts)))

    async def ask_user(self, questions: Any, call_id: str) -> dict[str, Any] | None:
        from sema_rpc.protocol import AskQuestionRequestParams, AskQuestionResult

        request = AskQuestionRequestParams.model_validate(
            {"toolCallId": call_id, "questions": questions}
        )
        answer = await self.bus.ask(request, AskQuestionResult)
        return None if answer is None else {"answers": answer.answers}

    async def plan_exit(self, path: str, text: str, call_id: str) -> PlanExitResult | None:
        from sema_rpc.protocol import PlanExitRequestParams, PlanExitResult

        request = PlanExitRequestParams(
            tool_call_id=call_id,
            plan_file_path=str(path),
            plan_content=text,
            options=["startEditing", "clearContextAndStart", "keepPlanning"],
        )
        return await self.bus.ask(request, PlanExitResult)

    # ---- what the wire reads of it

    def usage_event(self) -> ConversationUsageParams:
        """`conversation:usage` now: the context snapshot and the running totals."""
        turn, total = self.totals()
        return ConversationUsageParams(usage=self.usage, turn=turn, session=total)

    def totals(self) -> tuple[UsageTotals, UsageTotals]:
        return (
            UsageTotals.model_validate(self.meter.turn.as_dict()),
            UsageTotals.model_validate(self.meter.session.as_dict()),
        )

    def prompt_result(
        self,
        stop_reason: StopReasonWire,
        error: SessionErrorDetail | None = None,
        *,
        ran: bool = True,
        message_id: str | None = None,
    ) -> SessionPromptResult:
        """A `session/prompt` answer; `ran` False: the input never ran (its turn's
        totals are zero); `message_id`: the user message the prompt added."""
        turn, total = self.totals()
        return SessionPromptResult(
            stop_reason=stop_reason,
            usage=self.usage,
            error=error,
            turn=turn if ran else UsageTotals(),
            session=total,
            message_id=message_id,
        )

    def ready_params(self) -> SessionReadyParams:
        return SessionReadyParams(
            session_id=self.id,
            working_dir=str(self.working_dir),
            history_loaded=self.history_loaded or bool(self.history),
            usage=self.usage,
            project_input_history=self.inputs.items(),
            mode=self.mode,
            permission_mode=self.permission_mode,
            model=f"{self.profile.provider}/{self.profile.model_name}" if self.profile else None,
            mcp_servers=[McpServerStatus.model_validate(s) for s in self.mcp_status],
            sandbox=self.sandbox_state(),
        )

    def sandbox_state(self) -> SandboxState:
        box = self.services.sandbox
        return SandboxState(
            mode=sandbox_mode(box.mode),
            network=box.network,
            available=box.reason is None,
            reason=box.reason,
        )

    @property
    def context_length(self) -> int:
        return self.profile.context_length if self.profile else 0

    def persist(self, message: Message) -> None:
        """The loop's `on_message` hook: one history entry per completed message."""
        self.store.append_message(message, self.tokens.mark_for(message))

    async def synced(self) -> None:
        """Wait (the loop serves others meanwhile) until the session's history entries so
        far are on disk."""
        await self.store.synced()

    def set_usage(self, tokens: int) -> None:
        self.usage = TokenUsage(
            use_tokens=tokens, max_tokens=self.context_length, prompt_tokens=tokens
        )


_SANDBOX_MODES: dict[str, SandboxMode] = {
    "read-only": "read-only",
    "workspace-write": "workspace-write",
    "off": "off",
}


def sandbox_mode(mode: str) -> SandboxMode:
    """A sandbox setting's mode as the wire names it (the settings are stdlib-only)."""
    return _SANDBOX_MODES.get(mode, "off")


def as_dicts(todos: list[Any]) -> list[dict[str, Any]]:
    return [t if isinstance(t, dict) else t.model_dump(by_alias=True) for t in todos]


def todo_items(todos: list[dict[str, Any]]) -> list[TodoItem]:
    from sema_rpc.protocol import TodoItem

    items = []
    for t in todos:
        try:
            items.append(TodoItem.model_validate(t))
        except ValueError:
            log.warning("ignoring an invalid todo: %r", t)
    return items
