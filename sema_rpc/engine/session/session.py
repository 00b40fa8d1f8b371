"""A session as data: what one conversation holds between and during its turns.

A `Session` is built whole: `sessions.build_session` gathers everything it needs (the
history read back, the model, the stores, the sandbox) and then constructs it in one
call; the constructor wires the parts that point back at the session (its input
pipeline, the tool services that record and ask through it). Nothing is completed
later, so a collaborator is never None. What is None while no turn runs (`control`,
`policy`, `runner`, `conversation`) or when absent (`profile`: no model configured;
`mcp`: no MCP servers) says so in its type."""

from __future__ import annotations

import asyncio
import logging
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
from sema_rpc.plain_record import Record
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


# Plain classes rather than dataclasses: every session loads this module, and a dataclass
# costs its creation.


class SteerInput(Record):
    _fields = ("input", "message_id", "joined", "result", "failed", "settled")

    input: str | list[ContentBlock]
    """Typed text, or content (inputs.to_content) when the input had blocks."""
    message_id: str
    """The id of the user message it becomes when it joins the running turn."""
    joined: bool
    result: SessionPromptResult | None
    failed: BaseException | None
    """The turn it joined raised: it fails with that turn."""
    settled: asyncio.Event

    def __init__(
        self,
        input: str | list[ContentBlock],
        message_id: str | None = None,
        joined: bool = False,
        result: SessionPromptResult | None = None,
        failed: BaseException | None = None,
        settled: asyncio.Event | None = None,
    ) -> None:
        self.input = input
        self.message_id = new_message_id() if message_id is None else message_id
        self.joined = joined
        self.result = result
        self.failed = failed
        self.settled = asyncio.Event() if settled is None else settled


class TrustAsk(Record):
    """The project's MCP servers held at `session/create`, until the user answers
    (project_trust.py)."""

    _fields = ("file", "digest", "servers")

    file: str
    digest: str
    servers: list[McpServerConfig]

    def __init__(self, file: str, digest: str, servers: list[McpServerConfig]) -> None:
        self.file = file
        self.digest = digest
        self.servers = servers


class Session:
    """One session: what it was given, what it builds, what changes while it lives.
    Compared by identity."""

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
    """What the session lends its tools; the constructor binds the todo, question and
    plan-approval services to this session."""
    read_files: dict[str, FileSnapshot]
    """The files the model read, as it read them (an Edit needs a fresh Read)."""
    mode: Mode
    permission_mode: PermissionMode
    model_spec: str | None
    profile: ModelProfile | None
    """None: no model is configured (a prompt is refused, `/clear` still works)."""
    use_tools: list[str] | None
    history: list[Message]
    """The curated history: what the model sees. The comprehensive one is on disk."""
    history_loaded: bool
    redo: Redo | None
    """The last rewind while nothing happened since: what `redo` puts back."""
    meter: UsageMeter
    """Tokens and cost: the session's running totals and the current turn's."""
    record_dir: Path | None
    """session/create `recordDir`: this session's recording folder (its cassette)."""
    unrecorded_model: str | None
    """A model session/create named that the history does not say yet: recorded with the
    next prompt (engine.py), or made moot by session/setModel."""
    check_continuation: bool
    """session/create `checkContinuation`: a reply that announces an action without
    taking it continues the turn once (conversation.py)."""
    client_system_prompt: tuple[str, str] | None
    """The client's own system prompt, `("append", text)` (after ours) or `("override",
    text)` (instead of ours): an ACP client's `_meta.systemPrompt`. Not recorded: each
    session/new, load or resume says it again."""

    # ---- built by the constructor
    pipeline: InputPipeline
    usage: TokenUsage
    compaction: CompactionState

    # ---- what changes while the session lives
    turn_lock: asyncio.Lock
    disposed: bool
    life: Life
    """Prompts read and not answered; closed (lifecycle.py)."""
    steering: list[SteerInput]
    """`delivery: steer` inputs waiting for the running turn's next tool batch to end."""
    mcp: McpManager | None
    """The session's MCP servers (None: it has none, or they were stopped)."""
    mcp_status: list[dict[str, Any]]
    trust_pending: TrustAsk | None
    """The project's MCP servers waiting for the user's trust: asked before the next
    turn runs."""
    control: TurnControl | None
    """The running turn's control (None: no turn runs)."""
    policy: PermissionPolicy | None
    runner: ToolRunner | None
    """The running turn's permission policy and tool runner: a mode change applies to
    the turn's next tool call, not only to the next turn."""
    conversation: Conversation | None
    """The running turn's main-agent loop: a model switch reaches its next model call."""

    def __init__(
        self,
        id: str,
        working_dir: Path,
        bus: EventBus,
        store: HistoryStore,
        inputs: InputHistory,
        checkpoints: CheckpointStore,
        rules: RuleStore,
        tokens: TokenTracker,
        services: ToolServices,
        read_files: dict[str, FileSnapshot] | None = None,
        mode: Mode = "Agent",
        permission_mode: PermissionMode = "default",
        model_spec: str | None = None,
        profile: ModelProfile | None = None,
        use_tools: list[str] | None = None,
        history: list[Message] | None = None,
        history_loaded: bool = False,
        redo: Redo | None = None,
        meter: UsageMeter | None = None,
        record_dir: Path | None = None,
        unrecorded_model: str | None = None,
        check_continuation: bool = False,
        client_system_prompt: tuple[str, str] | None = None,
        usage: TokenUsage | None = None,
        compaction: CompactionState | None = None,
        turn_lock: asyncio.Lock | None = None,
        disposed: bool = False,
        life: Life | None = None,
        steering: list[SteerInput] | None = None,
        mcp: McpManager | None = None,
        mcp_status: list[dict[str, Any]] | None = None,
        trust_pending: TrustAsk | None = None,
        control: TurnControl | None = None,
        policy: PermissionPolicy | None = None,
        runner: ToolRunner | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        self.id = id
        self.working_dir = working_dir
        self.bus = bus
        self.store = store
        self.inputs = inputs
        self.checkpoints = checkpoints
        self.rules = rules
        self.tokens = tokens
        self.services = services
        self.read_files = {} if read_files is None else read_files
        self.mode = mode
        self.permission_mode = permission_mode
        self.model_spec = model_spec
        self.profile = profile
        self.use_tools = use_tools
        self.history = [] if history is None else history
        self.history_loaded = history_loaded
        self.redo = redo
        self.meter = UsageMeter() if meter is None else meter
        self.record_dir = record_dir
        self.unrecorded_model = unrecorded_model
        self.check_continuation = check_continuation
        self.client_system_prompt = client_system_prompt
        self.usage = TokenUsage() if usage is None else usage
        self.compaction = CompactionState() if compaction is None else compaction
        self.turn_lock = asyncio.Lock() if turn_lock is None else turn_lock
        self.disposed = disposed
        self.life = Life() if life is None else life
        self.steering = [] if steering is None else steering
        self.mcp = mcp
        self.mcp_status = [] if mcp_status is None else mcp_status
        self.trust_pending = trust_pending
        self.control = control
        self.policy = policy
        self.runner = runner
        self.conversation = conversation
        # ---- what the constructor builds
        self.pipeline = InputPipeline(self)
        self.services.on_todos = self.todos_changed
        self.services.ask_user = self.ask_user
        self.services.plan_exit = self.plan_exit
        store = self.store
        self.meter.on_change = lambda totals: store.append_event("usage", **totals.as_dict())

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, working_dir={self.working_dir!r})"

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
