"""The base of every tool's `Input` declaration: the part of the tool contract that needs
pydantic.

Kept out of tools/base.py, which every path imports. The built-in tools' inputs are
declared on it in tools/input_models.py and run as their generated plain forms
(tools/input_plain.py), so pydantic loads only for a call whose arguments are not
plainly valid; an MCP tool's input (mcp/tool.py) and a test's tool derive from it
directly.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ToolInput"]


class ToolInput(BaseModel):
    # Models send what they send: unknown keys are ignored, wrong types are errors.
    model_config = ConfigDict(extra="ignore", defer_build=True)
