"""Record a wire transcript, replay it against a fresh server, and diff (issue 6)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from sema_rpc.transcript import load_transcript, replay
from tests.support.wire_client import REPO, WireClient

DEMO_WORKSPACE = REPO / "sema_rpc" / "data" / "demo-workspace"


async def record_demo(tmp_path: Path, workspace: Path) -> Path:
    record_root = tmp_path / "records"
    env = {"SEMA_ROOT": str(tmp_path / "root"), "ANTHROPIC_API_KEY": "sk-ant-secret-never-recorded"}
    async with WireClient(env=env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model="replay/demo")
        result = await client.call(
            "session/prompt", {"sessionId": ready["sessionId"], "input": "What is in this project?"}
        )
        assert result["stopReason"] == "end_turn"
    [run_dir] = list(record_root.iterdir())
    return run_dir


@pytest.fixture
def demo_workspace(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO_WORKSPACE, target)
    return target


async def test_recorded_session_replays_with_an_empty_diff(tmp_path: Path, demo_workspace: Path):
    run_dir = await record_demo(tmp_path, demo_workspace)
    wire = run_dir / "wire.jsonl"
    assert stat.S_IMODE(wire.stat().st_mode) == 0o600
    _, entries = load_transcript(run_dir)
    directions = {e.direction for e in entries}
    assert directions == {"in", "out"}
    assert [e.t for e in entries] == sorted(e.t for e in entries), "times are monotonic"
    methods = [e.msg.get("method") for e in entries if e.msg and e.direction == "out"]
    assert "message:text:chunk" in methods and "tool:execution:complete" in methods
    assert "sk-ant-secret" not in wire.read_text()

    result = await replay(run_dir)
    assert result.ok, result.diff
    assert len(result.replayed) == len(result.recorded) > 20


async def test_a_changed_behaviour_shows_up_as_a_readable_diff(
    tmp_path: Path, demo_workspace: Path
):
    run_dir = await record_demo(tmp_path, demo_workspace)
    # The tools run for real during replay: change what Read will see.
    (demo_workspace / "README.md").write_text("# Something else entirely\n")
    result = await replay(run_dir, timeout_s=10)
    assert not result.ok
    assert "--- recorded" in result.diff and "+++ replayed" in result.diff
    changed = [line for line in result.diff.splitlines() if line.startswith(("+{", "-{"))]
    assert changed and all("tool:execution:complete" in line for line in changed), result.diff
    assert any("Something else entirely" in line for line in changed if line.startswith("+"))


async def test_replay_cli_exit_codes(tmp_path: Path, demo_workspace: Path):
    import asyncio
    import sys

    run_dir = await record_demo(tmp_path, demo_workspace)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "replay",
        str(run_dir),
        stdout=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0 and b"matches" in out

    wire = run_dir / "wire.jsonl"
    lines = wire.read_text().splitlines()
    tampered = []
    for line in lines:
        entry = json.loads(line)
        if entry["dir"] == "out" and entry.get("msg", {}).get("method") == "message:text:chunk":
            entry["msg"]["params"]["delta"] = entry["msg"]["params"]["delta"].upper()
        tampered.append(json.dumps(entry))
    wire.write_text("\n".join(tampered) + "\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "replay",
        str(run_dir),
        stdout=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 1 and b"message:text:chunk" in out
