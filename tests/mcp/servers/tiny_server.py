"""A real stdio MCP server in plain Python, without the MCP SDK.

It starts in ~30 ms where a server built on the SDK takes ~1.4 s of CPU (the SDK imports
its client, server and every type). For the tests whose subject is whether, when and with
what environment a server runs and ends — trust, process lifetimes, what our own process
imports — not the MCP protocol, which crashy_server.py (the official SDK) and
mcp-server-time cover.

Speaks JSON-RPC 2.0 over newline-delimited stdio as the MCP stdio transport does: answers
`initialize` with the protocol version it was offered, `ping`, `tools/list` and
`tools/call` for `echo` (returns its text) and `pid` (the server's process id); any other
request gets -32601, notifications are read and ignored. Ends at end of input.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "pid",
        "description": "The server's process id.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "echo":
        text = str(arguments.get("text", ""))
    elif name == "pid":
        text = str(os.getpid())
    else:
        return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
    return {"content": [{"type": "text", "text": text}], "isError": False}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request, or None for a method this server does not have."""
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "tiny", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(params.get("name", ""), params.get("arguments") or {})
    return None


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or an answer to a request this server never sends
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"Method not found: {message['method']}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
