"""The prompt queue below the wire: a steer that joined a turn is answered even when
that turn raises (a bug, which no client input can provoke on purpose; here the client
transport fails while the turn reports its second response)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sema_rpc.engine.engine import SemaEngine
from sema_rpc.protocol import (
    EventParams,
    MessageCompleteParams,
    SessionCreateParams,
    SessionPromptParams,
    ToolExecutionStartParams,
)
from tests.engine._bridge import RecordingBridge
from tests.support.scripted_llm import Reply, ScriptedLLM


class BrokenBridge(RecordingBridge):
    """Fails once, on the second `message:complete`: the turn raises after a steer
    joined it."""

    def notify(self, event: EventParams) -> None:
        super().notify(event)
        completes = [e for e in self.events if isinstance(e, MessageCompleteParams)]
        if isinstance(event, MessageCompleteParams) and len(completes) == 2:
            raise RuntimeError("the client transport broke")


@pytest.fixture
def engine_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scripted_llm: ScriptedLLM):
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "sema-root"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-000000")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_llm.url)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


async def test_a_steer_is_answered_when_the_turn_it_joined_raises(
    engine_env: Path, scripted_llm: ScriptedLLM
):
    bridge = BrokenBridge()
    engine = SemaEngine(bridge)
    ready = await engine.create_session(
        SessionCreateParams(
            working_dir=str(engine_env), model="anthropic/claude-test", permission_mode="bypass"
        )
    )
    sid = ready.session_id
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "sleep 0.3"})]), Reply.text("never reported")
    )
    main = asyncio.ensure_future(engine.prompt(SessionPromptParams(session_id=sid, input="go")))
    for _ in range(500):
        if any(isinstance(e, ToolExecutionStartParams) for e in bridge.events):
            break
        await asyncio.sleep(0.01)
    steer = asyncio.ensure_future(
        engine.prompt(SessionPromptParams(session_id=sid, input="and this", delivery="steer"))
    )
    done, _ = await asyncio.wait({main, steer}, timeout=10)
    assert done == {main, steer}, "a prompt was never answered"
    with pytest.raises(RuntimeError, match="transport broke"):
        main.result()
    # The steer joined the turn (the model saw it) and fails with it, once.
    assert "and this" in str(scripted_llm.requests[1].body["messages"][-1])
    with pytest.raises(RuntimeError, match="the turn this input joined failed"):
        steer.result()
    # The session is not left busy: the next prompt runs.
    scripted_llm.script(Reply.text("fine"))
    result = await asyncio.wait_for(
        engine.prompt(SessionPromptParams(session_id=sid, input="next")), 10
    )
    assert result.stop_reason == "end_turn"
    await engine.shutdown()
