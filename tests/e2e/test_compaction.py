"""Compaction and token figures over real pipes, with a small context window.

The model profile comes from a models.json in the test's SEMA_ROOT:
contextLength 2000, so the threshold (0.75) is 1500 prompt tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.engine.loop.compaction import SUMMARY_HEADER, TRUNCATION_NOTICE
from sema_rpc.engine.loop.tokens import MESSAGE_OVERHEAD, TokenCounter
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.shared_data import tiktoken_dir
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.asyncio

TINY = {"provider": "anthropic", "modelName": "claude-test", "contextLength": 2000}
LONG = " More details about it." * 80
"""Makes an old answer worth summarising (~750 tokens by the estimate)."""


@pytest.fixture
def tiny_env(server_env: dict[str, str]) -> dict[str, str]:
    models = {"profiles": {"tiny": TINY}, "pointers": {"main": "tiny"}}
    (Path(server_env["SEMA_ROOT"]) / "models.json").write_text(json.dumps(models))
    return server_env


def is_summary_request(body: dict[str, Any]) -> bool:
    return "Primary request and intent" in json.dumps(body.get("messages", []))


def texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [
        b.get("text") or (b["content"] if isinstance(b.get("content"), str) else b["type"])
        for b in content
    ]


def history_entries(env: dict[str, str], sid: str) -> list[dict[str, Any]]:
    path = Path(env["SEMA_ROOT"]) / "history" / f"{sid}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def test_a_long_conversation_compacts_once_and_continues(
    tiny_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "grows-past-the-window"
    scripted_llm.script(
        Reply.text("The first answer, about the README." + LONG, usage=(600, 50)),
        # The second input: a tool call whose response puts the prompt over 1500.
        Reply.tools([("Read", {"file_path": "README.md"})], text="Reading.", usage=(1700, 30)),
        Reply.text("SUMMARY: the user asked about the README; then asked to re-read it."),
        Reply.text("Re-read: it is a tiny demo.", usage=(400, 20)),
        Reply.text("Third answer.", usage=(500, 10)),
    )
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        ready = await client.create_session(workspace, sessionId=sid)
        assert ready["usage"]["maxTokens"] == 2000 and ready["model"] == "anthropic/claude-test"
        for text in ["What is in the README?", "Please read the README again"]:
            result = await client.call("session/prompt", {"sessionId": sid, "input": text})
            assert result["stopReason"] == "end_turn"

        (event,) = client.events("compact:exec", sid)
        assert event.params["trigger"] == "auto" and event.params["strategy"] == "summary"
        assert event.params["tokenBefore"] > 1500
        assert event.params["tokenCompact"] < event.params["tokenBefore"]
        assert "errMsg" not in event.params

        summary_call, after = scripted_llm.requests[2].body, scripted_llm.requests[3].body
        assert is_summary_request(summary_call)
        assert "The first answer, about the README." in json.dumps(summary_call)
        # After: [summary + the latest user message], then the tool call and its result.
        messages = after["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        head = texts(messages[0])
        assert head[0].startswith(SUMMARY_HEADER) and "SUMMARY: the user asked" in head[0]
        assert head[1] == "Please read the README again"
        assert messages[1]["content"][-1]["type"] == "tool_use"
        assert messages[2]["content"][0]["type"] == "tool_result"
        assert "The first answer" not in json.dumps(messages)

        # The usage reported after compaction is the smaller context, then the API's again.
        usages = [e.params["usage"]["promptTokens"] for e in client.events("conversation:usage")]
        assert usages == [600, 1700, event.params["tokenCompact"], 400]

        # It continues: no second compaction below the threshold.
        result = await client.call("session/prompt", {"sessionId": sid, "input": "Thanks"})
        assert result["stopReason"] == "end_turn"
        assert len(client.events("compact:exec", sid)) == 1
        assert not any(is_summary_request(r.body) for r in scripted_llm.requests[4:])
    finally:
        await client.close()

    # On disk: every message, plus one compaction marker.
    entries = history_entries(tiny_env, sid)
    kinds = [e["t"] for e in entries]
    assert kinds.count("compact") == 1
    assert sum(k == "message" for k in kinds) == 8  # 2 + 4 + 2: nothing dropped
    assert "The first answer, about the README." in json.dumps(entries)

    # A restart resumes the compacted history, not the full one.
    scripted_llm.script(Reply.text("Resumed.", usage=(450, 5)))
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        ready = await client.create_session(workspace, sessionId=sid)
        assert ready["historyLoaded"] is True
        await client.call("session/prompt", {"sessionId": sid, "input": "Still there?"})
    finally:
        await client.close()
    resumed = scripted_llm.requests[-1].body["messages"]
    assert texts(resumed[0])[0].startswith(SUMMARY_HEADER)
    assert "The first answer" not in json.dumps(resumed)
    assert texts(resumed[-1]) == ["Still there?"]


async def test_a_summary_that_does_not_shrink_falls_back_once_and_never_loops(
    tiny_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "cannot-shrink"
    huge_input = "Please consider this log: " + "error line\n" * 700  # ~3,000 tokens alone
    scripted_llm.script(
        Reply.text("Hello.", usage=(300, 10)),
        Reply.text("S" * 20_000),  # a "summary" larger than what it summarises
        Reply.tools([("Read", {"file_path": "README.md"})], usage=(3100, 20)),
        Reply.text("Done reading the log.", usage=(3200, 10)),
    )
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid)
        await client.call("session/prompt", {"sessionId": sid, "input": "hi"})
        result = await client.call("session/prompt", {"sessionId": sid, "input": huge_input})
        assert result["stopReason"] == "end_turn"

        (event,) = client.events("compact:exec", sid)
        assert event.params["strategy"] == "truncate"
        assert "did not make the context smaller" in event.params["errMsg"]
        assert "fell back to truncation" in event.params["errMsg"]
        summary_calls = [r for r in scripted_llm.requests if is_summary_request(r.body)]
        assert len(summary_calls) == 1, "the summary is never retried"
        assert len(scripted_llm.requests) == 4, "two model calls over the threshold, no loop"
        after = scripted_llm.requests[2].body["messages"]
        assert texts(after[0])[0] == TRUNCATION_NOTICE
        assert texts(after[0])[1] == huge_input
    finally:
        await client.close()


async def test_context_too_long_compacts_and_retries_once(
    tiny_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "overflow"
    too_long = Reply.error(400, message="prompt is too long: 2100 tokens > 2000 maximum")
    scripted_llm.script(
        Reply.text("First." + LONG, usage=(200, 10)),
        too_long,
        Reply.text("Short summary of the first exchange."),
        Reply.text("Answered after compaction.", usage=(300, 10)),
        # The next prompt: too long again, and again after compacting: the turn fails.
        too_long,
        Reply.text("Another summary."),
        too_long,
    )
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid)
        await client.call("session/prompt", {"sessionId": sid, "input": "one"})
        result = await client.call("session/prompt", {"sessionId": sid, "input": "two"})
        assert result["stopReason"] == "end_turn"
        (event,) = client.events("compact:exec", sid)
        assert event.params["trigger"] == "overflow" and event.params["strategy"] == "summary"
        assert client.events("session:error", sid) == []

        result = await client.call("session/prompt", {"sessionId": sid, "input": "three"})
        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "context_length_exceeded"
        assert len(client.events("compact:exec", sid)) == 2, "one compaction per turn"
        assert len(scripted_llm.requests) == 7
        assert scripted_llm.pending == 0
    finally:
        await client.close()


async def test_manual_compaction_by_command_and_by_method(
    tiny_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "manual"
    scripted_llm.script(
        Reply.text("An answer." + LONG, usage=(300, 40)),
        Reply.text("Another answer.", usage=(400, 10)),
        Reply.text("Summary with the file names."),
    )
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid)
        empty = await client.call("session/compact", {"sessionId": sid})
        assert empty["strategy"] == "none" and empty["errMsg"] == "nothing to compact"

        await client.call("session/prompt", {"sessionId": sid, "input": "Explain a.py"})
        await client.call("session/prompt", {"sessionId": sid, "input": "And b.py?"})
        result = await client.call(
            "session/prompt", {"sessionId": sid, "input": "/compact keep the file names"}
        )
        assert result["stopReason"] == "command"
        assert "keep the file names" in json.dumps(scripted_llm.requests[-1].body)
        event = client.events("compact:exec", sid)[-1]
        assert event.params["trigger"] == "manual" and event.params["strategy"] == "summary"
        assert result["usage"]["promptTokens"] == event.params["tokenCompact"]

        again = await client.call("session/compact", {"sessionId": sid})
        assert again["strategy"] == "none", "a lone summary has nothing left to compact"
        assert again["usage"]["maxTokens"] == 2000
    finally:
        await client.close()


def counted(tokens_of_text, *texts_: str) -> int:
    return sum(tokens_of_text(t) + MESSAGE_OVERHEAD for t in texts_)


@pytest.mark.parametrize("with_tiktoken", [True, False], ids=["tiktoken", "estimate"])
async def test_resumed_usage_counts_with_tiktoken_or_estimates(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path, monkeypatch, with_tiktoken: bool
):
    """A history without any provider figure (the seed's JSON format) is counted locally
    on resume: with the real encodings when TIKTOKEN_CACHE_DIR has them, else chars/2.5."""
    cache = tiktoken_dir() if with_tiktoken else tmp_path / "empty-cache"
    cache.mkdir(exist_ok=True)
    assert not with_tiktoken or any(cache.iterdir()), f"no shared tiktoken files at {cache}"
    env = {**server_env, "TIKTOKEN_CACHE_DIR": str(cache)}
    history = Path(env["SEMA_ROOT"]) / "history"
    history.mkdir()
    extra = ["The build fails with error E1234 in module façade.", "Fix: rename the import."]
    base = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    more = [
        *base,
        {"role": "user", "content": extra[0]},
        {"role": "assistant", "content": extra[1]},
    ]
    (history / "base.json").write_text(json.dumps({"messages": base, "todos": []}))
    (history / "more.json").write_text(json.dumps({"messages": more, "todos": []}))

    async with WireClient(env=env) as client:
        await client.initialize()
        small = await client.create_session(workspace, sessionId="base", model="claude-test")
        large = await client.create_session(workspace, sessionId="more", model="claude-test")
        # Imported into JSONL on resume: listed with their own message counts.
        listed = {s["sessionId"]: s for s in (await client.call("session/list"))["sessions"]}
        assert listed["base"]["messageCount"] == 2 and listed["more"]["messageCount"] == 4
        assert listed["more"]["title"] == "hello"

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    counter = TokenCounter("cl100k_base")
    counter.load()
    assert counter.name == ("cl100k_base" if with_tiktoken else "estimate")
    difference = large["usage"]["promptTokens"] - small["usage"]["promptTokens"]
    assert difference == counted(counter.count_text, *extra)
    assert small["historyLoaded"] and small["usage"]["promptTokens"] > 0


async def test_project_rules_and_plan_reminder_survive_compaction_and_clear(
    tiny_env, scripted_llm: ScriptedLLM, workspace
):
    """Rules come with the first query only; a compacted context keeps them with the
    latest user message, and `/clear` brings them (and the Plan reminder) back."""
    (workspace / "AGENTS.md").write_text("RULE-MARKER: indent with tabs.\n")
    sid = "rules"
    scripted_llm.script(
        Reply.text("An answer." + LONG, usage=(300, 40)),
        Reply.text("Another answer.", usage=(400, 10)),
        Reply.text("Summary of the work."),
        Reply.text("After compaction."),
        Reply.text("After clear."),
    )
    client = await WireClient(env=tiny_env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid, mode="Plan")
        for text in ("Explain a.py", "And b.py?", "/compact", "Next question", "/clear"):
            await client.call("session/prompt", {"sessionId": sid, "input": text})
        await client.call("session/prompt", {"sessionId": sid, "input": "Fresh start"})
    finally:
        await client.close()
    bodies = [json.dumps(r.body["messages"]) for r in scripted_llm.requests]
    first, _, summary, after_compact, after_clear = bodies
    assert "RULE-MARKER" in first and "Plan mode" in first
    assert "Primary request and intent" in summary
    assert "RULE-MARKER" in after_compact and "Plan mode" in after_compact
    assert after_compact.count("RULE-MARKER") == 1
    assert "RULE-MARKER" in after_clear and "Plan mode" in after_clear


# ---- the context budget: a batch of big tool results -------------------------------------

SMALL = {"provider": "anthropic", "modelName": "claude-test", "contextLength": 20000}
"""Threshold 15,000; a batch's results hold at most 10,000 tokens, one result 5,000."""


def eight_big_files(workspace: Path) -> list[str]:
    """Eight 2,000-line files (~16,000 tokens each by the estimate)."""
    names = []
    for i in range(8):
        name = f"big{i}.txt"
        (workspace / name).write_text("".join(f"line {i} {n}\n" for n in range(1, 2001)))
        names.append(name)
    return names


def small_env(server_env: dict[str, str]) -> dict[str, str]:
    models = {"profiles": {"small": SMALL}, "pointers": {"main": "small"}}
    (Path(server_env["SEMA_ROOT"]) / "models.json").write_text(json.dumps(models))
    return server_env


async def test_eight_big_reads_survive_compaction_and_the_turn_ends_in_three_requests(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    env = small_env(server_env)
    names = eight_big_files(workspace)
    sid = "reads8"
    scripted_llm.script(
        # An earlier turn leaves 9,000 tokens of context, mostly a long answer.
        Reply.text("The earlier answer." + LONG * 10, usage=(1500, 7500)),
        # The turn under test: eight reads, a compaction, the answer.
        Reply.tools([("Read", {"file_path": n}) for n in names], usage=(9100, 80)),
        Reply.text("SUMMARY: the user asked about the project earlier."),
        Reply.text("All eight files read.", usage=(14000, 10)),
    )
    client = await WireClient(env=env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid)
        await client.call("session/prompt", {"sessionId": sid, "input": "Tell me about it"})
        before = len(scripted_llm.requests)
        result = await client.call(
            "session/prompt", {"sessionId": sid, "input": "Read the eight big files"}
        )
        assert result["stopReason"] == "end_turn"
        turn = scripted_llm.requests[before:]
        assert len(turn) == 3, [r.body["messages"][-1] for r in turn]
        assert is_summary_request(turn[1].body)
        assert len(client.events("compact:exec", sid)) == 1
        assert client.events("session:error", sid) == []

        # The answering request holds the summary, the calls and all eight results, cut.
        messages = turn[2].body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert texts(messages[0])[0].startswith(SUMMARY_HEADER)
        assert "Read the eight big files" in texts(messages[0])
        results = [b for b in messages[2]["content"] if b["type"] == "tool_result"]
        assert len(results) == 8
        for i, block in enumerate(results):
            content = block["content"]
            assert content.startswith(f"     1\tline {i} 1\n")
            assert content.rstrip().endswith(f"line {i} 2000")
            assert "characters (" in content and "cut here" in content
            assert f"line {i} 1000\n" not in content
            assert len(content) < 5000
        # The client saw each whole output; only the model's copy is cut.
        complete = {
            e.params["toolCallId"]: e.params["content"]
            for e in client.events("tool:execution:complete", sid)
        }
        assert len(complete) == 8
        for i, block in enumerate(results):
            assert f"line {i} 1000\n" in complete[block["tool_use_id"]]
    finally:
        await client.close()


async def test_a_context_that_cannot_fit_after_compaction_ends_the_turn_with_an_error(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    env = small_env(server_env)
    names = eight_big_files(workspace)
    sid = "cannot-fit"
    too_long = Reply.error(400, message="prompt is too long: 21000 tokens > 20000 maximum")
    scripted_llm.script(
        Reply.text("The earlier answer." + LONG * 10, usage=(1500, 7500)),
        Reply.tools([("Read", {"file_path": n}) for n in names], usage=(9100, 80)),
        Reply.text("SUMMARY: the user asked about the project earlier."),
        too_long,  # the model's window is smaller than the profile says
        Reply.text("Never sent: the turn stops."),
    )
    client = await WireClient(env=env).start()
    try:
        await client.initialize()
        await client.create_session(workspace, sessionId=sid)
        await client.call("session/prompt", {"sessionId": sid, "input": "Tell me about it"})
        before = len(scripted_llm.requests)
        result = await client.call(
            "session/prompt", {"sessionId": sid, "input": "Read the eight big files"}
        )
        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "context_length_exceeded"
        assert len(scripted_llm.requests) - before == 3, "no second compaction, no retry"
        assert scripted_llm.pending == 1
        assert len(client.events("compact:exec", sid)) == 1
        (error,) = client.events("session:error", sid)
        assert error.params["type"] == "context_length_exceeded"
        message = error.params["error"]["message"]
        assert "does not fit the model's context window even after compaction" in message
        assert "contextLength 20,000" in message and "prompt is too long" in message

        # The session goes on: the next prompt is answered.
        result = await client.call("session/prompt", {"sessionId": sid, "input": "Thanks"})
        assert result["stopReason"] == "end_turn"
    finally:
        await client.close()
