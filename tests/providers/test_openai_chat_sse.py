"""The OpenAI chat provider reads the raw SSE itself: it must split events as the SDK does,
and map in-stream errors as the SDK-based reader did."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from sema_rpc.providers.http import SseReader
from sema_rpc.providers.openai_chat import OpenAIChatProvider
from tests.providers.helpers import CASSETTES, collect
from tests.support.scripted_llm import Reply, ScriptedLLM

SYNTHETIC = (
    b"data: a\ndata: b\n\nevent: x\ndata:c\n\n: comment\ndata\n\nid: 1\nretry: 5\n"
    b"data: d\n\nevent: only-a-name\n\ndata: e\n\ndata: a last event without its blank line"
)


def _bodies() -> list[bytes]:
    found = [p.read_bytes() for p in sorted(CASSETTES.glob("*.sse"))] if CASSETTES.is_dir() else []
    return [*found, SYNTHETIC]


def _sdk_events(pieces: list[bytes]) -> list[tuple[str | None, str]]:
    from openai._streaming import SSEDecoder

    return [
        (sse.event, sse.data)
        for sse in SSEDecoder().iter_bytes(iter(pieces))
        # An event without any data line is not dispatched (SSE spec); the SDK hands it
        # on with data "" (which then fails to parse as JSON).
        if not (sse.data == "" and sse.event is not None)
    ]


def _our_events(pieces: list[bytes]) -> list[tuple[str | None, str]]:
    reader = SseReader()
    return [
        (None if event is None else event.decode(), data.decode())
        for piece in pieces
        for event, data in reader.feed(piece)
    ]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_sse_split_like_the_sdk(newline: bytes) -> None:
    rng = random.Random(7)
    for body in _bodies():
        data = body.replace(b"\r\n", b"\n").replace(b"\n", newline)
        for trial in range(12):
            if trial == 0:
                cuts = list(range(1, min(len(data), 3000)))  # byte by byte (a prefix)
            else:
                cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, trial * 4)))
            pieces = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            assert _our_events(pieces) == _sdk_events(pieces)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"


@pytest.fixture(scope="module")
def llm() -> Any:
    with ScriptedLLM() as server:
        yield server


async def _run(llm: ScriptedLLM, body: bytes) -> Any:
    llm.script(Reply.raw(body, piece_size=7))
    provider = OpenAIChatProvider("test-key", llm.openai_url, max_retries=0)
    try:
        return await collect(provider)
    finally:
        await provider.aclose()


async def test_comments_crlf_done_and_trailing_bytes(llm: ScriptedLLM) -> None:
    body = (
        b": OPENROUTER PROCESSING\r\n\r\n"
        + _chunk({"role": "assistant", "content": "Hel"})
        + _chunk({"content": "lo"}, finish="stop")
        + b'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,'
        b'"prompt_tokens_details":{"cached_tokens":4}}}\r\n\r\n'
        + b"data: [DONE]\r\n\r\n"
        + b"data: not read after [DONE]\r\n\r\n"
    )
    got = await _run(llm, body)
    done = got.done
    assert done.message.text() == got.text == "Hello"
    assert done.stop_reason == "end_turn"
    assert (done.usage.input_tokens, done.usage.cache_read_input_tokens) == (5, 4)
    assert done.usage.output_tokens == 2


async def test_event_error_without_an_error_key(llm: ScriptedLLM) -> None:
    # The SDK only raised for data carrying an `error` key (this read as stream_cut).
    body = (
        _chunk({"content": "Half"})
        + b'event: error\ndata: {"message":"upstream overloaded","type":"overloaded"}\n\n'
    )
    got = await _run(llm, body)
    failed = got.failed
    assert failed.error.kind == "stream_error"
    assert failed.error.message == "upstream overloaded"
    assert failed.error.code == "overloaded"
    assert got.text == "Half"


async def test_error_object_after_finish(llm: ScriptedLLM) -> None:
    body = (
        _chunk({"content": "Done"}, finish="stop")
        + b'data: {"error":{"code":400,"message":"Token limit reached"}}\n\n'
        + b"data: [DONE]\n\n"
    )
    failed = (await _run(llm, body)).failed
    assert failed.error.kind == "stream_error"
    assert failed.error.message == "Token limit reached"
    assert failed.error.code == "400"


@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]"])
async def test_malformed_chunk(llm: ScriptedLLM, payload: bytes) -> None:
    body = _chunk({"content": "Hi"}) + b"data: " + payload + b"\n\n" + b"data: [DONE]\n\n"
    got = await _run(llm, body)
    failed = got.failed
    assert failed.error.kind == "stream_error"
    assert "malformed stream" in failed.error.message
    assert got.text == "Hi"


async def test_tool_call_fragments(llm: ScriptedLLM) -> None:
    body = (
        _chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "Read"}}]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"file_'}}]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'path": "a"}'}}]})
        + _chunk({}, finish="tool_calls")
        + b"data: [DONE]\n\n"
    )
    got = await _run(llm, body)
    done = got.done
    assert [(t.id, t.name, t.input) for t in done.message.tool_uses()] == [
        ("call_a", "Read", {"file_path": "a"})
    ]
    assert done.stop_reason == "tool_use"
