"""The continuation check (session/create `checkContinuation`) over real pipes: a reply
that announces an action without taking it continues the turn once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.engine.loop.continuation import NUDGE, SYSTEM
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.asyncio

MODEL = "anthropic/claude-test"


def answers(client: WireClient, msg_id: Any) -> int:
    """How many responses the server wrote for `msg_id`."""
    text, decoder = bytes(client.stdout).decode(), json.JSONDecoder()
    count = pos = 0
    while pos < len(text):
        message, pos = decoder.raw_decode(text, pos)
        if message.get("id") == msg_id and ("result" in message or "error" in message):
            count += 1
    return count


async def run(
    env: dict[str, str], workspace: Path, check: bool | None, text: str
) -> tuple[WireClient, str, dict[str, Any]]:
    params: dict[str, Any] = {"model": MODEL}
    if check is not None:
        params["checkContinuation"] = check
    async with WireClient(env=env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, **params))["sessionId"]
        response = await client.request(
            "session/prompt", {"sessionId": sid, "input": text}, msg_id="p1"
        )
    return client, sid, response


async def test_an_announced_action_continues_the_turn_once(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(
        Reply.text("The fix is in place. Now I'll run the tests."),
        Reply.text("yes"),  # the quick model's verdict
        Reply.tools([("Read", {"file_path": "README.md"})], text="Running them."),
        # Announces again: the turn is not continued a second time (and not checked).
        Reply.text("All green. Next, I'll update the changelog."),
    )
    client, sid, response = await run(server_env, workspace, True, "Fix the bug")

    assert response["result"]["stopReason"] == "end_turn"
    assert answers(client, "p1") == 1
    continued = client.events("turn:continued", sid)
    assert [e.params for e in continued] == [
        {**continued[0].params, "sentence": "Now I'll run the tests.", "nudge": NUDGE}
    ]
    bodies = [r.body for r in scripted_llm.requests]
    assert len(bodies) == 4
    check = bodies[1]
    assert check["system"] == SYSTEM and "tools" not in check
    assert "Now I'll run the tests." in json.dumps(check["messages"])
    # The turn went on with the nudge after the announcing reply.
    resumed = bodies[2]["messages"]
    assert resumed[-2]["role"] == "assistant"
    assert "Now I'll run the tests." in json.dumps(resumed[-2])
    assert resumed[-1] == {"role": "user", "content": [{"type": "text", "text": NUDGE}]}
    # The event came before the continued reply's text.
    chunks = client.events("message:text:chunk", sid)
    running = next(e for e in chunks if "Running" in e.params["delta"])
    assert continued[0].params["seq"] < running.params["seq"]


async def test_the_quick_model_saying_no_ends_the_turn(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(Reply.text("I'll leave the rest to you."), Reply.text("No."))
    client, sid, response = await run(server_env, workspace, True, "Fix the bug")
    assert response["result"]["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 2
    assert not client.events("turn:continued", sid)


async def test_a_reply_that_announces_nothing_asks_no_one(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(Reply.text("The tests pass. Shall I also update the docs?"))
    client, sid, response = await run(server_env, workspace, True, "Fix the bug")
    assert response["result"]["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1  # the pre-filter: no quick-model call
    assert not client.events("turn:continued", sid)


@pytest.mark.parametrize("check", [None, False])
async def test_off_by_default_no_extra_request(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, check: bool | None
):
    scripted_llm.script(Reply.text("Now I'll run the tests."))
    client, sid, response = await run(server_env, workspace, check, "Fix the bug")
    assert response["result"]["stopReason"] == "end_turn"
    assert answers(client, "p1") == 1
    assert len(scripted_llm.requests) == 1
    assert not client.events("turn:continued", sid)


async def test_the_quick_pointer_answers_the_check(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    root = Path(server_env["SEMA_ROOT"])
    profiles = {
        "main": {"provider": "anthropic", "modelName": "claude-main"},
        "fast": {"provider": "openai", "modelName": "gpt-quick"},
    }
    (root / "models.json").write_text(
        json.dumps({"profiles": profiles, "pointers": {"main": "main", "quick": "fast"}})
    )
    scripted_llm.script(
        Reply.text("Let me check the logs."), Reply.text("yes"), Reply.text("Logs are clean.")
    )
    async with WireClient(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model="main", checkContinuation=True)
        await client.call("session/prompt", {"sessionId": ready["sessionId"], "input": "Go"})
    paths = [(r.path, r.body["model"]) for r in scripted_llm.requests]
    assert paths == [
        ("/v1/messages", "claude-main"),
        ("/v1/chat/completions", "gpt-quick"),
        ("/v1/messages", "claude-main"),
    ]


async def test_an_interrupt_during_the_check_ends_the_turn_interrupted(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    import asyncio
    import threading

    gate = threading.Event()
    verdict = Reply.text("yes", gate=gate)
    scripted_llm.script(Reply.text("Now I'll run the tests."), verdict)
    async with WireClient(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model=MODEL, checkContinuation=True)
        sid = ready["sessionId"]
        turn = asyncio.ensure_future(
            client.request("session/prompt", {"sessionId": sid, "input": "Go"}, msg_id="p1")
        )
        assert await asyncio.get_running_loop().run_in_executor(None, verdict.at_gate.wait, 10)
        assert (await client.call("session/interrupt", {"sessionId": sid}))["interrupted"]
        response = await asyncio.wait_for(turn, 10)
        gate.set()
    assert response["result"]["stopReason"] == "interrupted"
    assert answers(client, "p1") == 1
    assert not client.events("turn:continued", sid)
    assert len(scripted_llm.requests) == 2
