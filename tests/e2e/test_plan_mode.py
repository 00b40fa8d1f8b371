"""Plan mode over the wire (issue 5): the engine refuses writes, ExitPlanMode saves the plan
and asks the editor (`plan:exit:request`), and each answer rebuilds the context as the
spec says — checked on what the scripted model server is sent next."""

from __future__ import annotations

import re
from pathlib import Path

from sema_rpc.engine.prompt.system_prompt import PLAN_MODE_PROMPT
from tests.support.scripted_llm import Reply, ScriptedLLM

from .wire_helpers import (
    Editor,
    last_user,
    new_session,
    prompt,
    result_text,
    start_client,
    texts,
    tool_names,
    tool_results,
)

PLAN_REMINDER_MARK = "Plan mode is active. The user wants you to plan before acting"
PLAN_FILE = re.compile(r"\d{8}-\d{6}-[a-z0-9-]+(-\d+)?\.md")


def has_plan_reminder(body: dict) -> bool:
    return any(PLAN_REMINDER_MARK in t for t in texts(last_user(body)))


async def test_plan_mode_refuses_writes_then_exit_plan_mode_each_way(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    (workspace / "AGENTS.md").write_text("RULE-PROJECT: small commits.\n")
    original = (workspace / "src/mod1.py").read_text()
    editor = Editor(
        plan=[
            {"decision": "keepPlanning", "feedback": "also update the README"},
            {"decision": "startEditing"},
            {"decision": "clearContextAndStart", "feedback": "keep it short"},
        ]
    )
    client = await start_client(server_env, editor, permissions=True, planExit=True)
    sid = await new_session(client, workspace, mode="Plan", permissionMode="acceptEdits")

    plan_v1 = "# Plan: bump VALUE_1\n\n1. Edit src/mod1.py"
    plan_v2 = plan_v1 + "\n2. Update README.md"
    edit = {"file_path": "src/mod1.py", "old_string": "VALUE_1 = 1", "new_string": "VALUE_1 = 2"}
    # Not read: refused for Plan mode, not sent to read it first.
    unread_edit = {"file_path": "src/mod2.py", "old_string": "VALUE_2", "new_string": "V2"}
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "src/mod1.py"})]),
        # The model calls write tools anyway: the engine refuses them (acceptEdits or not).
        Reply.tools(
            [
                ("Edit", edit),
                ("Write", {"file_path": "new.txt", "content": "x"}),
                ("Edit", unread_edit),
            ]
        ),
        Reply.tools([("ExitPlanMode", {"plan": plan_v1})]),
        Reply.tools([("ExitPlanMode", {"plan": plan_v2})]),
        Reply.tools([("Edit", edit)]),
        Reply.text("Done."),
    )
    result = await prompt(client, sid, "bump VALUE_1")
    assert result["stopReason"] == "end_turn"
    reqs = [r.body for r in scripted_llm.requests]
    assert len(reqs) == 6

    # Plan mode: read-only tools offered, the Plan text and reminder sent.
    assert {"Write", "Edit", "TodoWrite"}.isdisjoint(tool_names(reqs[0]))
    assert {"Read", "Bash", "ExitPlanMode"} <= set(tool_names(reqs[0]))
    assert PLAN_MODE_PROMPT in reqs[0]["system"]
    assert has_plan_reminder(reqs[0])

    # The Edit and the Write the model called anyway were refused by Plan mode.
    refused = tool_results(reqs[2])
    assert len(refused) == 3 and all(r.get("is_error") for r in refused)
    assert all("not available in Plan mode" in result_text(r) for r in refused)
    errors = [e.params for e in client.events("tool:execution:error", sid)]
    assert [e["toolName"] for e in errors] == ["Edit", "Write", "Edit"]
    assert all("Plan mode" in e["content"] for e in errors)
    assert not (workspace / "new.txt").exists()
    assert "VALUE_2 = 2" in (workspace / "src/mod2.py").read_text()

    # keepPlanning: the feedback goes back to the model, Plan mode stays on.
    asked = editor.of("plan:exit:request")
    assert len(asked) == 2
    plans_dir = (workspace / ".sema" / "plans").resolve()
    for request, plan in zip(asked, (plan_v1, plan_v2), strict=True):
        path = Path(request["planFilePath"])
        assert path.parent == plans_dir and PLAN_FILE.fullmatch(path.name), path
        assert path.read_text() == plan + "\n"
        assert request["planContent"] == plan
        assert request["options"] == ["startEditing", "clearContextAndStart", "keepPlanning"]
    assert asked[0]["planFilePath"] != asked[1]["planFilePath"]
    # Each request names the ExitPlanMode call that asks (no guessing from the tool name).
    plan_calls = [
        e.params["toolCallId"]
        for e in client.events("tool:execution:start", sid)
        if e.params["toolName"] == "ExitPlanMode"
    ]
    assert [request["toolCallId"] for request in asked] == plan_calls
    assert len(set(plan_calls)) == 2
    [kept] = tool_results(reqs[3])
    assert "also update the README" in result_text(kept) and not kept.get("is_error")
    assert "Write" not in tool_names(reqs[3]) and PLAN_MODE_PROMPT in reqs[3]["system"]

    # startEditing: Agent mode, the history kept, and the NEXT request of the same turn
    # offers the write tools again with no Plan text.
    [mode_update] = client.events("mode:update", sid)
    assert mode_update.params["mode"] == "Agent"
    assert asked[1]["seq"] < mode_update.params["seq"]
    assert {"Write", "Edit", "TodoWrite"} <= set(tool_names(reqs[4]))
    assert "ExitPlanMode" not in tool_names(reqs[4])
    assert PLAN_MODE_PROMPT not in reqs[4]["system"]
    assert texts(reqs[4]["messages"][0])[0] == "bump VALUE_1", "history kept"
    [approved] = tool_results(reqs[4])
    assert "approved" in result_text(approved)
    assert not has_plan_reminder(reqs[4])
    # Only the Edit after the approval ran.
    [edited] = [
        e.params
        for e in client.events("tool:execution:complete", sid)
        if e.params["toolName"] == "Edit"
    ]
    assert edited["seq"] > mode_update.params["seq"]
    assert (workspace / "src/mod1.py").read_text() == original.replace("VALUE_1 = 1", "VALUE_1 = 2")

    # The Plan reminder comes with the first query of each entry into Plan mode only.
    await client.call("mode/update", {"sessionId": sid, "mode": "Plan"})
    scripted_llm.script(Reply.text("Planning."), Reply.text("Still planning."))
    await prompt(client, sid, "plan the next step")
    await prompt(client, sid, "and then?")
    assert has_plan_reminder(scripted_llm.requests[6].body)
    assert not has_plan_reminder(scripted_llm.requests[7].body)

    # clearContextAndStart: the history restarts from the plan (with the rules again).
    sid2 = await new_session(client, workspace, mode="Plan", permissionMode="acceptEdits")
    plan_v3 = "# Plan: add a CHANGELOG\n\n1. Write CHANGELOG.md"
    scripted_llm.script(
        Reply.tools([("ExitPlanMode", {"plan": plan_v3})], text="Here is my plan."),
        Reply.text("Implementing."),
        Reply.text("Next."),
    )
    await prompt(client, sid2, "plan a changelog")
    await prompt(client, sid2, "go on")
    restart = scripted_llm.requests[9].body
    [first] = restart["messages"]
    sent = texts(first)
    path = Path(editor.of("plan:exit:request")[2]["planFilePath"])
    assert sent[0] == (
        f"Implement the following plan (saved at .sema/plans/{path.name}):\n\n{plan_v3}"
        "\n\nThe user added: keep it short"
    )
    assert any("RULE-PROJECT" in t for t in sent[1:]), "rules are sent after a rebuild"
    assert "plan a changelog" not in str(restart["messages"])
    assert {"Write", "Edit"} <= set(tool_names(restart))
    assert PLAN_MODE_PROMPT not in restart["system"]
    assert [e.params["mode"] for e in client.events("mode:update", sid2)] == ["Agent"]
    # The next prompt continues from the rebuilt history.
    after = scripted_llm.requests[10].body["messages"]
    assert [m["role"] for m in after] == ["user", "assistant", "user"]
    assert texts(after[0])[0] == sent[0] and texts(after[2]) == ["go on"]
    await client.close()


async def test_exit_plan_mode_without_plan_exit_capability_keeps_plan_mode(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    editor = Editor()
    client = await start_client(server_env, editor, permissions=True)
    sid = await new_session(client, workspace, mode="Plan")
    plan = "# Plan: nothing much\n\n1. Think"
    scripted_llm.script(
        Reply.tools([("ExitPlanMode", {"plan": plan})]),
        Reply.text("Here is the plan: ..."),
    )
    result = await prompt(client, sid, "plan it")
    tools = {t["name"]: t for t in (await client.call("tool/list", {"sessionId": sid}))["tools"]}
    await client.close()

    assert result["stopReason"] == "end_turn"
    assert not editor.of("plan:exit:request") and not client.server_requests
    [told] = tool_results(scripted_llm.requests[1].body)
    assert "could not be asked" in result_text(told)
    assert "Write" not in tool_names(scripted_llm.requests[1].body)
    assert not client.events("mode:update", sid)
    assert not tools["Write"]["enabled"] and tools["ExitPlanMode"]["enabled"]
    [saved] = list((workspace / ".sema" / "plans").iterdir())
    assert saved.read_text() == plan + "\n"
    assert saved.name in result_text(told)
