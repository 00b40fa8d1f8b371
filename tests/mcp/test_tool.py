"""McpTool without a server process: names, schema, input, consent, result text."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.mcp.tool import MAX_TOOL_NAME, McpTool, mcp_tool_name, result_text
from sema_rpc.tools.base import ToolContext

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}},
    "required": ["path"],
    "additionalProperties": False,
}


class _Dead:
    """A server whose connection is gone (what McpTool sees after a crash)."""

    name = "files"

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        raise RuntimeError("pipe closed")


def test_names_are_sanitised_and_bounded() -> None:
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("my server.v2", "read/file") == "mcp__my_server_v2__read_file"
    long_a = mcp_tool_name("s" * 40, "t" * 40 + "a")
    long_b = mcp_tool_name("s" * 40, "t" * 40 + "b")
    assert len(long_a) == MAX_TOOL_NAME and len(long_b) == MAX_TOOL_NAME
    assert long_a != long_b
    assert long_a == mcp_tool_name("s" * 40, "t" * 40 + "a")  # stable: rules keep matching


def test_schema_input_and_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "root"))
    tool = McpTool(_Dead(), "list dir", "Lists a directory.", SCHEMA)
    assert tool.name == "mcp__files__list_dir"
    assert tool.description == "Lists a directory."
    assert tool.input_schema() is SCHEMA
    assert tool.is_read_only(None) is False

    raw = {"path": "src", "depth": 2, "extra": None, "nested": {"a": [1]}}
    args = tool.Input.model_validate(raw)
    ctx = ToolContext(working_dir=tmp_path, session_id="s")
    ask = tool.permission(args, ctx)
    assert ask.title == "files: list dir"
    assert ask.rule == "mcp__files__list_dir"
    assert json.loads(ask.content) == raw

    store = RuleStore(tmp_path)
    policy = PermissionPolicy(mode="default", store=store, client_can_answer=True)
    assert policy.decide(ask) == "ask"
    rule = policy.rule_for_always(ask)
    assert rule == "mcp__files__list_dir"
    store.add(rule)
    assert policy.decide(ask) == "allow"
    other = McpTool(_Dead(), "delete", None, SCHEMA)
    assert policy.decide(other.permission(args, ctx)) == "ask"


async def test_a_broken_server_gives_an_error_result(tmp_path: Path) -> None:
    tool = McpTool(_Dead(), "list_dir", None, SCHEMA)
    out = await tool.call(tool.Input.model_validate({"path": "."}), ToolContext(tmp_path, "s"))
    assert out.is_error
    assert "'files'" in out.content and "pipe closed" in out.content


def test_result_text() -> None:
    png = base64.b64encode(b"x" * 2048).decode()
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            ImageContent(data=png, mime_type="image/png"),
            TextContent(text="second"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="body")),
            ResourceLink(uri="file:///b.txt", name="b.txt"),
        ]
    )
    text = result_text(result)
    assert text.splitlines() == [
        "first",
        "[image: image/png, 2.0 KB]",
        "second",
        "[resource file:///a.txt]",
        "body",
        "[resource link: b.txt file:///b.txt]",
    ]
    structured = CallToolResult(content=[], structured_content={"n": 1})
    assert json.loads(result_text(structured)) == {"n": 1}


def test_importing_the_package_does_not_import_mcp() -> None:
    code = (
        "import sys, sema_rpc.mcp, sema_rpc.mcp.manager, sema_rpc.mcp.tool, sema_rpc.mcp.config\n"
        "assert 'mcp' not in sys.modules and 'mcp_types' not in sys.modules, 'mcp imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
