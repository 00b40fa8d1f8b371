"""The one map from failures to JSON-RPC error answers, for every dialect.

Domain errors (core/errors.py) map through `NATIVE` or `ACP` (ACP's spec names its own
codes for an unknown resource and for missing authentication; every other row is
shared). `answer_for` is the one place where any exception a handler raises becomes an
error answer; the connection (connection.py) calls it, for both dialects.

No pydantic here: a validation error is only read (`invalid_params`), never imported.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sema_rpc.core.errors import (
    ConfigError,
    DomainError,
    HistoryUnreadable,
    InvalidArgument,
    NoModelConfigured,
    SessionBusy,
    SessionNotFound,
)
from sema_rpc.plain_model import is_validation_error
from sema_rpc.protocol_core import ErrorCode, RpcError

log = logging.getLogger("sema_rpc.rpc.connection")

PARSE_ERROR = ErrorCode.PARSE_ERROR
INVALID_REQUEST = ErrorCode.INVALID_REQUEST
METHOD_NOT_FOUND = ErrorCode.METHOD_NOT_FOUND
INVALID_PARAMS = ErrorCode.INVALID_PARAMS
INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR
REQUEST_CANCELLED = ErrorCode.REQUEST_CANCELLED

ACP_AUTH_REQUIRED = -32000
"""ACP: the agent needs authentication (here: no model is configured)."""
ACP_RESOURCE_NOT_FOUND = -32002
"""ACP: an unknown session."""

Codes = dict[type[DomainError], int]

NATIVE: Codes = {
    InvalidArgument: ErrorCode.INVALID_PARAMS,
    SessionNotFound: ErrorCode.SESSION_NOT_FOUND,
    NoModelConfigured: ErrorCode.NO_MODEL_CONFIGURED,
    ConfigError: ErrorCode.CONFIG_ERROR,
    HistoryUnreadable: ErrorCode.HISTORY_UNREADABLE,
    SessionBusy: ErrorCode.SESSION_BUSY,
}
"""The native dialect's codes (protocol/README.md)."""

ACP: Codes = {
    **NATIVE,
    SessionNotFound: ACP_RESOURCE_NOT_FOUND,
    NoModelConfigured: ACP_AUTH_REQUIRED,
}
"""ACP's codes (protocol/acp.md): the native ones but where ACP names its own."""

CODES = NATIVE
"""The native table (its historical name)."""


def to_rpc_error(exc: DomainError, codes: Codes = NATIVE) -> RpcError:
    """The JSON-RPC error answer for a domain error (its nearest mapped class; an unmapped
    one is an internal error: a new domain error gets its row here)."""
    for cls in type(exc).__mro__:
        code = codes.get(cls)  # type: ignore[call-overload]
        if code is not None:
            return RpcError(code, exc.message, exc.data)
    return RpcError(ErrorCode.INTERNAL_ERROR, exc.message, exc.data)


def answer_for(exc: BaseException, method: str, codes: Codes = NATIVE) -> RpcError:
    """The error answer for whatever a request's handler raised: an RpcError as it is,
    a domain error through `codes`, anything else -32603 (logged: it is a bug)."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, DomainError):
        return to_rpc_error(exc, codes)
    log.error("%s failed", method, exc_info=exc)
    if not isinstance(exc, Exception):
        return RpcError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}")
    return RpcError(INTERNAL_ERROR, f"internal error in {method}: {type(exc).__name__}: {exc}")


ERROR_INPUT_CHARS = 500
"""The most of a refused value an error's `data` echoes back (an image's base64 can be
megabytes): longer values are replaced by their start and their size."""


def _capped_input(error: dict[str, Any]) -> dict[str, Any]:
    value = error.get("input")
    if value is None or isinstance(value, bool | int | float):
        return error
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > ERROR_INPUT_CHARS:
        error["input"] = f"{text[:200]}… ({len(text):,} characters)"
    return error


def invalid_params(exc: Any, what: str) -> RpcError:
    """-32602 for a pydantic `ValidationError` (`what`: e.g. "invalid params for X"), its
    errors in `data` (refused values capped)."""
    errors = json.loads(exc.json(include_url=False, include_context=False))
    return RpcError(
        INVALID_PARAMS,
        f"{what}: {exc.error_count()} error(s)",
        [_capped_input(e) for e in errors],
    )


def validate(model: Any, params: Any, name: str) -> Any:
    """A request's params as `model` (pydantic); `null` and `[]` are `{}` (Lua's JSON
    encoders write an empty table as `[]`). Invalid: -32602 (`invalid_params`). Valid
    params do not import pydantic (`is_validation_error`)."""
    try:
        return model.model_validate({} if params is None or params == [] else params)
    except ValueError as exc:
        if not is_validation_error(exc):
            raise
        raise invalid_params(exc, f"invalid params for {name}") from exc
