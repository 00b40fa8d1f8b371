"""`sema-rpc attach`: the terminal client of a session another sema-rpc process hosts.

The parts below need no server: which servers it finds under `$SEMA_ROOT/run` (a dead
pid's file skipped), which paths it refuses to connect through (not a socket, a symlink,
nothing there), and what a line typed at the terminal answers to a consent request, a
question or a plan.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.attach.answers import history_lines, permission_answer, plan_answer, question_answer
from sema_rpc.attach.discovery import (
    AttachError,
    check_socket_path,
    discover_servers,
    open_client,
    parse_endpoint,
    pid_alive,
)
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.socket_client import (
    SocketClient,
    endpoint_of,
    start_listening_run,
    start_sema,
)

MODEL = "anthropic/claude-test"


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(done.stdout)


def test_discovery_lists_live_servers_newest_first_and_skips_dead_and_broken_files(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    me = os.getpid()
    (run / "a.json").write_text(
        json.dumps({"pid": me, "endpoint": "unix:/r/a.sock", "startedAt": "2026-01-01T10:00:00Z"})
    )
    (run / "b.json").write_text(
        json.dumps(
            {
                "pid": me,
                "endpoint": "tcp:127.0.0.1:4000",
                "tokenFile": "/r/b.token",
                "cwd": "/w",
                "startedAt": "2026-01-01T11:00:00Z",
            }
        )
    )
    dead = _dead_pid()
    (run / f"{dead}.json").write_text(json.dumps({"pid": dead, "endpoint": "unix:/r/dead.sock"}))
    (run / "broken.json").write_text("{ not json")
    (run / "list.json").write_text("[1, 2]")

    assert not pid_alive(dead)
    servers = discover_servers(run)
    assert [(s.endpoint, s.token_file, s.cwd) for s in servers] == [
        ("tcp:127.0.0.1:4000", "/r/b.token", "/w"),
        ("unix:/r/a.sock", None, None),
    ]
    assert discover_servers(tmp_path / "missing") == []


def test_endpoints_parse_and_bad_ones_are_refused_with_the_accepted_forms():
    assert parse_endpoint("unix:/a/b.sock") == ("unix", "/a/b.sock", 0)
    assert parse_endpoint("tcp:127.0.0.1:4000") == ("tcp", "127.0.0.1", 4000)
    for bad in ("", "unix:", "tcp:127.0.0.1", "http://x", "pipe:/a"):
        with pytest.raises(AttachError, match=r"unix:PATH or tcp:127\.0\.0\.1:PORT|tcp:127"):
            parse_endpoint(bad)


def test_only_a_socket_of_this_user_is_connected_to_never_a_file_or_a_symlink(tmp_path: Path):
    plain = tmp_path / "plain.sock"
    plain.write_text("")
    with pytest.raises(AttachError, match="is not a socket"):
        check_socket_path(str(plain))
    with pytest.raises(AttachError, match="no server listens"):
        check_socket_path(str(tmp_path / "missing.sock"))

    real = tmp_path / "real.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(real))
    listener.listen()
    try:
        link = tmp_path / "link.sock"
        link.symlink_to(real)
        with pytest.raises(AttachError, match="is not a socket"):
            check_socket_path(str(link))
        check_socket_path(str(real))  # ours: accepted

        async def through_link() -> None:
            await open_client(f"unix:{link}")

        with pytest.raises(AttachError, match="is not a socket"):
            asyncio.run(through_link())
    finally:
        listener.close()


def test_a_tcp_endpoint_without_its_token_is_not_dialled():
    async def go() -> None:
        await open_client("tcp:127.0.0.1:9")

    with pytest.raises(AttachError, match="needs a token"):
        asyncio.run(go())


def test_typed_answers_to_consent_questions_and_plans():
    both = ["allow_once", "allow_always", "reject"]
    assert permission_answer("y", both) == {"decision": "allow_once"}
    assert permission_answer("a", both) == {"decision": "allow_always"}
    assert permission_answer("a", ["allow_once", "reject"]) is None  # not offered: asked again
    assert permission_answer("n", both) == {"decision": "reject"}
    assert permission_answer("  use a temp file  ", both) == {
        "decision": "reject",
        "feedback": "use a temp file",
    }
    assert permission_answer("", both) is None

    question = {
        "question": "Which?",
        "options": [{"label": "red"}, {"label": "green"}, {"label": "blue"}],
    }
    assert question_answer("2", question) == "green"
    assert question_answer("1,3", question) is None  # one answer only
    assert question_answer("1,3", {**question, "multiSelect": True}) == "red, blue"
    assert question_answer("9", question) == "9"  # not an option: the user's own text
    assert question_answer("purple please", question) == "purple please"

    plan = ["startEditing", "clearContextAndStart", "keepPlanning"]
    assert plan_answer("s", plan) == {"decision": "startEditing"}
    assert plan_answer("c", plan) == {"decision": "clearContextAndStart"}
    assert plan_answer("c", ["startEditing", "keepPlanning"]) is None
    assert plan_answer("split step 2", plan) == {
        "decision": "keepPlanning",
        "feedback": "split step 2",
    }


def test_the_earlier_conversation_is_drawn_briefly():
    messages = [{"role": "user", "content": [{"type": "text", "text": f"q{i}"}]} for i in range(14)]
    messages.append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "l1\nl2\nl3\nl4\nl5\nl6"}],
            "toolCalls": [
                {"id": "t", "name": "Write", "title": "Write a.txt", "status": "completed"}
            ],
        }
    )
    lines = history_lines(messages, last=3, lines_each=4)
    assert lines == [
        "… 12 earlier messages",
        "you: q12",
        "you: q13",
        "sema: l1",
        "  l2",
        "  l3",
        "  l4",
        "  … (2 more lines)",
        "  ✓ Write a.txt",
    ]


# --------------------------------------------------------------------------- against a real server


async def _read_until(
    stream: asyncio.StreamReader, needle: str, seen: list[str], timeout: float = 60
) -> None:
    """Read lines from `stream` into `seen` until one contains `needle`."""

    async def go() -> None:
        while not any(needle in line for line in seen):
            line = await stream.readline()
            if not line:
                raise AssertionError(f"the stream ended before {needle!r}: {''.join(seen)}")
            seen.append(line.decode())

    await asyncio.wait_for(go(), timeout)


async def _start(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await start_sema(env, *args, stdin=asyncio.subprocess.PIPE)


@contextlib.asynccontextmanager
async def _serving(env: dict[str, str], *args: str) -> AsyncIterator[dict[str, Any]]:
    """A `sema-rpc serve *args` for the block: its endpoint file; ended after the block."""
    serve = await _start(env, "serve", *args)
    try:
        yield await endpoint_of(Path(env["SEMA_ROOT"]), serve.pid)
    finally:
        if serve.returncode is None:
            serve.terminate()
            await serve.wait()


async def test_a_run_waiting_for_consent_is_approved_from_sema_rpc_attach(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """`sema-rpc run --listen unix` needs consent for a Write; `sema-rpc attach` (no
    session named: the only live one) prints the ask, `y` typed on its stdin approves it,
    the file is written, the rest of the turn streams to the attach client's stdout."""
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written the notes."),
    )
    run = await start_listening_run(
        server_env, "write notes", MODEL, workspace, stdin=asyncio.subprocess.PIPE
    )
    try:
        await endpoint_of(Path(server_env["SEMA_ROOT"]), run.pid)
        attach = await _start(server_env, "attach")
        assert attach.stdin is not None and attach.stderr is not None and attach.stdout is not None
        said: list[str] = []
        await _read_until(attach.stderr, "allow?", said)
        assert any("? Create notes.txt" in line for line in said), said
        assert any("+hello" in line for line in said), said  # the diff, shown before the answer
        assert not (workspace / "notes.txt").exists()  # nothing runs before the answer
        attach.stdin.write(b"y\n")
        await attach.stdin.drain()

        _, err = await asyncio.wait_for(run.communicate(), 60)
        assert run.returncode == 0, err.decode()
        assert (workspace / "notes.txt").read_text() == "hello\n"
        seen_out, rest = await asyncio.wait_for(attach.communicate(), 30)
        said.append(rest.decode())
        text = "".join(said)
        assert "Written the notes." in seen_out.decode()
        assert "✓ answered by sema-rpc attach: allow_once" in text
        assert "you: write notes" in text  # the earlier conversation, drawn on attach
        assert "attached to" in text and "the server went away" in text
        assert attach.returncode == 1
    finally:
        for proc in (run,):
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_in_a_terminal_typed_lines_prompt_and_steer_ctrl_c_interrupts_ctrl_d_detaches(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path: Path
):
    """`sema-rpc serve` hosts a session a socket client created; `sema-rpc attach` in a real
    terminal (tmux) sends a typed line as a prompt (idle), another as a steer (the turn
    runs), interrupts with Ctrl-C and detaches with Ctrl-D — and the session stays live."""
    from tests.e2e.test_login import Tmux

    stuck = threading.Event()  # never set: the third turn waits until interrupted
    async with _serving(server_env) as info:
        tmux = Tmux(tmp_path)
        try:
            owner = await SocketClient(info["endpoint"], name="owner").connect()
            await owner.initialize()
            created = await owner.call(
                "session/create", {"workingDir": str(workspace), "model": MODEL}
            )
            sid = created["sessionId"]

            steer_gate = threading.Event()
            second = Reply.text("Second answer.", gate=steer_gate)
            third = Reply.text("never finished", gate=stuck)
            scripted_llm.script(
                Reply.text("First answer."), second, Reply.text("Steered answer."), third
            )
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in server_env.items())
            tmux.start(f"env {env} {shlex.quote(sys.executable)} -m sema_rpc attach {sid[:8]}")

            async def screen(text: str) -> str:
                return await asyncio.to_thread(tmux.wait_for, text)

            await screen(f"attached to {sid} (idle")
            tmux.type("hello there")
            await screen("First answer.")

            tmux.type("second question")
            await asyncio.to_thread(second.at_gate.wait, 60)
            tmux.type("go left instead")
            await screen("↪ steering the running turn")
            steer_gate.set()
            await screen("Steered answer.")
            steered = json.dumps(scripted_llm.requests[-1].body)
            assert "go left instead" in steered  # the steer reached the running turn's next call

            tmux.type("third question")
            await asyncio.to_thread(third.at_gate.wait, 60)
            tmux._tmux("send-keys", "-t", tmux.name, "C-c")
            await screen("^C interrupting…")
            await screen("interrupted")

            tmux._tmux("send-keys", "-t", tmux.name, "C-d")
            await screen("detached;")
            assert tmux.screen().count("interrupted") == 1  # said once
            # The session goes on in its server, still live, for the next client.
            listed = await owner.call("session/list", {})
            [entry] = [s for s in listed["sessions"] if s["sessionId"] == sid]
            assert entry["live"] is True and entry["state"] == "idle"
            messages = await owner.call("session/messages", {"sessionId": sid})
            prompts = [
                m["content"][0]["text"] for m in messages["messages"] if m.get("kind") == "prompt"
            ]
            assert prompts[0] == "hello there" and "third question" in prompts
            await owner.close()
        finally:
            stuck.set()
            tmux.kill()


async def test_over_tcp_the_token_file_is_presented_and_a_wrong_token_is_refused(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path: Path
):
    """A `serve --listen tcp:127.0.0.1:0` server: `attach` finds it and its token file
    through the endpoint file and attaches (end of input at once: it detaches, rc 0); with
    `--token-file` naming a wrong token it is refused, says so, and attaches to nothing."""
    async with _serving(server_env, "--listen", "tcp:127.0.0.1:0") as info:
        assert info["endpoint"].startswith("tcp:127.0.0.1:")
        token = Path(info["tokenFile"]).read_text().strip()
        owner = await SocketClient(info["endpoint"], name="owner").connect()
        await owner.initialize(token=token)
        sid = (await owner.call("session/create", {"workingDir": str(workspace), "model": MODEL}))[
            "sessionId"
        ]

        attach = await _start(server_env, "attach")
        _, err = await asyncio.wait_for(attach.communicate(b""), 60)
        said = err.decode()
        assert attach.returncode == 0, said
        assert f"attached to {sid} (idle" in said and f"detached; {sid} goes on" in said

        wrong = tmp_path / "wrong.token"
        wrong.write_text("not-the-token\n")
        attach = await _start(
            server_env, "attach", sid, "--endpoint", info["endpoint"], "--token-file", str(wrong)
        )
        _, err = await asyncio.wait_for(attach.communicate(b""), 60)
        assert attach.returncode == 1
        assert "sema-rpc attach: the server refused the connection" in err.decode()
        assert "attached to" not in err.decode()
        await owner.close()


async def test_with_several_live_sessions_it_lists_them_or_asks_which(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """Two live sessions: without SESSION and without a terminal, `attach` lists both and
    exits 2; `--choose` reads the number from stdin and attaches to that one; a name that
    matches no live session is said (rc 1), with the live ones listed."""
    async with _serving(server_env) as info:
        owner = await SocketClient(info["endpoint"], name="owner").connect()
        await owner.initialize()
        first, second = [
            (await owner.call("session/create", {"workingDir": str(workspace), "model": MODEL}))[
                "sessionId"
            ]
            for _ in range(2)
        ]

        attach = await _start(server_env, "attach")
        _, err = await asyncio.wait_for(attach.communicate(b""), 60)
        said = err.decode()
        assert attach.returncode == 2, said
        assert "name one: sema-rpc attach SESSION" in said
        assert first in said and second in said

        attach = await _start(server_env, "attach", "--choose")
        listing = await _start(server_env, "attach")  # the order `--choose` shows
        _, shown = await asyncio.wait_for(listing.communicate(b""), 60)
        rows = [line for line in shown.decode().splitlines() if line.startswith("  ")]
        chosen = first if first in rows[1] else second
        _, err = await asyncio.wait_for(attach.communicate(b"2\n"), 60)
        said = err.decode()
        assert attach.returncode == 0, said
        assert "which one?" in said and f"attached to {chosen} (idle" in said

        attach = await _start(server_env, "attach", "nosuch")
        _, err = await asyncio.wait_for(attach.communicate(b""), 60)
        assert attach.returncode == 1
        assert "no live session 'nosuch'" in err.decode() and first in err.decode()
        await owner.close()


async def test_a_question_and_a_plan_approval_are_answered_at_the_terminal(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """A Plan-mode session whose only other client cannot answer: the AskUserQuestion and
    the ExitPlanMode it asks wait for `attach`, which prints the options and sends what is
    typed (`2`: the second option; `s`: start editing); the model gets both answers."""
    question = {
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "a file"},
            {"label": "Postgres", "description": "a server"},
        ],
        "multiSelect": False,
    }
    scripted_llm.script(
        Reply.tools([("AskUserQuestion", {"questions": [question]}, "q1")]),
        Reply.tools([("ExitPlanMode", {"plan": "# Plan\n1. use Postgres"}, "exit1")]),
        Reply.text("Implementing with Postgres."),
    )
    async with _serving(server_env) as info:
        owner = await SocketClient(info["endpoint"], name="owner").connect()
        await owner.initialize()  # answers nothing
        sid = (
            await owner.call(
                "session/create", {"workingDir": str(workspace), "model": MODEL, "mode": "Plan"}
            )
        )["sessionId"]
        planning = asyncio.ensure_future(
            owner.call("session/prompt", {"sessionId": sid, "input": "plan it"}, timeout=120)
        )
        attach = await _start(server_env, "attach", sid)
        assert attach.stdin is not None and attach.stderr is not None
        said: list[str] = []
        await _read_until(attach.stderr, "a number, or your own answer", said)
        assert "? Which database?" in "".join(said) and "  2. Postgres — a server" in "".join(said)
        attach.stdin.write(b"2\n")
        await attach.stdin.drain()
        await _read_until(attach.stderr, "[s]tart editing", said)
        assert "1. use Postgres" in "".join(said)
        attach.stdin.write(b"s\n")
        await attach.stdin.drain()

        assert (await asyncio.wait_for(planning, 60))["stopReason"] == "end_turn"
        assert "Postgres" in json.dumps(scripted_llm.requests[1].body["messages"][-1])
        modes = [r.params["mode"] for r in owner.events("mode:update")]
        assert modes[-1] == "Agent"  # the plan approved: out of Plan mode
        attach.stdin.close()
        out, _ = await asyncio.wait_for(attach.communicate(), 30)
        assert "Implementing with Postgres." in out.decode()
        assert attach.returncode == 0
        await owner.close()


async def test_a_consent_answered_by_another_client_is_withdrawn_at_the_terminal(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """Both `attach` and an editor-like socket client are asked; the other one answers
    first: the terminal's question is withdrawn and it says who answered, with what."""
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written the notes."),
    )
    release = asyncio.Event()

    async def answer_later(method: str, params: dict) -> dict:
        await release.wait()
        return {"decision": "allow_once"}

    async with _serving(server_env) as info:
        editor = await SocketClient(
            info["endpoint"], name="editor", on_server_request=answer_later
        ).connect()
        await editor.initialize(permissions=True)
        sid = (await editor.call("session/create", {"workingDir": str(workspace), "model": MODEL}))[
            "sessionId"
        ]
        writing = asyncio.ensure_future(
            editor.call("session/prompt", {"sessionId": sid, "input": "write notes"}, timeout=120)
        )
        attach = await _start(server_env, "attach", sid)
        assert attach.stdin is not None and attach.stderr is not None
        said: list[str] = []
        await _read_until(attach.stderr, "allow?", said)
        release.set()
        await _read_until(attach.stderr, "✓ answered by editor: allow_once", said)
        await _read_until(attach.stderr, "(withdrawn: answered elsewhere", said)
        assert (await asyncio.wait_for(writing, 60))["stopReason"] == "end_turn"
        assert (workspace / "notes.txt").read_text() == "hello\n"
        attach.stdin.close()
        await asyncio.wait_for(attach.communicate(), 30)
        assert attach.returncode == 0
        await editor.close()
