"""Sessions that last, over real pipes: resume after a restart (and after kill -9),
session/list, session/dispose, /clear, input history, an unwritable history folder."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.engine.store.curated import ORPHANED_TOOL_RESULT
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio

MODEL = "anthropic/claude-test"


def history_file(env: dict[str, str], session_id: str) -> Path:
    return Path(env["SEMA_ROOT"]) / "history" / f"{session_id}.jsonl"


def texts(message: dict[str, Any]) -> list[str]:
    """Every text-ish part of an Anthropic request message, in order."""
    content = message["content"]
    if isinstance(content, str):
        return [content]
    out = []
    for block in content:
        if block["type"] == "text":
            out.append(block["text"])
        elif block["type"] == "tool_result":
            c = block["content"]
            out.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c))
        elif block["type"] == "tool_use":
            out.append(f"tool_use:{block['name']}")
    return out


async def start(env: dict[str, str], workspace: Path, session_id: str, **params: Any):
    client = await WireClient(env=env).start()
    await client.initialize()
    ready = await client.create_session(workspace, sessionId=session_id, model=MODEL, **params)
    return client, ready


async def prompt(client: WireClient, sid: str, text: str, **kw: Any) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "input": text}, **kw)


async def kill_9(client: WireClient) -> None:
    assert client.proc is not None
    client.proc.kill()  # SIGKILL: no shutdown, no flush
    await client.proc.wait()
    await client.close()


async def test_resume_after_a_restart_brings_every_message_back(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "resume-after-restart"
    scripted_llm.script(
        Reply.turn(
            thinking="The README will say.",
            text="Reading.",
            tools=[("Read", {"file_path": "README.md"})],
            usage=(120, 30),
        ),
        Reply.text("It is a tiny demo project.", usage=(400, 12)),
    )
    client, ready = await start(server_env, workspace, sid)
    assert ready["historyLoaded"] is False
    assert (await prompt(client, sid, "What is this project?"))["stopReason"] == "end_turn"
    await client.close()
    before_restart = scripted_llm.requests[1].body["messages"]

    scripted_llm.script(Reply.text("Still a demo.", usage=(450, 5)))
    client, ready = await start(server_env, workspace, sid)
    try:
        assert ready["historyLoaded"] is True
        assert ready["usage"]["promptTokens"] == 412, "the provider's last figure, restored"
        assert ready["usage"]["maxTokens"] == 128000
        assert (await prompt(client, sid, "And now?"))["stopReason"] == "end_turn"
    finally:
        await client.close()

    resumed = scripted_llm.requests[2].body["messages"]
    assert resumed[:3] == before_restart, (
        "user, assistant (thinking + signature + tool call), results"
    )
    assert resumed[1]["content"][0]["type"] == "thinking"
    assert resumed[1]["content"][0]["signature"] == "sig-scripted"
    assert texts(resumed[3]) == ["It is a tiny demo project."]
    assert texts(resumed[4]) == ["And now?"]
    assert len(resumed) == 5


async def test_kill_9_mid_turn_keeps_every_completed_message(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """Two sessions die with the process: one while the model streams its second
    response, one while a tool runs. Both come back whole, minus the in-flight part."""
    streams, runs = "killed-while-streaming", "killed-while-tool-runs"
    gate = threading.Event()
    in_flight = Reply.text("This answer never completes.", chunks=6, gate=gate)
    client = await WireClient(env=server_env).start()
    await client.initialize()
    await client.create_session(workspace, sessionId=streams, model=MODEL)
    await client.create_session(workspace, sessionId=runs, model=MODEL, permissionMode="bypass")

    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "README.md"})], text="Reading.", usage=(100, 20)),
        in_flight,
    )
    first = asyncio.ensure_future(prompt(client, streams, "Summarise the README"))
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, in_flight.at_gate.wait, 10)
    scripted_llm.script(Reply.tools([("Bash", {"command": "sleep 3"}, "toolu_sleep")]))
    second = asyncio.ensure_future(prompt(client, runs, "Wait a bit"))
    await client.wait_for("tool:execution:start", lambda p: p["sessionId"] == runs)
    await kill_9(client)
    gate.set()
    first.cancel()
    second.cancel()

    client = await WireClient(env=server_env).start()
    try:
        await client.initialize()
        for sid in (streams, runs):
            ready = await client.create_session(workspace, sessionId=sid, model=MODEL)
            assert ready["historyLoaded"] is True

        scripted_llm.script(Reply.text("Resumed fine."))
        assert (await prompt(client, streams, "Go on"))["stopReason"] == "end_turn"
        messages = scripted_llm.requests[-1].body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert texts(messages[0])[0] == "Summarise the README"  # then the first-query reminders
        assert texts(messages[1]) == ["Reading.", "tool_use:Read"]
        assert "# Demo" in texts(messages[2])[0], "the tool result survived"
        assert texts(messages[2])[-1] == "Go on"
        assert "never completes" not in json.dumps(messages), "the in-flight message is absent"

        # The tool call that was running gets a result, so the provider accepts the history.
        scripted_llm.script(Reply.text("Understood."))
        assert (await prompt(client, runs, "What happened?"))["stopReason"] == "end_turn"
        messages = scripted_llm.requests[-1].body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        result = messages[2]["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_sleep"
        assert result["is_error"] is True
        assert texts(messages[2]) == [ORPHANED_TOOL_RESULT, "What happened?"]
    finally:
        await client.close()
    for sid in (streams, runs):
        lines = history_file(server_env, sid).read_bytes().splitlines()
        assert all(json.loads(line) for line in lines), "no torn line left behind"


async def test_session_list_order_filter_and_bad_ids(
    client: WireClient, server_env, scripted_llm: ScriptedLLM, workspace, tmp_path
):
    other = tmp_path / "other-project"
    other.mkdir()
    await client.initialize()
    scripted_llm.script(*[Reply.text(f"answer {i}") for i in range(3)])
    for sid, where, text in [
        ("list-a", workspace, "First project question"),
        ("list-b", other, "Other project question"),
        ("list-c", workspace, "Latest question"),
    ]:
        await client.create_session(where, sessionId=sid, model=MODEL)
        await prompt(client, sid, text)
        await asyncio.sleep(0.02)  # distinct modification times
    history = Path(server_env["SEMA_ROOT"]) / "history"
    (history / "corrupt.jsonl").write_bytes(b"\x00\x01 definitely not json\n")
    (history / "a-folder.jsonl").mkdir()
    (history / "bad-seed.json").write_text('{"messages": 5, "todos": []}')
    (history / "odd-seed.json").write_text(
        '{"messages": [{"role": "user", "content": "seeded question"},'
        ' {"role": "assistant", "content": [{"type": "tool_result", "content": 7}]}]}'
    )
    (history / "nested.jsonl").write_bytes(b"[" * 100_000 + b"\n")

    everything = (await client.call("session/list"))["sessions"]
    assert [s["sessionId"] for s in everything] == ["odd-seed", "list-c", "list-b", "list-a"]
    assert everything[0]["title"] == "seeded question"
    first = everything[3]
    assert first["title"] == "First project question"
    assert first["messageCount"] == 2
    assert first["workingDir"] == str(workspace.resolve())
    assert first["updatedAt"].endswith("Z")
    mine = await client.call("session/list", {"workingDir": str(workspace)})
    assert [s["sessionId"] for s in mine["sessions"]] == ["list-c", "list-a"]
    assert (await client.call("session/list", {"workingDir": str(tmp_path)}))["sessions"] == []

    for method, params, code in [
        ("session/list", {"workingDir": "relative/path"}, -32602),
        ("session/dispose", {"sessionId": "nope"}, -32010),
        ("session/compact", {"sessionId": "nope"}, -32010),
        ("session/create", {"workingDir": str(workspace), "sessionId": "../escape"}, -32602),
        ("session/create", {"workingDir": str(workspace), "sessionId": "a-folder"}, -32015),
        ("session/create", {"workingDir": str(workspace), "sessionId": "bad-seed"}, -32015),
    ]:
        with pytest.raises(RpcFailure) as err:
            await client.call(method, params)
        assert err.value.code == code, (method, params)

    # A seed file with a block of the wrong type loses that block, not the session.
    ready = await client.create_session(workspace, sessionId="odd-seed", model=MODEL)
    assert ready["historyLoaded"] is True
    # Absurdly nested garbage is one unreadable line, skipped.
    ready = await client.create_session(workspace, sessionId="nested", model=MODEL)
    assert ready["historyLoaded"] is False

    # A file of garbage resumes as an empty session and is written on from then on.
    ready = await client.create_session(workspace, sessionId="corrupt", model=MODEL)
    assert ready["historyLoaded"] is False
    scripted_llm.script(Reply.text("fine"))
    assert (await prompt(client, "corrupt", "hello"))["stopReason"] == "end_turn"
    assert b'"hello"' in (history / "corrupt.jsonl").read_bytes()

    # The project's input history: every session of the project, newest first, no repeats.
    scripted_llm.script(Reply.text("ok"))
    await prompt(client, "list-c", "First project question")
    ready = await client.create_session(workspace, model=MODEL)
    assert ready["projectInputHistory"] == [
        "First project question",
        "hello",
        "Latest question",
    ]
    assert ready["historyLoaded"] is False
    assert client.unsolicited == []


async def test_clear_then_dispose(
    client: WireClient, server_env, scripted_llm: ScriptedLLM, workspace
):
    await client.initialize()
    sid = (await client.create_session(workspace, sessionId="clear-me", model=MODEL))["sessionId"]
    scripted_llm.script(Reply.text("one", usage=(50, 5)), Reply.text("two"))
    await prompt(client, sid, "first input")

    result = await prompt(client, sid, "/clear")

    assert result["stopReason"] == "command"
    assert result["usage"]["promptTokens"] == 0
    assert len(client.events("session:cleared", sid)) == 1
    assert len(scripted_llm.requests) == 1, "no model call for a system command"
    await prompt(client, sid, "second input")
    messages = scripted_llm.requests[-1].body["messages"]
    assert [texts(m)[0] for m in messages] == ["second input"]  # a fresh first query (+ reminders)
    listed = (await client.call("session/list"))["sessions"]
    assert listed[0]["messageCount"] == 4, "the file keeps the cleared messages"
    states = [e.params["state"] for e in client.events("state:update", sid)]
    assert states == ["processing", "idle"] * 3

    await dispose_interrupts_waits_and_keeps_the_history(client, scripted_llm, workspace)


async def dispose_interrupts_waits_and_keeps_the_history(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    sid = (await client.create_session(workspace, sessionId="dispose-me", model=MODEL))["sessionId"]
    gate = threading.Event()
    scripted_llm.script(Reply.text("slow answer", chunks=4, gate=gate))
    requests_before = len(scripted_llm.requests)
    running = asyncio.ensure_future(prompt(client, sid, "take your time"))
    await client.wait_for("message:text:chunk", lambda p: p["sessionId"] == sid)
    queued = asyncio.ensure_future(prompt(client, sid, "queued input"))
    await client.read_so_far()

    disposed = await client.call("session/dispose", {"sessionId": sid})
    gate.set()

    assert disposed == {"disposed": True, "interrupted": True}
    assert (await running)["stopReason"] == "interrupted"
    assert (await queued)["stopReason"] == "interrupted"
    assert len(scripted_llm.requests) == requests_before + 1, "the queued prompt did not run"
    with pytest.raises(RpcFailure) as err:
        await prompt(client, sid, "still there?")
    assert err.value.code == -32010
    with pytest.raises(RpcFailure) as err:
        await client.call("session/dispose", {"sessionId": sid})
    assert err.value.code == -32010

    ready = await client.create_session(workspace, sessionId=sid, model=MODEL)
    assert ready["historyLoaded"] is True
    scripted_llm.script(Reply.text("back"))
    await prompt(client, sid, "hello again")
    messages = scripted_llm.requests[-1].body["messages"]
    assert texts(messages[0])[0] == "take your time"


async def test_an_unwritable_history_folder_never_stops_the_session(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    (Path(server_env["SEMA_ROOT"]) / "history").write_text("a file, not a folder")
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    client, _ = await start(server_env, workspace, "no-disk")
    try:
        assert (await prompt(client, "no-disk", "first"))["stopReason"] == "end_turn"
        assert (await prompt(client, "no-disk", "second"))["stopReason"] == "end_turn"
        messages = scripted_llm.requests[-1].body["messages"]
        assert len(messages) == 3, "the session goes on in memory"
        assert (await client.call("session/list"))["sessions"] == []
    finally:
        await client.close()
    assert b"cannot write session history" in client.stderr


async def test_a_session_begun_with_a_custom_command_is_listed_by_what_was_typed(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    commands = workspace / ".sema" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("Review the code in $ARGUMENTS carefully.\n")
    await client.initialize()
    sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
    scripted_llm.script(Reply.text("Reviewed."))
    await prompt(client, sid, "/review src/app.py")
    assert texts(scripted_llm.requests[0].body["messages"][0])[0] == (
        "Review the code in src/app.py carefully."
    )
    [listed] = (await client.call("session/list"))["sessions"]
    assert listed["title"] == "/review src/app.py"


async def test_session_delete_removes_history_seed_and_checkpoints_and_refuses_a_busy_session(
    client: WireClient, server_env, scripted_llm: ScriptedLLM, workspace
):
    await client.initialize()
    sid = (await client.create_session(workspace, sessionId="delete-me", model=MODEL))["sessionId"]
    scripted_llm.script(Reply.text("kept"))
    await prompt(client, sid, "remember this")
    root = Path(server_env["SEMA_ROOT"])
    checkpoints = root / "checkpoints" / sid
    checkpoints.mkdir(parents=True)
    (checkpoints / "blob").write_text("old content")
    seed = root / "history" / f"{sid}.json"
    seed.write_text("{}")
    assert history_file(server_env, sid).exists()

    gate = threading.Event()
    scripted_llm.script(Reply.text("slow", chunks=3, gate=gate))
    seen = max(e.params["seq"] for e in client.events("message:text:chunk", sid))
    running = asyncio.ensure_future(prompt(client, sid, "busy now"))
    await client.wait_for("message:text:chunk", lambda p: p["seq"] > seen)
    with pytest.raises(RpcFailure) as err:
        await client.call("session/delete", {"sessionId": sid})
    assert err.value.code == -32016
    assert err.value.error["data"] == {"sessionId": sid}
    gate.set()
    assert (await running)["stopReason"] == "end_turn"
    assert history_file(server_env, sid).exists(), "a refused delete changes nothing"

    assert await client.call("session/delete", {"sessionId": sid}) == {"deleted": True}

    assert not history_file(server_env, sid).exists()
    assert not seed.exists() and not checkpoints.exists()
    listed = (await client.call("session/list"))["sessions"]
    assert sid not in [s["sessionId"] for s in listed]
    with pytest.raises(RpcFailure) as err:
        await prompt(client, sid, "gone?")
    assert err.value.code == -32010
    assert await client.call("session/delete", {"sessionId": sid}) == {"deleted": False}
    ready = await client.create_session(workspace, sessionId=sid, model=MODEL)
    assert ready["historyLoaded"] is False, "a deleted session starts over"


async def test_session_rename_sets_the_listed_title_for_live_and_stored_sessions(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    root = Path(server_env["SEMA_ROOT"])
    async with WireClient(env=server_env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        scripted_llm.script(Reply.text("Done."), Reply.text("Again."))
        await prompt(client, sid, "fix the login test")

        renamed = await client.call(
            "session/rename", {"sessionId": sid, "title": "  Login   test\nflake "}
        )
        assert renamed == {"title": "Login test flake"}
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["title"] == "Login test flake"
        # Later prompts do not take the title back.
        await prompt(client, sid, "and the signup test")
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["title"] == "Login test flake"
        title_file = root / "history" / f"{sid}.title"
        assert title_file.stat().st_mode & 0o777 == 0o600

    async with WireClient(env=server_env) as client:
        await client.initialize()
        # Listed after a restart; renamed again while only on disk (not resumed).
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["title"] == "Login test flake"
        await client.call("session/rename", {"sessionId": sid, "title": "Auth tests"})
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["title"] == "Auth tests"
        # An empty title gives the session back the title of its first prompt.
        assert await client.call("session/rename", {"sessionId": sid, "title": ""}) == {
            "title": "fix the login test"
        }
        [listed] = (await client.call("session/list"))["sessions"]
        assert listed["title"] == "fix the login test"

        await client.call("session/rename", {"sessionId": sid, "title": "Short-lived"})
        assert await client.call("session/delete", {"sessionId": sid}) == {"deleted": True}
        assert not title_file.exists()

        with pytest.raises(RpcFailure) as err:
            await client.call("session/rename", {"sessionId": "no-such-session", "title": "x"})
        assert err.value.code == -32010
        with pytest.raises(RpcFailure) as err:
            await client.call("session/rename", {"sessionId": "../escape", "title": "x"})
        assert err.value.code == -32602
        assert (await client.call("session/list"))["sessions"] == []
