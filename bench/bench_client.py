"""Notifications per second at the Python client (`sema_client`) for a 20,000-delta answer.

    .venv/bin/python bench/bench_client.py [--runs N] [--deltas N] [--content-length] [--live]

"At a client" means here what an application built on `sema_client` sees: a server
spawned by `SemaClient.spawn` (`python -m sema_rpc --jsonl`, real pipes), the answer
streamed by the scripted model server (`bench/agent_llm.py --prerender`, its own
process, Anthropic format: the answer rendered once and sent whole, so the model
server's own per-event work is not in the figures; `--live` renders each event as it is
sent), and every text chunk consumed as a typed event (`TextChunkParams`) from
`client.notifications(session_id)`. Figures per run (after one warm-up answer on the
same session): `notif/s` = deltas / (prompt sent → last chunk consumed), `span/s` = the
rate between the first and the last chunk consumed, the server's CPU per chunk (from
/proc) and this process's CPU (the client's). Best and median of N runs. The client and
the server are the ones of the interpreter that runs the script (run it with another
checkout's `.venv/bin/python` for that build's figures). A functional break (a wrong
count, text or `seq`) exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sema_client import SemaClient

from sema_rpc.protocol import TextChunkParams

HERE = Path(__file__).resolve().parent
CHUNK = "word "


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_answer(client: SemaClient, sid: str, deltas: int, chunk: str) -> dict[str, float]:
    pid = client.process.pid if client.process is not None else 0
    server0 = cpu_seconds(pid)
    own0 = time.process_time()
    count = 0
    last_seq = None
    parts: list[str] = []
    first = last = 0.0
    async with client.notifications(sid) as events:
        t0 = time.monotonic()
        answer = asyncio.ensure_future(client.prompt(sid, "hi", timeout=120))
        async for event in events:
            if event.event == "message:text:chunk":
                if not isinstance(event, TextChunkParams):
                    sys.exit(f"a text chunk arrived untyped: {event!r}")
                if last_seq is not None and event.seq != last_seq + 1:
                    sys.exit(f"seq jumped from {last_seq} to {event.seq}")
                last_seq = event.seq
                parts.append(event.delta)
                count += 1
                last = time.monotonic()
                if count == 1:
                    first = last
                if count == deltas:
                    break
        result = await answer
    server = cpu_seconds(pid) - server0
    own = time.process_time() - own0
    if result.stop_reason != "end_turn" or "".join(parts) != chunk * deltas:
        sys.exit(f"wrong answer: {result.stop_reason}, {count} chunks")
    return {
        "notif_per_s": deltas / (last - t0),
        "span_per_s": (deltas - 1) / (last - first),
        "server_us": server / deltas * 1e6,
        "client_us": own / deltas * 1e6,
    }


async def measure(
    port: str, tmp: str, runs: int, deltas: int, jsonl: bool
) -> list[dict[str, float]]:
    workspace = Path(tmp) / "ws"
    workspace.mkdir()
    env = {
        "HOME": tmp,
        "SEMA_ROOT": str(Path(tmp) / "root"),
        "ANTHROPIC_API_KEY": "sk-bench",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "SEMA_LOG_LEVEL": "WARNING",
    }
    argv = [sys.executable, "-m", "sema_rpc", *(["--jsonl"] if jsonl else [])]
    client = await SemaClient.spawn(argv, env=env, jsonl=jsonl)
    try:
        await client.initialize(client_info="bench_client")
        ready = await client.create_session(workspace, model="anthropic/fake-model")
        await one_answer(client, ready.session_id, deltas, CHUNK)  # warm-up
        return [await one_answer(client, ready.session_id, deltas, CHUNK) for _ in range(runs)]
    finally:
        await client.close()


def main(runs: int, deltas: int, jsonl: bool, live: bool = False) -> None:
    prerender = [] if live else ["--prerender"]
    with tempfile.TemporaryDirectory(prefix="sema-bench-client-") as tmp:
        port_file = Path(tmp) / "port"
        script = [sys.executable, str(HERE / "agent_llm.py"), "--port-file", str(port_file)]
        llm = subprocess.Popen(
            [*script, "--chunks", str(deltas), "--chunk", CHUNK, *prerender],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(1000):
                if port_file.exists():
                    break
                time.sleep(0.01)
            rows = asyncio.run(measure(port_file.read_text().strip(), tmp, runs, deltas, jsonl))
        finally:
            llm.terminate()
            llm.wait()
    framing = "jsonl" if jsonl else "content-length"
    source = "rendered as sent" if live else "pre-rendered"
    print(
        f"sema_client over pipes ({framing}), {deltas} deltas ({source}), {runs} runs, "
        f"{sys.executable}"
    )
    for key, label in (
        ("notif_per_s", "notif/s (prompt sent -> last chunk)"),
        ("span_per_s", "span/s (first -> last chunk)"),
    ):
        values = [r[key] for r in rows]
        print(f"  {label:40s} best {max(values):9.0f}  median {statistics.median(values):9.0f}")
    for key, label in (("server_us", "server CPU us/chunk"), ("client_us", "client CPU us/chunk")):
        values = [r[key] for r in rows]
        print(f"  {label:40s} best {min(values):9.2f}  median {statistics.median(values):9.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--content-length", action="store_true", help="Content-Length framing")
    parser.add_argument(
        "--live", action="store_true", help="the model server renders each event as it sends it"
    )
    args = parser.parse_args()
    main(args.runs, args.deltas, not args.content_length, args.live)
