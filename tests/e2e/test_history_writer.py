"""History writes happen off the event loop: what a client is promised still holds —
every entry is on disk once the server answers dispose, and before it exits on EOF."""

from __future__ import annotations

import asyncio
import json
import stat
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


async def wait_for_file(path: Path, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not path.exists():
        assert loop.time() < deadline, f"{path} was not created"
        await asyncio.sleep(0.02)


async def test_the_history_file_is_created_ahead_and_removed_when_no_input_came(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """The first prompt does not wait for its history file to be created: the file is
    created (meta line, 0600) in the background after session/create. A session without
    input is never listed, and its file goes with dispose and with the server's end."""
    history = Path(server_env["SEMA_ROOT"]) / "history"
    client = await WireClient(env=server_env).start()
    try:
        await client.initialize()
        idle = (await client.create_session(workspace, model=MODEL))["sessionId"]
        await wait_for_file(history / f"{idle}.jsonl")
        [meta] = [
            json.loads(line) for line in (history / f"{idle}.jsonl").read_bytes().splitlines()
        ]
        assert meta["t"] == "meta" and meta["sessionId"] == idle
        assert meta["workingDir"] == str(workspace.resolve())
        assert stat.S_IMODE((history / f"{idle}.jsonl").stat().st_mode) == 0o600
        assert (await client.call("session/list"))["sessions"] == []

        used = (await client.create_session(workspace, model=MODEL))["sessionId"]
        scripted_llm.script(Reply.text("hello"))
        await client.call("session/prompt", {"sessionId": used, "input": "hi"})
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["sessionId"] == used and listed["messageCount"] == 2
        lines = [json.loads(x) for x in (history / f"{used}.jsonl").read_bytes().splitlines()]
        # The model session/create named and the title are held until the prompt's
        # message; the running usage totals follow the response.
        assert [e["t"] for e in lines] == ["meta", "model", "title", "message", "usage", "message"]

        await client.call("session/dispose", {"sessionId": idle})
        assert not (history / f"{idle}.jsonl").exists()

        idle2 = (await client.create_session(workspace, model=MODEL))["sessionId"]
        await wait_for_file(history / f"{idle2}.jsonl")
    finally:
        assert await client.close() == 0  # EOF: the server ends in order
    assert not (history / f"{idle2}.jsonl").exists()
    kept = (history / f"{used}.jsonl").read_bytes()

    # A resumed session's file was not created ahead: it stays, unchanged, without input.
    client = await WireClient(env=server_env).start()
    try:
        await client.initialize()
        ready = await client.create_session(workspace, model=MODEL, sessionId=used)
        assert ready["historyLoaded"] is True
        await asyncio.sleep(0.2)  # the warm-up has run
    finally:
        assert await client.close() == 0
    assert (history / f"{used}.jsonl").read_bytes() == kept
