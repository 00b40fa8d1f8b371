"""Recorded real provider streams, served verbatim, must parse to the SDK helper's result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sema_rpc.core.messages import (
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from sema_rpc.providers.anthropic import AnthropicProvider
from sema_rpc.providers.openai_chat import OpenAIChatProvider
from tests.providers.helpers import ANTHROPIC, CASSETTES, CHAT, CHAT_ERRORS, collect, expected
from tests.support.scripted_llm import Reply, ScriptedLLM


def test_cassettes_found() -> None:
    assert len(ANTHROPIC) >= 13 and len(CHAT) >= 10


def _blocks(message: Any) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for b in message.content:
        if isinstance(b, TextBlock):
            out.append(("text", b.text))
        elif isinstance(b, ThinkingBlock):
            out.append(("thinking", b.thinking, b.signature))
        elif isinstance(b, RedactedThinkingBlock):
            out.append(("redacted_thinking", b.data))
        elif isinstance(b, ToolUseBlock):
            out.append(("tool_use", b.id, b.name, b.input))
    return out


def _expected_anthropic_blocks(exp: dict[str, Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for b in exp["content"]:
        t = b["type"]
        if t == "text" and b["text"]:
            out.append(("text", b["text"]))
        elif t == "thinking":
            out.append(("thinking", b["thinking"], b.get("signature") or None))
        elif t == "redacted_thinking":
            out.append(("redacted_thinking", b["data"]))
        elif t == "tool_use":
            out.append(("tool_use", b["id"], b["name"], b["input"]))
    return out


@pytest.fixture(scope="module")
def llm() -> Any:
    with ScriptedLLM() as server:
        yield server


@pytest.mark.parametrize("name", ANTHROPIC)
async def test_anthropic_cassette(llm: ScriptedLLM, name: str) -> None:
    llm.script(Reply.raw(CASSETTES / f"{name}.sse", piece_size=61))
    provider = AnthropicProvider("test-key", llm.url, max_retries=0)
    got = await collect(provider)
    await provider.aclose()
    exp = expected(name)
    done = got.done
    assert _blocks(done.message) == _expected_anthropic_blocks(exp)
    assert done.stop_reason == exp["stop_reason"]
    u = exp["usage"]
    assert done.usage.input_tokens == u["input_tokens"]
    assert done.usage.output_tokens == u["output_tokens"]
    assert done.usage.cache_creation_input_tokens == (u.get("cache_creation_input_tokens") or 0)
    assert done.usage.cache_read_input_tokens == (u.get("cache_read_input_tokens") or 0)
    # Deltas: none lost, none repeated.
    assert got.text == done.message.text()
    assert got.thinking == done.message.thinking()
    if name == "anthropic_max_tokens_1":
        # Decision: stop_reason arrived, so the response is complete (stop max_tokens);
        # the truncated tool JSON is partial-parsed like the SDK and its raw text kept.
        (tool,) = done.message.tool_uses()
        assert done.raw_tool_inputs[tool.id].endswith('"Filing taxes')
    else:
        assert done.raw_tool_inputs == {}


def _expected_chat(exp: dict[str, Any]) -> dict[str, Any]:
    msg = exp["choices"][0]["message"]
    thinking = msg.get("reasoning_content") or msg.get("reasoning")
    signature = None
    for d in msg.get("reasoning_details") or []:
        signature = d.get("signature") or signature
    return {
        "text": msg.get("content") or "",
        "thinking": thinking or "",
        "signature": signature,
        "tools": [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in msg.get("tool_calls") or []
        ],
        "finish": exp["choices"][0]["finish_reason"],
    }


@pytest.mark.parametrize("name", CHAT)
async def test_chat_cassette(llm: ScriptedLLM, name: str) -> None:
    llm.script(Reply.raw(CASSETTES / f"{name}.sse", piece_size=61))
    provider = OpenAIChatProvider("test-key", llm.openai_url, max_retries=0)
    got = await collect(provider)
    await provider.aclose()
    exp = expected(name)
    if name in CHAT_ERRORS:
        failed = got.failed
        assert failed.error.kind == "stream_error"
        assert exp["error_body"]["message"] in failed.error.message
        want = _expected_chat(exp["partial_snapshot_before_error"])
        assert got.thinking == want["thinking"]
        assert got.text == want["text"]
        return
    want = _expected_chat(exp)
    done = got.done
    msg = done.message
    assert msg.text() == want["text"] == got.text
    assert msg.thinking() == want["thinking"] == got.thinking
    thinking_blocks = [b for b in msg.content if isinstance(b, ThinkingBlock)]
    if want["thinking"]:
        assert thinking_blocks[0].signature == want["signature"]
    assert [(t.id, t.name, t.input) for t in msg.tool_uses()] == want["tools"]
    finish_map = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
    assert done.stop_reason == finish_map[want["finish"]]
    usage = exp.get("usage")
    if usage:
        assert done.usage.prompt_tokens == usage["prompt_tokens"]
        assert done.usage.output_tokens == usage["completion_tokens"]
    else:  # Azure: no usage chunk at all
        assert done.usage.prompt_tokens == 0
