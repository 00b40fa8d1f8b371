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

from sema_rpc.acp.advert import initialize_capabilities_plain, initialize_result
from sema_rpc.rpc import errors
from sema_rpc.rpc.connection import Connection
from sema_rpc.rpc.framing import FrameWriter, read_stream

if TYPE_CHECKING:
    from sema_rpc.acp.server import AcpServer
    from sema_rpc.rpc.frames import First

log = logging.getLogger("sema_rpc.acp.server")


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
            caps = self.take_initialize(params)
            if caps is not None:
                return initialize_result(caps)
        return self.load().on_request(msg_id, method, params)

    def take_initialize(self, params: Any) -> dict[str, Any] | None:
        """A plainly valid `initialize` taken: the client's capabilities (None for any
        other: nothing taken); the server loads at the loop's next turn. Also for one
        answered before the loop (frames.read_first, `serve_acp`'s `first`)."""
        caps = initialize_capabilities_plain(params)
        if caps is not None:
            self.capabilities = caps
            asyncio.get_running_loop().call_soon(self.load)
        return caps

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


async def serve_acp(
    stdin: BinaryIO,
    stdout: BinaryIO,
    stop: asyncio.Event | None = None,
    first: First | None = None,
) -> int:
    """Serve one ACP client until end of input or `stop` (a stop signal). Returns the
    process exit code. `first`: what was read from `stdin` before the loop (cli.py,
    frames.read_first): an `initialize` answered then is taken as if answered here; the
    bytes after it are read first."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=True)
    await writer.start(loop)
    front = _Front(writer)
    if first is not None and first.answered:
        front.take_initialize(first.params)
    head, at_eof = (first.rest, first.eof) if first is not None else (b"", False)
    reading = asyncio.ensure_future(
        read_stream(stdin, front.conn.feed, loop, head=head, at_eof=at_eof)
    )
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
