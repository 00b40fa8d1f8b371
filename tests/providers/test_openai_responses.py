"""OpenAI Responses provider: recorded streams, the scripted server, request building."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from sema_rpc.core.stream import ModelRequest, ThinkingDelta, ToolSpec
from sema_rpc.providers import registry
from sema_rpc.providers.openai_responses import (
    SUMMARY_SEPARATOR,
    OpenAIResponsesProvider,
    build_params,
)
from tests.providers.helpers import CASSETTES, collect, request
from tests.support.scripted_llm import Reply, ScriptedLLM

RESPONSES = sorted(p.stem for p in CASSETTES.glob("openai_responses_*.sse"))


TRANSPORT = "http"


@pytest.fixture(autouse=True, params=["http", "sdk"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs through the production (light) path and through the SDK."""
    global TRANSPORT
    TRANSPORT = request.param
    yield request.param
    TRANSPORT = "http"


def make(llm: ScriptedLLM, retries: int = 2) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(
        "test-key", llm.openai_url, max_retries=retries, transport=TRANSPORT
    )


# ---- recorded streams ------------------------------------------------------------------


@pytest.fixture(scope="module")
def llm() -> Any:
    with ScriptedLLM() as server:
        yield server


def _expected(name: str) -> dict[str, Any]:
    exp = json.loads((CASSETTES / "expected" / f"{name}.json").read_text())
    text: list[str] = []
    reasoning: list[dict[str, Any]] = []
    calls: list[tuple[str, str, Any]] = []
    for item in exp["output"]:
        if item["type"] == "message":
            text += [c["text"] for c in item["content"] if c["type"] == "output_text"]
        elif item["type"] == "reasoning":
            reasoning.append(
                {
                    "thinking": SUMMARY_SEPARATOR.join(s["text"] for s in item["summary"]),
                    "item_id": item["id"],
                    "encrypted_content": item.get("encrypted_content"),
                }
            )
        elif item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], json.loads(item["arguments"] or "{}")))
    status = exp["status"]
    if status == "completed":
        stop = "tool_use" if calls else "end_turn"
    else:
        stop = {"max_output_tokens": "max_tokens"}[exp["incomplete_details"]["reason"]]
    return {**exp, "text": "".join(text), "reasoning": reasoning, "calls": calls, "stop": stop}


def test_responses_cassettes_found() -> None:
    assert len(RESPONSES) >= 4


@pytest.mark.parametrize(
    ("name", "piece_size"),
    [(n, 61) for n in RESPONSES]
    # 7-byte pieces split every event; skip the 194 KB stream (28k socket writes).
    + [(n, 7) for n in RESPONSES if (CASSETTES / f"{n}.sse").stat().st_size < 50_000],
)
async def test_responses_cassette(llm: ScriptedLLM, name: str, piece_size: int) -> None:
    llm.script(Reply.raw(CASSETTES / f"{name}.sse", piece_size=piece_size))
    provider = make(llm, retries=0)
    got = await collect(provider)
    await provider.aclose()
    want = _expected(name)
    done = got.done
    msg = done.message
    assert msg.text() == got.text == want["text"]
    thinking = [b for b in msg.content if isinstance(b, ThinkingBlock)]
    assert [
        {"thinking": b.thinking, "item_id": b.item_id, "encrypted_content": b.encrypted_content}
        for b in thinking
    ] == want["reasoning"]
    assert got.thinking == msg.thinking()
    assert [(t.id, t.name, t.input) for t in msg.tool_uses()] == want["calls"]
    assert done.stop_reason == want["stop"]
    assert done.raw_tool_inputs == {}
    u = want["usage"]
    cached = u["input_tokens_details"]["cached_tokens"]
    assert done.usage.input_tokens == u["input_tokens"] - cached
    assert done.usage.cache_read_input_tokens == cached
    assert done.usage.output_tokens == u["output_tokens"]
    # Content follows the output order (reasoning before the message / call it led to).
    kinds = [b.type for b in msg.content]
    want_kinds = [
        {"reasoning": "thinking", "message": "text", "function_call": "tool_use"}[i["type"]]
        for i in want["output"]
    ]
    assert kinds == want_kinds


async def test_reasoning_summary_parts_and_final_encrypted_content(llm: ScriptedLLM) -> None:
    llm.script(Reply.raw(CASSETTES / "openai_responses_reasoning_summary_1.sse"))
    provider = make(llm, retries=0)
    got = await collect(provider)
    await provider.aclose()
    deltas = [e.text for e in got.events if isinstance(e, ThinkingDelta)]
    assert len(deltas) == 383  # one per summary delta; separators ride on part openers
    assert sum(1 for d in deltas if d.startswith(SUMMARY_SEPARATOR)) == 3
    llm.script(Reply.raw(CASSETTES / "openai_responses_function_call_2.sse"))
    provider = make(llm, retries=0)
    block = (await collect(provider)).done.message.content[0]
    await provider.aclose()
    assert isinstance(block, ThinkingBlock) and block.thinking == ""
    assert block.encrypted_content is not None and len(block.encrypted_content) == 3896
    assert block.encrypted_content.startswith("gAAAAABoyXvynDJ_")  # response.completed


# ---- scripted server -------------------------------------------------------------------


async def test_text(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(Reply.text("Hello there, world", chunks=4, usage=(30, 7)))
    p = make(scripted_llm)
    got = await collect(p)
    done = got.done
    assert done.message.content == [TextBlock(text="Hello there, world")]
    assert got.text == "Hello there, world"
    assert done.stop_reason == "end_turn"
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 7)
    assert scripted_llm.requests[0].path == "/v1/responses"
    await p.aclose()


async def test_turn_with_reasoning_text_and_tools(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        Reply.turn(
            thinking="Let me think.",
            text="Looking at both.",
            tools=[("Read", {"file_path": "a.py"}, "call_1"), ("Glob", {"pattern": "*.py"})],
            usage=(100, 20),
        )
    )
    p = make(scripted_llm)
    got = await collect(p)
    done = got.done
    assert done.stop_reason == "tool_use"
    assert done.message.text() == got.text == "Looking at both."
    assert done.message.thinking() == got.thinking == "Let me think."
    first = done.message.content[0]
    assert isinstance(first, ThinkingBlock) and first.encrypted_content == "sig-scripted"
    assert first.item_id and first.item_id.startswith("rs_") and first.signature is None
    tools = done.message.tool_uses()
    assert [(t.name, t.input) for t in tools] == [
        ("Read", {"file_path": "a.py"}),
        ("Glob", {"pattern": "*.py"}),
    ]
    assert tools[0].id == "call_1"
    await p.aclose()


TOOLS = [ToolSpec("Read", "Read a file", {"type": "object", "properties": {}})]


async def test_tool_round_trip(scripted_llm: ScriptedLLM) -> None:
    """A tool call, its result sent back (with the encrypted reasoning), the answer."""
    scripted_llm.script(
        Reply.turn(thinking="Need the file.", tools=[("Read", {"file_path": "a.py"})]),
        Reply.text("It prints 1."),
    )
    p = make(scripted_llm)
    history = [Message.user_text("What does a.py do?")]
    first = (await collect(p, ModelRequest("gpt-5", "SYS", list(history), TOOLS))).done
    (call,) = first.message.tool_uses()
    history += [
        first.message,
        Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content="print(1)")]),
    ]
    second = await collect(p, ModelRequest("gpt-5", "SYS", history, TOOLS, thinking_budget=2000))
    assert second.done.message.text() == "It prints 1."
    body = scripted_llm.requests[1].body
    assert body["instructions"] == "SYS" and body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"summary": "auto"}
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What does a.py do?"}],
        },
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Need the file."}],
            "encrypted_content": "sig-scripted",
        },
        {
            "type": "function_call",
            "call_id": call.id,
            "name": "Read",
            "arguments": '{"file_path": "a.py"}',
        },
        {"type": "function_call_output", "call_id": call.id, "output": "print(1)"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "Read",
            "description": "Read a file",
            "parameters": TOOLS[0].input_schema,
            "strict": False,
        }
    ]
    await p.aclose()


def test_request_building() -> None:
    history = [
        Message.user_text("hi"),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(thinking="anthropic", signature="sig"),  # not OpenAI's: dropped
                RedactedThinkingBlock(data="x"),
                TextBlock(text="Part one. "),
                TextBlock(text="Part two."),
                ThinkingBlock(thinking="", item_id="rs_1", encrypted_content="enc-1"),
                ToolUseBlock(id="c1", name="Read", input={"p": 1}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_use_id="c1", content="no such file", is_error=True),
                TextBlock(text="go on"),
            ],
        ),
        # A reasoning item with nothing after it cannot be sent (the API rejects it).
        Message(role="assistant", content=[ThinkingBlock(thinking="t", encrypted_content="e")]),
    ]
    params = build_params(
        ModelRequest("gpt-4o", "", history, max_tokens=123, temperature=0.2, thinking_budget=1)
    )
    assert "instructions" not in params and "include" not in params and "reasoning" not in params
    assert params["temperature"] == 0.2 and params["max_output_tokens"] == 123
    assert params["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Part one. Part two."}],
        },
        {"type": "reasoning", "summary": [], "encrypted_content": "enc-1"},
        {"type": "function_call", "call_id": "c1", "name": "Read", "arguments": '{"p": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Error: no such file"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
    ]
    o3 = build_params(ModelRequest("o3", "S", [], temperature=0.2))
    assert "temperature" not in o3 and "reasoning" not in o3
    assert o3["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize(
    ("stop", "expected"), [("max_tokens", "max_tokens"), ("refusal", "refusal")]
)
async def test_incomplete(scripted_llm: ScriptedLLM, stop: str, expected: str) -> None:
    scripted_llm.script(Reply.text("Cut short", stop_reason=stop))
    p = make(scripted_llm)
    done = (await collect(p)).done
    assert done.stop_reason == expected and done.message.text() == "Cut short"
    await p.aclose()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("server_error", "stream_error"),
        ("rate_limit_exceeded", "rate_limit"),
        ("context_length_exceeded", "context_length_exceeded"),
    ],
)
async def test_mid_stream_error(scripted_llm: ScriptedLLM, code: str, expected: str) -> None:
    scripted_llm.script(Reply.mid_stream_error("Half an ans", error_type=code, message="bad"))
    p = make(scripted_llm)
    got = await collect(p)
    failed = got.failed
    assert (failed.error.kind, failed.error.code, failed.error.message) == (expected, code, "bad")
    assert got.text == "Half an ans"
    assert len(scripted_llm.requests) == 1
    await p.aclose()


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


async def test_response_failed_and_nested_error_event(scripted_llm: ScriptedLLM) -> None:
    created = {
        "type": "response.created",
        "sequence_number": 0,
        "response": {"id": "resp_1", "status": "in_progress", "output": []},
    }
    failed = {
        "type": "response.failed",
        "sequence_number": 1,
        "response": {
            "id": "resp_1",
            "status": "failed",
            "output": [],
            "error": {"code": "server_error", "message": "The model failed."},
        },
    }
    nested = {
        "type": "error",
        "sequence_number": 1,
        "error": {
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
            "param": "input",
        },
    }
    scripted_llm.script(Reply.raw(_sse(created, failed)), Reply.raw(_sse(created, nested)))
    p = make(scripted_llm)
    first = (await collect(p)).failed.error
    assert (first.kind, first.code, first.message) == (
        "stream_error",
        "server_error",
        "The model failed.",
    )
    second = (await collect(p)).failed.error
    assert (second.kind, second.code) == ("context_length_exceeded", "context_length_exceeded")
    await p.aclose()


async def test_cached_usage_and_done_only_items(scripted_llm: ScriptedLLM) -> None:
    """A server that sends items whole in output_item.done (no deltas) still streams them."""
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "Read",
        "arguments": '{"file_path": "x"}',
    }
    msg = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Reading x.", "annotations": []}],
    }
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 800},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1012,
    }
    body = _sse(
        {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}},
        {"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": msg},
        {
            "type": "response.output_item.done",
            "sequence_number": 2,
            "output_index": 1,
            "item": call,
        },
        {
            "type": "response.completed",
            "sequence_number": 3,
            "response": {"id": "r", "status": "completed", "output": [msg, call], "usage": usage},
        },
    )
    scripted_llm.script(Reply.raw(body))
    p = make(scripted_llm)
    got = await collect(p)
    done = got.done
    assert got.text == done.message.text() == "Reading x."
    assert [(t.id, t.input) for t in done.message.tool_uses()] == [("call_9", {"file_path": "x"})]
    assert done.stop_reason == "tool_use"
    assert (done.usage.input_tokens, done.usage.cache_read_input_tokens) == (200, 800)
    assert done.usage.prompt_tokens == 1000
    await p.aclose()


@pytest.mark.parametrize("abrupt", [False, True])
async def test_cut_stream(scripted_llm: ScriptedLLM, abrupt: bool) -> None:
    scripted_llm.script(Reply.cut("Partial ans", abrupt=abrupt))
    p = make(scripted_llm)
    got = await collect(p)
    assert got.failed.error.kind == "stream_cut"
    assert got.text == "Partial ans"
    await p.aclose()


async def test_http_errors(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        Reply.error(429, retry_after_ms=5),
        Reply.text("after retry"),
        Reply.error(400, message="This model's maximum context length is 128000 tokens"),
    )
    p = make(scripted_llm, retries=2)
    assert (await collect(p)).done.message.text() == "after retry"
    err = (await collect(p)).failed.error
    assert (err.kind, err.status) == ("context_length_exceeded", 400)
    assert len(scripted_llm.requests) == 3
    await p.aclose()


async def test_registry_and_replay_profile(tmp_path: Any) -> None:
    registry.clear_cache()
    p = registry.provider_for(ModelProfile("r", "openai-responses", "gpt-5", api_key="k"))
    assert isinstance(p, OpenAIResponsesProvider) and "k" not in repr(p)
    registry.clear_cache()
    from sema_rpc.providers.replay import ReplayProvider

    body = (CASSETTES / "openai_responses_function_call_1.sse").read_text()
    cassette = tmp_path / "r.jsonl"
    cassette.write_text(json.dumps({"provider": "openai-responses", "body": body}) + "\n")
    done = (await collect(ReplayProvider(cassette), request())).done
    assert [(t.name, t.input) for t in done.message.tool_uses()] == [
        ("multiply", {"a": 1231, "b": 2331})
    ]
