"""TodoWrite: the model's task list for the session."""

from __future__ import annotations

from .base import Tool, ToolContext, ToolOutput
from .input_plain import TodoWriteInput


class TodoWriteTool(Tool):
    name = "TodoWrite"
    description = (
        "Creates and updates a structured todo list for the current task; the user sees it.\n"
        "- Use it for tasks with 3 or more steps, or when the user gives several tasks; skip it "
        "for trivial single-step requests.\n"
        "- Always send the complete list. Status is pending, in_progress or completed; exactly "
        "one item should be in_progress while you work (never more than one).\n"
        "- Mark an item completed as soon as it is done, and only when it is fully done "
        "(tests pass, no errors left).\n"
        "- `content` is imperative ('Fix the build'), `activeForm` is present continuous "
        "('Fixing the build')."
    )
    Input = TodoWriteInput

    def title(self, args: TodoWriteInput) -> str:
        return "Update todos"

    async def validate_input(self, args: TodoWriteInput, ctx: ToolContext) -> str | None:
        active = [t.content for t in args.todos if t.status == "in_progress"]
        if len(active) > 1:
            return (
                f"{len(active)} todos are in_progress ({'; '.join(active)}); at most one may be "
                "in_progress at a time."
            )
        return None

    async def call(self, args: TodoWriteInput, ctx: ToolContext) -> ToolOutput:
        todos = [t.model_dump() for t in args.todos]
        ctx.services.todos = todos
        if ctx.services.on_todos is not None:
            ctx.services.on_todos(todos)
        done = sum(t["status"] == "completed" for t in todos)
        active = next((t["activeForm"] for t in todos if t["status"] == "in_progress"), None)
        summary = f"{done}/{len(todos)} done" + (f"; {active}" if active else "")
        return ToolOutput(
            content=(
                "Todos have been modified successfully. Keep using the todo list to track your "
                "progress and proceed with the current task."
            ),
            summary=summary,
        )
