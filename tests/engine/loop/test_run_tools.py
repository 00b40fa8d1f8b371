"""The tool runner's checkpoints, at the batch level: an interrupt that lands between two
calls of a serial batch (checkpoint 3) stops the rest of the batch before it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from sema_rpc.core.messages import ToolUseBlock
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, TurnControl
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.tools.base import Tool, ToolContext, ToolOutput
from sema_rpc.tools.input import ToolInput
from sema_rpc.tools.write import WriteTool
from tests.engine._bridge import RecordingBridge


class _NoInput(ToolInput):
    pass


class InterruptedWhileFinishing(Tool):
    """A call that completes just as the user interrupts (the interrupt lands after the
    tool's work is done, so nothing cancels it)."""

    name: ClassVar[str] = "Finish"
    description: ClassVar[str] = "test tool"
    Input = _NoInput

    def __init__(self, control: TurnControl):
        self.control = control

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        self.control.interrupt("user")
        return ToolOutput(content="finished", summary="finished")


async def test_interrupt_between_calls_is_checkpoint_3(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "root"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    control = TurnControl()
    recorder = RecordingBridge()
    runner = ToolRunner(
        tools={"Finish": InterruptedWhileFinishing(control), "Write": WriteTool()},
        context=ToolContext(working_dir=workspace, session_id="s"),
        policy=PermissionPolicy("bypass", RuleStore(workspace), client_can_answer=False),
        bus=EventBus("s", recorder),
        control=control,
    )
    calls = [
        ToolUseBlock(id="a", name="Finish"),
        ToolUseBlock(id="b", name="Write", input={"file_path": "x.txt", "content": "x"}),
    ]
    first, second = await runner.run_batch(calls)
    assert first.content == "finished" and not first.is_error
    assert second.content == CANCEL_MESSAGE and second.is_error
    assert not (workspace / "x.txt").exists()
    assert control.checkpoint == 3
    kinds = [(e.event, getattr(e, "tool_call_id", None)) for e in recorder.events]
    assert ("tool:execution:complete", "a") in kinds and ("tool:execution:error", "b") in kinds
