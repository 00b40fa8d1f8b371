"""The client side of an engine's EventBus, for tests below the wire."""

from __future__ import annotations

from sema_rpc.protocol import EventParams, WireModel


class RecordingBridge:
    """Keeps every notification; answers no server→client request (no capability)."""

    def __init__(self) -> None:
        self.events: list[EventParams] = []

    def notify(self, event: EventParams) -> None:
        self.events.append(event)

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        return None
