"""MCP servers for a session: configuration, the manager that runs them, and the tool adapter.

Importing this package is cheap: the `mcp` SDK is imported only when a server starts.
"""

from __future__ import annotations

from .config import (
    McpConfig,
    McpConfigError,
    McpServerConfig,
    load_mcp_config,
    parse_editor_servers,
    parse_mcp_file,
    project_mcp_path,
    user_mcp_path,
)
from .manager import McpManager, ServerErrorCallback, ServerState
from .tool import McpCallError, McpInput, McpTool, mcp_tool_name, result_text

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
