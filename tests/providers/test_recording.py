"""Recording sessions to cassettes, and replaying them."""

from __future__ import annotations

import asyncio
import gzip
import json
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.messages import Message, ToolResultBlock
from sema_rpc.core.stream import ModelRequest, StreamEvent, TextDelta, ToolSpec
from sema_rpc.providers import registry
from sema_rpc.providers.recording import (
    CassetteWriter,
    RecordingProvider,
    _decode_body,
    cassette_path,
)
from sema_rpc.providers.replay import ReplayProvider, load_cassette
from tests.providers.helpers import collect, request
from tests.support.scripted_llm import Reply, ScriptedLLM

SECRET = "sk-test-SECRET-0123456789abcdef"
KINDS = ["anthropic", "openai", "openai-responses"]
TOOLS = [ToolSpec("Read", "Read a file", {"type": "object", "properties": {}})]


@pytest.fixture(autouse=True)
def _clean_cache() -> Any:
    registry.clear_cache()
    yield
    registry.clear_cache()


def profile(kind: str, llm: ScriptedLLM) -> ModelProfile:
    url = llm.url if kind == "anthropic" else llm.openai_url
    model = "claude-x" if kind == "anthropic" else "gpt-5"
    return ModelProfile("p", kind, model, base_url=url, api_key=SECRET)


async def run_session(provider: Any) -> list[list[StreamEvent]]:
    """Two model calls: a tool call, then the answer after its result."""
    history = [Message.user_text("What does a.py do?")]
    first = await collect(provider, ModelRequest("m", "SYS", list(history), TOOLS))
    done = first.done
    history += [
        done.message,
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_use_id=t.id, content="print(1)")
                for t in done.message.tool_uses()
            ],
        ),
    ]
    second = await collect(provider, ModelRequest("m", "SYS", history, TOOLS))
    return [first.events, second.events]


@pytest.mark.parametrize("kind", KINDS)
async def test_record_then_replay(scripted_llm: ScriptedLLM, kind: str, tmp_path: Path) -> None:
    scripted_llm.script(
        Reply.turn(thinking="Need it.", text="Reading.", tools=[("Read", {"file_path": "a.py"})]),
        Reply.text("It prints 1.", chunks=4),
    )
    path = cassette_path(tmp_path / "rec", "sess/1")
    assert path == tmp_path / "rec" / "cassette-sess_1.jsonl"
    provider = registry.provider_for(profile(kind, scripted_llm), record_to=path)
    assert isinstance(provider, RecordingProvider)
    # The engine may ask every turn: the same recorder comes back.
    assert registry.provider_for(profile(kind, scripted_llm), record_to=path) is provider
    recorded = await run_session(provider)
    await provider.aclose()
    assert recorded[0][-1].stop_reason == "tool_use"  # type: ignore[union-attr]

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    assert SECRET.encode() not in raw and b"SECRET" not in raw
    lines = raw.decode().splitlines()
    assert len(lines) == 2 and provider.recorded == 2
    cassette_kind = {"openai": "openai-chat"}.get(kind, kind)
    for line, sent in zip(lines, scripted_llm.requests, strict=True):
        ex = json.loads(line)
        assert ex["provider"] == cassette_kind and ex["status"] == 200
        assert ex["request"] == sent.body  # the request body as sent
        assert ex["headers"]["content-type"].startswith("text/event-stream")
        assert "incomplete" not in ex and "error" not in ex
    assert [e.provider for e in load_cassette(path)] == [cassette_kind] * 2

    replay = ReplayProvider(path)
    assert await run_session(replay) == recorded
    assert replay.requests == [r.body for r in scripted_llm.requests]


async def test_body_is_recorded_verbatim(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    reply = Reply.text("Exactly these bytes, ünïcödé", chunks=7)
    scripted_llm.script(reply)
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("anthropic", scripted_llm), record_to=path)
    await collect(provider)
    await provider.aclose()
    before, after = reply.render("anthropic")
    (ex,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert ex["body"] == b"".join(before + after).decode()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_streams_while_recording(
    scripted_llm: ScriptedLLM, kind: str, tmp_path: Path
) -> None:
    """The tee passes chunks on as they arrive: deltas reach the caller while the server
    still holds the end of the body."""
    gate = threading.Event()
    reply = Reply.text("one two three", chunks=3, gate=gate)
    scripted_llm.script(reply)
    provider = registry.provider_for(profile(kind, scripted_llm), record_to=tmp_path / "c.jsonl")
    seen: list[str] = []
    all_text = asyncio.Event()

    async def consume() -> list[StreamEvent]:
        events: list[StreamEvent] = []
        async for ev in provider.stream(request()):
            events.append(ev)
            if isinstance(ev, TextDelta):
                seen.append(ev.text)
                if "".join(seen) == "one two three":
                    all_text.set()
        return events

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(reply.at_gate.wait, 5)
    await asyncio.wait_for(all_text.wait(), 5)
    assert not task.done()
    assert (tmp_path / "c.jsonl").read_text() == ""  # written when the exchange ends
    gate.set()
    events = await asyncio.wait_for(task, 5)
    assert events[-1].stop_reason == "end_turn"  # type: ignore[union-attr]
    await provider.aclose()
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 1


async def test_retried_attempts_are_comments(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    scripted_llm.script(Reply.error(429, retry_after_ms=1), Reply.text("after retry"))
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("openai", scripted_llm), record_to=path)
    got = await collect(provider)
    await provider.aclose()
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and lines[0].startswith("# attempt 1: HTTP 429")
    assert json.loads(lines[1])["status"] == 200
    replayed = await collect(ReplayProvider(path))
    assert replayed.events == got.events


async def test_failures_are_recorded_and_replayed(
    scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    key_echo = f"Incorrect API key provided: {SECRET}"
    scripted_llm.script(
        Reply.error(401, message=key_echo),
        Reply.mid_stream_error("Half", error_type="overloaded_error"),
        Reply.error(400, message="prompt is too long"),
    )
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("anthropic", scripted_llm), record_to=path)
    results = [await collect(provider) for _ in range(3)]
    await provider.aclose()
    assert [r.failed.error.kind for r in results] == [
        "authentication",
        "overloaded",
        "context_length_exceeded",
    ]
    raw = path.read_text()
    assert SECRET not in raw and "[REDACTED]" in raw  # a key echoed in a body is scrubbed
    replay = ReplayProvider(path)
    replayed = [await collect(replay) for _ in range(3)]
    assert [r.failed.error.kind for r in replayed] == [r.failed.error.kind for r in results]
    assert replayed[1].events == results[1].events


async def test_interrupted_stream_is_recorded(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    gate = threading.Event()
    reply = Reply.text("one two three four", chunks=4, gate=gate)
    scripted_llm.script(reply, Reply.text("next"))
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("anthropic", scripted_llm), record_to=path)

    async def consume() -> None:
        async for _ in provider.stream(request()):
            pass

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(reply.at_gate.wait, 5)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    assert (await collect(provider)).done.message.text() == "next"
    await provider.aclose()
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first["incomplete"] is True and "message_stop" not in first["body"]
    assert "incomplete" not in second


async def test_sensitive_response_headers_dropped(
    scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    scripted_llm.script(
        Reply.text(
            "ok",
            headers={
                "request-id": "req_123",
                "set-cookie": "session=abc",
                "x-api-key": SECRET,
                "x-debug": "not kept",
            },
        )
    )
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("anthropic", scripted_llm), record_to=path)
    await collect(provider)
    await provider.aclose()
    (ex,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert ex["headers"] == {
        "content-type": "text/event-stream; charset=utf-8",
        "request-id": "req_123",
    }
    assert SECRET not in path.read_text()


def test_writer_mode_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("")
    path.chmod(0o644)
    w = CassetteWriter(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    w.write({"provider": "anthropic", "body": "a"})
    w.close()
    w.write({"provider": "anthropic", "body": "b\u2028c"})  # reopens after close
    w.close()
    assert [e.body for e in load_cassette(path)] == ["a", "b\u2028c"]


def test_decode_body() -> None:
    text = "data: ü\n\n"
    assert _decode_body(gzip.compress(text.encode()), "gzip") == (text, None)
    assert _decode_body(text.encode(), "") == (text, None)
    body, problem = _decode_body(b"not gzip", "gzip")
    assert body == "not gzip" and problem is not None


def test_replay_profile_is_not_recorded(tmp_path: Path) -> None:
    from sema_rpc.core.config import resolve_model

    p = resolve_model("replay/demo")
    assert p is not None
    assert isinstance(registry.provider_for(p, record_to=tmp_path / "x.jsonl"), ReplayProvider)
    assert not (tmp_path / "x.jsonl").exists()


async def test_a_secret_the_process_knows_is_scrubbed_from_bodies(
    scripted_llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a credential of this request (another provider's key from the environment, and
    not `sk-` shaped): scrubbed from the request and the response all the same."""
    other = "oai-proj-other-key-51c0ffee"
    monkeypatch.setenv("OPENAI_API_KEY", other)
    scripted_llm.script(Reply.text(f"I saw {other} there.", chunks=1))
    path = tmp_path / "c.jsonl"
    provider = registry.provider_for(profile("anthropic", scripted_llm), record_to=path)
    got = await collect(provider, request(f"the file says OPENAI_API_KEY={other}"))
    await provider.aclose()
    assert other in got.text, "the caller still gets the real stream"
    raw = path.read_text()
    assert other not in raw
    (ex,) = [json.loads(line) for line in raw.splitlines()]
    assert "OPENAI_API_KEY=[REDACTED]" in json.dumps(ex["request"])
    assert "I saw [REDACTED] there." in ex["body"]
    replayed = await collect(ReplayProvider(path))
    assert replayed.done.message.text() == "I saw [REDACTED] there."


async def test_one_provider_records_to_several_cassettes(
    scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A session with `recordDir` on a server run with `--record`: both folders get it."""
    scripted_llm.script(Reply.text("twice"))
    paths = [tmp_path / "a" / "c.jsonl", tmp_path / "b" / "c.jsonl"]
    provider = registry.provider_for(profile("openai", scripted_llm), record_to=paths)
    assert registry.provider_for(profile("openai", scripted_llm), record_to=paths) is provider
    await collect(provider)
    await provider.aclose()
    first, second = (p.read_text() for p in paths)
    assert first == second and len(first.splitlines()) == 1
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in paths)
