"""How long `message:complete` waits for its message to be on disk, on a 20,000-delta stream.

    .venv/bin/python bench/bench_message_complete.py [--turns N] [--deltas N]
        [--server-python PY --server-repo DIR]    (a baseline build: its venv and checkout)

One server process over real pipes (JSONL) and the scripted model server. Each turn
streams `--deltas` text chunks as fast as the model server writes them, then ends. The
figure per turn is the time from the last `message:text:chunk` to `message:complete`
as the client reads them: the server's end of the response, including (since a client
must be able to trust `message:complete`) writing and syncing the message to the
history file. Median and p99 (nearest rank) over the turns; compare a build with the
baseline in one run (farm-bench A/B), the machine is shared. The last line is JSON.
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

from _common import REPO, Reply, ScriptedLLM, pct, server_env

from tests.support.raw_peer import RawPeer


async def run(args: argparse.Namespace) -> dict[str, float]:
    llm = ScriptedLLM().start()
    gaps: list[float] = []
    arrivals: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "root"
            root.mkdir()
            home = Path(tmp) / "home"
            home.mkdir()
            work = Path(tmp) / "work"
            work.mkdir()
            env = {**server_env(llm, root), "HOME": str(home)}
            peer = RawPeer(
                env,
                "jsonl",
                cwd=Path(args.server_repo) if args.server_repo else REPO,
                python=args.server_python or sys.executable,
            )
            await peer.start()
            original = peer._changed.set

            def stamp() -> None:  # arrival time of the newest message
                last = peer.messages[-1]
                if last.method in ("message:text:chunk", "message:complete"):
                    arrivals[last.method] = time.perf_counter()
                    if last.method == "message:complete":
                        gaps.append(arrivals["message:complete"] - arrivals["message:text:chunk"])
                original()

            peer._changed.set = stamp  # type: ignore[method-assign]
            await peer.call("i", "initialize", {"protocolVersion": 1, "capabilities": {}})
            ready = await peer.call(
                "n",
                "session/create",
                {"workingDir": str(work), "model": "anthropic/claude-bench"},
            )
            sid = ready["sessionId"]
            for turn in range(args.turns):
                llm.script(Reply.text("x" * args.deltas, deltas=args.deltas))
                await peer.call(
                    f"p{turn}",
                    "session/prompt",
                    {"sessionId": sid, "input": f"turn {turn}"},
                    timeout=120,
                )
            await peer.close()
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
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(
        f"last text chunk → message:complete over {result['turns']} turns of "
        f"{args.deltas} deltas: median {result['median_ms']} ms, p99 {result['p99_ms']} ms"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
