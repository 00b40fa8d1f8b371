from __future__ import annotations

from pathlib import Path

import pytest

from sema_rpc.tools.base import ToolContext, ToolError
from sema_rpc.tools.task import TaskTool
from tests.engine import _context
from tests.engine._context import write

from ._helpers import args_of, run

sema_home = _context.sema_home  # fixture

tool = TaskTool()


async def test_runs_the_engine_subagent(ctx: ToolContext, sema_home: Path) -> None:
    calls: list = []

    async def run_subagent(kind: str, description: str, prompt: str, *, tool_call_id: str) -> str:
        calls.append((kind, description, prompt, tool_call_id))
        return "  Found it in src/app.py:12  "

    ctx = ctx.replace(tool_call_id="toolu_1")
    ctx.services.run_subagent = run_subagent
    out = await run(
        tool, ctx, description="Find the parser", prompt="Where is X?", subagent_type="Explore"
    )
    assert calls == [("Explore", "Find the parser", "Where is X?", "toolu_1")]
    assert out.content == "Found it in src/app.py:12" and out.summary == "Explore: Find the parser"


async def test_errors(ctx: ToolContext, sema_home: Path) -> None:
    async def failing(*_a: object, **_k: object) -> str:
        raise ToolError("the subagent failed: boom")

    args = {"description": "d", "prompt": "p", "subagent_type": "Explore"}
    with pytest.raises(ToolError, match="not available"):
        await run(tool, ctx, **args)
    ctx.services.run_subagent = failing
    with pytest.raises(ToolError, match="boom"):
        await run(tool, ctx, **args)
    unknown = await run(tool, ctx, **{**args, "subagent_type": "Nope"})
    assert unknown.is_error and "Available: Explore, Plan" in unknown.content
    nested = await run(tool, ctx.replace(agent_id="task-1"), **args)
    assert nested.is_error and "cannot start subagents" in nested.content


def test_description_and_plan_mode(workspace: Path, sema_home: Path) -> None:
    write(workspace / ".sema/agents/fixer.md", "---\ndescription: Fixes bugs\n---\nFix.")
    write(workspace / ".sema/agents/reader.md", "---\ndescription: Reads\ntools: Read, Grep\n---\n")
    assert "- Explore:" in TaskTool.description and "fixer" not in TaskTool.description
    local = TaskTool(workspace)
    assert "- fixer: Fixes bugs [all tools]" in local.description
    assert not local.read_only

    def allowed(t: TaskTool, kind: str) -> bool:
        return t.allowed_in_plan_mode(args_of(t, description="d", prompt="p", subagent_type=kind))

    assert allowed(local, "Explore") and allowed(local, "Plan") and allowed(local, "reader")
    assert not allowed(local, "fixer") and not allowed(local, "Nope")
    assert allowed(tool, "Explore") and not allowed(tool, "reader")
