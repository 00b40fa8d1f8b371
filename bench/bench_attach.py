"""Several clients on one live session: fan-out and replay figures over real sockets.

    .venv/bin/python bench/bench_attach.py [--quick]

1. Fan-out: a server started with `--listen unix` streams a 20,000-delta answer (the
   scripted model server, Anthropic format) to its stdio client while 1, 3 and 10 socket
   clients follow the session (`session/attach`). For each client: the notifications it
   received per second (its first to its last text chunk), and the server's CPU per
   delta. The row "0 (no --listen)" is the same stream on a server that does not listen
   (the stdio path alone), in the same run, as the yardstick.
2. Replay: after a 10,000-delta answer, a new socket client attaches with `afterSeq` =
   `lastSeq` - 10,000: the time from sending `session/attach` to its 10,000th replayed
   notification (median of RUNS; connecting and `initialize` are timed apart).

Each client counts the notifications in the bytes it reads (no JSON parsing on the hot
path) and checks, at the end, the last chunk's `seq` and its count. A functional break
(a wrong count, an error answer) exits 1. The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    Reply,
    ScriptedLLM,
    WireClient,
    close_client,
    host_header,
    print_table,
    server_env,
)

DELTAS = 20_000
REPLAY = 10_000
FOLLOWERS = (1, 3, 10)
RUNS = 5
MODEL = "anthropic/claude-bench"
CHUNK = b'"method":"message:text:chunk"'


class Follower(asyncio.Protocol):
    """A socket client that counts text chunks as their bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.lines = 0
        self.chunks = 0
        self.first: float | None = None
        self.last = 0.0
        self.tail = b""
        self.changed = asyncio.Event()
        self.answers: list[dict[str, Any]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        # Counted on whole lines only: a read may end inside a message.
        now = time.monotonic()
        self.buffer += data
        cut = self.buffer.rfind(b"\n")
        if cut < 0:
            return
        complete = bytes(self.buffer[:cut])
        del self.buffer[: cut + 1]
        found = complete.count(CHUNK)
        if found:
            if self.first is None:
                self.first = now
            self.chunks += found
            self.last = now
        self.lines += complete.count(b"\n") + 1
        self.tail = complete.rsplit(b"\n", 1)[-1]
        if b'"result"' in complete:  # an answer (rare)
            for line in complete.split(b"\n"):
                if line.startswith(b'{"jsonrpc":"2.0","id":'):
                    self.answers.append(json.loads(line))
        self.changed.set()

    def send(self, msg_id: int, method: str, params: dict[str, Any]) -> None:
        assert self.transport is not None
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.transport.write(json.dumps(message).encode() + b"\n")

    async def answer(self, msg_id: int, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for a in self.answers:
                if a.get("id") == msg_id:
                    return a
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.01, deadline - time.monotonic()))

    async def until(self, check: Any, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.01, deadline - time.monotonic()))


async def follower(endpoint: str) -> Follower:
    loop = asyncio.get_running_loop()
    _t, proto = await loop.create_unix_connection(Follower, endpoint.removeprefix("unix:"))
    proto.send(1, "initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
    await proto.answer(1)
    return proto


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_endpoint(root: Path, pid: int) -> str:
    path = root / "run" / f"{pid}.json"
    for _ in range(1000):
        if path.exists():
            return str(json.loads(path.read_text())["endpoint"])
        await asyncio.sleep(0.01)
    raise TimeoutError("no endpoint file")


async def stream_once(
    env: dict[str, str], llm: ScriptedLLM, workspace: Path, followers: int | None
) -> dict[str, Any]:
    """One server: warm up, then a DELTAS-delta answer with `followers` socket clients
    attached (None: a server without --listen)."""
    listen = followers is not None
    client = WireClient(env=env, extra_args=["--listen", "unix"] if listen else [])
    try:
        await client.start()
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        llm.script(Reply.text("warm up", chunks=2))
        await client.call("session/prompt", {"sessionId": sid, "input": "hi"}, timeout=60)
        socks: list[Follower] = []
        if listen:
            assert client.proc is not None
            endpoint = await wait_endpoint(Path(env["SEMA_ROOT"]), client.proc.pid)
            for _ in range(followers or 0):
                sock = await follower(endpoint)
                sock.send(2, "session/attach", {"sessionId": sid})
                await sock.answer(2)
                socks.append(sock)
        reply = Reply.text(deltas=DELTAS)
        reply.render("anthropic", "claude-bench")
        llm.script(reply)
        assert client.proc is not None
        pid = client.proc.pid
        cpu0 = cpu_seconds(pid)
        mark = len(client.received)
        t0 = time.monotonic()
        result = await client.call("session/prompt", {"sessionId": sid, "input": "go"}, timeout=300)
        for sock in socks:
            await sock.until(lambda s=sock: s.chunks >= DELTAS)
        cpu = cpu_seconds(pid) - cpu0
        wall = time.monotonic() - t0
        chunks = [r for r in client.received[mark:] if r.method == "message:text:chunk"]
        ok = result.get("stopReason") == "end_turn" and len(chunks) == DELTAS
        rates = []
        for sock in socks:
            ok = ok and sock.chunks == DELTAS
            span = sock.last - (sock.first or sock.last)
            rates.append((sock.chunks - 1) / span if span > 0 else float("nan"))
        stdio_span = chunks[-1].at - chunks[0].at if len(chunks) > 1 else 0
        for sock in socks:
            assert sock.transport is not None
            sock.transport.close()
        return {
            "ok": ok,
            "stdio_rate": (len(chunks) - 1) / stdio_span if stdio_span > 0 else float("nan"),
            "rates": rates,
            "wall_s": wall,
            "cpu_us_per_delta": cpu / DELTAS * 1e6,
        }
    finally:
        await close_client(client)


async def replay_figures(
    env: dict[str, str], llm: ScriptedLLM, workspace: Path, runs: int
) -> dict[str, Any]:
    client = WireClient(env=env, extra_args=["--listen", "unix"])
    try:
        await client.start()
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        reply = Reply.text(deltas=REPLAY)
        reply.render("anthropic", "claude-bench")
        llm.script(reply)
        await client.call("session/prompt", {"sessionId": sid, "input": "go"}, timeout=300)
        assert client.proc is not None
        endpoint = await wait_endpoint(Path(env["SEMA_ROOT"]), client.proc.pid)
        last_seq = max(r.params.get("seq", 0) for r in client.received)
        connects, replays = [], []
        ok = True
        for _ in range(runs):
            t0 = time.monotonic()
            sock = await follower(endpoint)
            t1 = time.monotonic()
            sock.send(2, "session/attach", {"sessionId": sid, "afterSeq": last_seq - REPLAY})
            answer = await sock.answer(2)
            replayed = answer.get("result", {}).get("replayed")
            await sock.until(lambda s=sock: s.lines >= 2 + REPLAY)
            t2 = time.monotonic()
            ok = ok and replayed == REPLAY and sock.lines == 2 + REPLAY
            ok = ok and json.loads(sock.tail)["params"]["seq"] == last_seq
            connects.append((t1 - t0) * 1000)
            replays.append((t2 - t1) * 1000)
            assert sock.transport is not None
            sock.transport.close()
        return {
            "ok": ok,
            "connect_ms": statistics.median(connects),
            "replay_ms": statistics.median(replays),
            "replay_ms_all": replays,
        }
    finally:
        await close_client(client)


async def main(quick: bool) -> int:
    host_header()
    summary: dict[str, Any] = {}
    ok = True
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sema-root"
        root.mkdir()
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# bench\n")
        env = {**server_env(llm, root), "HOME": tmp}
        rows = []
        for followers in (None, *FOLLOWERS):
            r = await stream_once(env, llm, workspace, followers)
            ok = ok and r["ok"]
            rates = r["rates"]
            label = "0 (no --listen)" if followers is None else str(followers)
            rows.append(
                [
                    label,
                    r["stdio_rate"],
                    statistics.median(rates) if rates else None,
                    min(rates) if rates else None,
                    r["wall_s"],
                    r["cpu_us_per_delta"],
                ]
            )
            summary[f"followers_{followers or 0}"] = {
                "stdio_per_s": round(r["stdio_rate"]),
                "socket_median_per_s": round(statistics.median(rates)) if rates else None,
                "socket_min_per_s": round(min(rates)) if rates else None,
                "wall_s": round(r["wall_s"], 3),
                "server_cpu_us_per_delta": round(r["cpu_us_per_delta"], 2),
            }
        print_table(
            f"{DELTAS:,}-delta stream: notifications/s per client (first → last chunk)",
            [
                "socket clients",
                "stdio client /s",
                "socket median /s",
                "socket min /s",
                "prompt wall s",
                "server CPU µs/delta",
            ],
            rows,
        )
        replay = await replay_figures(env, llm, workspace, 3 if quick else RUNS)
        ok = ok and replay["ok"]
        print_table(
            f"attach + replay of {REPLAY:,} buffered notifications (median of "
            f"{len(replay['replay_ms_all'])})",
            ["connect + initialize ms", "attach → last replayed ms"],
            [[replay["connect_ms"], replay["replay_ms"]]],
        )
        summary["replay"] = {
            "connect_ms": round(replay["connect_ms"], 2),
            "attach_replay_ms": round(replay["replay_ms"], 2),
        }
    if not ok:
        print("FAILED: a count or an answer was wrong", file=sys.stderr)
    print(json.dumps({"ok": ok, **summary}))
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.quick)))
