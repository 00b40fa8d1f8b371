"""`sema-rpc --acp` up to its first answer: `initialize` answered without pydantic.

An editor opening a chat waits for `initialize`. A plainly valid one (the common shapes
only, see `initialize_capabilities_plain`) is answered here, from plain dicts, before
pydantic, the protocol's models and the ACP server (server.py) are loaded; they load at
the loop's next turn, and every message read meanwhile is handed to the server in order.
Anything else (`initialize` with a shape this does not vouch for, any other first
message) loads the server first, which validates and answers it as usual. What the
client sees is the same either way (tests/e2e/test_acp.py).

Kept free of heavy imports: pydantic, `sema_rpc.protocol` and the engine are imported by
server.py, never here (tests/e2e/test_startup_imports.py).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

from sema_rpc.acp.advert import initialize_result
from sema_rpc.rpc.framing import FrameWriter, JsonlDecoder, read_stream
from sema_rpc.rpc.server import _dumps, _loads, _valid_id

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
    """Reads for the server until it is loaded (see the module docstring)."""

    def __init__(self, writer: FrameWriter):
        self.writer = writer
        self.server: AcpServer | None = None
        self.pending: list[bytes] = []
        self.capabilities: dict[str, Any] | None = None

    def on_body(self, body: bytes) -> None:
        if self.server is not None:
            self.server.on_body(body)
            return
        if not self.pending and self.capabilities is None and self._answer_initialize(body):
            asyncio.get_running_loop().call_soon(self.load)
            return
        self.pending.append(body)
        self.load()

    def on_frame_error(self, message: str) -> None:
        self.load().on_frame_error(message)

    def _answer_initialize(self, body: bytes) -> bool:
        try:
            obj = _loads(body)
        except (ValueError, RecursionError):
            return False
        if (
            type(obj) is not dict
            or obj.get("jsonrpc") != "2.0"
            or obj.get("method") != "initialize"
            or "id" not in obj
            or not _valid_id(obj["id"])
        ):
            return False
        caps = initialize_capabilities_plain(obj.get("params"))
        if caps is None:
            return False
        self.capabilities = caps
        self.writer.write(
            _dumps({"jsonrpc": "2.0", "id": obj["id"], "result": initialize_result(caps)})
        )
        return True

    def load(self) -> AcpServer:
        """The server, loaded and created on first call; what was read meanwhile is
        handed to it in order."""
        if self.server is None:
            from sema_rpc.acp.server import AcpServer
            from sema_rpc.acp.wire import AcpClientCapabilities

            server = AcpServer(self.writer)
            if self.capabilities is not None:
                server.capabilities = AcpClientCapabilities.model_validate(self.capabilities)
            self.server = server
            pending, self.pending = self.pending, []
            for body in pending:
                server.on_body(body)
        return self.server


async def serve_acp(stdin: BinaryIO, stdout: BinaryIO, stop: asyncio.Event | None = None) -> int:
    """Serve one ACP client until end of input or `stop` (a stop signal). Returns the
    process exit code."""
    loop = asyncio.get_running_loop()
    writer = FrameWriter(stdout, jsonl=True)
    await writer.start(loop)
    front = _Front(writer)
    decoder = JsonlDecoder(front.on_body, front.on_frame_error)
    reading = asyncio.ensure_future(read_stream(stdin, decoder.feed, loop))
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        decoder.eof()
    reading.cancel()
    stopping.cancel()
    log.info("end of input or a stop signal: shutting down")
    await front.load().stop()
    registry = sys.modules.get("sema_rpc.providers.registry")
    if registry is not None:
        await registry.aclose_all()
    await writer.drain()
    return 0
