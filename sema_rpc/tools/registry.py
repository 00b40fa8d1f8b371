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
