"""Queued input while a turn runs: `delivery: steer` and `followUp` (issue 6, seed 004)."""

from __future__ import annotations

import asyncio
import threading

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"


def user_texts(message: dict) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if b.get("type") == "text"]


async def start(client: WireClient, workspace) -> str:
    await client.initialize()
    ready = await client.create_session(workspace, model=MODEL, permissionMode="bypass")
    return ready["sessionId"]


async def test_steer_joins_after_the_whole_batch_and_follow_up_waits_for_the_end(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    (workspace / "logs.txt").write_text("error: disk full\n")
    batch = Reply.tools(
        [
            ("Bash", {"command": "sleep 0.4; echo first"}),
            ("Bash", {"command": "echo second"}),
        ]
    )
    scripted_llm.script(
        batch, Reply.text("Done, and noted the steer."), Reply.text("Follow-up answered.")
    )

    main = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": sid, "input": "run both"})
    )
    await client.wait_for("tool:execution:start", lambda p: p["sessionId"] == sid)
    steer = asyncio.ensure_future(
        client.call(
            "session/prompt",
            {"sessionId": sid, "input": "also check @logs.txt", "delivery": "steer"},
        )
    )
    follow = asyncio.ensure_future(
        client.call(
            "session/prompt", {"sessionId": sid, "input": "then summarise", "delivery": "followUp"}
        )
    )
    results = await asyncio.wait_for(asyncio.gather(main, steer, follow), 20)

    assert [r["stopReason"] for r in results] == ["end_turn"] * 3
    # The remaining tool still ran: both Bash calls completed.
    assert len(client.events("tool:execution:complete", sid)) == 2
    # The steer joined the running turn right after the batch, before the next model call.
    second = scripted_llm.requests[1].body["messages"]
    last = second[-1]
    assert [b["type"] for b in last["content"]][:2] == ["tool_result", "tool_result"]
    steered = user_texts(last)
    assert steered[0] == "also check @logs.txt"  # @references resolve as in a prompt
    assert "disk full" in steered[1]
    [ref] = client.events("file:reference", sid)
    assert ref.params["references"][0]["name"] == "logs.txt"
    # The follow-up ran as its own turn, after the first one ended.
    third = scripted_llm.requests[2].body["messages"]
    assert user_texts(third[-1])[0] == "then summarise"
    assert len(scripted_llm.requests) == 3
    states = [e.params["state"] for e in client.events("state:update", sid)]
    assert states == ["processing", "idle", "processing", "idle"]
    # The steered prompt answered when the turn it joined ended, with that turn's result,
    # and the id of the message it added (merged with the results for the model, listed
    # on its own for display).
    ids = [r.pop("messageId") for r in results]
    assert results[1] == results[0]
    page = await client.call("session/messages", {"sessionId": sid})
    listed = [(m["id"], m["content"][0]["text"]) for m in page["messages"] if m["role"] == "user"]
    assert listed == [
        (ids[0], "run both"),
        (ids[1], "also check @logs.txt"),
        (ids[2], "then summarise"),
    ]


async def test_steer_with_no_batch_left_runs_as_its_own_turn(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    final = Reply.text("A plain answer, no tools.", gate=gate)
    scripted_llm.script(final, Reply.text("Steer handled on its own."))
    main = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": sid, "input": "answer"})
    )
    assert await asyncio.get_running_loop().run_in_executor(None, final.at_gate.wait, 10)
    steer = asyncio.ensure_future(
        client.call(
            "session/prompt", {"sessionId": sid, "input": "and one more thing", "delivery": "steer"}
        )
    )
    await client.read_so_far()
    gate.set()
    first, second = await asyncio.wait_for(asyncio.gather(main, steer), 20)
    assert first["stopReason"] == second["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 2
    assert user_texts(scripted_llm.requests[1].body["messages"][-1])[0] == "and one more thing"


async def test_steer_while_idle_is_an_ordinary_prompt(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    scripted_llm.script(Reply.text("Hi."))
    result = await client.call(
        "session/prompt", {"sessionId": sid, "input": "hi", "delivery": "steer"}
    )
    assert result["stopReason"] == "end_turn"


async def test_interrupt_answers_a_joined_steer_as_interrupted(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    after = Reply.text("never finished", gate=gate)
    scripted_llm.script(Reply.tools([("Bash", {"command": "sleep 0.3"})]), after)
    main = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "go"}))
    await client.wait_for("tool:execution:start", lambda p: p["sessionId"] == sid)
    steer = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": sid, "input": "steer me", "delivery": "steer"})
    )
    assert await asyncio.get_running_loop().run_in_executor(None, after.at_gate.wait, 10)
    await client.call("session/interrupt", {"sessionId": sid})
    gate.set()
    first, second = await asyncio.wait_for(asyncio.gather(main, steer), 20)
    assert first["stopReason"] == second["stopReason"] == "interrupted"
    assert client.unsolicited == []


async def test_steer_sent_during_session_compact_runs_as_its_own_turn(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start(client, workspace)
    gate = threading.Event()
    summary = Reply.text("Summary of the work.", gate=gate)
    scripted_llm.script(
        Reply.text("First answer." * 50), Reply.text("Second answer."), summary, Reply.text("ok")
    )
    for text in ("first", "second"):
        await client.call("session/prompt", {"sessionId": sid, "input": text})
    compact = asyncio.ensure_future(client.call("session/compact", {"sessionId": sid}))
    assert await asyncio.get_running_loop().run_in_executor(None, summary.at_gate.wait, 10)
    steer = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": sid, "input": "steer me", "delivery": "steer"})
    )
    await client.read_so_far()
    gate.set()
    compacted = await asyncio.wait_for(compact, 10)
    assert compacted["strategy"] in ("summary", "truncate")
    answered = await asyncio.wait_for(steer, 10)
    assert answered["stopReason"] == "end_turn"
    assert user_texts(scripted_llm.requests[-1].body["messages"][-1])[0] == "steer me"
