from __future__ import annotations

from pathlib import Path

from sema_rpc.tools.registry import AGENT_TOOLS, BUILTIN_TOOLS, agent_tools
from sema_rpc.tools.task import TaskTool
from tests.engine import _context
from tests.engine._context import write

sema_home = _context.sema_home  # fixture


def names(tools: list) -> list[str]:
    return [t.name for t in tools]


def test_agent_tools_selection(workspace: Path, sema_home: Path) -> None:
    assert [c.name for c in AGENT_TOOLS] == ["Task", "Skill", "AskUserQuestion", "ExitPlanMode"]
    assert not {c.name for c in AGENT_TOOLS} & {c.name for c in BUILTIN_TOOLS}
    assert names(agent_tools(workspace)) == ["Task", "Skill", "AskUserQuestion"]
    assert names(agent_tools(workspace, plan_mode=True)) == [
        "Task", "Skill", "AskUserQuestion", "ExitPlanMode",
    ]  # fmt: skip
    assert names(agent_tools(workspace, has_skills=False)) == ["Task", "AskUserQuestion"]
    assert names(agent_tools(workspace, ["Skill", "Read"])) == ["Skill"]
    assert names(agent_tools(workspace, plan_mode=True, subagent=True)) == ["Skill"]


def test_task_lists_project_agents(workspace: Path, sema_home: Path) -> None:
    write(workspace / ".sema/agents/fixer.md", "---\ndescription: Fixes bugs\n---\nFix.")
    [task] = [t for t in agent_tools(workspace) if t.name == "Task"]
    assert "fixer" in task.description
    # offered from its card, it says what the tool itself says once imported
    assert task.description == TaskTool(workspace).description


def test_every_agent_tool_is_described() -> None:
    for cls in AGENT_TOOLS:
        assert cls.description.strip() and len(cls.description) < 1500
        schema = cls.input_schema()
        assert schema["type"] == "object" and schema["properties"]
    assert [c.read_only for c in AGENT_TOOLS] == [False, False, True, False]
