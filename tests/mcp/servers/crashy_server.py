"""A tiny stdio MCP server for the tests.

Tools: `echo` (returns its text), `pid` (the server's process id), `crash` (the process
exits at once, without answering), `fail` (an is_error result), `picture` (an image),
`sleep` (for timeouts). `--exit-at-start` writes to stderr and exits before speaking MCP.
"""

from __future__ import annotations

import os
import sys

if "--exit-at-start" in sys.argv:
    print("crashy: refusing to start (as asked)", file=sys.stderr, flush=True)
    sys.exit(3)

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("crashy", instructions="A test server.")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """Exit the server process immediately."""
    print("crashy: crashing now", file=sys.stderr, flush=True)
    os._exit(1)


@server.tool()
def fail(reason: str) -> str:
    """Report a tool error."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def picture() -> Image:
    """A 4-byte 'PNG'."""
    return Image(data=b"\x89PNG", format="png")


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run()
