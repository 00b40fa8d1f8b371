"""The per-session event bus.

Events are the protocol's `*Params` models (sema_rpc/protocol.py, in their plain form); the bus stamps the
envelope (sessionId, agentId, seq) and hands each event to the client bridge (the rpc
layer forwards events 1:1 as notifications).

Three events need an answer from the client (permission, question, plan exit). Those
go through `ask()`, which returns None when no client can answer: the caller decides
what that means (for permissions, the session's permission mode).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from sema_rpc.protocol import EventParams, WireModel

_ENVELOPE = ("session_id", "agent_id", "seq")

E = TypeVar("E", bound=EventParams)

_new = object.__new__
_set = object.__setattr__


def delta_events(cls: type[E], **fields: Any) -> Callable[[str], E]:
    """The events of one streamed message (`cls(delta=…, **fields)`, e.g. a response's
    text chunks), which differ only in `delta`. The first is checked as any event is;
    each later one is built as a copy of it with its own delta, without checking again:
    the other fields hold the values already checked, and a `str` delta is valid as it
    is (anything else still goes through the check). A streamed answer is thousands of
    these."""
    template: dict[str, Any] | None = None
    fields_set: frozenset[str] = frozenset()

    def make(delta: str) -> E:
        nonlocal template, fields_set
        if template is None or type(delta) is not str:
            event = cls(delta=delta, **fields)  # type: ignore[call-arg]
            if template is None:
                template = dict(event.__dict__)  # before the bus stamps the envelope
                fields_set = frozenset(event.model_fields_set)
            return event
        event = _new(cls)
        values = template.copy()
        values["delta"] = delta
        _set(event, "__dict__", values)
        _set(event, "_plain_set", set(fields_set))
        return event

    return make


class ClientBridge(Protocol):
    """How the engine reaches the client.

    Implemented by the process's host (`rpc/host.py`), which hands each event to the
    dialect fronts attached to it (`rpc/server.py`'s `SemaServer`, `acp/server.py`'s
    `AcpServer`: bridges too), and by the in-process API (`engine/api.py`), which `run`
    drives through the native server."""

    def notify(self, event: EventParams) -> None: ...

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        """Send a server→client request and await the validated answer.

        Returns None when the client did not declare the capability for this request.
        Cancelling the awaiting task cancels the request on the wire.
        """
        ...


class EventBus:
    __slots__ = ("_bridge", "asking", "closed", "seq", "session_id")

    def __init__(self, session_id: str, bridge: ClientBridge):
        self.session_id = session_id
        self.seq = 0
        self._bridge = bridge
        self.asking = 0
        """Requests to the client awaiting their answer (consent, a question, plan exit)."""
        self.closed = False
        """The session is closed: nothing more of it reaches the client (lifecycle.py)."""

    def _stamp(self, event: EventParams, agent_id: str) -> None:
        # What the model's `__setattr__` does (the value into `__dict__`, the name into
        # the fields set), without its dispatch: every streamed delta is stamped, three
        # fields each.
        self.seq += 1
        values = event.__dict__
        values["session_id"] = self.session_id
        values["agent_id"] = agent_id
        values["seq"] = self.seq
        event.model_fields_set.update(_ENVELOPE)

    def emit(self, event: EventParams, agent_id: str = "main") -> None:
        if self.closed:
            return
        self._stamp(event, agent_id)
        self._bridge.notify(event)

    def ask(
        self, event: EventParams, result_type: type[WireModel], agent_id: str = "main"
    ) -> Awaitable[Any]:
        return self._ask(event, result_type, agent_id)

    async def _ask(self, event: EventParams, result_type: type[WireModel], agent_id: str) -> Any:
        if self.closed:
            return None
        self._stamp(event, agent_id)
        self.asking += 1
        try:
            return await self._bridge.ask(event, result_type)
        finally:
            self.asking -= 1

    def tool_running(self, tool_call_id: str) -> None:
        """A tool call passed its checks and consent and runs now. Not an event of the
        native wire (its clients learn it from the permission answer they gave); a
        bridge that shows it (ACP's `pending` → `in_progress`) defines `tool_running`."""
        hook = getattr(self._bridge, "tool_running", None)
        if hook is not None:
            hook(self.session_id, tool_call_id)
