"""SemaEngine: sessions and the processUserInput pipeline (seed 001).

One engine serves every session of a process. A session runs one turn at a time; a
prompt that arrives while a turn runs waits its turn (followUp delivery) and is answered
when its own turn ends.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sema_rpc.config import ConfigError, ModelProfile, resolve_model
from sema_rpc.engine.control import TurnControl
from sema_rpc.engine.conversation import Conversation, LoopConfig, TurnOutcome
from sema_rpc.engine.events import ClientBridge, EventBus
from sema_rpc.engine.messages import Message, TextBlock
from sema_rpc.engine.permissions import PermissionPolicy, RuleStore
from sema_rpc.engine.run_tools import ToolRunner
from sema_rpc.engine.system_prompt import build_system_prompt
from sema_rpc.protocol import (
    ConfigNoModelsParams,
    ErrorCode,
    ModeUpdateEventParams,
    ModeUpdateParams,
    ModeUpdateResult,
    RpcError,
    SessionCreateParams,
    SessionPromptParams,
    SessionPromptResult,
    SessionReadyEventParams,
    SessionReadyParams,
    StateUpdateParams,
    TodoItem,
    TodosUpdateParams,
    TokenUsage,
    session_not_found,
)
from sema_rpc.providers.base import ToolSpec
from sema_rpc.tools.base import FileSnapshot, ToolContext

log = logging.getLogger(__name__)

NO_MODEL_SUGGESTION = (
    "Set ANTHROPIC_API_KEY or OPENAI_API_KEY, pass `model` (e.g. `anthropic/claude-sonnet-4-5`) "
    "to session/create, or add a profile to $SEMA_ROOT/models.json."
)


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
    read_files: dict[str, FileSnapshot] = field(default_factory=dict)
    tool_state: dict = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    control: TurnControl | None = None
    rules: RuleStore | None = None

    def ready_params(self, history_loaded: bool) -> SessionReadyParams:
        return SessionReadyParams(
            session_id=self.id,
            working_dir=str(self.working_dir),
            history_loaded=history_loaded,
            usage=self.usage,
            mode=self.mode,  # type: ignore[arg-type]
            permission_mode=self.permission_mode,  # type: ignore[arg-type]
            model=f"{self.profile.provider}/{self.profile.model_name}" if self.profile else None,
        )


class SemaEngine:
    def __init__(self, bridge: ClientBridge, *, client_answers_permissions: bool = False):
        self.bridge = bridge
        self.client_answers_permissions = client_answers_permissions
        self.sessions: dict[str, Session] = {}

    # ------------------------------------------------------------------ sessions

    def session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise session_not_found(session_id)
        return session

    async def create_session(self, params: SessionCreateParams) -> SessionReadyParams:
        working_dir = Path(params.working_dir).expanduser()  # noqa: ASYNC240 (a stat, not I/O worth a thread)
        if not working_dir.is_absolute():
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"workingDir must be an absolute path: {params.working_dir}",
            )
        if not working_dir.is_dir():
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"workingDir is not a directory: {params.working_dir}"
            )
        try:
            profile = resolve_model(params.model)
        except ConfigError as exc:
            raise RpcError(ErrorCode.CONFIG_ERROR, str(exc)) from exc
        if params.model is not None and profile is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"unknown model: {params.model}")

        session_id = params.session_id or uuid.uuid4().hex
        existing = self.sessions.get(session_id)
        if existing is not None:
            ready = existing.ready_params(history_loaded=bool(existing.history))
            existing.bus.emit(SessionReadyEventParams(**ready.model_dump()))
            return ready

        session = Session(
            id=session_id,
            working_dir=working_dir.resolve(),
            bus=EventBus(session_id, self.bridge),
            mode=params.mode,
            permission_mode=params.permission_mode,
            model_spec=params.model,
            profile=profile,
            use_tools=params.use_tools,
        )
        session.rules = RuleStore(session.working_dir)
        session.tool_state["on_todos"] = lambda todos: session.bus.emit(
            TodosUpdateParams(todos=[TodoItem.model_validate(t) for t in _as_dicts(todos)])
        )
        self.sessions[session_id] = session
        if profile is not None:
            session.usage = TokenUsage(max_tokens=profile.context_length)
            from sema_rpc.providers.registry import warm_up

            warm_up(profile)

        ready = session.ready_params(history_loaded=False)
        session.bus.emit(SessionReadyEventParams(**ready.model_dump()))
        if profile is None:
            session.bus.emit(
                ConfigNoModelsParams(
                    message="No model is configured.", suggestion=NO_MODEL_SUGGESTION
                )
            )
        return ready

    def interrupt(self, session_id: str) -> bool:
        control = self.session(session_id).control
        return control.interrupt("user") if control is not None else False

    def update_mode(self, params: ModeUpdateParams) -> ModeUpdateResult:
        session = self.session(params.session_id)
        if session.mode != params.mode:
            session.mode = params.mode
            session.bus.emit(ModeUpdateEventParams(mode=params.mode))
        return ModeUpdateResult(mode=params.mode)

    async def shutdown(self, grace_s: float = 5.0) -> None:
        """Interrupt every running turn and wait (briefly) for them to settle."""
        for session in self.sessions.values():
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

    # ------------------------------------------------------------------ processUserInput

    async def prompt(self, params: SessionPromptParams) -> SessionPromptResult:
        session = self.session(params.session_id)
        if session.profile is None:
            session.bus.emit(
                ConfigNoModelsParams(
                    message="No model is configured.", suggestion=NO_MODEL_SUGGESTION
                )
            )
            raise RpcError(
                ErrorCode.NO_MODEL_CONFIGURED, "no model configured: " + NO_MODEL_SUGGESTION
            )
        async with session.turn_lock:
            control = TurnControl()
            session.control = control
            session.bus.emit(StateUpdateParams(state="processing"))
            try:
                outcome = await self._run_turn(session, params.input, control)
            finally:
                session.control = None
                session.bus.emit(StateUpdateParams(state="idle"))
            return SessionPromptResult(
                stop_reason=outcome.stop_reason,  # type: ignore[arg-type]
                usage=session.usage,
                error=outcome.error,
            )

    async def _run_turn(self, session: Session, text: str, control: TurnControl) -> TurnOutcome:
        from sema_rpc.providers.registry import provider_for
        from sema_rpc.tools.registry import builtin_tools

        profile = session.profile
        assert profile is not None
        plan_mode = session.mode == "Plan"
        tools = builtin_tools(session.use_tools, plan_mode=plan_mode)
        tool_specs = [ToolSpec(t.name, t.description, t.input_schema()) for t in tools]
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
            # Plan mode is enforced by the runner too: a write tool called by name is refused.
            tools={t.name: t for t in builtin_tools(session.use_tools, plan_mode=False)},
            context=context,
            policy=policy,
            bus=session.bus,
            control=control,
            plan_mode=plan_mode,
        )
        thinking_budget = (
            max(1024, min(profile.max_tokens // 2, 4000)) if profile.thinking else None
        )
        conversation = Conversation(
            agent_id="main",
            history=session.history,
            provider=provider_for(profile),
            config=LoopConfig(
                model=profile.model_name,
                system_prompt=build_system_prompt(session.working_dir, session.mode),
                tool_specs=tool_specs,
                max_tokens=profile.max_tokens,
                context_length=profile.context_length,
                thinking_budget=thinking_budget,
            ),
            bus=session.bus,
            runner=runner,
            control=control,
            last_usage=session.usage,
        )
        outcome = await conversation.query([TextBlock(text=text)])
        session.usage = conversation.last_usage
        return outcome


def _as_dicts(todos: list) -> list[dict]:
    return [t if isinstance(t, dict) else t.model_dump(by_alias=True) for t in todos]
