"""Which wire models a path creates: `sema-rpc run --yes hi` and a spawned server's
`initialize`.

Prints, per path, how many pydantic classes of `sema_rpc.protocol*` exist when the process
ends (created by importing their module, whether or not a validator was built), how many
of them have a validator built, and which `sema_rpc.protocol*` modules were imported.
Counts, not times: time the same paths with an A/B timer (`bench/agent_llm.py` for the
model server, `../shared/bench/agent sema PORT hi` for the one-shot).

Run: `.venv/bin/python bench/bench_wire_models.py [--python OTHER_VENV/bin/python]`: the
interpreter given (default: this one) runs the paths, so another checkout's venv counts
that checkout's build.
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

HERE = Path(__file__).resolve().parent

# Runs in the measured interpreter: at its end (`os._exit`, which the CLI and the server
# leave by), writes what the classes and modules are.
_DUMP_AT_EXIT = """
import json, os, sys
_exit = os._exit
def _wire_classes():
    from pydantic import BaseModel
    seen, todo = set(), [BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return [c for c in seen if c.__module__.startswith("sema_rpc.protocol")]
def dump_and_exit(code):
    classes = _wire_classes() if "pydantic" in sys.modules else []
    with open(os.environ["SEMA_BENCH_OUT"], "w") as f:
        json.dump({
            "classes": sorted(c.__name__ for c in classes),
            "built": sorted(c.__name__ for c in classes if c.__pydantic_complete__),
            "modules": sorted(m for m in sys.modules if m.startswith("sema_rpc.protocol")),
        }, f)
    _exit(code)
os._exit = dump_and_exit
sys.argv = ["sema-rpc", *sys.argv[1:]]
from sema_rpc.cli import main
main()
"""


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def run_hi(python: str, tmp: Path) -> dict[str, list[str]]:
    port_file = tmp / "port"
    llm = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "agent_llm.py"),
            "--port-file",
            str(port_file),
            "--chunks",
            "3",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline:
                raise RuntimeError("the model server did not start")
            time.sleep(0.05)
        port = port_file.read_text().strip()
        out = tmp / "hi.json"
        home = tmp / "home"
        home.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "SEMA_ROOT": str(home / ".sema"),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": "sk-fake",
            "SEMA_BENCH_OUT": str(out),
        }
        argv = [python, "-c", _DUMP_AT_EXIT, "run", "--yes", "--model", "anthropic/fake-model"]
        subprocess.run([*argv, "hi"], env=env, cwd=tmp, check=True, capture_output=True)
        result: dict[str, list[str]] = json.loads(out.read_text())
        return result
    finally:
        llm.terminate()
        llm.wait()


def run_initialize(python: str, tmp: Path) -> dict[str, list[str]]:
    """A spawned server (Content-Length framing): `initialize`, its answer, then the end
    of its input (the server exits)."""
    out = tmp / "init.json"
    home = tmp / "home-init"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "SEMA_ROOT": str(home / ".sema"),
        "SEMA_BENCH_OUT": str(out),
    }
    proc = subprocess.Popen(
        [python, "-c", _DUMP_AT_EXIT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
    proc.stdin.flush()
    header = proc.stdout.readline()
    if not header.startswith(b"Content-Length"):
        raise RuntimeError(f"no answer to initialize: {header!r}")
    proc.stdin.close()
    proc.wait(timeout=60)
    result: dict[str, list[str]] = json.loads(out.read_text())
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure")
    parser.add_argument("--names", action="store_true", help="list the classes too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows = {"run hi": run_hi(args.python, tmp), "initialize": run_initialize(args.python, tmp)}
    print(f"{'path':<12} {'classes':>8} {'built':>6}  modules")
    for name, row in rows.items():
        modules = " ".join(m.removeprefix("sema_rpc.") for m in row["modules"])
        print(f"{name:<12} {len(row['classes']):>8} {len(row['built']):>6}  {modules}")
        if args.names:
            print("   ", " ".join(row["classes"]))
    summary = {
        name: {"classes": len(r["classes"]), "built": len(r["built"])} for name, r in rows.items()
    }
    print(json.dumps({"bench": "wire_models", **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
