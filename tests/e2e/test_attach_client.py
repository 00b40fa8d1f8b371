"""`sema-rpc attach`: the terminal client of a session another sema-rpc process hosts.

The parts below need no server: which servers it finds under `$SEMA_ROOT/run` (a dead
pid's file skipped), which paths it refuses to connect through (not a socket, a symlink,
nothing there), and what a line typed at the terminal answers to a consent request, a
question or a plan.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sema_rpc.attach import (
    AttachError,
    check_socket_path,
    discover_servers,
    history_lines,
    open_client,
    parse_endpoint,
    permission_answer,
    pid_alive,
    plan_answer,
    question_answer,
)


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
