"""ReplayProvider: cassettes played through the real provider code."""

from __future__ import annotations

import json
from pathlib import Path

from sema_rpc.core.config import bundled_cassette, resolve_model
from sema_rpc.core.messages import Message, TextBlock, ToolResultBlock
from sema_rpc.core.stream import ModelRequest
from sema_rpc.providers import registry
from sema_rpc.providers.replay import ReplayProvider, load_cassette
from tests.providers.helpers import CASSETTES, collect, expected, request

DEMO = bundled_cassette("demo")


def test_demo_cassette_is_bundled_and_valid() -> None:
    exchanges = load_cassette(DEMO)
    assert [e.provider for e in exchanges] == ["anthropic", "anthropic"]
    for e in exchanges:
        assert e.body.startswith("event: message_start\ndata: ")
        assert e.body.rstrip().endswith('event: message_stop\ndata: {"type":"message_stop"}')
    workspace = DEMO.parent.parent / "demo-workspace"
    assert {p.name for p in workspace.iterdir()} >= {"README.md", "app.py", "utils.py"}


async def test_replay_demo() -> None:
    p = ReplayProvider(DEMO)
    first = await collect(p, request("What is in this project?"))
    done = first.done
    assert done.stop_reason == "tool_use"
    assert done.message.text() == first.text == "I'll look at the project files."
    tools = done.message.tool_uses()
    assert [(t.name, t.input) for t in tools] == [
        ("Glob", {"pattern": "**/*.py"}),
        ("Read", {"file_path": "README.md"}),
    ]

    history = [
        Message.user_text("What is in this project?"),
        done.message,
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id=t.id, content="...") for t in tools],
        ),
    ]
    second = await collect(p, ModelRequest(model="m", system="s", messages=history))
    final = second.done
    assert final.stop_reason == "end_turn"
    assert final.message.content == [TextBlock(text=second.text)]
    assert "tasklist" in final.message.text() and final.message.text().count(". ") >= 3
    assert sum(1 for e in second.events if type(e).__name__ == "TextDelta") == 15
    # The SDK really built the requests: the second one carries the tool results.
    assert p.requests[1]["messages"][2]["content"][0]["type"] == "tool_result"

    third = await collect(p)
    assert third.failed.error.kind == "invalid_request"
    assert third.failed.error.message.startswith("cassette exhausted")
    p.reset()
    assert (await collect(p)).done.stop_reason == "tool_use"


def _exchange(provider: str, name: str, status: int = 200) -> str:
    body = (CASSETTES / f"{name}.sse").read_text(encoding="utf-8")
    return json.dumps({"provider": provider, "request": {}, "status": status, "body": body})


async def test_replay_openai_and_errors(tmp_path: Path) -> None:
    err = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})
    lines = [
        _exchange("openai-chat", "openai_chat_tool_calls_1"),
        json.dumps({"provider": "anthropic", "status": 429, "body": err}),
        _exchange("openai-chat", "groq_chat_error_1"),
    ]
    cassette = tmp_path / "mixed.jsonl"
    cassette.write_text("\n".join(lines) + "\n")
    p = ReplayProvider(cassette)
    first = (await collect(p)).done
    assert [(t.name, t.input) for t in first.message.tool_uses()] == [
        ("multiply", {"a": 1231, "b": 2331})
    ]
    rate = (await collect(p)).failed
    assert (rate.error.kind, rate.error.status) == ("rate_limit", 429)  # no retries in replay
    assert (await collect(p)).failed.error.kind == "stream_error"


async def test_broken_cassette(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"provider": "anthropic", "body": "x"}\nnot json\n')
    got = await collect(ReplayProvider(bad))
    assert got.failed.error.kind == "invalid_request"
    assert "bad.jsonl:2" in got.failed.error.message


async def test_registry_replay_profile() -> None:
    registry.clear_cache()
    profile = resolve_model("replay/demo")
    assert profile is not None and profile.provider == "replay"
    assert Path(profile.model_name) == DEMO
    p = registry.provider_for(profile)
    assert registry.provider_for(resolve_model("replay/demo")) is p  # type: ignore[arg-type]
    assert isinstance(p, ReplayProvider)
    registry.clear_cache()


# ---------------------------------------------------------------------------- .sse cassettes

SSE_FILES = sorted(CASSETTES.glob("*.sse"))
_FAMILY = {"anthropic": "anthropic", "openai_responses": "openai-responses"}


def test_every_shared_sse_file_is_a_one_exchange_cassette() -> None:
    assert len(SSE_FILES) >= 27
    for path in SSE_FILES:
        [exchange] = load_cassette(path)
        family = next((v for k, v in _FAMILY.items() if path.stem.startswith(k)), "openai-chat")
        assert exchange.provider == family, path.name
        assert exchange.body.encode() == path.read_bytes(), "served byte for byte"
        request_file = path.with_name(path.stem + ".request.json")
        if request_file.exists():
            assert exchange.request == json.loads(request_file.read_text())


async def test_sse_cassettes_play_through_the_sdk_their_stream_names() -> None:
    tools = await collect(ReplayProvider(CASSETTES / "openai_responses_function_call_1.sse"))
    recorded = expected("openai_responses_function_call_1")
    [call] = [o for o in recorded["output"] if o["type"] == "function_call"]
    [tool] = tools.done.message.tool_uses()
    assert (tool.name, tool.input) == (call["name"], json.loads(call["arguments"]))

    chat = ReplayProvider(CASSETTES / "openai_chat_text_1.sse")
    assert (await collect(chat)).done.message.text() == '"This is a test."'  # quotes and all
    assert (await collect(chat)).failed.error.message.startswith("cassette exhausted")


async def test_an_sse_file_of_no_known_provider_is_a_clear_error(tmp_path: Path) -> None:
    odd = tmp_path / "odd.sse"
    odd.write_text('data: {"hello": "world"}\n\n')
    got = await collect(ReplayProvider(odd))
    assert got.failed.error.kind == "invalid_request"
    assert "cannot tell which provider" in got.failed.error.message
    profile = resolve_model(f"replay/{CASSETTES / 'anthropic_text_2.sse'}")
    assert profile is not None and profile.provider == "replay"
    assert isinstance(registry.provider_for(profile), ReplayProvider)
    registry.clear_cache()
