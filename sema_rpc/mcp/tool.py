"""McpTool: one tool of an MCP server, adapted to our `Tool` contract.

- name `mcp__<server>__<tool>`, sanitised to [A-Za-z0-9_-] and at most 64 characters (a
  longer name keeps a stable hash suffix, so an "allow always" rule keeps matching);
- `input_schema()` on an instance returns the server's JSON schema untouched;
- arguments validate as any object (`McpInput` keeps every key) and go to the server as
  they came;
- never read-only; consent is asked per tool, the rule being the tool's full name;
- the call never raises: a dead server, a timeout or a protocol error is an error result
  naming the server.

No `mcp` import at module level (it costs ~0.7 s).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import ConfigDict

from sema_rpc.tools.base import PermissionAsk, Tool, ToolContext, ToolOutput
from sema_rpc.tools.input import ToolInput

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "MAX_TOOL_NAME",
    "McpCallError",
    "McpInput",
    "McpTool",
    "call_timeout_s",
    "mcp_tool_name",
    "result_text",
]

MAX_TOOL_NAME = 64
DEFAULT_CALL_TIMEOUT_S = 120.0
TIMEOUT_ENV = "SEMA_MCP_TIMEOUT_S"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpCallError(Exception):
    """A call that could not get a result from its server; the message names the server."""


class _Server(Protocol):
    """What a tool needs from its server connection (manager._ServerHandle)."""

    name: str

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> CallToolResult: ...


class McpInput(ToolInput):
    """Any JSON object; the server validates against its own schema."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    def arguments(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


def _clean(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def mcp_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, sanitised; over 64 characters → cut plus a stable hash."""
    name = f"mcp__{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def call_timeout_s() -> float:
    """`$SEMA_MCP_TIMEOUT_S`, default 120."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_CALL_TIMEOUT_S))
    except ValueError:
        return DEFAULT_CALL_TIMEOUT_S
    return value if value > 0 else DEFAULT_CALL_TIMEOUT_S


def _b64_size(data: str) -> int:
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_human(_b64_size(block.data))}]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {res.uri}]\n{text}"
        mime = getattr(res, "mime_type", None) or "binary"
        blob = getattr(res, "blob", "") or ""
        return f"[resource {res.uri}: {mime}, {_human(_b64_size(blob))}]"
    if kind == "resource_link":
        label = getattr(block, "name", "") or ""
        return f"[resource link: {label} {block.uri}]".replace("  ", " ")
    return f"[{kind or type(block).__name__} content]"


def result_text(result: CallToolResult) -> str:
    """Text parts joined by newlines; other parts described by type and size.

    With no content at all, the structured result as JSON.
    """
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts)


def _summary(text: str, limit: int = 100) -> str:
    """One line for the tool card: the text when it is one line, else its size."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    if len(lines) > 1:
        return f"{len(lines)} lines"
    line = lines[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


class McpTool(Tool):
    """One tool of one MCP server. Instances carry name, description and schema."""

    Input: ClassVar[type[ToolInput]] = McpInput
    read_only: ClassVar[bool] = False

    def __init__(
        self,
        server: _Server,
        tool_name: str,
        description: str | None,
        schema: dict[str, Any],
        name: str | None = None,
    ):
        self.server = server
        self.server_name = server.name
        self.mcp_name = tool_name
        # Instance attributes shadow Tool's ClassVars: every MCP tool is its own tool.
        self.name = name or mcp_tool_name(server.name, tool_name)  # type: ignore[misc]
        self.description = description or f"{tool_name} (from the MCP server {server.name})"  # type: ignore[misc]
        self._schema = schema

    def input_schema(self) -> dict[str, Any]:  # type: ignore[override]
        """The server's JSON schema, as the server sent it."""
        return self._schema

    def is_read_only(self, args: Any) -> bool:
        return False

    def title(self, args: Any) -> str:
        return f"{self.server_name}: {self.mcp_name}"

    def permission(self, args: Any, ctx: ToolContext) -> PermissionAsk:
        return PermissionAsk(
            title=f"{self.server_name}: {self.mcp_name}",
            content=json.dumps(_arguments(args), ensure_ascii=False, indent=2),
            rule=self.name,
        )

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        timeout = call_timeout_s()
        try:
            result = await self.server.call_tool(self.mcp_name, _arguments(args), timeout)
        except McpCallError as exc:
            return ToolOutput(content=str(exc), is_error=True, summary=_summary(str(exc)))
        except Exception as exc:  # a bug or an unexpected SDK error: still a result
            message = (
                f"MCP server {self.server_name!r}: {self.mcp_name} failed: "
                f"{type(exc).__name__}: {exc}"
            )
            return ToolOutput(content=message, is_error=True, summary=_summary(message))
        text = result_text(result)
        if result.is_error:
            text = text or f"MCP server {self.server_name!r}: {self.mcp_name} reported an error"
            return ToolOutput(content=text, is_error=True, summary=_summary(text))
        return ToolOutput(content=text or "(no output)", summary=_summary(text))


def _arguments(args: Any) -> dict[str, Any]:
    if isinstance(args, McpInput):
        return args.arguments()
    if isinstance(args, dict):
        return dict(args)
    if hasattr(args, "model_dump"):
        return dict(args.model_dump(mode="json"))
    return {}
