"""Providers against the scripted server: requests, retries, error kinds, cut streams."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from sema_rpc.core.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from sema_rpc.core.stream import ModelRequest, TextDelta, ToolSpec
from sema_rpc.providers.anthropic import AnthropicProvider
from sema_rpc.providers.openai_chat import OpenAIChatProvider
from tests.providers.helpers import collect, request
from tests.support.ports import refusing_port
from tests.support.scripted_llm import Reply, ScriptedLLM

KINDS = ["anthropic", "openai"]
TRANSPORT = "http"


@pytest.fixture(autouse=True, params=["http", "sdk"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs through the production (light) path and through the SDK."""
    global TRANSPORT
    TRANSPORT = request.param
    yield request.param
    TRANSPORT = "http"


def make(kind: str, llm: ScriptedLLM, retries: int = 2) -> AnthropicProvider | OpenAIChatProvider:
    if kind == "anthropic":
        return AnthropicProvider("test-key", llm.url, max_retries=retries, transport=TRANSPORT)
    return OpenAIChatProvider("test-key", llm.openai_url, max_retries=retries, transport=TRANSPORT)


HISTORY = [
    Message.user_text("Read a.py"),
    Message(
        role="assistant",
        content=[
            ThinkingBlock(thinking="I should read it.", signature="sig-1"),
            ThinkingBlock(thinking="unsigned (other provider)"),
            TextBlock(text="Reading."),
            ToolUseBlock(id="t1", name="Read", input={"file_path": "a.py"}),
        ],
    ),
    Message(
        role="user",
        content=[
            ToolResultBlock(tool_use_id="t1", content="print(1)"),
            TextBlock(text="and be brief"),
        ],
    ),
]
TOOLS = [ToolSpec("Read", "Read a file", {"type": "object", "properties": {}})]


@pytest.mark.parametrize("kind", KINDS)
async def test_turn_with_thinking_text_and_tools(scripted_llm: ScriptedLLM, kind: str) -> None:
    scripted_llm.script(
        Reply.turn(
            thinking="Let me think.",
            text="Looking at both.",
            tools=[("Read", {"file_path": "a.py"}), ("Glob", {"pattern": "*.py"})],
            usage=(100, 20),
        )
    )
    p = make(kind, scripted_llm)
    got = await collect(p)
    done = got.done
    assert done.stop_reason == "tool_use"
    assert done.message.text() == got.text == "Looking at both."
    assert done.message.thinking() == got.thinking == "Let me think."
    assert [(t.name, t.input) for t in done.message.tool_uses()] == [
        ("Read", {"file_path": "a.py"}),
        ("Glob", {"pattern": "*.py"}),
    ]
    assert (done.usage.prompt_tokens, done.usage.output_tokens) == (100, 20)
    if kind == "anthropic":
        assert done.message.content[0].signature == "sig-scripted"  # type: ignore[union-attr]
    await p.aclose()


async def test_anthropic_request_shape(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(Reply.text("ok"))
    p = make("anthropic", scripted_llm)
    req = ModelRequest(
        model="claude-x",
        system="SYS",
        messages=HISTORY,
        tools=TOOLS,
        max_tokens=2000,
        thinking_budget=4000,
    )
    await collect(p, req)
    (r,) = scripted_llm.requests
    assert r.path == "/v1/messages"
    body = r.body
    assert body["model"] == "claude-x" and body["system"] == "SYS" and body["stream"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["max_tokens"] > 4000
    assert body["tools"] == [
        {"name": "Read", "description": "Read a file", "input_schema": TOOLS[0].input_schema}
    ]
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "I should read it.", "signature": "sig-1"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"},
        {"type": "text", "text": "and be brief"},
    ]
    await p.aclose()


@pytest.mark.parametrize(
    ("model", "param"),
    [
        ("gpt-4o", "max_tokens"),
        ("gpt-5-mini", "max_completion_tokens"),
        ("o3", "max_completion_tokens"),
    ],
)
async def test_openai_request_shape(scripted_llm: ScriptedLLM, model: str, param: str) -> None:
    scripted_llm.script(Reply.text("ok"))
    p = make("openai", scripted_llm)
    req = ModelRequest(model=model, system="SYS", messages=HISTORY, tools=TOOLS, max_tokens=777)
    await collect(p, req)
    body = scripted_llm.requests[0].body
    assert scripted_llm.requests[0].path == "/v1/chat/completions"
    assert body[param] == 777
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"file_path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "print(1)"},
        {"role": "user", "content": "and be brief"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Read a file",
            "parameters": TOOLS[0].input_schema,
        },
    }
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_429_then_success(scripted_llm: ScriptedLLM, kind: str) -> None:
    scripted_llm.script(Reply.error(429, retry_after_ms=5), Reply.text("after retry"))
    p = make(kind, scripted_llm, retries=2)
    got = await collect(p)
    assert got.done.message.text() == "after retry"
    assert len(scripted_llm.requests) == 2
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "expected"),
    [(429, "rate_limit"), (529, "overloaded"), (500, "server_error"), (503, "server_error")],
)
async def test_retries_exhausted(
    scripted_llm: ScriptedLLM, kind: str, status: int, expected: str
) -> None:
    scripted_llm.script(*(Reply.error(status, message=f"boom {status}") for _ in range(3)))
    p = make(kind, scripted_llm, retries=2)
    got = await collect(p)
    err = got.failed.error
    assert (err.kind, err.status) == (expected, status)
    assert f"boom {status}" in err.message
    assert len(scripted_llm.requests) == 3  # first try + 2 retries
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (400, "prompt is too long: 250000 tokens > 200000 maximum", "context_length_exceeded"),
        (400, "This model's maximum context length is 128000 tokens", "context_length_exceeded"),
        (400, "messages.0: bad block", "invalid_request"),
        (401, "invalid x-api-key", "authentication"),
        (403, "forbidden", "authentication"),
        (404, "model: nope", "not_found"),
    ],
)
async def test_client_errors_not_retried(
    scripted_llm: ScriptedLLM, kind: str, status: int, message: str, expected: str
) -> None:
    scripted_llm.script(Reply.error(status, message=message))
    p = make(kind, scripted_llm, retries=2)
    got = await collect(p)
    assert got.failed.error.kind == expected
    assert got.failed.error.message == message
    assert len(scripted_llm.requests) == 1
    await p.aclose()


@pytest.mark.parametrize(
    ("kind", "error_type", "expected"),
    [
        ("anthropic", "overloaded_error", "overloaded"),
        ("anthropic", "api_error", "stream_error"),
        ("openai", "server_error", "stream_error"),
    ],
)
async def test_mid_stream_error(
    scripted_llm: ScriptedLLM, kind: str, error_type: str, expected: str
) -> None:
    scripted_llm.script(Reply.mid_stream_error("Half an ans", error_type=error_type))
    p = make(kind, scripted_llm)
    got = await collect(p)
    failed = got.failed
    assert failed.error.kind == expected
    assert failed.error.code == error_type
    assert got.text == "Half an ans"  # what streamed before the failure, as deltas
    assert len(scripted_llm.requests) == 1
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("abrupt", [False, True])
async def test_cut_stream(scripted_llm: ScriptedLLM, kind: str, abrupt: bool) -> None:
    scripted_llm.script(Reply.cut("Partial ans", abrupt=abrupt))
    p = make(kind, scripted_llm)
    got = await collect(p)
    failed = got.failed
    assert failed.error.kind == "stream_cut"
    assert got.text == "Partial ans"
    await p.aclose()


def _closed_port() -> int:
    return refusing_port()


@pytest.mark.parametrize("kind", KINDS)
async def test_connection_refused(kind: str) -> None:
    port = _closed_port()
    if kind == "anthropic":
        p: AnthropicProvider | OpenAIChatProvider = AnthropicProvider(
            "k", f"http://127.0.0.1:{port}", max_retries=0, transport=TRANSPORT
        )
    else:
        p = OpenAIChatProvider(
            "k", f"http://127.0.0.1:{port}/v1", max_retries=0, transport=TRANSPORT
        )
    got = await collect(p)
    assert got.failed.error.kind == "connection"
    assert got.text == ""
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_script_exhausted_fails_loudly(scripted_llm: ScriptedLLM, kind: str) -> None:
    p = make(kind, scripted_llm, retries=2)
    got = await collect(p)
    assert got.failed.error.kind == "server_error"
    assert "script exhausted" in got.failed.error.message
    assert len(scripted_llm.requests) == 1  # x-should-retry: false
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_big_stream(scripted_llm: ScriptedLLM, kind: str) -> None:
    reply = Reply.text(deltas=20_000)
    scripted_llm.script(reply)
    p = make(kind, scripted_llm)
    got = await collect(p)
    deltas = [e for e in got.events if isinstance(e, TextDelta)]
    assert len(deltas) == 20_000
    assert got.done.message.text() == got.text == reply.answer
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_gate_and_cancel(scripted_llm: ScriptedLLM, kind: str) -> None:
    """An interrupt cancels the consumer mid-stream: the provider closes cleanly."""
    gate = threading.Event()
    reply = Reply.text("one two three four", chunks=4, gate=gate)
    scripted_llm.script(reply, Reply.text("next"))
    p = make(kind, scripted_llm)
    first: list[str] = []
    all_text = asyncio.Event()

    async def consume() -> None:
        async for ev in p.stream(request()):
            if isinstance(ev, TextDelta):
                first.append(ev.text)
                if "".join(first) == "one two three four":
                    all_text.set()

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(reply.at_gate.wait, 5)
    await asyncio.wait_for(all_text.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    got = await collect(p)  # the provider is still usable
    assert got.done.message.text() == "next"
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrent_streams(scripted_llm: ScriptedLLM, kind: str) -> None:
    scripted_llm.script(*(Reply.text("abcdef", chunks=6, delay_s=0.02) for _ in range(4)))
    p = make(kind, scripted_llm)
    results = await asyncio.gather(*(collect(p) for _ in range(4)))
    assert [r.done.message.text() for r in results] == ["abcdef"] * 4
    await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_idle_timeout_applies_to_a_given_http_client(
    scripted_llm: ScriptedLLM, kind: str
) -> None:
    """A provider around someone else's HTTP client (recording, replay) still gives up a
    stalled stream after its idle timeout, not the client's own 600 s."""
    from sema_rpc.providers.recording import recording_http_client

    gate = threading.Event()
    scripted_llm.script(Reply.text("one two", chunks=2, gate=gate))
    client = recording_http_client(lambda exchange: None, kind)
    url = scripted_llm.url if kind == "anthropic" else scripted_llm.openai_url
    cls = AnthropicProvider if kind == "anthropic" else OpenAIChatProvider
    p = cls("k", url, max_retries=0, idle_timeout=0.5, http_client=client, transport=TRANSPORT)
    try:
        got = await asyncio.wait_for(collect(p), 20)
    finally:
        gate.set()
        await client.aclose()
    assert got.failed.error.kind == "idle_timeout"
    assert got.text == "one two"
