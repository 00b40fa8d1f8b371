"""SemaEngine: what a client can ask of the agent, over its sessions (SessionRegistry in
sessions.py) and their turns (turns.py).

One engine serves every session of a process. A session runs one turn at a time; a
prompt that arrives while a turn runs waits its turn (followUp delivery) and is answered
when its own turn ends.

Sessions last: each keeps its curated history (what the model sees) in
memory and appends every completed message to its comprehensive history on disk
(store/history_writer.py). `session/create` with a known id loads it back; compaction
(compaction.py) keeps the curated history inside the model's window; token figures come
from tokens.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sema_rpc.core.errors import (
    InvalidArgument,
    NoModelConfigured,
    SessionNotFound,
)
from sema_rpc.core.errors import working_dir as checked_working_dir
from sema_rpc.core.messages import ContentBlock, TextBlock, new_message_id
from sema_rpc.core.policy.permissions import PermissionPolicy
from sema_rpc.engine.events import ClientBridge
from sema_rpc.engine.loop.compaction import (
    CompactionResult,
)
from sema_rpc.engine.loop.control import PromptCancel, TurnControl
from sema_rpc.engine.loop.conversation import (
    ContextRebuild,
    Conversation,
    LoopConfig,
    LoopHooks,
    LoopState,
    TurnOutcome,
)
from sema_rpc.engine.models import available_models, loop_settings, profile_for
from sema_rpc.engine.prompt.inputs import PromptContent, to_content
from sema_rpc.engine.session import assembly, lifecycle
from sema_rpc.engine.session.rewind import emit_turn_diff
from sema_rpc.engine.session.rewind import rewind as rewind_session
from sema_rpc.engine.session.session import Session, SteerInput, as_dicts
from sema_rpc.engine.session.sessions import NO_MODEL_SUGGESTION, SessionRegistry
from sema_rpc.engine.session.turns import (
    NotStarted,
    drop_steer,
    exclusive_turn,
    settle_steering,
    take_steering,
)
from sema_rpc.engine.store.history_writer import synced_all
from sema_rpc.protocol import Mode, PromptInputBlock, SessionPromptParams, SessionPromptResult
from sema_rpc.tools.base import RebuildContext

if TYPE_CHECKING:
    from sema_rpc.protocol import (
        CommandListParams,
        CommandListResult,
        ModelListParams,
        ModelListResult,
        ModeUpdateParams,
        ModeUpdateResult,
        PermissionModeUpdateParams,
        PermissionModeUpdateResult,
        SessionCompactParams,
        SessionCompactResult,
        SessionRewindParams,
        SessionRewindResult,
        SessionSetModelParams,
        SessionSetModelResult,
        SessionSetSandboxParams,
        SessionSetSandboxResult,
        ToolListParams,
        ToolListResult,
    )

log = logging.getLogger(__name__)


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


def _untitled(content: PromptContent) -> str:
    """A title for an input without typed text: what it attached."""
    names = [b.path or "image" for b in content.images]
    return "[" + ", ".join(names or ["resource"]) + "]"


class SemaEngine(SessionRegistry):
    """The agent of one process: its sessions (SessionRegistry) and their turns."""

    def __init__(self, bridge: ClientBridge, *, client_answers_permissions: bool = False):
        super().__init__(bridge)
        self.client_answers_permissions = client_answers_permissions

    def interrupt(self, session_id: str) -> bool:
        """`session/interrupt`: the running turn stops, or the prompt read and not yet
        started never runs (lifecycle.stop); queued follow-ups keep their place."""
        return lifecycle.stop(self.session(session_id), queued=False)

    def cancel_prompts(self, session_id: str) -> bool:
        """ACP `session/cancel`: the running turn stops and every prompt read for the
        session and not answered yet answers cancelled. An unknown session: nothing."""
        session = self.sessions.get(session_id)
        if session is None or session.disposed:
            return False
        return lifecycle.stop(session, queued=True)

    def accept_prompt(self, session_id: Any) -> PromptCancel:
        """A dialect read a `session/prompt` for `session_id`: from now on a stop or a
        close reaches it. Its dialect calls `lifecycle.answered` once it is answered."""
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        return lifecycle.accept(session)

    def update_mode(self, params: ModeUpdateParams) -> ModeUpdateResult:
        from sema_rpc.protocol import ModeUpdateResult

        session = self.session(params.session_id)
        self._set_mode(session, params.mode)
        return ModeUpdateResult(mode=params.mode)

    # ------------------------------------------------------------------ models

    def list_models(self, session_id: str | None = None) -> ModelListResult:
        """The models a session can use (`models.available_models`); `current`: the
        session's model, with `session_id`. Raises ConfigError for a broken models.json,
        SessionNotFound for an unknown session."""
        session = self.session(session_id) if session_id is not None else None
        return available_models(session.profile if session is not None else None)

    def set_model(
        self, session_id: str, name: str, thinking: bool | None = None
    ) -> SessionSetModelResult:
        """Switch the session's model. It takes effect at the next model call — in a
        running turn, the call after the current one — and is recorded in the history,
        so a resumed session keeps it. `thinking`: turn extended thinking on or off
        (None: the profile's setting). Emits `model:update`.

        Raises InvalidArgument for a name that is no profile and no `provider/model-id`
        (the message lists the profiles), ConfigError when the model cannot run (no API
        key, a broken models.json), SessionNotFound."""
        from sema_rpc.protocol import ModelUpdateParams, SessionSetModelResult

        session = self.session(session_id)
        profile = profile_for(name, thinking)
        session.profile = profile
        session.model_spec = name
        session.usage = session.usage.model_copy(update={"max_tokens": profile.context_length})
        session.unrecorded_model = None
        session.store.append_event("model", model=name, thinking=thinking)
        running, control = session.conversation, session.control
        if running is not None and control is not None:
            # The running turn's next model call (and compaction) use the new model.
            running.switch_model(
                assembly.provider(session, self.record_dir),
                assembly.compactor(session, control, self.record_dir),
                **loop_settings(profile),
            )
        else:  # the next prompt's first request starts warm, as after session/create
            from sema_rpc.providers.registry import warm_up

            warm_up(profile)
        session.bus.emit(
            ModelUpdateParams(
                model=profile.name,
                provider=profile.provider,
                model_name=profile.model_name,
                context_length=profile.context_length,
                images=bool(profile.images),
                thinking=profile.thinking,
            )
        )
        return SessionSetModelResult(model=profile.name, thinking=profile.thinking)

    def model_list(self, params: ModelListParams) -> ModelListResult:
        return self.list_models(params.session_id)

    def session_set_model(self, params: SessionSetModelParams) -> SessionSetModelResult:
        return self.set_model(params.session_id, params.model, params.thinking)

    def update_permission_mode(
        self, params: PermissionModeUpdateParams
    ) -> PermissionModeUpdateResult:
        from sema_rpc.protocol import PermissionModeUpdateResult

        session = self.session(params.session_id)
        session.permission_mode = params.permission_mode
        if session.policy is not None:
            session.policy.mode = params.permission_mode
        return PermissionModeUpdateResult(permission_mode=params.permission_mode)

    def set_sandbox(self, params: SessionSetSandboxParams) -> SessionSetSandboxResult:
        """`session/setSandbox`: the next command (of this turn too) runs in the new mode."""
        from sema_rpc.protocol import SandboxUpdateParams

        session = self.session(params.session_id)
        network = session.services.sandbox.network if params.network is None else params.network
        chosen = self.sandbox_settings(params.mode, network)
        box = session.services.sandbox
        box.mode, box.network, box.reason = chosen.mode, chosen.network, chosen.reason
        state = session.sandbox_state()
        session.bus.emit(SandboxUpdateParams.model_validate(state.model_dump()))
        return state

    async def rewind(self, params: SessionRewindParams) -> SessionRewindResult:
        """session/rewind (rewind.py), while the session runs no turn: one that runs (or
        waits to) makes it refuse; a prompt sent meanwhile waits for it."""
        session = self.session(params.session_id)
        lifecycle.require_quiet(session, "rewind")
        async with session.turn_lock:
            if session.disposed:
                raise SessionNotFound(session.id)
            return await rewind_session(session, params)

    async def shutdown(self, grace_s: float = 5.0) -> None:
        """Interrupt every running turn and wait (briefly) for them to settle. Nothing
        new starts: queued prompts and waiting steers answer `interrupted` without running.
        Then every session's MCP servers are stopped.

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
        for session in self.sessions.values():
            session.store.discard_if_unused()  # a history file created ahead, unused
            session.services.sandbox.close()  # the session's private temp dir
        await synced_all()
        # MCP servers are children of this process: stop them and wait for them to go.
        closing = [self.close_mcp(s) for s in self.sessions.values() if s.mcp is not None]
        if closing:
            await asyncio.gather(*closing, return_exceptions=True)

    # ------------------------------------------------------------------ processUserInput

    async def prompt(
        self, params: SessionPromptParams, cancel: PromptCancel | None = None
    ) -> SessionPromptResult:
        """Run one input when its turn comes; answers once, also when `cancel` comes at
        any stage (before it starts, while it waits, while it runs)."""
        return await self.prompt_input(
            params.session_id, params.input, delivery=params.delivery, cancel=cancel
        )

    async def prompt_input(
        self,
        session_id: str,
        user_input: str | Sequence[PromptInputBlock | ContentBlock],
        *,
        delivery: str = "followUp",
        cancel: PromptCancel | None = None,
    ) -> SessionPromptResult:
        """`prompt` for in-process callers: the input is a string, or content blocks —
        the wire's (`TextInputBlock`, `ImageInputBlock`, `ResourceInputBlock`) or the
        engine's own (`TextBlock`, `ImageBlock`), see inputs.py."""
        session = self.session(session_id)
        cancel = cancel if cancel is not None else PromptCancel()
        if cancel.cancelled or self.closing:  # cancelled before it started: nothing runs
            return session.prompt_result("interrupted", ran=False)
        # Every refusal (a block that cannot be used, images for a model without them)
        # comes before anything is recorded: nothing of a refused input is kept.
        content = to_content(user_input, session.working_dir)
        text = content.text
        turn_input: str | list[ContentBlock] = text if content.text_only else content.blocks
        command = system_command(text)
        if command is not None and not content.text_only:
            raise InvalidArgument(
                f"/{command[0]} takes no images or resources: send it as text on its own"
            )
        profile = session.profile
        if content.images and profile is not None and not profile.images:
            raise InvalidArgument(
                f"the model {profile.name!r} does not take images; send text only, or use"
                ' a model that does (a models.json profile with "images": true)',
                {"model": profile.name},
            )
        if text:
            session.inputs.add(text)
        if profile is None and (command is None or command[0] != "clear"):
            # config:no_models went out once, with session:ready; the error says it again.
            raise NoModelConfigured("no model configured: " + NO_MODEL_SUGGESTION)
        if delivery == "steer" and command is None and session.control is not None:
            steer = SteerInput(turn_input)
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
            message_id = None
            if command is None:
                if not session.history:
                    # What the user typed names the session in session/list (the first
                    # message may be a custom command's expansion).
                    title = text.strip() or _untitled(content)
                    # Held: written with the prompt's message, in the same sync.
                    session.store.hold_event("title", title=title[:500])
                if session.unrecorded_model is not None:
                    session.store.hold_event("model", model=session.unrecorded_model, thinking=None)
                    session.unrecorded_model = None
                message_id = new_message_id()
                outcome = await self._run_turn(session, turn_input, control, message_id)
            elif command[0] == "clear":
                outcome = self._clear(session)
            else:
                await self._compact(session, control, command[1] or None)
                outcome = TurnOutcome("interrupted" if control.interrupted else "command")
            await session.synced()  # answered once the turn is on disk
            return session.prompt_result(
                outcome.stop_reason,
                outcome.error,
                message_id=message_id,
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
            return session.prompt_result("interrupted", ran=False)
        return result

    async def compact(self, params: SessionCompactParams) -> SessionCompactResult:
        from sema_rpc.protocol import SessionCompactResult

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
        from sema_rpc.protocol import SessionClearedParams, TodosUpdateParams

        session.history.clear()
        session.tokens.reset()
        session.read_files.clear()
        session.redo = None
        had_todos = bool(session.services.todos)
        session.services.todos = []
        session.pipeline.context_cleared()
        session.store.append_event("clear")
        session.set_usage(0)
        session.bus.emit(SessionClearedParams())
        if had_todos:
            session.bus.emit(TodosUpdateParams(todos=[]))
        session.bus.emit(session.usage_event())
        return TurnOutcome("command")

    async def _compact(
        self, session: Session, control: TurnControl, instructions: str | None
    ) -> CompactionResult | None:
        setup = session.pipeline.turn_setup()
        session.tokens.set_overhead(setup.system_prompt, setup.specs)
        session.redo = None  # the history the redo would restore is gone
        compactor = assembly.compactor(session, control, self.record_dir)
        return await compactor.compact(session.history, "manual", instructions)

    async def _run_turn(
        self,
        session: Session,
        user_input: str | list[ContentBlock],
        control: TurnControl,
        message_id: str,
    ) -> TurnOutcome:
        profile = session.profile
        assert profile is not None  # a prompt without a model is refused before its turn
        if session.trust_pending is not None:  # the project's servers: ask first
            from sema_rpc.engine.session import project_trust
            from sema_rpc.engine.session.sessions import mcp_start_timeout

            await project_trust.settle(session, control, mcp_start_timeout())
        user_content, setup = await session.pipeline.prepare(user_input)
        session.redo = None  # a new prompt makes the last rewind final
        if not session.checkpoints.ready:  # read ahead by the warm-up, usually
            await asyncio.to_thread(session.checkpoints.load)
        session.checkpoints.begin_turn(message_id)
        runner = assembly.tool_runner(
            session, setup, control, client_answers=self.client_answers_permissions
        )
        policy = runner.policy
        assembly.arm_subagents(session, setup, control, policy, self.record_dir)
        hooks = LoopHooks(
            provider=assembly.provider(session, self.record_dir),
            bus=session.bus,
            runner=runner,
            control=control,
            tokens=session.tokens,
            compactor=assembly.compactor(session, control, self.record_dir),
            on_message=session.persist,
            persisted=session.synced,
            on_rebuild=lambda request: self._rebuild(session, request, control, policy),
            totals=session.totals,
            take_steering=lambda: take_steering(session, session.pipeline.input_blocks),
            continuation=assembly.continuation_check(session, self.record_dir),
        )
        state = LoopState(
            history=session.history,
            config=LoopConfig(
                system_prompt=setup.system_prompt,
                tool_specs=setup.specs,
                **loop_settings(profile),
            ),
            last_usage=session.usage,
        )
        conversation = Conversation("main", hooks, state)
        session.conversation = conversation
        try:
            outcome = await conversation.query(user_content, message_id)
        finally:
            session.services.run_subagent = None
            session.conversation = None
        session.usage = state.last_usage
        await emit_turn_diff(session, message_id)
        return outcome

    def _set_mode(self, session: Session, mode: Mode) -> None:
        if session.mode == mode:
            return
        from sema_rpc.protocol import ModeUpdateEventParams

        session.mode = mode
        if session.runner is not None:  # the running turn's next tool call obeys it
            session.runner.plan_mode = mode == "Plan"
        session.pipeline.mode_changed(mode)
        session.store.append_event("mode", mode=mode)
        session.bus.emit(ModeUpdateEventParams(mode=mode))

    def _rebuild(
        self,
        session: Session,
        request: RebuildContext,
        control: TurnControl,
        policy: PermissionPolicy,
    ) -> ContextRebuild:
        """ExitPlanMode was approved: switch mode, rebuild tools and prompt."""
        self._set_mode(session, request.new_mode)
        setup = session.pipeline.turn_setup()
        assembly.arm_subagents(session, setup, control, policy, self.record_dir)
        restart = None
        message = request.rebuild_message
        if message:  # clearContextAndStart: the curated history restarts from the plan
            session.tokens.reset()
            session.store.append_event("clear")
            todos = session.services.todos
            if todos:  # a `clear` marker empties todos on load; these live on
                session.store.append_event("todos", todos=as_dicts(todos))
            restart = [TextBlock(text=str(message)), *session.pipeline.first_query_blocks(setup)]
        return ContextRebuild(
            system_prompt=setup.system_prompt,
            tool_specs=setup.specs,
            tools=setup.accepted,
            plan_mode=session.mode == "Plan",
            restart_with=restart,
        )

    def command_list(self, params: CommandListParams) -> CommandListResult:
        from sema_rpc.core.project.custom_commands import list_commands
        from sema_rpc.protocol import CommandListResult

        working_dir = checked_working_dir(params.working_dir)
        return CommandListResult.model_validate(
            {"commands": [c.wire() for c in list_commands(working_dir.resolve())]}
        )

    def tool_list(self, params: ToolListParams) -> ToolListResult:
        from sema_rpc.protocol import ToolListResult

        session = self.session(params.session_id)
        return ToolListResult(tools=session.pipeline.tool_list())
