"""What the ACP dialect keeps per session, and what its helpers need of the server.

`asks.py`, `fs.py` and `terminal.py` reach the server through `AcpPeer`
(`server.py`'s `AcpServer` is the one implementation), so that none of them imports the
server that imports them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sema_rpc.acp.wire_plain import AcpClientCapabilities
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.loop.control import PromptCancel


@dataclass
class ToolCallState:
    name: str
    output: str = ""
    """The output so far (its tail), for ACP content that replaces, not appends."""
    unsent: bool = False
    terminal_id: str | None = None
    """The editor's terminal the call runs in (its content from then on)."""


@dataclass
class AcpSession:
    """What the translation keeps per session."""

    session_id: str
    cwd: Path
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    prompts: dict[Any, PromptCancel] = field(default_factory=dict)
    """Open `session/prompt` requests by id (queued ones too)."""
    rejected_rules: set[str] = field(default_factory=set)
    """Rules answered `reject_always`: refused without asking for the session's life."""
    steered: list[asyncio.Task[Any]] = field(default_factory=list)
    """`_session/steering` inputs injected into the running prompt: that prompt answers
    once they are answered too (one turn, as the client sees it, settles once)."""


class AcpPeer(Protocol):
    """The server as the dialect's helpers use it."""

    @property
    def capabilities(self) -> AcpClientCapabilities: ...

    @property
    def engine(self) -> SemaEngine: ...

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A request to the client; cancelling the caller cancels it on the wire."""
        ...

    def terminal_started(self, session_id: str, tool_call_id: str, terminal_id: str) -> None: ...
