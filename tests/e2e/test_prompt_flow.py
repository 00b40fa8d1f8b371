"""initialize → session/create → session/prompt over real pipes, against the scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import threading

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio


async def start_session(
    client: WireClient, workspace, model: str = "anthropic/claude-test", **caps: bool
) -> str:
    await client.initialize(**caps)
    ready = await client.create_session(workspace, model=model)
    return ready["sessionId"]


@pytest.mark.parametrize("model", ["anthropic/claude-test", "openai/gpt-test"])
async def test_streamed_answer_with_parallel_reads_in_model_order(
    client: WireClient, scripted_llm: ScriptedLLM, workspace, model: str
):
    sid = await start_session(client, workspace, model)
    order = [3, 1, 2, 0]
    scripted_llm.script(
        Reply.tools(
            [("Read", {"file_path": f"src/mod{i}.py"}) for i in order],
            text="Reading files.",
            usage=(120, 30),
        ),
        Reply.text("Each module defines one constant.", chunks=6, usage=(900, 12)),
    )

    result = await client.call(
        "session/prompt", {"sessionId": sid, "input": "What do the modules hold?"}
    )

    assert result["stopReason"] == "end_turn"
    deltas = [e.params["delta"] for e in client.events("message:text:chunk", sid)]
    assert "".join(deltas) == "Reading files.Each module defines one constant."
    assert len(deltas) >= 6, "text must arrive as several deltas, not one accumulated string"

    starts = client.events("tool:execution:start", sid)
    completes = client.events("tool:execution:complete", sid)
    assert len(starts) == len(completes) == 4
    # The four reads overlapped: every one started before any finished.
    assert max(e.params["seq"] for e in starts) < min(e.params["seq"] for e in completes)

    # Results went back to the model in the model's order, each with its own file.
    second = scripted_llm.requests[1].body
    if model.startswith("anthropic"):
        uses = [b for b in second["messages"][-2]["content"] if b["type"] == "tool_use"]
        results = [b for b in second["messages"][-1]["content"] if b["type"] == "tool_result"]
        assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
        contents = [
            r["content"] if isinstance(r["content"], str) else r["content"][0]["text"]
            for r in results
        ]
    else:
        tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
        calls = next(m for m in second["messages"] if m.get("tool_calls"))["tool_calls"]
        assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls]
        contents = [m["content"] for m in tool_msgs]
    for i, content in zip(order, contents, strict=True):
        assert f"VALUE_{i} = {i}" in content

    usage_events = client.events("conversation:usage", sid)
    assert len(usage_events) == 2
    assert usage_events[-1].params["usage"]["promptTokens"] == 900
    assert usage_events[-1].params["usage"]["useTokens"] == 912
    assert result["usage"] == usage_events[-1].params["usage"]

    complete = client.events("message:complete", sid)
    assert complete[0].params["hasToolCalls"] is True
    assert [c["name"] for c in complete[0].params["toolCalls"]] == ["Read"] * 4
    assert complete[-1].params["content"] == "Each module defines one constant."

    states = [e.params["state"] for e in client.events("state:update", sid)]
    assert states == ["processing", "idle"]
    seqs = [e.params["seq"] for e in client.events(session_id=sid)]
    assert seqs == list(range(1, len(seqs) + 1)), "seq increases by one per event"


async def test_interrupt_during_streaming_answers_once_and_session_stays_usable(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start_session(client, workspace)
    gate = threading.Event()
    slow = Reply.text("This answer will be interrupted halfway.", chunks=8, gate=gate)
    scripted_llm.script(slow, Reply.text("Fresh answer.", chunks=2))

    prompt = asyncio.ensure_future(
        client.request("session/prompt", {"sessionId": sid, "input": "long answer"})
    )
    await client.wait_for("message:text:chunk", lambda p: p["sessionId"] == sid)
    first = await client.call("session/interrupt", {"sessionId": sid})
    again = await client.call("session/interrupt", {"sessionId": sid})
    response = await asyncio.wait_for(prompt, 10)
    gate.set()

    assert first == {"interrupted": True}
    assert again == {"interrupted": False}, "interrupt is idempotent"
    assert response["result"]["stopReason"] == "interrupted"
    interrupted = client.events("session:interrupted", sid)
    assert len(interrupted) == 1 and interrupted[0].params["checkpoint"] == 1

    # Interrupting an idle session is harmless and answered at once.
    assert await client.call("session/interrupt", {"sessionId": sid}) == {"interrupted": False}

    # The session is usable: the next prompt runs to the end, and the model sees the
    # interrupted exchange in its history.
    nxt = await client.call("session/prompt", {"sessionId": sid, "input": "again"})
    assert nxt["stopReason"] == "end_turn"
    last_request = scripted_llm.requests[-1].body
    flattened = str(last_request["messages"])
    assert "interrupted" in flattened and "again" in flattened
    # Exactly one answer per prompt: no stray responses arrived.
    assert client.unsolicited == []


async def test_interrupt_while_tool_calls_stream_runs_no_tool(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start_session(client, workspace)
    gate = threading.Event()
    reply = Reply.tools([("Read", {"file_path": "README.md"})], gate=gate)
    scripted_llm.script(reply)
    prompt = asyncio.ensure_future(
        client.request("session/prompt", {"sessionId": sid, "input": "read"})
    )
    assert await asyncio.get_running_loop().run_in_executor(None, reply.at_gate.wait, 10)
    await client.call("session/interrupt", {"sessionId": sid})
    gate.set()
    response = await asyncio.wait_for(prompt, 10)
    assert response["result"]["stopReason"] == "interrupted"
    assert client.events("tool:execution:start", sid) == []
    assert len(scripted_llm.requests) == 1, "no model call after the interrupt"


async def test_interrupt_after_the_tool_batch_stops_at_checkpoint_2(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    """Checkpoint 2: the interrupt lands after the batch's tools, before the next model call.

    An interrupt cancels whatever the turn awaits, so to reach checkpoint 2 (and not 4) it
    must land while the last tool finishes work that cannot be cancelled: Read's file I/O
    runs in a worker thread that is not abandoned, so the Read completes anyway. To land it
    there deterministically the test holds a Linux write lease on the file the Read opens:
    the kernel blocks the Read's open() and signals the lease holder (SIGIO); the test
    interrupts, gets the answer, and only then releases the lease."""
    (workspace / "leased.txt").write_text("LEASED CONTENT\n")
    sid = await start_session(client, workspace)
    scripted_llm.script(
        Reply.tools(
            [("Glob", {"pattern": "src/*.py"}), ("Read", {"file_path": "leased.txt"})],
            text="Reading.",
        ),
        Reply.text("Fresh answer."),
    )
    loop = asyncio.get_running_loop()
    opened = asyncio.Event()
    loop.add_signal_handler(signal.SIGIO, opened.set)
    fd = os.open(workspace / "leased.txt", os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        prompt = asyncio.ensure_future(
            client.request("session/prompt", {"sessionId": sid, "input": "read it"})
        )
        await asyncio.wait_for(opened.wait(), 10)  # the Read is blocked in open()
        await client.wait_for(
            "tool:execution:complete", lambda p: p["sessionId"] == sid and p["toolName"] == "Glob"
        )
        assert await client.call("session/interrupt", {"sessionId": sid}) == {"interrupted": True}
        assert not prompt.done()
        assert [e.params["toolName"] for e in client.events("tool:execution:complete", sid)] == [
            "Glob"
        ], "the Read was still running when the interrupt was answered"
    finally:
        with contextlib.suppress(OSError):  # no lease to drop if taking it failed
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        os.close(fd)
        loop.remove_signal_handler(signal.SIGIO)
    response = await asyncio.wait_for(prompt, 10)

    assert response["result"]["stopReason"] == "interrupted"
    (interrupted,) = client.events("session:interrupted", sid)
    assert interrupted.params["checkpoint"] == 2
    # Every tool of the batch ran to the end; no model call followed.
    done = sorted(e.params["toolName"] for e in client.events("tool:execution:complete", sid))
    assert done == ["Glob", "Read"]
    assert client.events("tool:execution:error", sid) == []
    assert len(scripted_llm.requests) == 1
    assert [e.params["state"] for e in client.events("state:update", sid)] == [
        "processing",
        "idle",
    ]

    # Next time the model sees the tool results plus an interrupt note.
    nxt = await client.call("session/prompt", {"sessionId": sid, "input": "again"})
    assert nxt["stopReason"] == "end_turn"
    body = scripted_llm.requests[-1].body
    uses = [b for b in body["messages"][-2]["content"] if b["type"] == "tool_use"]
    last = body["messages"][-1]["content"]
    results = [b for b in last if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert not any(r.get("is_error") for r in results)
    read_result = results[1]["content"]
    read_text = read_result if isinstance(read_result, str) else read_result[0]["text"]
    assert "LEASED CONTENT" in read_text
    texts = [b["text"] for b in last if b["type"] == "text"]
    assert "[Request interrupted by user]" in texts and "again" in texts[-1]
    assert client.unsolicited == []


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply.error(529), "overloaded"),
        (Reply.error(500), "server_error"),
        (Reply.error(429), "rate_limit"),
        (Reply.mid_stream_error(), "overloaded"),
        (Reply.cut(), "stream_cut"),
        (
            Reply.error(400, message="prompt is too long: 300000 tokens > 200000 maximum"),
            "context_length_exceeded",
        ),
    ],
)
async def test_provider_failures_end_the_turn_with_error(
    client: WireClient, scripted_llm: ScriptedLLM, workspace, reply: Reply, code: str
):
    sid = await start_session(client, workspace)
    retries = 3 if reply.kind == "error" and reply.status in (429, 500, 529) else 1
    scripted_llm.script(*([reply] * retries), Reply.text("Recovered."))

    result = await client.call("session/prompt", {"sessionId": sid, "input": "hi"}, timeout=30)

    assert result["stopReason"] == "error"
    assert result["error"]["code"] == code
    errors = client.events("session:error", sid)
    assert len(errors) == 1 and errors[0].params["error"]["code"] == code
    assert [e.params["state"] for e in client.events("state:update", sid)] == ["processing", "idle"]
    # The session survives: the next prompt works.
    again = await client.call("session/prompt", {"sessionId": sid, "input": "hi again"})
    assert again["stopReason"] == "end_turn"


async def test_rate_limit_then_success_is_retried_transparently(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start_session(client, workspace)
    scripted_llm.script(Reply.error(429), Reply.text("After a retry."))
    result = await client.call("session/prompt", {"sessionId": sid, "input": "hi"})
    assert result["stopReason"] == "end_turn"
    assert client.events("session:error", sid) == []
    assert len(scripted_llm.requests) == 2


async def test_many_sessions_share_one_process(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    await client.initialize()
    ids = [
        (await client.create_session(workspace, model="anthropic/claude-test"))["sessionId"]
        for _ in range(3)
    ]
    assert len(set(ids)) == 3
    scripted_llm.script(*[Reply.text(f"answer {i}") for i in range(3)])
    results = await asyncio.gather(
        *[client.call("session/prompt", {"sessionId": sid, "input": "hi"}) for sid in ids]
    )
    assert [r["stopReason"] for r in results] == ["end_turn"] * 3
    for sid in ids:
        assert [e.params["state"] for e in client.events("state:update", sid)] == [
            "processing",
            "idle",
        ]


async def test_prompts_sent_while_busy_are_queued_and_each_answered(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = await start_session(client, workspace)
    gate = threading.Event()
    scripted_llm.script(Reply.text("first", gate=gate), Reply.text("second"))
    first = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "one"}))
    await client.wait_for("message:text:chunk", lambda p: p["sessionId"] == sid)
    second = asyncio.ensure_future(
        client.call("session/prompt", {"sessionId": sid, "input": "two"})
    )
    await client.read_so_far()
    assert not second.done()
    gate.set()
    r1, r2 = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert r1["stopReason"] == r2["stopReason"] == "end_turn"
    texts = [e.params["content"] for e in client.events("message:complete", sid)]
    assert texts == ["first", "second"]


async def test_mode_update_emits_mode_notification(client: WireClient, workspace):
    sid = await start_session(client, workspace)
    assert await client.call("mode/update", {"sessionId": sid, "mode": "Plan"}) == {"mode": "Plan"}
    event = await client.wait_for("mode:update")
    assert event.params == {
        "sessionId": sid,
        "agentId": "main",
        "seq": event.params["seq"],
        "mode": "Plan",
    }
    with pytest.raises(RpcFailure) as err:
        await client.call("mode/update", {"sessionId": sid, "mode": "Yolo"})
    assert err.value.code == -32602


async def test_no_model_configured(tmp_path, workspace):
    env = {"SEMA_ROOT": str(tmp_path / "root"), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    async with WireClient(env=env) as client:
        await client.initialize()
        ready = await client.create_session(workspace)
        await client.wait_for("config:no_models")
        for _ in range(2):
            with pytest.raises(RpcFailure) as err:
                await client.call(
                    "session/prompt", {"sessionId": ready["sessionId"], "input": "hi"}
                )
            assert err.value.code == -32012 and "ANTHROPIC_API_KEY" in err.value.error["message"]
        await client.call("session/list", {})  # everything the prompts emitted has arrived
        assert len(client.events("config:no_models")) == 1, "sent once, with session:ready"


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai/gpt-4.1", "OPENAI_API_KEY"),
        ("mistral/large", "unknown provider 'mistral'"),
        ("mystery", "models.json"),
    ],
)
async def test_a_model_that_cannot_run_is_refused_at_session_create(
    tmp_path, workspace, model: str, named: str
):
    """Not at the first prompt with the SDK's text: -32014 naming what to set, and no
    session exists afterwards."""
    env = {
        "SEMA_ROOT": str(tmp_path / "root"),
        "ANTHROPIC_API_KEY": "",
        "ANTHROPIC_AUTH_TOKEN": "",
        "OPENAI_API_KEY": "",
    }
    async with WireClient(env=env) as client:
        await client.initialize()
        params = {"workingDir": str(workspace), "model": model, "sessionId": "s1"}
        with pytest.raises(RpcFailure) as err:
            await client.call("session/create", params)
        assert err.value.code == -32014 and named in err.value.error["message"]
        assert "\n" not in err.value.error["message"]
        with pytest.raises(RpcFailure) as err:
            await client.call("session/prompt", {"sessionId": "s1", "input": "hi"})
        assert err.value.code == -32010
        assert client.events("session:ready") == []


async def test_eof_on_stdin_is_an_orderly_shutdown(client: WireClient, workspace):
    await start_session(client, workspace)
    assert await client.close() == 0
