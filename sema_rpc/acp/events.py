"""Engine events → ACP notifications: the one place the ACP dialect maps what the engine
says to what its client reads (`session/update`, the table in protocol/acp.md).

`AcpEvents` delivers them for one connection (its front's `notify`, `tool_running`,
`terminal_started`); `updates_for` is the mapping itself, event by event. The content
helpers (a tool call's kind, locations, diff, text) are translate.py's, shared with the
consent requests (asks.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sema_rpc.acp import translate
from sema_rpc.protocol import (
    ConversationUsageParams,
    EventParams,
    ModelUpdateParams,
    ModeUpdateEventParams,
    SandboxUpdateParams,
    TextChunkParams,
    ThinkingChunkParams,
    TodosUpdateParams,
    ToolExecutionCompleteParams,
    ToolExecutionErrorParams,
    ToolExecutionStartParams,
    ToolExecutionUpdateParams,
)

if TYPE_CHECKING:
    from sema_rpc.acp.state import AcpSession
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.rpc.connection import Connection

_BATCHED = frozenset({"agent_message_chunk", "agent_thought_chunk"})
"""High-rate updates: written many per `write(2)` at the end of the loop iteration."""


class AcpEvents:
    """Engine events → `session/update`, for the sessions one client opened (`sessions`,
    the front's own table: a session the client does not know yet gets nothing)."""

    def __init__(
        self,
        conn: Connection,
        sessions: dict[str, AcpSession],
        engine: Callable[[], SemaEngine],
    ):
        self._conn = conn
        self.sessions = sessions
        self._engine = engine
        self._output_pending: set[tuple[str, str]] = set()
        self._output_scheduled = False

    @property
    def engine(self) -> SemaEngine:
        return self._engine()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self._conn.send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": update},
            },
            batch=update["sessionUpdate"] in _BATCHED,
        )

    def notify(self, event: EventParams) -> None:
        state = self.sessions.get(event.session_id)
        if state is None:
            return  # a session the client does not know yet (session/new not answered)
        for update in updates_for(self, state, event):
            self.update(state.session_id, update)

    def terminal_started(self, session_id: str, tool_call_id: str, terminal_id: str) -> None:
        """A Bash call runs in the editor's terminal: the call embeds it."""
        state = self.sessions.get(session_id)
        call = state.tool_calls.get(tool_call_id) if state is not None else None
        if call is None:
            return
        call.terminal_id = terminal_id
        self.update(
            session_id,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "content": [{"type": "terminal", "terminalId": terminal_id}],
            },
        )

    def tool_running(self, session_id: str, tool_call_id: str) -> None:
        """The engine's hook (EventBus.tool_running): a call announced `pending` runs now."""
        state = self.sessions.get(session_id)
        if state is None or tool_call_id not in state.tool_calls:
            return
        self.update(
            session_id,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "in_progress",
            },
        )

    def output_changed(self, state: AcpSession, tool_call_id: str) -> None:
        """A call's streamed output grew: sent at the end of this loop iteration, once,
        whatever the number of deltas (each update carries the whole tail)."""
        call = state.tool_calls.get(tool_call_id)
        if call is None:
            return
        call.unsent = True
        self._output_pending.add((state.session_id, tool_call_id))
        if not self._output_scheduled:
            self._output_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_outputs)

    def _flush_outputs(self) -> None:
        self._output_scheduled = False
        pending, self._output_pending = self._output_pending, set()
        for session_id, tool_call_id in pending:
            state = self.sessions.get(session_id)
            if state is not None:
                for update in output_update(state, tool_call_id):
                    self.update(session_id, update)


def updates_for(events: AcpEvents, state: AcpSession, event: EventParams) -> list[dict[str, Any]]:
    """What the client sees of one engine event (often nothing: `state:update`,
    `session:ready`, `message:complete` have no ACP counterpart)."""
    if isinstance(event, TextChunkParams):
        if event.agent_id != "main":  # a subagent's text is its Task's result, not ours
            return []
        return [_chunk("agent_message_chunk", event.delta, event.message_id)]
    if isinstance(event, ThinkingChunkParams):
        if event.agent_id != "main":
            return []
        return [_chunk("agent_thought_chunk", event.delta, event.message_id)]
    if isinstance(event, ToolExecutionStartParams):
        state.tool_calls[event.tool_call_id] = translate_state(event.tool_name)
        return [
            translate.tool_call(
                event.tool_call_id,
                event.tool_name,
                event.title,
                event.input,
                state.cwd,
                "pending",  # until it passed its checks and consent: then in_progress
            )
        ]
    if isinstance(event, ToolExecutionUpdateParams):
        call = state.tool_calls.get(event.tool_call_id)
        if call is None:
            return []
        call.output = (call.output + event.delta)[-translate.OUTPUT_TAIL_CHARS :]
        # Sent once per loop iteration however many deltas came (output_update).
        events.output_changed(state, event.tool_call_id)
        return []
    if isinstance(event, ToolExecutionCompleteParams | ToolExecutionErrorParams):
        pending = output_update(state, event.tool_call_id)
        call = state.tool_calls.pop(event.tool_call_id, None)
        failed = isinstance(event, ToolExecutionErrorParams)
        text = translate.clipped(event.content)
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.tool_call_id,
            "status": "failed" if failed else "completed",
            "rawOutput": {"content": text, "summary": getattr(event, "summary", "")},
        }
        name = call.name if call is not None else event.tool_name
        if call is not None and call.terminal_id is not None:  # the terminal shows it
            update["content"] = [{"type": "terminal", "terminalId": call.terminal_id}]
        elif failed or name not in ("Write", "Edit"):  # an edit keeps its diff as content
            update["content"] = [translate.text_content(text)] if text else []
        return [*pending, update]
    if isinstance(event, TodosUpdateParams):
        return [{"sessionUpdate": "plan", "entries": translate.plan_entries(event.todos)}]
    if isinstance(event, ModelUpdateParams | SandboxUpdateParams):
        from sema_rpc.acp.options import config_options

        session = events.engine.sessions.get(state.session_id)
        if session is None:
            return []
        return [
            {
                "sessionUpdate": "config_option_update",
                "configOptions": config_options(events.engine, session),
            }
        ]
    if isinstance(event, ModeUpdateEventParams):
        from sema_rpc.acp.options import config_options, current_mode

        session = events.engine.sessions.get(state.session_id)
        if session is None:
            return []
        return [
            {"sessionUpdate": "current_mode_update", "currentModeId": current_mode(session)},
            {
                "sessionUpdate": "config_option_update",
                "configOptions": config_options(events.engine, session),
            },
        ]
    if isinstance(event, ConversationUsageParams):
        usage: dict[str, Any] = {
            "sessionUpdate": "usage_update",
            "used": max(0, event.usage.use_tokens),
            "size": max(0, event.usage.max_tokens),
        }
        cost = event.session.cost_usd if event.session is not None else None
        if cost is not None:  # unknown when a model that used tokens has no price
            usage["cost"] = {"amount": cost, "currency": "USD"}
        return [usage]
    return []


def output_update(state: AcpSession, tool_call_id: str) -> list[dict[str, Any]]:
    """The streamed output of a call, if some arrived since it was last sent: a
    `tool_call_update` whose content is the output so far (its tail)."""
    call = state.tool_calls.get(tool_call_id)
    if call is None or not call.unsent:
        return []
    call.unsent = False
    return [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "content": [translate.text_content(call.output)],
        }
    ]


def translate_state(name: str) -> Any:
    from sema_rpc.acp.state import ToolCallState

    return ToolCallState(name)


def _chunk(kind: str, text: str, message_id: str | None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        chunk["messageId"] = message_id
    return chunk
