"""Which of our modules import pydantic on the paths to a first answer: the one-shot
`sema-rpc run`, a native server's initialize → session/create → prompt → shutdown (a
prompt answered with text, and one whose model calls tools), and an ACP session.

None does, and pydantic is not loaded: the running code builds the models' plain forms
(protocol_plain/, core/messages.py, the tools' inputs in tools/input_plain.py), whose
pydantic declarations (`DECLARATIONS`) load only for input that is not plainly valid;
every other module reaches the models through their API (`model_validate`, `model_dump`,
`wire()`) and tells pydantic's `ValidationError` without importing it. Each `import
pydantic…` statement our code runs is recorded (a statement in a function counts each
time it runs, pydantic loaded or not).

Nor is anyio loaded by any of them (cancel scopes, deadlines and threads come from
`sema_rpc/core/scopes.py`): only the MCP client and the SDK transports use it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]

DECLARATIONS = {
    # the wire's models (their schema's source)
    "sema_rpc.protocol_wire",
    "sema_rpc.protocol_events",
    "sema_rpc.protocol_tools",
    "sema_rpc.protocol_settings",
    "sema_rpc.protocol_sessions",
    # the conversation's blocks and messages
    "sema_rpc.core.messages_schema",
    # the built-in tools' inputs (and their base)
    "sema_rpc.tools.input_models",
    "sema_rpc.tools.input",
}

# Runs the real command line in this interpreter, records which of our modules run an
# `import pydantic…` statement, and writes them at the end (`os._exit`, which the CLI
# leaves by after an orderly end). The probe's own import shows the record works.
_RECORD_IMPORTERS = """
import builtins, json, os, sys
seen = set()
real_import = builtins.__import__
def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.split(".")[0] in ("pydantic", "pydantic_core"):
        module = (globals or {}).get("__name__", "")
        if module.startswith(("sema_rpc", "sema_client")):
            seen.add(module)
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = recording_import
_exit = os._exit
def dump_and_exit(code):
    if "pydantic" in sys.modules:
        seen.add("(pydantic loaded)")
    if "anyio" in sys.modules:
        seen.add("(anyio loaded)")
    exec("from pydantic import BaseModel", {"__name__": "sema_rpc.probe"})
    with open(os.environ["SEMA_TEST_IMPORTERS_OUT"], "w") as f:
        json.dump(sorted(seen), f)
    _exit(code)
os._exit = dump_and_exit
sys.argv = ["sema-rpc", *sys.argv[1:]]
from sema_rpc.cli import main
main()
"""


def _importers(out: Path) -> set[str]:
    seen = set(json.loads(out.read_text()))
    assert "sema_rpc.probe" in seen, "the record saw no import at all"
    return seen - {"sema_rpc.probe"}


def test_the_one_shot_imports_pydantic_only_where_models_are_declared(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """`sema-rpc run` drives its in-process server with the Python client: neither the
    client nor the server's other modules import pydantic themselves."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "importers.json"
    proc = subprocess.run(
        [sys.executable, "-c", _RECORD_IMPORTERS, "run", "--yes", "--model",
         "anthropic/claude-test", "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **server_env, "SEMA_TEST_IMPORTERS_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    text = [x["params"]["delta"] for x in lines if x.get("method") == "message:text:chunk"]
    assert "".join(text) == "hello there"
    assert _importers(out) == set()  # not even a declaration: everything was plainly valid


async def _native_session(
    server_env: dict[str, str], workspace: Path, out: Path, **create: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A native server answering initialize, session/create (with `create`), the prompt
    `hi` and shutdown, recording its pydantic importers into `out`: the prompt's answer
    and the notifications."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RECORD_IMPORTERS, "--jsonl", cwd=str(REPO),
        env={**os.environ, **server_env, "SEMA_TEST_IMPORTERS_OUT": str(out)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    notified: list[dict[str, Any]] = []

    async def call(msg_id: int, method: str, params: dict[str, Any] | None = None) -> Any:
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}
        stdin.write(json.dumps(request).encode() + b"\n")
        await stdin.drain()
        while True:
            message = json.loads(await asyncio.wait_for(stdout.readline(), 60))
            if "method" in message:
                notified.append(message)
            elif message.get("id") == msg_id:
                assert "error" not in message, message
                return message["result"]

    await call(1, "initialize", {"protocolVersion": 1})
    ready = await call(2, "session/create",
                       {"workingDir": str(workspace), "model": "anthropic/claude-test", **create})  # fmt: skip
    answered = await call(3, "session/prompt", {"sessionId": ready["sessionId"], "input": "hi"})
    await call(4, "shutdown")
    stdin.write(b'{"jsonrpc":"2.0","method":"exit"}\n')
    stdin.close()
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    return answered, notified


async def test_a_server_session_imports_pydantic_only_where_models_are_declared(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """A native server answering initialize, session/create, a prompt that calls no tool
    and shutdown: only the model declarations import pydantic."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "importers.json"
    answered, notified = await _native_session(server_env, workspace, out)
    assert answered["stopReason"] == "end_turn"
    text = [m["params"]["delta"] for m in notified if m["method"] == "message:text:chunk"]
    assert "".join(text) == "hello there"
    assert _importers(out) == set()  # not even a declaration: everything was plainly valid


async def test_a_session_whose_prompt_runs_tools_never_loads_pydantic(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """A prompt whose model reads, greps and globs (one batch, run together), then edits
    the file it read and shows it with a command (bypass mode: no consent asked): each call's arguments are plainly
    valid, so the tools' plain inputs take them and their declarations never load."""
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    scripted_llm.script(
        Reply.tools([
            ("Read", {"file_path": "notes.txt"}),
            ("Grep", {"pattern": "beta", "-n": True, "output_mode": "content"}),
            ("Glob", {"pattern": "*.txt"}),
        ]),
        Reply.tools([("Edit", {"file_path": "notes.txt", "old_string": "beta",
                               "new_string": "gamma"}),
                     ("Bash", {"command": "cat notes.txt"})]),
        Reply.text("edited", chunks=1),
    )  # fmt: skip
    out = tmp_path / "importers.json"
    answered, notified = await _native_session(server_env, workspace, out, permissionMode="bypass")
    assert answered["stopReason"] == "end_turn"
    methods = [m["method"] for m in notified]
    assert "tool:execution:error" not in methods
    done = [m["params"]["toolName"] for m in notified if m["method"] == "tool:execution:complete"]
    assert sorted(done) == ["Bash", "Edit", "Glob", "Grep", "Read"]
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    bash = [m["params"] for m in notified if m["method"] == "tool:execution:complete"][-1]
    assert bash["toolName"] == "Bash" and "gamma" in json.dumps(bash)
    assert _importers(out) == set()  # neither loaded: "(pydantic loaded)", "(anyio loaded)"


async def test_a_project_whose_mcp_servers_are_untrusted_never_loads_pydantic(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """A cloned repository's `.sema/mcp.json`, not trusted: its server is listed
    `untrusted` and never started, so neither the MCP SDK nor the MCP tools' input models
    (pydantic) load. The MCP manager itself loads anyio (its server handles)."""
    (workspace / ".sema").mkdir()
    (workspace / ".sema" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"x": {"command": sys.executable, "args": ["-c", "pass"]}}})
    )
    scripted_llm.script(Reply.text("hello there", chunks=1))
    out = tmp_path / "importers.json"
    answered, notified = await _native_session(server_env, workspace, out)
    assert answered["stopReason"] == "end_turn"
    text = [m["params"]["delta"] for m in notified if m["method"] == "message:text:chunk"]
    assert "".join(text) == "hello there"
    assert _importers(out) - {"(anyio loaded)"} == set()


async def test_an_acp_session_imports_pydantic_only_where_models_are_declared(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """`--acp` answering initialize, session/new (no MCP server), a prompt that calls no
    tool, then end of input: only the model declarations import pydantic."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "importers.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RECORD_IMPORTERS, "--acp", cwd=str(REPO),
        env={**os.environ, **server_env, "SEMA_TEST_IMPORTERS_OUT": str(out)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    updates: list[dict[str, Any]] = []

    async def call(msg_id: int, method: str, params: dict[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        stdin.write(json.dumps(request).encode() + b"\n")
        await stdin.drain()
        while True:
            message = json.loads(await asyncio.wait_for(stdout.readline(), 60))
            if message.get("method") == "session/update":
                updates.append(message["params"]["update"])
            elif "method" not in message and message.get("id") == msg_id:
                assert "error" not in message, message
                return message["result"]

    await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = await call(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
    prompt = [{"type": "text", "text": "hi"}]
    answered = await call(3, "session/prompt", {"sessionId": new["sessionId"], "prompt": prompt})
    stdin.close()
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    assert answered["stopReason"] == "end_turn"
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "hello there"
    assert _importers(out) == set()  # not even a declaration: everything was plainly valid
