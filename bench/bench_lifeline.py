"""Nothing outlives the server: processes left after editor sessions ended mid-command,
and what the guardian adds to each command.

    .venv/bin/python bench/bench_lifeline.py [--sessions N] [--commands N] [--quick]

(a) N editor sessions (default 100) ended each way — end of input, SIGTERM, SIGKILL —
    while a Bash command runs five `sleep 300`: one in the foreground, one backgrounded
    with `&`, one `nohup`ed, one `setsid`ed, one double-forked into a new session. Every
    process the server starts carries a marker in its environment; after the end, the
    marked processes still alive at the 2 s deadline (must be 0), and the time until the
    last one was gone (median, p99, max).
(b) The per-command cost of the guardian: `bash -c true` started, run and reaped through
    the guardian (`sema_rpc.core.processes.spawn`) vs started directly in its own session
    (`anyio.open_process(start_new_session=True)`, the path before the guardian), run in
    alternation in one process; median and p99 of each, the added time and the ratio
    (median of the pairwise ratios). The guardian's own start (once per server, on the
    first command) is reported apart.

Figures never fail the script; a process left behind exits 1. The last line is a JSON
summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Checks, Reply, ScriptedLLM, host_header, pct, print_table, server_env

from tests.support.proc_table import MARK_VAR, RawServer, kill_marked, marked, new_mark

MODEL = "anthropic/claude-test"
DEADLINE_S = 2.0
COMMAND = (
    "sleep 300 & "
    "nohup sleep 300 >/dev/null 2>&1 & "
    "setsid sleep 300 >/dev/null 2>&1 & "
    "(setsid sh -c 'sleep 300 & exit' >/dev/null 2>&1 &); "
    "sleep 300"
)
SLEEPS = 5
WAYS = {"eof": None, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}


async def _poll(predicate: Any, timeout_s: float, mark: str) -> tuple[list[Any], float]:
    start = time.monotonic()
    while True:
        procs = marked(mark)
        if predicate(procs) or time.monotonic() - start > timeout_s:
            return procs, time.monotonic() - start
        await asyncio.sleep(0.01)


async def one_session(llm: ScriptedLLM, root: Path, way: str, i: int) -> dict[str, Any]:
    """One editor session ended `way` mid-command: what was left, and when."""
    mark = new_mark()
    sema_root = root / f"{way}-{i}"
    sema_root.mkdir()
    workspace = sema_root / "ws"
    workspace.mkdir()
    env = {**server_env(llm, sema_root), "HOME": str(sema_root), MARK_VAR: mark}
    server = await RawServer(["--jsonl"], env).start()
    try:
        await server.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
        ready = await server.call(
            "session/create",
            {
                "workingDir": str(workspace),
                "model": MODEL,
                "permissionMode": "bypass",
            },
        )
        server.request("session/prompt", {"sessionId": ready["sessionId"], "input": "run"})
        procs, _ = await _poll(
            lambda p: sum(c.startswith("sleep 300") for _, c in p) >= SLEEPS, 60, mark
        )
        started = sum(c.startswith("sleep 300") for _, c in procs)
        sig = WAYS[way]
        if sig is None:
            assert server.proc.stdin is not None
            server.proc.stdin.close()
        else:
            server.proc.send_signal(sig)
        at_deadline, took = await _poll(lambda p: not p, DEADLINE_S, mark)
        left_at_deadline = len(at_deadline)
        final, took_all = await _poll(lambda p: not p, 10, mark)
        return {
            "started": started,
            "left_at_deadline": left_at_deadline,
            "left": len(final),
            "gone_s": took if not at_deadline else took_all,
        }
    finally:
        kill_marked(mark)
        await server.kill()


async def sessions(n: int, parallel: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory(prefix="bench-lifeline-") as tmp:
        root = Path(tmp)
        gate = asyncio.Semaphore(parallel)
        for way in WAYS:

            async def run(i: int, way: str = way) -> dict[str, Any]:
                async with gate:
                    # One reply per session: each is ended while its command runs, so
                    # none asks the model again (the queue is shared, in request order).
                    llm.script(Reply.tools([("Bash", {"command": COMMAND}, f"b{i}")]))
                    return await one_session(llm, root, way, i)

            runs = await asyncio.gather(*(run(i) for i in range(n)))
            gone = [r["gone_s"] for r in runs]
            results[way] = {
                "sessions": n,
                "commands_started": sum(r["started"] for r in runs),
                "left_at_2s": sum(r["left_at_deadline"] for r in runs),
                "left_after_10s": sum(r["left"] for r in runs),
                "gone_median_s": round(statistics.median(gone), 3),
                "gone_p99_s": round(pct(gone, 99), 3),
                "gone_max_s": round(max(gone), 3),
            }
    return results


async def per_command(n: int) -> dict[str, Any]:
    import os
    import subprocess

    import anyio

    from sema_rpc.core.processes import spawn, supervisor

    argv = ["/bin/bash", "-c", "true"]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cwd:

        async def guarded() -> float:
            start = time.perf_counter()
            proc = await spawn(argv, cwd=cwd, env=env)
            async for _ in proc.stdout:
                pass
            await proc.wait()
            await proc.aclose()
            return time.perf_counter() - start

        async def direct() -> float:
            start = time.perf_counter()
            proc = await anyio.open_process(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            assert proc.stdout is not None
            async for _ in proc.stdout:
                pass
            await proc.wait()
            await proc.aclose()
            return time.perf_counter() - start

        first = await guarded()  # includes the guardian's start
        for _ in range(5):  # warm both paths
            await guarded()
            await direct()
        a: list[float] = []
        b: list[float] = []
        for i in range(n):
            if i % 2:
                a.append(await guarded())
                b.append(await direct())
            else:
                b.append(await direct())
                a.append(await guarded())
        supervisor().close()
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return {
        "commands": n,
        "first_command_with_guardian_start_ms": round(first * 1000, 2),
        "guardian_median_ms": round(statistics.median(a) * 1000, 3),
        "guardian_p99_ms": round(pct(a, 99) * 1000, 3),
        "direct_median_ms": round(statistics.median(b) * 1000, 3),
        "direct_p99_ms": round(pct(b, 99) * 1000, 3),
        "added_median_ms": round((statistics.median(a) - statistics.median(b)) * 1000, 3),
        "ratio_median": round(statistics.median(ratios), 3),
    }


async def one_path(via: str, n: int) -> None:
    """`n` commands through one path only (for an outside timer: A/B whole processes)."""
    import os
    import subprocess

    import anyio

    from sema_rpc.core.processes import close_all, spawn

    argv = ["/bin/bash", "-c", "true"]
    env = dict(os.environ)
    for _ in range(n):
        if via == "guardian":
            proc = await spawn(argv, cwd="/", env=env)
            async for _chunk in proc.stdout:
                pass
            await proc.wait()
            await proc.aclose()
        else:
            direct = await anyio.open_process(
                argv,
                cwd="/",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            assert direct.stdout is not None
            async for _chunk in direct.stdout:
                pass
            await direct.wait()
            await direct.aclose()
    close_all()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions per way (100)")
    parser.add_argument("--commands", type=int, default=400, help="command pairs (400)")
    parser.add_argument("--parallel", type=int, default=3, help="sessions at once (3)")
    parser.add_argument("--quick", action="store_true", help="10 sessions, 100 commands")
    parser.add_argument("--only", choices=["sessions", "commands"], default=None)
    parser.add_argument(
        "--via",
        choices=["guardian", "direct"],
        default=None,
        help="only run --commands commands through one path and exit (for an outside A/B timer)",
    )
    args = parser.parse_args()
    if args.via:
        asyncio.run(one_path(args.via, args.commands))
        return 0
    if args.quick:
        args.sessions, args.commands = 10, 100
    host = host_header()
    checks = Checks()
    summary: dict[str, Any] = {"host": host}
    if args.only in (None, "commands"):
        cost = asyncio.run(per_command(args.commands))
        summary["per_command"] = cost
        print_table(
            f"(b) per command: `bash -c true` started, run, reaped ({cost['commands']} pairs)",
            ["path", "median ms", "p99 ms"],
            [
                ["guardian (spawn)", cost["guardian_median_ms"], cost["guardian_p99_ms"]],
                ["direct (own session)", cost["direct_median_ms"], cost["direct_p99_ms"]],
            ],
        )
        print(
            f"  added per command: {cost['added_median_ms']} ms (median); ratio "
            f"guardian/direct {cost['ratio_median']} (median of pairs); the first command, "
            f"guardian start included: {cost['first_command_with_guardian_start_ms']} ms"
        )
    if args.only in (None, "sessions"):
        per_way = asyncio.run(sessions(args.sessions, args.parallel))
        summary["sessions"] = per_way
        rows = []
        for way, r in per_way.items():
            rows.append(
                [
                    way,
                    r["sessions"],
                    r["commands_started"],
                    r["left_at_2s"],
                    r["left_after_10s"],
                    r["gone_median_s"],
                    r["gone_p99_s"],
                    r["gone_max_s"],
                ]
            )
            checks.check(r["left_at_2s"] == 0, f"{way}: {r['left_at_2s']} processes left at 2 s")
            checks.check(
                r["commands_started"] == SLEEPS * r["sessions"],
                f"{way}: {r['commands_started']} of {SLEEPS * r['sessions']} commands started",
            )
        print_table(
            "(a) editor sessions ended mid-command (5 sleeps each, incl. &, nohup, setsid, "
            "double fork)",
            [
                "ended by",
                "sessions",
                "sleeps started",
                "left at 2 s",
                "left at 10 s",
                "all gone median s",
                "p99 s",
                "max s",
            ],
            rows,
        )
    print(json.dumps(summary))
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
