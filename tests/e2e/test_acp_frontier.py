"""`sema-rpc --acp` beyond the v1 basics, driven by the official ACP SDK over real pipes
against the scripted model server (every message validated against the ACP schema):
what a headless client shows of a tool call, a session and a cancelled turn; steering;
fork at a message; rewind."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

import pytest
from acp.schema import TextContentBlock

from tests.support.acp_client import Editor, acp_agent
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


async def start(agent: Any, workspace: Any) -> str:
    await agent.conn.initialize(protocol_version=1)
    new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    return new.session_id


def of_call(agent: Any, sid: str, call_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid) if u.get("toolCallId") == call_id]


async def test_a_tool_call_is_pending_until_consent_then_in_progress(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    target = workspace / "made.txt"
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(target), "content": "x\n"}, "call_p1")]),
        Reply.text("Done."),
    )
    editor = Editor(permission_gate=asyncio.Event(), permission_answers=["allow_once"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("go")]))
        await asyncio.wait_for(editor.permission_asked.wait(), 15)
        while_asking = [u.get("status") for u in of_call(agent, sid, "call_p1")]
        assert while_asking == ["pending"], "nothing says running while consent is asked"
        assert editor.permission_requests[0]["toolCall"]["status"] == "pending"
        assert not target.exists()
        assert editor.permission_gate is not None
        editor.permission_gate.set()
        assert (await asyncio.wait_for(running, 15)).stop_reason == "end_turn"
        statuses = [u.get("status") for u in of_call(agent, sid, "call_p1")]
        assert statuses[0] == "pending"
        assert statuses.index("in_progress") < statuses.index("completed")
        assert target.read_text() == "x\n"


async def test_an_allowed_call_goes_pending_in_progress_completed_without_a_question(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": str(workspace / "README.md")}, "call_r1")]),
        Reply.text("Read."),
    )
    editor = Editor()
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text("read")])
        statuses = [u.get("status") for u in of_call(agent, sid, "call_r1")]
        assert statuses == ["pending", "in_progress", "completed"]
        assert editor.permission_requests == []
        usage = prompt_answers(agent)[0]["usage"]  # two model calls of 10 in, 5 out
        assert usage == {
            "totalTokens": 30,
            "inputTokens": 20,
            "outputTokens": 10,
            "cachedReadTokens": 0,
            "cachedWriteTokens": 0,
        }


async def test_a_session_never_prompted_is_resumable_and_loadable_after_a_restart(
    server_env, workspace
):
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        other = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id

    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        resumed = await agent.conn.resume_session(cwd=str(workspace), session_id=sid)
        assert resumed.modes is not None
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=other, mcp_servers=[])
        assert loaded.modes is not None
        await agent.wait_for(lambda: "available_commands_update" in agent.kinds(other))
        assert agent.kinds(other) == ["available_commands_update"], "nothing to replay"
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert sid not in [s.session_id for s in listed.sessions], "nothing said: not listed"
        with pytest.raises(Exception) as err:
            await agent.conn.resume_session(cwd=str(workspace), session_id="never-handed-out")
        assert getattr(err.value, "code", None) == -32002


async def test_a_first_turn_cancelled_mid_stream_reports_the_usage_it_caused(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    reply = Reply.text("a long answer that never ends " * 20, chunks=5, gate=gate)
    scripted_llm.script(reply, Reply.text("after"))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text("tell me everything " * 50)])
        )
        await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
        await asyncio.to_thread(reply.at_gate.wait, 10)
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 15)).stop_reason == "cancelled"
        gate.set()
        usage = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"]
        assert usage, "a cancelled turn still reports usage"
        assert usage[-1]["used"] > 200, "the prompt the model read is in the context"
        assert usage[-1]["cost"]["amount"] > 0, "the request was sent: it cost something"


def initialize_result(agent: Any) -> dict[str, Any]:
    return next(
        m["result"]
        for d, m in agent.messages
        if d == "in" and isinstance(m.get("result"), dict) and "protocolVersion" in m["result"]
    )


def request_texts(body: dict[str, Any]) -> list[str]:
    """Every text block the model was sent (user and tool results), in order."""
    out = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                out.append(block["text"])
    return out


async def test_steering_injects_into_the_running_turn_which_answers_once(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    first = Reply.tools(
        [("Read", {"file_path": str(workspace / "README.md")}, "call_s1")], gate=gate
    )
    scripted_llm.script(first, Reply.text("Checked both."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        steering = initialize_result(agent)["_meta"]["steering"]
        assert steering["supported"] is True
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("read")]))
        await asyncio.to_thread(first.at_gate.wait, 10)
        answer = await agent.raw_request(
            "_session/steering",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "also mention tests"}]},
        )
        assert answer == {"outcome": "injected"}
        gate.set()
        assert (await asyncio.wait_for(running, 15)).stop_reason == "end_turn"
        assert len(scripted_llm.requests) == 2, "one turn: the steer joined it"
        assert "also mention tests" in request_texts(scripted_llm.requests[1].body)
        answers = [
            m for d, m in agent.messages if d == "in" and m.get("result", {}).get("stopReason")
        ]
        assert len(answers) == 1


async def test_steering_while_the_model_answers_continues_the_turn_before_it_settles(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    first = Reply.text("First answer.", gate=gate)
    scripted_llm.script(first, Reply.text("Second answer."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("hi")]))
        await asyncio.to_thread(first.at_gate.wait, 10)
        answer = await agent.raw_request(
            "_session/steering",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "and one more thing"}]},
        )
        assert answer == {"outcome": "injected"}
        gate.set()
        result = await asyncio.wait_for(running, 15)
        assert result.stop_reason == "end_turn"
        chunks = "".join(
            u["content"]["text"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert chunks == "First answer.Second answer.", "the prompt answered after both"
        assert "and one more thing" in request_texts(scripted_llm.requests[1].body)


async def test_steering_an_idle_session_starts_a_turn_or_asks_for_a_prompt(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("Started by a steer."))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        deferred = await agent.raw_request(
            "_session/steering",
            {
                "sessionId": sid,
                "prompt": [{"type": "text", "text": "hello"}],
                "_meta": {"steering": {"idleBehavior": "promptRequired"}},
            },
        )
        assert deferred == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        assert scripted_llm.requests == [], "nothing consumed"
        started = await agent.raw_request(
            "_session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
        )
        assert started == {"outcome": "startedNewTurn"}
        await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
        assert "hello" in request_texts(scripted_llm.requests[0].body)
        with pytest.raises(Exception) as err:
            await agent.raw_request(
                "_session/steering",
                {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]},
            )
        assert getattr(err.value, "code", None) == -32002


def prompt_answers(agent: Any) -> list[dict[str, Any]]:
    ids = {m["id"] for d, m in agent.messages if d == "out" and m.get("method") == "session/prompt"}
    return [
        m["result"]
        for d, m in agent.messages
        if d == "in" and "method" not in m and m.get("id") in ids and "result" in m
    ]


def conversation(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, text) of each message chunk, chunks of one message joined."""
    out: list[tuple[str, str]] = []
    for u in updates:
        kind = u["sessionUpdate"]
        if kind not in ("user_message_chunk", "agent_message_chunk"):
            continue
        who = "user" if kind == "user_message_chunk" else "agent"
        if out and out[-1][0] == who and u.get("messageId") == out[-1][2]:  # type: ignore[misc]
            out[-1] = (who, out[-1][1] + u["content"]["text"], u.get("messageId"))  # type: ignore[assignment]
        else:
            out.append((who, u["content"]["text"], u.get("messageId")))  # type: ignore[arg-type]
    return [(w, t) for w, t, *_ in out]


async def load_replay(agent: Any, sid: str, workspace: Any) -> list[tuple[str, str]]:
    before = len(agent.updates(sid))
    await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    return conversation(agent.updates(sid)[before:])


async def test_fork_at_a_message_returns_a_live_session_with_the_conversation_before_it(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.text("one"), Reply.text("two"), Reply.text("forked answer"), Reply.text("kept")
    )
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        init = initialize_result(agent)["agentCapabilities"]
        assert init["sessionCapabilities"]["fork"] == {}
        assert init["_meta"]["jetbrains"]["air"]["fork"] == {"version": 1, "inclusive": True}
        await agent.conn.prompt(session_id=sid, prompt=[text("first")])
        await agent.conn.prompt(session_id=sid, prompt=[text("second")])
        first_id, second_id = (a["userMessageId"] for a in prompt_answers(agent))
        agent_ids = {u.get("messageId") for u in agent.updates(sid) if "messageId" in u}
        assert len(agent_ids) == 2, "each answer's chunks carry its message id"

        forked = await agent.raw_request(
            "session/fork", {"sessionId": sid, "cwd": str(workspace), "messageId": second_id}
        )
        fork = forked["sessionId"]
        assert fork != sid and forked["_meta"]["sema"]["input"] == "second"
        await agent.wait_for(lambda: "available_commands_update" in agent.kinds(fork))
        result = await agent.conn.prompt(session_id=fork, prompt=[text("instead")])
        assert result.stop_reason == "end_turn", "the fork is live: it takes a prompt"
        sent = request_texts(scripted_llm.requests[-1].body)
        assert "first" in sent and "one" in sent and "instead" in sent
        assert "second" not in sent and "two" not in sent
        assert await load_replay(agent, sid, workspace) == [
            ("user", "first"),
            ("agent", "one"),
            ("user", "second"),
            ("agent", "two"),
        ], "the original is untouched"

        # JetBrains' form keeps the turn of the message it names.
        air = await agent.raw_request(
            "session/fork",
            {
                "sessionId": sid,
                "cwd": str(workspace),
                "_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": first_id}}}},
            },
        )
        assert await load_replay(agent, air["sessionId"], workspace) == [
            ("user", "first"),
            ("agent", "one"),
        ]
        with pytest.raises(Exception) as err:
            await agent.raw_request(
                "session/fork",
                {
                    "sessionId": sid,
                    "cwd": str(workspace),
                    "_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": "m_x"}}}},
                },
            )
        assert getattr(err.value, "code", None) == -32602


async def test_rewind_code_and_conversation_with_conflicts_redo_and_a_replay_that_follows(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    notes = workspace / "notes.txt"
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(notes), "content": "v1\n"})]),
        Reply.text("Made."),
        Reply.tools([("Write", {"file_path": str(notes), "content": "v2\n"})]),
        Reply.text("Changed."),
    )
    editor = Editor(permission_answers=["allow_once", "allow_once"])
    async with acp_agent(server_env, editor) as agent:
        sid = await start(agent, workspace)
        advert = initialize_result(agent)["agentCapabilities"]["_meta"]["sema"]
        assert advert == {"rewind": {"method": "_session/rewind"}}
        await agent.conn.prompt(session_id=sid, prompt=[text("make it")])
        await agent.conn.prompt(session_id=sid, prompt=[text("change it")])
        second_id = prompt_answers(agent)[1]["userMessageId"]
        assert notes.read_text() == "v2\n"

        notes.write_text("mine\n")  # the user changed it since
        refused = await agent.raw_request(
            "_session/rewind", {"sessionId": sid, "messageId": second_id, "mode": "both"}
        )
        assert refused["rewound"] is False
        assert [c["path"] for c in refused["conflicts"]] == ["notes.txt"]
        assert notes.read_text() == "mine\n", "nothing changed"

        done = await agent.raw_request(
            "_session/rewind",
            {"sessionId": sid, "messageId": second_id, "mode": "both", "force": True},
        )
        assert done["rewound"] is True and done["input"] == "change it"
        assert notes.read_text() == "v1\n"
        assert await load_replay(agent, sid, workspace) == [
            ("user", "make it"),
            ("agent", "Made."),
        ], "load replays the rewound conversation"

        redone = await agent.raw_request("_session/rewind", {"sessionId": sid, "redo": True})
        assert redone["rewound"] is True
        assert notes.read_text() == "mine\n", "redo puts back what the rewind found"
        replay = await load_replay(agent, sid, workspace)
        assert replay[-2:] == [("user", "change it"), ("agent", "Changed.")]
        with pytest.raises(Exception) as err:
            await agent.raw_request("_session/rewind", {"sessionId": sid, "mode": "files"})
        assert getattr(err.value, "code", None) == -32602


async def test_a_command_in_the_editors_terminal_is_as_sandboxed_as_one_the_agent_runs(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path
):
    from acp.schema import ClientCapabilities

    outside = tmp_path / "outside-the-workspace.txt"
    (workspace / ".git").mkdir(exist_ok=True)
    command = f"echo x > {outside}; echo y > .git/hooked; echo z > inside.txt"
    scripted_llm.script(Reply.tools([("Bash", {"command": command}, "call_s1")]), Reply.text("ok"))
    editor = Editor(permission_answers=["allow_once"])
    async with acp_agent(server_env, editor) as agent:
        await agent.conn.initialize(
            protocol_version=1, client_capabilities=ClientCapabilities(terminal=True)
        )
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text("write")])
    assert editor.terminal_calls[0][0] == "create", "it ran in the terminal"
    assert (workspace / "inside.txt").read_text() == "z\n", "the workspace is writable"
    assert not outside.exists(), "outside the workspace: refused by the sandbox"
    assert not (workspace / ".git" / "hooked").exists(), ".git: refused by the sandbox"


async def test_bash_runs_in_the_editors_terminal_embedded_in_the_call_with_consent_and_timeout(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    from acp.schema import ClientCapabilities

    command = "echo out; echo err >&2; echo $PAGER; touch made.txt; exit 3"
    scripted_llm.script(
        Reply.tools([("Bash", {"command": command}, "call_t1")]),
        Reply.tools([("Bash", {"command": "touch refused.txt"}, "call_t2")]),
        Reply.text("unused"),
        Reply.tools([("Bash", {"command": "sleep 30", "timeout": 1000}, "call_t3")]),
        Reply.text("Timed out."),
    )
    editor = Editor(permission_answers=["allow_once", "reject_once", "allow_once"])
    async with acp_agent(server_env, editor) as agent:
        await agent.conn.initialize(
            protocol_version=1, client_capabilities=ClientCapabilities(terminal=True)
        )
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text("run it")])
        [created] = [c for kind, c in editor.terminal_calls if kind == "create"]
        # The session's sandbox goes with the command: a wrapper that confines itself,
        # then execs the shell with the command (protocol/acp.md, terminal/*).
        assert created["cwd"] == str(workspace)
        assert created["command"] == sys.executable and created["args"][:3] == ["-I", "-S", "-c"]
        assert created["args"][-3:] == ["/bin/bash", "-c", command]
        assert (workspace / "made.txt").exists(), "the editor ran it"
        sent = scripted_llm.requests[1].body["messages"][-1]["content"]
        result = next(b for b in sent if b["type"] == "tool_result")
        result_text = (
            "".join(c["text"] for c in result["content"] if c.get("type") == "text")
            if isinstance(result["content"], list)
            else result["content"]
        )
        assert "out" in result_text and "err" in result_text and "Exit code: 3" in result_text
        assert "cat" in result_text, "Bash's environment settings (pagers off) apply"
        call = of_call(agent, sid, "call_t1")
        terminal = {"type": "terminal", "terminalId": "term-1"}
        assert [u.get("status") for u in call][:2] == ["pending", "in_progress"]
        assert any(u.get("content") == [terminal] for u in call[:-1]), "embedded while it runs"
        assert call[-1]["content"] == [terminal] and call[-1]["status"] == "completed"
        assert [k for k, _ in editor.terminal_calls] == [
            "create",
            "wait_for_exit",
            "output",
            "release",
        ]

        # consent is unchanged: a rejected command never reaches the terminal
        await agent.conn.prompt(session_id=sid, prompt=[text("again")])
        assert len([k for k, _ in editor.terminal_calls if k == "create"]) == 1
        assert not (workspace / "refused.txt").exists()

        # the timeout is Bash's: the terminal is killed
        await agent.conn.prompt(session_id=sid, prompt=[text("slow")])
        kinds = [k for k, _ in editor.terminal_calls]
        assert kinds[-3:] == ["kill", "output", "release"]
        assert "timed out" in str(scripted_llm.requests[-1].body["messages"][-1]["content"])
        for proc, _out, _pump in editor.terminals.values():
            assert proc.returncode is not None, "no command outlives its call"


async def test_the_clients_system_prompt_appends_to_or_replaces_ours(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        appended = await agent.raw_request(
            "session/new",
            {
                "cwd": str(workspace),
                "mcpServers": [],
                "_meta": {"systemPrompt": {"append": "Always answer in French."}},
            },
        )
        await agent.conn.prompt(session_id=appended["sessionId"], prompt=[text("hi")])
        system = json.dumps(scripted_llm.requests[-1].body["system"])
        assert "Always answer in French." in system and "Working directory" in system

        replaced = await agent.raw_request(
            "session/new",
            {"cwd": str(workspace), "mcpServers": [], "_meta": {"systemPrompt": "You are terse."}},
        )
        await agent.conn.prompt(session_id=replaced["sessionId"], prompt=[text("hi")])
        system = json.dumps(scripted_llm.requests[-1].body["system"])
        assert "You are terse." in system and "Working directory" not in system

        # a resume says it again; without it the session's prompt is ours
        await agent.conn.resume_session(cwd=str(workspace), session_id=replaced["sessionId"])
        await agent.conn.prompt(session_id=replaced["sessionId"], prompt=[text("again")])
        assert "Working directory" in json.dumps(scripted_llm.requests[-1].body["system"])
        with pytest.raises(Exception) as err:
            await agent.raw_request(
                "session/new",
                {"cwd": str(workspace), "mcpServers": [], "_meta": {"systemPrompt": 7}},
            )
        assert getattr(err.value, "code", None) == -32602


async def test_session_cancel_reaches_a_steered_input_and_the_prompt_answers_once(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    first = Reply.text("Answering slowly.", gate=gate)
    scripted_llm.script(first, Reply.text("never asked"))
    async with acp_agent(server_env) as agent:
        sid = await start(agent, workspace)
        running = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("hi")]))
        await asyncio.to_thread(first.at_gate.wait, 10)
        answer = await agent.raw_request(
            "_session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]}
        )
        assert answer == {"outcome": "injected"}
        await agent.conn.cancel(session_id=sid)
        result = await asyncio.wait_for(running, 15)
        gate.set()
        assert result.stop_reason == "cancelled"
        assert len(scripted_llm.requests) == 1, "the steered input never ran"
        assert len(prompt_answers(agent)) == 1
