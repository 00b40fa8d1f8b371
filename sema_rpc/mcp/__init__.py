"""MCP servers for a session: configuration, the manager that runs them, and the tool adapter.

Importing this package is cheap: the `mcp` SDK is imported only when a server starts, and
the names below load their module on first use (PEP 562), so a session without MCP
servers never loads the manager or the tool, nor its configuration (`.config`) when no
MCP file exists and the editor names no server (`.paths`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import (
        McpConfig,
        McpConfigError,
        McpServerConfig,
        load_mcp_config,
        parse_editor_servers,
        parse_mcp_file,
    )
    from .manager import McpManager, ServerErrorCallback, ServerState
    from .paths import project_mcp_path, user_mcp_path
    from .tool import McpCallError, McpInput, McpTool, mcp_tool_name, result_text

_MODULE_OF = {
    "McpConfig": "config",
    "McpConfigError": "config",
    "McpServerConfig": "config",
    "load_mcp_config": "config",
    "parse_editor_servers": "config",
    "parse_mcp_file": "config",
    "project_mcp_path": "paths",
    "user_mcp_path": "paths",
    "McpManager": "manager",
    "ServerErrorCallback": "manager",
    "ServerState": "manager",
    "McpCallError": "tool",
    "McpInput": "tool",
    "McpTool": "tool",
    "mcp_tool_name": "tool",
    "result_text": "tool",
}

__all__ = [
    "McpCallError",
    "McpConfig",
    "McpConfigError",
    "McpInput",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "ServerErrorCallback",
    "ServerState",
    "load_mcp_config",
    "mcp_tool_name",
    "parse_editor_servers",
    "parse_mcp_file",
    "project_mcp_path",
    "result_text",
    "user_mcp_path",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # `__import__`, not `importlib.import_module`: the former is what `-X importtime`
    # sees (bench/bench_startup.py --imports).
    __import__(f"{__name__}.{module}")
    value = getattr(sys.modules[f"{__name__}.{module}"], name)
    globals()[name] = value
    return value
