"""History writes happen off the event loop: what a client is promised still holds —
every entry is on disk once the server answers dispose, and before it exits on EOF."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"
TOGGLES = 200


def modes_on_disk(env: dict[str, str], session_id: str) -> list[str]:
    path = Path(env["SEMA_ROOT"]) / "history" / f"{session_id}.jsonl"
    entries = [json.loads(line) for line in path.read_bytes().splitlines()]
    return [e["mode"] for e in entries if e["t"] == "mode"]


def toggle(client: WireClient, session_id: str) -> list[str]:
    """Queue TOGGLES mode changes in one go, without waiting for the answers."""
    modes = ["Plan" if i % 2 == 0 else "Agent" for i in range(TOGGLES)]
    for i, mode in enumerate(modes):
        client.send(
            {
                "jsonrpc": "2.0",
                "id": f"mode-{i}",
                "method": "mode/update",
                "params": {"sessionId": session_id, "mode": mode},
            }
        )
    return modes


async def test_end_of_input_exits_only_once_every_entry_is_written(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client = await WireClient(env=server_env).start()
    await client.initialize()
    sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
    scripted_llm.script(Reply.text("hello"))
    await client.call("session/prompt", {"sessionId": sid, "input": "hi"})
    modes = toggle(client, sid)
    code = await client.close()  # EOF straight after the last request
    assert code == 0
    assert modes_on_disk(server_env, sid) == modes


async def test_dispose_answers_once_every_entry_is_written(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client = await WireClient(env=server_env).start()
    try:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        modes = toggle(client, sid)
        result = await client.call("session/dispose", {"sessionId": sid})
        assert result["disposed"] is True
        assert modes_on_disk(server_env, sid) == modes  # the process is still running

        # Created again by id, the session continues the same file, in order.
        ready = await client.create_session(workspace, sessionId=sid, model=MODEL)
        assert ready["mode"] == modes[-1]
        scripted_llm.script(Reply.text("still here"))
        await client.call("session/prompt", {"sessionId": sid, "input": "again"})
        path = Path(server_env["SEMA_ROOT"]) / "history" / f"{sid}.jsonl"
        kinds = [json.loads(line)["t"] for line in path.read_bytes().splitlines()]
        assert kinds[0] == "meta" and kinds.count("meta") == 1
        assert kinds[-3:] == ["message", "usage", "message"]  # usage: the running totals
    finally:
        await client.close()
