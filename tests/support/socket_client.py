"""A test client on a listening server's socket (unix or tcp), in either framing.

The same client as `WireClient` (`RecordingClient`: it records every message as received
and answers server→client requests through `on_server_request(method, params)`, None:
leave it unanswered) over a socket instead of a subprocess's pipes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.wire_client import REPO, RecordingClient, ServerRequestHandler


@dataclass
class SocketClient(RecordingClient):
    endpoint: str
    jsonl: bool = True
    name: str = "socket-client"
    on_server_request: ServerRequestHandler | None = None
    timeout: float = 30

    def __post_init__(self) -> None:
        self._start_recording()
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
        self._cancel_answers()
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

    def _timeout_note(self) -> str:
        return f" ({self.name})"

    def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)

    async def initialize(self, token: str | None = None, **capabilities: bool) -> Any:
        params: dict[str, Any] = {
            "protocolVersion": 1,
            "clientInfo": {"name": self.name},
            "capabilities": capabilities,
        }
        if token is not None:
            params["token"] = token
        return await self.call("initialize", params)


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


async def start_sema(
    env: dict[str, str],
    *args: str,
    stdin: int | None = None,
    stdout: int = asyncio.subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """`python -m sema_rpc *args` run from the repo, `env` over this process's environment,
    its stderr piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        *args,
        env={**os.environ, **env},
        cwd=str(REPO),
        stdin=stdin,
        stdout=stdout,
        stderr=asyncio.subprocess.PIPE,
    )


async def start_listening_run(
    env: dict[str, str], prompt: str, model: str, cwd: Path, *, stdin: int | None = None
) -> asyncio.subprocess.Process:
    """A `sema-rpc run PROMPT --listen unix` one-shot in `cwd` (its endpoint file, once
    written: `endpoint_of`)."""
    return await start_sema(
        env, "run", prompt, "--model", model, "--cwd", str(cwd), "--listen", "unix", stdin=stdin
    )


async def start_serve(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    """`sema-rpc serve *args` (its stdout, unused, discarded)."""
    return await start_sema(env, "serve", *args, stdout=asyncio.subprocess.DEVNULL)
