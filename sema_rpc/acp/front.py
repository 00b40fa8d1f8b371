"""`sema-rpc --acp` up to its first answer: `initialize` answered without pydantic.

An editor opening a chat waits for `initialize`. A plainly valid one (the common shapes
only, see `initialize_capabilities_plain`) is answered here, from plain dicts, before
pydantic, the protocol's models and the ACP server (server.py) are loaded; they load at
the loop's next turn, and every message read meanwhile is handed to the server in order
(the connection, rpc/connection.py, reads for both: this front steps aside once the
server is loaded).
Anything else (`initialize` with a shape this does not vouch for, any other first
message) loads the server first, which validates and answers it as usual. What the
client sees is the same either way (tests/e2e/test_acp.py).

Kept free of heavy imports: pydantic, `sema_rpc.protocol` and the engine are imported by
server.py, never here (tests/e2e/test_startup_imports.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, BinaryIO

from sema_rpc.acp.advert import initialize_result
from sema_rpc.rpc import errors
from sema_rpc.rpc.connection import Connection
from sema_rpc.rpc.framing import FrameWriter, read_stream

if TYPE_CHECKING:
    from sema_rpc.acp.server import AcpServer

log = logging.getLogger("sema_rpc.acp.server")

_FS_KEYS = frozenset({"readTextFile", "writeTextFile"})


def initialize_capabilities_plain(params: Any) -> dict[str, Any] | None:
    """`initialize`'s params checked without pydantic, for the plainly valid shapes only
    (every key a wire name `InitializeRequest` reads, every value of its exact type): the
    client's capabilities as given (wire names), for `AcpClientCapabilities`. None for
    anything else, which the server's models then validate (and refuse with their usual
    -32602 data, or accept)."""
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientCapabilities",
        "clientInfo",
        "_meta",
    }:
        return None
    if type(params.get("protocolVersion")) is not int:
        return None
    for key in ("clientInfo", "_meta"):
        if params.get(key) is not None and type(params[key]) is not dict:
            return None
    caps = params.get("clientCapabilities", {})
    if type(caps) is not dict or not caps.keys() <= {
        "fs",
        "terminal",
        "elicitation",
        "auth",
        "_meta",
    }:
        return None
    for key in ("auth", "_meta"):
        if caps.get(key) is not None and type(caps[key]) is not dict:
            return None
    fs = caps.get("fs", {})
    if type(fs) is not dict or not fs.keys() <= _FS_KEYS:
        return None
    if any(type(value) is not bool for value in fs.values()):
        return None
    if "terminal" in caps and type(caps["terminal"]) is not bool:
        return None
    if caps.get("elicitation") is not None and type(caps["elicitation"]) is not dict:
        return None
    return caps


class _Front:
    """The connection's front until the server is loaded (see the module docstring)."""

    def __init__(self, writer: FrameWriter):
        self.writer = writer
        self.conn = Connection(
            writer, jsonl=True, codes=errors.ACP, cancel=("$/cancel_request", "requestId")
        )
        self.conn.front = self
        self.on_body = self.conn.on_body
        self.server: AcpServer | None = None
        self.capabilities: dict[str, Any] | None = None

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        if self.server is None and self.capabilities is None and method == "initialize":
            caps = initialize_capabilities_plain(params)
            if caps is not None:
                self.capabilities = caps
                asyncio.get_running_loop().call_soon(self.load)
                return initialize_result(caps)
        return self.load().on_request(msg_id, method, params)

    def on_notification(self, method: str, params: Any) -> None:
        self.load().on_notification(method, params)

    def on_cancel(self, target: Any) -> bool:
        return self.load().on_cancel(target)

    def load(self) -> AcpServer:
        """The server, loaded and created on first call; from then on the connection's
        front."""
        if self.server is None:
            from sema_rpc.acp.server import AcpServer
            from sema_rpc.acp.wire_plain import AcpClientCapabilities

            server = AcpServer(self.writer, conn=self.conn)
            if self.capabilities is not None:
                server.capabilities = AcpClientCapabilities.model_validate(self.capabilities)
            self.server = server
        return self.server


async def serve_acp(stdin: BinaryIO, stdout: BinaryIO, stop: asyncio.Event | None = None) -> int:
    """Serve one ACP client until end of input or `stop` (a stop signal). Returns the
    process exit code."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=True)
    await writer.start(loop)
    front = _Front(writer)
    reading = asyncio.ensure_future(read_stream(stdin, front.conn.feed, loop))
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        front.conn.eof()
    reading.cancel()
    stopping.cancel()
    log.info("end of input or a stop signal: shutting down")
    server = front.load()
    await server.stop()
    await server.host.aclose()
    await writer.drain()
    return 0
