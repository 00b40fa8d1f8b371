"""The first-turn warm-up after `session/create` (pipeline.py `InputPipeline.warm_up`):
what it prepares is what the first prompt would otherwise do on its own turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from sema_rpc.engine.engine import SemaEngine
from sema_rpc.protocol import SessionCreateParams, SessionPromptParams
from tests.engine._bridge import RecordingBridge
from tests.support.scripted_llm import Reply, ScriptedLLM


@pytest.fixture
def engine_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scripted_llm: ScriptedLLM):
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "sema-root"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-000000")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted_llm.url)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


async def test_a_resumed_sessions_checkpoint_index_is_read_before_its_first_prompt(
    engine_env: Path, scripted_llm: ScriptedLLM
):
    target = engine_env / "notes.txt"
    first = SemaEngine(RecordingBridge())
    ready = await first.create_session(
        SessionCreateParams(
            working_dir=str(engine_env), model="anthropic/claude-test", permission_mode="bypass"
        )
    )
    sid = ready.session_id
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": str(target), "content": "one\n"})]),
        Reply.text("written"),
    )
    result = await first.prompt(SessionPromptParams(session_id=sid, input="write it"))
    assert result.stop_reason == "end_turn"
    assert target.read_text() == "one\n"
    await first.shutdown()

    second = SemaEngine(RecordingBridge())
    await second.create_session(
        SessionCreateParams(
            working_dir=str(engine_env),
            model="anthropic/claude-test",
            permission_mode="bypass",
            session_id=sid,
        )
    )
    session = second.session(sid)
    assert session.pipeline is not None and session.pipeline._warming is not None
    await session.pipeline._warming
    store = session.checkpoints
    assert store is not None
    assert store.ready, "the warm-up did not read the index"
    assert [Path(e.path).name for e in store.events] == ["notes.txt"]
    # The first prompt runs on the index read ahead.
    scripted_llm.script(Reply.text("hello"))
    result = await second.prompt(SessionPromptParams(session_id=sid, input="hi"))
    assert result.stop_reason == "end_turn"
    await second.shutdown()
