"""The JSON-RPC server: a small dispatcher driven by the method table (`METHODS`), on
sema-rpc's own framing.

- messages are parsed once with plain `json.loads`; params stay dicts and are validated
  by the protocol's pydantic models;
- the envelope is checked first, so malformed input gets a JSON-RPC error;
- `_wrap` is the single place where exceptions become JSON-RPC errors (domain errors
  through rpc/errors.py);
- a synchronous handler is answered before the next message is read (`session/interrupt`
  is answered at once, in order); an async one runs as a task, cancellable by
  `$/cancelRequest` (answered -32800) — except `session/prompt`, which a cancel
  interrupts and which answers `interrupted`;
- outgoing messages are serialised straight to compact ASCII JSON (notifications are the
  hot path);
- server→client requests (`ClientBridge.ask`) wait on a future per request id, and
  are cancelled on the wire with `$/cancelRequest` when the engine stops waiting;
- the engine (and everything under `sema_rpc.engine`) is imported and created on the
  first method that needs it, so `initialize` is answered without paying for it;
- so are the protocol's models (and pydantic): a plainly valid `initialize` is answered
  from `protocol_names` (generated from the registries) and checked by hand, with the
  same outcome as its model; the models are loaded right after that answer, or on the
  first other message (`_load`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
import logging
import sys
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _escape  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

import sema_rpc
from sema_rpc import protocol_names
from sema_rpc.core.errors import DomainError
from sema_rpc.core.text import SURROGATE_ESCAPE, without_surrogates
from sema_rpc.protocol_core import PROTOCOL_VERSION, ErrorCode, RpcError
from sema_rpc.rpc.errors import to_rpc_error
from sema_rpc.rpc.framing import (
    ContentLengthDecoder,
    FrameWriter,
    JsonlDecoder,
    read_stream,
)

if TYPE_CHECKING:
    from sema_rpc.engine.control import PromptCancel
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.protocol import (
        ClientCapabilities,
        EmptyResult,
        EventParams,
        InitializeParams,
        MethodSpec,
        WireModel,
    )
    from sema_rpc.record.recorder import TranscriptRecorder

log = logging.getLogger(__name__)


def _batched() -> frozenset[str]:
    """High-rate deltas: written at the end of the loop iteration, many per `write(2)` (see
    FrameWriter); every other message is written at once (with the deltas before it)."""
    from sema_rpc.protocol import TextChunkParams, ThinkingChunkParams, ToolExecutionUpdateParams

    return frozenset(
        {TextChunkParams.event, ThinkingChunkParams.event, ToolExecutionUpdateParams.event}
    )


def _dumps(obj: Any) -> bytes:
    # ASCII output: U+2028/U+2029 (and every non-ASCII char) are escaped, so a JSONL
    # reader splitting on "\n" can never cut a message, and Content-Length is len(bytes).
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


def _notification(event: EventParams) -> dict[str, Any]:
    """The generic form of an event on the wire (a JSON-RPC notification)."""
    return {"jsonrpc": "2.0", "method": event.event, "params": event.wire()}


def _constant_fields(cls: type[EventParams]) -> tuple[str, ...]:
    """The fields of a delta class other than `seq` and `delta`, when each is a string
    (or an optional one); () otherwise (the class is serialised the generic way)."""
    fields = cls.model_fields
    if "seq" not in fields or "delta" not in fields:
        return ()
    names = tuple(n for n in fields if n not in _VARYING)
    if any(fields[n].annotation not in (str, str | None) for n in names):
        return ()
    return names


_SEQ_MARK = "\x00seq"
_DELTA_MARK = "\x00delta"
_VARYING = ("seq", "delta")


class DeltaEncoder:
    """The bytes of a high-rate delta notification (`_batched()`: text, thinking and tool
    output chunks) without pydantic or a dict per chunk, identical to the generic
    `_dumps(_notification(event))`.

    A delta's fields are `seq` and `delta`, which change with every chunk, and fields
    that stay the same for many chunks (sessionId, agentId, toolCallId, a message's
    id...). For each set of those constant values the generic serialisation is done
    once, with markers in place of `seq` and `delta`, and cut into three byte strings;
    a chunk is then `head + seq + mid + escaped delta + tail`. So every field of the
    class, present or future, is serialised by the generic path (order, aliases,
    omitted None values), and a field added to a delta class needs no change here:
    a per-message field (a message id) only adds one template per message. Anything the
    template cannot represent (a constant field that is not a string, a marker found in
    a constant value, `delta` before `seq`) goes the generic way."""

    MAX_TEMPLATES = 256
    """Templates kept (one per session × agent × message or tool call); then cleared."""

    def __init__(self) -> None:
        self._templates: dict[tuple[Any, ...], tuple[bytes, bytes, bytes] | None] = {}
        self._constant_fields: dict[type[EventParams], tuple[str, ...]] = {}

    def encode(self, event: EventParams) -> bytes:
        cls = type(event)
        names = self._constant_fields.get(cls)
        if names is None:
            names = self._constant_fields[cls] = _constant_fields(cls)
        if not names:  # not a text-only class: values equal as keys may dump apart (1, True)
            return _dumps(_notification(event))
        values = event.__dict__
        key = (cls, *[values[n] for n in names])
        try:
            template = self._templates[key]
        except KeyError:
            template = self._template(event, key)
        seq, delta = values["seq"], values["delta"]
        if template is None or type(seq) is not int or type(delta) is not str:
            return _dumps(_notification(event))
        head, mid, tail = template
        return b"".join((head, b"%d" % seq, mid, _escape(delta).encode("ascii"), tail))

    def _template(
        self, event: EventParams, key: tuple[Any, ...]
    ) -> tuple[bytes, bytes, bytes] | None:
        message = _notification(event)
        params = message["params"]
        template: tuple[bytes, bytes, bytes] | None = None
        if "seq" in params and "delta" in params:
            params["seq"], params["delta"] = _SEQ_MARK, _DELTA_MARK
            head, *rest = _dumps(message).split(_dumps(_SEQ_MARK))
            if len(rest) == 1:
                mid, *tail = rest[0].split(_dumps(_DELTA_MARK))
                if len(tail) == 1:
                    template = (head, mid, tail[0])
        if len(self._templates) >= self.MAX_TEMPLATES:
            self._templates.clear()
        self._templates[key] = template
        return template


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
    pair is the character it encodes.

    Except the request id: it is the client's key, not text, and is echoed as the same
    JSON string, code unit for code unit (`_dumps` writes a lone surrogate back as its
    `\\uXXXX` escape), and so is the id a cancel names (`$/cancelRequest` `id`, ACP's
    `$/cancel_request` `requestId`), which must find it. It never reaches a model, a
    history or a log line unescaped."""
    obj = json.loads(body.decode("utf-8"))
    if SURROGATE_ESCAPE.search(body) is None:
        return obj
    if not isinstance(obj, dict):
        return without_surrogates(obj)
    clean = without_surrogates(obj)
    if "id" in obj:
        clean["id"] = obj["id"]
    params = obj.get("params")
    if obj.get("method") in _CANCELS and isinstance(params, dict):
        for key in ("id", "requestId"):
            if key in params:
                clean["params"][key] = params[key]
    return clean


_CANCELS = frozenset({"$/cancelRequest", "$/cancel_request"})


def _parse_params(spec: MethodSpec, params: Any) -> Any:
    """Validate a request's params; `[]` is `{}` (Lua's JSON encoders write an empty
    table as `[]`), so a method whose fields are all optional accepts it."""
    from pydantic import ValidationError

    try:
        return spec.params.model_validate({} if params is None or params == [] else params)
    except ValidationError as exc:
        raise RpcError(
            ErrorCode.INVALID_PARAMS,
            f"invalid params for {spec.name}: {exc.error_count()} error(s)",
            [
                _capped_input(e)
                for e in json.loads(exc.json(include_url=False, include_context=False))
            ],
        ) from exc


_INITIALIZE_CAPABILITIES = {
    "permissions": "permissions",
    "askQuestion": "ask_question",
    "planExit": "plan_exit",
}


def _initialize_capabilities_plain(params: Any) -> dict[str, bool] | None:
    """`initialize`'s params checked without pydantic, for the common, plainly valid
    shapes only (every key its wire name, every value of its exact type, the supported
    version): the client's capabilities given, by field name. None for anything else,
    which `InitializeParams` then validates (and refuses with its usual -32602 data).
    Equal to what the model gives (tests/test_protocol.py)."""
    if params is None or params == []:
        params = {}
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientInfo",
        "capabilities",
    }:
        return None
    version = params.get("protocolVersion", PROTOCOL_VERSION)
    if type(version) is not int or version != PROTOCOL_VERSION:
        return None
    info = params.get("clientInfo")
    if info is not None and not (
        type(info) is dict
        and info.keys() <= {"name", "version"}
        and type(info.get("name")) is str
        and (info.get("version") is None or type(info["version"]) is str)
    ):
        return None
    caps = params.get("capabilities", {})
    if type(caps) is not dict or not caps.keys() <= _INITIALIZE_CAPABILITIES.keys():
        return None
    if any(type(value) is not bool for value in caps.values()):
        return None
    return {_INITIALIZE_CAPABILITIES[key]: value for key, value in caps.items()}


def initialize_result() -> dict[str, Any]:
    """`initialize`'s result on the wire, built without pydantic (see
    `_initialize_capabilities_plain`); equal to `InitializeResult(...).wire()`
    (tests/test_protocol.py)."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverInfo": {"name": "sema-rpc", "version": sema_rpc.__version__},
        "capabilities": {
            "methods": list(protocol_names.METHODS),
            "notifications": list(protocol_names.NOTIFICATIONS),
            "serverRequests": list(protocol_names.SERVER_REQUESTS),
            "promptDelivery": ["followUp", "steer"],
        },
    }


_ERROR_INPUT_CHARS = 500
"""The most of a refused value an error's `data` echoes back (an image's base64 can be
megabytes): longer values are replaced by their start and their size."""


def _capped_input(error: dict[str, Any]) -> dict[str, Any]:
    value = error.get("input")
    if value is None or isinstance(value, bool | int | float):
        return error
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > _ERROR_INPUT_CHARS:
        error["input"] = f"{text[:200]}… ({len(text):,} characters)"
    return error


_NOT_A_REQUEST = object()

_current_request: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "sema_rpc_request_id", default=None
)
"""The id of the request whose handler is running (each handler runs in its own context)."""

connection: contextvars.ContextVar[SemaServer | None] = contextvars.ContextVar(
    "sema_rpc_connection", default=None
)
"""The connection whose request handler is running (a listening server's host reads it:
the connection creating a session follows it from its first event)."""


class Host(Protocol):
    """What a connection of a listening server reaches the process's sessions through
    (`rpc/host.py`'s `SessionHost`)."""

    record_dir: Path | None

    @property
    def engine(self) -> SemaEngine: ...
    @property
    def started_engine(self) -> SemaEngine | None: ...
    def connect(self, conn: SemaServer) -> None: ...
    def disconnect(self, conn: SemaServer) -> None: ...
    def attach(self, conn: SemaServer, params: Any) -> dict[str, Any]: ...
    def detach(self, conn: SemaServer, session_id: str) -> dict[str, Any]: ...
    def created(self, conn: SemaServer, session_id: str) -> None: ...
    def forget_session(self, session_id: str) -> None: ...
    async def list_sessions(self, params: Any) -> Any: ...
    async def stop(self, grace_s: float = 5.0) -> None: ...
    def close_listeners(self) -> None: ...


class SemaServer:
    """One process, one client, many sessions."""

    def __init__(
        self,
        writer: FrameWriter,
        recorder: TranscriptRecorder | None = None,
        *,
        host: Host | None = None,
    ):
        self.host = host
        """A listening server's sessions, shared with its other connections (None: this
        server is its engine's only client)."""
        self.number = 0
        """The host's number for this connection (`connection N`)."""
        self.client_name: str | None = None
        """`initialize`'s `clientInfo.name`."""
        self.after_answer: list[Callable[[], None]] = []
        """Run right after the answer of the synchronous request being handled is
        written (`session/attach`'s replay), in the same step of the loop."""
        self.close_connection: Callable[[], None] | None = None
        """A socket connection: `exit` closes it (the process goes on)."""
        self.recorder = recorder
        if recorder is not None:
            writer.tap = recorder.record_out
        self.writer = writer
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        """Every method of the table, wrapped (`_wrap`); empty until `_load`."""
        self._batched: frozenset[str] = frozenset()
        self._incoming: dict[Any, asyncio.Task[Any]] = {}
        """The client's requests whose async handler runs, by id (`$/cancelRequest`)."""
        self._outgoing: dict[Any, asyncio.Future[Any]] = {}
        """Server→client requests awaiting the client's answer, by id."""
        self._capabilities: ClientCapabilities | dict[str, bool] = {}
        """What `initialize` declared: the model, or its fields when checked by hand."""
        self._engine: SemaEngine | None = None
        self._engine_methods: dict[str, bool] = {}
        self.record_dir: Path | None = None
        """`--record DIR`: handed to the engine when it is created."""
        self.shutting_down = False
        self.exit_requested = asyncio.Event()
        self.exit_code = 0
        self.after_first_session: Callable[[], None] | None = None
        """Called once, after the first `session/create` succeeded (cli: start-up ends)."""
        self.one_shot = False
        """`sema-rpc run`: one session, its prompt right behind `session/create`; handed
        to the engine (no first-turn warm-up: it would only compete with that prompt)."""
        self._request_ids = itertools.count(1)
        self._prompts: dict[Any, tuple[PromptCancel, asyncio.Future[Any]]] = {}
        """Open `session/prompt` requests by id, from the moment they are read, so a
        `$/cancelRequest` right behind one finds it before its task has started."""
        self._reading: Any = _NOT_A_REQUEST
        """The id of the request being read, once known (for an answer on a bug)."""
        self._deltas = DeltaEncoder()

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
        self._batched = _batched()

    @property
    def capabilities(self) -> ClientCapabilities:
        caps = self._capabilities
        if isinstance(caps, dict):
            from sema_rpc.protocol import ClientCapabilities

            fields: dict[str, Any] = caps
            caps = self._capabilities = ClientCapabilities.model_construct(**fields)
        return caps

    def _answer_plain_initialize(self, msg_id: Any, params: Any) -> bool:
        """Answer `initialize` without the protocol's models when its params are plainly
        valid (`_initialize_capabilities_plain`); False (nothing done) otherwise."""
        caps = _initialize_capabilities_plain(params)
        if caps is None:
            return False
        self._capabilities = caps
        info = params.get("clientInfo") if isinstance(params, dict) else None
        self.client_name = info.get("name") if isinstance(info, dict) else None
        self._send_result(msg_id, initialize_result())
        # The answer is written; the models load at the loop's next turn (or at once for a
        # message already read behind this one).
        asyncio.get_running_loop().call_soon(self._load)
        return True

    # ------------------------------------------------------------------ the engine, lazily

    @property
    def engine(self) -> SemaEngine:
        """The engine, imported and created on first use (not before `initialize`); a
        listening server's, shared by its connections."""
        if self.host is not None:
            return self.host.engine
        engine = self._engine
        if engine is None:
            from sema_rpc.engine.engine import SemaEngine

            engine = SemaEngine(self, client_answers_permissions=self.capabilities.permissions)
            from sema_rpc.record.recorder import session_record_dir

            engine.record_dir = self.record_dir
            engine.session_record_dirs = session_record_dir
            engine.warm_turns = not self.one_shot
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

    def _after_create(self, create: Callable[[Any], Any]) -> Callable[[Any], Any]:
        async def create_session(params: Any) -> Any:
            result = await create(params)
            if self.host is not None:
                self.host.created(self, result.session_id)
            hook, self.after_first_session = self.after_first_session, None
            if hook is not None:
                hook()
            return result

        return create_session

    # ------------------------------------------------------------------ dispatch

    def _wrap(self, spec: MethodSpec, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The one place where exceptions become JSON-RPC errors.

        Synchronous handlers stay synchronous, so they are answered before reading on
        (`session/interrupt` is answered at once, in order); async ones run as tasks.
        """
        from sema_rpc.protocol import WireModel

        def parse(params: Any) -> Any:
            if not spec.notification:
                return _parse_params(spec, params)
            try:
                return _parse_params(spec, params)
            except RpcError:  # a notification cannot be refused (nor answered)
                log.warning("%s: ignoring invalid params %r", spec.name, params)
                return spec.params()

        def translate(exc: Exception) -> RpcError:
            if isinstance(exc, DomainError):
                return to_rpc_error(exc)
            if isinstance(exc, RpcError):
                return exc
            log.error("%s failed", spec.name, exc_info=exc)
            return RpcError(
                ErrorCode.INTERNAL_ERROR,
                f"internal error in {spec.name}: {type(exc).__name__}: {exc}",
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

    def send_raw(
        self, message: dict[str, Any], *, batch: bool = False, session: str | None = None
    ) -> None:
        """`session`: the session the message belongs to (the recorder routes by it)."""
        self.writer.write(_dumps(message), batch=batch, session=session)

    def on_frame_error(self, message: str) -> None:
        log.warning("framing: %s", message)
        self.send_raw(_error_message(None, ErrorCode.INVALID_REQUEST, message))

    def on_body(self, body: bytes) -> None:
        """Check one message's envelope and dispatch it. Never raises: the reader
        must go on to the next message whatever this one was. A failure here is a bug:
        a request is answered -32603; a notification or a response never is."""
        self._reading = _NOT_A_REQUEST
        try:
            self._on_body(body)
        except Exception:
            log.exception("unexpected failure handling a message")
            if self._reading is not _NOT_A_REQUEST:
                self.send_raw(
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
            self.send_raw(
                _error_message(
                    None,
                    ErrorCode.PARSE_ERROR,
                    f"parse error: not valid UTF-8 (byte {exc.start}: {exc.reason})",
                )
            )
            return
        except (ValueError, RecursionError) as exc:  # not JSON; absurd nesting
            self.send_raw(_error_message(None, ErrorCode.PARSE_ERROR, f"parse error: {exc}"))
            return
        if not isinstance(obj, dict):
            what = "a batch (array)" if isinstance(obj, list) else f"a JSON {type(obj).__name__}"
            self.send_raw(
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
            self.send_raw(
                _error_message(
                    reply_id, ErrorCode.INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"'
                )
            )
            return
        if not _valid_id(msg_id):
            self.send_raw(
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
                self.send_raw(
                    _error_message(
                        reply_id, ErrorCode.INVALID_REQUEST, 'invalid request: missing "method"'
                    )
                )
            return
        if not isinstance(method, str):
            self.send_raw(
                _error_message(
                    reply_id,
                    ErrorCode.INVALID_REQUEST,
                    'invalid request: "method" must be a string',
                )
            )
            return
        params = obj.get("params")
        if not self._handlers:
            if (
                method == "initialize"
                and "id" in obj
                and not self.shutting_down
                and self._answer_plain_initialize(msg_id, params)
            ):
                return
            self._load()
        if "id" not in obj:  # a notification
            if method == "$/cancelRequest":
                self._on_cancel(params)
                return
            from sema_rpc.protocol import METHODS

            if method in METHODS and not METHODS[method].notification:
                log.warning(
                    "ignoring %s sent as a notification (no id): it needs an answer", method
                )
                return
            self._handle_notification(method, params)
            return
        if self.shutting_down and method != "exit":
            self.send_raw(
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
            # Open from now: a stop or a close read after it reaches it (lifecycle.py).
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            cancel = self.engine.accept_prompt(session_id)
        task = self._handle_request(msg_id, method, params)
        if cancel is not None and task is not None:
            self._prompts[msg_id] = (cancel, task)
            task.add_done_callback(lambda _t: self._forget_prompt(msg_id, cancel))
        elif cancel is not None:
            self._forget_prompt(msg_id, cancel)

    # ------------------------------------------------------------------ dispatch to handlers

    def _handle_request(self, msg_id: Any, method: str, params: Any) -> asyncio.Task[Any] | None:
        """Run the method's handler: a sync one is answered now; an async one runs as a
        task (returned), answered when it ends."""
        handler = self._handlers.get(method)
        if handler is None:
            log.warning("request %r: unknown method %r", msg_id, method)
            self.send_raw(
                _error_message(msg_id, ErrorCode.METHOD_NOT_FOUND, f"Method Not Found: {method}")
            )
            return None
        context = contextvars.copy_context()
        context.run(_current_request.set, msg_id)
        context.run(connection.set, self)
        if inspect.iscoroutinefunction(handler):
            task = asyncio.get_running_loop().create_task(handler(params), context=context)
            self._incoming[msg_id] = task
            task.add_done_callback(lambda done: self._answer_task(msg_id, done))
            return task
        try:
            result = context.run(handler, params)
        except RpcError as exc:
            self.after_answer.clear()
            self.send_raw(_error_message(msg_id, exc.code, exc.message, exc.data))
        else:
            self._send_result(msg_id, result)
            then, self.after_answer = self.after_answer, []
            for fn in then:
                fn()
        return None

    def _answer_task(self, msg_id: Any, task: asyncio.Task[Any]) -> None:
        if self._incoming.get(msg_id) is task:
            del self._incoming[msg_id]
        if task.cancelled():
            self.send_raw(
                _error_message(
                    msg_id, ErrorCode.REQUEST_CANCELLED, f'Request with id "{msg_id}" is canceled'
                )
            )
            return
        exc = task.exception()
        if exc is None:
            self._send_result(msg_id, task.result())
        elif isinstance(exc, RpcError):
            self.send_raw(_error_message(msg_id, exc.code, exc.message, exc.data))
        else:  # `_wrap` translates every Exception: this is a BaseException
            log.error("request %r failed", msg_id, exc_info=exc)
            self.send_raw(
                _error_message(
                    msg_id, ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}"
                )
            )

    def _send_result(self, msg_id: Any, result: Any) -> None:
        try:
            body = _dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except (TypeError, ValueError) as exc:
            log.exception("could not serialise an outgoing message")
            body = _dumps(
                _error_message(
                    msg_id,
                    ErrorCode.INTERNAL_ERROR,
                    f"internal error: result not serialisable: {exc}",
                )
            )
        self.writer.write(body)

    def _handle_notification(self, method: str, params: Any) -> None:
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

    def _params_valid(self, method: str, params: Any) -> bool:
        from sema_rpc.protocol import METHODS

        try:
            _parse_params(METHODS[method], params)
        except RpcError:
            return False
        return True

    def _forget_prompt(self, msg_id: Any, cancel: PromptCancel) -> None:
        """The prompt is answered (this runs after `_answer_task` wrote it)."""
        from sema_rpc.engine.lifecycle import answered

        answered(cancel)
        entry = self._prompts.get(msg_id)
        if entry is not None and entry[0] is cancel:
            del self._prompts[msg_id]

    def _on_response(self, obj: dict[str, Any]) -> None:
        future = self._outgoing.pop(obj["id"], None)
        if future is None or future.done():
            log.warning("answer to an unknown request id %r", obj["id"])
            return
        error = obj.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": ErrorCode.INTERNAL_ERROR, "message": str(error)}
            code = error.get("code")
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else ErrorCode.INTERNAL_ERROR,
                    str(error.get("message", "")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(obj.get("result"))

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
        task = self._incoming.get(target)
        if task is None:
            log.warning("cancel of an unknown (or answered) request id %r", target)
            return
        task.cancel()  # answered -32800 when it ends

    # ------------------------------------------------------------------ ClientBridge

    def notify(self, event: EventParams) -> None:
        if event.event in self._batched:
            body = self._deltas.encode(event)
            self.writer.write(body, batch=True, session=event.session_id)
            return
        self.send_raw(_notification(event), session=event.session_id)

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        from pydantic import ValidationError

        from sema_rpc.protocol import SERVER_REQUESTS

        spec = SERVER_REQUESTS[event.event]
        if not getattr(self.capabilities, _snake(spec.capability), False) or self.writer.closed:
            return None
        msg_id = f"sema-{next(self._request_ids)}"
        # `requestId` repeats the id inside params: a client library that hides ids from
        # its request handler (Neovim's) still matches the `$/cancelRequest {id}` below.
        params = {**event.wire(), "requestId": msg_id}
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        self.send_raw(
            {"jsonrpc": "2.0", "id": msg_id, "method": event.event, "params": params},
            session=event.session_id,
        )
        try:
            raw = await future
        except asyncio.CancelledError:
            self._outgoing.pop(msg_id, None)
            self.send_raw(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}},
                session=event.session_id,
            )
            raise
        except RpcError as exc:
            log.warning("client answered %s with an error: %s", event.event, exc)
            return None
        try:
            return result_type.model_validate(raw)
        except ValidationError as exc:
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
        if self._engine is not None:
            self._engine.client_answers_permissions = params.capabilities.permissions
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
        if self.host is not None:
            await self.host.stop(grace_s)
        elif self._engine is not None:
            await self._engine.shutdown(grace_s)
        self.cancel_prompts()
        current = asyncio.current_task()
        in_flight = [  # the client's requests being handled
            task for task in self._incoming.values() if task is not current and not task.done()
        ]
        if in_flight:
            await asyncio.wait(in_flight, timeout=max(0.1, deadline - loop.time()))

    def cancel_prompts(self) -> list[asyncio.Future[Any]]:
        """Cancel every open prompt of this connection (each answers `interrupted`); their
        tasks."""
        for cancel, _task in list(self._prompts.values()):
            cancel.cancel()  # not started yet (or no engine): answers at once
        return [task for _cancel, task in self._prompts.values()]

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

    def expect_answer(self, msg_id: str) -> asyncio.Future[Any]:
        """A request `msg_id` is sent to this client: the future its answer resolves."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        return future

    def forget_request(self, msg_id: str) -> None:
        self._outgoing.pop(msg_id, None)

    def cancel_on_wire(self, msg_id: str, session_id: str) -> None:
        self.send_raw(
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}},
            session=session_id,
        )

    def _need_host(self, method: str) -> Host:
        if self.host is None:
            raise RpcError(
                ErrorCode.INVALID_REQUEST,
                f"{method}: this server shares no sessions (start it with --listen, or run "
                "`sema-rpc serve`)",
            )
        return self.host

    def _attach(self, params: Any) -> Any:
        return self._need_host("session/attach").attach(self, params)

    def _detach(self, params: Any) -> Any:
        return self._need_host("session/detach").detach(self, params.session_id)

    async def _list_sessions(self, params: Any) -> Any:
        if self.host is not None:
            return await self.host.list_sessions(params)
        return await self.engine.list_sessions(params)

    async def _dispose(self, params: Any) -> Any:
        result = await self.engine.dispose(params)
        if self.host is not None:
            self.host.forget_session(params.session_id)
        return result

    async def _prompt(self, params: Any) -> Any:
        prompt = self._prompts.get(_current_request.get())
        return await self.engine.prompt(params, prompt[0] if prompt is not None else None)

    def _interrupt(self, params: Any) -> Any:
        from sema_rpc.protocol import SessionInterruptResult

        return SessionInterruptResult(interrupted=self.engine.interrupt(params.session_id))


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
) -> int:
    """Serve one client until `exit`, end of input or `stop` (a stop signal). Returns the
    process exit code.

    `after_first_session`: called once, after the first `session/create` succeeded.
    `one_shot`: the client sends one prompt right behind `session/create` and leaves
    (`sema-rpc run`): no first-turn warm-up (`SemaServer.one_shot`).
    `host`: a listening server's sessions, this client one of its connections (its
    listeners are open); at the end every connection's turns stop with this one's.

    Returns after an orderly end: running turns interrupted and answered, history
    synced, providers' HTTP clients closed, every answer written, the recording closed."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=jsonl)
    await writer.start(loop)
    from sema_rpc.record.recorder import TranscriptRecorder

    # Always there: a session may ask to be recorded (session/create `recordDir`).
    recorder = TranscriptRecorder(Path(record_dir) if record_dir is not None else None)
    server = SemaServer(writer, recorder, host=host)
    server.record_dir = recorder.run_dir
    if host is not None:
        host.record_dir = recorder.run_dir
        host.connect(server)
    server.after_first_session = after_first_session
    server.one_shot = one_shot
    decoder_cls = JsonlDecoder if jsonl else ContentLengthDecoder
    decoder = decoder_cls(server.on_body, server.on_frame_error)
    reading = asyncio.ensure_future(read_stream(stdin, decoder.feed, loop))
    exiting = asyncio.ensure_future(server.exit_requested.wait())
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    await asyncio.wait({reading, exiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        decoder.eof()
        log.info("end of input: shutting down")
    elif stopping.done():
        log.info("stop signal: shutting down")
    exiting.cancel()
    reading.cancel()
    stopping.cancel()
    server.shutting_down = True
    await server.stop_turns()
    if host is not None:
        host.close_listeners()
    registry = sys.modules.get("sema_rpc.providers.registry")
    if registry is not None:  # not imported: no provider was ever made
        await registry.aclose_all()
    await writer.drain()
    recorder.close()
    return server.exit_code
