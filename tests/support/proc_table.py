"""The process table as a test oracle: which processes carry a marker.

A test gives the server (or an MCP server) `SEMA_TEST_MARK=<uuid>` in its environment;
every process it starts inherits it, whatever it does to its session or process group.
A process that cleared its environment (`env -i`) would not be found: none of ours does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

MARK_VAR = "SEMA_TEST_MARK"


def new_mark() -> str:
    return f"lifeline-{uuid.uuid4().hex}"


def marked(mark: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live (not zombie) process whose environment has
    `SEMA_TEST_MARK=<mark>`."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
            if needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rfind(b")") + 2 :].split()[0] == b"Z":
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found.append((int(name), cmdline))
    return found


def wait_marked(mark: str, predicate, timeout_s: float, poll_s: float = 0.02):
    """Poll `marked(mark)` until `predicate(list)` holds; (list, seconds waited), or the
    last list and the timeout when it never held."""
    start = time.monotonic()
    while True:
        procs = marked(mark)
        if predicate(procs):
            return procs, time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            return procs, time.monotonic() - start
        time.sleep(poll_s)


def kill_marked(mark: str) -> None:
    """Clean-up after a failed test: nothing it started may outlive it."""
    import signal

    for pid, _ in marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class RawServer:
    """`python -m sema_rpc ARGS` over real pipes, JSONL or Content-Length framing."""

    def __init__(self, args: list[str], env: dict[str, str], *, content_length: bool = False):
        self.args = args
        self.env = env
        self.content_length = content_length
        self.messages: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.ids = 0

    async def start(self) -> RawServer:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sema_rpc",
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"},
            cwd=str(REPO),
        )
        self.reader = asyncio.create_task(self._read())
        self.stderr = asyncio.create_task(self.proc.stderr.read())  # type: ignore[union-attr]
        return self

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            if self.content_length:
                try:
                    header = await out.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                length = int(header.split(b":", 1)[1].split(b"\r\n", 1)[0])
                body = await out.readexactly(length)
            else:
                body = await out.readline()
                if not body:
                    break
            self.messages.append(json.loads(body))
            self.changed.set()

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        if self.content_length:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        else:
            self.proc.stdin.write(body + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return self.ids

    def response(self, msg_id: int) -> dict[str, Any] | None:
        for m in self.messages:
            if m.get("id") == msg_id and "method" not in m:
                return m
        return None

    async def call(self, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
        msg_id = self.request(method, params)
        async with asyncio.timeout(timeout):
            while (answer := self.response(msg_id)) is None:
                self.changed.clear()
                await self.changed.wait()
        assert "result" in answer, answer
        return answer["result"]

    async def ended(self, timeout: float) -> int:
        """The exit code, once stdout is closed and the process is gone."""
        async with asyncio.timeout(timeout):
            await self.reader
            return await self.proc.wait()

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        await self.proc.wait()
        self.reader.cancel()
