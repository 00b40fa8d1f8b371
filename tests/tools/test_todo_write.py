import pytest
from pydantic import ValidationError

from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.todo_write import TodoWriteTool

from ._helpers import args_of, run

tool = TodoWriteTool()


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": content + "ing"}


async def test_stores_and_notifies(ctx: ToolContext) -> None:
    seen: list[list[dict]] = []
    ctx.services.on_todos = seen.append
    todos = [todo("Build", "completed"), todo("Test", "in_progress"), todo("Ship", "pending")]
    out = await run(tool, ctx, todos=todos)
    assert not out.is_error
    assert ctx.services.todos == todos
    assert seen == [todos]
    assert out.summary == "1/3 done; Testing"


async def test_at_most_one_in_progress(ctx: ToolContext) -> None:
    todos = [todo("A", "in_progress"), todo("B", "in_progress")]
    out = await run(tool, ctx, todos=todos)
    assert out.is_error and "at most one" in out.content
    assert ctx.services.todos == []  # nothing stored


async def test_empty_list_and_no_callback(ctx: ToolContext) -> None:
    out = await run(tool, ctx, todos=[])
    assert not out.is_error and ctx.services.todos == []


def test_invalid_status_rejected_by_model() -> None:
    with pytest.raises(ValidationError):
        args_of(tool, todos=[{"content": "x", "status": "done", "activeForm": "x"}])
    assert not tool.is_read_only(args_of(tool, todos=[]))
    assert tool.permission(args_of(tool, todos=[]), None) is None  # type: ignore[arg-type]
