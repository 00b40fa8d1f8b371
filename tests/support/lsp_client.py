"""A pytest-lsp / pygls client for sema-rpc's Content-Length framing.

pygls's client defaults are made for LSP; for a plain JSON-RPC server the converter must
keep params as dicts, the child's stderr must be drained (or it blocks after ~64 KiB),
and stop() must close the child's stdin so it can exit.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cattrs
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.client import JsonRPCClient
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pytest_lsp import ClientServerConfig


def dict_keeping_converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    converter.register_structure_hook(
        ResponseErrorMessage,
        lambda obj, _cls: ResponseErrorMessage(
            id=obj.get("id"), error=ResponseError(**obj["error"]), jsonrpc=obj.get("jsonrpc", "2.0")
        ),
    )
    return converter


@dataclass
class RecordedResponse:
    """One response as it arrived (also one pygls had no pending request for)."""

    id: Any
    result: Any
    error: Any
    at: float
    """`time.monotonic()` on arrival."""


class RecordingProtocol(JsonRPCProtocol):
    def _handle_notification(self, method_name: str, params: Any) -> None:
        self._server.notifications.append((method_name, params))  # type: ignore[attr-defined]
        self._server.changed.set()  # type: ignore[attr-defined]

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self._server.responses.append(  # type: ignore[attr-defined]
            RecordedResponse(msg_id, result, error, time.monotonic())
        )
        super()._handle_response(msg_id, result, error)


class SemaLspClient(JsonRPCClient):
    def __init__(self) -> None:
        super().__init__(protocol_cls=RecordingProtocol, converter_factory=dict_keeping_converter)
        self.notifications: list[tuple[str, Any]] = []
        self.responses: list[RecordedResponse] = []
        """Every response the server sent, in arrival order (duplicates included)."""
        self.changed = asyncio.Event()
        self.stderr = bytearray()

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        await super().start_io(cmd, *args, **kwargs)
        assert self._server is not None and self._server.stderr is not None
        stderr = self._server.stderr

        async def drain() -> None:
            while chunk := await stderr.read(65536):
                self.stderr += chunk

        self._async_tasks.append(asyncio.create_task(drain()))

    async def stop(self) -> None:
        if self._server is not None and self._server.stdin is not None:
            self._server.stdin.close()
        await super().stop()

    async def call(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), 20)

    async def wait_for(
        self,
        method: str,
        timeout: float = 20,
        predicate: Callable[[Any], bool] = lambda _params: True,
    ) -> Any:
        async def scan() -> Any:
            while True:
                for name, params in self.notifications:
                    if name == method and predicate(params):
                        return params
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(scan(), timeout)

    def of(self, method: str, session_id: str | None = None) -> list[Any]:
        """The params of every `method` notification (of one session), in arrival order."""
        return [
            params
            for name, params in self.notifications
            if name == method and (session_id is None or params.get("sessionId") == session_id)
        ]


def config(env: dict[str, str]) -> ClientServerConfig:
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "sema_rpc"],
        client_factory=SemaLspClient,
        server_env={**os.environ, **env},
    )
