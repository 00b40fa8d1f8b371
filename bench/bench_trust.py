"""What the trust gate costs: one `sema-rpc --jsonl` server, one measured step, then exit.

Modes (one process run each; time whole runs from outside, A against B, to compare):

- `session`: `initialize`, then `session/create` in a fresh temporary project (model
  `replay/demo`: no key, no network), timed from the request to the `session:ready`
  notification. `--project-server` gives the project a `.sema/mcp.json` with one server
  (`sh -c 'touch <marker>'`), untrusted: the gate holds it (listed `untrusted`, never
  started). Compare `session --project-server` with `session` for the added start-up
  time of a session in an untrusted project.
- `initialize`: spawn → `initialize` answered. Run it with two interpreters (this
  checkout's and a baseline's) to compare.

`--python PY` runs the server under PY (default: this interpreter), with `-P` and a
temporary working directory, so the `sema_rpc` it imports is PY's install. Prints one JSON
line: the mode, the measured milliseconds and, for `session`, the project server's
state and whether its marker appeared (it must not).

Run: `.venv/bin/python bench/bench_trust.py session --project-server`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _read_until(proc: subprocess.Popen[bytes], match: Any) -> dict[str, Any]:
    assert proc.stdout is not None
    for line in proc.stdout:
        message = json.loads(line)
        if match(message):
            return message
    raise SystemExit(f"the server ended before the expected message: {proc.wait()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["session", "initialize"])
    parser.add_argument("--project-server", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="sema-bench-trust-") as tmp:
        root, project = Path(tmp, "sema-root"), Path(tmp, "project")
        root.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# bench\n")
        marker = Path(tmp, "project-server-ran")
        if args.project_server:
            (project / ".sema").mkdir()
            server = {"command": "sh", "args": ["-c", f"touch {marker}"], "env": {"A": "1"}}
            (project / ".sema" / "mcp.json").write_text(json.dumps({"mcpServers": {"x": server}}))
        env = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
            "HOME": tmp,
            "SEMA_ROOT": str(root),
        }
        started = time.perf_counter()
        proc = subprocess.Popen(
            [args.python, "-P", "-m", "sema_rpc", "--jsonl"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=tmp,
            env=env,
        )
        try:
            _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            _read_until(proc, lambda m: m.get("id") == 1)
            result: dict[str, Any] = {"mode": args.mode}
            if args.mode == "initialize":
                result["initialize_ms"] = round((time.perf_counter() - started) * 1000, 2)
            else:
                sent = time.perf_counter()
                _send(
                    proc,
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "session/create",
                        "params": {"workingDir": str(project), "model": "replay/demo"},
                    },
                )
                ready = _read_until(proc, lambda m: m.get("method") == "session:ready")
                result["create_to_ready_ms"] = round((time.perf_counter() - sent) * 1000, 2)
                servers = ready["params"]["mcpServers"]
                result["project_server"] = servers[0]["state"] if servers else None
                result["marker"] = marker.exists()
            _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            _read_until(proc, lambda m: m.get("id") == 3)
            _send(proc, {"jsonrpc": "2.0", "method": "exit"})
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
