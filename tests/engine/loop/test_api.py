"""The in-process API (engine/api.py), step by step."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sema_rpc.core.errors import InvalidArgument
from sema_rpc.core.messages import Message, TextBlock, ToolResultBlock, Usage
from sema_rpc.core.policy.permissions import NO_CLIENT_MESSAGE
from sema_rpc.core.stream import ResponseDone, ResponseFailed
from sema_rpc.engine.api import ConversationManager, StepInProgress
from sema_rpc.providers.scripted import ScriptedProvider, ScriptedReply
from tests.engine.loop.support import call, manager


async def test_messages_add_get_recent_by_role_clear(ws: Path) -> None:
    chat, _, _, _ = manager(ws, [])
    chat.add_user_text("one")
    chat.add_user_text("two")  # merged: the history alternates
    chat.add_message(Message(role="assistant", content=[TextBlock(text="three")]))
    chat.add_user_text("four")
    got = chat.get_messages()
    assert [(m.role, m.text()) for m in got] == [
        ("user", "onetwo"),
        ("assistant", "three"),
        ("user", "four"),
    ]
    got[0].content.clear()
    got.pop()
    assert chat.message_count == 3 and chat.get_messages()[0].text() == "onetwo"  # a copy
    assert [m.text() for m in chat.recent(2)] == ["three", "four"]
    assert chat.recent(0) == [] and len(chat.recent(10)) == 3
    assert [m.text() for m in chat.by_role("assistant")] == ["three"]
    chat.clear_messages()
    assert chat.get_messages() == [] and (await chat.token_check()).messages == 0


async def test_call_model_then_run_tools_step_by_step(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\n")
    chat, provider, _, _ = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("r", "Read", file_path="a.txt"),
                text="Reading.",
                usage=Usage(input_tokens=900, output_tokens=20),
            ),
            ScriptedReply(text="It says alpha."),
        ],
    )
    chat.add_user_text("what is in a.txt?")
    first = await chat.call_model()
    assert isinstance(first, ResponseDone) and first.stop_reason == "tool_use"
    assert chat.get_messages()[-1].text() == "Reading."
    check = await chat.token_check()
    assert (check.source, check.tokens) == ("provider", 920)

    (result,) = await chat.run_tools()  # the last response's calls
    assert result.tool_use_id == "r" and "alpha" in result.content and not result.is_error
    assert chat.get_messages()[-1].content == [result]
    grown = await chat.token_check()
    assert grown.source == "provider" and grown.tokens > 920  # + the local count of the result

    second = await chat.call_model()
    assert isinstance(second, ResponseDone) and second.message.text() == "It says alpha."
    assert provider.requests[1].messages[-1].content == [result]
    assert await chat.run_tools() == []  # no calls in the last response


async def test_run_tool_failure_is_a_result(ws: Path) -> None:
    chat, _, _, _ = manager(ws, [])
    result = await chat.run_tool(call("x", "Read", file_path="../outside.txt"))
    assert isinstance(result, ToolResultBlock) and result.is_error


async def test_writes_need_consent_by_default(ws: Path) -> None:
    """No bridge to ask, default permission mode: the write is refused, as a result."""
    chat = ConversationManager(provider=ScriptedProvider(), model="claude-sonnet-4-5", workspace=ws)
    result = await chat.run_tool(call("w", "Write", file_path="x.txt", content="x"))
    assert result.is_error and result.content == NO_CLIENT_MESSAGE
    assert not (ws / "x.txt").exists()


async def test_model_failure_and_interrupt_are_values(ws: Path) -> None:
    hold = asyncio.Event()
    chat, provider, _, _ = manager(
        ws,
        [ScriptedReply.failure("rate_limit", "slow down"), ScriptedReply(text="x y z", hold=hold)],
    )
    assert not chat.interrupt()  # no step running: nothing to interrupt
    chat.add_user_text("hi")
    failed = await chat.call_model()
    assert isinstance(failed, ResponseFailed) and failed.error.kind == "rate_limit"
    step = asyncio.create_task(chat.call_model())
    while len(provider.requests) < 2:
        await asyncio.sleep(0)
    with pytest.raises(StepInProgress):  # one step at a time: they share the history
        await chat.run_turn("meanwhile")
    assert chat.interrupt()
    cut = await step
    assert isinstance(cut, ResponseFailed) and cut.error.kind == "stream_cut"
    assert [m.role for m in chat.get_messages()] == ["user"]  # neither joined the history
    exhausted = await chat.call_model()
    assert isinstance(exhausted, ResponseFailed) and "no reply left" in exhausted.error.message


async def test_set_model_inside_a_turn_and_the_usage_totals(ws: Path) -> None:
    """The switch reaches the turn's next model call; tokens and cost add up across both
    models, each at its own list price."""
    root = ws.parent / "sema-root"
    root.mkdir()
    other = {"provider": "openai", "modelName": "gpt-4.1", "apiKey": "k", "contextLength": 50000}
    (root / "models.json").write_text(json.dumps({"profiles": {"other": other}}))
    first = Usage(input_tokens=1000, output_tokens=100)
    chat, provider, _, _ = manager(
        ws, [ScriptedReply.tool_calls(call("l", "Look", label="x", delay=0.2), usage=first)]
    )
    second = Usage(input_tokens=2000, output_tokens=50, cache_read_input_tokens=1000)
    other_provider = ScriptedProvider([ScriptedReply(text="Done.", usage=second)])
    assert [m.name for m in chat.list_models().models] == ["other"]

    turn = asyncio.create_task(chat.run_turn("go"))
    look = chat.tools["Look"]
    await asyncio.wait_for(look.started.wait(), 5)  # type: ignore[attr-defined]
    profile = chat.set_model("other", provider=other_provider)
    assert (await turn).stop_reason == "end_turn"

    assert profile.context_length == 50000
    assert len(provider.requests) == 1
    (after,) = other_provider.requests
    assert after.model == "gpt-4.1" and after.thinking_budget is None
    totals = chat.usage.turn
    assert (totals.input_tokens, totals.output_tokens, totals.cache_read_tokens) == (
        3000,
        150,
        1000,
    )
    # Published list prices, USD per million tokens: Claude Sonnet 4.5 $3 in / $15 out;
    # GPT-4.1 $2 in / $8 out / $0.50 cached input.
    expected = (1000 * 3 + 100 * 15 + 2000 * 2 + 50 * 8 + 1000 * 0.5) / 1e6
    assert totals.cost_usd == pytest.approx(expected)
    assert chat.usage.session.cost_usd == pytest.approx(expected)


async def test_set_model_unknown_name_lists_the_profiles(ws: Path) -> None:
    chat, _, _, _ = manager(ws, [])
    with pytest.raises(InvalidArgument, match="unknown model 'nope'"):
        chat.set_model("nope")
