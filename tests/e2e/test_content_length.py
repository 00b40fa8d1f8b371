"""The default framing (LSP Content-Length), driven by pytest-lsp's client over real pipes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM

if TYPE_CHECKING:
    from tests.support.lsp_client import SemaLspClient


@pytest.fixture
async def lsp_client(server_env: dict[str, str]) -> AsyncIterator[SemaLspClient]:
    # pygls and lsprotocol load here, not at collection: every parallel worker collects
    # every module, and lsprotocol alone is about a second of start-up.
    from tests.support.lsp_client import SemaLspClient, config

    client = await config(server_env).start()
    assert isinstance(client, SemaLspClient)
    yield client
    await client.stop()


async def test_content_length_session_round_trip(
    lsp_client: SemaLspClient, scripted_llm: ScriptedLLM, workspace
):
    init = await lsp_client.call(
        "initialize", {"protocolVersion": 1, "clientInfo": {"name": "pytest-lsp"}}
    )
    assert init["protocolVersion"] == 1
    assert "session/prompt" in init["capabilities"]["methods"]

    ready = await lsp_client.call(
        "session/create", {"workingDir": str(workspace), "model": "anthropic/claude-x"}
    )
    sid = ready["sessionId"]
    scripted_llm.script(
        Reply.tools(
            [("Glob", {"pattern": "src/*.py"}), ("Read", {"file_path": "README.md"})],
            text="Looking.",
            usage=(140, 20),
        ),
        Reply.text(
            "Eight modules and a README — ünïcödé and a line\u2028separator survive.",
            chunks=5,
            usage=(700, 15),
        ),
    )
    result = await lsp_client.call("session/prompt", {"sessionId": sid, "input": "What is here?"})

    assert result["stopReason"] == "end_turn"
    methods = [m for m, _ in lsp_client.notifications]
    assert methods[0] == "session:ready"
    assert methods.count("tool:execution:complete") == 2
    text = "".join(p["delta"] for m, p in lsp_client.notifications if m == "message:text:chunk")
    assert text == "Looking.Eight modules and a README — ünïcödé and a line\u2028separator survive."

    # The Glob + Read batch ran concurrently: both started before either finished.
    starts = lsp_client.of("tool:execution:start", sid)
    completes = lsp_client.of("tool:execution:complete", sid)
    assert sorted(s["toolName"] for s in starts) == ["Glob", "Read"]
    assert sorted(c["toolName"] for c in completes) == ["Glob", "Read"]
    assert max(s["seq"] for s in starts) < min(c["seq"] for c in completes)

    # The results went back to the model in the model's order, each with its own output.
    second = scripted_llm.requests[1].body
    uses = [b for b in second["messages"][-2]["content"] if b["type"] == "tool_use"]
    results = [b for b in second["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [u["name"] for u in uses] == ["Glob", "Read"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    glob_out, read_out = (
        r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in results
    )
    assert "mod0.py" in glob_out and "mod7.py" in glob_out
    assert "A tiny project." in read_out

    # Usage: one report per model response; the prompt answers with the last one.
    usage = lsp_client.of("conversation:usage", sid)
    assert len(usage) == 2
    assert usage[-1]["usage"]["promptTokens"] == 700
    assert usage[-1]["usage"]["useTokens"] == 715
    assert usage[-1]["usage"]["maxTokens"] > 0
    assert result["usage"] == usage[-1]["usage"]

    assert await lsp_client.call("shutdown", None) == {}
    lsp_client.protocol.notify("exit", None)


async def test_content_length_interrupt_during_streaming(
    lsp_client: SemaLspClient, scripted_llm: ScriptedLLM, workspace
):
    await lsp_client.call(
        "initialize", {"protocolVersion": 1, "clientInfo": {"name": "pytest-lsp"}}
    )
    ready = await lsp_client.call(
        "session/create", {"workingDir": str(workspace), "model": "anthropic/claude-x"}
    )
    sid = ready["sessionId"]
    gate = threading.Event()  # holds the stream open until the test is done with it
    slow = Reply.text("This answer will be interrupted halfway.", chunks=8, gate=gate)
    scripted_llm.script(slow, Reply.text("Fresh answer.", chunks=2))
    try:
        prompt = asyncio.ensure_future(
            lsp_client.call("session/prompt", {"sessionId": sid, "input": "long answer"})
        )
        await lsp_client.wait_for("message:text:chunk", predicate=lambda p: p["sessionId"] == sid)
        assert slow.at_gate.is_set() and not prompt.done()

        started = time.monotonic()
        first = await lsp_client.call("session/interrupt", {"sessionId": sid})
        answered_in = time.monotonic() - started
        # Answered at once: the model stream is still held open by the gate (set only in
        # `finally`), so the answer did not wait for the stream or the turn to end.
        assert first == {"interrupted": True}
        assert answered_in < 2, answered_in
        response = await asyncio.wait_for(prompt, 10)
        assert response["stopReason"] == "interrupted"
        again = await lsp_client.call("session/interrupt", {"sessionId": sid})
        assert again == {"interrupted": False}, "interrupt is idempotent"
    finally:
        gate.set()

    (interrupted,) = lsp_client.of("session:interrupted", sid)
    assert interrupted["checkpoint"] == 1
    states = [p["state"] for p in lsp_client.of("state:update", sid)]
    assert states == ["processing", "idle"]

    # The session serves the next prompt to the end.
    nxt = await lsp_client.call("session/prompt", {"sessionId": sid, "input": "again"})
    assert nxt["stopReason"] == "end_turn"
    assert lsp_client.of("message:complete", sid)[-1]["content"] == "Fresh answer."
    assert "again" in str(scripted_llm.requests[-1].body["messages"])

    # Every request was answered exactly once; the prompt's answer was `interrupted` once.
    ids = [r.id for r in lsp_client.responses]
    assert len(ids) == len(set(ids)), lsp_client.responses
    stops = [
        r.result["stopReason"]
        for r in lsp_client.responses
        if isinstance(r.result, dict) and "stopReason" in r.result
    ]
    assert stops == ["interrupted", "end_turn"]
