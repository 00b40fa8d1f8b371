"""The JSON-RPC server: pygls dispatch on sema-rpc's own framing.

What this layer adds to pygls (see ../shared reference notes on its traps):
- messages are parsed once with plain `json.loads` and only the top-level object is
  turned into a pygls message; params stay dicts and are validated by the protocol's
  pydantic models (pygls's default converter would rename keys and build namedtuples);
- the envelope is checked first, so malformed input gets a JSON-RPC error instead of
  being dropped (pygls silently ignores a wrong `jsonrpc`);
- `_wrap` is the single place where exceptions become JSON-RPC errors;
- outgoing messages are serialised straight to compact ASCII JSON (notifications skip
  pygls's attrs round trip: they are the hot path);
- server→client requests (`ClientBridge.ask`) go through pygls's request futures, and
  are cancelled on the wire with `$/cancelRequest` when the engine stops waiting;
- the engine (and everything under `sema_rpc.engine`) is imported and created on the
  first method that needs it, so `initialize` is answered without paying for it.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import cattrs
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.server import JsonRPCServer

import sema_rpc
from sema_rpc.protocol import (
    METHODS,
    NOTIFICATIONS,
    PROTOCOL_VERSION,
    SERVER_REQUESTS,
    ClientCapabilities,
    EmptyResult,
    ErrorCode,
    EventParams,
    InitializeParams,
    InitializeResult,
    MethodSpec,
    RpcError,
    ServerCapabilities,
    ServerInfo,
    TextChunkParams,
    ThinkingChunkParams,
    ToolExecutionUpdateParams,
    WireModel,
)
from sema_rpc.rpc.framing import (
    ContentLengthDecoder,
    FrameWriter,
    JsonlDecoder,
    read_stream,
)
from sema_rpc.text import SURROGATE_ESCAPE, without_surrogates

if TYPE_CHECKING:
    from sema_rpc.engine.control import PromptCancel
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.record.recorder import TranscriptRecorder

log = logging.getLogger(__name__)


_BATCHED = frozenset(
    {TextChunkParams.event, ThinkingChunkParams.event, ToolExecutionUpdateParams.event}
)
"""High-rate deltas: written at the end of the loop iteration, many per `write(2)` (see
FrameWriter); every other message is written at once (with the deltas before it)."""


def _dumps(obj: Any) -> bytes:
    # ASCII output: U+2028/U+2029 (and every non-ASCII char) are escaped, so a JSONL
    # reader splitting on "\n" can never cut a message, and Content-Length is len(bytes).
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


def _response_error(error: ResponseError | None) -> dict[str, Any]:
    assert error is not None
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        out["data"] = error.data
    return out


def _to_wire(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        return message
    if isinstance(message, ResponseErrorMessage):
        return {"jsonrpc": "2.0", "id": message.id, "error": _response_error(message.error)}
    if isinstance(message, JsonRPCResponseMessage):
        return {"jsonrpc": "2.0", "id": message.id, "result": message.result}
    if isinstance(message, JsonRPCRequestMessage):
        return {
            "jsonrpc": "2.0",
            "id": message.id,
            "method": message.method,
            "params": message.params,
        }
    if isinstance(message, JsonRPCNotification):
        return {"jsonrpc": "2.0", "method": message.method, "params": message.params}
    raise TypeError(f"cannot send {type(message).__name__}")


class SemaProtocol(JsonRPCProtocol):
    frame_writer: FrameWriter

    def _send_data(self, data: Any) -> None:
        if data is None:
            return
        wire = _to_wire(data)
        try:
            body = _dumps(wire)
        except (TypeError, ValueError) as exc:
            log.exception("could not serialise an outgoing message")
            if "id" in wire and "method" not in wire:
                body = _dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": wire["id"],
                        "error": {
                            "code": ErrorCode.INTERNAL_ERROR,
                            "message": f"internal error: result not serialisable: {exc}",
                        },
                    }
                )
            else:
                return
        self.frame_writer.write(body)

    def send_raw(
        self, message: dict[str, Any], *, batch: bool = False, session: str | None = None
    ) -> None:
        """`session`: the session the message belongs to (the recorder routes by it)."""
        self.frame_writer.write(_dumps(message), batch=batch, session=session)


def _error_message(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


def _loads(body: bytes) -> Any:
    """Parse one incoming message: the one place text enters the process.

    The bytes must be UTF-8 (an encoded surrogate such as `ED A0 80` is not: ValueError,
    answered -32700). A JSON escape of a lone surrogate (`"\\ud800"`, what JavaScript's
    `JSON.stringify` gives for a string cut inside an emoji) is valid JSON but not text:
    it becomes U+FFFD, so nothing after the reader ever holds a surrogate. An escaped
    pair is the character it encodes."""
    obj = json.loads(body.decode("utf-8"))
    if SURROGATE_ESCAPE.search(body) is not None:
        obj = without_surrogates(obj)
    return obj


def _parse_params(spec: MethodSpec, params: Any) -> Any:
    """Validate a request's params; `[]` is `{}` (Lua's JSON encoders write an empty
    table as `[]`), so a method whose fields are all optional accepts it."""
    try:
        return spec.params.model_validate({} if params is None or params == [] else params)
    except ValidationError as exc:
        raise JsonRpcException(
            code=ErrorCode.INVALID_PARAMS,
            message=f"invalid params for {spec.name}: {exc.error_count()} error(s)",
            data=json.loads(exc.json(include_url=False, include_context=False)),
        ) from exc


_NOT_A_REQUEST = object()


class SemaServer(JsonRPCServer):
    """One process, one client, many sessions."""

    protocol: SemaProtocol

    def __init__(self, writer: FrameWriter, recorder: TranscriptRecorder | None = None):
        super().__init__(SemaProtocol, cattrs.Converter)
        self.recorder = recorder
        if recorder is not None:
            writer.tap = recorder.record_out
        self.protocol.frame_writer = writer
        self.writer = writer
        self.capabilities = ClientCapabilities()
        self._engine: SemaEngine | None = None
        self._engine_methods: dict[str, bool] = {}
        self.record_dir: Path | None = None
        """`--record DIR`: handed to the engine when it is created."""
        self.shutting_down = False
        self.exit_requested = asyncio.Event()
        self.exit_code = 0
        self._request_ids = itertools.count(1)
        self._prompts: dict[Any, tuple[PromptCancel, asyncio.Future[Any]]] = {}
        """Open `session/prompt` requests by id, from the moment they are read, so a
        `$/cancelRequest` right behind one finds it before its task has started."""
        self._reading: Any = _NOT_A_REQUEST
        """The id of the request being read, once known (for an answer on a bug)."""
        handlers: dict[str, Callable[[Any], Any]] = {
            "initialize": self._initialize,
            "shutdown": self._shutdown,
            "exit": self._exit,
            "session/create": self._on_engine("create_session", is_async=True),
            "session/prompt": self._prompt,
            "session/interrupt": self._interrupt,
            "mode/update": self._on_engine("update_mode", is_async=False),
            "permissionMode/update": self._on_engine("update_permission_mode", is_async=False),
            "command/list": self._on_engine("command_list", is_async=False),
            "tool/list": self._on_engine("tool_list", is_async=False),
            # sessions that last
            "session/list": self._on_engine("list_sessions", is_async=True),
            "session/dispose": self._on_engine("dispose", is_async=True),
            "session/compact": self._on_engine("compact", is_async=True),
        }
        missing = set(METHODS) - set(handlers)
        assert not missing, f"methods without a handler: {missing}"
        for name, spec in METHODS.items():
            self.protocol.fm.features[name] = self._wrap(spec, handlers[name])

    # ------------------------------------------------------------------ the engine, lazily

    @property
    def engine(self) -> SemaEngine:
        """The engine, imported and created on first use (not before `initialize`)."""
        engine = self._engine
        if engine is None:
            from sema_rpc.engine.engine import SemaEngine

            engine = SemaEngine(self, client_answers_permissions=self.capabilities.permissions)
            engine.record_dir = self.record_dir
            for name, is_async in self._engine_methods.items():
                # `_wrap` keeps sync handlers sync: a delegate must match what it calls.
                kind = inspect.iscoroutinefunction(getattr(engine, name))
                if kind != is_async:
                    raise TypeError(f"SemaEngine.{name}: async={kind}, its delegate's={is_async}")
            self._engine = engine
        return engine

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

    # ------------------------------------------------------------------ dispatch

    def _wrap(self, spec: MethodSpec, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The one place where exceptions become JSON-RPC errors.

        Synchronous handlers stay synchronous, so pygls answers them before reading on
        (`session/interrupt` is answered at once, in order); async ones run as tasks.
        """

        def parse(params: Any) -> Any:
            if not spec.notification:
                return _parse_params(spec, params)
            try:
                return _parse_params(spec, params)
            except JsonRpcException:  # a notification cannot be refused (nor answered)
                log.warning("%s: ignoring invalid params %r", spec.name, params)
                return spec.params()

        def translate(exc: Exception) -> JsonRpcException:
            if isinstance(exc, RpcError):
                return JsonRpcException(code=exc.code, message=exc.message, data=exc.data)
            if isinstance(exc, JsonRpcException):
                return exc
            log.error("%s failed", spec.name, exc_info=exc)
            return JsonRpcException(
                code=ErrorCode.INTERNAL_ERROR,
                message=f"internal error in {spec.name}: {type(exc).__name__}: {exc}",
            )

        def to_wire(result: Any) -> Any:
            return result.wire() if isinstance(result, WireModel) else result

        if inspect.iscoroutinefunction(fn):

            async def async_handler(params: Any) -> Any:
                parsed = parse(params)
                try:
                    return to_wire(await fn(parsed))
                except Exception as exc:
                    raise translate(exc) from exc

            return async_handler

        def sync_handler(params: Any) -> Any:
            parsed = parse(params)
            try:
                return to_wire(fn(parsed))
            except Exception as exc:
                raise translate(exc) from exc

        return sync_handler

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors are answered to the client and logged where they are raised (see _wrap).
        log.debug("answered with an error: %s", error)

    def on_frame_error(self, message: str) -> None:
        log.warning("framing: %s", message)
        self.protocol.send_raw(_error_message(None, ErrorCode.INVALID_REQUEST, message))

    def on_body(self, body: bytes) -> None:
        """Check one message's envelope and hand it to pygls. Never raises: the reader
        must go on to the next message whatever this one was. A failure here is a bug:
        a request is answered -32603; a notification or a response never is."""
        self._reading = _NOT_A_REQUEST
        try:
            self._on_body(body)
        except Exception:
            log.exception("unexpected failure handling a message")
            if self._reading is not _NOT_A_REQUEST:
                self.protocol.send_raw(
                    _error_message(
                        self._reading, ErrorCode.INTERNAL_ERROR, "internal error reading a message"
                    )
                )

    def _on_body(self, body: bytes) -> None:
        if self.recorder is not None:
            self.recorder.record_in(body)
        try:
            obj = _loads(body)
        except UnicodeDecodeError as exc:
            self.protocol.send_raw(
                _error_message(
                    None,
                    ErrorCode.PARSE_ERROR,
                    f"parse error: not valid UTF-8 (byte {exc.start}: {exc.reason})",
                )
            )
            return
        except (ValueError, RecursionError) as exc:  # not JSON; absurd nesting
            self.protocol.send_raw(
                _error_message(None, ErrorCode.PARSE_ERROR, f"parse error: {exc}")
            )
            return
        if not isinstance(obj, dict):
            what = "a batch (array)" if isinstance(obj, list) else f"a JSON {type(obj).__name__}"
            self.protocol.send_raw(
                _error_message(
                    None,
                    ErrorCode.INVALID_REQUEST,
                    f"invalid request: expected a JSON object, got {what}; batches are not supported",
                )
            )
            return
        msg_id = obj.get("id")
        reply_id = msg_id if _valid_id(msg_id) else None
        if obj.get("jsonrpc") != "2.0":
            self.protocol.send_raw(
                _error_message(
                    reply_id, ErrorCode.INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"'
                )
            )
            return
        if not _valid_id(msg_id):
            self.protocol.send_raw(
                _error_message(
                    None,
                    ErrorCode.INVALID_REQUEST,
                    'invalid request: "id" must be a string or an integer',
                )
            )
            return
        method = obj.get("method")
        if method is None:
            if "id" in obj and ("result" in obj or "error" in obj):
                self._on_response(obj)
            else:
                self.protocol.send_raw(
                    _error_message(
                        reply_id, ErrorCode.INVALID_REQUEST, 'invalid request: missing "method"'
                    )
                )
            return
        if not isinstance(method, str):
            self.protocol.send_raw(
                _error_message(
                    reply_id,
                    ErrorCode.INVALID_REQUEST,
                    'invalid request: "method" must be a string',
                )
            )
            return
        params = obj.get("params")
        if "id" not in obj:  # a notification
            if method == "$/cancelRequest":
                self._on_cancel(params)
                return
            if method in METHODS and not METHODS[method].notification:
                log.warning(
                    "ignoring %s sent as a notification (no id): it needs an answer", method
                )
                return
            self.protocol.handle_message(
                JsonRPCNotification(method=method, jsonrpc="2.0", params=params)
            )
            return
        if self.shutting_down and method != "exit":
            self.protocol.send_raw(
                _error_message(
                    msg_id,
                    ErrorCode.INVALID_REQUEST,
                    "invalid request: the server is shutting down",
                )
            )
            return
        self._reading = msg_id
        if method == "shutdown" and self._params_valid(method, params):
            # In the order received: an `exit` in the same write sees it (exit code 0),
            # and any request after it is refused, before the handler's task has run.
            # Invalid params are answered -32602 by the handler, and nothing shuts down.
            self.shutting_down = True
        cancel: PromptCancel | None = None
        if method == "session/prompt":
            from sema_rpc.engine.control import PromptCancel

            cancel = PromptCancel()
        self.protocol.handle_message(
            JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)  # type: ignore[arg-type]
        )
        if cancel is not None and msg_id is not None:
            task = self.protocol._request_futures.get(msg_id)
            if isinstance(task, asyncio.Future) and not task.done():
                self._prompts[msg_id] = (cancel, task)
                task.add_done_callback(lambda _t: self._forget_prompt(msg_id, cancel))

    def _params_valid(self, method: str, params: Any) -> bool:
        try:
            _parse_params(METHODS[method], params)
        except JsonRpcException:
            return False
        return True

    def _forget_prompt(self, msg_id: Any, cancel: PromptCancel) -> None:
        entry = self._prompts.get(msg_id)
        if entry is not None and entry[0] is cancel:
            del self._prompts[msg_id]

    def _on_response(self, obj: dict[str, Any]) -> None:
        error = obj.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": ErrorCode.INTERNAL_ERROR, "message": str(error)}
            code = error.get("code")
            message = ResponseErrorMessage(
                id=obj["id"],
                error=ResponseError(
                    code=code if isinstance(code, int) else ErrorCode.INTERNAL_ERROR,
                    message=str(error.get("message", "")),
                    data=error.get("data"),
                ),
            )
            self.protocol.handle_message(message)  # type: ignore[arg-type]  # pygls routes it as an error response
        else:
            self.protocol.handle_message(
                JsonRPCResponseMessage(id=obj["id"], jsonrpc="2.0", result=obj.get("result"))
            )

    def _on_cancel(self, params: Any) -> None:
        """`$/cancelRequest` is a notification: whatever its params, it is never answered."""
        target = params.get("id") if isinstance(params, dict) else None
        if not isinstance(target, str | int) or isinstance(target, bool):
            log.warning("ignoring $/cancelRequest without a string or integer id: %r", params)
            return
        prompt = self._prompts.get(target)
        if prompt is not None:
            # A prompt is never answered -32800: cancelled at any stage (not started,
            # queued, running) it answers once, `interrupted`.
            prompt[0].cancel()
            return
        self.protocol._handle_cancel_notification(target)

    # ------------------------------------------------------------------ ClientBridge

    def notify(self, event: EventParams) -> None:
        self.protocol.send_raw(
            {"jsonrpc": "2.0", "method": event.event, "params": event.wire()},
            batch=event.event in _BATCHED,
            session=event.session_id,
        )

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        spec = SERVER_REQUESTS[event.event]
        if not getattr(self.capabilities, _snake(spec.capability), False) or self.writer.closed:
            return None
        msg_id = f"sema-{next(self._request_ids)}"
        # `requestId` repeats the id inside params: a client library that hides ids from
        # its request handler (Neovim's) still matches the `$/cancelRequest {id}` below.
        params = {**event.wire(), "requestId": msg_id}
        future = self.protocol.send_request(event.event, params, msg_id=msg_id)
        try:
            raw = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol.send_raw(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}},
                session=event.session_id,
            )
            raise
        except JsonRpcException as exc:
            log.warning("client answered %s with an error: %s", event.event, exc)
            return None
        try:
            return result_type.model_validate(raw)
        except ValidationError as exc:
            log.warning("client answered %s with an invalid result: %s", event.event, exc)
            return None

    # ------------------------------------------------------------------ lifecycle methods

    def _initialize(self, params: InitializeParams) -> InitializeResult:
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
        self.capabilities = params.capabilities
        if self._engine is not None:
            self._engine.client_answers_permissions = params.capabilities.permissions
        return InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            server_info=ServerInfo(version=sema_rpc.__version__),
            capabilities=ServerCapabilities(
                methods=list(METHODS),
                notifications=list(NOTIFICATIONS),
                server_requests=list(SERVER_REQUESTS),
            ),
        )

    async def _shutdown(self, _params: Any) -> EmptyResult:
        self.shutting_down = True
        await self.stop_turns()
        return EmptyResult()

    async def stop_turns(self, grace_s: float = 5.0) -> None:
        """`shutdown` and end of input: nothing new starts; running turns are
        interrupted; every open prompt is answered (`interrupted` unless it had ended)
        and every other request in flight is answered before this returns (together
        within `grace_s`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        if self._engine is not None:
            await self._engine.shutdown(grace_s)
        for cancel, _task in list(self._prompts.values()):
            cancel.cancel()  # not started yet (or no engine): answers at once
        current = asyncio.current_task()
        in_flight: list[asyncio.Task[Any]] = []  # the client's requests being handled
        for future in list(self.protocol._request_futures.values()):
            task: Any = future  # our own requests to the client are not tasks
            if isinstance(task, asyncio.Task) and task is not current and not task.done():
                in_flight.append(task)
        if in_flight:
            await asyncio.wait(in_flight, timeout=max(0.1, deadline - loop.time()))

    def _exit(self, _params: Any) -> None:
        self.exit_code = 0 if self.shutting_down else 1
        self.exit_requested.set()

    async def _prompt(self, params: Any) -> Any:
        prompt = self._prompts.get(self.protocol.msg_id)
        return await self.engine.prompt(params, prompt[0] if prompt is not None else None)

    def _interrupt(self, params: Any) -> Any:
        from sema_rpc.protocol import SessionInterruptResult

        return SessionInterruptResult(interrupted=self.engine.interrupt(params.session_id))


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


async def serve(
    stdin: BinaryIO, stdout: BinaryIO, *, jsonl: bool, record_dir: str | None = None
) -> int:
    """Serve one client until `exit` or end of input. Returns the process exit code."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=jsonl)
    await writer.start(loop)
    from sema_rpc.record.recorder import TranscriptRecorder

    # Always there: a session may ask to be recorded (session/create `recordDir`).
    recorder = TranscriptRecorder(Path(record_dir) if record_dir is not None else None)
    server = SemaServer(writer, recorder)
    server.record_dir = recorder.run_dir
    decoder_cls = JsonlDecoder if jsonl else ContentLengthDecoder
    decoder = decoder_cls(server.on_body, server.on_frame_error)
    reading = asyncio.ensure_future(read_stream(stdin, decoder.feed, loop))
    exiting = asyncio.ensure_future(server.exit_requested.wait())
    await asyncio.wait({reading, exiting}, return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        decoder.eof()
        log.info("end of input: shutting down")
    exiting.cancel()
    reading.cancel()
    server.shutting_down = True
    await server.stop_turns()
    await writer.drain()
    recorder.close()
    return server.exit_code
