"""ACP mode beside the native dialect, in the same run: `initialize` latency (spawn →
answer), the first session's creation (`session/new` / `session/create` right after
`initialize`: the engine's import included) and text chunks per second at the client (a
20,000-delta answer from the scripted model server), for `sema-rpc --jsonl` and
`sema-rpc --acp`.

Both are driven by the same minimal line-reading client (no SDK on the client side, so
the figures are the server's), one process per `initialize` sample. `--repo` runs the
server of another checkout (its `.venv`), to compare a change with the code before it.

    .venv/bin/python bench/bench_acp.py [--runs 7] [--deltas 20000] [--repo PATH] [--dialects acp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, Reply, ScriptedLLM, host_header, print_table, server_env


class LineClient:
    """One JSON message per line, both ways."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.ids = 0

    repo: Path = REPO
    """The checkout whose server runs (its own `.venv`, else this interpreter)."""

    @classmethod
    async def spawn(cls, dialect: str, env: dict[str, str]) -> LineClient:
        python = cls.repo / ".venv" / "bin" / "python"
        proc = await asyncio.create_subprocess_exec(
            str(python) if python.exists() else sys.executable,
            "-m",
            "sema_rpc",
            "--acp" if dialect == "acp" else "--jsonl",
            cwd=str(cls.repo),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(
        self, method: str, params: dict[str, Any], on_message: Any = None
    ) -> dict[str, Any]:
        self.ids += 1
        msg_id = self.ids
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the server closed its output")
            message = json.loads(line)
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            if on_message is not None:
                on_message(message)

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


INIT = {
    "native": ("initialize", {"protocolVersion": 1}),
    "acp": ("initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
}


async def initialize_ms(dialect: str, env: dict[str, str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        client = await LineClient.spawn(dialect, env)
        method, params = INIT[dialect]
        await client.request(method, params)
        samples.append((time.perf_counter() - t0) * 1000)
        await client.close()
    return statistics.median(samples)


async def new_session_ms(dialect: str, env: dict[str, str], workspace: Path, runs: int) -> float:
    """The first session of a fresh process, timed from its request to its answer."""
    samples = []
    for _ in range(runs):
        client = await LineClient.spawn(dialect, env)
        method, params = INIT[dialect]
        await client.request(method, params)
        t0 = time.perf_counter()
        await open_session(client, dialect, workspace)
        samples.append((time.perf_counter() - t0) * 1000)
        await client.close()
    return statistics.median(samples)


async def open_session(client: LineClient, dialect: str, workspace: Path) -> str:
    if dialect == "acp":
        answer = await client.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    else:
        answer = await client.request(
            "session/create", {"workingDir": str(workspace), "model": "anthropic/claude-bench"}
        )
    return str(answer["sessionId"])


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    import os

    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def stream(
    dialect: str, env: dict[str, str], llm: ScriptedLLM, workspace: Path, deltas: int
) -> dict[str, float]:
    client = await LineClient.spawn(dialect, env)
    try:
        method, params = INIT[dialect]
        await client.request(method, params)
        sid = await open_session(client, dialect, workspace)
        llm.script(Reply.text(deltas=deltas))
        chunks = 0
        first: list[float] = []

        def on_message(message: dict[str, Any]) -> None:
            nonlocal chunks
            method = message.get("method")
            if method == "message:text:chunk" or (
                method == "session/update"
                and message["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            ):
                if not first:
                    first.append(time.perf_counter())
                chunks += 1

        cpu0 = _cpu_ms(client.proc.pid)
        if dialect == "acp":
            result = await client.request(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]},
                on_message,
            )
            assert result["stopReason"] == "end_turn", result
        else:
            result = await client.request(
                "session/prompt", {"sessionId": sid, "input": "stream"}, on_message
            )
            assert result["stopReason"] == "end_turn", result
        end = time.perf_counter()
        cpu = _cpu_ms(client.proc.pid) - cpu0
        if chunks != deltas:
            raise RuntimeError(f"{dialect}: {chunks} chunks for {deltas} deltas")
        return {
            "chunks_per_s": chunks / (end - first[0]),
            "server_cpu_us_per_chunk": cpu * 1000 / chunks,
        }
    finally:
        await client.close()


async def run(runs: int, deltas: int, dialects: list[str]) -> dict[str, Any]:
    host = host_header()
    with tempfile.TemporaryDirectory(prefix="bench-acp-") as tmp, ScriptedLLM() as llm:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# bench\n")
        (root / "sema").mkdir()
        env = {
            **{k: v for k, v in __import__("os").environ.items() if k in ("PATH", "LANG")},
            **server_env(llm, root / "sema"),
            "HOME": str(root),
        }
        out: dict[str, Any] = {
            "bench": "acp",
            "host": host,
            "repo": str(LineClient.repo),
            "runs": runs,
            "deltas": deltas,
        }
        rows = []
        for dialect in dialects:
            init = await initialize_ms(dialect, env, runs)
            new = await new_session_ms(dialect, env, workspace, runs)
            best: dict[str, float] = {}
            for _ in range(2):  # best of two: a shared machine's noise only slows things
                figures = await stream(dialect, env, llm, workspace, deltas)
                if figures["chunks_per_s"] > best.get("chunks_per_s", 0):
                    best = figures
            out[dialect] = {
                "initialize_ms": round(init, 1),
                "session_new_ms": round(new, 1),
                "chunks_per_s": round(best["chunks_per_s"]),
                "server_cpu_us_per_chunk": round(best["server_cpu_us_per_chunk"], 2),
            }
            rows.append(
                [
                    dialect,
                    init,
                    new,
                    best["chunks_per_s"],
                    best["server_cpu_us_per_chunk"],
                ]
            )
        print_table(
            f"initialize (median of {runs} spawns) and a {deltas:,}-delta answer (best of 2)",
            [
                "dialect",
                "spawn → initialize ms",
                "first session/new ms",
                "text chunks/s at the client",
                "server CPU µs/chunk",
            ],
            rows,
        )
        print(json.dumps(out))
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose server runs")
    parser.add_argument("--dialects", default="native,acp", help="comma-separated")
    args = parser.parse_args()
    LineClient.repo = args.repo.resolve()
    asyncio.run(run(args.runs, args.deltas, args.dialects.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
