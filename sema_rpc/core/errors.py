"""Domain errors: what the engine refuses, in its own terms.

The engine and the layers below raise these; they know nothing of JSON-RPC. Each wire
dialect maps them to its own error answers in one table (for JSON-RPC: rpc/errors.py).
`data` is structured detail a client may act on (e.g. the session id), or None.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


class DomainError(Exception):
    """A request the engine refuses; the message is for the user."""

    def __init__(self, message: str, data: Any = None):
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidArgument(DomainError):
    """A parameter is unusable (a relative path, an unknown model name, ...)."""


class SessionNotFound(DomainError):
    """No live session has this id (never created, or disposed)."""

    def __init__(self, session_id: str):
        super().__init__(f"unknown session: {session_id}", {"sessionId": session_id})
        self.session_id = session_id


class SessionBusy(DomainError):
    """The session runs a turn, and the request needs it idle (e.g. deleting it)."""

    def __init__(self, message: str, session_id: str):
        super().__init__(message, {"sessionId": session_id})
        self.session_id = session_id


class NoModelConfigured(DomainError):
    """The session has no model, and the request needs one."""


class ConfigError(DomainError):
    """The configuration is unusable; the message says what and where, for the user."""


class UnknownModel(ConfigError):
    """A model spec names no profile and no usable `provider/model-id`. A ConfigError
    where the spec comes from configuration; the caller that took it from a request may
    treat it as a bad argument instead."""


class HistoryUnreadable(DomainError):
    """The session's history file exists but cannot be read."""

    def __init__(self, message: str, session_id: str):
        super().__init__(message, {"sessionId": session_id})
        self.session_id = session_id


def working_dir(raw: str, *, must_exist: bool = True) -> Path:
    """A client's `workingDir`, `~` expanded: absolute (a client resolves a relative one
    against its own directory), and an existing directory when `must_exist`. The one check
    every method taking a `workingDir` uses. Raises InvalidArgument."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise InvalidArgument(
            f"workingDir must be an absolute path (a client resolves a relative one "
            f"against its own directory): {raw}"
        )
    if must_exist and not path.is_dir():
        raise InvalidArgument(f"workingDir is not a directory: {raw}")
    return path
