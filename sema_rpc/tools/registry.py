"""The built-in tools and how a session selects them."""

from __future__ import annotations

from .base import Tool
from .bash import BashTool
from .edit import EditTool
from .glob import GlobTool
from .grep import GrepTool
from .read import ReadTool
from .todo_write import TodoWriteTool
from .write import WriteTool

BUILTIN_TOOLS: list[type[Tool]] = [
    ReadTool,
    GlobTool,
    GrepTool,
    BashTool,
    WriteTool,
    EditTool,
    TodoWriteTool,
]
"""Every built-in tool class, in the order they are offered to the model."""

WRITE_TOOL_NAMES: frozenset[str] = frozenset({WriteTool.name, EditTool.name})
"""Tools that change files (skipFileEditPermission, workspace-scoped always-rules)."""

PLAN_MODE_EXCLUDED: frozenset[str] = frozenset({WriteTool.name, EditTool.name, TodoWriteTool.name})
"""Dropped in plan mode. Bash stays: the engine restricts it to safe read-only commands."""


def builtin_tools(use_tools: list[str] | None = None, plan_mode: bool = False) -> list[Tool]:
    """Fresh instances of the built-in tools, in `BUILTIN_TOOLS` order.

    `use_tools` keeps only the named tools (unknown names are ignored); `plan_mode`
    drops the tools that write.
    """
    wanted = None if use_tools is None else set(use_tools)
    tools: list[Tool] = []
    for cls in BUILTIN_TOOLS:
        if wanted is not None and cls.name not in wanted:
            continue
        if plan_mode and cls.name in PLAN_MODE_EXCLUDED:
            continue
        tools.append(cls())
    return tools


# --------------------------------------------------------------------------- agent tools
# Tools that need the engine's help through ctx.services (`run_subagent`,
# `ask_user`, `plan_exit`) or the project's definitions (skills, agents). Kept apart from
# BUILTIN_TOOLS so the engine opts in once it provides those services.

from pathlib import Path  # noqa: E402

from sema_rpc.core.project.agents import SUBAGENT_EXCLUDED  # noqa: E402

from .ask_user_question import AskUserQuestionTool  # noqa: E402
from .exit_plan_mode import ExitPlanModeTool  # noqa: E402
from .skill import SkillTool  # noqa: E402
from .task import TaskTool  # noqa: E402

AGENT_TOOLS: list[type[Tool]] = [TaskTool, SkillTool, AskUserQuestionTool, ExitPlanModeTool]
"""Offered after BUILTIN_TOOLS, in this order."""

SUBAGENT_EXCLUDED_TOOLS: frozenset[str] = SUBAGENT_EXCLUDED
"""Never given to a subagent: no nesting, no talking to the user, no session todo list."""


def agent_tools(
    working_dir: Path,
    use_tools: list[str] | None = None,
    plan_mode: bool = False,
    *,
    has_skills: bool = True,
    subagent: bool = False,
) -> list[Tool]:
    """Fresh instances of the agent tools for one turn, in `AGENT_TOOLS` order.

    ExitPlanMode only in Plan mode; Skill only when the project has skills
    (`has_skills`); none of SUBAGENT_EXCLUDED_TOOLS for a subagent; `use_tools` keeps
    only the named tools. Task's description lists the project's agents.
    """
    wanted = None if use_tools is None else set(use_tools)
    tools: list[Tool] = []
    for cls in AGENT_TOOLS:
        if wanted is not None and cls.name not in wanted:
            continue
        if subagent and cls.name in SUBAGENT_EXCLUDED_TOOLS:
            continue
        if cls is ExitPlanModeTool and not plan_mode:
            continue
        if cls is SkillTool and not has_skills:
            continue
        tools.append(TaskTool(working_dir) if cls is TaskTool else cls())
    return tools
