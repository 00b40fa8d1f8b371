"""Where the MCP configuration files are: what a session checks before it loads the
configuration (config.py) at all, so that a session without them never imports it."""

from __future__ import annotations

from pathlib import Path

from sema_rpc.core.root import sema_root


def project_mcp_path(working_dir: Path) -> Path:
    return working_dir / ".sema" / "mcp.json"


def user_mcp_path() -> Path:
    return sema_root() / "mcp.json"


def any_mcp_file(working_dir: Path) -> bool:
    """Whether the project's or the user's MCP file exists (valid or not: a broken one
    is still reported by `load_mcp_config`; so is one that cannot be looked at)."""
    try:
        return project_mcp_path(working_dir).exists() or user_mcp_path().exists()
    except OSError:
        return True
