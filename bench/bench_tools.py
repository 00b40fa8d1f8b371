"""Tool-execution figures for sema-rpc over real pipes, against the scripted model server.

    .venv/bin/python bench/bench_tools.py [--quick]

(a) 8 Reads of ~200 KB files: one model response with all 8 (a read-only batch, run
    concurrently by the engine) vs 8 consecutive responses of one Read each (serial).
    Prompt wall time (median of runs, a fresh session each), the tool span, the bytes
    the model server received, and the serial/batch ratio.
(b) The permission round trip: the client declares `{"permissions": true}` and answers
    every `tool:permission:request` with `allow_once`; the model asks for N Write calls
    (and N Bash `touch` calls) in one response, which the engine runs serially. Per-call
    latencies from the notifications' and requests' arrival times, and the overhead per
    call against the same calls in a `permissionMode: "bypass"` session (no request).

Figures never fail the script; a functional break (error answers, missing results or
permission requests, files not written) exits 1. The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    Checks,
    Reply,
    RpcFailure,
    ScriptedLLM,
    WireClient,
    close_client,
    host_header,
    median,
    pct,
    print_table,
    round_sig,
    server_env,
    vm_hwm_kb,
)

MODEL = "anthropic/claude-bench"
N_FILES = 8
LINES = 2000  # Read returns at most 2000 lines and 256 KB: the whole file
LINE = "{n:05d} " + "x" * 93 + "\n"  # 100 bytes a line → 200 KB a file
READ_RUNS = 3
N_PERM = 50
PERMISSION_KEYS = {"toolCallId", "toolName", "title", "input", "content", "options"}

checks = Checks()


def ms(a: float, b: float) -> float:
    return (b - a) * 1000


def by_call(client: WireClient, method: str, sid: str, since: int) -> dict[str, float]:
    return {
        r.params["toolCallId"]: r.at
        for r in client.received[since:]
        if r.method == method and r.params.get("sessionId") == sid
    }


def model_request_bytes(llm: ScriptedLLM, since: int) -> int:
    return sum(len(json.dumps(r.body)) for r in llm.requests[since:])


# --------------------------------------------------------------------------- (a) reads


async def prompt_reads(
    client: WireClient, llm: ScriptedLLM, workspace: Path, batch: bool
) -> dict[str, Any]:
    sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
    reads = [("Read", {"file_path": f"data/f{i}.txt"}) for i in range(N_FILES)]
    if batch:
        llm.script(Reply.tools(reads), Reply.text("Read them all."))
    else:
        llm.script(*[Reply.tools([r]) for r in reads], Reply.text("Read them all."))
    mark, req_mark = len(client.received), len(llm.requests)
    t0 = time.monotonic()
    result = await client.call(
        "session/prompt", {"sessionId": sid, "input": "read the files"}, timeout=60
    )
    wall = time.monotonic() - t0

    tag = "batch" if batch else "serial"
    completes = by_call(client, "tool:execution:complete", sid, mark)
    errors = [
        r.params.get("content")
        for r in client.received[mark:]
        if r.method == "tool:execution:error"
    ]
    checks.check(result.get("stopReason") == "end_turn", f"reads {tag}: prompt ended {result}")
    checks.check(not errors, f"reads {tag}: tool errors {errors[:2]}")
    checks.check(
        len(completes) == N_FILES,
        f"reads {tag}: {len(completes)} Read completions, expected {N_FILES}",
    )
    checks.check(
        len(llm.requests) - req_mark == (2 if batch else N_FILES + 1),
        f"reads {tag}: {len(llm.requests) - req_mark} model requests",
    )
    last = llm.requests[-1].body
    sent = json.dumps(last["messages"])
    checks.check(
        "00001 xxxx" in sent and f"{LINES:05d} xxxx" in sent,
        f"reads {tag}: whole files not sent back to the model",
    )

    seqs: dict[str, list[int]] = {"tool:execution:start": [], "tool:execution:complete": []}
    for r in client.received[mark:]:
        if r.method in seqs and r.params.get("sessionId") == sid:
            seqs[r.method].append(r.params["seq"])
    overlapped = all(seqs.values()) and max(seqs["tool:execution:start"]) < min(
        seqs["tool:execution:complete"]
    )
    # Engine time between model requests, on the scripted server's clock (same process,
    # same monotonic clock): stream the scripted reply + run the Reads + build and send the
    # next request. Unaffected by how fast the client drains the (large) notifications.
    req_at = [r.at for r in llm.requests[req_mark:]]
    between = sum(b - a for a, b in itertools.pairwise(req_at)) * 1000
    notif_bytes = sum(len(json.dumps(r.message)) for r in client.received[mark:])
    return {
        "wall_ms": wall * 1000,
        "between_ms": between,
        "model_bytes": model_request_bytes(llm, req_mark),
        "notif_bytes": notif_bytes,
        "overlapped": overlapped,
    }


async def bench_reads(env: dict[str, str], llm: ScriptedLLM, workspace: Path) -> dict[str, Any]:
    data = workspace / "data"
    data.mkdir()
    body = "".join(LINE.format(n=n) for n in range(1, LINES + 1))
    for i in range(N_FILES):
        (data / f"f{i}.txt").write_text(body)
    file_kb = len(body) / 1024

    out: dict[str, Any] = {"file_kb": file_kb}
    client = WireClient(env=env, jsonl=True)
    try:
        await client.start()
        await client.initialize()
        warm = (await client.create_session(workspace, model=MODEL))["sessionId"]
        llm.script(Reply.tools([("Read", {"file_path": "data/f0.txt"})]), Reply.text("ok"))
        await client.call("session/prompt", {"sessionId": warm, "input": "warm up"}, timeout=60)
        runs: dict[str, list[dict[str, Any]]] = {"batch": [], "serial": []}
        for _ in range(READ_RUNS):
            for name in ("batch", "serial"):  # interleaved, so drift hits both alike
                runs[name].append(await prompt_reads(client, llm, workspace, batch=name == "batch"))
        out["rss_kb"] = vm_hwm_kb(client.proc.pid if client.proc else None)
    finally:
        await close_client(client)
    for name, rs in runs.items():
        out[name] = {
            "wall_ms": median([r["wall_ms"] for r in rs]),
            "between_ms": median([r["between_ms"] for r in rs]),
            "model_bytes": rs[0]["model_bytes"],
            "notif_bytes": rs[0]["notif_bytes"],
            "overlapped": all(r["overlapped"] for r in rs),
        }
    out["ratio"] = out["serial"]["wall_ms"] / out["batch"]["wall_ms"]
    out["between_ratio"] = out["serial"]["between_ms"] / out["batch"]["between_ms"]
    return out


# --------------------------------------------------------------------------- (b) permissions


class Editor:
    """Answers every permission request `allow_once`; timestamps arrival and answer."""

    def __init__(self) -> None:
        self.asked: dict[str, dict[str, Any]] = {}
        self.answered_at: dict[str, float] = {}
        self.bad: list[str] = []

    def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "tool:permission:request":
            self.bad.append(method)
            return {}
        call_id = params.get("toolCallId", f"?{len(self.asked)}")
        self.asked[call_id] = params
        self.answered_at[call_id] = time.monotonic()  # WireClient sends right after we return
        return {"decision": "allow_once"}


def calls_for(kind: str, tag: str) -> list[tuple[str, dict[str, Any]]]:
    if kind == "Write":
        return [
            ("Write", {"file_path": f"{tag}/w{i:03d}.txt", "content": f"file {i}\n"})
            for i in range(N_PERM)
        ]
    return [("Bash", {"command": f"touch {tag}/b{i:03d}.txt"}) for i in range(N_PERM)]


async def permission_run(
    client: WireClient, editor: Editor, llm: ScriptedLLM, workspace: Path, kind: str, mode: str
) -> dict[str, Any]:
    tag = f"{kind.lower()}-{mode}"
    (workspace / tag).mkdir()
    sid = (await client.create_session(workspace, model=MODEL, permissionMode=mode))["sessionId"]
    llm.script(Reply.tools(calls_for(kind, tag)), Reply.text("Done."))
    mark, req_mark = len(client.received), len(client.server_requests)
    t0 = time.monotonic()
    result = await client.call(
        "session/prompt", {"sessionId": sid, "input": f"{kind} {N_PERM} files"}, timeout=120
    )
    wall = time.monotonic() - t0

    starts = by_call(client, "tool:execution:start", sid, mark)
    completes = by_call(client, "tool:execution:complete", sid, mark)
    errors = [
        r.params.get("content")
        for r in client.received[mark:]
        if r.method == "tool:execution:error"
    ]
    requests = {
        r.params.get("toolCallId"): r.at
        for r in client.server_requests[req_mark:]
        if r.params.get("sessionId") == sid
    }
    label = f"{kind} ({mode})"
    checks.check(result.get("stopReason") == "end_turn", f"{label}: prompt ended {result}")
    checks.check(not errors, f"{label}: tool errors, e.g. {errors[:1]}")
    checks.check(
        len(completes) == N_PERM, f"{label}: {len(completes)} completions, expected {N_PERM}"
    )
    written = len(list((workspace / tag).iterdir()))
    checks.check(written == N_PERM, f"{label}: {written} files on disk, expected {N_PERM}")
    if mode == "bypass":
        checks.check(not requests, f"{label}: {len(requests)} permission requests in bypass mode")
    else:
        checks.check(
            len(requests) == N_PERM,
            f"{label}: {len(requests)} permission requests, expected {N_PERM}",
        )
        for params in list(editor.asked.values())[-len(requests) :][:1]:
            missing = PERMISSION_KEYS - params.keys()
            checks.check(not missing, f"{label}: permission request lacks {sorted(missing)}")

    ids = [k for k in completes if k in starts]
    row: dict[str, Any] = {
        "wall_ms": wall * 1000,
        "per_call_ms": [ms(starts[k], completes[k]) for k in ids],
        "gap_ms": [],
    }
    ordered = sorted(ids, key=lambda k: starts[k])
    row["gap_ms"] = [ms(completes[a], starts[b]) for a, b in itertools.pairwise(ordered)]
    if requests:
        asked = [k for k in ids if k in requests and k in editor.answered_at]
        row["start_to_request_ms"] = [ms(starts[k], requests[k]) for k in asked]
        row["request_to_answer_ms"] = [ms(requests[k], editor.answered_at[k]) for k in asked]
        row["answer_to_complete_ms"] = [ms(editor.answered_at[k], completes[k]) for k in asked]
        row["request_to_complete_ms"] = [ms(requests[k], completes[k]) for k in asked]
    return row


async def bench_permissions(
    env: dict[str, str], llm: ScriptedLLM, workspace: Path
) -> dict[str, Any]:
    editor = Editor()
    client = WireClient(env=env, jsonl=True, on_server_request=editor)
    out: dict[str, Any] = {}
    try:
        await client.start()
        await client.initialize(permissions=True)
        warm = (await client.create_session(workspace, model=MODEL))["sessionId"]
        llm.script(Reply.text("ok"))
        await client.call("session/prompt", {"sessionId": warm, "input": "warm up"}, timeout=60)
        for kind in ("Write", "Bash"):
            for mode in ("default", "bypass"):
                out[f"{kind} {mode}"] = await permission_run(
                    client, editor, llm, workspace, kind, mode
                )
        out["rss_kb"] = vm_hwm_kb(client.proc.pid if client.proc else None)
    finally:
        await close_client(client)
    checks.check(not editor.bad, f"unexpected server requests: {editor.bad}")
    return out


# --------------------------------------------------------------------------- main


async def main(quick: bool) -> int:
    global READ_RUNS, N_PERM
    if quick:
        READ_RUNS, N_PERM = 1, 10
    summary: dict[str, Any] = {"bench": "tools", "host": host_header()}
    with tempfile.TemporaryDirectory(prefix="sema-bench-tools-") as tmp, ScriptedLLM() as llm:
        root = Path(tmp) / "sema-root"
        root.mkdir()
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        # 8 × 200 KB of Read results is ~430k tokens: with the default 128k window the engine
        # would (rightly) compact before the next request. A profile under the same model
        # name with a 2M-token window keeps the measurement about running tools.
        (root / "models.json").write_text(
            json.dumps(
                {
                    "profiles": {
                        MODEL: {
                            "provider": "anthropic",
                            "modelName": MODEL.split("/", 1)[1],
                            "contextLength": 2_000_000,
                        }
                    }
                }
            )
        )
        env = server_env(llm, root)

        # ---- (a)
        try:
            reads = await bench_reads(env, llm, workspace)
        except (RpcFailure, TimeoutError, OSError, AssertionError, KeyError) as exc:
            checks.section_failed("reads", exc)
            reads = None
            llm.reset()
        if reads:
            b, s = reads["batch"], reads["serial"]
            print_table(
                f"(a) {N_FILES} Reads of {reads['file_kb']:.0f} KB files (median of {READ_RUNS}; wall = prompt sent → answered)",
                [
                    "",
                    "wall ms",
                    "engine ms",
                    "model requests",
                    "bytes to model",
                    "notif bytes to client",
                    "ran concurrently",
                ],
                [
                    [
                        "1 response × 8 Reads (batch)",
                        b["wall_ms"],
                        b["between_ms"],
                        2,
                        b["model_bytes"],
                        b["notif_bytes"],
                        "yes" if b["overlapped"] else "NO",
                    ],
                    [
                        "8 responses × 1 Read (serial)",
                        s["wall_ms"],
                        s["between_ms"],
                        N_FILES + 1,
                        s["model_bytes"],
                        s["notif_bytes"],
                        "-",
                    ],
                    [
                        "serial / batch",
                        reads["ratio"],
                        reads["between_ratio"],
                        None,
                        s["model_bytes"] / max(1, b["model_bytes"]),
                        None,
                        "",
                    ],
                ],
            )
            print(
                "  engine ms = first → last model request arriving at the scripted server (stream the reply, run\n"
                "  the Reads, build + send the next request); wall adds the first request and draining the\n"
                "  notifications (each Read's tool:execution:complete carries the whole numbered file)"
            )
            summary["reads"] = {
                "batch_ms": round_sig(b["wall_ms"]),
                "serial_ms": round_sig(s["wall_ms"]),
                "ratio": round_sig(reads["ratio"]),
                "engine_batch_ms": round_sig(b["between_ms"]),
                "engine_serial_ms": round_sig(s["between_ms"]),
                "concurrent": b["overlapped"],
            }

        # ---- (b)
        try:
            perms = await bench_permissions(env, llm, workspace)
        except (RpcFailure, TimeoutError, OSError, AssertionError, KeyError) as exc:
            checks.section_failed("permissions", exc)
            perms = None
            llm.reset()
        if perms:
            rows = []
            for key, r in perms.items():
                if key == "rss_kb":
                    continue
                rows.append(
                    [
                        key,
                        r["wall_ms"] / N_PERM,
                        median(r["per_call_ms"]),
                        pct(r["per_call_ms"], 99),
                        median(r["gap_ms"]),
                        median(r.get("start_to_request_ms", [])),
                        median(r.get("request_to_answer_ms", [])),
                        median(r.get("answer_to_complete_ms", [])),
                        pct(r.get("answer_to_complete_ms", []), 99),
                        median(r.get("request_to_complete_ms", [])),
                        pct(r.get("request_to_complete_ms", []), 99),
                    ]
                )
            print_table(
                f"(b) {N_PERM} serial calls in one model response; client answers allow_once (all ms)",
                [
                    "",
                    "wall/call",
                    "start→done p50",
                    "p99",
                    "gap p50",
                    "start→req p50",
                    "req→ans p50",
                    "ans→done p50",
                    "p99",
                    "req→done p50",
                    "p99",
                ],
                rows,
            )
            print(
                "  start/done = tool:execution:start/complete arrival; req = tool:permission:request arrival;\n"
                "  ans = the client's answer sent; gap = previous call's done → next call's start"
            )
            overhead = {}
            for kind in ("Write", "Bash"):
                ask, free = perms.get(f"{kind} default"), perms.get(f"{kind} bypass")
                if ask and free:
                    overhead[kind] = median(ask["per_call_ms"]) - median(free["per_call_ms"])
            print(
                "  permission overhead per call (p50 start→done, default − bypass): "
                + ", ".join(f"{k} {v:.2f} ms" for k, v in overhead.items())
            )
            w = perms.get("Write default", {})
            summary["permissions"] = {
                "n": N_PERM,
                "write_req_to_done_p50_ms": round_sig(median(w.get("request_to_complete_ms", []))),
                "write_req_to_done_p99_ms": round_sig(pct(w.get("request_to_complete_ms", []), 99)),
                "write_ans_to_done_p50_ms": round_sig(median(w.get("answer_to_complete_ms", []))),
                "overhead_per_call_ms": {k: round_sig(v) for k, v in overhead.items()},
                "peak_rss_mb": round_sig((perms.get("rss_kb") or 0) / 1024),
            }
    return checks.finish(summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, 10 permission calls")
    args = parser.parse_args()
    os.chdir(REPO)
    sys.exit(asyncio.run(main(args.quick)))
