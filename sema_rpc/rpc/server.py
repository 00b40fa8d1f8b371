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

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.transcript import TranscriptRecorder

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

    def send_raw(self, message: dict[str, Any], *, batch: bool = False) -> None:
        self.frame_writer.write(_dumps(message), batch=batch)


def _error_message(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


class SemaServer(JsonRPCServer):
    """One process, one client, many sessions."""

    protocol: SemaProtocol

    def __init__(self, writer: FrameWriter, recorder: TranscriptRecorder | None = None):
        super().__init__(SemaProtocol, cattrs.Converter)
        self.recorder = recorder
        if recorder is not None:
            writer.tap = lambda body: recorder.record("out", body)
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
        self._prompt_requests: dict[Any, str] = {}
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
            try:
                return spec.params.model_validate({} if params is None else params)
            except ValidationError as exc:
                raise JsonRpcException(
                    code=ErrorCode.INVALID_PARAMS,
                    message=f"invalid params for {spec.name}: {exc.error_count()} error(s)",
                    data=json.loads(exc.json(include_url=False, include_context=False)),
                ) from exc

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
        must go on to the next message whatever this one was."""
        try:
            self._on_body(body)
        except Exception:
            log.exception("unexpected failure handling a message")
            self.protocol.send_raw(
                _error_message(None, ErrorCode.INTERNAL_ERROR, "internal error reading a message")
            )

    def _on_body(self, body: bytes) -> None:
        if self.recorder is not None:
            self.recorder.record("in", body)
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError) as exc:  # invalid UTF-8; absurd nesting
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
        if method == "shutdown":
            # In the order received: an `exit` in the same write sees it (exit code 0),
            # and any request after it is refused, before the handler's task has run.
            self.shutting_down = True
        assert msg_id is not None or "id" in obj
        self.protocol.handle_message(
            JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)  # type: ignore[arg-type]
        )

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
        target = params.get("id") if isinstance(params, dict) else None
        session_id = self._prompt_requests.get(target)
        if session_id is not None:
            # Cancelling a prompt is an interrupt: it still answers once, `interrupted`.
            self.engine.interrupt(session_id)
            return
        if isinstance(target, str | int):
            self.protocol._handle_cancel_notification(target)

    # ------------------------------------------------------------------ ClientBridge

    def notify(self, event: EventParams) -> None:
        self.protocol.send_raw(
            {"jsonrpc": "2.0", "method": event.event, "params": event.wire()},
            batch=event.event in _BATCHED,
        )

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        spec = SERVER_REQUESTS[event.event]
        if not getattr(self.capabilities, _snake(spec.capability), False) or self.writer.closed:
            return None
        msg_id = f"sema-{next(self._request_ids)}"
        future = self.protocol.send_request(event.event, event.wire(), msg_id=msg_id)
        try:
            raw = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol.send_raw(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}
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
        if self._engine is not None:
            await self._engine.shutdown()
        return EmptyResult()

    def _exit(self, _params: Any) -> None:
        self.exit_code = 0 if self.shutting_down else 1
        self.exit_requested.set()

    async def _prompt(self, params: Any) -> Any:
        msg_id = self.protocol.msg_id
        self._prompt_requests[msg_id] = params.session_id
        try:
            return await self.engine.prompt(params)
        finally:
            self._prompt_requests.pop(msg_id, None)

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
    from sema_rpc.transcript import TranscriptRecorder

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
    if server._engine is not None:
        await server._engine.shutdown()
    await writer.drain()
    recorder.close()
    return server.exit_code
