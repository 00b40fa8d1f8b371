"""`sema-rpc --acp`: the Agent Client Protocol (v1) over stdio, one JSON-RPC message per
line, driving the same engine as the native dialect.

The engine does not learn ACP: this module is the dialect's front for one client (its
method table and what it keeps of the client), on the JSON-RPC connection both dialects
share (rpc/connection.py: reading, cancellation, error answers, writing). Engine events
become `session/update` notifications in events.py (the ACP mapping); the engine's
consent, plan-exit and question requests become `session/request_permission` (asks.py);
Read, Write and Edit use the editor's buffers through `fs/read_text_file` /
`fs/write_text_file` when the client offers them (confinement and consent stay the
engine's). The engine is the process's (rpc/host.py); both dialects keep sessions in one
store.

Like the native server: the engine is imported on the first method that needs it, and a
plainly valid `initialize` is answered before this module is loaded (front.py);
malformed input gets a JSON-RPC error and the process keeps serving; every prompt is
answered exactly once (`cancelled` after `session/cancel`, never an error); methods with
nothing to return answer `{}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.acp.advert import REWIND_METHOD, STEERING_METHOD, initialize_result
from sema_rpc.acp.auth import METHOD_IDS, usable_model
from sema_rpc.acp.events import AcpEvents
from sema_rpc.acp.requests import (
    client_system_prompt,
    log_failure,
    mcp,
    prompt_request,
    ref,
    title_of,
    with_message_id,
)
from sema_rpc.acp.state import AcpSession
from sema_rpc.acp.wire_plain import (
    AcpClientCapabilities,
    AuthenticateRequest,
    ForkRequest,
    InitializeRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    RewindRequest,
    SessionRequest,
    SetConfigOptionRequest,
    SetModeRequest,
    SteeringRequest,
)
from sema_rpc.plain_model import PlainModel, is_validation_error
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    EventParams,
    PermissionRequestParams,
    PlanExitRequestParams,
    RpcError,
    WireModel,
)
from sema_rpc.rpc import errors
from sema_rpc.rpc.connection import Connection, current_request
from sema_rpc.rpc.errors import (
    ACP_AUTH_REQUIRED,
    ACP_RESOURCE_NOT_FOUND,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
)
from sema_rpc.rpc.framing import FrameWriter
from sema_rpc.rpc.host import Host

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.loop.control import PromptCancel
    from sema_rpc.engine.session.session import Session

log = logging.getLogger(__name__)

LIST_PAGE = 100
"""Sessions per `session/list` page."""


def _mcp_servers(servers: list[Any]) -> list[Any]:
    """The editor's MCP servers as `session/create` takes them. `McpServerParams` stays a
    pydantic model (it keeps unknown keys): loaded only when there is one to build."""
    if not servers:
        return []
    from sema_rpc.protocol import McpServerParams

    return [McpServerParams.model_validate(mcp(m)) for m in servers]


def acp_connection(writer: FrameWriter) -> Connection:
    """The JSON-RPC connection of an ACP client: one JSON per line, ACP's error codes
    and its `$/cancel_request {requestId}`."""
    return Connection(
        writer, jsonl=True, codes=errors.ACP, cancel=("$/cancel_request", "requestId")
    )


def acp_host() -> Host:
    """The process's engine for ACP clients: they answer permission requests."""

    def setup(engine: SemaEngine) -> None:
        engine.client_answers_permissions = True

    return Host(setup)


class AcpServer:
    """The ACP dialect's front for one client: its method table, what it declared, the
    sessions it opened and their translation state. The engine is the host's."""

    def __init__(
        self, writer: FrameWriter, *, conn: Connection | None = None, host: Host | None = None
    ):
        self.writer = writer
        self.capabilities = AcpClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self.conn = conn if conn is not None else acp_connection(writer)
        self.conn.front = self
        self.host = host if host is not None else acp_host()
        self.host.attach(self)
        self.events = AcpEvents(self.conn, self.sessions, lambda: self.engine)
        self.update = self.events.update
        self.notify = self.events.notify
        self.tool_running = self.events.tool_running
        self.terminal_started = self.events.terminal_started
        self._ids = itertools.count(1)
        self._detached: set[asyncio.Task[Any]] = set()
        """Turns started by `_session/steering` on an idle session (no request owns them)."""
        self._handlers: dict[str, tuple[type[PlainModel], Callable[[Any], Awaitable[Any]]]] = {
            "initialize": (InitializeRequest, self._initialize),
            "authenticate": (AuthenticateRequest, self._authenticate),
            "session/new": (NewSessionRequest, self._new),
            "session/load": (LoadSessionRequest, self._load),
            "session/resume": (LoadSessionRequest, self._resume),
            "session/list": (ListSessionsRequest, self._list),
            "session/close": (SessionRequest, self._close),
            "session/delete": (SessionRequest, self._delete),
            "session/prompt": (PromptRequest, self._prompt),
            "session/set_mode": (SetModeRequest, self._set_mode),
            "session/set_config_option": (SetConfigOptionRequest, self._set_config_option),
            "session/fork": (ForkRequest, self._fork),
            STEERING_METHOD: (SteeringRequest, self._steer),
            REWIND_METHOD: (RewindRequest, self._rewind),
        }

    @property
    def engine(self) -> SemaEngine:
        """The host's engine, created on first use."""
        return self.host.engine

    @property
    def shutting_down(self) -> bool:
        return self.conn.shutting_down

    def _session(self, session_id: str) -> tuple[Session, AcpSession]:
        state = self.sessions.get(session_id)
        if state is None:
            raise RpcError(
                ACP_RESOURCE_NOT_FOUND, f"unknown session: {session_id}", {"sessionId": session_id}
            )
        return self.engine.session(session_id), state

    # ------------------------------------------------------------------ the connection's Front

    def on_body(self, body: bytes) -> None:
        self.conn.on_body(body)

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        entry = self._handlers.get(method)
        if entry is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        model, handler = entry
        parsed = errors.validate(model, params, method)
        if method == "session/prompt":
            self._accept_prompt(msg_id, parsed)
        return self._run(handler, parsed)

    async def _run(self, handler: Callable[[Any], Awaitable[Any]], params: Any) -> Any:
        result = await handler(params)
        return {} if result is None else result

    def _accept_prompt(self, msg_id: Any, params: Any) -> None:
        """Open from the moment it is read: a `session/cancel` or `session/close` read
        right behind it reaches it (engine/session/lifecycle.py)."""
        state = self.sessions.get(params.session_id)
        engine = self.host.engine_created
        if state is None or engine is None:
            return  # refused when handled: an unknown session
        cancel = engine.accept_prompt(params.session_id)
        state.prompts[msg_id] = cancel
        self.conn.after_answer(lambda: self._forget_prompt(params, msg_id, cancel), msg_id)

    def _forget_prompt(self, params: Any, msg_id: Any, cancel: PromptCancel) -> None:
        """The prompt is answered (this runs after its answer is written)."""
        from sema_rpc.engine.session.lifecycle import answered

        answered(cancel)
        state = self.sessions.get(params.session_id)
        if state is not None and state.prompts.get(msg_id) is cancel:
            del state.prompts[msg_id]

    def on_notification(self, method: str, params: Any) -> None:
        if method != "session/cancel":
            log.info("ignoring notification %s", method)
            return
        try:
            request = SessionRequest.model_validate(params or {})
        except ValueError:  # pydantic's ValidationError: the body only validates
            log.warning("session/cancel without a sessionId: %r", params)
            return
        engine = self.host.engine_created
        if request.session_id in self.sessions and engine is not None:
            engine.cancel_prompts(request.session_id)

    def on_cancel(self, target: Any) -> bool:
        for state in self.sessions.values():
            prompt = state.prompts.get(target)
            if prompt is not None:  # a prompt answers `cancelled`, never -32800
                prompt.cancel()
                return True
        return False

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A request to the client; cancelling the caller cancels it on the wire."""
        return await self.conn.request(method, params)

    # ------------------------------------------------------------------ ClientBridge

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        state = self.sessions.get(event.session_id)
        if state is None or self.writer.closed:
            return None
        from sema_rpc.acp import asks

        try:
            if isinstance(event, PermissionRequestParams):
                return await asks.permission(self, state, event)
            if isinstance(event, PlanExitRequestParams):
                return await asks.plan_exit(self, state, event)
            if isinstance(event, AskQuestionRequestParams):
                return await asks.questions(self, state, event)
        except RpcError as exc:
            log.warning("the client answered %s with an error: %s", event.event, exc.message)
            return None
        except (KeyError, TypeError, ValueError) as exc:  # ValueError: pydantic's too
            log.warning("the client's answer to %s is invalid: %s", event.event, exc)
            return None
        return None

    # ------------------------------------------------------------------ handlers

    async def _initialize(self, params: InitializeRequest) -> dict[str, Any]:
        self.capabilities = params.client_capabilities
        caps = params.client_capabilities
        wire = {"auth": caps.auth, "_meta": caps.meta}
        return await asyncio.to_thread(initialize_result, wire)

    async def _authenticate(self, params: AuthenticateRequest) -> dict[str, Any]:
        if params.method_id not in METHOD_IDS:
            raise RpcError(INVALID_PARAMS, f"unknown authentication method: {params.method_id}")
        if not await usable_model():
            from sema_rpc.engine.session.sessions import NO_MODEL_SUGGESTION

            raise RpcError(ACP_AUTH_REQUIRED, "no model is configured: " + NO_MODEL_SUGGESTION)
        return {}

    async def _open(
        self, params: NewSessionRequest, session_id: str | None
    ) -> tuple[Session, AcpSession]:
        from sema_rpc.protocol import SessionCreateParams

        system_prompt = client_system_prompt(params.meta)  # refused before anything opens
        cwd = Path(params.cwd)
        if not cwd.is_absolute():
            raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path: {params.cwd}")
        state = self.sessions.get(session_id) if session_id else None
        created = state is None
        if state is None and session_id is not None:
            state = AcpSession(session_id, cwd)  # resolved below, once the engine has it
            self.sessions[session_id] = state  # load: events from restoring reach the client
        try:
            ready = await self.engine.create_session(
                SessionCreateParams(
                    session_id=session_id,
                    working_dir=params.cwd,
                    mcp_servers=_mcp_servers(params.mcp_servers),
                )
            )
        except BaseException:
            if created and session_id is not None:
                self.sessions.pop(session_id, None)
            raise
        session = self.engine.session(ready.session_id)
        if state is None:
            state = AcpSession(ready.session_id, session.working_dir)
            self.sessions[ready.session_id] = state
        state.cwd = session.working_dir
        from sema_rpc.acp.fs import install_editor_files

        install_editor_files(self, session)
        from sema_rpc.acp.terminal import install_terminal

        install_terminal(self, session)
        session.client_system_prompt = system_prompt
        if session.profile is None:
            from sema_rpc.engine.session.sessions import NO_MODEL_SUGGESTION

            self.sessions.pop(ready.session_id, None)
            await self.engine.dispose(ref(ready.session_id))
            raise RpcError(ACP_AUTH_REQUIRED, "no model is configured: " + NO_MODEL_SUGGESTION)
        return session, state

    def _session_result(self, session: Session) -> dict[str, Any]:
        from sema_rpc.acp.options import config_options, mode_state

        return {"modes": mode_state(session), "configOptions": config_options(self.engine, session)}

    def _after_open(self, session: Session, state: AcpSession) -> Callable[[], None]:
        from sema_rpc.acp.options import available_commands

        def then() -> None:
            self.update(
                state.session_id,
                {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": available_commands(session),
                },
            )

        return then

    async def _new(self, params: NewSessionRequest) -> dict[str, Any]:
        session, state = await self._open(params, None)
        if session.store is not None:
            # The id is the client's now: it stays resumable (session/resume, session/load)
            # after a restart, though nothing was said in it. The entry keeps the file
            # (a session with no input is still left out of session/list).
            session.store.append_event("created", by="acp")
        result = {"sessionId": session.id, **self._session_result(session)}
        self.conn.after_answer(self._after_open(session, state))
        return result

    async def _load_known(self, params: LoadSessionRequest) -> None:
        from sema_rpc.engine.store.history_format import valid_session_id
        from sema_rpc.engine.store.history_reader import has_history

        sid = params.session_id
        if not valid_session_id(sid):
            raise RpcError(INVALID_PARAMS, f"invalid sessionId: {sid!r}")
        live = (
            sid in self.sessions
            and self.host.engine_created is not None
            and sid in self.engine.sessions
        )
        if not live and not await asyncio.to_thread(has_history, sid):
            raise RpcError(ACP_RESOURCE_NOT_FOUND, f"unknown session: {sid}", {"sessionId": sid})

    async def _load(self, params: LoadSessionRequest) -> dict[str, Any]:
        await self._load_known(params)
        session, state = await self._open(params, params.session_id)
        from sema_rpc.acp.replay import replay_updates

        for update in await asyncio.to_thread(replay_updates, session.id, state.cwd):
            self.update(session.id, update)
        self.conn.after_answer(self._after_open(session, state))
        return self._session_result(session)

    async def _resume(self, params: LoadSessionRequest) -> dict[str, Any]:
        await self._load_known(params)
        session, state = await self._open(params, params.session_id)
        self.conn.after_answer(self._after_open(session, state))
        return self._session_result(session)

    async def _list(self, params: ListSessionsRequest) -> dict[str, Any]:
        from sema_rpc.protocol import SessionListParams

        listed = await self.engine.list_sessions(SessionListParams(working_dir=params.cwd))
        try:
            start = int(params.cursor) if params.cursor else 0
        except ValueError:
            raise RpcError(INVALID_PARAMS, f"invalid cursor: {params.cursor!r}") from None
        items = [s for s in listed.sessions if s.working_dir]
        page = items[start : start + LIST_PAGE]
        result: dict[str, Any] = {
            "sessions": [
                {
                    "sessionId": s.session_id,
                    "cwd": s.working_dir,
                    **({"title": s.title} if s.title else {}),
                    "updatedAt": s.updated_at,
                }
                for s in page
            ]
        }
        if start + LIST_PAGE < len(items):
            result["nextCursor"] = str(start + LIST_PAGE)
        return result

    async def _close(self, params: SessionRequest) -> dict[str, Any]:
        """Closing cancels the session's work: its open prompts answer `cancelled`, and
        nothing of it follows the answer (engine/session/lifecycle.py)."""
        self._session(params.session_id)
        await self.engine.dispose(ref(params.session_id))
        self.sessions.pop(params.session_id, None)
        return {}

    async def _delete(self, params: SessionRequest) -> dict[str, Any]:
        from sema_rpc.protocol import SessionDeleteParams

        await self.engine.delete_session(SessionDeleteParams(session_id=params.session_id))
        self.sessions.pop(params.session_id, None)
        return {}

    async def _prompt(self, params: PromptRequest) -> dict[str, Any]:
        from sema_rpc.engine.loop.control import PromptCancel

        session, state = self._session(params.session_id)
        request, prompt = prompt_request(session, state, params.prompt)
        # Registered when the request was read (`_accept_prompt`): a cancel or close read
        # right behind it reaches this turn.
        cancel = state.prompts.get(current_request()) or PromptCancel()
        first = not session.history and not session.history_loaded
        result = await self.engine.prompt(request, cancel)
        while state.steered:  # inputs steered into this turn: it ends with them
            steered = state.steered.pop(0)
            with contextlib.suppress(Exception):
                result = await asyncio.shield(steered)
        if first and session.history and not session.bus.closed:
            title = title_of(prompt)
            now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
            self.update(
                session.id,
                {
                    "sessionUpdate": "session_info_update",
                    "title": title,
                    "updatedAt": now.replace("+00:00", "Z"),
                },
            )
        if cancel.cancelled:
            return with_message_id({"stopReason": "cancelled"}, result)
        if result.stop_reason == "error":
            error = result.error
            raise RpcError(
                INTERNAL_ERROR,
                error.message if error else "the turn failed",
                error.model_dump(mode="json", exclude_none=True) if error else None,
            )
        stop = "max_turn_requests" if result.stop_reason == "max_turns" else "end_turn"
        return with_message_id({"stopReason": stop}, result)

    async def _steer(self, params: SteeringRequest) -> dict[str, Any]:
        """`_session/steering`: text for the running turn (it joins it after the running
        tool batch, or continues it when the model was answering: the running prompt
        answers once both are done). No turn: a new one (`startedNewTurn`), or
        `promptRequired` when the client asked for it (`_meta.steering.idleBehavior`)."""
        from sema_rpc.engine.engine import system_command
        from sema_rpc.engine.session.lifecycle import answered

        session, state = self._session(params.session_id)
        running = bool(state.prompts)
        steering = (params.meta or {}).get("steering")
        idle = steering.get("idleBehavior") if isinstance(steering, dict) else None
        if not running and idle == "promptRequired":
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        request, prompt = prompt_request(session, state, params.prompt)
        if running and isinstance(prompt, str) and system_command(prompt) is not None:
            return {"outcome": "failed"}  # /clear, /compact: never part of another turn
        if self.shutting_down:
            return {"outcome": "failed"}
        if running:
            request.delivery = "steer"
        # Open from now on, as a prompt read: session/cancel or close reaches it.
        cancel = self.engine.accept_prompt(params.session_id)
        key = f"steer-{next(self._ids)}"
        state.prompts[key] = cancel

        async def run() -> Any:
            try:
                return await self.engine.prompt(request, cancel)
            finally:
                state.prompts.pop(key, None)
                answered(cancel)

        task = asyncio.get_running_loop().create_task(run())
        if running:
            state.steered.append(task)
            return {"outcome": "injected"}
        task.add_done_callback(log_failure)
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)
        return {"outcome": "startedNewTurn"}

    async def _fork(self, params: ForkRequest) -> dict[str, Any]:
        """`session/fork`: a new live session holding the conversation up to a message
        (or all of it), with the client's MCP servers; the original is untouched."""
        from sema_rpc.protocol import SessionForkParams

        await self._load_known(params)
        message_id = params.message_id
        air = ((params.meta or {}).get("jetbrains") or {}).get("air", {}).get("fork")
        if isinstance(air, dict) and air.get("version") == 1 and air.get("messageId"):
            from sema_rpc.acp.replay import next_prompt_after

            point = str(air["messageId"])
            found, message_id = await asyncio.to_thread(next_prompt_after, params.session_id, point)
            if not found:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Fork point message {point} was not found",
                    {"messageId": point},
                )
        forked = await self.engine.fork_session(
            SessionForkParams(session_id=params.session_id, message_id=message_id)
        )
        # Reopened as a session/load opens one: with the client's cwd and MCP servers.
        await self.engine.dispose(ref(forked.session_id))
        reopened = LoadSessionRequest.model_validate(
            {
                "sessionId": forked.session_id,
                "cwd": params.cwd,
                "mcpServers": [m.model_dump(by_alias=True) for m in params.mcp_servers],
            }
        )
        session, state = await self._open(reopened, forked.session_id)
        result: dict[str, Any] = {"sessionId": session.id, **self._session_result(session)}
        if forked.input is not None:  # the forked-before message, to prefill the input
            result["_meta"] = {"sema": {"input": forked.input}}
        self.conn.after_answer(self._after_open(session, state))
        return result

    async def _rewind(self, params: RewindRequest) -> dict[str, Any]:
        """`_session/rewind`: the native `session/rewind` (files, conversation or both,
        conflicts, redo). The client redraws with `session/load`."""
        from sema_rpc.protocol import SessionRewindParams

        session, _state = self._session(params.session_id)
        restore = {"files": "code"}.get(params.mode, params.mode)
        if restore not in ("code", "conversation", "both"):
            raise RpcError(INVALID_PARAMS, f"unknown mode: {params.mode!r}")
        try:
            request = SessionRewindParams(
                session_id=session.id,
                message_id=params.message_id,
                restore=restore,  # type: ignore[arg-type]
                redo=params.redo,
                force=params.force,
            )
        except ValueError as exc:
            if not is_validation_error(exc):
                raise
            raise RpcError(INVALID_PARAMS, str(exc.errors()[0]["msg"])) from exc  # type: ignore[attr-defined]
        rewound = await self.engine.rewind(request)
        return rewound.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _set_mode(self, params: SetModeRequest) -> dict[str, Any]:
        from sema_rpc.acp.options import set_mode

        session, _state = self._session(params.session_id)
        set_mode(self.engine, session, params.mode_id)
        return {}

    async def _set_config_option(self, params: SetConfigOptionRequest) -> dict[str, Any]:
        from sema_rpc.acp.options import config_options, set_option

        session, _state = self._session(params.session_id)
        set_option(self.engine, session, params.config_id, params.value)
        return {"configOptions": config_options(self.engine, session)}

    # ------------------------------------------------------------------ the end

    async def stop(self, grace_s: float = 5.0) -> None:
        """End of input: running turns interrupted, every open request answered."""
        self.conn.shutting_down = True
        for state in self.sessions.values():
            for cancel in list(state.prompts.values()):
                cancel.cancel()
        await self.host.shutdown(grace_s)
        pending = [*self.conn.in_flight(), *(t for t in self._detached if not t.done())]
        if pending:
            await asyncio.wait(pending, timeout=grace_s)


__all__ = ["AcpServer"]
