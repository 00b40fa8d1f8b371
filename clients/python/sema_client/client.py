"""`SemaClient`: spawn `sema-rpc`, call it with typed methods, stream its notifications.

One background task reads the server's stdout and routes every message:

- a response resolves the pending `request()` with the same id;
- a notification goes to every `notifications()` iterator (each has its own queue, so
  each sees every notification from the moment it was created), then to every
  `on_notification()` callback;
- a server→client request runs its handler (`on_permission()`, `on_request()`) in its own
  task and is answered with the handler's result; without a handler it is answered with
  -32601 at once, so the server never waits; a `$/cancelRequest` from the server cancels
  the handler task (and no answer is sent: the server stopped waiting).

Another task drains stderr, keeping the last `stderr_limit` bytes for error messages, so
the server can never block on a full pipe.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import inspect
import itertools
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from sema_client._methods import Methods
from sema_client._models import Dumpable, is_model, is_validation_error, to_camel
from sema_client.errors import SemaConnectionError, SemaRpcError
from sema_client.events import Event, parse_notification
from sema_client.framing import (
    STREAM_LIMIT,
    FramingError,
    MessageReader,
    encode_message,
    frame_body,
)
from sema_rpc.protocol import PROTOCOL_VERSION, SERVER_REQUESTS, ErrorCode

# The models are imported where they are used: a model's module is loaded on first use
# (sema_rpc/protocol.py), so a client that calls no rarer method creates none of theirs.
if TYPE_CHECKING:
    from sema_rpc.protocol import (
        ClientCapabilities,
        ClientInfo,
        ImageInputBlock,
        InitializeResult,
        ModelListResult,
        PermissionRequestParams,
        PermissionResult,
        SessionForkResult,
        SessionMessagesResult,
        SessionPromptResult,
        SessionReadyParams,
        SessionRewindResult,
        SessionSetModelResult,
        TranscriptMessage,
    )

__all__ = [
    "DEFERRED",
    "Decision",
    "NotificationStream",
    "PermissionDecision",
    "SemaClient",
    "image_block",
    "permission_result",
]

log = logging.getLogger("sema_client")

_DECODER = json.JSONDecoder()
_SCAN = _DECODER.scan_once


def _loads(body: bytes) -> Any:
    """`json.loads(body)` for a message body, without its per-call set-up (a long answer
    is thousands of messages): the scanner straight away when the body is exactly one
    JSON value, else `decode` (whitespace around it, or its ValueError)."""
    text = body.decode("utf-8")
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        end = -1
    if end != len(text):
        return _DECODER.decode(text)
    return value


PERMISSION_METHOD = "tool:permission:request"
CANCEL_METHOD = "$/cancelRequest"

Decision: TypeAlias = Literal["allow_once", "allow_always", "reject"]
PermissionDecision: TypeAlias = "str | PermissionResult | Mapping[str, Any] | bool | None"
"""What a permission callback returns: a `Decision` string, a `PermissionResult` or a dict
`{"decision", "feedback"?}` (a reject with feedback lets the turn go on), True/False for
allow_once/reject, or None for reject."""

PermissionCallback: TypeAlias = Callable[
    ["PermissionRequestParams"], "PermissionDecision | Awaitable[PermissionDecision]"
]
RequestHandler: TypeAlias = Callable[[Any], Any]
"""`handler(params)` → result (a dict, a pydantic model, …), sync or async. Raise
`SemaRpcError` to answer with a specific JSON-RPC error."""
NotificationCallback: TypeAlias = Callable[[Event], Any]
MessageCallback: TypeAlias = Callable[[dict[str, Any], bytes], Any]

_END = object()


class _Deferred:
    def __repr__(self) -> str:
        return "DEFERRED"


DEFERRED: Any = _Deferred()
"""A request handler's result meaning "not answered here": the caller answers the server
request itself later (`send_message({"jsonrpc": "2.0", "id": params["requestId"], ...})`,
every server request repeats its id as `requestId`), or not at all."""


def _jsonable(value: Any) -> Any:
    if is_model(value):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _camel_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {(to_camel(k) if "_" in k else k): _jsonable(v) for k, v in params.items()}


def permission_result(decision: PermissionDecision) -> PermissionResult:
    """Normalise what a permission callback returned."""
    from sema_rpc.protocol import PermissionResult

    if decision is None or decision is False:
        return PermissionResult(decision="reject")
    if decision is True:
        return PermissionResult(decision="allow_once")
    if isinstance(decision, PermissionResult):
        return decision
    if isinstance(decision, str):
        return PermissionResult.model_validate({"decision": decision})
    if isinstance(decision, Mapping):
        return PermissionResult.model_validate(dict(decision))
    raise TypeError(f"a permission callback returned {type(decision).__name__}: {decision!r}")


class NotificationStream:
    """An async iterator over notifications, subscribed from the moment it is created.

    Ends (StopAsyncIteration) when the connection closes or `close()` is called. Use
    `async with client.notifications() as events:` to unsubscribe deterministically.
    """

    def __init__(self, client: SemaClient, session_id: str | None):
        self._client = client
        self.session_id = session_id
        # A deque and the waiting readers' futures rather than an asyncio.Queue: the
        # same order and wake-ups without its per-item bookkeeping (thousands a second).
        self._items: collections.deque[Any] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._done = False
        if client.is_connected:
            client._subscribers.append(self)
        else:
            self._items.append(_END)

    def _put(self, item: Any) -> None:
        self._items.append(item)
        if self._waiters:
            self._put_wakeup()

    def _put_wakeup(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break

    def _offer(self, event: Event) -> None:
        if self.session_id is None or event.session_id == self.session_id:
            self._put(event)

    def _end(self) -> None:
        self._put(_END)

    def __aiter__(self) -> NotificationStream:
        return self

    async def __anext__(self) -> Event:
        if self._done:
            raise StopAsyncIteration
        items = self._items
        while not items:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                # cancelled (a timeout): a wake-up meant for it goes to the next reader
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                if items and not waiter.cancelled():
                    self._put_wakeup()
                raise
        item = items.popleft()
        if items and self._waiters:
            self._put_wakeup()
        if item is _END:
            self.close()
            raise StopAsyncIteration
        return item

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; TimeoutError after `timeout` s; StopAsyncIteration at the end."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    def pending(self) -> int:
        """Events received but not consumed yet."""
        return len(self._items)

    def close(self) -> None:
        """Unsubscribe. Events already queued are dropped."""
        self._done = True
        with contextlib.suppress(ValueError):
            self._client._subscribers.remove(self)

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> NotificationStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class SemaClient:
    """A connection to one `sema-rpc` server. Create it with `await SemaClient.spawn()`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        jsonl: bool = True,
        process: asyncio.subprocess.Process | None = None,
        stderr_limit: int = 64 * 1024,
        stderr_callback: Callable[[bytes], Any] | None = None,
    ):
        """Wrap an already-open connection. `spawn()` is the usual way in; this
        constructor serves other transports (a socket, a test pipe). Call `start()`."""
        self.jsonl = jsonl
        self.process = process
        self._reader = MessageReader(reader, jsonl=jsonl)
        self._writer = writer
        self._stderr_limit = stderr_limit
        self._stderr_callback = stderr_callback
        self._stderr = bytearray()
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._incoming: dict[Any, asyncio.Task[None]] = {}
        self._handlers: dict[str, RequestHandler] = {}
        self._subscribers: list[NotificationStream] = []
        self._callbacks: list[NotificationCallback] = []
        self._taps: list[MessageCallback] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._read_task: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._disconnected = asyncio.Event()
        self._lost_reason: str | None = None
        self._close_task: asyncio.Future[int | None] | None = None
        self._closing = False
        self.initialize_result: InitializeResult | None = None
        self.rpc = Methods(self)
        """Every protocol method as a typed call (generated from the protocol)."""

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def spawn(
        cls,
        argv: Iterable[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        jsonl: bool = True,
        new_session: bool = True,
        stderr_limit: int = 64 * 1024,
        stderr_callback: Callable[[bytes], Any] | None = None,
    ) -> SemaClient:
        """Start a server and connect to it over its stdin/stdout.

        argv: the command (default `python -m sema_rpc`, plus `--jsonl` when `jsonl`).
            With an explicit argv, `jsonl` must match the framing the command speaks.
        env: variables added to (and overriding) this process's environment.
        new_session: run the server in its own session/process group, so a Ctrl-C in the
            terminal reaches only this process, which can then interrupt the turn (the
            server still ends when its stdin closes).
        stderr_callback: called with each chunk the server writes to stderr (e.g. to
            forward its logs); the last `stderr_limit` bytes are kept in `stderr_tail`.
        """
        args = (
            list(argv)
            if argv is not None
            else [sys.executable, "-m", "sema_rpc", *(["--jsonl"] if jsonl else [])]
        )
        kwargs: dict[str, Any] = {}
        if new_session:
            if sys.platform == "win32":
                import subprocess

                kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
            else:
                kwargs["start_new_session"] = True
        process = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env} if env is not None else None,
            cwd=cwd,
            limit=STREAM_LIMIT,
            **kwargs,
        )
        assert process.stdout is not None and process.stdin is not None
        client = cls(
            process.stdout,
            process.stdin,
            jsonl=jsonl,
            process=process,
            stderr_limit=stderr_limit,
            stderr_callback=stderr_callback,
        )
        client.start()
        return client

    def start(self) -> SemaClient:
        """Start reading (spawn() does this)."""
        if self._read_task is None:
            self._read_task = asyncio.create_task(self._read_loop(), name="sema-client-read")
            if self.process is not None and self.process.stderr is not None:
                self._stderr_task = asyncio.create_task(
                    self._drain_stderr(self.process.stderr), name="sema-client-stderr"
                )
        return self

    async def __aenter__(self) -> SemaClient:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def is_connected(self) -> bool:
        return not self._disconnected.is_set()

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    @property
    def stderr_tail(self) -> str:
        """The last bytes the server wrote to stderr, decoded."""
        return self._stderr.decode("utf-8", "replace")

    async def wait_closed(self) -> None:
        """Wait until the connection is gone (the server closed its stdout)."""
        await self._disconnected.wait()

    async def close(self, timeout: float = 10.0) -> int | None:
        """Close the server's stdin (an orderly shutdown: running turns are interrupted and
        answered) and wait for it to exit; kill it after `timeout` s. Returns the exit
        code (None for a connection without a process). Safe to call more than once."""
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close(timeout))
        return await asyncio.shield(self._close_task)

    async def _close(self, timeout: float) -> int | None:
        self._closing = True
        with contextlib.suppress(Exception):
            if not self._writer.is_closing():
                self._writer.close()
        proc = self.process
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                log.warning("sema-rpc did not exit within %ss; killing it", timeout)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if self._read_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._read_task), 2)
            except TimeoutError:
                self._read_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._read_task
        self._connection_lost("the client closed the connection")
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 2)
            self._stderr_task.cancel()
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        return proc.returncode if proc is not None else None

    # ------------------------------------------------------------------ reading

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._stderr += chunk
            if len(self._stderr) > self._stderr_limit:
                del self._stderr[: len(self._stderr) - self._stderr_limit]
            if self._stderr_callback is not None:
                try:
                    self._stderr_callback(chunk)
                except Exception:
                    log.exception("stderr callback failed")

    async def _read_loop(self) -> None:
        reason = "the server closed its stdout"
        try:
            while bodies := await self._reader.read_many():
                for body in bodies:
                    try:
                        self._on_body(body)
                    except Exception:  # one odd message must not end the connection
                        log.exception("could not handle a message from the server: %r", body[:200])
        except FramingError as exc:
            reason = f"unreadable output from the server: {exc}"
            log.error("%s", reason)
        except (ConnectionError, OSError) as exc:
            reason = f"reading from the server failed: {exc}"
        if self.process is not None:  # the exit code and last words make a better message
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 1)
            if self._stderr_task is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        self._connection_lost("the client closed the connection" if self._closing else reason)

    def _connection_lost(self, reason: str) -> None:
        if self._disconnected.is_set():
            return
        self._lost_reason = reason
        self._disconnected.set()
        error = self._connection_error()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        for task in self._incoming.values():
            task.cancel()
        for stream in list(self._subscribers):
            stream._end()
        self._subscribers.clear()

    def _connection_error(self) -> SemaConnectionError:
        reason = self._lost_reason or "not connected"
        code = self.returncode
        if code is not None:
            reason += f" (exit code {code})"
        return SemaConnectionError(reason, returncode=code, stderr=self.stderr_tail[-4000:])

    def _on_body(self, body: bytes) -> None:
        try:
            message = _loads(body)
        except ValueError as exc:
            log.warning("ignoring unparsable output from the server (%s): %r", exc, body[:200])
            return
        if not isinstance(message, dict):
            log.warning("ignoring a non-object message from the server: %r", body[:200])
            return
        for tap in list(self._taps):
            self._call_safely(tap, message, body)
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._on_server_request(message["id"], method, message.get("params"))
            else:
                self._on_notification(method, message.get("params"))
        elif "id" in message:
            self._on_response(message)
        else:
            log.warning("ignoring a message without method or id: %r", body[:200])

    def _on_response(self, message: dict[str, Any]) -> None:
        future = self._pending.pop(message["id"], None)
        if future is None:
            if "error" in message:
                log.warning("the server reported an error: %s", message["error"])
            return
        if not future.done():
            future.set_result(message)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == CANCEL_METHOD:
            target = params.get("id") if isinstance(params, dict) else None
            task = self._incoming.get(target)
            if task is not None:
                task.cancel()
            return
        if method.startswith("$/"):
            return  # protocol-level notifications are not events
        if not self._subscribers and not self._callbacks:
            return  # nobody to give a typed event: not validated (taps saw the message)
        event = parse_notification(method, params)
        for stream in list(self._subscribers):
            stream._offer(event)
        for callback in list(self._callbacks):
            self._call_safely(callback, event)

    def _call_safely(self, callback: Callable[..., Any], *args: Any) -> None:
        try:
            result = callback(*args)
        except Exception:
            log.exception("callback %r failed", callback)
            return
        if inspect.isawaitable(result):
            self._spawn_background(_await_logged(result, callback))

    def _spawn_background(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ------------------------------------------------------------------ server → client requests

    def _on_server_request(self, msg_id: Any, method: str, params: Any) -> None:
        handler = self._handlers.get(method)
        if handler is None:
            log.info("no handler for server request %s: answering -32601", method)
            self._write_nowait(
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "error": {
                        "code": ErrorCode.METHOD_NOT_FOUND,
                        "message": f"the client does not handle {method}",
                    },
                }
            )
            return
        task = self._spawn_background(self._answer(msg_id, method, params, handler))
        self._incoming[msg_id] = task
        task.add_done_callback(lambda _t: self._incoming.pop(msg_id, None))

    async def _answer(self, msg_id: Any, method: str, params: Any, handler: RequestHandler) -> None:
        try:
            result = handler(params)
            if inspect.isawaitable(result):
                result = await result
            if result is DEFERRED:
                return
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "result": _jsonable(result)}
        except asyncio.CancelledError:
            log.debug("server request %s %r was cancelled", method, msg_id)
            return  # the server withdrew it and ignores a late answer
        except SemaRpcError as exc:
            answer = {"jsonrpc": "2.0", "id": msg_id, "error": exc.to_error()}
        except Exception as exc:
            if is_validation_error(exc):  # pydantic's, without importing it for the check
                answer = {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "error": {"code": ErrorCode.INVALID_PARAMS, "message": f"{method}: {exc}"},
                }
            else:
                log.exception("handler for %s failed", method)
                answer = {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "error": {
                        "code": ErrorCode.INTERNAL_ERROR,
                        "message": (
                            f"client handler for {method} failed: {type(exc).__name__}: {exc}"
                        ),
                    },
                }
        with contextlib.suppress(SemaConnectionError):
            await self._send(answer)

    def on_request(self, method: str, handler: RequestHandler | None) -> None:
        """Answer server→client requests of `method` with `handler(params)` (raw params
        dict; sync or async). None removes the handler. Declared in `initialize()`'s
        derived capabilities when the method is a known server request."""
        if handler is None:
            self._handlers.pop(method, None)
        else:
            self._handlers[method] = handler

    def on_permission(self, callback: PermissionCallback | None) -> None:
        """Answer `tool:permission:request` with `callback(PermissionRequestParams)`.

        The callback (sync or async) returns `"allow_once"`, `"allow_always"`,
        `"reject"`, a dict / `PermissionResult` with `feedback`, or True/False.
        If it raises, the server is answered with an error, which it counts as a refusal.
        """
        if callback is None:
            self.on_request(PERMISSION_METHOD, None)
            return

        async def handler(params: Any) -> dict[str, Any]:
            from sema_rpc.protocol import PermissionRequestParams

            request = PermissionRequestParams.model_validate(params)
            decision = callback(request)
            if inspect.isawaitable(decision):
                decision = await decision
            return permission_result(decision).wire()

        self.on_request(PERMISSION_METHOD, handler)

    # ------------------------------------------------------------------ notifications

    def notifications(self, session_id: str | None = None) -> NotificationStream:
        """An async iterator of every notification from now on (only `session_id`'s when
        given), as typed events. Each iterator has its own queue: many can run at once
        and each sees every notification."""
        return NotificationStream(self, session_id)

    def on_notification(self, callback: NotificationCallback) -> Callable[[], None]:
        """Call `callback(event)` for every notification, in arrival order, from the
        reader task (an async callback is scheduled as a task). Returns an unsubscribe
        function."""
        self._callbacks.append(callback)
        return lambda: _remove(self._callbacks, callback)

    def on_message(self, callback: MessageCallback) -> Callable[[], None]:
        """A wire tap: `callback(message, raw_bytes)` for every message received
        (notifications, responses, server requests), before it is routed. Returns an
        unsubscribe function."""
        self._taps.append(callback)
        return lambda: _remove(self._taps, callback)

    # ------------------------------------------------------------------ sending

    def _write_nowait(self, message: dict[str, Any]) -> bool:
        if self._writer.is_closing() or not self.is_connected:
            return False
        try:
            self._writer.write(encode_message(message, jsonl=self.jsonl))
        except (ConnectionError, RuntimeError, OSError):
            return False
        return True

    async def _send(self, message: dict[str, Any]) -> None:
        if not self._write_nowait(message):
            raise self._connection_error()
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise SemaConnectionError(f"writing to the server failed: {exc}") from exc

    async def send_message(self, message: Mapping[str, Any]) -> None:
        """Send one JSON-RPC message as given: an answer to a deferred server request, a
        recorded message being replayed. A request sent this way is not tracked: its
        answer reaches `on_message` taps only."""
        await self._send(dict(message))

    async def send_body(self, body: bytes) -> None:
        """Send one message body as given, in this connection's framing — also one that is
        not JSON (to see how a server handles bad input)."""
        if self._writer.is_closing() or not self.is_connected:
            raise self._connection_error()
        try:
            self._writer.write(frame_body(body, jsonl=self.jsonl))
            await self._writer.drain()
        except (ConnectionError, RuntimeError, OSError) as exc:
            raise SemaConnectionError(f"writing to the server failed: {exc}") from exc

    def new_id(self) -> int:
        """A fresh request id (to correlate a request with the `on_message` tap)."""
        while (msg_id := next(self._ids)) in self._pending:
            pass
        return msg_id

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> Any:
        """Send a request and return its result (a dict for every sema-rpc method).

        Raises `SemaRpcError` for an error answer and `SemaConnectionError` when the
        server goes away. When the caller is cancelled or `timeout` expires, a
        `$/cancelRequest` is sent (for `session/prompt` that is an interrupt).
        """
        if not self.is_connected:
            raise self._connection_error()
        if msg_id is None:
            msg_id = self.new_id()
        elif msg_id in self._pending:
            raise ValueError(f"request id {msg_id!r} is already in use")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = _jsonable(params)
        try:
            await self._send(message)
            response = await asyncio.wait_for(future, timeout)
        except (asyncio.CancelledError, TimeoutError):
            if future.cancelled() or not future.done():
                self._write_nowait(
                    {"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"id": msg_id}}
                )
            raise
        finally:
            self._pending.pop(msg_id, None)
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            raise SemaRpcError(
                int(error.get("code", ErrorCode.INTERNAL_ERROR)),
                str(error.get("message", response["error"])),
                error.get("data"),
                method=method,
            )
        return response.get("result")

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (no answer)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = _jsonable(params)
        await self._send(message)

    # ------------------------------------------------------------------ typed calls

    async def initialize(
        self,
        capabilities: ClientCapabilities | Mapping[str, Any] | None = None,
        *,
        client_info: ClientInfo | Mapping[str, Any] | str | None = None,
        protocol_version: int = PROTOCOL_VERSION,
        token: str | None = None,
    ) -> InitializeResult:
        """The handshake. `capabilities` defaults to what this client has handlers for
        (`on_permission()` → `permissions`, …). `token`: what a TCP listener wrote to its
        token file (it must come with the first message on such a connection)."""
        from sema_rpc.protocol import (
            ClientCapabilities,
            ClientInfo,
            InitializeParams,
            InitializeResult,
        )

        if capabilities is None:
            caps = ClientCapabilities.model_validate(
                {
                    spec.capability: True
                    for name, spec in SERVER_REQUESTS.items()
                    if name in self._handlers
                }
            )
        elif isinstance(capabilities, ClientCapabilities):
            caps = capabilities
        else:
            caps = ClientCapabilities.model_validate(dict(capabilities))
        if client_info is None:
            from sema_client._version import __version__

            info = ClientInfo(name="sema-client", version=__version__)
        elif isinstance(client_info, str):
            info = ClientInfo(name=client_info)
        elif isinstance(client_info, ClientInfo):
            info = client_info
        else:
            info = ClientInfo.model_validate(dict(client_info))
        params = InitializeParams(
            protocol_version=protocol_version, client_info=info, capabilities=caps
        )
        wire = params.wire()
        if token is not None:
            wire["token"] = token
        result = InitializeResult.model_validate(await self.request("initialize", wire))
        self.initialize_result = result
        return result

    async def create_session(
        self, working_dir: str | os.PathLike[str], **params: Any
    ) -> SessionReadyParams:
        """`session/create`. Params in snake_case or camelCase: `model`, `mode`,
        `permission_mode`, `session_id`, `use_tools`; unknown ones are sent as given
        (camelCased), for newer servers.

        A relative `working_dir` (and `~`) is resolved here, against this process's current
        directory: the wire takes absolute paths only, and the server's own directory is
        not the caller's."""
        from sema_rpc.protocol import SessionCreateParams, SessionReadyParams

        path = os.path.abspath(os.path.expanduser(os.fspath(working_dir)))  # noqa: ASYNC240 (no I/O but getcwd)
        wire = {"workingDir": path, **_camel_params(params)}
        known = SessionCreateParams.model_validate(wire).model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )
        result = await self.request("session/create", {**wire, **known})
        return SessionReadyParams.model_validate(result)

    async def prompt(
        self,
        session_id: str,
        text: str | Iterable[Mapping[str, Any] | Dumpable],
        delivery: Literal["followUp", "steer"] = "followUp",
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionPromptResult:
        """`session/prompt`: answers once, when this input's turn ends. `text` is what
        the user typed, or content blocks: dicts (`{"type": "image", "path": "shot.png"}`,
        snake_case or camelCase) or the protocol's block models; `image_block()` builds
        an image block from bytes."""
        from sema_rpc.protocol import SessionPromptParams

        content: Any = text
        if not isinstance(text, str):
            content = [b.model_dump(by_alias=True) if is_model(b) else b for b in text]
        params = SessionPromptParams(session_id=session_id, input=content, delivery=delivery)
        return await self.rpc.session_prompt(params, timeout=timeout, msg_id=msg_id)

    async def interrupt(self, session_id: str) -> bool:
        """`session/interrupt`: True when a turn was running and is now stopping."""
        from sema_rpc.protocol import SessionInterruptParams

        params = SessionInterruptParams(session_id=session_id)
        return (await self.rpc.session_interrupt(params)).interrupted

    async def update_mode(self, session_id: str, mode: Literal["Agent", "Plan"]) -> str:
        """`mode/update`: returns the mode now in effect."""
        from sema_rpc.protocol import ModeUpdateParams

        params = ModeUpdateParams(session_id=session_id, mode=mode)
        return (await self.rpc.mode_update(params)).mode

    async def update_permission_mode(
        self, session_id: str, permission_mode: Literal["default", "acceptEdits", "bypass"]
    ) -> str:
        """`permissionMode/update`: returns the permission mode now in effect."""
        from sema_rpc.protocol import PermissionModeUpdateParams

        params = PermissionModeUpdateParams(session_id=session_id, permission_mode=permission_mode)
        return (await self.rpc.permission_mode_update(params)).permission_mode

    async def list_models(self, session_id: str | None = None) -> ModelListResult:
        """`model/list`: the models a session can use; with `session_id`, `.current` names
        that session's model."""
        from sema_rpc.protocol import ModelListParams

        return await self.rpc.model_list(ModelListParams(session_id=session_id))

    async def set_model(
        self, session_id: str, model: str, *, thinking: bool | None = None
    ) -> SessionSetModelResult:
        """`session/setModel`: the session's next model call uses `model` (a name from
        `list_models()`); `thinking` None keeps the profile's setting."""
        from sema_rpc.protocol import SessionSetModelParams

        params = SessionSetModelParams(session_id=session_id, model=model, thinking=thinking)
        return await self.rpc.session_set_model(params)

    async def messages(
        self, session_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> SessionMessagesResult:
        """`session/messages`: one page of the conversation for display, oldest first
        (`next_cursor` is set when more follow)."""
        from sema_rpc.protocol import SessionMessagesParams

        params = SessionMessagesParams(session_id=session_id, cursor=cursor, limit=limit)
        return await self.rpc.session_messages(params)

    async def all_messages(self, session_id: str, *, page: int = 1000) -> list[TranscriptMessage]:
        """The whole conversation for display: every page of `session/messages`."""
        out: list[TranscriptMessage] = []
        cursor: str | None = None
        while True:
            result = await self.messages(session_id, cursor=cursor, limit=page)
            out += result.messages
            cursor = result.next_cursor
            if cursor is None:
                return out

    async def fork(self, session_id: str, message_id: str | None = None) -> SessionForkResult:
        """`session/fork`: a new session with the conversation before the prompt
        `message_id` (the whole conversation without one); `.input` is that prompt's text."""
        from sema_rpc.protocol import SessionForkParams

        params = SessionForkParams(session_id=session_id, message_id=message_id)
        return await self.rpc.session_fork(params)

    async def rewind(
        self,
        session_id: str,
        message_id: str | None = None,
        *,
        restore: Literal["code", "conversation", "both"] = "both",
        redo: bool = False,
        force: bool = False,
    ) -> SessionRewindResult:
        """`session/rewind`: back to just before the prompt `message_id` (its files,
        its messages or both), or `redo=True` to undo the last rewind. With conflicts and
        no `force`, nothing changes and `.rewound` is False (see `.conflicts`)."""
        from sema_rpc.protocol import SessionRewindParams

        params = SessionRewindParams(
            session_id=session_id,
            message_id=message_id,
            restore=restore,
            redo=redo,
            force=force,
        )
        return await self.rpc.session_rewind(params)

    async def shutdown(self) -> None:
        """`shutdown`: the server stops accepting work (then `exit()` or `close()`)."""
        await self.request("shutdown")

    async def exit(self) -> None:
        """The `exit` notification."""
        await self.notify("exit")


def image_block(data: bytes, media_type: str) -> ImageInputBlock:
    """An image input block from the image's bytes (`media_type`: image/png, image/jpeg,
    image/gif or image/webp)."""
    from sema_rpc.protocol import ImageInputBlock

    encoded = base64.b64encode(data).decode("ascii")
    return ImageInputBlock(type="image", data=encoded, media_type=media_type)


async def _await_logged(awaitable: Awaitable[Any], callback: Any) -> None:
    try:
        await awaitable
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("callback %r failed", callback)


def _remove(items: list[Any], item: Any) -> None:
    with contextlib.suppress(ValueError):
        items.remove(item)
