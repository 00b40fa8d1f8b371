"""What the recorder costs the server per outgoing chunk.

    .venv/bin/python bench/bench_recorder.py [--chunks N]

The server hands every outgoing message to the recorder, tagged with its session. Three
cases, per `message:text:chunk` of ~300 bytes (mean of N calls, in process):

1. nothing is recorded (the common case);
2. another session is recorded (`session/create {recordDir}`): this chunk is not;
3. this chunk's session is recorded: parsed, redacted and written to its transcript.

Cases 1 and 2 must not parse the message (target: within 3x of case 1, and far below 3).
The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import timeit
from pathlib import Path

from _common import REPO  # noqa: F401  (puts the repository on sys.path)

from sema_rpc.record.recorder import TranscriptRecorder


def _recording(root: Path, session_id: str) -> TranscriptRecorder:
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    recorder = TranscriptRecorder()
    create = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/create",
        "params": {"workingDir": str(workspace), "recordDir": str(root / "rec")},
    }
    recorder.record_in(json.dumps(create).encode())
    recorder.record_out(
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session_id}}).encode()
    )
    return recorder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=200_000)
    n = parser.parse_args().chunks
    params = {"sessionId": "B", "agentId": "main", "seq": 1, "delta": "x" * 200}
    chunk = json.dumps(
        {"jsonrpc": "2.0", "method": "message:text:chunk", "params": params}, separators=(",", ":")
    ).encode()
    with tempfile.TemporaryDirectory() as tmp:
        idle = TranscriptRecorder()
        other = _recording(Path(tmp) / "a", "A")
        this = _recording(Path(tmp) / "b", "B")
        figures = {
            "nothing_recorded_ns": timeit.timeit(lambda: idle.record_out(chunk, "B"), number=n),
            "other_session_recorded_ns": timeit.timeit(
                lambda: other.record_out(chunk, "B"), number=n
            ),
            "this_session_recorded_ns": timeit.timeit(
                lambda: this.record_out(chunk, "B"), number=max(1, n // 10)
            )
            * 10,
        }
        for recorder in (idle, other, this):
            recorder.close()
    figures = {k: round(v / n * 1e9) for k, v in figures.items()}
    for name, value in figures.items():
        print(f"{name.removesuffix('_ns').replace('_', ' '):28} {value:8d} ns per chunk")
    ok = figures["other_session_recorded_ns"] <= 3 * figures["nothing_recorded_ns"]
    print(f"{'PASS' if ok else 'MISS'}: a chunk of a session that is not recorded is not parsed")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
