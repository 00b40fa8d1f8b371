"""The parts of the wire protocol that need no pydantic: the version and the error codes.

Re-exported by `sema_rpc.protocol` (import them from there); kept apart so the server
can answer `initialize` before the protocol's models are created.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = 1


# --------------------------------------------------------------------------- errors


class ErrorCode:
    """JSON-RPC error codes. Standard codes first, then sema-rpc's application codes."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    # Application codes (documented in protocol/README.md).
    UNAUTHORIZED = -32001
    SESSION_NOT_FOUND = -32010
    NO_MODEL_CONFIGURED = -32012
    CONFIG_ERROR = -32014
    HISTORY_UNREADABLE = -32015
    SESSION_BUSY = -32016


class RpcError(Exception):
    """An error answer to a client request, raised by the wire layer (rpc/); the engine
    raises core.errors instead, which rpc/errors.py maps to these."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
