"""Several clients, one live session: a listening server's sockets (`--listen`,
`sema-rpc serve`, `sema-rpc run --listen`), `session/attach`, and consent with many
clients, over real processes and sockets."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.socket_client import SocketClient, endpoint_of
from tests.support.wire_client import REPO, WireClient

MODEL = "anthropic/claude-test"


async def listening_client(env: dict[str, str], **caps: bool) -> tuple[WireClient, str]:
    """A stdio client of a server started with `--listen unix`, and that endpoint."""
    client = await WireClient(env=env, extra_args=["--listen", "unix"]).start()
    await client.initialize(**caps)
    assert client.proc is not None
    info = await endpoint_of(Path(env["SEMA_ROOT"]), client.proc.pid)
    return client, info["endpoint"]


async def test_run_listen_is_watched_and_approved_from_a_second_client(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written the notes."),
    )
    run = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "run",
        "write notes",
        "--model",
        MODEL,
        "--cwd",
        str(workspace),
        "--listen",
        "unix",
        env={**os.environ, **server_env},
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    info = await endpoint_of(Path(server_env["SEMA_ROOT"]), run.pid)
    assert info["endpoint"].startswith("unix:") and info["pid"] == run.pid
    assert os.stat(Path(server_env["SEMA_ROOT"]) / "run").st_mode & 0o777 == 0o700

    asked: list[dict[str, Any]] = []

    def approve(method: str, params: dict[str, Any]) -> Any:
        asked.append(params)
        return {"decision": "allow_once"}

    watcher = await SocketClient(
        info["endpoint"], name="watcher", on_server_request=approve
    ).connect()
    await watcher.initialize(permissions=True)

    async def live_session() -> str:
        while True:
            listed = await watcher.call("session/list", {})
            live = [s for s in listed["sessions"] if s.get("live")]
            if live:
                return str(live[0]["sessionId"])
            await asyncio.sleep(0.05)

    sid = await asyncio.wait_for(live_session(), 30)
    attached = await watcher.call("session/attach", {"sessionId": sid, "afterSeq": 0})
    assert attached["sessionId"] == sid and attached["workingDir"] == str(workspace.resolve())

    out, err = await asyncio.wait_for(run.communicate(), 60)
    assert run.returncode == 0, err.decode()
    assert (workspace / "notes.txt").read_text() == "hello\n"
    [request] = asked
    assert request["toolName"] == "Write" and request["sessionId"] == sid
    # The watcher followed the whole turn: the replay from seq 1 and the live stream.
    seqs = [r.params["seq"] for r in watcher.received if r.params.get("sessionId") == sid]
    text = "".join(r.params["delta"] for r in watcher.events("message:text:chunk"))
    assert text == "Written the notes."
    resolved = watcher.events("request:resolved")
    assert [r.params["answeredBy"] for r in resolved] == ["watcher"]
    assert resolved[0].params["outcome"] == "allow_once"
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    # The run's own stream (stdout) has the same text; its endpoint files are gone.
    assert b"Written the notes." in out
    assert not (Path(server_env["SEMA_ROOT"]) / "run" / f"{run.pid}.json").exists()
    assert not Path(info["endpoint"][5:]).exists()
    await watcher.close()
