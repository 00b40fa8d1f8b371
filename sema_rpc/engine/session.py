"""A session as data: what one conversation holds between and during its turns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.messages import ContentBlock, Message, new_message_id
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.engine.compaction import CompactionState
from sema_rpc.engine.control import TurnControl
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.lifecycle import Life
from sema_rpc.engine.pipeline import InputPipeline
from sema_rpc.engine.run_tools import ToolRunner
from sema_rpc.engine.store.checkpoints import CheckpointStore
from sema_rpc.engine.store.history_format import Redo
from sema_rpc.engine.store.history_writer import HistoryStore
from sema_rpc.engine.store.input_history import InputHistory
from sema_rpc.engine.tokens import TokenTracker
from sema_rpc.engine.usage import UsageMeter
from sema_rpc.protocol import (
    ConversationUsageParams,
    McpServerStatus,
    SandboxState,
    SessionPromptResult,
    SessionReadyParams,
    StopReasonWire,
    TokenUsage,
    UsageTotals,
)
from sema_rpc.tools.base import FileSnapshot, ToolServices


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
class Session:
    id: str
    working_dir: Path
    bus: EventBus
    mode: str = "Agent"
    permission_mode: str = "default"
    model_spec: str | None = None
    profile: ModelProfile | None = None
    use_tools: list[str] | None = None
    history: list[Message] = field(default_factory=list)
    """The curated history: what the model sees. The comprehensive one is on disk."""
    read_files: dict[str, FileSnapshot] = field(default_factory=dict)
    services: ToolServices = field(default_factory=ToolServices)
    usage: TokenUsage = field(default_factory=TokenUsage)
    turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    control: TurnControl | None = None
    rules: RuleStore | None = None
    store: HistoryStore | None = None
    tokens: TokenTracker = field(default_factory=TokenTracker)
    compaction: CompactionState = field(default_factory=CompactionState)
    inputs: InputHistory | None = None
    history_loaded: bool = False
    disposed: bool = False
    life: Life = field(default_factory=Life)
    """Prompts read and not answered; closed (lifecycle.py)."""
    pipeline: InputPipeline | None = None
    mcp: Any = None
    """The session's McpManager, when it has MCP servers."""
    mcp_status: list[dict[str, Any]] = field(default_factory=list)
    trust_pending: Any = None
    """The project's MCP servers waiting for the user's trust (`sessions.TrustAsk`):
    asked before the next turn runs."""
    steering: list[SteerInput] = field(default_factory=list)
    """`delivery: steer` inputs waiting for the running turn's next tool batch to end."""
    policy: PermissionPolicy | None = None
    runner: ToolRunner | None = None
    """The running turn's permission policy and tool runner: a mode change applies to
    the turn's next tool call, not only to the next turn."""
    record_dir: Path | None = None
    """session/create `recordDir`: this session's recording folder (its cassette)."""
    meter: UsageMeter = field(default_factory=UsageMeter)
    """Tokens and cost: the session's running totals and the current turn's."""
    conversation: Any = None
    """The running turn's main-agent loop (a `Conversation`): a model switch reaches its
    next model call."""
    checkpoints: CheckpointStore | None = None
    """What the tools did to files (turn:diff, session/rewind)."""
    redo: Redo | None = None
    """The last rewind while nothing happened since: what `redo` puts back."""
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
        error: Any = None,
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
            project_input_history=self.inputs.items() if self.inputs else [],
            mode=self.mode,  # type: ignore[arg-type]
            permission_mode=self.permission_mode,  # type: ignore[arg-type]
            model=f"{self.profile.provider}/{self.profile.model_name}" if self.profile else None,
            mcp_servers=[McpServerStatus.model_validate(s) for s in self.mcp_status],
            sandbox=self.sandbox_state(),
        )

    def sandbox_state(self) -> SandboxState:
        box = self.services.sandbox
        return SandboxState(
            mode=box.mode,  # type: ignore[arg-type]
            network=box.network,
            available=box.reason is None,
            reason=box.reason,
        )

    @property
    def context_length(self) -> int:
        return self.profile.context_length if self.profile else 0

    def persist(self, message: Message) -> None:
        """The loop's `on_message` hook: one history entry per completed message."""
        if self.store is not None:
            self.store.append_message(message, self.tokens.mark_for(message))

    async def synced(self) -> None:
        """Wait (the loop serves others meanwhile) until the session's history entries so
        far are on disk."""
        if self.store is not None:
            await self.store.synced()

    def set_usage(self, tokens: int) -> None:
        self.usage = TokenUsage(
            use_tokens=tokens, max_tokens=self.context_length, prompt_tokens=tokens
        )
