from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from sema_rpc.protocol import PlanExitRequestParams, PlanExitResult
from sema_rpc.tools.base import ToolContext, ToolServices
from sema_rpc.tools.exit_plan_mode import (
    PLAN_EXIT_OPTIONS,
    ExitPlanModeTool,
    plan_slug,
    save_plan,
)

from ._helpers import args_of, run

tool = ExitPlanModeTool()
PLAN = "# Plan: Add retry to the HTTP client\n\n1. Wrap `send` in a retry loop.\n2. Test it.\n"


def plan_ctx(ctx: ToolContext, answer: Any, seen: list | None = None) -> ToolContext:
    async def plan_exit(path: str, text: str, call_id: str) -> Any:
        if seen is not None:
            seen.append((path, text))
        assert call_id == ctx.tool_call_id, "the request names the asking call"
        PlanExitRequestParams(
            tool_call_id=call_id, plan_file_path=path, plan_content=text, options=PLAN_EXIT_OPTIONS
        )
        return answer

    ctx = ctx.replace(plan_mode=True)
    ctx.services.plan_exit = plan_exit
    return ctx


def test_slug_and_save(workspace: Path) -> None:
    assert plan_slug(PLAN) == "add-retry-to-the-http-client"
    assert plan_slug("\n\n## Étape 1\n") == "etape-1"
    assert plan_slug("中文计划") == "plan"
    assert len(plan_slug("x" * 10 + " " + "y" * 60)) <= 48
    now = datetime.datetime(2025, 3, 4, 5, 6, 7)
    first = save_plan(workspace, PLAN, now)
    second = save_plan(workspace, PLAN, now)
    assert first == workspace / ".sema/plans/20250304-050607-add-retry-to-the-http-client.md"
    assert second.name == "20250304-050607-add-retry-to-the-http-client-2.md"
    assert first.read_text() == PLAN


async def test_start_editing(workspace: Path, ctx: ToolContext) -> None:
    seen: list = []
    ctx = plan_ctx(ctx, {"decision": "startEditing"}, seen)
    out = await run(tool, ctx, plan=PLAN)
    [(path, text)] = seen
    assert Path(path).parent == workspace / ".sema/plans" and Path(path).read_text() == PLAN
    assert text == PLAN.strip()
    assert not out.is_error and "approved" in out.content
    assert out.control is not None
    assert (out.control.new_mode, out.control.rebuild_message) == ("Agent", None)


async def test_clear_context_and_start(workspace: Path, ctx: ToolContext) -> None:
    answer = PlanExitResult(decision="clearContextAndStart", feedback="use httpx")
    out = await run(tool, plan_ctx(ctx, answer), plan=PLAN)
    assert out.control is not None
    assert out.control.new_mode == "Agent"
    message = out.control.rebuild_message
    assert message is not None
    assert message.startswith("Implement the following plan (saved at .sema/plans/")
    assert "1. Wrap `send` in a retry loop." in message and "use httpx" in message


async def test_keep_planning(ctx: ToolContext) -> None:
    out = await run(
        tool, plan_ctx(ctx, {"decision": "keepPlanning", "feedback": "cover timeouts"}), plan=PLAN
    )
    assert out.control is None and "keep planning" in out.content
    assert "cover timeouts" in out.content


async def test_client_cannot_answer(workspace: Path, ctx: ToolContext) -> None:
    out = await run(tool, plan_ctx(ctx, None), plan=PLAN)
    assert out.control is None and "could not be asked" in out.content
    bogus = await run(tool, plan_ctx(ctx, {"decision": "yolo"}), plan=PLAN)
    assert bogus.control is None
    no_callback = ctx.replace(plan_mode=True, services=ToolServices())
    assert (await run(tool, no_callback, plan=PLAN)).control is None
    assert len(list((workspace / ".sema/plans").iterdir())) == 3  # saved every time


async def test_only_in_plan_mode(ctx: ToolContext) -> None:
    out = await run(tool, ctx, plan=PLAN)
    assert out.is_error and "not active" in out.content
    assert not tool.read_only and tool.allowed_in_plan_mode(args_of(tool, plan=PLAN))
