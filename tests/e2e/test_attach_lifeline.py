"""`sema-rpc serve` keeps the process guarantees of the stdio server: on a stop signal the
running turn is interrupted and answered on the connection that sent it, and nothing the
server started outlives it (SIGKILL included); and a connection that goes away mid-turn
loses nothing: the turn goes on and another client finds it finished."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path

import pytest

from tests.e2e.test_lifeline import COMMAND, DEADLINE_S, LOAD_SLACK_S, assert_all_gone, sleeps
from tests.support.proc_table import MARK_VAR, kill_marked, new_mark, wait_marked
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.socket_client import SocketClient, endpoint_of, start_serve

MODEL = "anthropic/claude-test"


async def serve(env: dict[str, str]) -> tuple[asyncio.subprocess.Process, str]:
    proc = await start_serve(env)
    info = await endpoint_of(Path(env["SEMA_ROOT"]), proc.pid)
    return proc, info["endpoint"]


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
async def test_serve_ended_mid_command_leaves_nothing(
    how: str, server_env, scripted_llm: ScriptedLLM, workspace
):
    mark = new_mark()
    env = {**server_env, MARK_VAR: mark}
    try:
        scripted_llm.script(Reply.tools([("Bash", {"command": COMMAND}, "b1")]), Reply.text("ok"))
        proc, endpoint = await serve(env)
        client = await SocketClient(endpoint).connect()
        await client.initialize()
        sid = (
            await client.call(
                "session/create",
                {"workingDir": str(workspace), "model": MODEL, "permissionMode": "bypass"},
            )
        )["sessionId"]
        prompt = asyncio.create_task(
            client.request("session/prompt", {"sessionId": sid, "input": "run it"}, timeout=60)
        )
        procs, _ = await asyncio.to_thread(wait_marked, mark, lambda p: len(sleeps(p)) >= 5, 30)
        assert len(sleeps(procs)) >= 5, procs

        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        await assert_all_gone(mark, how)
        await asyncio.wait_for(proc.wait(), DEADLINE_S + LOAD_SLACK_S)
        run = Path(env["SEMA_ROOT"]) / "run"
        if how == "sigkill":
            assert proc.returncode == -signal.SIGKILL
            prompt.cancel()
            return
        assert proc.returncode == 128 + signal.SIGTERM
        answer = await prompt
        assert answer["result"]["stopReason"] == "interrupted"
        assert not (run / f"{proc.pid}.json").exists()
        assert not Path(endpoint.removeprefix("unix:")).exists()
        await client.close()
    finally:
        kill_marked(mark)


async def test_a_connection_gone_mid_turn_loses_nothing(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    reply = Reply.text("The turn went on without its client.", gate=gate)
    scripted_llm.script(reply)
    proc, endpoint = await serve(server_env)
    try:
        first = await SocketClient(endpoint, name="first").connect()
        await first.initialize()
        sid = (await first.call("session/create", {"workingDir": str(workspace), "model": MODEL}))[
            "sessionId"
        ]
        first.send(
            {
                "jsonrpc": "2.0",
                "id": 99,
                "method": "session/prompt",
                "params": {"sessionId": sid, "input": "keep going"},
            }
        )
        await asyncio.to_thread(reply.at_gate.wait, 30)
        first.kill()  # the client that sent the prompt is gone, mid-turn
        gate.set()

        second = await SocketClient(endpoint, name="second").connect()
        await second.initialize()
        attached = await second.call("session/attach", {"sessionId": sid, "afterSeq": 0})
        if attached["state"] != "idle":
            await second.wait_for("state:update", lambda p: p["state"] == "idle")
        text = "".join(r.params["delta"] for r in second.events("message:text:chunk"))
        assert text == "The turn went on without its client."
        messages = await second.call("session/messages", {"sessionId": sid})
        assert [m["role"] for m in messages["messages"]] == ["user", "assistant"]
        assert messages["messages"][1]["content"] == [
            {"type": "text", "text": "The turn went on without its client."}
        ]
        await second.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)
