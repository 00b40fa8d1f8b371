"""Exceptions raised by the client."""

from __future__ import annotations

from typing import Any

__all__ = ["SemaClientError", "SemaConnectionError", "SemaRpcError"]


class SemaClientError(Exception):
    """Base class of every error the client raises."""


class SemaRpcError(SemaClientError):
    """The server answered a request with a JSON-RPC error.

    `code` is the JSON-RPC error code (see `sema_rpc.protocol.ErrorCode`), `data` the
    optional `data` member (e.g. pydantic's error list for -32602).
    """

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None):
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC `error` object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class SemaConnectionError(SemaClientError):
    """The connection to the server is gone (it exited, closed stdout, or was closed).

    `returncode` is the server's exit code when known; `stderr` the last bytes it wrote
    to stderr (decoded), which usually say why.
    """

    def __init__(self, message: str, *, returncode: int | None = None, stderr: str = ""):
        full = message
        if stderr.strip():
            full += "\n--- server stderr (tail) ---\n" + stderr.rstrip()
        super().__init__(full)
        self.returncode = returncode
        self.stderr = stderr
