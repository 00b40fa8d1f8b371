"""The process, as every wire dialect shares it: the engine and the way its events reach
clients.

Three objects, three lifetimes:

- `Host` (one per process) owns the engine (`SemaEngine`, created on first use) and so
  every session; it is the engine's `ClientBridge`. A session's events and requests go
  to the clients through it, to the fronts attached to it (`attach`).
- `Connection` (connection.py, one per client stream) speaks JSON-RPC to one peer.
- A dialect front (rpc/server.py `SemaServer`, acp/server.py `AcpServer`; one per
  connection) holds what is that client's: its capabilities, its open prompts, its
  translation state. It is a `ClientBridge` too: the host hands it the events it is to
  deliver.

Today one front is attached (stdio serves one client). `notify` already goes to every
attached front and `ask` to the first that can answer, so a listener serving several
clients attaches one front per connection; which front sees which session is its
front's business (ACP's sends only the sessions its client opened).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.events import ClientBridge
    from sema_rpc.protocol import EventParams, WireModel

log = logging.getLogger(__name__)


class Host:
    """The engine and its clients (see the module docstring)."""

    shared = False
    """Sessions shared by several connections, each following some (shared.py)."""

    def __init__(self, setup: Callable[[SemaEngine], None] | None = None):
        self._setup = setup
        """Configures the engine once created (what the process was started with)."""
        self._engine: SemaEngine | None = None
        self.fronts: list[ClientBridge] = []

    # ------------------------------------------------------------------ the engine, lazily

    @property
    def engine(self) -> SemaEngine:
        """The engine, imported and created on first use (not before `initialize`)."""
        engine = self._engine
        if engine is None:
            from sema_rpc.engine.engine import SemaEngine

            engine = SemaEngine(self)
            if self._setup is not None:
                self._setup(engine)
            self._engine = engine
        return engine

    @property
    def engine_created(self) -> SemaEngine | None:
        """The engine if it was created (never creates it)."""
        return self._engine

    def attach(self, front: ClientBridge) -> None:
        """`front`'s client receives the events from now on."""
        if front not in self.fronts:
            self.fronts.append(front)

    def detach(self, front: ClientBridge) -> None:
        if front in self.fronts:
            self.fronts.remove(front)

    # ------------------------------------------------------------------ ClientBridge

    def notify(self, event: EventParams) -> None:
        fronts = self.fronts
        if len(fronts) == 1:  # the hot path (every text chunk): no loop, no copy
            fronts[0].notify(event)
            return
        for front in list(fronts):
            front.notify(event)

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        """The first answer of the attached fronts, in order (None: no client could)."""
        for front in list(self.fronts):
            answer = await front.ask(event, result_type)
            if answer is not None:
                return answer
        return None

    def tool_running(self, session_id: str, tool_call_id: str) -> None:
        """EventBus.tool_running: to the fronts that show it (ACP)."""
        for front in list(self.fronts):
            hook = getattr(front, "tool_running", None)
            if hook is not None:
                hook(session_id, tool_call_id)

    # ------------------------------------------------------------------ the end

    async def shutdown(self, grace_s: float = 5.0) -> None:
        """Running turns interrupted and settled (within `grace_s`), MCP servers stopped."""
        if self._engine is not None:
            await self._engine.shutdown(grace_s)

    async def aclose(self) -> None:
        """The providers' HTTP clients closed (after `shutdown`)."""
        registry = sys.modules.get("sema_rpc.providers.registry")
        if registry is not None:  # not imported: no provider was ever made
            await registry.aclose_all()


__all__ = ["Host"]
