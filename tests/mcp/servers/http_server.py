"""A tiny remote MCP server for the tests: `python http_server.py {http|sse} PORT KEY`.

Serves streamable HTTP at `/mcp` or SSE at `/sse` on 127.0.0.1:PORT. Every request must
carry the header `X-Key: KEY` (401 otherwise), so a test sees the client's headers
arrive. Tool: `shout(text)` → the text upper-cased.
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.responses import PlainTextResponse

server = MCPServer("remote", instructions="A remote test server.")


@server.tool()
def shout(text: str) -> str:
    """Return the text upper-cased."""
    return text.upper()


def main() -> None:
    transport, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"x-key") != key.encode():
                await PlainTextResponse("missing X-Key", status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
