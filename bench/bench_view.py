"""How long `sema-rpc view` takes for a big recording, and whether it stays linear.

    .venv/bin/python bench/bench_view.py [--mb 10]

Writes a synthetic wire transcript of about MB megabytes (turns of streamed thinking and
text in small chunks, tool calls with streamed output and large results, permission
round trips, usage after each response), then runs `sema-rpc view` on it as a user would
(a fresh process) and on half of it, and prints the times and the page size. Linear: the
full file should take about twice the half. The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO


def _write_recording(path: Path, target_bytes: int) -> int:
    sid = "bench-session"
    t = 0.0
    seq = 0
    size = 0
    lines = 0
    request = 0

    with open(path, "w", encoding="utf-8") as f:

        def line(direction: str, msg: dict) -> None:
            nonlocal t, size, lines
            t += 0.001
            text = json.dumps({"t": round(t, 6), "dir": direction, "msg": msg}) + "\n"
            f.write(text)
            size += len(text)
            lines += 1

        def out(method: str, **params: object) -> None:
            nonlocal seq
            seq += 1
            line(
                "out",
                {
                    "jsonrpc": "2.0",
                    "method": method,
                    "params": {"sessionId": sid, "agentId": "main", "seq": seq, **params},
                },
            )

        line(
            "in",
            {"jsonrpc": "2.0", "id": 1, "method": "session/create", "params": {"workingDir": "/w"}},
        )
        out("session:ready", workingDir="/w", model="anthropic/claude-bench", mode="Agent")
        turn = 0
        while size < target_bytes:
            turn += 1
            line(
                "in",
                {
                    "jsonrpc": "2.0",
                    "id": 100 + turn,
                    "method": "session/prompt",
                    "params": {"sessionId": sid, "input": f"Step {turn}: fix the next thing"},
                },
            )
            for i in range(40):
                out("message:thinking:chunk", delta=f"thinking {i} about step {turn}. ")
            for i in range(200):
                out("message:text:chunk", delta=f"word{i} ")
            call = f"toolu_{turn}"
            out("message:complete", content="…", reasoning="…", hasToolCalls=True, toolCalls=[])
            out("tool:execution:start", toolCallId=call, toolName="Bash", title="make test",
                input={"command": "make test"})  # fmt: skip
            request += 1
            rid = f"sema-{request}"
            line(
                "out",
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tool:permission:request",
                    "params": {"sessionId": sid, "agentId": "main", "seq": seq, "requestId": rid,
                               "toolCallId": call, "toolName": "Bash", "title": "Bash: make test",
                               "input": {}, "content": "make test", "options": ["allow_once"]},
                },
            )  # fmt: skip
            line("in", {"jsonrpc": "2.0", "id": rid, "result": {"decision": "allow_once"}})
            for i in range(50):
                out("tool:execution:update", toolCallId=call, toolName="Bash", delta=f"ok {i}\n")
            out("tool:execution:complete", toolCallId=call, toolName="Bash", title="make test",
                summary="Done", content="<pass>\n" * 3000)  # fmt: skip
            out("conversation:usage", usage={"useTokens": 1000 * turn, "maxTokens": 200000})
            line(
                "out",
                {"jsonrpc": "2.0", "id": 100 + turn, "result": {"stopReason": "end_turn"}},
            )
    return lines


def _view(source: Path, target: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sema_rpc", "view", str(source), "-o", str(target)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        full, half = root / "full" / "wire.jsonl", root / "half" / "wire.jsonl"
        full.parent.mkdir()
        half.parent.mkdir()
        lines = _write_recording(full, int(args.mb * 1_000_000))
        _write_recording(half, int(args.mb * 500_000))
        page = root / "page.html"
        t_half = _view(half, page)
        t_full = _view(full, page)
        mb = full.stat().st_size / 1e6
        print(f"recording: {mb:.1f} MB, {lines:,} lines")
        print(f"view (half): {t_half:.2f} s")
        print(f"view (full): {t_full:.2f} s   page {page.stat().st_size / 1e6:.1f} MB")
        print(f"full / half: {t_full / t_half:.2f} (linear: about 2)")
        print(
            json.dumps(
                {
                    "recording_mb": round(mb, 1),
                    "lines": lines,
                    "view_s": round(t_full, 2),
                    "view_half_s": round(t_half, 2),
                    "page_mb": round(page.stat().st_size / 1e6, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
