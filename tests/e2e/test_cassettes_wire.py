"""Every recorded real provider stream, served verbatim by the scripted model server, reaches
the editor over the wire as the text, thinking and tool calls the official SDK assembled.

The same cassettes as tests/providers/test_cassettes.py (read from the shared folder, never
copied into the repo), but through the whole stack: a real `sema-rpc --jsonl` subprocess,
a session whose model is `anthropic/…` or `openai/…`, the real SDK talking HTTP to the
scripted server, and what the client observes: the concatenated `message:text:chunk` /
`message:thinking:chunk` deltas, `message:complete` and the prompt's answer.

One server process serves every cassette (a new session each), so the file runs in seconds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.providers.helpers import ANTHROPIC, CASSETTES, CHAT, CHAT_ERRORS, expected
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import Received, WireClient

module_loop = pytest.mark.asyncio(loop_scope="module")
"""Every test shares the module's event loop, where the one server's client lives."""
FOLLOW_UP = "Done with the tools."


def test_cassettes_found() -> None:
    assert len(ANTHROPIC) >= 13 and len(CHAT) >= 10
    assert CHAT_ERRORS <= set(CHAT)


# ------------------------------------------------------------------ one server for the module


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cassette-workspace")
    (root / "README.md").write_text("# Cassettes\n")
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def wire(
    llm: ScriptedLLM, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WireClient]:
    sema_root = tmp_path_factory.mktemp("sema-root")
    env = {
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-test-openai-000000",
        "OPENAI_BASE_URL": llm.openai_url,
        "SEMA_MAX_RETRIES": "0",
        "SEMA_LOG_LEVEL": "WARNING",
    }
    async with WireClient(env=env) as client:
        await client.initialize()
        yield client


# ------------------------------------------------------------------ helpers


async def play(
    wire: WireClient, llm: ScriptedLLM, workdir: Path, name: str, model: str, *, tools: bool
) -> tuple[str, dict[str, Any]]:
    """Serve cassette `name` verbatim to a new session's first prompt; with `tools`, the
    engine runs the (unknown, so failing) tools and calls the model once more: that call
    gets a scripted plain answer so the turn ends."""
    llm.reset()
    llm.script(Reply.raw(CASSETTES / f"{name}.sse", piece_size=61))
    if tools:
        llm.script(Reply.text(FOLLOW_UP, chunks=1))
    sid = (await wire.create_session(workdir, model=model))["sessionId"]
    result = await wire.call(
        "session/prompt", {"sessionId": sid, "input": f"play {name}"}, timeout=30
    )
    assert llm.pending == 0, "every scripted reply was asked for"
    assert len(llm.requests) == (2 if tools else 1)
    return sid, result


def first_response(wire: WireClient, sid: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(text deltas, thinking deltas, message:complete, conversation:usage) of the first
    model response of session `sid`, as the client received them."""
    events = wire.events(session_id=sid)
    i = next(n for n, e in enumerate(events) if e.method == "message:complete")
    text = "".join(e.params["delta"] for e in events[:i] if e.method == "message:text:chunk")
    thinking = "".join(
        e.params["delta"] for e in events[:i] if e.method == "message:thinking:chunk"
    )
    usage = next(e for e in events[i:] if e.method == "conversation:usage")
    return text, thinking, events[i].params, usage.params["usage"]


def deltas(events: list[Received], method: str) -> str:
    return "".join(e.params["delta"] for e in events if e.method == method)


def assert_turn_ended(wire: WireClient, sid: str, result: dict[str, Any], tool_ids: list[str]):
    states = [e.params["state"] for e in wire.events("state:update", sid)]
    assert states == ["processing", "idle"]
    # Tools the recording names do not exist here: each call is answered with an error.
    assert [e.params["toolCallId"] for e in wire.events("tool:execution:error", sid)] == tool_ids
    if tool_ids:
        assert wire.events("message:complete", sid)[-1].params["content"] == FOLLOW_UP
        assert result["stopReason"] == "end_turn"
    seqs = [e.params["seq"] for e in wire.events(session_id=sid)]
    assert seqs == list(range(1, len(seqs) + 1))


# ------------------------------------------------------------------ Anthropic Messages


@module_loop
@pytest.mark.parametrize("name", ANTHROPIC)
async def test_anthropic_cassette_over_the_wire(
    wire: WireClient, llm: ScriptedLLM, workdir: Path, name: str
) -> None:
    exp = expected(name)
    content = exp["content"]
    want_text = "".join(b["text"] for b in content if b["type"] == "text")
    want_thinking = "".join(b["thinking"] for b in content if b["type"] == "thinking")
    want_tools = [
        {"id": b["id"], "name": b["name"], "args": b["input"]}
        for b in content
        if b["type"] == "tool_use"
    ]

    sid, result = await play(
        wire, llm, workdir, name, "anthropic/claude-cassette", tools=bool(want_tools)
    )

    assert result["stopReason"] == "end_turn", result
    text, thinking, complete, usage = first_response(wire, sid)
    assert text == want_text
    assert complete["content"] == want_text
    assert thinking == want_thinking
    assert complete["reasoning"] == want_thinking
    assert complete["toolCalls"] == want_tools
    assert complete["hasToolCalls"] is bool(want_tools)
    assert complete["stopReason"] == exp["stop_reason"]

    u = exp["usage"]
    prompt = (
        u["input_tokens"]
        + (u.get("cache_creation_input_tokens") or 0)
        + (u.get("cache_read_input_tokens") or 0)
    )
    assert usage["promptTokens"] == prompt
    assert usage["useTokens"] == prompt + u["output_tokens"]

    if want_tools:
        # The results went back under the recorded ids, in the recorded order.
        second = llm.requests[1].body
        results = [b for b in second["messages"][-1]["content"] if b["type"] == "tool_result"]
        assert [r["tool_use_id"] for r in results] == [t["id"] for t in want_tools]
    assert_turn_ended(wire, sid, result, [t["id"] for t in want_tools])


# ------------------------------------------------------------------ OpenAI Chat Completions


def _expected_chat(exp: dict[str, Any]) -> dict[str, Any]:
    msg = exp["choices"][0]["message"]
    return {
        "text": msg.get("content") or "",
        "thinking": msg.get("reasoning_content") or msg.get("reasoning") or "",
        "tools": [
            {
                "id": c["id"],
                "name": c["function"]["name"],
                "args": json.loads(c["function"]["arguments"] or "{}"),
            }
            for c in msg.get("tool_calls") or []
        ],
        "finish": exp["choices"][0]["finish_reason"],
    }


FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


@module_loop
@pytest.mark.parametrize("name", sorted(set(CHAT) - CHAT_ERRORS))
async def test_chat_cassette_over_the_wire(
    wire: WireClient, llm: ScriptedLLM, workdir: Path, name: str
) -> None:
    exp = expected(name)
    want = _expected_chat(exp)

    sid, result = await play(
        wire, llm, workdir, name, "openai/gpt-cassette", tools=bool(want["tools"])
    )

    assert result["stopReason"] == "end_turn", result
    text, thinking, complete, usage = first_response(wire, sid)
    assert text == want["text"]
    assert complete["content"] == want["text"]
    assert thinking == want["thinking"]
    assert complete["reasoning"] == want["thinking"]
    assert complete["toolCalls"] == want["tools"]
    assert complete["hasToolCalls"] is bool(want["tools"])
    assert complete["stopReason"] == FINISH[want["finish"]]

    recorded = exp.get("usage")
    if recorded:
        assert usage["promptTokens"] == recorded["prompt_tokens"]
        assert usage["useTokens"] == recorded["prompt_tokens"] + recorded["completion_tokens"]
    else:  # Azure sends no usage: the prompt is counted locally
        assert usage["promptTokens"] > 0
        assert usage["useTokens"] == usage["promptTokens"]

    if want["tools"]:
        second = llm.requests[1].body
        answered = [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"]
        assert answered == [t["id"] for t in want["tools"]]
    assert_turn_ended(wire, sid, result, [t["id"] for t in want["tools"]])


@module_loop
@pytest.mark.parametrize("name", sorted(CHAT_ERRORS))
async def test_recorded_error_stream_ends_the_prompt_with_error(
    wire: WireClient, llm: ScriptedLLM, workdir: Path, name: str
) -> None:
    exp = expected(name)
    partial = _expected_chat(exp["partial_snapshot_before_error"])

    sid, result = await play(wire, llm, workdir, name, "openai/gpt-cassette", tools=False)

    assert result["stopReason"] == "error"
    assert result["error"]["code"] == "stream_error"
    assert exp["error_body"]["message"] in result["error"]["message"]
    (error,) = wire.events("session:error", sid)
    assert error.params["error"]["code"] == "stream_error"
    assert exp["error_body"]["message"] in error.params["error"]["message"]
    # What streamed before the error reached the client, no more, no less.
    events = wire.events(session_id=sid)
    assert deltas(events, "message:thinking:chunk") == partial["thinking"]
    assert deltas(events, "message:text:chunk") == partial["text"]
    assert wire.events("message:complete", sid) == []
    assert [e.params["state"] for e in wire.events("state:update", sid)] == ["processing", "idle"]
    # The process keeps serving: no stray answers.
    assert wire.unsolicited == []
