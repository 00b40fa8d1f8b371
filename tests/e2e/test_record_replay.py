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


async def test_record_against_the_model_server_then_replay_offline_at_both_levels(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    from tests.support.scripted_llm import Reply

    record_root = tmp_path / "records"
    scripted_llm.script(
        Reply.tools(
            [
                ("Read", {"file_path": "README.md"}),
                ("Bash", {"command": "touch marker && echo from-bash"}),
            ],
            text="Checking.",
        ),
        Reply.text("The README says it is a tiny project.", chunks=5),
    )

    def allow(method: str, params: dict) -> dict:
        return {"decision": "allow_once"}

    async with WireClient(
        env=server_env, extra_args=["--record", str(record_root)], on_server_request=allow
    ) as client:
        await client.initialize(permissions=True)
        ready = await client.create_session(workspace, model="anthropic/claude-test")
        result = await client.call(
            "session/prompt", {"sessionId": ready["sessionId"], "input": "What is this?"}
        )
        assert result["stopReason"] == "end_turn"
        assert len(client.server_requests) == 1  # the Bash permission round trip
    scripted_llm.stop()  # from here on, nothing answers on the network

    [run_dir] = list(record_root.iterdir())
    cassette = run_dir / f"cassette-{ready['sessionId']}.jsonl"
    recorded = cassette.read_text()
    assert cassette.stat().st_mode & 0o777 == 0o600
    assert len([line for line in recorded.splitlines() if line.startswith("{")]) == 2
    assert (
        "sk-ant-test-key" not in recorded
        and "sk-ant-test-key" not in (run_dir / "wire.jsonl").read_text()
    )

    # (1) Model level: the cassette plays through the real SDK parsing, with real tools.
    env = {**server_env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    async with WireClient(env=env) as client:
        await client.initialize()
        ready2 = await client.create_session(
            workspace, model=f"replay/{cassette}", permissionMode="bypass"
        )
        result = await client.call(
            "session/prompt", {"sessionId": ready2["sessionId"], "input": "What is this?"}
        )
        assert result["stopReason"] == "end_turn"
        text = "".join(e.params["delta"] for e in client.events("message:text:chunk"))
        assert text == "Checking.The README says it is a tiny project."
        outputs = [e.params["content"] for e in client.events("tool:execution:complete")]
        assert any("A tiny project." in o for o in outputs) and any(
            "from-bash" in o for o in outputs
        )

    # (2) Wire level: the whole transcript replays against a fresh server with an empty diff.
    replayed = await replay(run_dir, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]
    assert any('"tool:permission:request"' in line for line in replayed.replayed)
