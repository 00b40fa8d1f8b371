"""The recorder on its own: what reaches a session's transcript, and what the server pays
for loading it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sema_rpc.record.recorder import TranscriptRecorder
from sema_rpc.record.transcript import load_transcript


def _body(msg: dict) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode()


def test_outgoing_messages_go_where_the_server_tagged_them(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorder = TranscriptRecorder()
    create = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/create",
        "params": {"workingDir": str(workspace), "recordDir": str(tmp_path / "rec")},
    }
    recorder.record_in(_body(create))
    recorder.record_out(_body({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "A"}}))
    chunk = {"jsonrpc": "2.0", "method": "message:text:chunk", "params": {"sessionId": "A"}}
    recorder.record_out(_body(chunk), "A")
    recorder.record_out(_body({**chunk, "params": {"sessionId": "B", "delta": "b"}}), "B")
    done = {"jsonrpc": "2.0", "method": "state:update", "params": {"sessionId": "A"}}
    recorder.record_out(_body(done), "A")
    recorder.close()

    [run_dir] = (tmp_path / "rec").iterdir()
    _, entries = load_transcript(run_dir)
    out = [e.msg for e in entries if e.direction == "out"]
    assert out == [{"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "A"}}, chunk, done]


def test_loading_the_recorder_leaves_replay_and_the_engine_unloaded() -> None:
    """The server loads the recorder at startup (a session may ask to be recorded);
    replay and view are loaded by their own subcommands only."""
    code = (
        "import sys; import sema_rpc.rpc.server, sema_rpc.record.recorder; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('sema_rpc'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "sema_rpc.record.recorder" in loaded
    heavy = [
        m
        for m in loaded
        if m.startswith(("sema_rpc.engine", "sema_rpc.providers", "sema_rpc.tools"))
        or m in {f"sema_rpc.record.{n}" for n in ("replay", "diff", "normalise", "paths", "view")}
    ]
    assert heavy == []
