"""The one map from domain errors (core/errors.py) to JSON-RPC error codes."""

from __future__ import annotations

from sema_rpc.core.errors import (
    ConfigError,
    DomainError,
    HistoryUnreadable,
    InvalidArgument,
    NoModelConfigured,
    SessionBusy,
    SessionNotFound,
)
from sema_rpc.protocol_core import ErrorCode, RpcError

CODES: dict[type[DomainError], int] = {
    InvalidArgument: ErrorCode.INVALID_PARAMS,
    SessionNotFound: ErrorCode.SESSION_NOT_FOUND,
    NoModelConfigured: ErrorCode.NO_MODEL_CONFIGURED,
    ConfigError: ErrorCode.CONFIG_ERROR,
    HistoryUnreadable: ErrorCode.HISTORY_UNREADABLE,
    SessionBusy: ErrorCode.SESSION_BUSY,
}


def to_rpc_error(exc: DomainError) -> RpcError:
    """The JSON-RPC error answer for a domain error (its nearest mapped class; an unmapped
    one is an internal error: a new domain error gets its row here)."""
    for cls in type(exc).__mro__:
        code = CODES.get(cls)  # type: ignore[call-overload]
        if code is not None:
            return RpcError(code, exc.message, exc.data)
    return RpcError(ErrorCode.INTERNAL_ERROR, exc.message, exc.data)
