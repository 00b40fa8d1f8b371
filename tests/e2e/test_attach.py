"""Several clients, one live session: a listening server's sockets (`--listen`,
`sema-rpc serve`, `sema-rpc run --listen`), `session/attach`, and consent with many
clients, over real processes and sockets."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.socket_client import SocketClient, endpoint_of, start_listening_run, start_serve
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
    run = await start_listening_run(server_env, "write notes", MODEL, workspace)
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


async def test_two_clients_race_on_one_consent_request_exactly_one_wins(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    prompter, endpoint = await listening_client(server_env)  # declares no permissions
    sid = (await prompter.create_session(workspace, model=MODEL))["sessionId"]
    clients = {
        name: SocketClient(
            endpoint,
            name=name,
            jsonl=name == "alice",  # one client in each framing
            on_server_request=lambda _m, _p, d=decision: {"decision": d},
        )
        for name, decision in (("alice", "allow_once"), ("bob", "reject"))
    }
    for client in clients.values():
        await client.connect()
        await client.initialize(permissions=True)
        attached = await client.call("session/attach", {"sessionId": sid})
        assert attached["state"] == "idle" and attached["pendingRequests"] == []
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "race.txt", "content": "won\n"})]),
        Reply.text("Done."),
    )
    result = await prompter.call("session/prompt", {"sessionId": sid, "input": "write"})

    # Both were asked the same request; both answered.
    [asked_alice] = clients["alice"].server_requests
    [asked_bob] = clients["bob"].server_requests
    request_id = asked_alice.message["id"]
    assert asked_bob.message["id"] == request_id == asked_alice.params["requestId"]
    # Exactly one won, and every follower was told who.
    for client in (*clients.values(), prompter):
        await client.wait_for("request:resolved")
    resolved = [e.params for e in prompter.events("request:resolved")]
    assert len(resolved) == 1 and resolved[0]["requestId"] == request_id
    winner = resolved[0]["answeredBy"]
    loser = "bob" if winner == "alice" else "alice"
    assert winner in clients
    for client in clients.values():
        assert [e.params["answeredBy"] for e in client.events("request:resolved")] == [winner]
    # The loser's request was withdrawn; the winner's was not.
    cancels = {
        name: [m["params"]["id"] for m in client.messages if m.get("method") == "$/cancelRequest"]
        for name, client in clients.items()
    }
    assert cancels[loser] == [request_id] and cancels[winner] == []
    # The winner's answer is the one that took effect: alice's allows the write and the
    # turn goes on; bob's plain reject ends the turn (`interrupted`, per the spec).
    assert result["stopReason"] == ("end_turn" if winner == "alice" else "interrupted")
    assert (workspace / "race.txt").exists() == (winner == "alice")
    assert resolved[0]["outcome"] == ("allow_once" if winner == "alice" else "reject")
    for client in clients.values():
        await client.close()
    await prompter.close()


def _seqs(lines: list[dict[str, Any]], sid: str) -> list[int]:
    return [
        m["params"]["seq"]
        for m in lines
        if "method" in m and "id" not in m and m.get("params", {}).get("sessionId") == sid
    ]


async def test_a_client_killed_mid_stream_reattaches_after_its_last_seq_with_no_gap_and_no_duplicate(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    prompter, endpoint = await listening_client(server_env)
    sid = (await prompter.create_session(workspace, model=MODEL))["sessionId"]
    scripted_llm.script(Reply.text(deltas=4000, delay_s=0.001))
    prompt = asyncio.create_task(
        prompter.call("session/prompt", {"sessionId": sid, "input": "go"}, timeout=120)
    )
    await prompter.wait_for("message:text:chunk")
    tail = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.socket_tail",
        endpoint.removeprefix("unix:"),
        sid,
        "0",
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
    )
    assert tail.stdout is not None
    seen: list[dict[str, Any]] = []
    while sum(1 for m in seen if m.get("method") == "message:text:chunk") < 300:
        seen.append(json.loads(await asyncio.wait_for(tail.stdout.readline(), 30)))
    tail.send_signal(signal.SIGKILL)  # mid-stream: the turn is still streaming
    await tail.wait()
    assert not prompt.done()
    before = _seqs(seen, sid)
    assert before == list(range(1, len(before) + 1))  # the replay from seq 1, then live

    again = await SocketClient(endpoint, name="again").connect()
    await again.initialize()
    attached = await again.call("session/attach", {"sessionId": sid, "afterSeq": before[-1]})
    assert attached["state"] == "processing" and attached["truncated"] is False
    assert attached["lastSeq"] >= before[-1]
    result = await prompt
    assert result["stopReason"] == "end_turn"
    await again.wait_for("state:update", lambda p: p["state"] == "idle")
    after = _seqs(again.messages, sid)
    # No gap, no duplicate: what the killed client saw and what the new one got are,
    # together, exactly the session's stream as its creator received it.
    assert after[0] == before[-1] + 1
    assert before + after == _seqs([r.message for r in prompter.received], sid)
    text = "".join(
        m["params"]["delta"]
        for m in seen + again.messages
        if m.get("method") == "message:text:chunk"
    )
    assert text == "".join(f"w{i} " for i in range(4000))
    await again.close()
    await prompter.close()


async def stop_serve(proc: asyncio.subprocess.Process) -> bytes:
    proc.send_signal(signal.SIGTERM)
    _out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()
    return err


async def test_tcp_listener_refuses_a_wrong_or_missing_token(server_env, workspace):
    serve = await start_serve(server_env, "--listen", "tcp:127.0.0.1:0")
    root = Path(server_env["SEMA_ROOT"])
    info = await endpoint_of(root, serve.pid)
    assert info["endpoint"].startswith("tcp:127.0.0.1:")
    token_file = Path(info["tokenFile"])
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert (root / "run" / f"{serve.pid}.json").stat().st_mode & 0o777 == 0o600
    token = token_file.read_text().strip()

    wrong = await SocketClient(info["endpoint"], name="wrong").connect()
    answer = await wrong.request(
        "initialize",
        {"protocolVersion": 1, "token": token[:-1] + ("x" if token[-1] != "x" else "y")},
    )
    assert answer["error"]["code"] == -32001
    await asyncio.wait_for(wrong.closed.wait(), 10)  # and the connection is closed

    # Not initialize first (no token at all): refused the same way, in either framing.
    skipping = await SocketClient(info["endpoint"], name="skipping", jsonl=False).connect()
    answer = await skipping.request("session/list", {})
    assert answer["error"]["code"] == -32001
    await asyncio.wait_for(skipping.closed.wait(), 10)

    right = await SocketClient(info["endpoint"], name="right").connect()
    result = await right.initialize(token=token)
    assert result["serverInfo"]["name"] == "sema-rpc"
    sid = (await right.call("session/create", {"workingDir": str(workspace), "model": MODEL}))[
        "sessionId"
    ]
    listed = await right.call("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"] if s.get("live")] == [sid]
    await right.close()
    err = await stop_serve(serve)
    assert token.encode() not in err  # the secret never reaches the log
    # The endpoint files go with the server.
    assert not token_file.exists() and not (root / "run" / f"{serve.pid}.json").exists()


async def test_a_dead_servers_socket_is_replaced_and_a_link_is_never_followed(server_env, tmp_path):
    import socket as sockets

    run = Path(server_env["SEMA_ROOT"]) / "run"
    run.mkdir(mode=0o700)
    # A socket left by a server that died (bound, never unlinked, nobody listening).
    stale = run / "stale.sock"
    dead = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()
    serve = await start_serve(server_env, "--listen", f"unix:{stale}")
    info = await endpoint_of(Path(server_env["SEMA_ROOT"]), serve.pid)
    assert info["endpoint"] == f"unix:{stale}"
    client = await SocketClient(info["endpoint"]).connect()
    assert (await client.initialize())["protocolVersion"] == 1
    await client.close()
    await stop_serve(serve)
    assert not stale.exists()

    # A link at the path, to somebody else's live socket: removed, never connected through.
    elsewhere = tmp_path / "other.sock"
    trap = await asyncio.start_unix_server(lambda _r, _w: touched.append(1), str(elsewhere))
    touched: list[int] = []
    linked = run / "linked.sock"
    linked.symlink_to(elsewhere)
    serve = await start_serve(server_env, "--listen", f"unix:{linked}")
    await endpoint_of(Path(server_env["SEMA_ROOT"]), serve.pid)
    assert not linked.is_symlink() and linked.is_socket()
    assert elsewhere.is_socket()  # the link's target is untouched
    client = await SocketClient(f"unix:{linked}").connect()
    assert (await client.initialize())["serverInfo"]["name"] == "sema-rpc"
    await client.close()
    await stop_serve(serve)
    await asyncio.sleep(0.1)
    assert touched == []
    trap.close()

    # Anything else at the path is not ours to replace: the server refuses to start.
    taken = run / "notes.txt"
    taken.write_text("keep me\n")
    serve = await start_serve(server_env, "--listen", f"unix:{taken}")
    _out, err = await asyncio.wait_for(serve.communicate(), 30)
    assert serve.returncode == 2 and b"not a socket" in err
    assert taken.read_text() == "keep me\n"


async def test_any_attached_client_prompts_switches_modes_and_interrupts_each_answered_to_its_sender(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    import threading

    prompter, endpoint = await listening_client(server_env)
    sid = (await prompter.create_session(workspace, model=MODEL))["sessionId"]
    other = await SocketClient(endpoint, name="other", jsonl=False).connect()
    await other.initialize()
    await other.call("session/attach", {"sessionId": sid})

    gate = threading.Event()
    first = Reply.text("first answer", gate=gate)
    scripted_llm.script(first, Reply.text("second answer"))
    mine = asyncio.create_task(prompter.call("session/prompt", {"sessionId": sid, "input": "one"}))
    await asyncio.to_thread(first.at_gate.wait, 30)
    theirs = asyncio.create_task(other.call("session/prompt", {"sessionId": sid, "input": "two"}))
    await other.wait_until(lambda: len(prompter.events("state:update")) >= 1)
    assert (await other.call("mode/update", {"sessionId": sid, "mode": "Plan"}))["mode"] == "Plan"
    gate.set()
    assert (await mine)["stopReason"] == "end_turn"
    assert (await theirs)["stopReason"] == "end_turn"
    # Each follower saw both turns and the mode switch; no answer went astray.
    for client in (prompter, other):
        texts = "".join(e.params["delta"] for e in client.events("message:text:chunk"))
        assert texts == "first answersecond answer"
        assert [e.params["mode"] for e in client.events("mode:update")] == ["Plan"]
    assert prompter.unsolicited == []

    scripted_llm.script(Reply.text(deltas=3000, delay_s=0.002))
    running = asyncio.create_task(
        prompter.call("session/prompt", {"sessionId": sid, "input": "long"}, timeout=60)
    )
    seen = len(other.events("message:text:chunk"))
    await other.wait_until(lambda: len(other.events("message:text:chunk")) >= seen + 10)
    assert (await other.call("session/interrupt", {"sessionId": sid}))["interrupted"] is True
    assert (await running)["stopReason"] == "interrupted"
    await other.close()
    await prompter.close()


async def test_a_server_that_does_not_listen_refuses_attach(server_env, workspace):
    async with WireClient(env=server_env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        answer = await client.request("session/attach", {"sessionId": sid})
        assert answer["error"]["code"] == -32600 and "--listen" in answer["error"]["message"]
        listed = await client.call("session/list", {})
        assert all("live" not in s for s in listed["sessions"])
        assert not (Path(server_env["SEMA_ROOT"]) / "run").exists()


async def test_with_nobody_able_to_answer_consent_waits_for_a_client_or_an_interrupt(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    prompter, endpoint = await listening_client(server_env)  # declares no permissions
    sid = (await prompter.create_session(workspace, model=MODEL))["sessionId"]
    observer = await SocketClient(endpoint, name="observer").connect()
    await observer.initialize()  # no capability either

    async def open_requests() -> dict[str, Any]:
        while True:
            attached = await observer.call("session/attach", {"sessionId": sid})
            if attached["pendingRequests"]:
                return dict(attached)
            await asyncio.sleep(0.05)

    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "late.txt", "content": "approved later\n"})]),
        Reply.text("Written."),
        Reply.tools([("Write", {"file_path": "never.txt", "content": "no\n"})]),
    )
    first = asyncio.create_task(prompter.call("session/prompt", {"sessionId": sid, "input": "a"}))
    attached = await asyncio.wait_for(open_requests(), 30)
    [pending] = attached["pendingRequests"]
    assert attached["state"] == "processing"
    assert pending["method"] == "tool:permission:request"
    assert pending["params"]["toolName"] == "Write"
    await asyncio.sleep(0.5)  # it waits: nothing is written, nobody is asked
    assert not (workspace / "late.txt").exists() and not first.done()
    assert observer.server_requests == [] and prompter.server_requests == []

    approver = await SocketClient(
        endpoint, name="approver", on_server_request=lambda _m, _p: {"decision": "allow_once"}
    ).connect()
    await approver.initialize(permissions=True)
    await approver.call("session/attach", {"sessionId": sid})
    assert (await first)["stopReason"] == "end_turn"
    assert (workspace / "late.txt").read_text() == "approved later\n"
    [asked] = approver.server_requests
    assert asked.message["id"] == pending["params"]["requestId"]
    resolved = await observer.wait_for("request:resolved")
    assert resolved.params["answeredBy"] == "approver"

    # Nobody able to answer again; an interrupt from any follower ends the wait.
    await approver.call("session/detach", {"sessionId": sid})
    second = asyncio.create_task(prompter.call("session/prompt", {"sessionId": sid, "input": "b"}))
    await asyncio.wait_for(open_requests(), 30)
    assert (await observer.call("session/interrupt", {"sessionId": sid}))["interrupted"] is True
    assert (await second)["stopReason"] == "interrupted"
    assert not (workspace / "never.txt").exists()
    assert len(approver.server_requests) == 1  # a detached client is not asked
    for client in (observer, approver):
        await client.close()
    await prompter.close()


async def test_resuming_a_live_session_by_id_from_another_client_follows_it(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    prompter, endpoint = await listening_client(server_env)
    sid = (await prompter.create_session(workspace, model=MODEL))["sessionId"]
    joiner = await SocketClient(endpoint, name="joiner").connect()
    await joiner.initialize()
    ready = await joiner.call("session/create", {"sessionId": sid, "workingDir": str(workspace)})
    assert ready["sessionId"] == sid
    assert [e.params["sessionId"] for e in joiner.events("session:ready")] == [sid]
    scripted_llm.script(Reply.text("hello both"))
    await prompter.call("session/prompt", {"sessionId": sid, "input": "hi"})
    await joiner.wait_for("state:update", lambda p: p["state"] == "idle")
    assert "".join(e.params["delta"] for e in joiner.events("message:text:chunk")) == "hello both"
    await joiner.close()
    await prompter.close()


async def test_a_client_that_half_closes_still_gets_its_answers(server_env, workspace):
    serve = await start_serve(server_env)
    try:
        info = await endpoint_of(Path(server_env["SEMA_ROOT"]), serve.pid)
        reader, writer = await asyncio.open_unix_connection(info["endpoint"].removeprefix("unix:"))
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
        ]
        writer.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        writer.write_eof()  # what `nc -N` does: done sending, still reading
        lines = (await asyncio.wait_for(reader.read(), 30)).splitlines()
        answers = [json.loads(line) for line in lines]
        assert [a["id"] for a in answers] == [1, 2]
        assert answers[1]["result"] == {"sessions": []}
        writer.close()
    finally:
        await stop_serve(serve)
