"""Context and extensibility over the wire (issue 5): @references, rules, custom commands,
skills, AskUserQuestion, command/list and tool/list.

Every assertion is on what a client observes: notifications, answers, and what the
scripted model server was sent. Each test runs one server process (and several
sessions in it) to stay fast.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.scripted_llm import Reply, ScriptedLLM

from .wire_helpers import (
    Editor,
    dump,
    last_user,
    new_session,
    prompt,
    result_text,
    start_client,
    texts,
    tool_names,
    tool_results,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_references_rules_and_custom_commands(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
):
    sema_root = Path(server_env["SEMA_ROOT"])
    write(workspace / "AGENTS.md", "RULE-PROJECT: indent with tabs.\n")
    write(sema_root / "AGENT.md", "RULE-USER: answer in English.\n")
    write(
        workspace / ".sema/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: <file>\n---\n"
        "Review $ARGUMENTS carefully and list bugs.\n",
    )
    write(workspace / ".sema/commands/frontend/test.md", "Run the frontend tests.\n")
    write(sema_root / "commands/review.md", "USER REVIEW (shadowed by the project's)\n")
    write(sema_root / "commands/hello.md", "---\ndescription: Greet\n---\nSay hello.\n")
    write(tmp_path / "secret.txt", "TOP-SECRET\n")

    client = await start_client(server_env, Editor(), permissions=True)
    sid = await new_session(client, workspace, permissionMode="acceptEdits")

    # 1. The first query: @references, the rules and the todo reminder. The model edits
    #    the referenced README without a Read: a reference counts as read.
    first_input = (
        "Check @README.md and @src/mod1.py:2-3, list @src, and also @missing.py and "
        "@../secret.txt please"
    )
    scripted_llm.script(
        Reply.tools(
            [
                (
                    "Edit",
                    {
                        "file_path": "README.md",
                        "old_string": "A tiny project.",
                        "new_string": "A small project.",
                    },
                )
            ]
        ),
        Reply.text("Checked."),
    )
    result = await prompt(client, sid, first_input)
    assert result["stopReason"] == "end_turn"

    [ref_event] = client.events("file:reference", sid)
    refs = ref_event.params["references"]
    assert [(r["type"], r["name"]) for r in refs] == [
        ("file", "README.md"),
        ("file", "src/mod1.py:2-3"),
        ("dir", "src"),
        ("file", "missing.py"),
        ("file", "../secret.txt"),
    ]
    readme, lines, src, missing, outside = refs
    assert "# Demo" in readme["content"] and "error" not in readme
    assert "line 0" in lines["content"] and "line 1" in lines["content"]
    assert "VALUE_1" not in lines["content"] and "line 2" not in lines["content"]
    assert "mod0.py" in src["content"] and "mod7.py" in src["content"]
    assert missing["error"] and missing["content"] == ""
    assert "outside the workspace" in outside["error"] and outside["content"] == ""
    # Reported before the model is called.
    first_model_event = client.events("message:complete", sid)[0]
    assert ref_event.params["seq"] < first_model_event.params["seq"]

    body = scripted_llm.requests[0].body
    sent = texts(last_user(body))
    assert sent[0] == first_input
    reminders = sent[1:]
    assert all(r.startswith("<system-reminder>") for r in reminders)
    assert "# Demo" in reminders[0] and "A tiny project." in reminders[0]
    assert "line 0" in reminders[1] and "VALUE_1" not in reminders[1]
    assert "mod3.py" in reminders[2]
    assert "missing.py" in reminders[3] and "not read" in reminders[3]
    assert "outside the workspace" in reminders[4]
    assert "TOP-SECRET" not in dump(body), "a path outside the workspace is never read"
    assert any("RULE-PROJECT" in r and "RULE-USER" in r for r in reminders)
    assert any("todo list" in r for r in reminders)
    # The Edit ran on the referenced (not Read) file.
    [edit] = client.events("tool:execution:complete", sid)
    assert edit.params["toolName"] == "Edit"
    assert (workspace / "README.md").read_text() == "# Demo\n\nA small project.\n"

    # 2. A custom command with $ARGUMENTS; the rules are not sent again.
    scripted_llm.script(Reply.text("Reviewed."))
    await prompt(client, sid, "/review src/app.py")
    body = scripted_llm.requests[2].body
    sent = texts(last_user(body))
    assert sent == ["Review src/app.py carefully and list bugs."]
    assert dump(body).count("RULE-PROJECT") == 1, "rules only with the first query"
    assert dump(body).count("todo list is currently empty") == 1

    # 3. Without $ARGUMENTS the arguments are appended; a nested command is `a:b`.
    scripted_llm.script(Reply.text("Ran."))
    await prompt(client, sid, "/frontend:test only the unit ones")
    assert texts(last_user(scripted_llm.requests[3].body)) == [
        "Run the frontend tests.\n\nonly the unit ones"
    ]

    # 4. A user command; an unknown /x goes to the model unchanged.
    scripted_llm.script(Reply.text("Hello!"), Reply.text("?"))
    await prompt(client, sid, "/hello")
    await prompt(client, sid, "/nope do it")
    assert texts(last_user(scripted_llm.requests[4].body)) == ["Say hello."]
    assert texts(last_user(scripted_llm.requests[5].body)) == ["/nope do it"]
    assert not client.events("file:reference", sid)[1:], "no references, no event"

    # 5. AskUserQuestion from a client without the askQuestion capability: not asked,
    #    and the model is told.
    question = {
        "question": "Which database?",
        "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}],
    }
    scripted_llm.script(
        Reply.tools([("AskUserQuestion", {"questions": [question]})]), Reply.text("I'll assume.")
    )
    result = await prompt(client, sid, "set up the database")
    assert result["stopReason"] == "end_turn"
    assert not client.server_requests or all(
        r.method != "ask:question:request" for r in client.server_requests
    )
    [answer] = tool_results(scripted_llm.requests[7].body)
    assert "could not be asked" in result_text(answer)

    # command/list: project commands win a name clash; sorted by name.
    listed = await client.call("command/list", {"workingDir": str(workspace)})
    await client.close()
    assert listed["commands"] == [
        {
            "name": "frontend:test",
            "description": "Run the frontend tests.",
            "source": "project",
        },
        {"name": "hello", "description": "Greet", "source": "user"},
        {
            "name": "review",
            "description": "Review a file",
            "argumentHint": "<file>",
            "source": "project",
        },
    ]


async def test_skills_ask_user_question_and_tool_list(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    write(
        workspace / ".sema/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy the app to staging\n"
        "when-to-use: the user says ship it\n---\n"
        "DEPLOY-STEPS: run make deploy $ARGUMENTS, then check the health page.\n",
    )
    write(workspace / ".sema/skills/broken/SKILL.md", "---\nname: broken\n---\nno description\n")
    editor = Editor(
        permission=[{"decision": "allow_always"}],
        question=[{"answers": {"Which database?": "Postgres"}}],
    )
    client = await start_client(server_env, editor, permissions=True, askQuestion=True)
    sid = await new_session(client, workspace)

    question = {
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "the server one"},
            {"label": "SQLite", "description": "a file"},
        ],
    }
    scripted_llm.script(
        Reply.tools([("Skill", {"skill": "deploy", "args": "--fast"})]),
        Reply.tools([("Skill", {"skill": "deploy"})]),
        Reply.tools([("AskUserQuestion", {"questions": [question]})]),
        Reply.text("Deployed with Postgres."),
    )
    result = await prompt(client, sid, "ship it")
    assert result["stopReason"] == "end_turn"

    # The system prompt lists the valid skills (not their bodies); Skill is offered.
    first = scripted_llm.requests[0].body
    assert "- deploy: Deploy the app to staging" in first["system"]
    assert "ship it" in first["system"]  # when-to-use
    assert "broken" not in first["system"], "a skill without a description is skipped"
    assert "DEPLOY-STEPS" not in dump(first)
    assert "Skill" in tool_names(first)

    # Consent by skill name, once: allow_always covers the second call.
    [asked] = editor.of("tool:permission:request")
    assert asked["toolName"] == "Skill" and asked["title"] == "Skill: deploy"
    assert "allow_always" in asked["options"]
    [loaded] = tool_results(scripted_llm.requests[1].body)
    assert "DEPLOY-STEPS: run make deploy --fast, then check the health page." in result_text(
        loaded
    )
    [again] = tool_results(scripted_llm.requests[2].body)
    assert "DEPLOY-STEPS" in result_text(again) and not again.get("is_error")

    # AskUserQuestion → ask:question:request → the answer goes back to the model.
    [ask] = editor.of("ask:question:request")
    assert ask["sessionId"] == sid and ask["agentId"] == "main"
    assert ask["questions"] == [{**question, "multiSelect": False}]
    [answered] = tool_results(scripted_llm.requests[3].body)
    assert '"Which database?" = "Postgres"' in result_text(answered)

    # tool/list: built-in, skill; enabled follows useTools and the mode.
    tools = {t["name"]: t for t in (await client.call("tool/list", {"sessionId": sid}))["tools"]}
    assert tools["Read"] == {
        "name": "Read",
        "description": tools["Read"]["description"],
        "source": "builtin",
        "enabled": True,
        "readOnly": True,
    }
    assert tools["Write"]["enabled"] and not tools["Write"]["readOnly"]
    assert tools["Skill"]["source"] == "skill" and tools["Skill"]["enabled"]
    assert tools["Task"]["enabled"] and tools["AskUserQuestion"]["enabled"]
    assert "ExitPlanMode" not in tools or not tools["ExitPlanMode"]["enabled"]

    limited = await new_session(client, workspace, useTools=["Read", "Grep", "Skill"], mode="Plan")
    tools = {
        t["name"]: t for t in (await client.call("tool/list", {"sessionId": limited}))["tools"]
    }
    enabled = {name for name, t in tools.items() if t["enabled"]}
    assert enabled == {"Read", "Grep", "Skill"}
    assert {"Write", "Edit", "Bash", "Task", "TodoWrite"} <= set(tools)
    scripted_llm.script(Reply.text("Looked."))
    await prompt(client, limited, "look around")
    assert tool_names(scripted_llm.requests[4].body) == ["Read", "Grep", "Skill"]

    plan = await new_session(client, workspace, mode="Plan")
    tools = {t["name"]: t for t in (await client.call("tool/list", {"sessionId": plan}))["tools"]}
    assert not tools["Write"]["enabled"] and not tools["Edit"]["enabled"]
    assert not tools["TodoWrite"]["enabled"]
    assert tools["Read"]["enabled"] and tools["Bash"]["enabled"]
    assert tools["ExitPlanMode"]["enabled"]
    await client.call("mode/update", {"sessionId": plan, "mode": "Agent"})
    tools = {t["name"]: t for t in (await client.call("tool/list", {"sessionId": plan}))["tools"]}
    assert tools["Write"]["enabled"]
    assert "ExitPlanMode" not in tools or not tools["ExitPlanMode"]["enabled"]
    await client.close()
