"""MCP servers per session over the wire (issue 5): the editor's `mcpServers` and the
project's `.sema/mcp.json` start with the session, their tools are listed and offered,
a call asks consent by tool name, and a server that crashes is an error result plus a
`session:error` (`mcp_error`) while the session keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM

from .wire_helpers import (
    Editor,
    new_session,
    prompt,
    result_text,
    start_client,
    tool_names,
    tool_results,
)

CRASHY = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "crashy_server.py"
TIME_SERVER = {
    "name": "time",
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    "env": [{"name": "TZ", "value": "UTC"}],
}
TIME_TOOLS = ["mcp__time__get_current_time", "mcp__time__convert_time"]

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks use /proc")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def tool_list(client, sid: str) -> dict[str, dict]:
    return {t["name"]: t for t in (await client.call("tool/list", {"sessionId": sid}))["tools"]}


async def test_mcp_servers_listed_called_and_one_that_crashes(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    mcp_json = workspace / ".sema" / "mcp.json"
    mcp_json.parent.mkdir(parents=True)
    mcp_json.write_text(
        json.dumps({"mcpServers": {"crashy": {"command": sys.executable, "args": [str(CRASHY)]}}})
    )
    # The user trusted this project's definition (`sema-rpc trust add`).
    subprocess.run(
        [sys.executable, "-m", "sema_rpc", "trust", "add", str(workspace)],
        env={**os.environ, **server_env},
        check=True,
        capture_output=True,
    )
    editor = Editor(
        permission=[{"decision": "allow_always"}, {"decision": "allow_once"}],
    )
    client = await start_client(server_env, editor, permissions=True)
    ready = await client.create_session(
        workspace, model="anthropic/claude-test", mcpServers=[TIME_SERVER]
    )
    sid = ready["sessionId"]

    # session:ready (and the create result) show both servers connected with their tools.
    [ready_event] = client.events("session:ready", sid)
    servers = {s["name"]: s for s in ready["mcpServers"]}
    assert ready_event.params["mcpServers"] == ready["mcpServers"]
    assert servers["time"]["state"] == "connected" and servers["time"]["source"] == "editor"
    assert sorted(servers["time"]["tools"]) == sorted(TIME_TOOLS)
    assert servers["crashy"]["state"] == "connected"
    assert Path(servers["crashy"]["source"]).resolve() == mcp_json.resolve()
    assert "mcp__crashy__crash" in servers["crashy"]["tools"]

    # tool/list: MCP tools, enabled, never read-only.
    tools = await tool_list(client, sid)
    for name in [*TIME_TOOLS, "mcp__crashy__crash", "mcp__crashy__echo"]:
        assert tools[name]["source"] == "mcp" and tools[name]["enabled"], name
        assert tools[name]["readOnly"] is False
    assert tools["Read"]["source"] == "builtin"

    # The model calls the time tool (consent asked by tool name, always), then crashy's
    # `crash` (asked again: another tool).
    scripted_llm.script(
        Reply.tools([("mcp__time__get_current_time", {"timezone": "UTC"}, "toolu_time")]),
        Reply.tools([("mcp__crashy__crash", {}, "toolu_crash")]),
        Reply.text("The crashy server is gone."),
    )
    result = await prompt(client, sid, "what time is it? then crash")
    assert result["stopReason"] == "end_turn"

    first = scripted_llm.requests[0].body
    assert {*TIME_TOOLS, "mcp__crashy__crash"} <= set(tool_names(first))
    spec = next(t for t in first["tools"] if t["name"] == "mcp__time__get_current_time")
    assert "timezone" in spec["input_schema"]["properties"], "the server's schema, as sent"

    asked = editor.of("tool:permission:request")
    assert [a["toolName"] for a in asked] == ["mcp__time__get_current_time", "mcp__crashy__crash"]
    assert "allow_always" in asked[0]["options"]
    assert json.loads(asked[0]["content"]) == {"timezone": "UTC"}

    [time_result] = tool_results(scripted_llm.requests[1].body)
    assert not time_result.get("is_error")
    assert json.loads(result_text(time_result))["timezone"] == "UTC"

    [crash_result] = tool_results(scripted_llm.requests[2].body)
    assert crash_result.get("is_error") and "'crashy'" in result_text(crash_result)
    [error] = [e.params for e in client.events("session:error", sid)]
    assert error["type"] == "mcp_error" and "crashy" in error["error"]["message"]
    assert error["error"]["details"] == {"server": "crashy"}
    crash_error = next(
        e.params
        for e in client.events("tool:execution:error", sid)
        if e.params["toolCallId"] == "toolu_crash"
    )
    assert "crashy" in crash_error["content"]

    # The session keeps working: the dead server's tools are gone, the rest still run,
    # and allow_always holds for the time tool.
    tools = await tool_list(client, sid)
    assert not any(t["enabled"] for n, t in tools.items() if n.startswith("mcp__crashy__"))
    assert all(tools[n]["enabled"] for n in TIME_TOOLS)
    scripted_llm.script(
        Reply.tools([("mcp__time__get_current_time", {"timezone": "Europe/Paris"})]),
        Reply.text("It is later in Paris."),
    )
    result = await prompt(client, sid, "and in Paris?")
    assert result["stopReason"] == "end_turn"
    offered = tool_names(scripted_llm.requests[3].body)
    assert set(TIME_TOOLS) <= set(offered)
    assert not [n for n in offered if n.startswith("mcp__crashy__")]
    [paris] = tool_results(scripted_llm.requests[4].body)
    assert json.loads(result_text(paris))["timezone"] == "Europe/Paris"
    assert len(editor.of("tool:permission:request")) == 2, "allow_always covered the call"

    # Plan mode does not offer MCP tools (they are never read-only).
    await client.call("mode/update", {"sessionId": sid, "mode": "Plan"})
    tools = await tool_list(client, sid)
    assert not any(tools[n]["enabled"] for n in TIME_TOOLS)

    # useTools filters MCP tools by name too; bypass mode asks nothing. The crashy
    # server of this session reports its pid: it must be gone when the process ends.
    limited = await new_session(
        client,
        workspace,
        mcpServers=[TIME_SERVER],
        useTools=["Read", "mcp__time__get_current_time", "mcp__crashy__pid"],
        permissionMode="bypass",
    )
    tools = await tool_list(client, limited)
    enabled = {n for n, t in tools.items() if t["enabled"]}
    assert enabled == {"Read", "mcp__time__get_current_time", "mcp__crashy__pid"}
    assert not tools["mcp__time__convert_time"]["enabled"]
    scripted_llm.script(Reply.tools([("mcp__crashy__pid", {})]), Reply.text("ok"))
    await prompt(client, limited, "pid?")
    assert tool_names(scripted_llm.requests[5].body) == [
        "Read",
        "mcp__time__get_current_time",
        "mcp__crashy__pid",
    ]
    [pid_result] = tool_results(scripted_llm.requests[6].body)
    pid = int(result_text(pid_result))
    assert alive(pid)
    assert len(editor.of("tool:permission:request")) == 2, "bypass asks nothing"

    assert await client.close() == 0
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), "MCP servers end with the process"


async def test_servers_that_cannot_start_are_reported_and_the_session_works(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """An editor's http entry (ACP shape) nothing listens at, a command that does not exist, and a working
    server from `$SEMA_ROOT/mcp.json`: the session is created, the two failures are in
    `session:ready`, and the working server's tools are offered."""
    user_config = Path(server_env["SEMA_ROOT"]) / "mcp.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(
        json.dumps({"mcpServers": {"time": {k: v for k, v in TIME_SERVER.items() if k != "name"}}})
    )
    client = await start_client(server_env, Editor(), permissions=True)
    editor_servers = [
        {"type": "http", "name": "remote", "url": "http://127.0.0.1:9/mcp", "headers": []},
        {"name": "missing", "command": "/nonexistent/mcp-server", "args": []},
    ]
    ready = await client.create_session(
        workspace, model="anthropic/claude-test", mcpServers=editor_servers
    )
    servers = {s["name"]: s for s in ready["mcpServers"]}
    assert servers["remote"]["state"] == "failed"
    assert servers["remote"]["error"].startswith("cannot connect to http://127.0.0.1:9/mcp: ")
    assert "TaskGroup" not in servers["remote"]["error"]
    assert servers["missing"]["state"] == "failed" and servers["missing"]["error"]
    assert servers["time"]["state"] == "connected"
    assert servers["time"]["source"] == str(user_config)
    scripted_llm.script(Reply.text("hello"))
    result = await prompt(client, ready["sessionId"], "hi")
    await client.close()
    assert result["stopReason"] == "end_turn"
    offered = tool_names(scripted_llm.requests[0].body)
    assert set(TIME_TOOLS) <= set(offered)
    assert not any(n.startswith(("mcp__remote__", "mcp__missing__")) for n in offered)
