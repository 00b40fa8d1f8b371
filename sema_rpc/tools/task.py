"""Task: start a subagent (Explore, Plan, or a `.sema/agents/*.md` definition) on a task.

The engine runs the subagent: `ctx.services.run_subagent` (a `SubagentRun`) returns the
subagent's final text (or raises ToolError). It owns the subagent's history, tools and the
`task:agent:start` / `task:agent:end` events. Subagents cannot nest: a Task call from a
subagent is refused.
"""

from __future__ import annotations

from pathlib import Path

from sema_rpc.core.project.agents import (
    BUILTIN_AGENTS,
    AgentDef,
    find_agent,
    list_agents,
    task_tool_description,
)

from .base import Tool, ToolContext, ToolError, ToolOutput
from .input_plain import TaskInput


class TaskTool(Tool):
    name = "Task"
    description = task_tool_description(list(BUILTIN_AGENTS))
    Input = TaskInput

    def __init__(self, working_dir: Path | None = None):
        self.working_dir = working_dir
        if working_dir is not None:
            # The instance's description lists this project's agents too.
            self.description = task_tool_description(list_agents(working_dir))  # type: ignore[misc]

    def title(self, args: TaskInput) -> str:
        return f"Task ({args.subagent_type}): {args.description}"

    def _agent(self, args: TaskInput, ctx: ToolContext) -> AgentDef | None:
        return find_agent(ctx.working_dir, args.subagent_type.strip())

    def allowed_in_plan_mode(self, args: TaskInput) -> bool:
        """Only a subagent whose tools are all read-only (Explore, Plan, or a definition with
        `tools: Read, Glob, Grep`). Without a working dir only the built-ins are known."""
        name = args.subagent_type.strip()
        if self.working_dir is not None:
            agent = find_agent(self.working_dir, name)
        else:
            agent = next((a for a in BUILTIN_AGENTS if a.name == name), None)
        return agent is not None and agent.read_only

    async def validate_input(self, args: TaskInput, ctx: ToolContext) -> str | None:
        if ctx.agent_id != "main":
            return "Subagents cannot start subagents: do the task yourself."
        if self._agent(args, ctx) is None:
            known = ", ".join(a.name for a in list_agents(ctx.working_dir))
            return f"Unknown subagent_type: {args.subagent_type}. Available: {known}"
        return None

    async def call(self, args: TaskInput, ctx: ToolContext) -> ToolOutput:
        run = ctx.services.run_subagent
        if run is None:
            raise ToolError("Subagents are not available in this session.")
        agent = self._agent(args, ctx)
        assert agent is not None  # validated
        text = await run(agent.name, args.description, args.prompt, tool_call_id=ctx.tool_call_id)
        text = (text or "").strip() or "(the subagent finished without a final answer)"
        return ToolOutput(content=text, summary=f"{agent.name}: {args.description}")
