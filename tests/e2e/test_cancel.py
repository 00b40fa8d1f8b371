"""Cancellation and lifecycle as editor libraries drive them.

vscode-jsonrpc sends `$/cancelRequest` right behind a request whose token is already
cancelled; Neovim's `vim.lsp.rpc` drops -32800 answers, encodes `{}` as `[]` and hides
the ids of server→client requests. Every prompt still gets exactly one answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"
FRAMINGS = pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])


def message(msg_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def cancel(msg_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}


def send_together(client: WireClient, *messages: dict[str, Any]) -> None:
    """Several messages in one write, as a client library flushes them."""
    client.send_bytes(b"".join(client.frame(json.dumps(m).encode()) for m in messages))


async def start(client: WireClient, workspace, **params: Any) -> str:
    await client.initialize()
    ready = await client.create_session(workspace, model=MODEL, **params)
    return ready["sessionId"]


async def at_gate(reply: Reply) -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, reply.at_gate.wait, 20)


def answers_for(client: WireClient, msg_id: Any) -> int:
    """How many answers carried `msg_id` (pending futures take the first one)."""
    extra = sum(1 for m in client.unsolicited if m.get("id") == msg_id)
    return extra + 1


@FRAMINGS
async def test_cancel_sent_with_the_prompt_answers_interrupted(
    server_env, scripted_llm: ScriptedLLM, workspace, jsonl: bool
):
    async with WireClient(env=server_env, jsonl=jsonl) as client:
        sid = await start(client, workspace)
        scripted_llm.script(Reply.text("Never asked."), Reply.text("Later answer."))
        answer = client.expect_response("p1")
        send_together(
            client,
            message("p1", "session/prompt", {"sessionId": sid, "input": "cancelled at once"}),
            cancel("p1"),
        )
        response = await asyncio.wait_for(answer, 10)
        assert response.get("result", {}).get("stopReason") == "interrupted", response
        # Nothing ran: no model request, and the session serves the next prompt.
        later = await client.call("session/prompt", {"sessionId": sid, "input": "next"})
        assert later["stopReason"] == "end_turn"
        assert len(scripted_llm.requests) == 1
        assert "cancelled at once" not in json.dumps(scripted_llm.requests[0].body)
        assert client.unsolicited == []


async def test_cancelling_a_queued_follow_up_removes_only_it(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    first = Reply.text("The running turn goes on.", gate=gate)
    scripted_llm.script(first, Reply.text("Third answer."))
    try:
        running = asyncio.ensure_future(
            client.call("session/prompt", {"sessionId": sid, "input": "running"})
        )
        await at_gate(first)
        queued = client.expect_response("q1")
        client.send(message("q1", "session/prompt", {"sessionId": sid, "input": "queued text"}))
        await client.read_so_far()
        client.notify("$/cancelRequest", {"id": "q1"})
        response = await asyncio.wait_for(queued, 5)
        assert response["result"]["stopReason"] == "interrupted"
        assert not running.done(), "cancelling the queued prompt stopped the running turn"
    finally:
        gate.set()
    assert (await asyncio.wait_for(running, 10))["stopReason"] == "end_turn"
    assert client.events("session:interrupted", sid) == []
    third = await client.call("session/prompt", {"sessionId": sid, "input": "third"})
    assert third["stopReason"] == "end_turn"
    # The cancelled prompt never ran: two model requests, neither saw it.
    assert len(scripted_llm.requests) == 2
    assert all("queued text" not in json.dumps(r.body) for r in scripted_llm.requests)
    assert client.unsolicited == []


async def test_cancelling_a_waiting_steer_removes_only_it(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    first = Reply.text("A plain answer, no tools.", gate=gate)
    scripted_llm.script(first, Reply.text("Next answer."))
    try:
        running = asyncio.ensure_future(
            client.call("session/prompt", {"sessionId": sid, "input": "running"})
        )
        await at_gate(first)
        steer = client.expect_response("s1")
        client.send(
            message(
                "s1",
                "session/prompt",
                {"sessionId": sid, "input": "steer text", "delivery": "steer"},
            )
        )
        await client.read_so_far()
        client.notify("$/cancelRequest", {"id": "s1"})
        response = await asyncio.wait_for(steer, 5)
        assert response["result"]["stopReason"] == "interrupted"
        assert not running.done()
    finally:
        gate.set()
    assert (await asyncio.wait_for(running, 10))["stopReason"] == "end_turn"
    await asyncio.sleep(0.3)  # a steer left behind would now run as its own turn
    assert len(scripted_llm.requests) == 1
    nxt = await client.call("session/prompt", {"sessionId": sid, "input": "next"})
    assert nxt["stopReason"] == "end_turn"
    assert all("steer text" not in json.dumps(r.body) for r in scripted_llm.requests)


async def test_a_server_cancel_names_the_request_key_a_client_without_ids_can_see(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """Neovim's `server_request` gets method and params only: the params' `requestId`
    is what the server's `$/cancelRequest {id}` names."""
    async with WireClient(env=server_env, on_server_request=lambda _m, _p: None) as client:
        await client.initialize(permissions=True)
        ready = await client.create_session(workspace, model=MODEL)
        sid = ready["sessionId"]
        scripted_llm.script(Reply.tools([("Bash", {"command": "touch made-by-bash"})]))
        prompt = asyncio.ensure_future(
            client.call("session/prompt", {"sessionId": sid, "input": "touch it"})
        )
        deadline = time.monotonic() + 20  # as long as a call may take
        while not client.server_requests and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        [asked] = client.server_requests
        assert asked.params["requestId"] == asked.message["id"]
        await client.call("session/interrupt", {"sessionId": sid})
        cancelled = await client.wait_for("$/cancelRequest")
        assert cancelled.params == {"id": asked.params["requestId"]}
        assert (await asyncio.wait_for(prompt, 10))["stopReason"] == "interrupted"


async def test_shutdown_with_invalid_params_is_refused_and_does_not_shut_down(
    client: WireClient,
):
    await client.initialize()
    response = await client.request("shutdown", 5)
    assert response["error"]["code"] == -32602
    # Still serving: a request after it is answered, not refused as "shutting down".
    result = await client.call("initialize", {"protocolVersion": 1})
    assert result["serverInfo"]["name"] == "sema-rpc"


async def test_shutdown_answers_running_and_queued_prompts_interrupted(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    first = Reply.text("held open", gate=gate)
    scripted_llm.script(first, Reply.text("must not run"))
    try:
        running = client.expect_response("run")
        queued = client.expect_response("queued")
        client.send(message("run", "session/prompt", {"sessionId": sid, "input": "one"}))
        await at_gate(first)
        client.send(message("queued", "session/prompt", {"sessionId": sid, "input": "two"}))
        await client.read_so_far()
        shutdown = client.expect_response("bye")
        client.send(message("bye", "shutdown", None))
        done = await asyncio.wait_for(asyncio.gather(running, queued, shutdown), 10)
    finally:
        gate.set()
    assert [r.get("result", {}).get("stopReason") for r in done[:2]] == ["interrupted"] * 2
    assert done[2]["result"] == {}
    assert len(scripted_llm.requests) == 1  # the queued prompt never started
    client.notify("exit")
    assert client.proc is not None
    assert await asyncio.wait_for(client.proc.wait(), 5) == 0
    assert client.unsolicited == []


async def test_empty_params_as_an_empty_array_are_an_empty_object(client: WireClient, workspace):
    """`vim.json.encode({})` is `[]`."""
    result = await client.call("initialize", [])
    assert result["protocolVersion"] == 1
    result = await client.call("initialize", {"protocolVersion": 1, "capabilities": []})
    assert result["serverInfo"]["name"] == "sema-rpc"
    assert (await client.call("session/list", []))["sessions"] == []
    # A method with required fields still says which are missing.
    response = await client.request("session/prompt", [])
    assert response["error"]["code"] == -32602
    assert {tuple(d["loc"]) for d in response["error"]["data"]} == {("sessionId",), ("input",)}
    assert await client.call("shutdown", []) == {}


async def test_an_unsupported_protocol_version_is_refused_with_the_supported_one(
    client: WireClient,
):
    response = await client.request("initialize", {"protocolVersion": 2})
    error = response["error"]
    assert error["code"] == -32602
    assert "protocolVersion 2" in error["message"] and "1" in error["message"]
    assert error["data"][0]["loc"] == ["protocolVersion"]
    # Nothing changed: the client may try again with a version it shares.
    result = await client.call("initialize", {"protocolVersion": 1})
    assert result["protocolVersion"] == 1


@FRAMINGS
async def test_end_of_input_answers_open_prompts_and_starts_nothing(
    server_env, scripted_llm: ScriptedLLM, workspace, jsonl: bool
):
    async with WireClient(env=server_env, jsonl=jsonl) as client:
        sid = await start(client, workspace)
        gate = threading.Event()
        first = Reply.text("held open", gate=gate)
        scripted_llm.script(first, Reply.text("must not run"))
        try:
            running = client.expect_response("run")
            queued = client.expect_response("queued")
            client.send(message("run", "session/prompt", {"sessionId": sid, "input": "one"}))
            await at_gate(first)
            client.send(message("queued", "session/prompt", {"sessionId": sid, "input": "two"}))
            await client.read_so_far()
            started = time.monotonic()
            assert client.proc is not None and client.proc.stdin is not None
            client.proc.stdin.close()
            code = await asyncio.wait_for(client.proc.wait(), 10)
            took = time.monotonic() - started
        finally:
            gate.set()
        done = await asyncio.wait_for(asyncio.gather(running, queued), 5)
        assert [r.get("result", {}).get("stopReason") for r in done] == ["interrupted"] * 2
        assert code == 0
        assert took < 4, took  # it waited out a 5 s grace before
        assert len(scripted_llm.requests) == 1  # the queued prompt never started


async def test_cancelling_the_running_prompt_stops_it_and_the_queue_goes_on(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    first = Reply.text("held open", gate=gate)
    scripted_llm.script(first, Reply.text("The queued prompt ran."))
    try:
        running = client.expect_response("run")
        queued = client.expect_response("queued")
        client.send(message("run", "session/prompt", {"sessionId": sid, "input": "one"}))
        await at_gate(first)
        client.send(message("queued", "session/prompt", {"sessionId": sid, "input": "two"}))
        await client.read_so_far()
        client.notify("$/cancelRequest", {"id": "run"})
        stopped = await asyncio.wait_for(running, 5)
    finally:
        gate.set()
    assert stopped["result"]["stopReason"] == "interrupted"
    assert (await asyncio.wait_for(queued, 10))["result"]["stopReason"] == "end_turn"
    assert "two" in json.dumps(scripted_llm.requests[1].body)
    assert client.unsolicited == []


async def test_cancelling_a_steer_that_joined_the_turn_interrupts_that_turn(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace, permissionMode="bypass")
    gate = threading.Event()
    after = Reply.text("never finished", gate=gate)
    scripted_llm.script(Reply.tools([("Bash", {"command": "sleep 0.3"})]), after)
    try:
        running = client.expect_response("run")
        steer = client.expect_response("steer")
        client.send(message("run", "session/prompt", {"sessionId": sid, "input": "go"}))
        await client.wait_for("tool:execution:start", lambda p: p["sessionId"] == sid)
        client.send(
            message(
                "steer",
                "session/prompt",
                {"sessionId": sid, "input": "steer me", "delivery": "steer"},
            )
        )
        await at_gate(after)  # the steer joined: the model is answering it
        client.notify("$/cancelRequest", {"id": "steer"})
        done = await asyncio.wait_for(asyncio.gather(running, steer), 5)
    finally:
        gate.set()
    assert [r["result"]["stopReason"] for r in done] == ["interrupted"] * 2
    assert "steer me" in json.dumps(scripted_llm.requests[1].body)
    assert client.unsolicited == []
