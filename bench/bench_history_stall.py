"""History writes against another session's stream: does one session's persistence stall another's?

    .venv/bin/python bench/bench_history_stall.py [--quick] [--runs N] [--root DIR]

One server process over real pipes, the Anthropic SDK and the scripted model server.
Session B streams a text answer whose deltas the model server paces 2 ms apart. While
it streams, session A works through tool rounds as fast as the model server answers
(each round a `Glob` call and its result: two history entries, each written and synced
to disk). The model server notes when it wrote each of B's deltas and the client when
the matching `message:text:chunk` arrived (one clock: both run in this process); the
figure is that delay per chunk (p50, p99, max) while A is appending, next to B
streaming alone, and the p99 gap between consecutive chunks. Anything the server does on its event loop while A appends
(a sync to disk on a slow moment, ~0.2 ms typical, 10+ ms at the 99th percentile on
a shared virtual disk) shows up as a longer gap for B.

`--root DIR` puts `SEMA_ROOT` (where the history files go) on another filesystem: a
temp dir on tmpfs hides the sync cost, a slow disk shows it. The figures are wall-clock
and noisy on a busy machine: compare medians of several runs on the same host.
The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from _common import (
    Checks,
    Reply,
    ScriptedLLM,
    WireClient,
    host_header,
    pct,
    print_table,
    round_sig,
    server_env,
)

MODEL = "bench"
PACE_S = 0.002
checks = Checks()


def setup(root: Path) -> Path:
    (root / "models.json").write_text(
        json.dumps(
            {
                "profiles": {
                    MODEL: {
                        "provider": "anthropic",
                        "modelName": "claude-bench",
                        "contextLength": 100_000_000,
                    }
                },
                "pointers": {"main": MODEL},
            }
        )
    )
    workspace = root / "workspace"
    workspace.mkdir()
    for i in range(5):
        (workspace / f"m{i}.py").write_text(f"X = {i}\n")
    return workspace


def gaps_ms(times: list[float]) -> list[float]:
    return [(b - a) * 1000 for a, b in pairwise(times)]


def sent_deltas(reply: Reply) -> dict[str, float]:
    """Delta text → when the model server wrote it (the deltas `w0 `, `w1 `, ... are unique)."""
    out: dict[str, float] = {}
    for at, piece in reply.sent:
        for line in piece.split(b"\n"):
            if line.startswith(b"data: ") and b"text_delta" in line:
                out[json.loads(line[6:])["delta"]["text"]] = at
    return out


async def one_run(
    client: WireClient, llm: ScriptedLLM, workspace: Path, chunks: int, rounds: int | None
) -> dict[str, Any]:
    """B streams `chunks` paced deltas; A (unless `rounds` is None) runs tool rounds
    meanwhile. Returns B's chunk gaps while A was active (or over the whole stream)."""
    b = (await client.create_session(workspace, model=MODEL))["sessionId"]
    a = (await client.create_session(workspace, model=MODEL))["sessionId"]
    llm.reset()
    stream = Reply.text(deltas=chunks, delay_s=PACE_S)
    llm.script(stream)
    b_prompt = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": b, "input": "stream"}, timeout=120)
    )
    await asyncio.to_thread(llm.wait_for_requests, 1, 20)
    await client.wait_for("message:text:chunk", lambda p: p.get("sessionId") == b)
    window: tuple[float, float] | None = None
    appended = 0
    if rounds is not None:
        llm.script(*[Reply.tools([("Glob", {"pattern": "*.py"})]) for _ in range(rounds)])
        llm.script(Reply.text("A is done."))
        t0 = time.monotonic()
        result = await client.call("session/prompt", {"sessionId": a, "input": "work"}, timeout=120)
        window = (t0, time.monotonic())
        checks.check(result["stopReason"] == "end_turn", f"session A: {result}")
        appended = 2 + 2 * rounds  # the input, each response and each batch's results, the answer
    result = await b_prompt
    checks.check(result["stopReason"] == "end_turn", f"session B: {result}")
    received = client.events("message:text:chunk", b)
    checks.check(len(received) == chunks, f"session B: {len(received)} of {chunks} chunks")
    sent = sent_deltas(stream)
    if window is not None:
        inside = [r for r in received if window[0] <= r.at <= window[1]]
        checks.check(
            len(inside) > chunks // 10,
            f"B streamed only {len(inside)} chunks while A worked: make B's answer longer",
        )
        received = inside
    delays = [
        (r.at - sent[r.params["delta"]]) * 1000 for r in received if r.params["delta"] in sent
    ]
    checks.check(len(delays) == len(received), "every chunk matched its delta")
    return {
        "delays": delays,
        "gaps": gaps_ms([r.at for r in received]),
        "a_ms": (window[1] - window[0]) * 1000 if window else None,
        "appended": appended,
    }


async def main(args: argparse.Namespace) -> int:
    summary: dict[str, Any] = {"host": host_header()}
    rounds = 40 if args.quick else 90  # under the 100-request turn limit
    chunks = 600 if args.quick else 1500
    with tempfile.TemporaryDirectory(prefix="bench-stall-", dir=args.root) as tmp:
        root = Path(tmp)
        workspace = setup(root)
        print(f"SEMA_ROOT on {root} (history files are synced there)")
        with ScriptedLLM() as llm:
            client = WireClient(env=server_env(llm, root))
            await client.start()
            try:
                await client.initialize()
                # warm-up: the SDK import and the first connection
                await one_run(client, llm, workspace, 50, 5)
                alone = [await one_run(client, llm, workspace, 300, None) for _ in range(args.runs)]
                busy = [
                    await one_run(client, llm, workspace, chunks, rounds) for _ in range(args.runs)
                ]
            finally:
                await client.close()
    rows = []
    for label, runs in (("B alone", alone), (f"B while A appends ({rounds} rounds)", busy)):
        p50 = statistics.median(pct(r["delays"], 50) for r in runs)
        p99 = statistics.median(pct(r["delays"], 99) for r in runs)
        worst = statistics.median(max(r["delays"]) for r in runs)
        gap99 = statistics.median(pct(r["gaps"], 99) for r in runs)
        appended = runs[0]["appended"]
        a_ms = statistics.median(r["a_ms"] for r in runs) if runs[0]["a_ms"] else None
        rate = appended / (a_ms / 1000) if a_ms else None
        rows.append([label, p50, p99, worst, gap99, rate])
        summary[label.split(" (")[0].replace(" ", "_")] = {
            "delay_p50_ms": round_sig(p50),
            "delay_p99_ms": round_sig(p99),
            "delay_max_ms": round_sig(worst),
            "gap_p99_ms": round_sig(gap99),
            "a_appends_per_s": round_sig(rate),
        }
    print_table(
        f"session B: model server → client delay per chunk (deltas paced {PACE_S * 1000:g} ms "
        f"apart; median of {args.runs} runs)",
        ["", "delay p50 ms", "p99 ms", "max ms", "gap p99 ms", "A history appends/s"],
        rows,
    )
    return checks.finish(summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario (median)")
    parser.add_argument("--root", default=None, help="parent folder of SEMA_ROOT")
    raise SystemExit(asyncio.run(main(parser.parse_args())))
