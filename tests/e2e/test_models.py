"""Models over the wire: model/list, session/setModel (between turns, inside a running
turn, across a restart), and the token and cost totals of turns and sessions."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio

PRICE = {"input": 2.0, "output": 10.0, "cacheRead": 0.2, "cacheWrite": 2.5}
"""The `claude` profile's price in models.json (not Sonnet's list price: it overrides it)."""


@pytest.fixture
def openai_llm() -> Iterator[ScriptedLLM]:
    """A second scripted model server, for the OpenAI profile."""
    with ScriptedLLM() as llm:
        yield llm


def write_models(env: dict[str, str], models: dict[str, Any]) -> None:
    (Path(env["SEMA_ROOT"]) / "models.json").write_text(json.dumps(models))


@pytest.fixture
def two_models(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, openai_llm: ScriptedLLM
) -> dict[str, str]:
    """`claude` (the default) on one scripted server, `gpt` on the other."""
    write_models(
        server_env,
        {
            "profiles": {
                "claude": {
                    "provider": "anthropic",
                    "modelName": "claude-sonnet-4-5",
                    "baseURL": scripted_llm.url,
                    "apiKey": "sk-ant-profile-000000",
                    "contextLength": 200000,
                    "thinking": True,
                    "maxTokens": 16000,
                    "price": PRICE,
                },
                "gpt": {
                    "provider": "openai",
                    "modelName": "gpt-4.1",
                    "baseURL": openai_llm.openai_url,
                    "apiKey": "sk-openai-profile-000000",
                },
            },
            "pointers": {"main": "claude"},
        },
    )
    return server_env


async def start(env: dict[str, str]) -> WireClient:
    client = await WireClient(env=env).start()
    await client.initialize()
    return client


async def prompt(client: WireClient, sid: str, text: str) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "input": text})


def said(body: dict[str, Any]) -> str:
    """Everything a request's messages say, as one string."""
    return json.dumps(body.get("messages", []))


def cost(usage: tuple[int, int], cache: tuple[int, int] = (0, 0)) -> float:
    """What one response costs at PRICE (USD per million tokens)."""
    return (
        usage[0] * PRICE["input"]
        + usage[1] * PRICE["output"]
        + cache[0] * PRICE["cacheRead"]
        + cache[1] * PRICE["cacheWrite"]
    ) / 1e6


def totals(*responses: tuple[tuple[int, int], tuple[int, int]]) -> dict[str, Any]:
    """The totals the server should report for these (usage, cache) responses."""
    return {
        "inputTokens": sum(u[0] for u, _ in responses),
        "outputTokens": sum(u[1] for u, _ in responses),
        "cacheReadTokens": sum(c[0] for _, c in responses),
        "cacheWriteTokens": sum(c[1] for _, c in responses),
        "costUsd": pytest.approx(sum(cost(u, c) for u, c in responses), abs=1e-9),
    }


async def test_model_list_shows_the_profiles_and_the_sessions_current_one(two_models, workspace):
    async with WireClient(env=two_models) as client:
        await client.initialize()
        listed = await client.call("model/list", {})
        assert "current" not in listed
        by_name = {m["name"]: m for m in listed["models"]}
        assert set(by_name) == {"claude", "gpt"}
        assert by_name["claude"] == {
            "name": "claude",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "contextLength": 200000,
            "images": True,  # a Claude model: inferred
            "thinking": True,
            "default": True,
            "price": PRICE,
        }
        gpt = by_name["gpt"]
        assert (gpt["provider"], gpt["model"], gpt["contextLength"]) == (
            "openai",
            "gpt-4.1",
            128000,
        )
        assert (gpt["images"], gpt["thinking"], gpt["default"]) == (True, False, False)
        # gpt-4.1 without a price in models.json: OpenAI's list price (USD per million).
        assert gpt["price"] == {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 2.0}
        # Never a key or an endpoint.
        assert "sk-" not in json.dumps(listed) and "127.0.0.1" not in json.dumps(listed)

        ready = await client.create_session(workspace)
        sid = ready["sessionId"]
        assert (await client.call("model/list", {"sessionId": sid}))["current"] == "claude"
        await client.call("session/setModel", {"sessionId": sid, "model": "gpt"})
        assert (await client.call("model/list", {"sessionId": sid}))["current"] == "gpt"


async def test_switching_model_sends_the_next_request_to_the_other_server_also_after_resume(
    two_models, scripted_llm: ScriptedLLM, openai_llm: ScriptedLLM, workspace
):
    sid = "switches-model"
    scripted_llm.script(Reply.text("Claude here."))
    openai_llm.script(Reply.text("GPT here."), Reply.text("GPT again, after the restart."))

    client = await start(two_models)
    ready = await client.create_session(workspace, sessionId=sid)
    assert ready["model"] == "anthropic/claude-sonnet-4-5"
    assert (await prompt(client, sid, "First question"))["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1

    switched = await client.call("session/setModel", {"sessionId": sid, "model": "gpt"})
    assert switched == {"model": "gpt", "thinking": False}
    update = await client.wait_for("model:update")
    assert update.params["model"] == "gpt"
    assert (update.params["provider"], update.params["modelName"]) == ("openai", "gpt-4.1")
    assert update.params["contextLength"] == 128000

    assert (await prompt(client, sid, "Second question"))["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1  # nothing more to the Anthropic server
    (second,) = openai_llm.requests
    assert second.path == "/v1/chat/completions" and second.body["model"] == "gpt-4.1"
    # The other model continues the same conversation.
    assert "First question" in said(second.body) and "Claude here." in said(second.body)
    await client.close()

    # A restarted server resumes the session with the model it switched to.
    client = await start(two_models)
    ready = await client.create_session(workspace, sessionId=sid)
    assert ready["model"] == "openai/gpt-4.1"
    assert (await client.call("model/list", {"sessionId": sid}))["current"] == "gpt"
    assert (await prompt(client, sid, "Third question"))["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1
    third = openai_llm.requests[1]
    assert "Second question" in said(third.body) and "GPT here." in said(third.body)
    await client.close()


async def test_a_switch_during_a_turn_takes_effect_at_its_next_model_call(
    two_models, scripted_llm: ScriptedLLM, openai_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    first = Reply.tools([("Read", {"file_path": "README.md"})], text="Reading.", gate=gate)
    scripted_llm.script(first)
    openai_llm.script(Reply.text("The README describes a tiny project."))
    async with WireClient(env=two_models) as client:
        await client.initialize()
        sid = (await client.create_session(workspace))["sessionId"]
        running = asyncio.create_task(prompt(client, sid, "What is in the README?"))
        assert await asyncio.to_thread(first.at_gate.wait, 10)  # the first call is streaming
        await client.call("session/setModel", {"sessionId": sid, "model": "gpt"})
        gate.set()
        result = await asyncio.wait_for(running, 30)
        assert result["stopReason"] == "end_turn"
        assert len(scripted_llm.requests) == 1  # the call in flight finished where it was
        (after_tool,) = openai_llm.requests  # the call after the tool went to the new model
        assert "A tiny project." in said(after_tool.body)  # with the Read result in it


async def test_thinking_can_be_switched_with_the_model(
    two_models, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("One."), Reply.text("Two."))
    async with WireClient(env=two_models) as client:
        await client.initialize()
        sid = (await client.create_session(workspace))["sessionId"]
        await prompt(client, sid, "Think first")
        off = {"sessionId": sid, "model": "claude", "thinking": False}
        assert await client.call("session/setModel", off) == {"model": "claude", "thinking": False}
        await prompt(client, sid, "Now do not")
        with_thinking, without = scripted_llm.requests
        assert with_thinking.body["thinking"]["type"] == "enabled"
        assert "thinking" not in without.body


async def test_an_unknown_model_is_refused_and_the_session_keeps_its_model(
    two_models, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("Still Claude."))
    async with WireClient(env=two_models) as client:
        await client.initialize()
        sid = (await client.create_session(workspace))["sessionId"]
        with pytest.raises(RpcFailure) as refused:
            await client.call("session/setModel", {"sessionId": sid, "model": "clade"})
        assert refused.value.code == -32602
        message = refused.value.error["message"]
        assert "clade" in message and "claude, gpt" in message
        with pytest.raises(RpcFailure) as bad:
            await client.call("session/setModel", {"sessionId": sid, "model": "cohere/x"})
        assert bad.value.code == -32602
        with pytest.raises(RpcFailure) as gone:
            await client.call("session/setModel", {"sessionId": "nobody", "model": "gpt"})
        assert gone.value.code == -32010
        assert not client.events("model:update")
        # The process serves on, and the session still uses its model.
        assert (await prompt(client, sid, "Hello?"))["stopReason"] == "end_turn"
        assert len(scripted_llm.requests) == 1
        assert (await client.call("model/list", {"sessionId": sid}))["current"] == "claude"


async def test_usage_and_cost_add_up_over_turns_and_survive_a_restart(
    two_models, scripted_llm: ScriptedLLM, workspace
):
    sid = "costs-money"
    r1 = ((1200, 80), (0, 4000))  # (input, output), (cache read, cache write)
    r2 = ((300, 40), (4000, 0))
    r3 = ((150, 200), (4300, 120))
    r4 = ((90, 30), (4500, 0))
    scripted_llm.script(
        Reply.text("First.", usage=r1[0], cache=r1[1]),
        # The second turn makes two model calls: a tool call, then the answer.
        Reply.tools([("Read", {"file_path": "README.md"})], usage=r2[0], cache=r2[1]),
        Reply.text("Second.", usage=r3[0], cache=r3[1]),
        Reply.text("Third.", usage=r4[0], cache=r4[1]),
    )
    client = await start(two_models)
    await client.create_session(workspace, sessionId=sid)
    first = await prompt(client, sid, "One")
    assert first["turn"] == totals(r1) and first["session"] == totals(r1)
    second = await prompt(client, sid, "Two")
    assert second["turn"] == totals(r2, r3)
    assert second["session"] == totals(r1, r2, r3)
    # conversation:usage carries the running figures after each response.
    events = [e.params for e in client.events("conversation:usage", sid)]
    assert [e["session"] for e in events] == [totals(r1), totals(r1, r2), totals(r1, r2, r3)]
    assert events[1]["turn"] == totals(r2) and events[2]["turn"] == totals(r2, r3)
    # The context snapshot is unchanged: the last prompt's size, not a running sum.
    assert events[2]["usage"]["promptTokens"] == 150 + 4300 + 120
    await client.close()

    client = await start(two_models)
    await client.create_session(workspace, sessionId=sid)
    third = await prompt(client, sid, "Three")
    assert third["turn"] == totals(r4)
    assert third["session"] == totals(r1, r2, r3, r4)
    await client.close()


async def test_cost_is_null_when_a_model_has_no_price(
    two_models, scripted_llm: ScriptedLLM, openai_llm: ScriptedLLM, workspace
):
    write_models(
        two_models,
        {
            "profiles": {
                "claude": json.loads((Path(two_models["SEMA_ROOT"]) / "models.json").read_text())[
                    "profiles"
                ]["claude"],
                "local": {
                    "provider": "openai",
                    "modelName": "qwen3-coder",
                    "baseURL": openai_llm.openai_url,
                    "apiKey": "none",
                },
            },
            "pointers": {"main": "local"},
        },
    )
    openai_llm.script(Reply.text("Local.", usage=(500, 60)))
    scripted_llm.script(Reply.text("Priced.", usage=(100, 10)))
    async with WireClient(env=two_models) as client:
        await client.initialize()
        sid = (await client.create_session(workspace))["sessionId"]
        listed = {m["name"]: m for m in (await client.call("model/list", {}))["models"]}
        assert "price" not in listed["local"]
        local = await prompt(client, sid, "Hi")
        assert local["turn"]["costUsd"] is None and local["session"]["costUsd"] is None
        assert (local["turn"]["inputTokens"], local["turn"]["outputTokens"]) == (500, 60)
        await client.call("session/setModel", {"sessionId": sid, "model": "claude"})
        priced = await prompt(client, sid, "Again")
        assert priced["turn"] == totals(((100, 10), (0, 0)))
        # Part of the session ran on a model without a price: its total is unknown.
        assert priced["session"]["costUsd"] is None
        assert priced["session"]["inputTokens"] == 600


async def test_subagent_and_compaction_calls_count_in_the_totals(
    two_models, scripted_llm: ScriptedLLM, workspace
):
    task = {"description": "look", "prompt": "Find VALUE_3.", "subagent_type": "Explore"}
    main1 = ((400, 30), (0, 0))
    sub1 = ((250, 20), (0, 0))
    sub2 = ((300, 15), (0, 0))
    main2 = ((500, 25), (0, 100))
    thanks = ((600, 5), (0, 0))
    summary = ((900, 120), (0, 0))
    after = ((200, 10), (0, 0))
    scripted_llm.script(
        Reply.tools([("Task", task)], usage=main1[0]),
        Reply.tools([("Grep", {"pattern": "VALUE_3"})], usage=sub1[0]),  # the subagent
        Reply.text("In src/mod3.py.", usage=sub2[0]),
        Reply.text("src/mod3.py defines it.", usage=main2[0], cache=main2[1]),
        Reply.text("You are welcome.", usage=thanks[0]),
        Reply.text("Summary: the user looked for VALUE_3.", usage=summary[0]),  # compaction
        Reply.text("Yes.", usage=after[0]),
    )
    async with WireClient(env=two_models) as client:
        await client.initialize()
        sid = (await client.create_session(workspace))["sessionId"]
        result = await prompt(client, sid, "Where is VALUE_3?")
        assert result["stopReason"] == "end_turn"
        assert result["turn"] == totals(main1, sub1, sub2, main2)
        await prompt(client, sid, "Thanks")  # compaction keeps the latest turn: one more
        compacted = await client.call("session/compact", {"sessionId": sid})
        assert compacted["strategy"] == "summary"
        last = await prompt(client, sid, "Is that all?")
        assert last["turn"] == totals(after)
        assert last["session"] == totals(main1, sub1, sub2, main2, thanks, summary, after)


async def test_a_recorded_model_that_is_gone_resumes_on_the_default(
    two_models, scripted_llm: ScriptedLLM, workspace
):
    sid = "model-removed"
    scripted_llm.script(Reply.text("Back on Claude."))
    client = await start(two_models)
    await client.create_session(workspace, sessionId=sid)
    await client.call("session/setModel", {"sessionId": sid, "model": "gpt"})
    await client.close()

    models_json = Path(two_models["SEMA_ROOT"]) / "models.json"
    models = json.loads(models_json.read_text())
    del models["profiles"]["gpt"]
    models_json.write_text(json.dumps(models))
    client = await start(two_models)
    ready = await client.create_session(workspace, sessionId=sid)
    assert ready["model"] == "anthropic/claude-sonnet-4-5"
    assert (await prompt(client, sid, "Still there?"))["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1
    await client.close()
