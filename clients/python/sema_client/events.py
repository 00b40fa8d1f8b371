"""Notifications as typed events.

A known notification becomes the protocol model for its method (`TextChunkParams`,
`ToolExecutionStartParams`, … from `sema_rpc.protocol.NOTIFICATIONS`), validated from the
wire params. A method this client does not know — or params that do not validate against
its model (a newer server) — becomes a generic `Notification` with `.method` and
`.params`, so a client never breaks on a server that sends more.

Both kinds answer `.event` (the method name) and `.session_id`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, TypeAlias

from sema_rpc.protocol import NOTIFICATIONS, EventParams

__all__ = ["Event", "Notification", "event_method", "parse_notification"]

log = logging.getLogger("sema_client")


@dataclass(frozen=True)
class Notification:
    """A notification without a typed model: the method and the raw params."""

    method: str
    params: Any

    @property
    def event(self) -> str:
        return self.method

    @property
    def session_id(self) -> str | None:
        if isinstance(self.params, dict):
            value = self.params.get("sessionId")
            return value if isinstance(value, str) else None
        return None


Event: TypeAlias = EventParams | Notification
"""What a notification iterator yields: a protocol model, or a generic `Notification`."""


def parse_notification(method: str, params: Any) -> Event:
    """The typed event for one notification (a generic `Notification` when unknown)."""
    model = NOTIFICATIONS.get(method)
    if model is not None and isinstance(params, dict):
        try:
            return model.model_validate(params)
        except ValueError as exc:  # pydantic's ValidationError: the body only validates
            log.debug("%s params do not validate (%s); passing them on untyped", method, exc)
    return Notification(method, params if params is not None else {})


def event_method(event: Event) -> str:
    """The method name of an event, typed or not."""
    return event.event
