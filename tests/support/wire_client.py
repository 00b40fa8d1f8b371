"""A test client that drives a real `sema-rpc` subprocess over real pipes.

Built on `sema_client` (spawning, both framings, the reader, stderr draining): this adds
what tests look at — every notification with its arrival time, whole response messages,
responses nobody asked for (`unsolicited`), the bytes as the server wrote them — and the
raw-bytes helpers bad-input tests need (`send_bytes`, `frame`). Server→client requests go
to `on_server_request(method, params)`, which may leave one unanswered (None) or answer
it after the server withdrew it: the client library never answers in its place.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_client import DEFERRED, SemaClient
from sema_client.framing import STREAM_LIMIT

from sema_rpc.protocol import SERVER_REQUESTS
from tests.support.server_forks import spawn_server

REPO = Path(__file__).resolve().parents[2]

ServerRequestHandler = Callable[[str, dict[str, Any]], Any | Awaitable[Any]]


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error
        self.code = error.get("code")


@dataclass
class Received:
    message: dict[str, Any]
    at: float

    @property
    def method(self) -> str | None:
        return self.message.get("method")

    @property
    def params(self) -> dict[str, Any]:
        return self.message.get("params") or {}


class RecordingClient:
    """What a test client does over any byte stream, whatever carries it: it records every
    message as received (notifications with their arrival time, server→client requests,
    whole responses, responses nobody asked for), sends in either framing, and answers
    server→client requests through `on_server_request(method, params)` (None: leave it
    unanswered; an `RpcFailure`: answer with that error). A subclass supplies
    `send_bytes` and feeds every message it reads to `_dispatch`."""

    jsonl: bool
    on_server_request: ServerRequestHandler | None
    timeout: float = 20
    """The default wait, in seconds, for an answer or an event."""

    def _start_recording(self) -> None:
        self.received: list[Received] = []
        self.unsolicited: list[dict[str, Any]] = []  # responses with id null, etc.
        self.server_requests: list[Received] = []
        self.messages: list[dict[str, Any]] = []
        """Everything received, in order."""
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    def _dispatch(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        item = Received(message, time.monotonic())
        if "method" in message and "id" in message:
            self.server_requests.append(item)
            self._tasks.append(asyncio.create_task(self._answer(message)))
        elif "method" in message:
            self.received.append(item)
        else:
            future = self._pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
            else:
                self.unsolicited.append(message)
        self._changed.set()

    async def _answer(self, message: dict[str, Any]) -> None:
        if self.on_server_request is None:
            return
        result = self.on_server_request(message["method"], message.get("params") or {})
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
        if result is None:  # the handler chose not to answer
            return
        if isinstance(result, RpcFailure):
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": result.error})
        else:
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _cancel_answers(self) -> None:
        for task in self._tasks:
            task.cancel()

    def _timeout_note(self) -> str:
        """What a timed-out wait adds to its message (a subclass: the server's stderr)."""
        return ""

    # ------------------------------------------------------------------ sending

    def send_bytes(self, data: bytes) -> None:
        raise NotImplementedError

    def frame(self, body: bytes) -> bytes:
        if self.jsonl:
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(self.frame(json.dumps(message).encode()))

    def expect_response(self, msg_id: Any) -> asyncio.Future[dict[str, Any]]:
        """A future for the response to a request sent by other means (`send_bytes`)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        return future

    async def request(
        self, method: str, params: Any = None, *, timeout: float | None = None, msg_id: Any = None
    ) -> dict[str, Any]:
        """Send a request and return the whole response message."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        future = self.expect_response(msg_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await asyncio.wait_for(future, self.timeout if timeout is None else timeout)

    async def call(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ------------------------------------------------------------------ observing

    def events(self, method: str | None = None, session_id: str | None = None) -> list[Received]:
        return [
            r
            for r in self.received
            if (method is None or r.method == method)
            and (session_id is None or r.params.get("sessionId") == session_id)
        ]

    async def wait_until(
        self, check: Callable[[], Any], *, timeout: float | None = None, what: str = ""
    ) -> Any:
        """`check()`'s first truthy value, tried again on every message received."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                what = what or "condition not met"
                raise TimeoutError(f"{what} within {timeout}s{self._timeout_note()}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[dict[str, Any]], bool] = lambda _p: True,
        *,
        timeout: float | None = None,
    ) -> Received:
        seen = 0

        def found() -> Received | None:
            nonlocal seen
            for item in self.received[seen:]:
                if item.method == method and predicate(item.params):
                    return item
            seen = len(self.received)
            return None

        result: Received = await self.wait_until(found, timeout=timeout, what=f"no {method}")
        return result

    async def wait_unsolicited(self, count: int, timeout: float = 10) -> list[dict[str, Any]]:
        try:
            await self.wait_until(lambda: len(self.unsolicited) >= count, timeout=timeout)
        except TimeoutError:
            raise TimeoutError(
                f"expected {count} id-less responses, got {self.unsolicited}"
            ) from None
        return self.unsolicited


@dataclass
class WireClient(RecordingClient):
    env: dict[str, str] = field(default_factory=dict)
    jsonl: bool = True
    extra_args: list[str] = field(default_factory=list)
    on_server_request: ServerRequestHandler | None = None
    fresh_interpreter: bool = False
    """Exec `python -m sema_rpc` instead of forking the worker's preloaded server
    (`tests/support/server_forks.py`): for tests about the interpreter's start."""

    def __post_init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr = bytearray()
        self.stdout = bytearray()
        """Every message body exactly as the server wrote it."""
        self._start_recording()

    # ------------------------------------------------------------------ process

    async def start(self) -> WireClient:
        env = dict(self.env)
        if "PYTHONUNBUFFERED" not in os.environ:
            env.setdefault("PYTHONUNBUFFERED", "1")
        process = await spawn_server(
            [*(["--jsonl"] if self.jsonl else []), *self.extra_args],
            env={**os.environ, **env},
            limit=STREAM_LIMIT,
            fresh_interpreter=self.fresh_interpreter,
        )
        assert process.stdout is not None and process.stdin is not None
        self.client = SemaClient(
            process.stdout,
            process.stdin,
            jsonl=self.jsonl,
            process=process,  # type: ignore[arg-type]  # a ForkedProcess has its shape
            stderr_callback=self.stderr.extend,
        )
        self.client.start()
        self.proc = self.client.process
        self.client.on_message(self._on_message)
        for method in SERVER_REQUESTS:  # answered (or not) by `_answer`, never by the library
            self.client.on_request(method, lambda _params: DEFERRED)
        return self

    async def __aenter__(self) -> WireClient:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, timeout: float = 10) -> int | None:
        if self.proc is None:
            return None
        code = await self.client.close(timeout)
        self._cancel_answers()
        return code

    def _on_message(self, message: dict[str, Any], body: bytes) -> None:
        self.stdout += body
        self._dispatch(message)

    def _timeout_note(self) -> str:
        return f"; stderr: {self.stderr[-2000:]!r}"

    def send_bytes(self, data: bytes) -> None:
        assert self.proc and self.proc.stdin
        self.proc.stdin.write(data)

    async def read_so_far(self, *, timeout: float = 20) -> None:
        """Returns once the server has read every message sent before this call.

        It reads in order and registers a prompt as it reads it (queued from then on,
        per the spec's table of a session's life), so its answer to a request sent now
        (`model/list`, which changes nothing) is the event a test waits on after
        sending what the wire does not acknowledge: a queued prompt, a steer, a
        notification. Never a sleep."""
        # One turn of the loop first: a request a task scheduled just before this call
        # (`ensure_future(client.call(...))`) sends goes out ahead of ours.
        await asyncio.sleep(0)
        await self.call("model/list", {}, timeout=timeout)

    # ------------------------------------------------------------------ conveniences

    async def initialize(self, **capabilities: bool) -> dict[str, Any]:
        return await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "wire-client"},
                "capabilities": capabilities,
            },
        )

    async def create_session(self, working_dir: str | Path, **params: Any) -> dict[str, Any]:
        return await self.call("session/create", {"workingDir": str(working_dir), **params})
