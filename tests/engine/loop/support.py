"""Probe tools for the loop tests: real `Tool`s whose calls record when they start and
end, so a test can see concurrency, order and interrupts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from sema_rpc.core.messages import ToolUseBlock
from sema_rpc.engine.api import ConversationManager
from sema_rpc.protocol import EventParams
from sema_rpc.providers.scripted import ScriptedProvider, ScriptedReply
from sema_rpc.tools.base import Tool, ToolContext, ToolOutput
from sema_rpc.tools.input import ToolInput
from sema_rpc.tools.registry import builtin_tools
from tests.engine._bridge import RecordingBridge


class HookBridge(RecordingBridge):
    """Keeps every event and calls `hook` with each (a client reacting as it reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: Callable[[EventParams], None] | None = None

    def notify(self, event: EventParams) -> None:
        super().notify(event)
        if self.hook is not None:
            self.hook(event)


class ProbeInput(ToolInput):
    label: str
    delay: float = 0.0
    interrupt: bool = False
    """Interrupt the turn as the call finishes its work."""
    block: bool = False
    """Wait until cancelled (an interrupt during the tool: checkpoint 4)."""
    steer: str | None = None
    """Steer the running turn with this text while the call runs."""


class Probe(Tool):
    description: ClassVar[str] = "test probe"
    Input = ProbeInput

    def __init__(self, name: str, read_only: bool, log: list[str]) -> None:
        self.name = name  # type: ignore[misc]
        self.read_only = read_only  # type: ignore[misc]
        self.log = log
        self.manager: ConversationManager | None = None
        self.started = asyncio.Event()

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        self.log.append(f"start {args.label}")
        self.started.set()
        if args.steer and self.manager is not None:
            self.manager.steer(args.steer)
        if args.block:
            await asyncio.Event().wait()
        await asyncio.sleep(args.delay)
        if args.interrupt and self.manager is not None:
            self.manager.interrupt()
        self.log.append(f"end {args.label}")
        return ToolOutput(content=f"done {args.label}", summary=args.label)


def call(id_: str, name: str, **input: Any) -> ToolUseBlock:
    return ToolUseBlock(id=id_, name=name, input=input)


def manager(
    ws: Path, replies: list[ScriptedReply], **kwargs: Any
) -> tuple[ConversationManager, ScriptedProvider, HookBridge, list[str]]:
    """A manager over the built-in tools plus two probes (`Look`, read-only; `Poke`, not)."""
    log: list[str] = []
    look, poke = Probe("Look", True, log), Probe("Poke", False, log)
    provider = ScriptedProvider(replies)
    bridge = HookBridge()
    kwargs.setdefault("permission_mode", "bypass")
    chat = ConversationManager(
        provider=provider,
        model="claude-sonnet-4-5",
        workspace=ws,
        tools=[*builtin_tools(), look, poke],
        bridge=bridge,
        client_can_answer=False,
        **kwargs,
    )
    look.manager = poke.manager = chat
    return chat, provider, bridge, log
