"""Running a Task subagent: the same loop, its own history, the session's interrupt.

A subagent gets a subset of the main agent's tools for this turn (never Task, so it
cannot nest), its definition's prompt, and its own model. It keeps no history beyond
the task, never compacts and reports no usage. Its events carry its task id as
`agentId`, so an editor can fold them under the Task tool card; `task:agent:start` and
`task:agent:end` frame them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from sema_rpc.core.messages import TextBlock
from sema_rpc.core.policy.permissions import PermissionPolicy
from sema_rpc.core.project.agents import find_agent, resolve_agent_model, subagent_tool_names
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, TurnControl
from sema_rpc.engine.loop.conversation import Conversation, LoopConfig, LoopHooks, LoopState
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.prompt.pipeline import TurnSetup, subagent_setup
from sema_rpc.engine.prompt.system_prompt import build_system_prompt
from sema_rpc.protocol import (
    EventParams,
    SessionInterruptedParams,
    TextChunkParams,
    ThinkingChunkParams,
    WireModel,
)
from sema_rpc.tools.base import ToolContext, ToolError

if TYPE_CHECKING:
    from sema_rpc.core.config import ModelProfile
    from sema_rpc.core.stream import Provider
    from sema_rpc.engine.session.session import Session

SUBAGENT_MAX_TURNS = 50
QUIET_EVENTS = (TextChunkParams, ThinkingChunkParams, SessionInterruptedParams)
"""Not sent for a subagent (protocol/README.md): its `message:complete` carries the text,
and an interrupt is the session's (the main agent reports it once; `task:agent:end` says
`interrupted`)."""


class _SubagentBus:
    """The session's bus as a subagent's loop and runner see it: without `QUIET_EVENTS`
    (usage is off in its LoopConfig; it has no state or todos events to send)."""

    def __init__(self, bus: EventBus):
        self._bus = bus

    def emit(self, event: EventParams, agent_id: str = "main") -> None:
        if not isinstance(event, QUIET_EVENTS):
            self._bus.emit(event, agent_id)

    def ask(
        self, event: EventParams, result_type: type[WireModel], agent_id: str = "main"
    ) -> Awaitable[Any]:
        return self._bus.ask(event, result_type, agent_id)

    def tool_running(self, tool_call_id: str) -> None:
        self._bus.tool_running(tool_call_id)


@dataclass
class SubagentRunner:
    """`ctx.services.run_subagent` for one turn of the main agent."""

    session: Session
    turn: TurnSetup
    control: TurnControl
    policy: PermissionPolicy
    provider_for: Callable[[ModelProfile], Provider]

    async def __call__(
        self, subagent_type: str, description: str, prompt: str, *, tool_call_id: str = ""
    ) -> str:
        from sema_rpc.protocol import TaskAgentStartParams

        session = self.session
        agent = find_agent(session.working_dir, subagent_type)
        if agent is None or session.profile is None:
            raise ToolError(f"Unknown subagent type: {subagent_type}")
        task_id = f"task-{tool_call_id}" if tool_call_id else f"task-{id(self):x}"
        session.bus.emit(
            TaskAgentStartParams(
                task_id=task_id, subagent_type=agent.name, description=description, prompt=prompt
            )
        )
        profile = resolve_agent_model(agent, session.profile)
        names = subagent_tool_names(agent, [t.name for t in self.turn.offered])
        system = build_system_prompt(session.working_dir, session.mode, extra=agent.full_prompt())
        setup = subagent_setup(session.working_dir, names, self.turn.accepted, system)
        context = ToolContext(
            working_dir=session.working_dir,
            session_id=session.id,
            agent_id=task_id,
            read_files=session.read_files,
            services=session.services,
        )
        bus = cast(EventBus, _SubagentBus(session.bus))
        runner = ToolRunner(
            tools=setup.accepted,
            context=context,
            policy=self.policy,
            bus=bus,
            control=self.control,
            agent_id=task_id,
            plan_mode=session.mode == "Plan",
        )
        conversation = Conversation(
            task_id,
            LoopHooks(
                provider=self.provider_for(profile), bus=bus, runner=runner, control=self.control
            ),
            LoopState(
                history=[],
                config=LoopConfig(
                    model=profile.model_name,
                    system_prompt=setup.system_prompt,
                    tool_specs=setup.specs,
                    max_tokens=profile.max_tokens,
                    context_length=profile.context_length,
                    max_turns=SUBAGENT_MAX_TURNS,
                    emits_usage=False,
                    compacts=False,
                ),
            ),
        )

        def end(status: Literal["completed", "failed", "interrupted"], content: str) -> None:
            from sema_rpc.protocol import TaskAgentEndParams

            session.bus.emit(TaskAgentEndParams(task_id=task_id, status=status, content=content))

        try:
            outcome = await conversation.query([TextBlock(text=prompt)])
        except asyncio.CancelledError:
            # An interrupt cancelled the Task call mid-stream: the client still sees the
            # subagent end.
            end("interrupted", _final_text(conversation))
            raise
        except BaseException as exc:  # a bug: still close the subagent's card
            end("failed", f"{type(exc).__name__}: {exc}")
            raise
        final = _final_text(conversation)
        if outcome.stop_reason == "error":
            message = outcome.error.message if outcome.error else "the model call failed"
            end("failed", message)
            raise ToolError(f"The {agent.name} subagent failed: {message}")
        if outcome.stop_reason == "interrupted":
            end("interrupted", final)
            raise ToolError(CANCEL_MESSAGE)
        end("completed", final)
        return final


def _final_text(conversation: Conversation) -> str:
    """The subagent's last text: its answer (or what it had said when it stopped)."""
    return next(
        (
            m.text()
            for m in reversed(conversation.state.history)
            if m.role == "assistant" and m.text()
        ),
        "",
    )
