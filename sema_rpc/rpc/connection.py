"""One JSON-RPC peer: the connection both dialects (native, ACP) serve a client over.

A `Connection` serves one client over one byte stream, whatever the framing
(Content-Length or one JSON per line: `feed` takes bytes as they arrive, `writer` frames
what goes out), and owns everything JSON-RPC 2.0 asks of a peer:

- reading: each message parsed once (`loads`), its envelope checked; malformed input gets
  a JSON-RPC error and the next message is read whatever this one was (a failure while
  reading a request is answered -32603);
- the client's requests: handed to the dialect's `Front`, which answers at once (a
  plain result, answered before the next message is read) or with an awaitable (run as
  a task, by id, cancellable); a duplicate of an id still being handled is refused;
- cancellation both ways: the dialect's cancel notification (`$/cancelRequest {id}`
  natively, `$/cancel_request {requestId}` in ACP) cancels a request's task (answered
  -32800) unless the front takes it (a prompt answers its own way); a server→client
  request the engine stops waiting for is cancelled on the wire the same way;
- server→client requests (`request`): ids, a future per request, the client's answer
  or error;
- errors: every exception a handler raises becomes an answer in one place (`_fail`,
  through rpc/errors.py's table for the dialect);
- writing: compact ASCII JSON through the `FrameWriter` (high-rate notifications batched
  many per write, see framing.py).

It knows no method, no engine and no pydantic: it is on the path to `initialize`. A
dialect's front holds the per-client state (capabilities, open prompts); the engine and
its sessions belong to the process (rpc/host.py), not to a connection.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from sema_rpc.core.text import SURROGATE_ESCAPE, without_surrogates
from sema_rpc.protocol_core import RpcError
from sema_rpc.rpc import errors
from sema_rpc.rpc.frames import dumps as dumps
from sema_rpc.rpc.framing import (
    ContentLengthDecoder,
    FrameWriter,
    JsonlDecoder,
    max_message_bytes,
)

log = logging.getLogger(__name__)


def error_message(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def valid_id(value: Any) -> bool:
    return (isinstance(value, str | int) and not isinstance(value, bool)) or value is None


_CANCELS = frozenset({"$/cancelRequest", "$/cancel_request"})


def loads(body: bytes) -> Any:
    """Parse one incoming message: the one place text enters the process.

    The bytes must be UTF-8 (an encoded surrogate such as `ED A0 80` is not: ValueError,
    answered -32700). A JSON escape of a lone surrogate (`"\\ud800"`, what JavaScript's
    `JSON.stringify` gives for a string cut inside an emoji) is valid JSON but not text:
    it becomes U+FFFD, so nothing after the reader ever holds a surrogate. An escaped
    pair is the character it encodes.

    Except the request id: it is the client's key, not text, and is echoed as the same
    JSON string, code unit for code unit (`dumps` writes a lone surrogate back as its
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


class Front(Protocol):
    """A dialect, as the connection sees it: one per connection."""

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        """A request's answer: its result, or an awaitable of it (run as a task), or an
        exception (an RpcError, a domain error, a bug: see rpc/errors.py)."""
        ...

    def on_notification(self, method: str, params: Any) -> None:
        """A notification other than the cancel one. Never answered."""
        ...

    def on_cancel(self, target: Any) -> bool:
        """The client cancels request `target`: True when the front took it (a prompt,
        which answers its own way); False lets the connection cancel its task."""
        ...


_NOT_A_REQUEST = object()

_current_request: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "sema_rpc_request_id", default=None
)
"""The id of the request whose handler runs (each handler runs in its own context)."""


def current_request() -> Any:
    """The id of the client's request being handled (None outside a handler)."""
    return _current_request.get()


class Connection:
    """One client over one byte stream (see the module docstring)."""

    def __init__(
        self,
        writer: FrameWriter,
        *,
        jsonl: bool,
        codes: errors.Codes = errors.NATIVE,
        cancel: tuple[str, str] = ("$/cancelRequest", "id"),
        id_prefix: str | None = None,
        open_while_stopping: frozenset[str] = frozenset(),
    ):
        self.writer = writer
        self.front: Front | None = None
        """Set by the dialect before the first message is read."""
        self.codes = codes
        self.cancel_method, self.cancel_key = cancel
        self._id_prefix = id_prefix
        self._open_while_stopping = open_while_stopping
        decoder = (JsonlDecoder if jsonl else ContentLengthDecoder)(
            self.on_body, self.on_frame_error, max_message_bytes()
        )
        self.feed: Callable[[bytes], None] = decoder.feed
        """Bytes in, as they arrive (any split)."""
        self.eof: Callable[[], None] = decoder.eof
        """The end of the input (a last unterminated message is still read)."""
        self.tap_in: Callable[[bytes], None] | None = None
        """Sees every incoming message body (the recorder)."""
        self.shutting_down = False
        """No new request is served (but those in `open_while_stopping`)."""
        self._incoming: dict[Any, asyncio.Task[Any]] = {}
        """The client's requests whose handler runs as a task, by id."""
        self._after: dict[Any, list[Callable[[], None]]] = {}
        """What to run once a request is answered (`after_answer`), by id."""
        self._outgoing: dict[Any, asyncio.Future[Any]] = {}
        """Server→client requests awaiting the client's answer, by id."""
        self._ids = itertools.count(1)
        self._reading: Any = _NOT_A_REQUEST
        """The id of the request being read, once known (for an answer on a bug)."""

    # ------------------------------------------------------------------ writing

    def send(
        self, message: dict[str, Any], *, batch: bool = False, session: str | None = None
    ) -> None:
        """Write one message. `batch`: it may share a write with the messages after it
        (framing.py); `session`: the session it belongs to (the recorder routes by it)."""
        self.writer.write(dumps(message), batch=batch, session=session)

    def answer(self, msg_id: Any, result: Any) -> None:
        try:
            body = dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except (TypeError, ValueError) as exc:
            log.exception("could not serialise an outgoing message")
            body = dumps(
                error_message(
                    msg_id, errors.INTERNAL_ERROR, f"internal error: result not serialisable: {exc}"
                )
            )
        self.writer.write(body)
        self._answered(msg_id)

    def refuse(self, msg_id: Any, error: RpcError) -> None:
        self.send(error_message(msg_id, error.code, error.message, error.data))
        self._answered(msg_id)

    # ------------------------------------------------------------------ reading

    def on_frame_error(self, message: str) -> None:
        log.warning("framing: %s", message)
        self.send(error_message(None, errors.INVALID_REQUEST, message))

    def on_body(self, body: bytes) -> None:
        """One message in. Never raises: the reader goes on to the next message
        whatever this one was. A failure here is a bug: a request is answered -32603; a
        notification or a response never is."""
        self._reading = _NOT_A_REQUEST
        try:
            self._on_body(body)
        except Exception:
            log.exception("unexpected failure handling a message")
            if self._reading is not _NOT_A_REQUEST:
                self.send(
                    error_message(
                        self._reading, errors.INTERNAL_ERROR, "internal error reading a message"
                    )
                )

    def _invalid(self, msg_id: Any, why: str) -> None:
        self.send(error_message(msg_id, errors.INVALID_REQUEST, f"invalid request: {why}"))

    def _on_body(self, body: bytes) -> None:
        if self.tap_in is not None:
            self.tap_in(body)
        try:
            obj = loads(body)
        except UnicodeDecodeError as exc:
            why = f"parse error: not valid UTF-8 (byte {exc.start}: {exc.reason})"
            self.send(error_message(None, errors.PARSE_ERROR, why))
            return
        except (ValueError, RecursionError) as exc:  # not JSON; absurd nesting
            self.send(error_message(None, errors.PARSE_ERROR, f"parse error: {exc}"))
            return
        if not isinstance(obj, dict):
            what = "a batch (array)" if isinstance(obj, list) else f"a JSON {type(obj).__name__}"
            self._invalid(None, f"expected a JSON object, got {what}; batches are not supported")
            return
        msg_id = obj.get("id")
        reply_id = msg_id if valid_id(msg_id) else None
        if obj.get("jsonrpc") != "2.0":
            self._invalid(reply_id, '"jsonrpc" must be "2.0"')
            return
        if not valid_id(msg_id):
            self._invalid(None, '"id" must be a string or an integer')
            return
        method = obj.get("method")
        if method is None:
            if "id" in obj and ("result" in obj or "error" in obj):
                self._on_response(obj)
            else:
                self._invalid(reply_id, 'missing "method"')
            return
        if not isinstance(method, str):
            self._invalid(reply_id, '"method" must be a string')
            return
        params = obj.get("params")
        assert self.front is not None, "a connection reads for its front"
        if "id" not in obj:  # a notification
            if method == self.cancel_method:
                self._on_cancel(params)
            else:
                self.front.on_notification(method, params)
            return
        if self.shutting_down and method not in self._open_while_stopping:
            self._invalid(msg_id, "the server is shutting down")
            return
        if msg_id in self._incoming:
            self._invalid(msg_id, f"a request with id {json.dumps(msg_id)} is still being handled")
            return
        self._reading = msg_id
        self._on_request(msg_id, method, params)

    # ------------------------------------------------------------------ the client's requests

    def _on_request(self, msg_id: Any, method: str, params: Any) -> None:
        assert self.front is not None
        context = contextvars.copy_context()
        context.run(_current_request.set, msg_id)
        try:
            result = context.run(self.front.on_request, msg_id, method, params)
        except Exception as exc:
            self.refuse(msg_id, errors.answer_for(exc, method, self.codes))
            return
        if not inspect.isawaitable(result):
            self.answer(msg_id, result)
            return
        coro = result if inspect.iscoroutine(result) else _awaited(result)
        task = asyncio.get_running_loop().create_task(coro, context=context)
        self._incoming[msg_id] = task
        task.add_done_callback(lambda done: self._answer_task(msg_id, method, done))

    def _answer_task(self, msg_id: Any, method: str, task: asyncio.Task[Any]) -> None:
        if self._incoming.get(msg_id) is task:
            del self._incoming[msg_id]
        if task.cancelled():
            cancelled = f'Request with id "{msg_id}" is canceled'
            self.refuse(msg_id, RpcError(errors.REQUEST_CANCELLED, cancelled))
            return
        exc = task.exception()
        if exc is None:
            self.answer(msg_id, task.result())
        else:
            self.refuse(msg_id, errors.answer_for(exc, method, self.codes))

    def after_answer(self, then: Callable[[], None], msg_id: Any = None) -> None:
        """Run `then` right after the answer to request `msg_id` (default: the one being
        handled) is written, whatever the answer."""
        key = current_request() if msg_id is None else msg_id
        self._after.setdefault(key, []).append(then)

    def _answered(self, msg_id: Any) -> None:
        for then in self._after.pop(msg_id, ()):
            try:
                then()
            except Exception:
                log.exception("failure after answering request %r", msg_id)

    def in_flight(self) -> list[asyncio.Task[Any]]:
        """The client's requests being handled, but the caller's own."""
        current = asyncio.current_task()
        return [t for t in self._incoming.values() if t is not current and not t.done()]

    def _on_cancel(self, params: Any) -> None:
        """The cancel notification: whatever its params, it is never answered."""
        target = params.get(self.cancel_key) if isinstance(params, dict) else None
        if not isinstance(target, str | int) or isinstance(target, bool):
            log.warning(
                "ignoring %s without a string or integer %s: %r",
                self.cancel_method,
                self.cancel_key,
                params,
            )
            return
        assert self.front is not None
        if self.front.on_cancel(target):
            return
        task = self._incoming.get(target)
        if task is None:
            log.warning("cancel of an unknown (or answered) request id %r", target)
            return
        task.cancel()  # answered -32800 when it ends

    # ------------------------------------------------------------------ requests to the client

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        session: str | None = None,
        id_in_params: str | None = None,
    ) -> Any:
        """A request to the client: its result, or RpcError (its error answer; -32603
        when the client is gone). Cancelling the caller cancels it on the wire.
        `id_in_params`: a params key repeating the request's id."""
        if self.writer.closed:
            raise RpcError(errors.INTERNAL_ERROR, "the client is gone")
        n = next(self._ids)
        msg_id: Any = n if self._id_prefix is None else f"{self._id_prefix}{n}"
        if id_in_params is not None:
            params = {**params, id_in_params: msg_id}
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        self.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}, session=session
        )
        try:
            return await future
        except asyncio.CancelledError:
            self._outgoing.pop(msg_id, None)
            self.send(
                {
                    "jsonrpc": "2.0",
                    "method": self.cancel_method,
                    "params": {self.cancel_key: msg_id},
                },
                session=session,
            )
            raise

    def expect(self, msg_id: Any) -> asyncio.Future[Any]:
        """A request `msg_id` written to the client by other means (one request sent to
        several connections, shared.py): the future its answer resolves."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        return future

    def forget(self, msg_id: Any) -> None:
        """No answer to request `msg_id` is awaited any more."""
        self._outgoing.pop(msg_id, None)

    def cancel_on_wire(self, msg_id: Any, session: str | None = None) -> None:
        """Tell the client request `msg_id` is withdrawn (the dialect's cancel)."""
        self.send(
            {"jsonrpc": "2.0", "method": self.cancel_method, "params": {self.cancel_key: msg_id}},
            session=session,
        )

    def _on_response(self, obj: dict[str, Any]) -> None:
        future = self._outgoing.pop(obj["id"], None)
        if future is None or future.done():
            log.warning("answer to an unknown (or cancelled) request id %r", obj["id"])
            return
        error = obj.get("error")
        if error is None:
            future.set_result(obj.get("result"))
            return
        if not isinstance(error, dict):
            error = {"code": errors.INTERNAL_ERROR, "message": str(error)}
        code = error.get("code")
        future.set_exception(
            RpcError(
                code if isinstance(code, int) else errors.INTERNAL_ERROR,
                str(error.get("message", "")),
                error.get("data"),
            )
        )


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
