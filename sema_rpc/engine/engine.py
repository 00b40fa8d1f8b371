"""SemaEngine: sessions and what one user input goes through.

One engine serves every session of a process. A session runs one turn at a time; a
prompt that arrives while a turn runs waits its turn (followUp delivery) and is answered
when its own turn ends.

Sessions last: each keeps its curated history (what the model sees) in
memory and appends every completed message to its comprehensive history on disk
(history.py). `session/create` with a known id loads it back; compaction (compaction.py)
keeps the curated history inside the model's window; token figures come from tokens.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sema_rpc.core.config import resolve_model
from sema_rpc.core.errors import (
    HistoryUnreadable,
    InvalidArgument,
    NoModelConfigured,
    SessionNotFound,
)
from sema_rpc.core.errors import working_dir as checked_working_dir
from sema_rpc.core.messages import TextBlock
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.core.stream import ToolSpec
from sema_rpc.engine import assembly
from sema_rpc.engine.compaction import (
    CompactionResult,
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
from sema_rpc.engine.pipeline import InputPipeline
from sema_rpc.engine.session import Session, SteerInput
from sema_rpc.engine.tokens import TokenCounter, TokenTracker, counter_for_model
from sema_rpc.engine.turns import (
    NotStarted,
    drop_steer,
    exclusive_turn,
    settle_steering,
    take_steering,
)
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    AskQuestionResult,
    CommandListParams,
    CommandListResult,
    ConfigNoModelsParams,
    ConversationUsageParams,
    ModeUpdateEventParams,
    ModeUpdateParams,
    ModeUpdateResult,
    PermissionModeUpdateParams,
    PermissionModeUpdateResult,
    PlanExitRequestParams,
    PlanExitResult,
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
    TodoItem,
    TodosUpdateParams,
    ToolListParams,
    ToolListResult,
)
from sema_rpc.tools.base import RebuildContext

log = logging.getLogger(__name__)

NO_MODEL_SUGGESTION = (
    "Set ANTHROPIC_API_KEY or OPENAI_API_KEY, pass `model` (e.g. `anthropic/claude-sonnet-4-5`) "
    "to session/create, or add a profile to $SEMA_ROOT/models.json."
)
DISPOSE_GRACE_S = 10.0


def mcp_start_timeout() -> float:
    """Seconds to wait for a session's MCP servers to start (env SEMA_MCP_START_TIMEOUT_S)."""
    try:
        return float(os.environ.get("SEMA_MCP_START_TIMEOUT_S", "10"))
    except ValueError:
        return 10.0


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
        self.session_record_dirs: Callable[[str, str], Path] | None = None
        """session/create `recordDir` → the session's recording folder, given by the
        recording layer (`(recordDir, sessionId) -> folder`, created on first use; raises
        ValueError for a relative path, OSError when it cannot be created). None: this
        engine cannot record, and a `recordDir` is an error."""
        self.closing = False
        """Set by `shutdown()`: nothing new starts; waiting prompts answer `interrupted`."""

    # ------------------------------------------------------------------ sessions

    def _session_record_dir(self, record_dir: str | None, session_id: str) -> Path | None:
        """session/create `recordDir` → the session's recording folder (created now)."""
        if record_dir is None:
            return None
        if self.session_record_dirs is None:
            raise InvalidArgument("recordDir: this server cannot record")
        try:
            return self.session_record_dirs(record_dir, session_id)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from exc
        except OSError as exc:
            raise InvalidArgument(f"cannot record to {record_dir}: {exc.strerror or exc}") from exc

    def session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.disposed:
            raise SessionNotFound(session_id)
        return session

    async def create_session(self, params: SessionCreateParams) -> SessionReadyParams:
        working_dir = checked_working_dir(params.working_dir)  # a stat, not I/O worth a thread
        if params.session_id is not None and not valid_session_id(params.session_id):
            raise InvalidArgument(
                "sessionId must be 1-128 letters, digits, '.', '_' or '-', not starting with "
                f"'.', '_' or '-': {params.session_id!r}",
            )
        profile = resolve_model(params.model)  # ConfigError: the wire says so
        if params.model is not None and profile is None:
            raise InvalidArgument(f"unknown model: {params.model}")

        session_id = params.session_id or uuid.uuid4().hex
        record_dir = self._session_record_dir(params.record_dir, session_id)
        existing = self.sessions.get(session_id)
        if existing is not None and not existing.disposed:
            existing.record_dir = existing.record_dir or record_dir
            return self._ready(existing)

        loaded: LoadedHistory | None = None
        if params.session_id is not None:
            try:
                loaded = await asyncio.to_thread(load_history, session_id)
            except HistoryError as exc:
                raise HistoryUnreadable(str(exc), session_id) from exc
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
        session.services.on_todos = lambda todos: self._todos_changed(session, todos)
        session.services.ask_user = lambda questions: self._ask_user(session, questions)
        session.services.plan_exit = lambda path, text: self._plan_exit(session, path, text)
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
        if session.services.todos:
            session.bus.emit(TodosUpdateParams(todos=_todo_items(session.services.todos)))
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
        if loaded.source == "json":  # the older JSON format: continue it as JSONL
            session.store.import_messages(loaded.messages, loaded.todos)
        repair = dangling_tool_results(session.history)
        if repair is not None:  # the process died while tools ran
            append_curated(session.history, repair)
            session.store.append_message(repair)
        if loaded.mark is not None:
            length, tokens = loaded.mark
            session.tokens.set_mark(length, session.history[length - 1], tokens)
        if loaded.todos:
            session.services.todos = loaded.todos
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
            working_dir = checked_working_dir(params.working_dir, must_exist=False)
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
                drop_steer(session, steer)
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
            raise NoModelConfigured("no model configured: " + NO_MODEL_SUGGESTION)
        if params.delivery == "steer" and command is None and session.control is not None:
            steer = SteerInput(params.input)
            session.steering.append(steer)
            cancel.on_cancel(lambda: drop_steer(session, steer))
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

        async def turn(control: TurnControl) -> SessionPromptResult:
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
            return SessionPromptResult(
                stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
                usage=session.usage,
                error=outcome.error,
            )

        result = await exclusive_turn(
            session,
            turn,
            cancel=cancel,
            closing=lambda: self.closing,
            # Also when the turn raised: a steer that joined it is answered with it.
            on_end=lambda result, failure: settle_steering(session, result, failure),
        )
        if isinstance(result, NotStarted):
            return SessionPromptResult(stop_reason="interrupted", usage=session.usage)
        return result

    async def compact(self, params: SessionCompactParams) -> SessionCompactResult:
        session = self.session(params.session_id)
        if session.profile is None:
            raise NoModelConfigured("no model configured: " + NO_MODEL_SUGGESTION)

        async def turn(control: TurnControl) -> CompactionResult | None:
            compacted = await self._compact(session, control, params.instructions)
            await session.synced()
            return compacted

        ran = await exclusive_turn(
            session,
            turn,
            cancel=PromptCancel(),
            closing=lambda: self.closing,
            on_end=lambda _result, _failure: settle_steering(session, None),  # steers run alone
        )
        if ran is NotStarted.DISPOSED:
            raise SessionNotFound(session.id)
        result = None if isinstance(ran, NotStarted) else ran  # shut down: none starts
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
        had_todos = bool(session.services.todos)
        session.services.todos = []
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
        compactor = assembly.compactor(session, control, self.record_dir)
        return await compactor.compact(session.history, "manual", instructions)

    def _tools_and_prompt(self, session: Session) -> tuple[list[Any], list[ToolSpec], str]:
        assert session.pipeline is not None
        setup = session.pipeline.turn_setup()
        return setup.offered, setup.specs, setup.system_prompt

    async def _run_turn(self, session: Session, text: str, control: TurnControl) -> TurnOutcome:
        profile = session.profile
        assert profile is not None and session.pipeline is not None
        user_content, setup = await session.pipeline.prepare(text)
        runner = assembly.tool_runner(
            session, setup, control, client_answers=self.client_answers_permissions
        )
        policy = runner.policy
        assembly.arm_subagents(session, setup, control, policy, self.record_dir)
        thinking_budget = (
            max(1024, min(profile.max_tokens // 2, 4000)) if profile.thinking else None
        )
        conversation = Conversation(
            agent_id="main",
            history=session.history,
            provider=assembly.provider(session, self.record_dir),
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
            compactor=assembly.compactor(session, control, self.record_dir),
            on_rebuild=lambda request: self._rebuild(session, request, control, policy),
            take_steering=lambda: take_steering(
                session, session.pipeline.input_blocks if session.pipeline else None
            ),
        )
        try:
            outcome = await conversation.query(user_content)
        finally:
            session.services.run_subagent = None
        session.usage = conversation.last_usage
        return outcome

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
        request: RebuildContext,
        control: TurnControl,
        policy: PermissionPolicy,
    ) -> ContextRebuild:
        """ExitPlanMode was approved: switch mode, rebuild tools and prompt."""
        assert session.pipeline is not None
        self._set_mode(session, request.new_mode)
        setup = session.pipeline.turn_setup()
        assembly.arm_subagents(session, setup, control, policy, self.record_dir)
        restart = None
        message = request.rebuild_message
        if message:  # clearContextAndStart: the curated history restarts from the plan
            session.tokens.reset()
            if session.store is not None:
                session.store.append_event("clear")
                todos = session.services.todos
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
        from sema_rpc.core.project.custom_commands import list_commands

        working_dir = checked_working_dir(params.working_dir)
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
