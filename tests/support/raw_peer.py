"""A client at the byte level, for races: a real `sema-rpc` subprocess over real pipes,
in any dialect (Content-Length, `--jsonl`, `--acp`), where a test decides exactly which
messages share one `write(2)` and sees every message body as the server wrote it.

Server→client requests are answered by `on_request(method, params)` (None: left
unanswered); everything the server wrote is in `messages`, in order.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

DIALECTS = ("content-length", "jsonl", "acp")


@dataclass
class Out:
    """One message the server wrote: its bytes and its parsed value."""

    raw: bytes
    msg: dict[str, Any]

    @property
    def method(self) -> str | None:
        return self.msg.get("method")

    @property
    def params(self) -> dict[str, Any]:
        params = self.msg.get("params")
        return params if isinstance(params, dict) else {}


def _frame(body: bytes, dialect: str) -> bytes:
    if dialect == "content-length":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


class RawPeer:
    def __init__(
        self,
        env: dict[str, str],
        dialect: str = "jsonl",
        on_request: Callable[[str, dict[str, Any]], Any] | None = None,
        cwd: Path | None = None,
        python: str | None = None,
    ):
        assert dialect in DIALECTS
        self.env = env
        self.dialect = dialect
        self.on_request = on_request
        self.cwd = cwd or REPO
        self.python = python or sys.executable
        """The interpreter (and `cwd` the checkout) the server runs from: a benchmark's
        baseline build runs from its own."""
        self.messages: list[Out] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._changed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ process

    async def start(self) -> RawPeer:
        flag = {"content-length": [], "jsonl": ["--jsonl"], "acp": ["--acp"]}[self.dialect]
        self.proc = await asyncio.create_subprocess_exec(
            self.python,
            "-m",
            "sema_rpc",
            *flag,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**self.env, "PYTHONUNBUFFERED": "1"},
            cwd=str(self.cwd),
            limit=1 << 26,
        )
        self._reader = asyncio.ensure_future(self._read())
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        return self

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(1 << 16):
            self.stderr.extend(chunk)
            del self.stderr[: max(0, len(self.stderr) - (1 << 20))]

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            if self.dialect == "content-length":
                length = None
                while True:
                    line = await out.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        if length is not None:
                            break
                        continue
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                try:
                    body = await out.readexactly(length)
                except asyncio.IncompleteReadError:
                    return
            else:
                body = await out.readline()
                if not body:
                    return
                body = body.rstrip(b"\n")
                if not body.strip():
                    continue
            msg = json.loads(body)
            self.messages.append(Out(body, msg))
            self._changed.set()
            if "method" in msg and "id" in msg and self.on_request is not None:
                answer = self.on_request(msg["method"], msg.get("params") or {})
                if answer is not None:
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": answer})

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def send_raw(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if self.proc.stdin.is_closing():
            return
        try:
            self.proc.stdin.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send(self, *messages: dict[str, Any]) -> None:
        """The messages in one write, back to back."""
        self.send_raw(b"".join(self.frame(json.dumps(m).encode()) for m in messages))

    def frame(self, body: bytes) -> bytes:
        return _frame(body, self.dialect)

    def eof(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def kill9(self) -> None:
        assert self.proc is not None
        if self.proc.returncode is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=5)

    async def close(self, timeout: float = 15) -> int | None:
        if self.proc is None:
            return None
        self.eof()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            await self.kill9()
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=5)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
        return self.proc.returncode

    # ------------------------------------------------------------------ reading

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"timed out; stderr tail: {bytes(self.stderr[-2000:])!r}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.5))
            except TimeoutError:
                pass

    def answers(self, msg_id: Any) -> list[Out]:
        return [
            m
            for m in self.messages
            if "method" not in m.msg and "id" in m.msg and m.msg["id"] == msg_id
        ]

    async def answer(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        found = await self.wait_for(lambda: self.answers(msg_id), timeout)
        return found[0].msg

    async def call(self, msg_id: Any, method: str, params: Any, timeout: float = 30) -> Any:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        answer = await self.answer(msg_id, timeout)
        assert "result" in answer, answer
        return answer["result"]

    def notifications(self, method: str | None = None) -> list[Out]:
        return [
            m
            for m in self.messages
            if "method" in m.msg and "id" not in m.msg and (method is None or m.method == method)
        ]
