"""`sema-rpc --acp`: the Agent Client Protocol (v1) over stdio, one JSON-RPC message per
line, driving the same engine as the native dialect.

The engine does not learn ACP: this server is its client bridge (`notify`, `ask`), as
rpc/server.py is for the native dialect. Engine events become `session/update`
notifications (translate.py); the engine's consent, plan-exit and question requests
become `session/request_permission`; Read, Write and Edit use the editor's buffers
through `fs/read_text_file` / `fs/write_text_file` when the client offers them
(confinement and consent stay the engine's). Both dialects keep sessions in one store.

Like the native server: the engine is imported on the first method that needs it, and
a plainly valid `initialize` is answered before this module is loaded (front.py); malformed input gets a JSON-RPC error and the
process keeps serving; every prompt is answered exactly once (`cancelled` after
`session/cancel`, never an error); methods with nothing to return answer `{}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from sema_rpc.acp import translate
from sema_rpc.acp.advert import REWIND_METHOD, STEERING_METHOD, initialize_result
from sema_rpc.acp.auth import METHOD_IDS, usable_model
from sema_rpc.acp.events import updates_for
from sema_rpc.acp.state import AcpSession
from sema_rpc.acp.wire import (
    AcpClientCapabilities,
    AuthenticateRequest,
    CancelRequest,
    ForkRequest,
    InitializeRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    McpServer,
    NewSessionRequest,
    PromptRequest,
    RewindRequest,
    SessionRequest,
    SetConfigOptionRequest,
    SetModeRequest,
    SteeringRequest,
)
from sema_rpc.core.errors import DomainError
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    EventParams,
    PermissionRequestParams,
    PlanExitRequestParams,
    RpcError,
    WireModel,
)
from sema_rpc.rpc.framing import FrameWriter
from sema_rpc.rpc.server import _dumps, _error_message, _loads, _valid_id

if TYPE_CHECKING:
    from sema_rpc.engine.control import PromptCancel
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.session import Session

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002

LIST_PAGE = 100
"""Sessions per `session/list` page."""

_BATCHED = frozenset({"agent_message_chunk", "agent_thought_chunk"})
"""High-rate updates: written many per `write(2)` at the end of the loop iteration."""


_current_request: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "sema_acp_request_id", default=None
)


@dataclass
class _Answer:
    """A handler's result plus what to send right after the answer (e.g. the commands
    of a session the client has just learnt the id of)."""

    result: dict[str, Any]
    then: Callable[[], None] | None = None


def _rpc_error_of(exc: DomainError) -> RpcError:
    from sema_rpc.core.errors import (
        ConfigError,
        InvalidArgument,
        NoModelConfigured,
        SessionBusy,
        SessionNotFound,
    )
    from sema_rpc.protocol import ErrorCode

    codes: list[tuple[type[DomainError], int]] = [
        (SessionNotFound, RESOURCE_NOT_FOUND),
        (InvalidArgument, INVALID_PARAMS),
        (NoModelConfigured, AUTH_REQUIRED),
        (ConfigError, ErrorCode.CONFIG_ERROR),
        (SessionBusy, ErrorCode.SESSION_BUSY),
    ]
    for cls, code in codes:
        if isinstance(exc, cls):
            return RpcError(code, exc.message, exc.data)
    return RpcError(INTERNAL_ERROR, exc.message, exc.data)


class AcpServer:
    """One process, one ACP client, many sessions."""

    def __init__(self, writer: FrameWriter):
        self.writer = writer
        self.capabilities = AcpClientCapabilities()
        self._engine: SemaEngine | None = None
        self.sessions: dict[str, AcpSession] = {}
        self._incoming: dict[Any, asyncio.Task[Any]] = {}
        self._outgoing: dict[Any, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.shutting_down = False
        self._output_pending: set[tuple[str, str]] = set()
        self._output_scheduled = False
        self._detached: set[asyncio.Task[Any]] = set()
        """Turns started by `_session/steering` on an idle session (no request owns them)."""
        self._handlers: dict[str, tuple[type[BaseModel], Callable[[Any], Awaitable[Any]]]] = {
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

    # ------------------------------------------------------------------ the engine, lazily

    @property
    def engine(self) -> SemaEngine:
        if self._engine is None:
            from sema_rpc.engine.engine import SemaEngine

            self._engine = SemaEngine(self, client_answers_permissions=True)
        return self._engine

    def _session(self, session_id: str) -> tuple[Session, AcpSession]:
        state = self.sessions.get(session_id)
        if state is None:
            raise RpcError(
                RESOURCE_NOT_FOUND, f"unknown session: {session_id}", {"sessionId": session_id}
            )
        try:
            return self.engine.session(session_id), state
        except DomainError as exc:
            raise _rpc_error_of(exc) from exc

    # ------------------------------------------------------------------ reading

    def send(self, message: dict[str, Any], *, batch: bool = False) -> None:
        self.writer.write(_dumps(message), batch=batch)

    def on_frame_error(self, message: str) -> None:
        log.warning("framing: %s", message)
        self.send(_error_message(None, INVALID_REQUEST, message))

    def on_body(self, body: bytes) -> None:
        """One message in. Never raises: the reader goes on whatever this one was."""
        try:
            self._on_body(body)
        except Exception:
            log.exception("unexpected failure handling a message")

    def _on_body(self, body: bytes) -> None:
        try:
            obj = _loads(body)
        except UnicodeDecodeError as exc:
            self.send(
                _error_message(None, PARSE_ERROR, f"parse error: not valid UTF-8 ({exc.reason})")
            )
            return
        except (ValueError, RecursionError) as exc:
            self.send(_error_message(None, PARSE_ERROR, f"parse error: {exc}"))
            return
        if not isinstance(obj, dict):
            self.send(
                _error_message(None, INVALID_REQUEST, "invalid request: expected a JSON object")
            )
            return
        msg_id = obj.get("id")
        if obj.get("jsonrpc") != "2.0" or not _valid_id(msg_id):
            self.send(
                _error_message(
                    msg_id if _valid_id(msg_id) else None,
                    INVALID_REQUEST,
                    'invalid request: "jsonrpc" must be "2.0" and "id" a string or an integer',
                )
            )
            return
        method = obj.get("method")
        if method is None:
            if "id" in obj and ("result" in obj or "error" in obj):
                self._on_response(obj)
            else:
                self.send(
                    _error_message(msg_id, INVALID_REQUEST, 'invalid request: missing "method"')
                )
            return
        if not isinstance(method, str):
            self.send(_error_message(msg_id, INVALID_REQUEST, '"method" must be a string'))
            return
        params = obj.get("params")
        if "id" not in obj:
            self._on_notification(method, params)
            return
        entry = self._handlers.get(method)
        if entry is None:
            self.send(_error_message(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        if self.shutting_down:
            self.send(_error_message(msg_id, INVALID_REQUEST, "the agent is shutting down"))
            return
        model, handler = entry
        try:
            parsed = model.model_validate({} if params is None else params)
        except ValidationError as exc:
            self.send(
                _error_message(
                    msg_id,
                    INVALID_PARAMS,
                    f"invalid params for {method}: {exc.error_count()} error(s)",
                    json.loads(exc.json(include_url=False, include_context=False)),
                )
            )
            return
        context = contextvars.copy_context()
        context.run(_current_request.set, msg_id)
        cancel = self._accept_prompt(msg_id, parsed) if method == "session/prompt" else None
        task = asyncio.get_running_loop().create_task(
            self._run(method, handler, parsed), context=context
        )
        self._incoming[msg_id] = task
        task.add_done_callback(lambda done: self._answer(msg_id, done))
        if cancel is not None:
            task.add_done_callback(lambda _done: self._forget_prompt(parsed, msg_id, cancel))

    def _accept_prompt(self, msg_id: Any, params: Any) -> PromptCancel | None:
        """Open from the moment it is read: a `session/cancel` or `session/close` read
        right behind it reaches it (engine/lifecycle.py)."""
        state = self.sessions.get(params.session_id)
        if state is None or self._engine is None:
            return None  # refused when handled: an unknown session
        cancel = self._engine.accept_prompt(params.session_id)
        state.prompts[msg_id] = cancel
        return cancel

    def _forget_prompt(self, params: Any, msg_id: Any, cancel: PromptCancel) -> None:
        """The prompt is answered (this runs after `_answer` wrote it)."""
        from sema_rpc.engine.lifecycle import answered

        answered(cancel)
        state = self.sessions.get(params.session_id)
        if state is not None and state.prompts.get(msg_id) is cancel:
            del state.prompts[msg_id]

    async def _run(self, method: str, handler: Callable[[Any], Awaitable[Any]], params: Any) -> Any:
        """The one place where a handler's exception becomes a JSON-RPC error."""
        try:
            return await handler(params)
        except RpcError:
            raise
        except DomainError as exc:
            raise _rpc_error_of(exc) from exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("%s failed", method, exc_info=exc)
            raise RpcError(
                INTERNAL_ERROR, f"internal error in {method}: {type(exc).__name__}: {exc}"
            ) from exc

    def _answer(self, msg_id: Any, task: asyncio.Task[Any]) -> None:
        if self._incoming.get(msg_id) is task:
            del self._incoming[msg_id]
        if task.cancelled():
            self.send(_error_message(msg_id, REQUEST_CANCELLED, "request cancelled"))
            return
        exc = task.exception()
        if isinstance(exc, RpcError):
            self.send(_error_message(msg_id, exc.code, exc.message, exc.data))
            return
        if exc is not None:
            self.send(
                _error_message(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")
            )
            return
        answer: Any = task.result()
        then: Callable[[], None] | None = None
        if isinstance(answer, _Answer):
            then = answer.then
            answer = answer.result
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": {} if answer is None else answer})
        if then is not None:
            then()

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            try:
                request = SessionRequest.model_validate(params or {})
            except ValidationError:
                log.warning("session/cancel without a sessionId: %r", params)
                return
            if request.session_id in self.sessions and self._engine is not None:
                self._engine.cancel_prompts(request.session_id)
            return
        if method == "$/cancel_request":
            try:
                target = CancelRequest.model_validate(params or {}).request_id
            except ValidationError:
                log.warning("$/cancel_request without a requestId: %r", params)
                return
            for state in self.sessions.values():
                prompt = state.prompts.get(target)
                if prompt is not None:  # a prompt answers `cancelled`, never -32800
                    prompt.cancel()
                    return
            task = self._incoming.get(target)
            if task is not None:
                task.cancel()
            return
        log.info("ignoring notification %s", method)

    def _on_response(self, obj: dict[str, Any]) -> None:
        future = self._outgoing.pop(obj["id"], None)
        if future is None or future.done():
            log.info("answer to an unknown (or cancelled) request id %r", obj["id"])
            return
        error = obj.get("error")
        if error is not None:
            error = error if isinstance(error, dict) else {"message": str(error)}
            code = error.get("code")
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR, str(error.get("message", ""))
                )
            )
        else:
            future.set_result(obj.get("result"))

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A request to the client; cancelling the caller cancels it on the wire."""
        if self.writer.closed:
            raise RpcError(INTERNAL_ERROR, "the client is gone")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            self._outgoing.pop(msg_id, None)
            self.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": msg_id}}
            )
            raise

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": update},
            },
            batch=update["sessionUpdate"] in _BATCHED,
        )

    # ------------------------------------------------------------------ ClientBridge

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
        from sema_rpc.acp.events import output_update

        self._output_scheduled = False
        pending, self._output_pending = self._output_pending, set()
        for session_id, tool_call_id in pending:
            state = self.sessions.get(session_id)
            if state is not None:
                for update in output_update(state, tool_call_id):
                    self.update(session_id, update)

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
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
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
            from sema_rpc.engine.sessions import NO_MODEL_SUGGESTION

            raise RpcError(AUTH_REQUIRED, "no model is configured: " + NO_MODEL_SUGGESTION)
        return {}

    async def _open(
        self, params: NewSessionRequest, session_id: str | None
    ) -> tuple[Session, AcpSession]:
        from sema_rpc.protocol import McpServerParams, SessionCreateParams

        system_prompt = _client_system_prompt(params.meta)  # refused before anything opens
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
                    mcp_servers=[
                        McpServerParams.model_validate(_mcp(m)) for m in params.mcp_servers
                    ],
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
            from sema_rpc.engine.sessions import NO_MODEL_SUGGESTION

            self.sessions.pop(ready.session_id, None)
            await self.engine.dispose(_ref(ready.session_id))
            raise RpcError(AUTH_REQUIRED, "no model is configured: " + NO_MODEL_SUGGESTION)
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

    async def _new(self, params: NewSessionRequest) -> _Answer:
        session, state = await self._open(params, None)
        if session.store is not None:
            # The id is the client's now: it stays resumable (session/resume, session/load)
            # after a restart, though nothing was said in it. The entry keeps the file
            # (a session with no input is still left out of session/list).
            session.store.append_event("created", by="acp")
        result = {"sessionId": session.id, **self._session_result(session)}
        return _Answer(result, self._after_open(session, state))

    async def _load_known(self, params: LoadSessionRequest) -> None:
        from sema_rpc.engine.store.history_format import valid_session_id
        from sema_rpc.engine.store.history_reader import has_history

        sid = params.session_id
        if not valid_session_id(sid):
            raise RpcError(INVALID_PARAMS, f"invalid sessionId: {sid!r}")
        live = sid in self.sessions and self._engine is not None and sid in self.engine.sessions
        if not live and not await asyncio.to_thread(has_history, sid):
            raise RpcError(RESOURCE_NOT_FOUND, f"unknown session: {sid}", {"sessionId": sid})

    async def _load(self, params: LoadSessionRequest) -> _Answer:
        await self._load_known(params)
        session, state = await self._open(params, params.session_id)
        from sema_rpc.acp.replay import replay_updates

        for update in await asyncio.to_thread(replay_updates, session.id, state.cwd):
            self.update(session.id, update)
        return _Answer(self._session_result(session), self._after_open(session, state))

    async def _resume(self, params: LoadSessionRequest) -> _Answer:
        await self._load_known(params)
        session, state = await self._open(params, params.session_id)
        return _Answer(self._session_result(session), self._after_open(session, state))

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
        nothing of it follows the answer (engine/lifecycle.py)."""
        self._session(params.session_id)
        await self.engine.dispose(_ref(params.session_id))
        self.sessions.pop(params.session_id, None)
        return {}

    async def _delete(self, params: SessionRequest) -> dict[str, Any]:
        from sema_rpc.protocol import SessionDeleteParams

        await self.engine.delete_session(SessionDeleteParams(session_id=params.session_id))
        self.sessions.pop(params.session_id, None)
        return {}

    async def _prompt(self, params: PromptRequest) -> dict[str, Any]:
        from sema_rpc.engine.control import PromptCancel

        session, state = self._session(params.session_id)
        request, prompt = _prompt_request(session, state, params.prompt)
        # Registered when the request was read (`_accept_prompt`): a cancel or close read
        # right behind it reaches this turn.
        cancel = state.prompts.get(_current_request.get()) or PromptCancel()
        first = not session.history and not session.history_loaded
        result = await self.engine.prompt(request, cancel)
        while state.steered:  # inputs steered into this turn: it ends with them
            steered = state.steered.pop(0)
            with contextlib.suppress(Exception):
                result = await asyncio.shield(steered)
        if first and session.history and not session.bus.closed:
            title = _title_of(prompt)
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
            return _with_message_id({"stopReason": "cancelled"}, result)
        if result.stop_reason == "error":
            error = result.error
            raise RpcError(
                INTERNAL_ERROR,
                error.message if error else "the turn failed",
                error.model_dump(mode="json", exclude_none=True) if error else None,
            )
        stop = "max_turn_requests" if result.stop_reason == "max_turns" else "end_turn"
        return _with_message_id({"stopReason": stop}, result)

    async def _steer(self, params: SteeringRequest) -> dict[str, Any]:
        """`_session/steering`: text for the running turn (it joins it after the running
        tool batch, or continues it when the model was answering: the running prompt
        answers once both are done). No turn: a new one (`startedNewTurn`), or
        `promptRequired` when the client asked for it (`_meta.steering.idleBehavior`)."""
        from sema_rpc.engine.engine import system_command
        from sema_rpc.engine.lifecycle import answered

        session, state = self._session(params.session_id)
        running = bool(state.prompts)
        steering = (params.meta or {}).get("steering")
        idle = steering.get("idleBehavior") if isinstance(steering, dict) else None
        if not running and idle == "promptRequired":
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        request, prompt = _prompt_request(session, state, params.prompt)
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
        task.add_done_callback(_log_failure)
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)
        return {"outcome": "startedNewTurn"}

    async def _fork(self, params: ForkRequest) -> _Answer:
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
        await self.engine.dispose(_ref(forked.session_id))
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
        return _Answer(result, self._after_open(session, state))

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
        except ValidationError as exc:
            raise RpcError(INVALID_PARAMS, str(exc.errors()[0]["msg"])) from exc
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
        self.shutting_down = True
        for state in self.sessions.values():
            for cancel in list(state.prompts.values()):
                cancel.cancel()
        if self._engine is not None:
            await self._engine.shutdown(grace_s)
        pending = [t for t in [*self._incoming.values(), *self._detached] if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=grace_s)


def _prompt_request(
    session: Session, state: AcpSession, blocks: list[dict[str, Any]]
) -> tuple[Any, str | list[dict[str, Any]]]:
    """An ACP prompt as the engine's `session/prompt` params (-32602 when unusable)."""
    from sema_rpc.acp.options import skill_prompt
    from sema_rpc.protocol import SessionPromptParams

    prompt = translate.prompt_input(blocks, state.cwd)
    if isinstance(prompt, str):
        prompt = skill_prompt(prompt, session)
    try:
        request = SessionPromptParams.model_validate({"sessionId": session.id, "input": prompt})
    except ValidationError as exc:
        raise RpcError(
            INVALID_PARAMS,
            f"invalid prompt: {exc.error_count()} error(s)",
            json.loads(exc.json(include_url=False, include_context=False)),
        ) from exc
    return request, prompt


def _client_system_prompt(meta: dict[str, Any] | None) -> tuple[str, str] | None:
    """`_meta.systemPrompt` as claude-agent-acp reads it (and acpx sends it): a string
    replaces our system prompt, `{append: text}` adds to it. Anything else: -32602."""
    value = (meta or {}).get("systemPrompt")
    if value is None:
        return None
    if isinstance(value, str):
        return ("override", value)
    if isinstance(value, dict) and isinstance(value.get("append"), str):
        return ("append", value["append"])
    raise RpcError(INVALID_PARAMS, "_meta.systemPrompt: a string (replaces), or {append: string}")


def _with_message_id(result: dict[str, Any], answer: Any) -> dict[str, Any]:
    """`userMessageId`: the prompt's message id (what `session/fork` and
    `_session/rewind` take), as the message-id draft returns it; `usage` (unstable in
    ACP): this turn's tokens."""
    if answer.message_id is not None:
        result["userMessageId"] = answer.message_id
    turn = answer.turn
    if turn is not None:
        counts = (
            turn.input_tokens,
            turn.output_tokens,
            turn.cache_read_tokens,
            turn.cache_write_tokens,
        )
        result["usage"] = {
            "totalTokens": sum(counts),
            "inputTokens": turn.input_tokens,
            "outputTokens": turn.output_tokens,
            "cachedReadTokens": turn.cache_read_tokens,
            "cachedWriteTokens": turn.cache_write_tokens,
        }
    return result


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a steered turn failed: %s", task.exception())


def _title_of(prompt: str | list[dict[str, Any]]) -> str:
    text = (
        prompt
        if isinstance(prompt, str)
        else " ".join(b["text"] for b in prompt if b["type"] == "text")
    )
    return " ".join(text.split())[:100] or "[attachment]"


def _ref(session_id: str) -> Any:
    from sema_rpc.protocol import SessionRef

    return SessionRef(session_id=session_id)


def _mcp(server: McpServer) -> dict[str, Any]:
    """An ACP MCP server as `session/create` takes it (stdio runs; http/sse are reported
    failed by the engine, never silently dropped)."""
    if server.command is not None and server.type in (None, "stdio"):
        return {
            "name": server.name,
            "command": server.command,
            "args": server.args,
            "env": server.env,
        }
    return {
        "name": server.name,
        "type": server.type or "http",
        "url": server.url,
        "headers": server.headers,
    }


__all__ = ["AcpServer"]
