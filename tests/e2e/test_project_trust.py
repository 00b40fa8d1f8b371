"""A repository's `.sema/mcp.json` names programs: they run only once the user trusted
them. Over real pipes with a real `sema-rpc` process; the oracle is a marker file the
project's server writes when it starts (with its environment), never a mock."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities

from tests.support.acp_client import REPO, acp_agent
from tests.support.acp_client import Editor as AcpEditor
from tests.support.scripted_llm import Reply, ScriptedLLM

from .wire_helpers import Editor, prompt, start_client

# What runs is not the subject here, only whether it runs: the SDK-free server starts in ms.
TINY = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "tiny_server.py"
MODEL = "anthropic/claude-test"
KEY = "sk-ant-test-key-000000"  # server_env's ANTHROPIC_API_KEY


def marker_server(tmp_path: Path) -> tuple[Path, Path]:
    """A real MCP server (tiny_server.py) that first appends its environment to a marker file."""
    marker = tmp_path / "marker.jsonl"
    script = tmp_path / "marker_server.py"
    script.write_text(
        "import json, os, runpy, sys\n"
        f"with open({str(marker)!r}, 'a') as f:\n"
        "    f.write(json.dumps(dict(os.environ)) + '\\n')\n"
        f"sys.argv = [{str(TINY)!r}]\n"
        f"runpy.run_path({str(TINY)!r}, run_name='__main__')\n"
    )
    return script, marker


def write_project(workspace: Path, script: Path, *extra: str) -> Path:
    mcp_json = workspace / ".sema" / "mcp.json"
    mcp_json.parent.mkdir(parents=True, exist_ok=True)
    server = {
        "command": sys.executable,
        "args": [str(script), *extra],
        "env": {"LEAK": "${ANTHROPIC_API_KEY}", "MODE": "${NODE_ENV:-unset}"},
    }
    mcp_json.write_text(json.dumps({"mcpServers": {"x": server}}))
    return mcp_json


def started(marker: Path) -> list[dict[str, str]]:
    """The environments the project's server started with, one per start."""
    if not marker.exists():
        return []
    return [json.loads(line) for line in marker.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path, workspace: Path) -> tuple[Path, Path]:
    script, marker = marker_server(tmp_path)
    write_project(workspace, script)
    return script, marker


def status(ready: dict[str, Any], name: str = "x") -> dict[str, Any]:
    return next(s for s in ready["mcpServers"] if s["name"] == name)


async def test_a_client_without_permissions_never_starts_the_projects_server(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("hello"))
    client = await start_client(server_env, Editor())  # no `permissions`
    try:
        ready = await client.create_session(workspace, model=MODEL)
        x = status(ready)
        assert x["state"] == "untrusted" and x["tools"] == []
        assert "sema-rpc trust add" in x["error"] and "--trust-project" in x["error"]
        result = await prompt(client, ready["sessionId"], "hi")
        assert result["stopReason"] == "end_turn"
        assert client.server_requests == [], "nobody is asked"
    finally:
        await client.close()
    assert started(marker) == [], "the project's program never ran"


async def test_refused_trust_never_runs_and_is_not_asked_again_in_the_session(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    editor = Editor(permission=[{"decision": "reject"}])
    client = await start_client(server_env, editor, permissions=True)
    try:
        ready = await client.create_session(workspace, model=MODEL)
        sid = ready["sessionId"]
        assert status(ready)["state"] == "untrusted"
        assert editor.of("tool:permission:request") == [], "asked before the first turn"
        assert (await prompt(client, sid, "hi"))["stopReason"] == "end_turn"
        [asked] = editor.of("tool:permission:request")
        assert asked["toolName"] == "ProjectTrust"
        assert asked["options"] == ["allow_once", "allow_always", "reject"]
        # Exactly what would run, env names without values.
        assert str(TINY) not in asked["content"]
        assert f"x: {sys.executable} {project[0]}" in asked["content"]
        assert f"cwd: {workspace}" in asked["content"]
        assert "env: LEAK, MODE" in asked["content"]
        assert KEY not in json.dumps(asked)
        [server] = asked["input"]["servers"]
        assert server["command"] == sys.executable and server["env"] == ["LEAK", "MODE"]
        assert (await prompt(client, sid, "again"))["stopReason"] == "end_turn"
        assert len(editor.of("tool:permission:request")) == 1, "refused once for the session"
        tools = await client.call("tool/list", {"sessionId": sid})
        assert not [t for t in tools["tools"] if t["source"] == "mcp"]
    finally:
        await client.close()
    assert started(marker) == []


async def test_trust_once_starts_it_for_this_session_only(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    editor = Editor(permission=[{"decision": "allow_once"}])
    client = await start_client(server_env, editor, permissions=True)
    try:
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        assert started(marker) == []
        assert (await prompt(client, sid, "hi"))["stopReason"] == "end_turn"
        assert len(started(marker)) == 1
        offered = [t["name"] for t in scripted_llm.requests[0].body["tools"]]
        assert "mcp__x__echo" in offered, "its tools are offered from the first turn"
        # A new session of the same project asks again (nothing was stored).
        again = await client.create_session(workspace, model=MODEL)
        assert status(again)["state"] == "untrusted"
    finally:
        await client.close()
    assert not (Path(server_env["SEMA_ROOT"]) / "trust.json").exists()


async def test_trust_always_is_stored_0600_not_asked_again_until_the_file_changes(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    script, marker = project
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    editor = Editor(permission=[{"decision": "allow_always"}])
    client = await start_client(server_env, editor, permissions=True)
    try:
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        assert (await prompt(client, sid, "hi"))["stopReason"] == "end_turn"
        assert len(started(marker)) == 1
        stored = Path(server_env["SEMA_ROOT"]) / "trust.json"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        [entry] = json.loads(stored.read_text())["projects"][str(workspace.resolve())]
        assert entry["servers"] == ["x"] and entry["digest"].startswith("sha256:")

        # Another session (another process, even): started at once, nobody asked.
        second = await start_client(server_env, Editor(), permissions=True)
        try:
            ready = await second.create_session(workspace, model=MODEL)
            assert status(ready)["state"] == "connected"
            assert len(started(marker)) == 2
        finally:
            await second.close()

        # The definition changes: untrusted again, and asked again.
        write_project(workspace, script, "--changed")
        changed = await client.create_session(workspace, model=MODEL)
        assert status(changed)["state"] == "untrusted"
        assert len(started(marker)) == 2
        assert (await prompt(client, changed["sessionId"], "hi"))["stopReason"] == "end_turn"
        assert len(editor.of("tool:permission:request")) == 2
        assert len(started(marker)) == 2, "the default answer (reject) starts nothing"
    finally:
        await client.close()


async def test_a_project_file_never_expands_a_key_the_users_file_does(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path, project
):
    script, marker = project
    root = Path(server_env["SEMA_ROOT"])
    # The user allows NODE_ENV and (in vain) the key itself in project files.
    (root / "settings.json").write_text(
        json.dumps({"projectEnv": ["NODE_ENV", "ANTHROPIC_API_KEY"]})
    )
    env = {**server_env, "NODE_ENV": "production", "SEMA_TRUST_TIMEOUT_S": "30"}
    scripted_llm.script(Reply.text("one"))
    client = await start_client(
        env, Editor(permission=[{"decision": "allow_once"}]), permissions=True
    )
    try:
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        await prompt(client, sid, "hi")
    finally:
        await client.close()
    [child] = started(marker)
    assert child["LEAK"] == "" and KEY not in json.dumps(child)
    assert child["MODE"] == "production", "an allowed variable expands"

    # The user's own $SEMA_ROOT/mcp.json keeps full expansion.
    user_marker = tmp_path / "user-marker.jsonl"
    user_script = tmp_path / "user_server.py"
    user_script.write_text(script.read_text().replace(str(marker), str(user_marker)))
    (root / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mine": {
                        "command": sys.executable,
                        "args": [str(user_script)],
                        "env": {"LEAK": "${ANTHROPIC_API_KEY}"},
                    }
                }
            }
        )
    )
    client = await start_client(server_env, Editor())
    try:
        ready = await client.create_session(workspace, model=MODEL)
        assert status(ready, "mine")["state"] == "connected"
    finally:
        await client.close()
    [mine] = started(user_marker)
    assert mine["LEAK"] == KEY


async def test_no_answer_within_the_timeout_starts_nothing(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("one"))
    env = {**server_env, "SEMA_TRUST_TIMEOUT_S": "1"}
    client = await start_client(env, lambda method, params: None, permissions=True)  # type: ignore[arg-type]
    try:
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        assert (await prompt(client, sid, "hi"))["stopReason"] == "end_turn"
        [asked] = [r.params for r in client.server_requests]
        [cancel] = client.events("$/cancelRequest")
        assert cancel.params["id"] == asked["requestId"], "the unanswered request is withdrawn"
        ready = await client.create_session(workspace, model=MODEL, sessionId=sid)
        assert "no answer within 1s" in status(ready)["error"]
    finally:
        await client.close()
    assert started(marker) == []


# --------------------------------------------------------------------------- ACP


async def acp_session(agent: Any, workspace: Path) -> str:
    await agent.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
    new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    return new.session_id


async def test_acp_no_consent_answered_never_runs_and_allow_once_runs(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    editor = AcpEditor(permission_answers=[None])  # `cancelled`: no consent
    async with acp_agent(server_env, editor) as agent:
        sid = await acp_session(agent, workspace)
        assert started(marker) == [], "session/new starts nothing of the project"
        from acp.schema import TextContentBlock

        answer = await agent.conn.prompt(
            session_id=sid, prompt=[TextContentBlock(type="text", text="hi")]
        )
        assert answer.stop_reason == "end_turn"
        [asked] = editor.permission_requests
        assert [o["kind"] for o in asked["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
        ]
        assert "cwd: " in asked["toolCall"]["content"][0]["content"]["text"]
        assert started(marker) == []

        # A new session is asked again; this time the user trusts it once.
        editor.permission_answers.append("allow_once")
        sid2 = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await agent.conn.prompt(
            session_id=sid2, prompt=[TextContentBlock(type="text", text="hi")]
        )
        assert answer.stop_reason == "end_turn"
        assert len(started(marker)) == 1


async def test_acp_a_consent_never_answered_times_out_and_starts_nothing(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    import asyncio

    from acp.schema import TextContentBlock

    _script, marker = project
    scripted_llm.script(Reply.text("one"))
    editor = AcpEditor(permission_gate=asyncio.Event())  # never opened: no answer
    env = {**server_env, "SEMA_TRUST_TIMEOUT_S": "1"}
    async with acp_agent(env, editor) as agent:
        sid = await acp_session(agent, workspace)
        answer = await agent.conn.prompt(
            session_id=sid, prompt=[TextContentBlock(type="text", text="hi")]
        )
        assert answer.stop_reason == "end_turn", "the prompt runs without the servers"
        assert len(editor.permission_requests) == 1
        withdrawn = [
            m for d, m in agent.messages if d == "in" and m.get("method") == "$/cancel_request"
        ]
        assert withdrawn, "the unanswered request is withdrawn"
        editor.permission_gate.set()
    assert started(marker) == []


# --------------------------------------------------------------------------- run, CLI


def run(*args: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sema_rpc", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=90,
    )


@pytest.mark.parametrize("flags", [[], ["--yes"]])
def test_run_without_trust_project_never_starts_it(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project, flags: list[str]
):
    _script, marker = project
    scripted_llm.script(Reply.text("hello"))
    proc = run("run", "--model", MODEL, "--cwd", str(workspace), *flags, "hi", env=server_env)
    assert proc.returncode == 0, proc.stderr
    ready = next(
        json.loads(line)["params"] for line in proc.stdout.splitlines() if '"session:ready"' in line
    )
    assert status(ready)["state"] == "untrusted"
    assert "--trust-project" in status(ready)["error"]
    assert started(marker) == []


def test_run_trust_project_starts_it_and_the_trust_command_round_trip(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, project
):
    _script, marker = project
    scripted_llm.script(Reply.text("hello"))
    proc = run(
        "run", "--model", MODEL, "--cwd", str(workspace), "--trust-project", "hi", env=server_env
    )
    assert proc.returncode == 0, proc.stderr
    assert len(started(marker)) == 1
    assert not (Path(server_env["SEMA_ROOT"]) / "trust.json").exists(), "nothing stored"

    added = run("trust", "add", str(workspace), env=server_env)
    assert added.returncode == 0, added.stderr
    assert "cwd: " in added.stdout and "env: LEAK, MODE" in added.stdout
    listed = run("trust", "list", env=server_env)
    assert str(workspace.resolve()) in listed.stdout
    revoked = run("trust", "revoke", str(workspace), env=server_env)
    assert f"revoked {workspace.resolve()}" in revoked.stdout
    assert str(workspace.resolve()) not in run("trust", "list", env=server_env).stdout


async def test_the_session_start_git_snapshot_never_runs_the_repositorys_fsmonitor(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
):
    """`.git/config` is a stranger's too: `core.fsmonitor` names a program `git status`
    runs; the snapshot the system prompt takes must not run it."""
    hook_marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {hook_marker}\n")
    hook.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "config", "core.fsmonitor", str(hook)], check=True)
    scripted_llm.script(Reply.text("hello"))
    client = await start_client(server_env, Editor())
    try:
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        assert (await prompt(client, sid, "hi"))["stopReason"] == "end_turn"
        system = json.dumps(scripted_llm.requests[0].body.get("system"))
        assert "Is a git repository: yes" in system, "the snapshot was taken"
    finally:
        await client.close()
    assert not hook_marker.exists()
