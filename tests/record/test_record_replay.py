"""Record a wire transcript, replay it against a fresh server, and diff."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from sema_rpc.record.replay import replay
from sema_rpc.record.transcript import load_transcript
from tests.support.scripted_llm import Reply
from tests.support.wire_client import REPO, RpcFailure, WireClient

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
    assert directions == {"in", "out", "meta"}
    [meta] = [e.meta for e in entries if e.direction == "meta"]
    assert meta == {"kind": "project", "workingDir": str(demo_workspace)}, "nothing saved yet"
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

    # Tools run for real in a replay: each starts from the workspace as it was recorded
    # (the Bash call creates `marker`, and `turn:diff` says so).
    (workspace / "marker").unlink()

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
    (workspace / "marker").unlink()
    replayed = await replay(run_dir, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]
    assert any('"tool:permission:request"' in line for line in replayed.replayed)


# ---------------------------------------------------------------------------- audit fixes

DEAD_MODEL_SERVER = {
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
}


def cassette_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


async def prompt(client: WireClient, sid: str, text: str) -> dict:
    return await client.call("session/prompt", {"sessionId": sid, "input": text}, timeout=30)


async def test_a_recorded_message_id_in_a_request_replays_as_the_new_id(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    """Message ids are fresh in every run: a request naming one (a session/messages
    cursor here) is replayed with the id the replaying server gave that message."""
    record_root = tmp_path / "records"
    scripted_llm.script(Reply.text("First answer."), Reply.text("Second answer."))
    async with WireClient(env=server_env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model="anthropic/claude-test"))["sessionId"]
        await prompt(client, sid, "First question")
        await prompt(client, sid, "Second question")
        first = await client.call("session/messages", {"sessionId": sid, "limit": 1})
        rest = await client.call(
            "session/messages", {"sessionId": sid, "cursor": first["nextCursor"]}
        )
        assert [m["content"][0]["text"] for m in rest["messages"]] == [
            "First answer.",
            "Second question",
            "Second answer.",
        ]
    scripted_llm.stop()
    [run_dir] = list(record_root.iterdir())
    replayed = await replay(run_dir, env=DEAD_MODEL_SERVER)
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]
    [answer] = [line for line in replayed.replayed if "Second answer." in line and '"id"' in line]
    assert '"messages"' in answer and "nextCursor" not in answer


async def test_no_secret_the_server_knows_reaches_the_cassette(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    """An OpenAI key in the environment of an Anthropic session: not a credential of its
    requests, but the prompt, a tool output and the model's answer carry it."""
    unique = "sk-proj-unique-7f3a9c1e5b2d4f60"
    env = {**server_env, "OPENAI_API_KEY": unique}
    (workspace / "deploy.env").write_text(f"OPENAI_API_KEY={unique}\n")
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "deploy.env"})], text="Reading."),
        Reply.text(f"The key is {unique}.", chunks=1),
    )
    record_root = tmp_path / "records"
    async with WireClient(env=env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model="anthropic/claude-test")
        result = await prompt(client, ready["sessionId"], f"Is {unique} in deploy.env?")
        assert result["stopReason"] == "end_turn"
        text = "".join(e.params["delta"] for e in client.events("message:text:chunk"))
        assert unique in text, "the client itself sees what the model said"
    scripted_llm.stop()
    # The key really went to the model: in the prompt and in the Read result.
    assert unique in json.dumps(scripted_llm.requests[1].body)

    [run_dir] = list(record_root.iterdir())
    cassette = run_dir / f"cassette-{ready['sessionId']}.jsonl"
    recorded = cassette.read_text()
    assert unique not in recorded
    assert unique not in (run_dir / "wire.jsonl").read_text()
    first, second = cassette_lines(cassette)
    assert "[REDACTED]" in json.dumps(first["request"]), "scrubbed, not dropped"
    assert "[REDACTED]" in json.dumps(second["request"]) and "[REDACTED]" in second["body"]

    # Scrubbed alike in both files, the recording still replays with an empty diff.
    replayed = await replay(run_dir, env={**DEAD_MODEL_SERVER, "OPENAI_API_KEY": unique})
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]


async def test_saved_rules_and_input_history_are_part_of_the_recording(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    """The project already had an always-allow rule covering the model's command and an
    input history: the replay's empty SEMA_ROOT starts from the same state."""
    from sema_rpc.core.policy.permissions import project_key

    sema_root = Path(server_env["SEMA_ROOT"])
    project = sema_root / "projects" / project_key(workspace)
    project.mkdir(parents=True)
    (project / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(touch:*)"]}})
    )
    (project / "input-history.json").write_text(json.dumps(["an earlier question", "fix it"]))
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "touch marker"})], text="Touching."),
        Reply.text("Done.", chunks=2),
    )
    record_root = tmp_path / "records"
    async with WireClient(
        env=server_env,
        extra_args=["--record", str(record_root)],
        on_server_request=lambda method, params: {"decision": "allow_once"},
    ) as client:
        await client.initialize(permissions=True)
        ready = await client.create_session(workspace, model="anthropic/claude-test")
        assert ready["projectInputHistory"] == ["an earlier question", "fix it"]
        assert (await prompt(client, ready["sessionId"], "touch it"))["stopReason"] == "end_turn"
        assert client.server_requests == [], "the stored rule allowed the command"
    scripted_llm.stop()
    assert (workspace / "marker").exists()

    [run_dir] = list(record_root.iterdir())
    _, entries = load_transcript(run_dir)
    [meta] = [e.meta for e in entries if e.direction == "meta"]
    assert meta == {
        "kind": "project",
        "workingDir": str(workspace),
        "permissions": {"allow": ["Bash(touch:*)"]},
        "inputHistory": ["an earlier question", "fix it"],
    }
    (workspace / "marker").unlink()
    replayed = await replay(run_dir, env=DEAD_MODEL_SERVER)
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]
    assert not any('"method": "tool:permission:request"' in line for line in replayed.replayed)
    assert (workspace / "marker").exists(), "the command ran again, allowed by the seeded rule"


async def test_a_resumed_session_replays_from_its_saved_history(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    scripted_llm.script(Reply.text("First answer.", chunks=2), Reply.text("Second answer."))
    async with WireClient(env=server_env) as client:  # not recorded
        await client.initialize()
        await client.create_session(workspace, model="anthropic/claude-test", sessionId="kept-1")
        assert (await prompt(client, "kept-1", "first"))["stopReason"] == "end_turn"
    record_root = tmp_path / "records"
    async with WireClient(env=server_env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        ready = await client.create_session(
            workspace, model="anthropic/claude-test", sessionId="kept-1"
        )
        assert ready["historyLoaded"] is True
        assert (await prompt(client, "kept-1", "second"))["stopReason"] == "end_turn"
    scripted_llm.stop()

    [run_dir] = list(record_root.iterdir())
    _, entries = load_transcript(run_dir)
    [meta] = [e.meta for e in entries if e.direction == "meta"]
    assert meta["sessionHistory"]["file"] == "kept-1.jsonl"
    assert "First answer." in meta["sessionHistory"]["text"]
    replayed = await replay(run_dir, env=DEAD_MODEL_SERVER)
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


async def test_replay_with_cwd_edits_a_fresh_copy_and_leaves_the_recorded_workspace_alone(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    import asyncio
    import sys

    (workspace / "notes.txt").write_text("status: draft\n")
    fresh = tmp_path / "fresh-copy"
    shutil.copytree(workspace, fresh)  # the workspace as it was before the session
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "notes.txt"})], text="Reading."),
        Reply.tools(
            [
                # Absolute paths, as models write them: the replay maps them to --cwd.
                (
                    "Edit",
                    {
                        "file_path": str(workspace / "notes.txt"),
                        "old_string": "draft",
                        "new_string": "final",
                    },
                ),
                ("Write", {"file_path": str(workspace / "summary.txt"), "content": "done\n"}),
            ],
            text=f"Editing {workspace / 'notes.txt'}.",
            chunks=1,
        ),
        Reply.text("Edited notes.txt.", chunks=2),
    )
    record_root = tmp_path / "records"
    async with WireClient(env=server_env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        ready = await client.create_session(
            workspace, model="anthropic/claude-test", permissionMode="bypass"
        )
        assert (await prompt(client, ready["sessionId"], "finalise"))["stopReason"] == "end_turn"
        assert not client.events("tool:execution:error")
    scripted_llm.stop()
    assert (workspace / "notes.txt").read_text() == "status: final\n"
    recorded_state = _tree(workspace)
    [run_dir] = list(record_root.iterdir())

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sema_rpc", "replay", str(run_dir), "--cwd", str(fresh),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
        env={**os.environ, **server_env, **DEAD_MODEL_SERVER},
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, out.decode() + err.decode()[-2000:]
    assert b"replay matches the recording" in out
    assert (fresh / "notes.txt").read_text() == "status: final\n"
    assert (fresh / "summary.txt").read_text() == "done\n"
    assert _tree(workspace) == recorded_state, "the recorded workspace is untouched"


async def test_replay_cwd_needs_a_directory(tmp_path: Path, demo_workspace: Path):
    run_dir = await record_demo(tmp_path, demo_workspace)
    with pytest.raises(ValueError, match="not a directory"):
        await replay(run_dir, cwd=tmp_path / "missing")
    with pytest.raises(ValueError, match="not a recorded working dir"):
        await replay(run_dir, cwd={"/elsewhere": tmp_path})


async def test_a_session_with_record_dir_is_recorded_alone_and_its_subagent_too(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    """session/create `recordDir` on a server started without --record: only that
    session's messages, and its subagent's calls on another model, are recorded."""
    agents = workspace / ".sema" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: Answers questions.\ntools: Read\n"
        "model: openai/gpt-helper\n---\nYou help.\n"
    )
    task = {"description": "ask helper", "prompt": "What is 2+2?", "subagent_type": "helper"}
    scripted_llm.script(
        Reply.text("Other session.", chunks=1),  # the unrecorded session
        Reply.tools([("Bash", {"command": "touch marker"})]),  # recorded: asks permission
        Reply.tools([("Task", task)], text="Delegating."),  # recorded: main agent
        Reply.text("4", chunks=1),  # its subagent, on the OpenAI chat model
        Reply.text("It is 4.", chunks=2),  # main agent again
    )
    record_dir = tmp_path / "per-session"
    async with WireClient(
        env=server_env, on_server_request=lambda method, params: {"decision": "allow_once"}
    ) as client:
        await client.initialize(permissions=True)
        other = await client.create_session(workspace, model="anthropic/claude-test")
        assert (await prompt(client, other["sessionId"], "hello"))["stopReason"] == "end_turn"
        ready = await client.create_session(
            workspace, model="anthropic/claude-test", recordDir=str(record_dir)
        )
        sid = ready["sessionId"]
        assert (await prompt(client, sid, "ask the helper"))["stopReason"] == "end_turn"
        assert client.events("task:agent:end", sid)[0].params["content"] == "4"
        with pytest.raises(RpcFailure) as relative:
            await client.create_session(workspace, recordDir="relative/dir")
        assert relative.value.code == -32602
    scripted_llm.stop()
    assert [r.path for r in scripted_llm.requests][3] == "/v1/chat/completions"
    assert (workspace / "marker").exists()

    [run_dir] = list(record_dir.iterdir())
    assert run_dir.name.endswith(f"-{sid}")
    assert sorted(p.name for p in run_dir.iterdir()) == [f"cassette-{sid}.jsonl", "wire.jsonl"]
    providers = [line["provider"] for line in cassette_lines(run_dir / f"cassette-{sid}.jsonl")]
    assert providers == ["anthropic", "anthropic", "openai-chat", "anthropic"]
    _, entries = load_transcript(run_dir)
    messages = [e.msg for e in entries if e.msg is not None]
    assert messages[0]["method"] == "initialize" and "result" in messages[1]
    assert messages[2]["method"] == "session/create"
    assert other["sessionId"] not in (run_dir / "wire.jsonl").read_text()
    ids = {(m.get("params") or {}).get("sessionId") for m in messages[3:] if "method" in m}
    assert ids == {sid}
    answers = [m for m in messages if "method" not in m]
    assert len(answers) == 4, "initialize, session/create, permission request, session/prompt"
    assert [m["method"] for m in messages if "method" in m and "id" in m][-1] == (
        "tool:permission:request"
    )

    (workspace / "marker").unlink()
    replayed = await replay(run_dir, env=DEAD_MODEL_SERVER)
    assert replayed.ok, replayed.diff + replayed.stderr[-2000:]
    assert any('"task:agent:end"' in line for line in replayed.replayed)
    assert (workspace / "marker").exists(), "allowed again by the recorded answer"


async def test_disposing_a_recorded_session_closes_its_transcript(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    record_dir = tmp_path / "rec"
    scripted_llm.script(Reply.text("one", chunks=1), Reply.text("two", chunks=1))
    async with WireClient(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(
            workspace, model="anthropic/claude-test", recordDir=str(record_dir)
        )
        sid = ready["sessionId"]
        await prompt(client, sid, "hello")
        assert client.proc is not None
        fds = Path(f"/proc/{client.proc.pid}/fd")

        def open_transcripts() -> list[str]:
            return [str(p.readlink()) for p in fds.iterdir() if "wire.jsonl" in str(p.readlink())]

        assert len(open_transcripts()) == 1
        await client.call("session/dispose", {"sessionId": sid})
        assert open_transcripts() == []
        other = await client.create_session(workspace, model="anthropic/claude-test")
        await prompt(client, other["sessionId"], "again")
    [run_dir] = list(record_dir.iterdir())
    lines = (run_dir / "wire.jsonl").read_text().splitlines()
    assert '"disposed":true' in lines[-1].replace(" ", "")
    assert other["sessionId"] not in "".join(lines)
