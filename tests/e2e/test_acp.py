"""`sema-rpc --acp` driven by the official ACP Python SDK over real pipes, against the
scripted model server; every message both ways validated against the ACP v1 schema
(tests/support/acp_client.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    ResourceContentBlock,
    TextContentBlock,
)

from tests.support.acp_client import REPO, AcpSession, Editor, acp_agent
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


async def start(agent: AcpSession, workspace: Path, **caps: Any) -> str:
    init = await agent.conn.initialize(
        protocol_version=1,
        client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(**caps)),
    )
    assert init.protocol_version == 1
    new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    return new.session_id


def joined(agent: AcpSession, sid: str, kind: str) -> str:
    return "".join(u["content"]["text"] for u in agent.updates(sid) if u["sessionUpdate"] == kind)


def wire_answers(agent: AcpSession, method: str) -> list[dict[str, Any]]:
    """The agent's answers to the client's `method` requests, in order."""
    ids = {m["id"] for d, m in agent.messages if d == "out" and m.get("method") == method}
    return [m for d, m in agent.messages if d == "in" and "method" not in m and m.get("id") in ids]


async def test_initialize_new_prompt_streams_chunks_and_usage(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.thinking("Let me think.", then=Reply.text("Hello from sema.", chunks=4))
    )
    async with acp_agent(server_env) as agent:
        init = await agent.conn.initialize(protocol_version=1)
        caps = init.agent_capabilities
        assert caps.load_session is True
        assert caps.prompt_capabilities.embedded_context is True
        assert caps.session_capabilities.list is not None
        assert caps.session_capabilities.delete is not None
        assert init.agent_info.name == "sema-rpc"
        assert [m.id for m in init.auth_methods] == ["environment"]
        assert await agent.conn.authenticate(method_id="environment") is not None

        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = new.session_id
        assert new.modes.current_mode_id == "default"
        assert {m.id for m in new.modes.available_modes} == {
            "default",
            "acceptEdits",
            "bypass",
            "plan",
        }
        assert {o.id for o in new.config_options} == {"mode", "model", "thought_level", "sandbox"}

        result = await agent.conn.prompt(session_id=sid, prompt=[text("Say hello")])

        assert result.stop_reason == "end_turn"
        assert joined(agent, sid, "agent_message_chunk") == "Hello from sema."
        assert joined(agent, sid, "agent_thought_chunk") == "Let me think."
        kinds = agent.kinds(sid)
        assert kinds.count("agent_message_chunk") == 4
        assert "usage_update" in kinds
        usage = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"][-1]
        assert usage["used"] > 0 and usage["size"] > 0
        assert usage["cost"]["currency"] == "USD" and usage["cost"]["amount"] > 0
        info = [u for u in agent.updates(sid) if u["sessionUpdate"] == "session_info_update"]
        assert info and info[0]["title"] == "Say hello"
        commands = [
            u for u in agent.updates(sid) if u["sessionUpdate"] == "available_commands_update"
        ]
        assert {"clear", "compact"} <= {c["name"] for c in commands[0]["availableCommands"]}
        body = scripted_llm.requests[-1].body
        assert body["messages"][0]["content"][0]["text"] == "Say hello"


async def test_write_asks_permission_allow_runs_reject_never_runs(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    target = workspace / "notes.txt"
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(target), "content": "first\n"}, "call_w1")]),
        Reply.text("Written."),
        Reply.tools([("Write", {"file_path": str(target), "content": "second\n"}, "call_w2")]),
        Reply.text("unused"),
    )
    editor = Editor(permission_answers=["allow_once", "reject_once"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        first = await agent.conn.prompt(session_id=sid, prompt=[text("write it")])
        assert first.stop_reason == "end_turn"
        assert target.read_text() == "first\n"

        second = await agent.conn.prompt(session_id=sid, prompt=[text("write again")])
        assert second.stop_reason == "end_turn"
        assert target.read_text() == "first\n", "a rejected Write never runs"

        asked = editor.permission_requests
        assert [o["kind"] for o in asked[0]["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        assert asked[0]["toolCall"]["toolCallId"] == "call_w1"
        assert asked[0]["toolCall"]["content"][0]["type"] == "diff"
        assert asked[0]["toolCall"]["content"][0]["newText"] == "first\n"
        updates = agent.updates(sid)
        calls = [u for u in updates if u.get("toolCallId") == "call_w1"]
        assert calls[0]["sessionUpdate"] == "tool_call", "tool_call precedes its updates"
        assert calls[0]["kind"] == "edit"
        assert calls[0]["locations"] == [{"path": str(target), "line": 1}]
        assert calls[0]["content"] == [
            {"type": "diff", "path": str(target), "newText": "first\n"}
        ], "a new file has no old text"
        assert calls[-1]["status"] == "completed"
        second_calls = [u for u in updates if u.get("toolCallId") == "call_w2"]
        assert second_calls[0]["content"][0]["oldText"] == "first\n"
        assert second_calls[-1]["status"] == "failed"
        # the permission request went out after the tool_call, before its final update
        order = [
            (m.get("method"), (m.get("params") or {}).get("update", {}).get("sessionUpdate"))
            for d, m in agent.messages
            if d == "in" and m.get("method")
        ]
        first_call = order.index(("session/update", "tool_call"))
        assert order.index(("session/request_permission", None)) > first_call


async def test_cancel_mid_stream_answers_cancelled(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    reply = Reply.text("a long answer that never ends", chunks=5, gate=gate)
    scripted_llm.script(reply, Reply.text("after"))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("go")]))
        await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
        await asyncio.to_thread(reply.at_gate.wait, 10)
        await agent.conn.cancel(session_id=sid)
        result = await asyncio.wait_for(running, 15)
        gate.set()
        assert result.stop_reason == "cancelled"
        again = await agent.conn.prompt(session_id=sid, prompt=[text("still there?")])
        assert again.stop_reason == "end_turn"
        answers = wire_answers(agent, "session/prompt")
        assert len(answers) == 2 and all("result" in a for a in answers), "answered once each"


async def test_cancel_mid_permission_client_answers_cancelled_and_nothing_runs(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    target = workspace / "never.txt"
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(target), "content": "x"}, "call_c1")]),
        Reply.text("unused"),
    )
    editor = Editor(permission_gate=asyncio.Event())
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("write")]))
        await asyncio.wait_for(editor.permission_asked.wait(), 15)
        await agent.conn.cancel(session_id=sid)
        editor.cancel_pending.set()  # the editor answers its open request `cancelled`
        result = await asyncio.wait_for(running, 15)
        assert result.stop_reason == "cancelled"
        assert not target.exists()
        final = [u for u in agent.updates(sid) if u.get("toolCallId") == "call_c1"][-1]
        assert final["status"] == "failed"


async def test_bad_input_gets_json_rpc_errors_and_the_agent_keeps_serving(server_env, workspace):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "--acp",
        cwd=str(REPO),
        env={**os.environ, **server_env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = [
        b"not json",
        b"[1,2]",
        b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":5}}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}',
        b'{"jsonrpc":"2.0","id":3,"method":"no/such"}',
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{}}',
        b'{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}',
    ]
    proc.stdin.write(b"\n".join(lines) + b"\n")
    await proc.stdin.drain()
    answers: dict[Any, dict[str, Any]] = {}
    nulls = []
    while len(answers) < 4 or len(nulls) < 2:
        line = await asyncio.wait_for(proc.stdout.readline(), 15)
        message = json.loads(line)
        if message.get("id") is None:
            nulls.append(message)
        else:
            answers[message["id"]] = message
    assert [n["error"]["code"] for n in nulls] == [-32700, -32600]
    assert answers[1]["error"]["code"] == -32602
    assert answers[2]["error"]["code"] == -32002
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["result"]["protocolVersion"] == 1
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 15) == 0


async def test_resource_link_and_embedded_resource_reach_the_model(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("Seen."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        blocks = [
            text("Compare"),
            ResourceContentBlock(
                type="resource_link", name="README.md", uri=(workspace / "README.md").as_uri()
            ),
            {
                "type": "resource",
                "resource": {"uri": "file:///buffer/unsaved.py", "text": "UNSAVED = 1\n"},
            },
        ]
        result = await agent.conn.prompt(session_id=sid, prompt=blocks)
        assert result.stop_reason == "end_turn"
        sent = json.dumps(scripted_llm.requests[-1].body["messages"][0])
        assert "A tiny project." in sent, "the linked workspace file was read"
        assert "UNSAVED = 1" in sent, "the embedded buffer text was passed"


async def test_the_schema_check_rejects_what_clients_reject():
    """The checker's own check: it must catch a null result, an unknown update kind and an
    update for a tool call without its title (otherwise the tests above prove nothing)."""
    from tests.support.acp_client import SchemaCheck

    check = SchemaCheck()
    check.message(
        "out",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/set_mode",
            "params": {"sessionId": "s", "modeId": "plan"},
        },
    )
    check.message("in", {"jsonrpc": "2.0", "id": 1, "result": None})
    check.message(
        "in",
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "nope"}},
        },
    )
    check.message(
        "in",
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {"sessionUpdate": "tool_call", "toolCallId": "t"},
            },
        },
    )
    assert len(check.errors) >= 3
    assert any("null result" in e for e in check.errors)


async def test_load_after_a_restart_replays_the_whole_conversation_then_answers(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.turn(
            thinking="Reading first.",
            text="Let me look.",
            tools=[("Read", {"file_path": str(workspace / "README.md")}, "call_r1")],
        ),
        Reply.tools([("Read", {"file_path": str(workspace / "missing.md")}, "call_r2")]),
        Reply.text("It is a tiny project."),
    )
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text("What is this?")])
        live = agent.updates(sid)

    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "What is this?"
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert loaded.modes.current_mode_id == "default"
        replay = agent.updates(sid)
        # the answer came after the whole replay
        answer_at = next(
            i
            for i, (d, m) in enumerate(agent.messages)
            if d == "in" and "result" in m and "modes" in m["result"]
        )
        updates_at = [
            i
            for i, (d, m) in enumerate(agent.messages)
            if d == "in"
            and m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] != "available_commands_update"
        ]
        assert updates_at and max(updates_at) < answer_at
        assert replay[0] == {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "What is this?"},
            "messageId": replay[0]["messageId"],
        }
        assert replay[0]["messageId"].startswith("m_")
        assert joined(agent, sid, "agent_thought_chunk") == "Reading first."
        assert joined(agent, sid, "agent_message_chunk") == joined_live(live, "agent_message_chunk")
        calls = {u["toolCallId"]: u for u in replay if u["sessionUpdate"] == "tool_call"}
        assert calls["call_r1"]["status"] == "completed"
        assert calls["call_r1"]["kind"] == "read"
        assert "A tiny project." in calls["call_r1"]["content"][0]["content"]["text"]
        assert calls["call_r2"]["status"] == "failed"

        scripted_llm.script(Reply.text("Still here."))
        again = await agent.conn.prompt(session_id=sid, prompt=[text("And now?")])
        assert again.stop_reason == "end_turn"
        sent = scripted_llm.requests[-1].body["messages"]
        assert sent[0]["content"][0]["text"] == "What is this?", "the model sees the history"

        with pytest.raises(Exception) as err:
            await agent.conn.load_session(
                cwd=str(workspace), session_id="never-was", mcp_servers=[]
            )
        assert getattr(err.value, "code", None) == -32002


def joined_live(updates: list[dict[str, Any]], kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


async def test_resume_close_delete_and_sessions_shared_with_the_native_dialect(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    from tests.support.wire_client import WireClient

    scripted_llm.script(Reply.text("native answer"), Reply.text("acp answer"))
    async with WireClient(env=server_env) as native:
        await native.initialize()
        ready = await native.create_session(workspace, model="anthropic/claude-test")
        native_sid = ready["sessionId"]
        await native.call("session/prompt", {"sessionId": native_sid, "input": "from native"})

    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        listed = await agent.conn.list_sessions()
        assert native_sid in [s.session_id for s in listed.sessions]
        resumed = await agent.conn.resume_session(cwd=str(workspace), session_id=native_sid)
        assert resumed.modes is not None
        assert [
            u
            for u in agent.updates(native_sid)
            if u["sessionUpdate"] != "available_commands_update"
        ] == [], "resume does not replay"
        result = await agent.conn.prompt(session_id=native_sid, prompt=[text("from acp")])
        assert result.stop_reason == "end_turn"
        sent = scripted_llm.requests[-1].body["messages"]
        assert sent[0]["content"][0]["text"] == "from native"

        assert await agent.conn.close_session(session_id=native_sid) is not None
        with pytest.raises(Exception) as err:
            await agent.conn.prompt(session_id=native_sid, prompt=[text("closed?")])
        assert getattr(err.value, "code", None) == -32002

        assert await agent.raw_request("session/delete", {"sessionId": native_sid}) == {}
        listed = await agent.conn.list_sessions()
        assert native_sid not in [s.session_id for s in listed.sessions]

    async with WireClient(env=server_env) as native:
        await native.initialize()
        listed = (await native.call("session/list"))["sessions"]
        assert native_sid not in [s["sessionId"] for s in listed], "one store for both dialects"


def config_value(options: list[dict[str, Any]], option_id: str) -> Any:
    return next(o["currentValue"] for o in options if o["id"] == option_id)


async def test_plan_mode_exit_plan_mode_switches_mode_itself_and_edits_run(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    target = workspace / "planned.txt"
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(target), "content": "too early"}, "call_p0")]),
        Reply.tools([("ExitPlanMode", {"plan": "# Plan\n1. write planned.txt"}, "call_exit")]),
        Reply.tools([("Write", {"file_path": str(target), "content": "done\n"}, "call_p1")]),
        Reply.text("Implemented."),
    )
    editor = Editor(permission_answers=["acceptEdits"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        assert await agent.conn.set_session_mode(session_id=sid, mode_id="plan") is not None
        assert agent.kinds(sid)[-2:] == ["current_mode_update", "config_option_update"]
        assert [
            u["currentModeId"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "current_mode_update"
        ] == ["plan"]

        result = await agent.conn.prompt(session_id=sid, prompt=[text("plan then do it")])

        assert result.stop_reason == "end_turn"
        assert target.read_text() == "done\n"
        assert len(editor.permission_requests) == 1, "after acceptEdits the Write did not ask"
        plan_request = editor.permission_requests[0]
        assert plan_request["toolCall"]["toolCallId"] == "call_exit"
        assert "write planned.txt" in plan_request["toolCall"]["content"][0]["content"]["text"]
        assert [o["kind"] for o in plan_request["options"]] == [
            "allow_always",
            "allow_once",
            "allow_once",
            "reject_once",
        ]
        modes = [
            u["currentModeId"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "current_mode_update"
        ]
        assert modes == ["plan", "acceptEdits"], "the agent announced its own mode change"
        refused = [u for u in agent.updates(sid) if u.get("toolCallId") == "call_p0"][-1]
        assert refused["status"] == "failed"
        assert "Plan mode" in refused["content"][0]["content"]["text"]
        exit_call = next(u for u in agent.updates(sid) if u.get("toolCallId") == "call_exit")
        assert exit_call["kind"] == "switch_mode"

        with pytest.raises(Exception) as err:
            await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert getattr(err.value, "code", None) == -32602


async def test_model_and_thought_level_options_change_the_next_model_call(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    root = Path(server_env["SEMA_ROOT"])
    (root / "models.json").write_text(
        json.dumps(
            {
                "profiles": {
                    "fast": {
                        "provider": "anthropic",
                        "model": "claude-fast-1",
                        "contextLength": 50000,
                    },
                    "deep": {"provider": "anthropic", "model": "claude-deep-1"},
                },
                "pointers": {"main": "deep"},
            }
        )
    )
    scripted_llm.script(Reply.text("one"), Reply.text("two"))
    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = new.session_id
        options = [o.model_dump(by_alias=True, exclude_none=True) for o in new.config_options]
        model = next(o for o in options if o["id"] == "model")
        assert model["currentValue"] == "deep"
        assert {"fast", "deep"} <= {o["value"] for o in model["options"]}

        changed = await agent.conn.set_config_option(
            session_id=sid, config_id="model", value="fast"
        )
        after = [o.model_dump(by_alias=True, exclude_none=True) for o in changed.config_options]
        assert config_value(after, "model") == "fast"
        await agent.conn.prompt(session_id=sid, prompt=[text("hi")])
        assert scripted_llm.requests[-1].body["model"] == "claude-fast-1"
        assert "thinking" not in scripted_llm.requests[-1].body

        changed = await agent.conn.set_config_option(
            session_id=sid, config_id="thought_level", value="on"
        )
        after = [o.model_dump(by_alias=True, exclude_none=True) for o in changed.config_options]
        assert config_value(after, "thought_level") == "on"
        await agent.conn.prompt(session_id=sid, prompt=[text("think")])
        assert scripted_llm.requests[-1].body["thinking"]["type"] == "enabled"
        usage = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"][-1]
        assert usage["size"] == 50000

        with pytest.raises(Exception) as err:
            await agent.conn.set_config_option(session_id=sid, config_id="model", value="nope")
        assert getattr(err.value, "code", None) == -32602


async def test_the_sandbox_is_a_config_option_and_confines_commands(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path: Path
):
    from sema_rpc.sandbox import status

    if not status()[0]:
        pytest.skip(f"no OS sandbox here: {status()[1]}")
    outside = tmp_path / "outside"
    outside.mkdir()
    command = f"touch {outside}/escaped; touch made.txt"
    scripted_llm.script(
        Reply.tools([("Bash", {"command": command})]), Reply.text("one"),
        Reply.tools([("Bash", {"command": command})]), Reply.text("two"),
    )  # fmt: skip
    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = new.session_id
        options = [o.model_dump(by_alias=True, exclude_none=True) for o in new.config_options]
        sandbox = next(o for o in options if o["id"] == "sandbox")
        assert sandbox["currentValue"] == "workspace-write"
        assert [o["value"] for o in sandbox["options"]] == ["workspace-write", "read-only", "off"]
        await agent.conn.set_config_option(session_id=sid, config_id="mode", value="bypass")
        await agent.conn.prompt(session_id=sid, prompt=[text("go")])
        assert (workspace / "made.txt").exists() and not (outside / "escaped").exists()

        (workspace / "made.txt").unlink()
        changed = await agent.conn.set_config_option(
            session_id=sid, config_id="sandbox", value="read-only"
        )
        after = [o.model_dump(by_alias=True, exclude_none=True) for o in changed.config_options]
        assert config_value(after, "sandbox") == "read-only"
        await agent.conn.prompt(session_id=sid, prompt=[text("again")])
        assert not (workspace / "made.txt").exists() and not (outside / "escaped").exists()
        with pytest.raises(Exception) as err:
            await agent.conn.set_config_option(session_id=sid, config_id="sandbox", value="all")
        assert getattr(err.value, "code", None) == -32602


async def test_slash_commands_and_skills_are_offered_with_hints_and_run(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    commands = workspace / ".sema" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $ARGUMENTS warmly.\n"
    )
    skill = workspace / ".sema" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release\n---\nBump the version.\n"
    )
    scripted_llm.script(Reply.text("Hello Bob!"), Reply.text("Releasing."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        await agent.wait_for(lambda: "available_commands_update" in agent.kinds(sid))
        offered = next(
            u for u in agent.updates(sid) if u["sessionUpdate"] == "available_commands_update"
        )["availableCommands"]
        by_name = {c["name"]: c for c in offered}
        assert by_name["greet"]["description"] == "Greet someone"
        assert by_name["greet"]["input"] == {"hint": "<name>"}
        assert by_name["release"]["description"] == "Cut a release"

        await agent.conn.prompt(session_id=sid, prompt=[text("/greet Bob")])
        first = scripted_llm.requests[-1].body["messages"][0]["content"][0]["text"]
        assert first.startswith("Say hello to Bob warmly.")
        await agent.conn.prompt(session_id=sid, prompt=[text("/release 1.2")])
        last = scripted_llm.requests[-1].body["messages"][-1]["content"][0]["text"]
        assert last == 'Use the "release" skill (Skill tool). 1.2'


PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


async def test_image_prompt_reaches_the_model(server_env, scripted_llm: ScriptedLLM, workspace):
    scripted_llm.script(Reply.text("A pixel."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        result = await agent.conn.prompt(
            session_id=sid,
            prompt=[
                text("What is this?"),
                {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
            ],
        )
        assert result.stop_reason == "end_turn"
        content = scripted_llm.requests[-1].body["messages"][0]["content"]
        images = [b for b in content if b["type"] == "image"]
        assert images and images[0]["source"]["data"] == PNG_1PX
        with pytest.raises(Exception) as err:
            await agent.conn.prompt(
                session_id=sid, prompt=[{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]
            )
        assert getattr(err.value, "code", None) == -32602


def tool_result_texts(body: dict[str, Any]) -> list[str]:
    out = []
    for block in body["messages"][-1]["content"]:
        if block.get("type") == "tool_result":
            c = block["content"]
            out.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c))
    return out


async def test_fs_delegation_the_model_sees_the_buffer_and_edits_go_through_the_editor(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    module = workspace / "src" / "mod0.py"
    disk = module.read_text()
    buffer = "UNSAVED_IN_EDITOR = 42\n" + disk
    outside = workspace.parent / "outside.txt"
    outside.write_text("outside text\n")
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": str(module), "limit": 3}, "call_read")]),
        Reply.tools(
            [
                (
                    "Edit",
                    {
                        "file_path": str(module),
                        "old_string": "UNSAVED_IN_EDITOR = 42",
                        "new_string": "UNSAVED_IN_EDITOR = 43",
                    },
                    "call_edit",
                )
            ]
        ),
        Reply.tools([("Read", {"file_path": str(outside)}, "call_out")]),
        Reply.text("Done."),
    )
    editor = Editor(permission_answers=["allow_once", "allow_once"], buffers={str(module): buffer})
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace, read_text_file=True, write_text_file=True)
        result = await agent.conn.prompt(session_id=sid, prompt=[text("bump it")])
        assert result.stop_reason == "end_turn"

        read_result = tool_result_texts(scripted_llm.requests[1].body)[0]
        assert "UNSAVED_IN_EDITOR = 42" in read_result, "the model saw the buffer, not the disk"
        assert "VALUE_0 = 0" in read_result
        assert editor.writes == [(str(module), buffer.replace("= 42", "= 43"))]
        assert module.read_text() == buffer.replace("= 42", "= 43")
        edit_asked = editor.permission_requests[0]["toolCall"]
        assert edit_asked["toolCallId"] == "call_edit", "consent is still asked"
        assert str(outside) not in editor.reads, "outside the workspace: never the editor's"
        out_result = tool_result_texts(scripted_llm.requests[3].body)[0]
        assert "outside text" in out_result
        edit_call = next(u for u in agent.updates(sid) if u.get("toolCallId") == "call_edit")
        assert edit_call["content"] == [
            {
                "type": "diff",
                "path": str(module),
                "oldText": "UNSAVED_IN_EDITOR = 42",
                "newText": "UNSAVED_IN_EDITOR = 43",
            }
        ]
        read_call = next(u for u in agent.updates(sid) if u.get("toolCallId") == "call_read")
        assert read_call["locations"] == [{"path": str(module), "line": 1}]


async def test_without_fs_capabilities_files_come_from_the_disk(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    module = workspace / "src" / "mod1.py"
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": str(module), "offset": 2, "limit": 2}, "c1")]),
        Reply.text("ok"),
    )
    editor = Editor(buffers={str(module): "NOT ON DISK\n"})
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text("read")])
        seen = tool_result_texts(scripted_llm.requests[1].body)[0]
        assert "NOT ON DISK" not in seen and "line 0" in seen
        assert editor.reads == []
        read_call = next(u for u in agent.updates(sid) if u.get("toolCallId") == "c1")
        assert read_call["locations"] == [{"path": str(module), "line": 2}]


async def test_initialize_imports_no_engine_and_no_provider_code(server_env):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "--acp",
        cwd=str(REPO),
        env={**os.environ, **server_env, "PYTHONPROFILEIMPORTTIME": "1"},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    await proc.stdin.drain()
    answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 15))
    assert answer["result"]["agentInfo"]["name"] == "sema-rpc"
    proc.stdin.close()
    _out, err = await asyncio.wait_for(proc.communicate(), 15)
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in err.decode("utf-8", "replace").splitlines()
        if "import time:" in line
    }
    assert "sema_rpc.acp.server" in imported
    heavy = {
        m
        for m in imported
        if m.split(".")[0] in ("anthropic", "openai", "httpx2", "httpcore2", "mcp", "mcp_types")
        or m.startswith(("sema_rpc.providers", "sema_rpc.engine", "sema_rpc.tools"))
    }
    assert heavy == set()


async def test_dollar_cancel_request_on_a_prompt_answers_cancelled(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    reply = Reply.text("slow", chunks=3, gate=gate)
    scripted_llm.script(reply)
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("go")]))
        await asyncio.to_thread(reply.at_gate.wait, 10)
        prompt_id = next(
            m["id"] for d, m in agent.messages if d == "out" and m.get("method") == "session/prompt"
        )
        await agent.conn._conn.send_notification("$/cancel_request", {"requestId": prompt_id})
        result = await asyncio.wait_for(running, 15)
        gate.set()
        assert result.stop_reason == "cancelled"


async def test_bash_streams_output_allow_always_persists_reject_always_refuses(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "printf 'one\\ntwo\\n'"}, "b0")]),
        Reply.text("printed"),
        Reply.tools([("Bash", {"command": "touch a.txt"}, "b1")]),
        Reply.text("touched"),
        Reply.tools([("Bash", {"command": "touch a.txt"}, "b2")]),
        Reply.text("touched again"),
        # A rejection ends the turn: no model call after b3 or b4.
        Reply.tools([("Bash", {"command": "mkdir d1"}, "b3")]),
        Reply.tools([("Bash", {"command": "mkdir d1"}, "b4")]),
    )
    editor = Editor(permission_answers=["allow_always", "reject_always"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        for prompt in ("print", "touch", "touch again", "mkdir", "mkdir again"):
            result = await agent.conn.prompt(session_id=sid, prompt=[text(prompt)])
            assert result.stop_reason == "end_turn"

        asked = [r["toolCall"]["toolCallId"] for r in editor.permission_requests]
        assert asked == ["b1", "b3"], "allow_always and reject_always were remembered"
        always = editor.permission_requests[0]["options"][1]
        assert always["kind"] == "allow_always" and "touch" in always["name"]
        b0 = [u for u in agent.updates(sid) if u.get("toolCallId") == "b0"]
        assert b0[0]["kind"] == "execute"
        assert b0[0]["rawInput"] == {"command": "printf 'one\\ntwo\\n'"}
        streamed = [u for u in b0[1:-1] if u.get("content")]
        assert streamed and "two" in streamed[-1]["content"][0]["content"]["text"]
        assert b0[-1]["status"] == "completed"
        assert "two" in b0[-1]["rawOutput"]["content"]
        assert (workspace / "a.txt").exists()
        b2 = [u for u in agent.updates(sid) if u.get("toolCallId") == "b2"]
        assert b2[-1]["status"] == "completed"
        assert not (workspace / "d1").exists()
        b4 = [u for u in agent.updates(sid) if u.get("toolCallId") == "b4"]
        assert b4[-1]["status"] == "failed"

    async with acp_agent(server_env, Editor()) as agent:  # a new process: the rule lasts
        scripted_llm.script(
            Reply.tools([("Bash", {"command": "touch a.txt"}, "b5")]), Reply.text("ok")
        )
        sid = await start(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text("touch once more")])
        assert agent.editor.permission_requests == []
        b5 = [u for u in agent.updates(sid) if u.get("toolCallId") == "b5"]
        assert b5[-1]["status"] == "completed"


async def test_todo_write_is_a_plan_and_ask_user_question_maps_onto_options(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    ]
    question = {
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "a file"},
            {"label": "Postgres", "description": "a server"},
        ],
        "multiSelect": False,
    }
    scripted_llm.script(
        Reply.tools([("TodoWrite", {"todos": todos}, "t1")]),
        Reply.tools([("AskUserQuestion", {"questions": [question]}, "q1")]),
        Reply.text("Postgres it is."),
    )
    editor = Editor(permission_answers=["o1"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        result = await agent.conn.prompt(session_id=sid, prompt=[text("plan")])
        assert result.stop_reason == "end_turn"
        plans = [u for u in agent.updates(sid) if u["sessionUpdate"] == "plan"]
        assert plans[-1]["entries"] == [
            {"content": "Read the code", "priority": "medium", "status": "completed"},
            {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
        ]
        asked = editor.permission_requests[0]
        assert asked["toolCall"]["toolCallId"] == "q1"
        assert [o["name"] for o in asked["options"]] == ["SQLite", "Postgres", "Skip"]
        answer = tool_result_texts(scripted_llm.requests[2].body)[0]
        assert "Postgres" in answer


async def test_each_question_names_the_call_that_asks_it(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """Two AskUserQuestion calls in one response (a read-only batch: they run together):
    each permission request carries its own call's id, never the latest call's."""

    def question(text: str) -> dict:
        return {
            "question": text,
            "header": text[:10],
            "options": [
                {"label": "Yes", "description": "do it"},
                {"label": "No", "description": "leave it"},
            ],
            "multiSelect": False,
        }

    scripted_llm.script(
        Reply.tools(
            [
                ("AskUserQuestion", {"questions": [question("Add tests?")]}, "qa"),
                ("AskUserQuestion", {"questions": [question("Add docs?")]}, "qb"),
            ]
        ),
        Reply.text("Noted."),
    )
    editor = Editor(permission_answers=["o0", "o1"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        result = await agent.conn.prompt(session_id=sid, prompt=[text("ask me")])
    assert result.stop_reason == "end_turn"
    asked = {
        r["toolCall"]["title"]: r["toolCall"]["toolCallId"] for r in editor.permission_requests
    }
    assert asked == {"Add tests?": "qa", "Add docs?": "qb"}


async def test_the_editors_mcp_servers_run_and_their_tools_are_offered(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    from acp.schema import EnvVariable, McpServerStdio

    scripted_llm.script(
        Reply.tools([("mcp__time__get_current_time", {"timezone": "UTC"}, "m1")]),
        Reply.text("It is now."),
    )
    editor = Editor(permission_answers=["allow_once"])
    async with acp_agent(server_env, editor) as agent:
        await agent.conn.initialize(protocol_version=1)
        new = await agent.conn.new_session(
            cwd=str(workspace),
            mcp_servers=[
                McpServerStdio(
                    name="time",
                    command=sys.executable,
                    args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
                    env=[EnvVariable(name="TZ", value="UTC")],
                )
            ],
        )
        result = await agent.conn.prompt(session_id=new.session_id, prompt=[text("time?")])
        assert result.stop_reason == "end_turn"
        offered = [t["name"] for t in scripted_llm.requests[0].body["tools"]]
        assert "mcp__time__get_current_time" in offered
        done = [u for u in agent.updates(new.session_id) if u.get("toolCallId") == "m1"][-1]
        assert done["status"] == "completed"
        assert "UTC" in done["rawOutput"]["content"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_the_editors_remote_mcp_servers_http_and_sse_with_headers(
    transport: str, server_env, scripted_llm: ScriptedLLM, workspace
):
    from acp.schema import HttpHeader, HttpMcpServer, SseMcpServer

    port = _free_port()
    script = REPO / "tests" / "mcp" / "servers" / "http_server.py"
    server = await asyncio.create_subprocess_exec(
        sys.executable, str(script), transport, str(port), "sesame"
    )
    try:
        for _ in range(200):  # until it listens
            try:
                _r, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        path = "/sse" if transport == "sse" else "/mcp"
        cls = SseMcpServer if transport == "sse" else HttpMcpServer
        entry = cls(
            type=transport,
            name="remote",
            url=f"http://127.0.0.1:{port}{path}",
            headers=[HttpHeader(name="X-Key", value="sesame")],
        )
        scripted_llm.script(
            Reply.tools([("mcp__remote__shout", {"text": "hello"}, "r1")]),
            Reply.text("Shouted."),
        )
        editor = Editor(permission_answers=["allow_once"])
        async with acp_agent(server_env, editor) as agent:
            init = await agent.conn.initialize(protocol_version=1)
            assert init.agent_capabilities.mcp_capabilities.http is True
            assert init.agent_capabilities.mcp_capabilities.sse is True
            new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[entry])
            result = await agent.conn.prompt(session_id=new.session_id, prompt=[text("shout")])
            assert result.stop_reason == "end_turn"
            offered = [t["name"] for t in scripted_llm.requests[0].body["tools"]]
            assert "mcp__remote__shout" in offered
            done = [u for u in agent.updates(new.session_id) if u.get("toolCallId") == "r1"][-1]
            assert done["status"] == "completed"
            assert "HELLO" in done["rawOutput"]["content"]
    finally:
        server.terminate()
        await server.wait()


async def test_ask_user_question_as_an_elicitation_form_when_the_client_offers_it(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    from acp.schema import ElicitationCapabilities, ElicitationFormCapabilities

    questions = [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [{"label": "SQLite"}, {"label": "Postgres"}],
        },
        {
            "question": "Which extras?",
            "header": "Extras",
            "options": [{"label": "Cache"}, {"label": "Search"}, {"label": "Queue"}],
            "multiSelect": True,
        },
    ]
    scripted_llm.script(
        Reply.tools([("AskUserQuestion", {"questions": questions}, "q1")]),
        Reply.text("Noted."),
    )
    editor = Editor(form_answers={"q0": "Postgres", "q1": ["Cache", "Queue"]})
    async with acp_agent(server_env, editor, unstable=True) as agent:
        await agent.conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(
                elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities())
            ),
        )
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        result = await agent.conn.prompt(session_id=new.session_id, prompt=[text("ask me")])
        assert result.stop_reason == "end_turn"
        assert editor.permission_requests == []
        form = editor.forms[0]["mode"]["requestedSchema"]["properties"]
        assert form["q0"]["enum"] == ["SQLite", "Postgres"]
        assert form["q1"]["items"]["enum"] == ["Cache", "Search", "Queue"]
        answer = tool_result_texts(scripted_llm.requests[1].body)[0]
        assert "Postgres" in answer and "Cache, Queue" in answer


async def test_queued_prompts_each_answer_once_and_a_vanishing_client_ends_the_agent(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    first_reply = Reply.text("first", chunks=2, gate=gate)
    scripted_llm.script(first_reply, Reply.text("second"))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        first = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("one")]))
        await asyncio.to_thread(first_reply.at_gate.wait, 10)
        second = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("two")]))
        await asyncio.sleep(0.2)  # watching for an answer that must not come yet
        assert not second.done(), "the second prompt waits for the first turn"
        gate.set()
        assert (await asyncio.wait_for(first, 15)).stop_reason == "end_turn"
        assert (await asyncio.wait_for(second, 15)).stop_reason == "end_turn"
        assert len(wire_answers(agent, "session/prompt")) == 2

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "--acp",
        cwd=str(REPO),
        env={**os.environ, **server_env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    gate = threading.Event()
    hanging = Reply.text("never finished", chunks=2, gate=gate)
    scripted_llm.script(hanging)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        },
    ]
    proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
    await proc.stdin.drain()
    sid = None
    while sid is None:
        message = json.loads(await asyncio.wait_for(proc.stdout.readline(), 15))
        if message.get("id") == 2:
            sid = message["result"]["sessionId"]
    prompt = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hang"}]},
    }
    proc.stdin.write(json.dumps(prompt).encode() + b"\n")
    await proc.stdin.drain()
    await asyncio.to_thread(hanging.at_gate.wait, 10)
    proc.stdin.close()  # the editor is gone mid-turn
    answers = []
    while line := await asyncio.wait_for(proc.stdout.readline(), 15):
        message = json.loads(line)
        if message.get("id") == 3:
            answers.append(message)
    gate.set()
    assert await asyncio.wait_for(proc.wait(), 15) == 0
    assert [a["result"]["stopReason"] for a in answers] == ["cancelled"]


async def test_without_a_model_authenticate_and_session_new_ask_for_a_key(server_env, workspace):
    env = {k: v for k, v in server_env.items() if not k.endswith("API_KEY")}
    env.update({"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""})
    async with acp_agent(env) as agent:
        init = await agent.conn.initialize(protocol_version=1)
        assert "ANTHROPIC_API_KEY" in init.auth_methods[0].description
        with pytest.raises(Exception) as err:
            await agent.conn.authenticate(method_id="environment")
        assert getattr(err.value, "code", None) == -32000
        with pytest.raises(Exception) as err:
            await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert getattr(err.value, "code", None) == -32000
        listed = await agent.conn.list_sessions()
        assert listed.sessions == []


async def test_a_chatty_command_streams_its_output_as_a_bounded_tail(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    # 4,000 lines of ~210 bytes; the padding made once (a `$(…)` per line forks 4,000 times).
    command = "pad=$(printf '%0200d' 0); for i in $(seq 1 4000); do echo line-$i-$pad; done"
    scripted_llm.script(Reply.tools([("Bash", {"command": command}, "loud")]), Reply.text("ok"))
    editor = Editor(permission_answers=["allow_once"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text("count")])
        calls = [u for u in agent.updates(sid) if u.get("toolCallId") == "loud"]
        streamed = [u for u in calls[1:-1] if u.get("content")]
        assert calls[-1]["status"] == "completed"
        assert streamed, "the output was streamed"
        last = streamed[-1]["content"][0]["content"]["text"]
        # More than 32 KB was streamed: each update carries only the tail.
        assert all(len(u["content"][0]["content"]["text"]) <= 32 * 1024 for u in streamed)
        assert not last.startswith("line-1-") and len(last) > 30 * 1024
        assert "line-4000-" in calls[-1]["rawOutput"]["content"], "the result is whole"


async def test_every_stable_agent_method_has_a_handler():
    from sema_rpc.acp.server import AcpServer

    meta = json.loads((REPO / "schema" / "acp" / "meta.v1.json").read_text())
    handled = set(AcpServer(writer=None)._handlers)  # type: ignore[arg-type]
    requests = set(meta["agentMethods"].values()) - {"session/cancel"}  # a notification
    assert requests - handled == {"logout"}, "every other agent method has a handler"


@pytest.mark.parametrize("name", ["schema.v1.json", "meta.v1.json"])
async def test_the_acp_schema_copy_matches_the_shared_one(name: str):
    """schema/acp/ is a copy (tests must not depend on a folder outside the repository);
    where the shared reference is present, the copy must not have drifted from it."""
    from tests.support.shared_data import shared_dir

    copy = (REPO / "schema" / "acp" / name).read_bytes()
    # The copy is what every message here is validated against: it must be the v1 schema.
    assert json.loads(copy).get("$defs") or json.loads(copy).get("agentMethods")
    shared = shared_dir() / "acp" / name
    if shared.is_file():
        assert copy == shared.read_bytes()
