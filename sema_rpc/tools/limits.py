"""Limits that a tool's description and its input's declaration (tools/input_models.py)
both state: here, so the declarations need no tool module (the tool modules import
their generated inputs, which are made from the declarations)."""

from __future__ import annotations

DEFAULT_TIMEOUT_MS = 60_000
"""Bash: a command's timeout unless the call sets one."""
MAX_TIMEOUT_MS = 180_000
"""Bash: the longest timeout a call may set (unless the environment lowers it)."""
MAX_LINES = 2000
"""Read: the most lines one call returns."""
