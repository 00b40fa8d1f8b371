"""How long `message:complete` waits for its message to be on disk, on a 20,000-delta stream.

    .venv/bin/python bench/bench_message_complete.py [--turns N] [--deltas N]
        [--server-python PY --server-repo DIR]    (a baseline build: its venv and checkout)

One server process over real pipes (JSONL) and the scripted model server, `SEMA_ROOT`
on the disk of the temp folder (`--root DIR` for another). Each turn streams `--deltas`
text chunks; the model server then holds the response's last events (its `gate`) until
the client has read every chunk (none for 100 ms). The figure per turn is the time from releasing those
last events to reading `message:complete`: the server's end of a response, including
(since a client must be able to trust `message:complete`) writing and syncing the
message to the history file. The client counts chunk lines without parsing them, so it
keeps up with the stream. Median and p99 (nearest rank) over the turns; compare a build
with the baseline in one farm-bench A/B run (the machine is shared). The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import REPO, Reply, ScriptedLLM, pct, server_env


class LeanClient:
    """JSONL over the server's pipes; chunk lines are counted, everything else parsed."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.chunks = 0
        self.completes: list[float] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.changed = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            if line.startswith(b'{"jsonrpc":"2.0","method":"message:text:chunk"'):
                self.chunks += 1
            else:
                msg = json.loads(line)
                if msg.get("method") == "message:complete":
                    self.completes.append(time.perf_counter())
                elif "id" in msg and "method" not in msg:
                    self.answers[msg["id"]] = msg
            self.changed.set()

    async def until(self, predicate: Any, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not answer in time")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 0.5)
            except TimeoutError:
                pass

    def send(self, msg_id: str, method: str, params: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(body).encode() + b"\n")

    async def call(self, msg_id: str, method: str, params: dict[str, Any]) -> Any:
        self.send(msg_id, method, params)
        await self.until(lambda: msg_id in self.answers)
        return self.answers[msg_id]["result"]


async def run(args: argparse.Namespace) -> dict[str, float]:
    llm = ScriptedLLM().start()
    gaps: list[float] = []
    try:
        with tempfile.TemporaryDirectory(dir=args.root) as tmp:
            root = Path(tmp) / "root"
            root.mkdir()
            home = Path(tmp) / "home"
            home.mkdir()
            work = Path(tmp) / "work"
            work.mkdir()
            env = {**server_env(llm, root), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
            proc = await asyncio.create_subprocess_exec(
                args.server_python or sys.executable,
                "-m",
                "sema_rpc",
                "--jsonl",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=env,
                cwd=args.server_repo or str(REPO),
                limit=1 << 26,
            )
            client = LeanClient(proc)
            await client.call("i", "initialize", {"protocolVersion": 1, "capabilities": {}})
            ready = await client.call(
                "n", "session/create", {"workingDir": str(work), "model": "anthropic/claude-bench"}
            )
            sid = ready["sessionId"]
            for turn in range(args.turns):
                gate = threading.Event()
                reply = Reply.text("x" * args.deltas, deltas=args.deltas, gate=gate)
                llm.script(reply)
                before_completes = len(client.completes)
                client.send(
                    f"p{turn}", "session/prompt", {"sessionId": sid, "input": f"turn {turn}"}
                )
                await client.until(reply.at_gate.is_set)
                while True:  # every chunk read: none came for 100 ms
                    seen = client.chunks
                    await asyncio.sleep(0.1)
                    if client.chunks == seen:
                        break
                released = time.perf_counter()
                gate.set()
                await client.until(lambda b=before_completes: len(client.completes) > b)
                gaps.append(client.completes[before_completes] - released)
                await client.until(lambda t=turn: f"p{t}" in client.answers)
            assert proc.stdin is not None
            proc.stdin.close()
            await proc.wait()
    finally:
        llm.stop()
    ms = [g * 1000 for g in gaps]
    return {
        "turns": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p99_ms": round(pct(ms, 99), 3),
        "max_ms": round(max(ms), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--server-python")
    parser.add_argument("--server-repo")
    parser.add_argument("--root", help="the folder for SEMA_ROOT (default: the temp folder)")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(
        f"last events released → message:complete over {result['turns']} turns of "
        f"{args.deltas} deltas: median {result['median_ms']} ms, p99 {result['p99_ms']} ms"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
