"""Run a tool the way the engine does: validate the model, validate_input, call."""

from __future__ import annotations

import os
from typing import Any

from sema_rpc.tools.base import Tool, ToolContext, ToolOutput


async def run(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutput:
    args = tool.Input.model_validate(raw)
    refusal = await tool.validate_input(args, ctx)
    if refusal is not None:
        return ToolOutput(content=refusal, is_error=True)
    return await tool.call(args, ctx)


def args_of(tool: Tool, **raw: Any) -> Any:
    return tool.Input.model_validate(raw)


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def set_mtime(path: os.PathLike[str], seconds: float) -> None:
    os.utime(path, (seconds, seconds))
