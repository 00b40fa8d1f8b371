"""A test client on a listening server's socket (unix or tcp), in either framing.

It records every message as received (notifications, server→client requests, answers)
and answers server→client requests through `on_server_request(method, params)`
(None: leave it unanswered)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.wire_client import Received, RpcFailure

ServerRequestHandler = Callable[[str, dict[str, Any]], Any | Awaitable[Any]]


@dataclass
class SocketClient:
    endpoint: str
    jsonl: bool = True
    name: str = "socket-client"
    on_server_request: ServerRequestHandler | None = None

    def __post_init__(self) -> None:
        self.received: list[Received] = []
        self.server_requests: list[Received] = []
        self.messages: list[dict[str, Any]] = []
        """Everything received, in order."""
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self.closed = asyncio.Event()

    async def connect(self) -> SocketClient:
        kind, _, rest = self.endpoint.partition(":")
        if kind == "unix":
            self.reader, self.writer = await asyncio.open_unix_connection(rest, limit=1 << 26)
        else:
            host, _, port = rest.rpartition(":")
            self.reader, self.writer = await asyncio.open_connection(host, int(port), limit=1 << 26)
        self._reading = asyncio.create_task(self._read())
        return self

    async def close(self) -> None:
        self.writer.close()
        for task in self._tasks:
            task.cancel()
        self._reading.cancel()

    def kill(self) -> None:
        """Drop the connection at once (what a crashed client's socket does)."""
        self.writer.transport.abort()
        self._reading.cancel()

    async def _read(self) -> None:
        try:
            while True:
                if self.jsonl:
                    line = await self.reader.readline()
                    if not line:
                        break
                    if not line.strip():
                        continue
                    self._dispatch(json.loads(line))
                else:
                    header = await self.reader.readuntil(b"\r\n\r\n")
                    length = int(header.split(b":", 1)[1].split(b"\r\n", 1)[0])
                    self._dispatch(json.loads(await self.reader.readexactly(length)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed.set()
            self._changed.set()

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
        self._changed.set()

    async def _answer(self, message: dict[str, Any]) -> None:
        if self.on_server_request is None:
            return
        result = self.on_server_request(message["method"], message.get("params") or {})
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
        if result is None:
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        if self.jsonl:
            self.send_bytes(body + b"\n")
        else:
            self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await asyncio.wait_for(future, timeout)

    async def call(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    async def initialize(self, token: str | None = None, **capabilities: bool) -> Any:
        params: dict[str, Any] = {
            "protocolVersion": 1,
            "clientInfo": {"name": self.name},
            "capabilities": capabilities,
        }
        if token is not None:
            params["token"] = token
        return await self.call("initialize", params)

    def events(self, method: str | None = None) -> list[Received]:
        return [r for r in self.received if method is None or r.method == method]

    async def wait_until(self, check: Callable[[], Any], *, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.name}: condition not met within {timeout}s")
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
        timeout: float = 30,
    ) -> Received:
        def found() -> Received | None:
            for item in self.received:
                if item.method == method and predicate(item.params):
                    return item
            return None

        result: Received = await self.wait_until(found, timeout=timeout)
        return result


async def endpoint_of(sema_root: Path, pid: int, *, timeout: float = 30) -> dict[str, Any]:
    """The endpoint file a listening server `pid` wrote (`$SEMA_ROOT/run/<pid>.json`)."""
    path = sema_root / "run" / f"{pid}.json"
    deadline = time.monotonic() + timeout
    while True:
        try:
            return dict(json.loads(path.read_text()))
        except (FileNotFoundError, ValueError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)
