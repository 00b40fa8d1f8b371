"""Task subagents over the wire (issue 5): an Explore subagent runs on the same scripted
model server, its events carry its task id, `task:agent:start`/`task:agent:end` frame
them, and its final text is the Task result the main agent sees."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from sema_rpc.core.project.agents import EXPLORE_PROMPT
from tests.support.scripted_llm import Reply, ScriptedLLM

from .wire_helpers import (
    Editor,
    blocks,
    new_session,
    prompt,
    result_text,
    start_client,
    texts,
    tool_names,
    tool_results,
)


async def test_explore_subagent_events_result_and_no_nesting(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    editor = Editor()
    client = await start_client(server_env, editor, permissions=True)
    sid = await new_session(client, workspace)
    task = {
        "description": "find VALUE_3",
        "prompt": "Find where VALUE_3 is defined.",
        "subagent_type": "Explore",
    }
    nested = {"description": "deeper", "prompt": "Search more.", "subagent_type": "Explore"}
    final = "VALUE_3 is defined at src/mod3.py:1."
    scripted_llm.script(
        # main agent
        Reply.tools([("Task", task, "toolu_task_1")], text="Delegating."),
        # the subagent: a search, and a Task of its own (refused: no nesting)
        Reply.tools(
            [("Grep", {"pattern": "VALUE_3"}, "toolu_grep"), ("Task", nested, "toolu_nested")],
            text="Searching.",
        ),
        Reply.text(final, chunks=4),
        # main agent again
        Reply.text("Found it: src/mod3.py:1."),
    )
    result = await prompt(client, sid, "where is VALUE_3?")
    await client.close()
    assert result["stopReason"] == "end_turn"

    # task:agent:start / task:agent:end frame the subagent's events.
    [start] = [e.params for e in client.events("task:agent:start", sid)]
    [end] = [e.params for e in client.events("task:agent:end", sid)]
    task_id = start["taskId"]
    assert task_id and task_id != "main"
    assert start["agentId"] == "main" and start["subagentType"] == "Explore"
    assert start["description"] == task["description"] and start["prompt"] == task["prompt"]
    assert end == {**end, "taskId": task_id, "status": "completed", "content": final}

    sub = [e for e in client.events(session_id=sid) if e.params["agentId"] == task_id]
    assert sub and all(start["seq"] < e.params["seq"] < end["seq"] for e in sub)
    methods = [e.method for e in sub]
    assert methods.count("message:complete") == 2
    assert "tool:execution:start" in methods and "tool:execution:complete" in methods
    # A subagent reports no usage, state, chunks or todos.
    for quiet in (
        "conversation:usage",
        "state:update",
        "message:text:chunk",
        "message:thinking:chunk",
        "todos:update",
    ):
        assert quiet not in methods, quiet
    assert [e.params["usage"] for e in client.events("conversation:usage", sid)], "main reports"
    grep = next(e.params for e in sub if e.method == "tool:execution:complete")
    assert grep["toolCallId"] == "toolu_grep" and grep["toolName"] == "Grep"
    [refused] = [e.params for e in sub if e.method == "tool:execution:error"]
    assert refused["toolCallId"] == "toolu_nested" and refused["toolName"] == "Task"
    assert "cannot start subagents" in refused["content"]
    assert not client.events("task:agent:start", sid)[1:], "the nested Task never started"
    assert complete_texts(sub) == ["Searching.", final]

    # The main agent's Task card wraps the whole subagent run.
    main_task = [
        e for e in client.events(session_id=sid) if e.params.get("toolCallId") == "toolu_task_1"
    ]
    assert [e.method for e in main_task] == ["tool:execution:start", "tool:execution:complete"]
    assert all(e.params["agentId"] == "main" for e in main_task)
    assert main_task[0].params["seq"] < start["seq"] and end["seq"] < main_task[1].params["seq"]

    # What the subagent's model was sent: its own prompt, tools and history.
    assert len(scripted_llm.requests) == 4
    first_sub = scripted_llm.requests[1].body
    assert EXPLORE_PROMPT.splitlines()[0] in first_sub["system"]
    assert tool_names(first_sub) == ["Read", "Glob", "Grep"]
    assert [texts(m) for m in first_sub["messages"]] == [[task["prompt"]]]
    second_sub = scripted_llm.requests[2].body
    grep_result, nested_result = tool_results(second_sub)
    assert "src/mod3.py" in result_text(grep_result)
    assert nested_result.get("is_error") and "cannot start subagents" in result_text(nested_result)

    # The Task result is the subagent's final text; the main history has none of its turns.
    main_next = scripted_llm.requests[3].body
    [task_result] = tool_results(main_next)
    assert task_result["tool_use_id"] == "toolu_task_1"
    assert result_text(task_result) == final and not task_result.get("is_error")
    assert "Searching." not in str(main_next["messages"])
    assert "Task" in tool_names(main_next)


def complete_texts(events) -> list[str]:
    return [e.params["content"] for e in events if e.method == "message:complete"]


async def test_interrupt_while_a_subagent_runs(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    client = await start_client(server_env, Editor(), permissions=True)
    sid = await new_session(client, workspace)
    gate = threading.Event()
    sub_reply = Reply.text("A long search report.", gate=gate)
    scripted_llm.script(
        Reply.tools(
            [("Task", {"description": "d", "prompt": "search", "subagent_type": "Plan"}, "t1")]
        ),
        sub_reply,
        Reply.text("After the interrupt."),
    )
    pending = asyncio.ensure_future(
        client.request("session/prompt", {"sessionId": sid, "input": "delegate"})
    )
    await client.wait_for("task:agent:start", lambda p: p["sessionId"] == sid)
    assert await asyncio.get_running_loop().run_in_executor(None, sub_reply.at_gate.wait, 10)
    assert await client.call("session/interrupt", {"sessionId": sid}) == {"interrupted": True}
    response = await asyncio.wait_for(pending, 10)
    gate.set()
    assert response["result"]["stopReason"] == "interrupted"

    [start] = [e.params for e in client.events("task:agent:start", sid)]
    [end] = [e.params for e in client.events("task:agent:end", sid)]
    assert start["subagentType"] == "Plan"
    assert end["taskId"] == start["taskId"] and end["status"] == "interrupted"
    # One interrupt for the session, reported by the main agent.
    [interrupted] = [e.params for e in client.events("session:interrupted", sid)]
    assert interrupted["agentId"] == "main"
    [task_card] = [
        e
        for e in client.events(session_id=sid)
        if e.params.get("toolCallId") == "t1" and e.method != "tool:execution:start"
    ]
    assert task_card.method == "tool:execution:error" and task_card.params["agentId"] == "main"

    # The session goes on; the main history holds the Task call and a result for it.
    result = await prompt(client, sid, "go on")
    assert result["stopReason"] == "end_turn"
    messages = scripted_llm.requests[2].body["messages"]
    results = [b for m in messages for b in blocks(m) if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["t1"]
    assert texts(messages[-1])[-1] == "go on"
    await client.close()


async def test_project_subagent_permission_request_and_reject(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    (workspace / ".sema/agents").mkdir(parents=True)
    (workspace / ".sema/agents/shell.md").write_text(
        "---\nname: shell\ndescription: Runs commands\ntools: Bash, Read\n---\n"
        "You run shell commands.\n"
    )
    editor = Editor(permission=[{"decision": "reject"}])
    client = await start_client(server_env, editor, permissions=True)
    sid = await new_session(client, workspace)
    scripted_llm.script(
        Reply.tools(
            [("Task", {"description": "d", "prompt": "make x", "subagent_type": "shell"}, "t2")]
        ),
        Reply.tools([("Bash", {"command": "touch x"}, "toolu_bash")]),
        Reply.text("Understood."),
    )
    result = await prompt(client, sid, "delegate a command")
    assert result["stopReason"] == "interrupted"
    assert "shell: Runs commands [Bash, Read]" in str(scripted_llm.requests[0].body["tools"])
    sub = scripted_llm.requests[1].body
    assert tool_names(sub) == ["Read", "Bash"] and "You run shell commands." in sub["system"]

    [start] = [e.params for e in client.events("task:agent:start", sid)]
    [asked] = editor.of("tool:permission:request")
    assert asked["agentId"] == start["taskId"] and asked["toolName"] == "Bash"
    assert not (workspace / "x").exists()
    [end] = [e.params for e in client.events("task:agent:end", sid)]
    assert end["status"] == "interrupted"
    [interrupted] = [e.params for e in client.events("session:interrupted", sid)]
    assert interrupted["agentId"] == "main" and interrupted["checkpoint"] == 4

    await prompt(client, sid, "ok")
    await client.close()
    messages = scripted_llm.requests[2].body["messages"]
    [task_result] = [b for m in messages for b in blocks(m) if b.get("type") == "tool_result"]
    assert task_result["tool_use_id"] == "t2" and task_result.get("is_error")
    assert "interrupted" in result_text(task_result)
