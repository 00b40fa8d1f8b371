"""The built-in tools and how a session selects them.

A session offers every built-in tool on each turn, yet most turns call few of them (a
plain answer, none): a tool is offered from its generated card (name, description,
read-only flag, input schema: tools/schemas.py) and its module is imported, and the tool
built, the first time a call needs it (its input validated, its consent asked, its run).
`BUILTIN_TOOLS` / `AGENT_TOOLS` (the classes) import every tool when named.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from sema_rpc.core.project.agents import SUBAGENT_EXCLUDED, list_agents, task_tool_description

from .base import (
    FileEffect,
    PermissionAsk,
    Tool,
    ToolCard,
    ToolContext,
    ToolOutput,
    generated_cards,
)

BUILTIN_REFS: tuple[str, ...] = (
    "sema_rpc.tools.read:ReadTool",
    "sema_rpc.tools.glob:GlobTool",
    "sema_rpc.tools.grep:GrepTool",
    "sema_rpc.tools.bash:BashTool",
    "sema_rpc.tools.write:WriteTool",
    "sema_rpc.tools.edit:EditTool",
    "sema_rpc.tools.todo_write:TodoWriteTool",
)
"""Every built-in tool class (`module:QualName`), in the order they are offered to the model."""

AGENT_REFS: tuple[str, ...] = (
    "sema_rpc.tools.task:TaskTool",
    "sema_rpc.tools.skill:SkillTool",
    "sema_rpc.tools.ask_user_question:AskUserQuestionTool",
    "sema_rpc.tools.exit_plan_mode:ExitPlanModeTool",
)
"""Tools that need the engine's help through ctx.services (`run_subagent`, `ask_user`,
`plan_exit`) or the project's definitions (skills, agents). Kept apart from the built-in
tools so the engine opts in once it provides those services; offered after them, in
this order."""

WRITE_TOOL_NAMES: frozenset[str] = frozenset({"Write", "Edit"})
"""Tools that change files (skipFileEditPermission, workspace-scoped always-rules)."""

PLAN_MODE_EXCLUDED: frozenset[str] = frozenset({"Write", "Edit", "TodoWrite"})
"""Dropped in plan mode. Bash stays: the engine restricts it to safe read-only commands."""

SUBAGENT_EXCLUDED_TOOLS: frozenset[str] = SUBAGENT_EXCLUDED
"""Never given to a subagent: no nesting, no talking to the user, no session todo list."""


def load(ref: str) -> type[Tool]:
    """The tool class `module:QualName` names (its module imported)."""
    module, _, qualname = ref.partition(":")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return cls  # type: ignore[no-any-return]


def card(ref: str) -> ToolCard:
    """The generated card of a built-in tool; built from the class (imported) when the
    generated file does not have it."""
    found = generated_cards().get(ref)
    return found if found is not None else ToolCard.of(load(ref))


class LazyTool(Tool):
    """A built-in tool offered from its card. Its name, description, read-only flag and
    input schema are the card's; anything else asked of it (its `Input`, a call's title,
    consent, validation, the call itself) imports the tool's module and builds the tool
    (with `args`), once per instance, and asks that."""

    def __init__(self, card: ToolCard, *args: Any, description: str | None = None) -> None:
        self.card = card
        self.name = card.name  # type: ignore[misc]
        self.description = card.description if description is None else description  # type: ignore[misc]
        self.read_only = card.read_only  # type: ignore[misc]
        self._args = args
        self._tool: Tool | None = None

    @property
    def tool(self) -> Tool:
        """The tool itself (imported and built on first use)."""
        if self._tool is None:
            self._tool = load(self.card.ref)(*self._args)
        return self._tool

    def __getattr__(self, attr: str) -> Any:
        # Only reached for what neither the card nor `Tool` has: `Input`, a tool's own.
        if attr.startswith("__") or attr in ("card", "_args", "_tool"):
            raise AttributeError(attr)
        return getattr(self.tool, attr)

    def input_schema(self) -> dict[str, Any]:  # type: ignore[override]
        return self.card.input_schema

    def is_read_only(self, args: Any) -> bool:
        return self.tool.is_read_only(args)

    def allowed_in_plan_mode(self, args: Any) -> bool:
        return self.tool.allowed_in_plan_mode(args)

    def title(self, args: Any) -> str:
        return self.tool.title(args)

    async def validate_input(self, args: Any, ctx: ToolContext) -> str | None:
        return await self.tool.validate_input(args, ctx)

    def changes_files(self, args: Any, ctx: ToolContext) -> FileEffect | None:
        return self.tool.changes_files(args, ctx)

    def permission(self, args: Any, ctx: ToolContext) -> PermissionAsk | None:
        return self.tool.permission(args, ctx)

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        return await self.tool.call(args, ctx)

    def __repr__(self) -> str:
        return f"LazyTool({self.card.ref})"


def builtin_tools(use_tools: list[str] | None = None, plan_mode: bool = False) -> list[Tool]:
    """Fresh instances of the built-in tools, in `BUILTIN_REFS` order.

    `use_tools` keeps only the named tools (unknown names are ignored); `plan_mode`
    drops the tools that write.
    """
    wanted = None if use_tools is None else set(use_tools)
    tools: list[Tool] = []
    for ref in BUILTIN_REFS:
        c = card(ref)
        if wanted is not None and c.name not in wanted:
            continue
        if plan_mode and c.name in PLAN_MODE_EXCLUDED:
            continue
        tools.append(LazyTool(c))
    return tools


def agent_tools(
    working_dir: Path,
    use_tools: list[str] | None = None,
    plan_mode: bool = False,
    *,
    has_skills: bool = True,
    subagent: bool = False,
) -> list[Tool]:
    """Fresh instances of the agent tools for one turn, in `AGENT_REFS` order.

    ExitPlanMode only in Plan mode; Skill only when the project has skills
    (`has_skills`); none of SUBAGENT_EXCLUDED_TOOLS for a subagent; `use_tools` keeps
    only the named tools. Task's description lists the project's agents.
    """
    wanted = None if use_tools is None else set(use_tools)
    tools: list[Tool] = []
    for ref in AGENT_REFS:
        c = card(ref)
        if wanted is not None and c.name not in wanted:
            continue
        if subagent and c.name in SUBAGENT_EXCLUDED_TOOLS:
            continue
        if c.name == "ExitPlanMode" and not plan_mode:
            continue
        if c.name == "Skill" and not has_skills:
            continue
        if c.name == "Task":  # as TaskTool(working_dir) describes itself
            described = task_tool_description(list_agents(working_dir))
            tools.append(LazyTool(c, working_dir, description=described))
        else:
            tools.append(LazyTool(c))
    return tools


def __getattr__(name: str) -> list[type[Tool]]:
    # BUILTIN_TOOLS / AGENT_TOOLS: the classes themselves, every tool module imported.
    if name == "BUILTIN_TOOLS":
        return [load(ref) for ref in BUILTIN_REFS]
    if name == "AGENT_TOOLS":
        return [load(ref) for ref in AGENT_REFS]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
