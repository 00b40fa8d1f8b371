"""The JSON-RPC connection is not tied to stdio: bytes in (`Connection.feed`), framed bytes
out (`FrameWriter.over` a transport). A native front served over a real Unix socket
answers as it does over pipes, and its engine is the host's, not the connection's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sema_rpc.rpc.framing import FrameWriter
from sema_rpc.rpc.host import Host
from sema_rpc.rpc.server import SemaServer


@pytest.fixture
def env(server_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in server_env.items():
        monkeypatch.setenv(key, value)
    return server_env


async def test_a_native_front_serves_a_unix_socket(env: dict[str, str], tmp_path: Path) -> None:
    host = Host()
    fronts: list[SemaServer] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        front = SemaServer(FrameWriter.over(writer.transport, jsonl=True), host=host)
        fronts.append(front)
        while chunk := await reader.read(1 << 16):
            front.conn.feed(chunk)
        front.conn.eof()
        await front.stop_turns()
        writer.close()

    path = str(tmp_path / "s.sock")
    server = await asyncio.start_unix_server(accepted, path)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
            b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'
            b'{"jsonrpc":"2.0","id":3,"method":"no/such"}\n'
        )
        answers = [json.loads(await asyncio.wait_for(reader.readline(), 30)) for _ in range(3)]
        by_id = {a["id"]: a for a in answers}
        assert by_id[1]["result"]["serverInfo"]["name"] == "sema-rpc"
        assert by_id[2]["result"] == {"sessions": []}
        assert by_id[3]["error"]["code"] == -32601
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
    [front] = fronts
    assert front.host is host and host.engine_created is not None  # session/list made it
    assert host.fronts == [front]
