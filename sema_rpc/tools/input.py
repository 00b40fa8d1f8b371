"""The base of every tool's `Input` model: the part of the tool contract that needs pydantic.

Kept out of tools/base.py, which every path imports (a session offers the tools from
their generated cards, tools/schemas.py): pydantic loads with the first tool module, at
that tool's first call, not before.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ToolInput"]


class ToolInput(BaseModel):
    # Models send what they send: unknown keys are ignored, wrong types are errors.
    model_config = ConfigDict(extra="ignore", defer_build=True)
