from __future__ import annotations

import json
from pathlib import Path

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.project.agents import (
    find_agent,
    list_agents,
    resolve_agent_model,
    subagent_tool_names,
    task_tool_description,
)
from tests.engine import _context
from tests.engine._context import write

sema_home = _context.sema_home  # fixture
ws = _context.ws  # fixture

ALL = ["Read", "Glob", "Grep", "Bash", "Write", "Edit", "TodoWrite", "Task", "Skill",
       "AskUserQuestion", "ExitPlanMode", "mcp__srv__x"]  # fmt: skip


def test_builtins(ws: Path, sema_home: Path) -> None:
    explore, plan = list_agents(ws)
    assert (explore.name, explore.model, explore.tools) == (
        "Explore",
        "quick",
        ("Read", "Glob", "Grep"),
    )
    assert explore.read_only and plan.read_only and plan.source == "builtin"
    assert "subagent" in explore.full_prompt()
    assert subagent_tool_names(explore, ALL) == ["Read", "Glob", "Grep"]


def test_user_definitions(ws: Path, sema_home: Path) -> None:
    write(
        ws / ".sema/agents/reviewer.md",
        "---\nname: code-reviewer\ndescription: Reviews diffs\ntools: Read, Grep, Bash\n"
        "model: quick\n---\nYou review code.\n",
    )
    write(ws / ".sema/agents/helper.md", "---\ndescription: Does anything\n---\n")
    write(ws / ".sema/agents/broken.md", "---\nname: broken\n---\nno description")
    write(sema_home / "agents/code-reviewer.md", "---\ndescription: user copy\n---\nx")
    write(sema_home / "agents/Explore.md", "---\ndescription: my explorer\ntools: '*'\n---\nGo.")
    agents = {a.name: a for a in list_agents(ws)}
    assert list(agents) == ["Explore", "Plan", "code-reviewer", "helper"]
    reviewer = agents["code-reviewer"]
    assert (reviewer.source, reviewer.tools, reviewer.model) == (
        "project",
        ("Read", "Grep", "Bash"),
        "quick",
    )
    assert reviewer.system_prompt == "You review code." and not reviewer.read_only
    assert subagent_tool_names(reviewer, ALL) == ["Read", "Grep", "Bash"]
    helper = agents["helper"]  # name from the file, every tool but the excluded ones
    assert helper.tools is None and helper.model == "inherit"
    assert subagent_tool_names(helper, ALL) == [
        "Read", "Glob", "Grep", "Bash", "Write", "Edit", "Skill", "mcp__srv__x",
    ]  # fmt: skip
    assert agents["Explore"].source == "user" and agents["Explore"].tools is None
    assert find_agent(ws, "broken") is None
    description = task_tool_description(list(agents.values()))
    assert "- code-reviewer: Reviews diffs [Read, Grep, Bash]" in description
    assert "- helper: Does anything [all tools]" in description


def test_model_resolution(ws: Path, sema_home: Path) -> None:
    session = ModelProfile(name="s", provider="replay", model_name="demo")
    explore = find_agent(ws, "Explore")
    plan = find_agent(ws, "Plan")
    assert explore is not None and plan is not None
    assert resolve_agent_model(explore, session) is session  # no quick pointer configured
    assert resolve_agent_model(plan, session) is session
    (sema_home / "models.json").write_text(
        json.dumps(
            {
                "profiles": {
                    "fast": {"provider": "openai", "modelName": "gpt-4.1-mini", "apiKey": "x"}
                },
                "pointers": {"quick": "fast"},
            }
        )
    )
    assert resolve_agent_model(explore, session).model_name == "gpt-4.1-mini"
