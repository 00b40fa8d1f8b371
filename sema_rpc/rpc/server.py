"""The native dialect: its method table (`METHODS`, protocol.py) on a JSON-RPC
connection (connection.py), sema-rpc's own framing (Content-Length, or `--jsonl`).

- the connection reads, checks envelopes, runs handlers, answers, cancels and maps
  errors (the same for ACP); this module is the native method table, the client's
  state (capabilities, open prompts) and the engine's configuration;
- engine events become notifications in notifications.py (the native mapping);
- a synchronous handler is answered before the next message is read (`session/interrupt`
  is answered at once, in order); an async one runs as a task, cancellable by
  `$/cancelRequest` (answered -32800) — except `session/prompt`, which a cancel
  interrupts and which answers `interrupted`;
- server→client requests (`ClientBridge.ask`) repeat their id as `requestId`, and are
  cancelled on the wire with `$/cancelRequest` when the engine stops waiting;
- the engine belongs to the process (host.py): it is imported and created on the first
  method that needs it, so `initialize` is answered without paying for it;
- so are the protocol's models (and pydantic): a plainly valid `initialize` is answered
  from `protocol_names` (generated from the registries) and checked by hand, with the
  same outcome as its model; the models are loaded right after that answer, or on the
  first other message (`_load`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sema_rpc.plain_model import is_validation_error
from sema_rpc.protocol_core import PROTOCOL_VERSION, ErrorCode, RpcError
from sema_rpc.rpc import errors
from sema_rpc.rpc.connection import Connection, current_request
from sema_rpc.rpc.framing import FrameWriter, read_stream
from sema_rpc.rpc.host import Host
from sema_rpc.rpc.initialize import _initialize_capabilities_plain, initialize_result
from sema_rpc.rpc.notifications import DeltaEncoder, NativeEvents

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.loop.control import PromptCancel
    from sema_rpc.protocol import (
        ClientCapabilities,
        EmptyResult,
        EventParams,
        InitializeParams,
        MethodSpec,
        WireModel,
    )
    from sema_rpc.record.recorder import TranscriptRecorder
    from sema_rpc.rpc.frames import First

log = logging.getLogger(__name__)

connection: contextvars.ContextVar[SemaServer | None] = contextvars.ContextVar(
    "sema_rpc_front", default=None
)
"""The front whose request handler is running (a listening server's host reads it: the
connection creating a session follows it from its first event, shared.py)."""


class SemaServer:
    """The native dialect's front for one client: the method table, what the client
    declared, its open prompts. The engine is the host's (host.py)."""

    def __init__(
        self,
        writer: FrameWriter,
        recorder: TranscriptRecorder | None = None,
        *,
        host: Host | None = None,
    ):
        self.recorder = recorder
        self.writer = writer
        self.number = 0
        """A listening server's number for this connection (`connection N`)."""
        self.client_name: str | None = None
        """`initialize`'s `clientInfo.name`."""
        self.close_connection: Callable[[], None] | None = None
        """A socket connection of a listening server: `exit` closes it, `shutdown` ends
        this client's part only (the process goes on)."""
        self.conn = Connection(
            writer,
            jsonl=writer.jsonl,
            codes=errors.NATIVE,
            cancel=("$/cancelRequest", "id"),
            id_prefix="sema-",
            open_while_stopping=frozenset({"exit"}),
        )
        self.conn.front = self
        if recorder is not None:
            writer.tap = recorder.record_out
            self.conn.tap_in = recorder.record_in
        self.on_body = self.conn.on_body
        self.on_frame_error = self.conn.on_frame_error
        self.host = host if host is not None else Host(self.configure_engine)
        self.host.attach(self)
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        """Every method of the table, wrapped (`_wrap`); empty until `_load`."""
        self.notify: Callable[[EventParams], None] = _unloaded
        """`ClientBridge.notify`: the native mapping's (notifications.py) once `_load`ed
        (events come from the engine, made after that)."""
        self._capabilities: ClientCapabilities | dict[str, bool] = {}
        """What `initialize` declared: the model, or its fields when checked by hand."""
        self._engine_methods: dict[str, bool] = {}
        self.record_dir: Path | None = None
        """`--record DIR`: handed to the engine when it is created."""
        self.exit_requested = asyncio.Event()
        self.exit_code = 0
        self.after_first_session: Callable[[], None] | None = None
        """Called once, after the first `session/create` succeeded (cli: start-up ends)."""
        self.one_shot = False
        """`sema-rpc run`: one session, its prompt right behind `session/create`; handed
        to the engine (no first-turn warm-up: it would only compete with that prompt)."""
        self._prompts: dict[Any, PromptCancel] = {}
        """Open `session/prompt` requests by id, from the moment they are read, so a
        `$/cancelRequest` right behind one finds it before its task has started."""

    @property
    def shutting_down(self) -> bool:
        return self.conn.shutting_down

    @shutting_down.setter
    def shutting_down(self, value: bool) -> None:
        self.conn.shutting_down = value

    # ------------------------------------------------------------------ the protocol, lazily

    def _load(self) -> None:
        """Load the protocol's models and wrap every method of the table: on the first
        message other than a plainly valid `initialize`, or right after answering one."""
        if self._handlers:
            return
        handlers: dict[str, Callable[[Any], Any]] = {
            "initialize": self._initialize,
            "shutdown": self._shutdown,
            "exit": self._exit,
            "session/create": self._after_create(self._on_engine("create_session", is_async=True)),
            "session/prompt": self._prompt,
            "session/interrupt": self._interrupt,
            "mode/update": self._on_engine("update_mode", is_async=False),
            "permissionMode/update": self._on_engine("update_permission_mode", is_async=False),
            "command/list": self._on_engine("command_list", is_async=False),
            "tool/list": self._on_engine("tool_list", is_async=False),
            "model/list": self._on_engine("model_list", is_async=False),
            "session/setModel": self._on_engine("session_set_model", is_async=False),
            "session/setSandbox": self._on_engine("set_sandbox", is_async=False),
            # sessions that last
            "session/list": self._list_sessions,
            "session/attach": self._attach,
            "session/detach": self._detach,
            "session/dispose": self._dispose,
            "session/delete": self._on_engine("delete_session", is_async=True),
            "session/rename": self._on_engine("rename_session", is_async=True),
            "session/compact": self._on_engine("compact", is_async=True),
            "session/messages": self._on_engine("session_messages", is_async=True),
            "session/fork": self._on_engine("fork_session", is_async=True),
            "session/rewind": self._on_engine("rewind", is_async=True),
        }
        from sema_rpc.protocol import METHODS

        missing = set(METHODS) - set(handlers)
        assert not missing, f"methods without a handler: {missing}"
        for name, spec in METHODS.items():
            self._handlers[name] = self._wrap(spec, handlers[name])
        self.notify = NativeEvents(self.writer).notify

    @property
    def capabilities(self) -> ClientCapabilities:
        caps = self._capabilities
        if isinstance(caps, dict):
            from sema_rpc.protocol import ClientCapabilities

            fields: dict[str, Any] = caps
            caps = self._capabilities = ClientCapabilities.model_construct(**fields)
        return caps

    # ------------------------------------------------------------------ the engine

    @property
    def engine(self) -> SemaEngine:
        """The host's engine, created on first use (not before `initialize`)."""
        return self.host.engine

    def configure_engine(self, engine: SemaEngine) -> None:
        """What this process hands the engine it creates (Host's `setup`)."""
        from sema_rpc.record.recorder import session_record_dir

        engine.client_answers_permissions = self.capabilities.permissions
        engine.record_dir = self.record_dir
        engine.session_record_dirs = session_record_dir
        engine.warm_turns = not self.one_shot
        for name, is_async in self._engine_methods.items():
            # `_wrap` keeps sync handlers sync: a delegate must match what it calls.
            kind = inspect.iscoroutinefunction(getattr(engine, name))
            if kind != is_async:
                raise TypeError(f"SemaEngine.{name}: async={kind}, its delegate's={is_async}")

    def _on_engine(self, name: str, *, is_async: bool) -> Callable[[Any], Any]:
        """A handler calling `self.engine.<name>(params)`, the engine created on first use."""
        self._engine_methods[name] = is_async
        if is_async:

            async def call_async(params: Any) -> Any:
                return await getattr(self.engine, name)(params)

            return call_async

        def call(params: Any) -> Any:
            return getattr(self.engine, name)(params)

        return call

    def _after_create(self, create: Callable[[Any], Any]) -> Callable[[Any], Any]:
        async def create_session(params: Any) -> Any:
            result = await create(params)
            if self.host.shared:
                self.host.created(self, result.session_id)  # type: ignore[attr-defined]
            hook, self.after_first_session = self.after_first_session, None
            if hook is not None:
                hook()
            return result

        return create_session

    # ------------------------------------------------------------------ the connection's Front

    def _wrap(self, spec: MethodSpec, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Params validated, results to their wire form. Synchronous handlers stay
        synchronous, so they are answered before reading on (`session/interrupt` is
        answered at once, in order); async ones run as tasks. An exception becomes an
        error answer in the connection (rpc/errors.py)."""

        def parse(params: Any) -> Any:
            if not spec.notification:
                return errors.validate(spec.params, params, spec.name)
            try:
                return errors.validate(spec.params, params, spec.name)
            except RpcError:  # a notification cannot be refused (nor answered)
                log.warning("%s: ignoring invalid params %r", spec.name, params)
                return spec.params()

        def to_wire(result: Any) -> Any:
            # Imported here: wrapping the table (right after `initialize`) creates no model.
            from sema_rpc.protocol import WireModel

            return result.wire() if isinstance(result, WireModel) else result

        if inspect.iscoroutinefunction(fn):

            async def async_handler(params: Any) -> Any:
                return to_wire(await fn(parse(params)))

            return async_handler

        def sync_handler(params: Any) -> Any:
            return to_wire(fn(parse(params)))

        return sync_handler

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        connection.set(self)  # in the request's own context (connection.py)
        if not self._handlers:
            if method == "initialize" and self.take_initialize(params):
                return initialize_result()
            self._load()
        if method == "shutdown" and self._params_valid(method, params):
            # In the order received: an `exit` in the same write sees it (exit code 0),
            # and any request after it is refused, before the handler's task has run.
            # Invalid params are answered -32602 by the handler, and nothing shuts down.
            self.shutting_down = True
        handler = self._handlers.get(method)
        if handler is None:
            log.warning("request %r: unknown method %r", msg_id, method)
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"Method Not Found: {method}")
        if method == "session/prompt":
            # Open from now: a stop or a close read after it reaches it (lifecycle.py).
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            cancel = self.engine.accept_prompt(session_id)
            self._prompts[msg_id] = cancel
            self.conn.after_answer(lambda: self._forget_prompt(msg_id, cancel))
        return handler(params)

    def take_initialize(self, params: Any) -> bool:
        """A plainly valid `initialize` (`_initialize_capabilities_plain`) taken: what
        the client declared is kept, and the models load at the loop's next turn (or at
        once for a message already read behind it). False for any other: nothing taken.
        Also for one answered before the loop (frames.read_first, `serve`'s `first`)."""
        caps = _initialize_capabilities_plain(params)
        if caps is None:
            return False
        self._capabilities = caps
        info = params.get("clientInfo") if isinstance(params, dict) else None
        self.client_name = info.get("name") if isinstance(info, dict) else None
        asyncio.get_running_loop().call_soon(self._load)
        return True

    def on_notification(self, method: str, params: Any) -> None:
        self._load()
        from sema_rpc.protocol import METHODS

        if method in METHODS and not METHODS[method].notification:
            log.warning("ignoring %s sent as a notification (no id): it needs an answer", method)
            return
        handler = self._handlers.get(method)
        if handler is None:
            log.warning("ignoring a notification for unknown method %r", method)
            return
        try:
            result = handler(params)
        except Exception as exc:
            log.warning("notification %s failed: %s", method, exc)
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            task.add_done_callback(_log_notification_failure)

    def on_cancel(self, target: Any) -> bool:
        prompt = self._prompts.get(target)
        if prompt is None:
            return False
        # A prompt is never answered -32800: cancelled at any stage (not started,
        # queued, running) it answers once, `interrupted`.
        prompt.cancel()
        return True

    def _params_valid(self, method: str, params: Any) -> bool:
        from sema_rpc.protocol import METHODS

        try:
            errors.validate(METHODS[method].params, params, method)
        except RpcError:
            return False
        return True

    def _forget_prompt(self, msg_id: Any, cancel: PromptCancel) -> None:
        """The prompt is answered (this runs after the answer is written)."""
        from sema_rpc.engine.session.lifecycle import answered

        answered(cancel)
        if self._prompts.get(msg_id) is cancel:
            del self._prompts[msg_id]

    # ------------------------------------------------------------------ ClientBridge

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        from sema_rpc.protocol import SERVER_REQUESTS

        spec = SERVER_REQUESTS[event.event]
        if not getattr(self.capabilities, _snake(spec.capability), False) or self.writer.closed:
            return None
        # `requestId` repeats the id inside params: a client library that hides ids from
        # its request handler (Neovim's) still matches the `$/cancelRequest {id}` sent
        # when the engine stops waiting.
        try:
            raw = await self.conn.request(
                event.event, event.wire(), session=event.session_id, id_in_params="requestId"
            )
        except RpcError as exc:
            log.warning("client answered %s with an error: %s", event.event, exc)
            return None
        try:
            return result_type.model_validate(raw)
        except ValueError as exc:
            if not is_validation_error(exc):
                raise
            log.warning("client answered %s with an invalid result: %s", event.event, exc)
            return None

    # ------------------------------------------------------------------ lifecycle methods

    def _initialize(self, params: InitializeParams) -> dict[str, Any]:
        if params.protocol_version != PROTOCOL_VERSION:
            # Refused, and nothing changes: a client that speaks several versions tries
            # again with this one.
            why = (
                f"protocolVersion {params.protocol_version} is not supported: this server "
                f"speaks protocolVersion {PROTOCOL_VERSION}"
            )
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                why,
                [
                    {
                        "type": "unsupported_protocol_version",
                        "loc": ["protocolVersion"],
                        "msg": why,
                        "input": params.protocol_version,
                        "supported": [PROTOCOL_VERSION],
                    }
                ],
            )
        self._capabilities = params.capabilities
        self.client_name = params.client_info.name if params.client_info is not None else None
        engine = self.host.engine_created
        if engine is not None and not self.host.shared:
            engine.client_answers_permissions = params.capabilities.permissions
        return initialize_result()

    async def _shutdown(self, _params: Any) -> EmptyResult:
        from sema_rpc.protocol import EmptyResult

        self.shutting_down = True
        if self.close_connection is None:  # a socket's client leaves; the process goes on
            await self.stop_turns()
        return EmptyResult()

    async def stop_turns(self, grace_s: float = 5.0) -> None:
        """`shutdown` and end of input: nothing new starts; running turns are
        interrupted; every open prompt is answered (`interrupted` unless it had ended)
        and every other request in flight is answered before this returns (together
        within `grace_s`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        await self.host.shutdown(grace_s)
        self.cancel_prompts()
        in_flight = self.conn.in_flight()
        if in_flight:
            await asyncio.wait(in_flight, timeout=max(0.1, deadline - loop.time()))

    def cancel_prompts(self) -> None:
        """Every open prompt of this client answers `interrupted` (at once when it had
        not started)."""
        for cancel in list(self._prompts.values()):
            cancel.cancel()

    def _exit(self, _params: Any) -> None:
        if self.close_connection is not None:
            self.close_connection()
            return
        self.exit_code = 0 if self.shutting_down else 1
        self.exit_requested.set()

    # ------------------------------------------------------------------ a listening server

    @property
    def client_label(self) -> str:
        """Who this client is, for the others (`request:resolved`'s `answeredBy`)."""
        return self.client_name or f"connection {self.number}"

    def _shared(self, method: str) -> Any:
        if not self.host.shared:
            raise RpcError(
                ErrorCode.INVALID_REQUEST,
                f"{method}: this server shares no sessions (start it with --listen, or run "
                "`sema-rpc serve`)",
            )
        return self.host

    def _attach(self, params: Any) -> Any:
        return self._shared("session/attach").attach_session(self, params)

    def _detach(self, params: Any) -> Any:
        return self._shared("session/detach").detach_session(self, params.session_id)

    async def _list_sessions(self, params: Any) -> Any:
        if self.host.shared:
            return await self.host.list_sessions(params)  # type: ignore[attr-defined]
        return await self.engine.list_sessions(params)

    async def _dispose(self, params: Any) -> Any:
        result = await self.engine.dispose(params)
        if self.host.shared:
            self.host.forget_session(params.session_id)  # type: ignore[attr-defined]
        return result

    async def _prompt(self, params: Any) -> Any:
        prompt = self._prompts.get(current_request())
        return await self.engine.prompt(params, prompt)

    def _interrupt(self, params: Any) -> Any:
        from sema_rpc.protocol import SessionInterruptResult

        return SessionInterruptResult(interrupted=self.engine.interrupt(params.session_id))


def _unloaded(event: EventParams) -> None:
    raise AssertionError(f"{event.event} before the protocol was loaded")


def _log_notification_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a notification's handler failed: %r", task.exception())


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


async def serve(
    stdin: BinaryIO,
    stdout: BinaryIO,
    *,
    jsonl: bool,
    record_dir: str | None = None,
    after_first_session: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
    one_shot: bool = False,
    host: Host | None = None,
    first: First | None = None,
) -> int:
    """Serve one client until `exit`, end of input or `stop` (a stop signal). Returns the
    process exit code. `host`: a listening server's (shared.py), its listeners open:
    this client is one of its connections, and its end ends them all.

    `after_first_session`: called once, after the first `session/create` succeeded.
    `one_shot`: the client sends one prompt right behind `session/create` and leaves
    (`sema-rpc run`): no first-turn warm-up (`SemaServer.one_shot`).
    `first`: what was read from `stdin` before the loop (cli.py, frames.read_first): an
    `initialize` answered then is taken and recorded as if read here; the bytes after it
    are read first.

    Returns after an orderly end: running turns interrupted and answered, history
    synced, providers' HTTP clients closed, every answer written, the recording closed."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=jsonl)
    await writer.start(loop)
    from sema_rpc.record.recorder import TranscriptRecorder

    # Always there: a session may ask to be recorded (session/create `recordDir`).
    recorder = TranscriptRecorder(Path(record_dir) if record_dir is not None else None)
    if host is not None:
        host.record_dir = recorder.run_dir  # type: ignore[attr-defined]
    server = SemaServer(writer, recorder, host=host)
    server.record_dir = recorder.run_dir
    server.after_first_session = after_first_session
    server.one_shot = one_shot
    conn = server.conn
    if first is not None and first.body is not None and first.reply is not None:
        recorder.record_in(first.body)
        recorder.record_out(first.reply)
        server.take_initialize(first.params)
    head, at_eof = (first.rest, first.eof) if first is not None else (b"", False)
    reading = asyncio.ensure_future(read_stream(stdin, conn.feed, loop, head=head, at_eof=at_eof))
    exiting = asyncio.ensure_future(server.exit_requested.wait())
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    await asyncio.wait({reading, exiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        conn.eof()
        log.info("end of input: shutting down")
    elif stopping.done():
        log.info("stop signal: shutting down")
    exiting.cancel()
    reading.cancel()
    stopping.cancel()
    server.shutting_down = True
    await server.stop_turns()
    if host is not None:
        host.close_listeners()  # type: ignore[attr-defined]
    await server.host.aclose()
    await writer.drain()
    recorder.close()
    return server.exit_code


__all__ = ["DeltaEncoder", "SemaServer", "initialize_result", "serve"]
