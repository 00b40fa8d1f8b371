"""What a path loads of the wire's models: `sema-rpc run` answering `hi`, the same with a
tool call, and a spawned server's `initialize`. The running code builds the models' plain
forms (protocol_plain/); their pydantic declarations (and pydantic) load only for input
that is not plainly valid. These tests read `sys.modules` and the classes that exist
when the process ends, never a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]

DECLARATIONS = {
    "sema_rpc.protocol_wire",
    "sema_rpc.protocol_events",
    "sema_rpc.protocol_tools",
    "sema_rpc.protocol_settings",
    "sema_rpc.protocol_sessions",
    "sema_rpc.core.messages_schema",
    "sema_rpc.tools.input_models",
}
"""The pydantic declarations of the wire's and the conversation's models, and of the
built-in tools' inputs."""

# Runs the real command line in this interpreter; at its end (`os._exit`, which the CLI
# and the server leave by) writes the protocol's modules and the wire classes created.
_DUMP_AT_EXIT = """
import json, os, sys
_exit = os._exit
def dump_and_exit(code):
    classes = {}
    wire = sys.modules.get("sema_rpc.protocol_wire")
    todo = [wire.WireModel] if wire else []
    while todo:
        c = todo.pop()
        classes[c.__name__] = c.__module__
        todo += c.__subclasses__()
    with open(os.environ["SEMA_TEST_OUT"], "w") as f:
        json.dump({
            "modules": sorted(m for m in sys.modules
                              if m.startswith(("sema_rpc.protocol", "sema_rpc.core.messages",
                                               "sema_rpc.tools.input"))
                              or m == "pydantic"),
            "classes": classes,
        }, f)
    _exit(code)
os._exit = dump_and_exit
sys.argv = ["sema-rpc", *sys.argv[1:]]
from sema_rpc.cli import main
main()
"""


def _run(env: dict[str, str], workspace: Path, out: Path) -> tuple[list[Any], dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_EXIT, "run", "--yes", "--format", "jsonl",
         "--model", "anthropic/claude-test", "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **env, "SEMA_TEST_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    return lines, json.loads(out.read_text())


def test_a_one_shot_answer_loads_no_declaration_and_no_pydantic(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    scripted_llm.script(Reply.text("hello there", chunks=2))
    lines, seen = _run(server_env, workspace, tmp_path / "seen.json")
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    methods = [line.get("method") for line in lines]
    assert "session:ready" in methods and "message:complete" in methods
    modules = set(seen["modules"])
    assert {"sema_rpc.protocol_plain", "sema_rpc.core.messages"} <= modules
    assert not modules & DECLARATIONS
    assert "pydantic" not in modules
    assert seen["classes"] == {}


def test_a_tool_call_loads_no_declaration_and_no_pydantic(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """A tool's `Input` is the plain form of its declaration (tools/input_plain.py), which
    takes plainly valid arguments without pydantic; the wire's events of the call are plain."""
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": str(workspace / "README.md")})]),
        Reply.text("read it", chunks=2),
    )
    lines, seen = _run(server_env, workspace, tmp_path / "seen.json")
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    done = [x["params"] for x in lines if x.get("method") == "tool:execution:complete"]
    assert done and done[0]["toolName"] == "Read" and "A tiny project." in done[0]["content"]
    modules = set(seen["modules"])
    assert "sema_rpc.tools.input_plain" in modules
    assert "pydantic" not in modules
    assert not modules & DECLARATIONS
    assert seen["classes"] == {}


def test_initialize_creates_no_model(tmp_path: Path) -> None:
    """A spawned server answers `initialize`, reads the end of its input and exits, having
    created no wire model (and not imported pydantic)."""
    out = tmp_path / "seen.json"
    home = tmp_path / "home"
    home.mkdir()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_EXIT],
        input=f"Content-Length: {len(body)}\r\n\r\n{body}".encode(),
        capture_output=True, timeout=120, cwd=REPO,
        env={**os.environ, "HOME": str(home), "SEMA_ROOT": str(home / ".sema"),
             "SEMA_TEST_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.split(b"\r\n\r\n", 1)[1].split(b"Content-Length")[0])
    assert answer["id"] == 1 and "session/prompt" in answer["result"]["capabilities"]["methods"]
    seen = json.loads(out.read_text())
    assert seen["classes"] == {}
    assert seen["modules"] == [
        "sema_rpc.protocol",
        "sema_rpc.protocol_core",
        "sema_rpc.protocol_names",
    ]
