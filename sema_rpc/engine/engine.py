"""SemaEngine: sessions and the processUserInput pipeline (seed 001).

One engine serves every session of a process. A session runs one turn at a time; a
prompt that arrives while a turn runs waits its turn (followUp delivery) and is answered
when its own turn ends.

Sessions last (seed 003): each keeps its curated history (what the model sees) in
memory and appends every completed message to its comprehensive history on disk
(history.py). `session/create` with a known id loads it back; compaction (compaction.py)
keeps the curated history inside the model's window; token figures come from tokens.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.config import ConfigError, ModelProfile, resolve_model
from sema_rpc.engine.compaction import (
    CompactionResult,
    CompactionState,
    Compactor,
    compact_threshold,
)
from sema_rpc.engine.control import PromptCancel, TurnControl
from sema_rpc.engine.conversation import ContextRebuild, Conversation, LoopConfig, TurnOutcome
from sema_rpc.engine.events import ClientBridge, EventBus
from sema_rpc.engine.history import (
    HistoryError,
    HistoryStore,
    InputHistory,
    LoadedHistory,
    append_curated,
    dangling_tool_results,
    list_sessions,
    load_history,
    synced_all,
    valid_session_id,
)
from sema_rpc.engine.messages import ContentBlock, Message, TextBlock
from sema_rpc.engine.permissions import PermissionPolicy, RuleStore
from sema_rpc.engine.pipeline import InputPipeline
from sema_rpc.engine.run_tools import ToolRunner
from sema_rpc.engine.subagents import SubagentRunner
from sema_rpc.engine.tokens import TokenCounter, TokenTracker, counter_for_model
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    AskQuestionResult,
    CommandListParams,
    CommandListResult,
    ConfigNoModelsParams,
    ConversationUsageParams,
    ErrorCode,
    McpServerStatus,
    ModeUpdateEventParams,
    ModeUpdateParams,
    ModeUpdateResult,
    PermissionModeUpdateParams,
    PermissionModeUpdateResult,
    PlanExitRequestParams,
    PlanExitResult,
    RpcError,
    SessionClearedParams,
    SessionCompactParams,
    SessionCompactResult,
    SessionCreateParams,
    SessionDisposeParams,
    SessionDisposeResult,
    SessionErrorDetail,
    SessionErrorParams,
    SessionListItem,
    SessionListParams,
    SessionListResult,
    SessionPromptParams,
    SessionPromptResult,
    SessionReadyEventParams,
    SessionReadyParams,
    StateUpdateParams,
    TodoItem,
    TodosUpdateParams,
    TokenUsage,
    ToolListParams,
    ToolListResult,
    session_not_found,
)
from sema_rpc.providers.base import ToolSpec
from sema_rpc.tools.base import FileSnapshot, ToolContext

log = logging.getLogger(__name__)

NO_MODEL_SUGGESTION = (
    "Set ANTHROPIC_API_KEY or OPENAI_API_KEY, pass `model` (e.g. `anthropic/claude-sonnet-4-5`) "
    "to session/create, or add a profile to $SEMA_ROOT/models.json."
)
DISPOSE_GRACE_S = 10.0


@dataclass
class SteerInput:
    text: str
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
    tool_state: dict = field(default_factory=dict)
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
    pipeline: InputPipeline | None = None
    mcp: Any = None
    """The session's McpManager, when it has MCP servers."""
    mcp_status: list[dict[str, Any]] = field(default_factory=list)
    steering: list[SteerInput] = field(default_factory=list)
    """`delivery: steer` inputs waiting for the running turn's next tool batch to end."""
    policy: PermissionPolicy | None = None
    runner: ToolRunner | None = None
    """The running turn's permission policy and tool runner: a mode change applies to
    the turn's next tool call, not only to the next turn."""
    record_dir: Path | None = None
    """session/create `recordDir`: this session's recording folder (its cassette)."""

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


def mcp_start_timeout() -> float:
    """Seconds to wait for a session's MCP servers to start (env SEMA_MCP_START_TIMEOUT_S)."""
    try:
        return float(os.environ.get("SEMA_MCP_START_TIMEOUT_S", "10"))
    except ValueError:
        return 10.0


def _session_record_dir(record_dir: str | None, session_id: str) -> Path | None:
    """session/create `recordDir` → the session's recording folder (created now)."""
    if record_dir is None:
        return None
    from sema_rpc.record.recorder import session_record_dir

    try:
        return session_record_dir(record_dir, session_id)
    except ValueError as exc:
        raise RpcError(ErrorCode.INVALID_PARAMS, str(exc)) from exc
    except OSError as exc:
        raise RpcError(
            ErrorCode.INVALID_PARAMS, f"cannot record to {record_dir}: {exc.strerror or exc}"
        ) from exc


def system_command(text: str) -> tuple[str, str] | None:
    """`/clear` or `/compact [instructions]` → (name, argument); anything else → None
    (an unknown `/x` goes to the model unchanged)."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, arg = stripped.partition(" ")
    if name in ("/clear", "/compact"):
        return name[1:], arg.strip()
    return None


class SemaEngine:
    def __init__(self, bridge: ClientBridge, *, client_answers_permissions: bool = False):
        self.bridge = bridge
        self.client_answers_permissions = client_answers_permissions
        self.sessions: dict[str, Session] = {}
        self.record_dir: Path | str | None = None
        """`--record DIR`: each session's model exchanges are recorded as a cassette."""
        self.closing = False
        """Set by `shutdown()`: nothing new starts; waiting prompts answer `interrupted`."""

    # ------------------------------------------------------------------ sessions

    def session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.disposed:
            raise session_not_found(session_id)
        return session

    async def create_session(self, params: SessionCreateParams) -> SessionReadyParams:
        working_dir = Path(params.working_dir).expanduser()  # noqa: ASYNC240 (a stat, not I/O worth a thread)
        if not working_dir.is_absolute():
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"workingDir must be an absolute path (a client resolves a relative one "
                f"against its own directory): {params.working_dir}",
            )
        if not working_dir.is_dir():
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"workingDir is not a directory: {params.working_dir}"
            )
        if params.session_id is not None and not valid_session_id(params.session_id):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "sessionId must be 1-128 letters, digits, '.', '_' or '-', not starting with "
                f"'.', '_' or '-': {params.session_id!r}",
            )
        try:
            profile = resolve_model(params.model)
        except ConfigError as exc:
            raise RpcError(ErrorCode.CONFIG_ERROR, str(exc)) from exc
        if params.model is not None and profile is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown model: {params.model}")

        session_id = params.session_id or uuid.uuid4().hex
        record_dir = _session_record_dir(params.record_dir, session_id)
        existing = self.sessions.get(session_id)
        if existing is not None and not existing.disposed:
            existing.record_dir = existing.record_dir or record_dir
            return self._ready(existing)

        loaded: LoadedHistory | None = None
        if params.session_id is not None:
            try:
                loaded = await asyncio.to_thread(load_history, session_id)
            except HistoryError as exc:
                raise RpcError(
                    ErrorCode.HISTORY_UNREADABLE, str(exc), {"sessionId": session_id}
                ) from exc
            existing = self.sessions.get(session_id)
            if existing is not None and not existing.disposed:  # created while we read
                existing.record_dir = existing.record_dir or record_dir
                return self._ready(existing)

        resolved_dir = working_dir.resolve()
        mode = params.mode
        if loaded is not None and loaded.mode and "mode" not in params.model_fields_set:
            mode = loaded.mode  # type: ignore[assignment]
        session = Session(
            id=session_id,
            working_dir=resolved_dir,
            bus=EventBus(session_id, self.bridge),
            mode=mode,
            permission_mode=params.permission_mode,
            model_spec=params.model,
            profile=profile,
            use_tools=params.use_tools,
            tokens=TokenTracker(
                counter_for_model(profile.model_name) if profile else TokenCounter(None)
            ),
            store=HistoryStore(
                session_id,
                resolved_dir,
                loaded.message_count if loaded is not None and loaded.source == "jsonl" else 0,
            ),
            inputs=InputHistory(resolved_dir),
            record_dir=record_dir,
        )
        session.rules = RuleStore(session.working_dir)
        session.pipeline = InputPipeline(session)
        session.tool_state["on_todos"] = lambda todos: self._todos_changed(session, todos)
        session.tool_state["ask_user"] = lambda questions: self._ask_user(session, questions)
        session.tool_state["plan_exit"] = lambda path, text: self._plan_exit(session, path, text)
        self.sessions[session_id] = session
        await self._start_mcp(session, params)
        if profile is not None:
            from sema_rpc.providers.registry import warm_up

            warm_up(profile)
            session.tokens.counter.warm_up()
        if loaded is not None:
            await self._restore(session, loaded)
        else:
            session.set_usage(0)

        ready = self._ready(session)
        if session.tool_state.get("todos"):
            session.bus.emit(TodosUpdateParams(todos=_todo_items(session.tool_state["todos"])))
        if profile is None:
            session.bus.emit(
                ConfigNoModelsParams(
                    message="No model is configured.", suggestion=NO_MODEL_SUGGESTION
                )
            )
        return ready

    def _ready(self, session: Session) -> SessionReadyParams:
        ready = session.ready_params()
        session.bus.emit(SessionReadyEventParams(**ready.model_dump()))
        return ready

    async def _restore(self, session: Session, loaded: LoadedHistory) -> None:
        assert session.store is not None
        session.history_loaded = loaded.message_count > 0
        session.history = loaded.messages
        if loaded.source == "json":  # the seed's format: continue it as JSONL
            session.store.import_messages(loaded.messages, loaded.todos)
        repair = dangling_tool_results(session.history)
        if repair is not None:  # the process died while tools ran
            append_curated(session.history, repair)
            session.store.append_message(repair)
        if loaded.mark is not None:
            length, tokens = loaded.mark
            session.tokens.set_mark(length, session.history[length - 1], tokens)
        if loaded.todos:
            session.tool_state["todos"] = loaded.todos
        covered = loaded.mark is not None and loaded.mark[0] == len(session.history)
        if covered:  # the provider's persisted figure counts it all: nothing to tokenize
            session.set_usage(session.tokens.count(session.history))
        elif session.history:
            # Count the overhead with the same encoding as the history, not an estimate
            # taken while the encoding is still loading.
            await session.tokens.counter.ensure_loaded()
            _, specs, system = self._tools_and_prompt(session)
            session.tokens.set_overhead(system, specs)
            session.set_usage(await session.tokens.count_async(session.history))
        else:
            session.set_usage(0)
        if loaded.skipped:
            log.warning(
                "session %s: %d unreadable history entries were skipped", session.id, loaded.skipped
            )

    def _todos_changed(self, session: Session, todos: list) -> None:
        dicts = _as_dicts(todos)
        if session.store is not None:
            session.store.append_event("todos", todos=dicts)
        session.bus.emit(TodosUpdateParams(todos=_todo_items(dicts)))

    async def list_sessions(self, params: SessionListParams) -> SessionListResult:
        working_dir = None
        if params.working_dir is not None:
            working_dir = Path(params.working_dir).expanduser()  # noqa: ASYNC240
            if not working_dir.is_absolute():
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"workingDir must be an absolute path: {params.working_dir}",
                )
            working_dir = await asyncio.to_thread(working_dir.resolve)
        summaries = await asyncio.to_thread(list_sessions, working_dir)
        return SessionListResult(
            sessions=[
                SessionListItem(
                    session_id=s.session_id,
                    working_dir=s.working_dir,
                    title=s.title,
                    updated_at=s.updated_iso,
                    message_count=s.message_count,
                )
                for s in summaries
            ]
        )

    async def dispose(self, params: SessionDisposeParams) -> SessionDisposeResult:
        """Interrupt the running turn, wait for it to answer, drop the session from memory.
        Queued prompts answer `interrupted` without running. The history stays on disk."""
        session = self.session(params.session_id)
        session.disposed = True
        interrupted = session.control.interrupt("dispose") if session.control else False
        try:
            await asyncio.wait_for(session.turn_lock.acquire(), DISPOSE_GRACE_S)
            session.turn_lock.release()
        except TimeoutError:
            log.warning("session %s: the turn did not settle before dispose", session.id)
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        if session.store is not None:
            session.store.close()
            await session.store.synced()
        await self.close_mcp(session)
        return SessionDisposeResult(disposed=True, interrupted=interrupted)

    def interrupt(self, session_id: str) -> bool:
        control = self.session(session_id).control
        return control.interrupt("user") if control is not None else False

    def update_mode(self, params: ModeUpdateParams) -> ModeUpdateResult:
        session = self.session(params.session_id)
        self._set_mode(session, params.mode)
        return ModeUpdateResult(mode=params.mode)

    def update_permission_mode(
        self, params: PermissionModeUpdateParams
    ) -> PermissionModeUpdateResult:
        session = self.session(params.session_id)
        session.permission_mode = params.permission_mode
        if session.policy is not None:
            session.policy.mode = params.permission_mode
        return PermissionModeUpdateResult(permission_mode=params.permission_mode)

    async def shutdown(self, grace_s: float = 5.0) -> None:
        """Interrupt every running turn and wait (briefly) for them to settle. Nothing
        new starts: queued prompts and waiting steers answer `interrupted` without running.

        Every completed message is already on disk (each is synced as it completes)."""
        self.closing = True
        for session in self.sessions.values():
            for steer in [s for s in session.steering if not s.joined]:
                self._drop_steer(session, steer)
            if session.control is not None:
                session.control.interrupt("shutdown")
        deadline = asyncio.get_running_loop().time() + grace_s
        for session in self.sessions.values():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(session.turn_lock.acquire(), remaining)
                session.turn_lock.release()
            except TimeoutError:
                log.warning("session %s did not settle before shutdown", session.id)
        await synced_all()

    # ------------------------------------------------------------------ processUserInput

    async def prompt(
        self, params: SessionPromptParams, cancel: PromptCancel | None = None
    ) -> SessionPromptResult:
        """Run one input when its turn comes; answers once, also when `cancel` comes at
        any stage (before it starts, while it waits, while it runs)."""
        session = self.session(params.session_id)
        cancel = cancel if cancel is not None else PromptCancel()
        if cancel.cancelled or self.closing:  # cancelled before it started: nothing runs
            return SessionPromptResult(stop_reason="interrupted", usage=session.usage)
        if session.inputs is not None:
            session.inputs.add(params.input)
        command = system_command(params.input)
        if session.profile is None and (command is None or command[0] != "clear"):
            # config:no_models went out once, with session:ready; the error says it again.
            raise RpcError(
                ErrorCode.NO_MODEL_CONFIGURED, "no model configured: " + NO_MODEL_SUGGESTION
            )
        if params.delivery == "steer" and command is None and session.control is not None:
            steer = SteerInput(params.input)
            session.steering.append(steer)
            cancel.on_cancel(lambda: self._drop_steer(session, steer))
            try:
                await steer.settled.wait()
            finally:
                cancel.on_cancel(None)
            if steer.failed is not None:
                raise RuntimeError(
                    f"the turn this input joined failed: {steer.failed!r}"
                ) from steer.failed
            if steer.result is not None:  # it joined the running turn (or was cancelled)
                return steer.result
            # The turn ended before a tool batch could take it: it runs as its own turn.
        if not await cancel.acquire(session.turn_lock):  # cancelled while queued
            return SessionPromptResult(stop_reason="interrupted", usage=session.usage)
        try:
            if session.disposed or self.closing:
                return SessionPromptResult(stop_reason="interrupted", usage=session.usage)
            control = TurnControl()
            session.control = control
            cancel.on_cancel(lambda: control.interrupt("user"))
            session.bus.emit(StateUpdateParams(state="processing"))
            result: SessionPromptResult | None = None
            failure: BaseException | None = None
            try:
                if command is None:
                    if not session.history and session.store is not None:
                        # What the user typed names the session in session/list (the first
                        # message may be a custom command's expansion).
                        session.store.append_event("title", title=params.input[:500])
                    outcome = await self._run_turn(session, params.input, control)
                elif command[0] == "clear":
                    outcome = self._clear(session)
                else:
                    await self._compact(session, control, command[1] or None)
                    outcome = TurnOutcome("interrupted" if control.interrupted else "command")
                await session.synced()  # answered once the turn is on disk
                result = SessionPromptResult(
                    stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
                    usage=session.usage,
                    error=outcome.error,
                )
                return result
            except BaseException as exc:
                failure = exc
                raise
            finally:
                cancel.on_cancel(None)
                session.control = session.policy = session.runner = None
                session.bus.emit(StateUpdateParams(state="idle"))
                # Also when the turn raised: a steer that joined it is answered with it.
                self._settle_steering(session, result, failure)
        finally:
            session.turn_lock.release()

    async def _take_steering(self, session: Session) -> list[ContentBlock]:
        """The loop's hook after each tool batch: steer inputs join the running turn, with
        their custom commands and @references expanded as a prompt's are."""
        taken = [s for s in session.steering if not s.joined]
        for steer in taken:
            steer.joined = True
        blocks: list[ContentBlock] = []
        for steer in taken:
            if session.pipeline is None:
                blocks.append(TextBlock(text=steer.text))
            else:
                blocks += await session.pipeline.input_blocks(steer.text)
        return blocks

    def _settle_steering(
        self,
        session: Session,
        result: SessionPromptResult | None,
        failure: BaseException | None = None,
    ) -> None:
        """A turn ended: steer inputs that joined it get its answer (or its failure);
        the others (no tool batch came to take them) are released to run as turns of
        their own."""
        if result is None and (failure is None or isinstance(failure, asyncio.CancelledError)):
            result = SessionPromptResult(stop_reason="interrupted", usage=session.usage)
        waiting, session.steering = session.steering, []
        for steer in waiting:
            if steer.joined:
                steer.result, steer.failed = result, failure if result is None else None
            steer.settled.set()

    def _drop_steer(self, session: Session, steer: SteerInput) -> None:
        """Cancel one steer input: one still waiting leaves the queue and answers
        `interrupted`; one that joined the running turn is part of it, so that turn is
        interrupted (and answers both)."""
        if steer.settled.is_set():
            return
        if steer.joined:
            if session.control is not None:
                session.control.interrupt("user")
            return
        if steer in session.steering:
            session.steering.remove(steer)
        steer.result = SessionPromptResult(stop_reason="interrupted", usage=session.usage)
        steer.settled.set()

    async def compact(self, params: SessionCompactParams) -> SessionCompactResult:
        session = self.session(params.session_id)
        if session.profile is None:
            raise RpcError(
                ErrorCode.NO_MODEL_CONFIGURED, "no model configured: " + NO_MODEL_SUGGESTION
            )
        async with session.turn_lock:
            if session.disposed:
                raise session_not_found(session.id)
            result: CompactionResult | None = None  # shut down while it waited: none starts
            if not self.closing:
                control = TurnControl()
                session.control = control
                session.bus.emit(StateUpdateParams(state="processing"))
                try:
                    result = await self._compact(session, control, params.instructions)
                finally:
                    session.control = session.policy = session.runner = None
                    session.bus.emit(StateUpdateParams(state="idle"))
                    self._settle_steering(session, None)  # a steer sent meanwhile runs alone
                await session.synced()
        if result is None:  # interrupted during the summary call
            before = session.usage.prompt_tokens
            return SessionCompactResult(
                strategy="none",
                token_before=before,
                token_compact=before,
                compact_rate=1.0,
                err_msg="interrupted",
                usage=session.usage,
            )
        return SessionCompactResult(
            strategy=result.strategy,
            token_before=result.token_before,
            token_compact=result.token_compact,
            compact_rate=result.rate,
            err_msg=result.err_msg,
            usage=session.usage,
        )

    def _clear(self, session: Session) -> TurnOutcome:
        """`/clear`: a new, empty curated history; the full history stays on disk."""
        session.history.clear()
        session.tokens.reset()
        session.read_files.clear()
        had_todos = bool(session.tool_state.get("todos"))
        session.tool_state["todos"] = []
        if session.pipeline is not None:
            session.pipeline.context_cleared()
        if session.store is not None:
            session.store.append_event("clear")
        session.set_usage(0)
        session.bus.emit(SessionClearedParams())
        if had_todos:
            session.bus.emit(TodosUpdateParams(todos=[]))
        session.bus.emit(ConversationUsageParams(usage=session.usage))
        return TurnOutcome("command")

    async def _compact(
        self, session: Session, control: TurnControl, instructions: str | None
    ) -> CompactionResult | None:
        _, specs, system = self._tools_and_prompt(session)
        session.tokens.set_overhead(system, specs)
        compactor = self._compactor(session, control)
        return await compactor.compact(session.history, "manual", instructions)

    def _compactor(self, session: Session, control: TurnControl) -> Compactor:
        profile = session.profile
        assert profile is not None

        def compacted(result: CompactionResult) -> None:
            if session.store is not None and result.messages is not None:
                session.store.append_compaction(
                    result.messages,
                    strategy=result.strategy,
                    trigger=result.trigger,
                    tokenBefore=result.token_before,
                    tokenCompact=result.token_compact,
                    **({"errMsg": result.err_msg} if result.err_msg else {}),
                )
            session.set_usage(result.token_compact)
            session.bus.emit(ConversationUsageParams(usage=session.usage))

        return Compactor(
            provider=self._provider(session),
            model=profile.model_name,
            max_tokens=profile.max_tokens,
            context_length=profile.context_length,
            tracker=session.tokens,
            bus=session.bus,
            control=control,
            state=session.compaction,
            threshold=compact_threshold(),
            on_compacted=compacted,
            reminders=session.pipeline.standing_reminders if session.pipeline else list,
        )

    def _record_to(self, session: Session) -> list[Path]:
        """The cassettes the session's model exchanges go to: its `recordDir`'s and the
        server's `--record` run folder's (none when nothing records)."""
        from sema_rpc.providers.recording import cassette_path

        dirs = [d for d in (session.record_dir, self.record_dir) if d is not None]
        return [cassette_path(d, session.id) for d in dirs]

    def _provider(self, session: Session) -> Any:
        from sema_rpc.providers.registry import provider_for

        assert session.profile is not None
        return provider_for(session.profile, record_to=self._record_to(session) or None)

    def _tools_and_prompt(self, session: Session) -> tuple[list[Any], list[ToolSpec], str]:
        assert session.pipeline is not None
        setup = session.pipeline.turn_setup()
        return setup.offered, setup.specs, setup.system_prompt

    async def _run_turn(self, session: Session, text: str, control: TurnControl) -> TurnOutcome:
        profile = session.profile
        assert profile is not None and session.pipeline is not None
        user_content, setup = await session.pipeline.prepare(text)
        context = ToolContext(
            working_dir=session.working_dir,
            session_id=session.id,
            read_files=session.read_files,
            state=session.tool_state,
        )
        policy = PermissionPolicy(
            mode=session.permission_mode,
            store=session.rules or RuleStore(session.working_dir),
            client_can_answer=self.client_answers_permissions,
        )
        runner = ToolRunner(
            tools=setup.accepted,
            context=context,
            policy=policy,
            bus=session.bus,
            control=control,
            plan_mode=session.mode == "Plan",
        )
        session.policy, session.runner = policy, runner
        session.tool_state["run_subagent"] = SubagentRunner(
            session, setup, control, policy, self._provider_for_profile(session)
        )
        thinking_budget = (
            max(1024, min(profile.max_tokens // 2, 4000)) if profile.thinking else None
        )
        conversation = Conversation(
            agent_id="main",
            history=session.history,
            provider=self._provider(session),
            config=LoopConfig(
                model=profile.model_name,
                system_prompt=setup.system_prompt,
                tool_specs=setup.specs,
                max_tokens=profile.max_tokens,
                context_length=profile.context_length,
                thinking_budget=thinking_budget,
            ),
            bus=session.bus,
            runner=runner,
            control=control,
            on_message=session.persist,
            persisted=session.synced,
            last_usage=session.usage,
            tokens=session.tokens,
            compactor=self._compactor(session, control),
            on_rebuild=lambda request: self._rebuild(session, request, control, policy),
            take_steering=lambda: self._take_steering(session),
        )
        try:
            outcome = await conversation.query(user_content)
        finally:
            session.tool_state.pop("run_subagent", None)
        session.usage = conversation.last_usage
        return outcome

    def _provider_for_profile(self, session: Session) -> Any:
        """How a subagent gets its provider (its model may differ from the session's)."""
        from sema_rpc.providers.registry import provider_for

        def get(profile: ModelProfile) -> Any:
            replaying = session.profile is not None and session.profile.provider == "replay"
            if profile is session.profile or replaying:
                # A replayed session plays its subagents' calls from its cassette too.
                return self._provider(session)
            # Recorded to the session's cassette(s), between the main agent's exchanges.
            return provider_for(profile, record_to=self._record_to(session) or None)

        return get

    def _set_mode(self, session: Session, mode: str) -> None:
        if session.mode == mode:
            return
        session.mode = mode
        if session.runner is not None:  # the running turn's next tool call obeys it
            session.runner.plan_mode = mode == "Plan"
        if session.pipeline is not None:
            session.pipeline.mode_changed(mode)
        if session.store is not None:
            session.store.append_event("mode", mode=mode)
        session.bus.emit(ModeUpdateEventParams(mode=mode))  # type: ignore[arg-type]

    def _rebuild(
        self,
        session: Session,
        request: dict[str, Any],
        control: TurnControl,
        policy: PermissionPolicy,
    ) -> ContextRebuild:
        """ExitPlanMode was approved: switch mode, rebuild tools and prompt (seed 000)."""
        assert session.pipeline is not None
        self._set_mode(session, str(request.get("newMode") or "Agent"))
        setup = session.pipeline.turn_setup()
        session.tool_state["run_subagent"] = SubagentRunner(
            session, setup, control, policy, self._provider_for_profile(session)
        )
        restart = None
        message = request.get("rebuildMessage")
        if message:  # clearContextAndStart: the curated history restarts from the plan
            session.tokens.reset()
            if session.store is not None:
                session.store.append_event("clear")
                todos = session.tool_state.get("todos")
                if todos:  # a `clear` marker empties todos on load; these live on
                    session.store.append_event("todos", todos=_as_dicts(todos))
            restart = [TextBlock(text=str(message)), *session.pipeline.first_query_blocks(setup)]
        return ContextRebuild(
            system_prompt=setup.system_prompt,
            tool_specs=setup.specs,
            tools=setup.accepted,
            plan_mode=session.mode == "Plan",
            restart_with=restart,
        )

    async def _ask_user(self, session: Session, questions: Any) -> dict[str, Any] | None:
        request = AskQuestionRequestParams.model_validate({"questions": questions})
        answer = await session.bus.ask(request, AskQuestionResult)
        return None if answer is None else {"answers": answer.answers}

    async def _plan_exit(self, session: Session, path: str, text: str) -> PlanExitResult | None:
        request = PlanExitRequestParams(
            plan_file_path=str(path),
            plan_content=text,
            options=["startEditing", "clearContextAndStart", "keepPlanning"],
        )
        return await session.bus.ask(request, PlanExitResult)

    async def _start_mcp(self, session: Session, params: SessionCreateParams) -> None:
        from sema_rpc.mcp import load_mcp_config

        editor = (
            None
            if params.mcp_servers is None
            else [m.model_dump(by_alias=True) for m in params.mcp_servers]
        )
        config = await asyncio.to_thread(load_mcp_config, session.working_dir, editor)
        if not config.servers and not config.errors:
            return
        from sema_rpc.mcp import McpManager

        def died(name: str, message: str) -> None:
            session.mcp_status = session.mcp.status() if session.mcp else session.mcp_status
            if session.pipeline is not None and session.mcp is not None:
                session.pipeline.mcp_tools = session.mcp.tools()
            session.bus.emit(
                SessionErrorParams(
                    type="mcp_error",
                    error=SessionErrorDetail(
                        code="mcp_server_died", message=message, details={"server": name}
                    ),
                )
            )

        session.mcp = McpManager(on_server_error=died)
        session.mcp_status = await session.mcp.start(config, timeout_s=mcp_start_timeout())
        assert session.pipeline is not None
        session.pipeline.mcp_tools = session.mcp.tools()

    async def close_mcp(self, session: Session) -> None:
        if session.mcp is not None:
            manager, session.mcp = session.mcp, None
            await manager.aclose()

    def command_list(self, params: CommandListParams) -> CommandListResult:
        from sema_rpc.engine.custom_commands import list_commands

        working_dir = Path(params.working_dir).expanduser()
        if not working_dir.is_absolute() or not working_dir.is_dir():
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"workingDir is not an absolute directory: {params.working_dir}",
            )
        return CommandListResult.model_validate(
            {"commands": [c.wire() for c in list_commands(working_dir.resolve())]}
        )

    def tool_list(self, params: ToolListParams) -> ToolListResult:
        session = self.session(params.session_id)
        assert session.pipeline is not None
        return ToolListResult(tools=session.pipeline.tool_list())


def _as_dicts(todos: list) -> list[dict]:
    return [t if isinstance(t, dict) else t.model_dump(by_alias=True) for t in todos]


def _todo_items(todos: list[dict]) -> list[TodoItem]:
    items = []
    for t in todos:
        try:
            items.append(TodoItem.model_validate(t))
        except ValueError:
            log.warning("ignoring an invalid todo: %r", t)
    return items
