"""Write tools and the permission round trip to the editor, over the wire (issue 3)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

MODEL = "anthropic/claude-test"


class Editor:
    """Answers permission requests from a queue of decisions and records what it was asked."""

    def __init__(self, *decisions: dict[str, Any] | None):
        self.decisions = list(decisions)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Any:
        assert method == "tool:permission:request"
        self.asked.append(params)
        return self.decisions.pop(0) if self.decisions else {"decision": "reject"}


async def open_session(
    env: dict[str, str],
    workspace: Path,
    editor: Editor | None,
    *,
    permissions: bool = True,
    **params: Any,
) -> tuple[WireClient, str]:
    client = await WireClient(env=env, on_server_request=editor).start()
    await client.initialize(permissions=permissions)
    ready = await client.create_session(workspace, model=MODEL, **params)
    return client, ready["sessionId"]


def tool_results(request_body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in request_body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


async def test_allow_once_writes_the_file_after_showing_a_diff(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor({"decision": "allow_once"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\nworld\n"})]),
        Reply.text("Written."),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "write notes"})
    await client.close()

    assert result["stopReason"] == "end_turn"
    assert (workspace / "notes.txt").read_text() == "hello\nworld\n"
    [asked] = editor.asked
    assert asked["toolName"] == "Write" and asked["contentKind"] == "diff"
    assert "+hello" in asked["content"] and "+world" in asked["content"]
    assert asked["options"] == ["allow_once", "allow_always", "reject"]
    assert asked["sessionId"] == sid and asked["toolCallId"]
    # start → permission request → complete, for the same call
    start = client.events("tool:execution:start", sid)[0].params
    complete = client.events("tool:execution:complete", sid)[0].params
    assert start["seq"] < asked["seq"] < complete["seq"]
    assert start["toolCallId"] == asked["toolCallId"] == complete["toolCallId"]


async def test_plain_reject_ends_the_turn_with_the_reject_message(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor({"decision": "reject"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools(
            [
                ("Write", {"file_path": "a.txt", "content": "x"}),
                ("Write", {"file_path": "b.txt", "content": "y"}),
            ]
        ),
        Reply.text("Understood."),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "write two files"})
    assert result["stopReason"] == "interrupted"
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    assert len(editor.asked) == 1, "the second call is not asked once the first was rejected"
    assert len(scripted_llm.requests) == 1, "no model call after a plain reject"
    interrupted = client.events("session:interrupted", sid)
    assert len(interrupted) == 1 and interrupted[0].params["checkpoint"] == 4

    # The model sees the reject message as the first call's result on the next prompt.
    nxt = await client.call("session/prompt", {"sessionId": sid, "input": "ok, never mind"})
    await client.close()
    assert nxt["stopReason"] == "end_turn"
    history = scripted_llm.requests[1].body["messages"]
    results = [
        b
        for m in history
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    ]
    assert "doesn't want to proceed" in result_text(results[0])
    assert "interrupted" in result_text(results[1]).lower()


async def test_reject_with_feedback_continues_the_turn(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor({"decision": "reject", "feedback": "use notes.md instead"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "x"})]),
        Reply.text("Will use notes.md."),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "write"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    [block] = tool_results(scripted_llm.requests[1].body)
    assert "use notes.md instead" in result_text(block) and block.get("is_error") is True
    assert not (workspace / "notes.txt").exists()


async def test_allow_always_bash_rule_survives_a_restart_and_never_widens(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    editor = Editor({"decision": "allow_always"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "git config user.name tester"})]),
        Reply.text("done"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "configure"})
    await client.close()
    assert len(editor.asked) == 1

    # A new process with the same SEMA_ROOT: the rule `Bash(git config:*)` holds.
    editor2 = Editor(
        {"decision": "reject", "feedback": "no"}, {"decision": "reject", "feedback": "no"}
    )
    client, sid = await open_session(server_env, workspace, editor2)
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "git config user.email t@example.com"})]),
        Reply.tools([("Bash", {"command": "git config user.name x && touch pwned"})]),
        Reply.tools([("Bash", {"command": "git commit --allow-empty -m x"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "more"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    asked_commands = [a["input"]["command"] for a in editor2.asked]
    assert asked_commands == [
        "git config user.name x && touch pwned",
        "git commit --allow-empty -m x",
    ]
    assert not (workspace / "pwned").exists()
    completes = [e.params["toolCallId"] for e in client.events("tool:execution:complete", sid)]
    assert len(completes) == 1, "only the command covered by the rule ran"


async def test_edit_rule_covers_the_workspace_but_never_a_path_outside(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path
):
    outside = tmp_path / "outside.txt"
    editor = Editor({"decision": "allow_always"}, {"decision": "allow_once"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "inside1.txt", "content": "1"})]),
        Reply.tools([("Write", {"file_path": "inside2.txt", "content": "2"})]),
        Reply.tools([("Write", {"file_path": str(outside), "content": "3"})]),
        Reply.text("done"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "write"})
    await client.close()
    assert (workspace / "inside1.txt").exists() and (workspace / "inside2.txt").exists()
    assert outside.read_text() == "3"
    assert [a["input"]["file_path"] for a in editor.asked] == ["inside1.txt", str(outside)]
    assert "allow_always" not in editor.asked[1]["options"], (
        "no always-rule for a path outside the workspace"
    )


async def test_client_without_permissions_capability_is_never_asked(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(server_env, workspace, Editor(), permissions=False)
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "x.txt", "content": "x"})]), Reply.text("ok")
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "write"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    assert client.server_requests == []
    assert not (workspace / "x.txt").exists()
    [error] = client.events("tool:execution:error", sid)
    assert "no one can be asked" in error.params["content"]


async def test_permission_modes(server_env, scripted_llm: ScriptedLLM, workspace):
    editor = Editor({"decision": "allow_once"})
    client, sid = await open_session(
        server_env, workspace, editor, permissionMode="acceptEdits", sandbox="off"
    )
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "auto.txt", "content": "x"})]),
        Reply.tools([("Bash", {"command": "touch made-by-bash"})]),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert (workspace / "auto.txt").exists() and (workspace / "made-by-bash").exists()
    assert [a["toolName"] for a in editor.asked] == ["Bash"], (
        "acceptEdits without a sandbox: edits run, Bash still asks"
    )

    client, sid = await open_session(
        server_env, workspace, Editor(), permissions=False, permissionMode="bypass"
    )
    scripted_llm.script(Reply.tools([("Bash", {"command": "touch bypassed"})]), Reply.text("ok"))
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert (workspace / "bypassed").exists()


async def test_edit_and_write_preconditions(server_env, scripted_llm: ScriptedLLM, workspace):
    editor = Editor({"decision": "allow_once"}, {"decision": "allow_once"})
    client, sid = await open_session(server_env, workspace, editor)
    target = workspace / "README.md"
    scripted_llm.script(
        Reply.tools(
            [("Edit", {"file_path": "README.md", "old_string": "tiny", "new_string": "small"})]
        ),
        Reply.tools([("Read", {"file_path": "README.md"})]),
        Reply.tools(
            [("Edit", {"file_path": "README.md", "old_string": "tiny", "new_string": "small"})]
        ),
        Reply.text("edited"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "edit"})

    errors = client.events("tool:execution:error", sid)
    assert len(errors) == 1 and "read" in errors[0].params["content"].lower()
    assert target.read_text() == "# Demo\n\nA small project.\n"
    [asked] = editor.asked
    assert "-A tiny project." in asked["content"] and "+A small project." in asked["content"]

    # Changed on disk since the Read: refused.
    target.write_text("changed behind the agent's back\n")
    scripted_llm.script(
        Reply.tools(
            [("Edit", {"file_path": "README.md", "old_string": "changed", "new_string": "x"})]
        ),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "edit again"})
    await client.close()
    assert target.read_text() == "changed behind the agent's back\n"
    assert (
        "changed since it was last read"
        in client.events("tool:execution:error", sid)[-1].params["content"]
    )


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink-dir", "symlink-file"])
async def test_path_escapes_are_asked_every_time_and_refused_without_a_client(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path, kind: str
):
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "passwd").write_text("root:x:0:0\n")
    if kind == "dotdot":
        path = "../secret/passwd"
    elif kind == "absolute":
        path = str(secret_dir / "passwd")
    elif kind == "symlink-dir":
        (workspace / "etc").symlink_to(secret_dir)
        path = "etc/passwd"
    else:
        (workspace / "innocent.txt").symlink_to(secret_dir / "passwd")
        path = "innocent.txt"
    client, sid = await open_session(
        server_env, workspace, Editor(), permissions=False, permissionMode="bypass"
    )
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": path})]),
        Reply.tools([("Write", {"file_path": path, "content": "pwned\n"})]),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert (secret_dir / "passwd").read_text() == "root:x:0:0\n"
    errors = client.events("tool:execution:error", sid)
    assert len(errors) == 2, [e.params["content"] for e in errors]
    assert client.events("tool:execution:complete", sid) == []


async def test_file_renamed_between_read_and_write(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor({"decision": "allow_once"})
    client, sid = await open_session(server_env, workspace, editor)
    gate = threading.Event()
    second = Reply.tools(
        [("Edit", {"file_path": "src/mod0.py", "old_string": "VALUE_0", "new_string": "X"})],
        gate=gate,
    )
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "src/mod0.py"})]), second, Reply.text("ok")
    )
    prompt = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "go"}))
    assert await asyncio.get_running_loop().run_in_executor(None, second.at_gate.wait, 10)
    (workspace / "src" / "mod0.py").rename(workspace / "src" / "moved.py")
    (workspace / "src" / "mod0.py").write_text("VALUE_0 = 'impostor'\n")
    gate.set()
    await prompt
    await client.close()
    assert editor.asked == []
    assert (workspace / "src" / "mod0.py").read_text() == "VALUE_0 = 'impostor'\n"
    assert client.events("tool:execution:error", sid)


async def test_mixed_batch_runs_serially_and_bash_output_streams_in_order(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(server_env, workspace, Editor(), permissionMode="bypass")
    script = "for i in 1 2 3 4 5; do echo line$i; sleep 0.05; done"
    scripted_llm.script(
        Reply.tools(
            [
                ("Read", {"file_path": "README.md"}),
                ("Bash", {"command": script}),
                ("Read", {"file_path": "src/mod1.py"}),
            ]
        ),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    events = [
        e
        for e in client.events(session_id=sid)
        if e.method and e.method.startswith("tool:execution")
    ]
    kinds = [
        (e.method.rsplit(":", 1)[1], e.params["toolName"])
        for e in events
        if not e.method.endswith("update")
    ]
    assert kinds == [
        ("start", "Read"),
        ("complete", "Read"),
        ("start", "Bash"),
        ("complete", "Bash"),
        ("start", "Read"),
        ("complete", "Read"),
    ]
    streamed = "".join(e.params["delta"] for e in client.events("tool:execution:update", sid))
    assert streamed.split() == [f"line{i}" for i in range(1, 6)]
    updates = client.events("tool:execution:update", sid)
    assert len(updates) >= 2, "output arrives while the command runs, not all at the end"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_interrupt_kills_the_bash_process_tree(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(server_env, workspace, Editor(), permissionMode="bypass")
    command = "sleep 300 & echo child=$!; bash -c 'sleep 301 & echo grandchild=$!; wait' & wait"
    scripted_llm.script(Reply.tools([("Bash", {"command": command})]), Reply.text("never"))
    prompt = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "go"}))
    pids: dict[str, int] = {}
    deadline = time.monotonic() + 10
    while len(pids) < 2 and time.monotonic() < deadline:
        for e in client.events("tool:execution:update", sid):
            for token in e.params["delta"].split():
                name, _, value = token.partition("=")
                if value.isdigit():
                    pids[name] = int(value)
        await asyncio.sleep(0.02)
    assert set(pids) == {"child", "grandchild"}
    assert all(_alive(p) for p in pids.values())

    assert await client.call("session/interrupt", {"sessionId": sid}) == {"interrupted": True}
    result = await asyncio.wait_for(prompt, 10)
    assert result["stopReason"] == "interrupted"
    [interrupted] = client.events("session:interrupted", sid)
    assert interrupted.params["checkpoint"] == 4
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(_alive(p) for p in pids.values()), "no orphan survives the interrupt"
    assert len(scripted_llm.requests) == 1
    await client.close()


async def test_interrupt_cancels_a_pending_permission_request(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    never = asyncio.get_running_loop().create_future()

    async def slow_editor(method: str, params: dict[str, Any]) -> Any:
        return await never  # the user is thinking…

    client, sid = await open_session(server_env, workspace, None)
    client.on_server_request = slow_editor
    scripted_llm.script(Reply.tools([("Write", {"file_path": "w.txt", "content": "x"})]))
    prompt = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "go"}))
    while not client.server_requests:
        await asyncio.sleep(0.02)
    request_id = client.server_requests[0].message["id"]
    await client.call("session/interrupt", {"sessionId": sid})
    result = await asyncio.wait_for(prompt, 10)
    cancel = await client.wait_for("$/cancelRequest")
    await client.close()
    assert result["stopReason"] == "interrupted"
    assert cancel.params == {"id": request_id}
    assert not (workspace / "w.txt").exists()


async def test_plan_mode_refuses_write_tools_called_by_name(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(
        server_env, workspace, Editor(), permissionMode="bypass", mode="Plan"
    )
    scripted_llm.script(
        Reply.tools(
            [
                ("Write", {"file_path": "plan-violation.txt", "content": "x"}),
                ("Bash", {"command": "touch nope"}),
            ]
        ),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    offered = {t["name"] for t in scripted_llm.requests[0].body["tools"]}
    assert (
        "Write" not in offered
        and "Edit" not in offered
        and "TodoWrite" not in offered
        and "Read" in offered
    )
    assert not (workspace / "plan-violation.txt").exists() and not (workspace / "nope").exists()
    errors = [e.params["content"] for e in client.events("tool:execution:error", sid)]
    assert len(errors) == 2 and all("Plan mode" in e for e in errors)


async def test_todo_write_emits_todos_update(server_env, scripted_llm: ScriptedLLM, workspace):
    client, sid = await open_session(server_env, workspace, Editor())
    todos = [
        {"content": "Read code", "status": "completed", "activeForm": "Reading code"},
        {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug"},
    ]
    scripted_llm.script(Reply.tools([("TodoWrite", {"todos": todos})]), Reply.text("ok"))
    await client.call("session/prompt", {"sessionId": sid, "input": "plan"})
    await client.close()
    [update] = client.events("todos:update", sid)
    assert update.params["todos"] == todos


async def _during_a_slow_tool(
    client: Any, sid: str, scripted_llm: ScriptedLLM, then: list[tuple[str, dict[str, Any]]]
) -> asyncio.Future[Any]:
    """Start a turn whose first batch is a 1 s read-only Bash call and whose second batch
    is `then`; return the prompt's future once the Bash call has started."""
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "sleep 1"})]), Reply.tools(then), Reply.text("done")
    )
    prompt = asyncio.ensure_future(client.call("session/prompt", {"sessionId": sid, "input": "go"}))
    await client.wait_for("tool:execution:start", lambda p: p["toolName"] == "Bash")
    return prompt


async def test_permission_mode_update_applies_to_the_running_turn(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor()
    client, sid = await open_session(server_env, workspace, editor)
    prompt = await _during_a_slow_tool(
        client, sid, scripted_llm, [("Write", {"file_path": "later.txt", "content": "x"})]
    )
    answer = await client.call(
        "permissionMode/update", {"sessionId": sid, "permissionMode": "acceptEdits"}
    )
    assert answer == {"permissionMode": "acceptEdits"}
    assert (await asyncio.wait_for(prompt, 20))["stopReason"] == "end_turn"
    assert (workspace / "later.txt").read_text() == "x"
    assert editor.asked == [], "acceptEdits took effect for the turn's next call"

    with pytest.raises(RpcFailure) as bad:
        await client.call("permissionMode/update", {"sessionId": sid, "permissionMode": "yolo"})
    assert bad.value.code == -32602 and "permissionMode" in str(bad.value.error["data"])
    await client.close()


async def test_switching_to_plan_mode_mid_turn_refuses_the_next_write(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(server_env, workspace, Editor(), permissionMode="bypass")
    prompt = await _during_a_slow_tool(
        client, sid, scripted_llm, [("Write", {"file_path": "sneaky.txt", "content": "x"})]
    )
    await client.call("mode/update", {"sessionId": sid, "mode": "Plan"})
    assert (await asyncio.wait_for(prompt, 20))["stopReason"] == "end_turn"
    await client.close()
    assert not (workspace / "sneaky.txt").exists()
    [error] = client.events("tool:execution:error", sid)
    assert error.params["toolName"] == "Write" and "Plan mode" in error.params["content"]


async def test_writes_inside_dot_git_are_asked_every_time(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = workspace / ".git" / "config"
    before = config.read_text()
    evil = before + '[core]\n\tfsmonitor = "touch pwned"\n'
    editor = Editor({"decision": "reject", "feedback": "not the git config"})
    client, sid = await open_session(server_env, workspace, editor, permissionMode="acceptEdits")
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": ".git/config"})]),
        Reply.tools([("Write", {"file_path": ".git/config", "content": evil})]),
        Reply.tools([("Write", {"file_path": "fine.txt", "content": "x"})]),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    [asked] = editor.asked  # acceptEdits covers fine.txt, never .git/
    assert asked["toolName"] == "Write" and "(protected)" in asked["title"]
    assert "allow_always" not in asked["options"] and asked.get("alwaysRule") is None
    assert config.read_text() == before
    assert (workspace / "fine.txt").exists()


async def test_permission_request_names_the_rule_allow_always_stores(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    editor = Editor({"decision": "reject", "feedback": "no"})
    client, sid = await open_session(server_env, workspace, editor)
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "docker run --rm alpine true"})]), Reply.text("ok")
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    [asked] = editor.asked
    assert asked["options"] == ["allow_once", "allow_always", "reject"]
    assert asked["alwaysRule"] == "Bash(docker run:*)"


async def test_bash_timeout_kills_the_command_and_the_turn_goes_on(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    client, sid = await open_session(server_env, workspace, Editor(), permissionMode="bypass")
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "echo started; sleep 30", "timeout": 500})]),
        Reply.text("it timed out"),
    )
    t0 = time.monotonic()
    result = await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    elapsed = time.monotonic() - t0
    await client.close()
    assert result["stopReason"] == "end_turn" and elapsed < 10
    [block] = tool_results(scripted_llm.requests[1].body)
    text = result_text(block)
    assert "started" in text and "timed out" in text.lower()


async def test_secrets_and_outside_paths_are_not_read_without_asking(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path
):
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOP-SECRET\n")
    env = {**server_env, "ANTHROPIC_API_KEY": "sk-ant-never-shown-000"}
    editor = Editor()  # rejects everything it is asked
    client, sid = await open_session(env, workspace, editor)
    scripted_llm.script(Reply.tools([("Bash", {"command": f"cat {secret}"})]))
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    assert [a["content"] for a in editor.asked] == [f"cat {secret}"]  # the reject ends the turn
    scripted_llm.script(Reply.tools([("Bash", {"command": "echo $ANTHROPIC_API_KEY"})]))
    await client.call("session/prompt", {"sessionId": sid, "input": "go on"})
    assert [a["content"] for a in editor.asked][1:] == ["echo $ANTHROPIC_API_KEY"]

    # Even where a command runs (bypass), the server's own keys are not in its environment.
    client2, sid2 = await open_session(env, workspace, Editor(), permissionMode="bypass")
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "echo key=${ANTHROPIC_API_KEY:-unset}"})]),
        Reply.text("ok"),
    )
    await client2.call("session/prompt", {"sessionId": sid2, "input": "go"})
    await client.close()
    await client2.close()
    [block] = tool_results(scripted_llm.requests[-1].body)
    assert "key=unset" in result_text(block)
    assert "TOP-SECRET" not in str([r.body for r in scripted_llm.requests])
