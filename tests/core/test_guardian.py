"""sema_rpc/core/guardian.py driven as the server drives it, by a real process that dies.

The process table is the oracle: what the guardian was told to end is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sema_rpc.core.guardian as guardian_module

GUARDIAN = Path(guardian_module.__file__)

# A stand-in server: it starts a process in a session of its own (as the MCP SDK starts an
# MCP server), queues `adopt` for it on the lifeline, starts the guardian and is killed at
# once: the guardian is still starting when its server is gone, the message unread.
SERVER = """
import json, os, signal, socket, subprocess, sys
adoptee = subprocess.Popen(["sleep", "300"], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(adoptee.pid, flush=True)
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
ours.send(json.dumps({"op": "adopt", "pid": adoptee.pid}).encode())
subprocess.Popen([sys.executable, "-I", "-S", sys.argv[1], str(os.getpid())],
                 stdin=theirs.fileno(), stdout=subprocess.DEVNULL, close_fds=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def test_a_session_adopted_just_before_the_server_died_is_ended_too() -> None:
    server = subprocess.run(
        [sys.executable, "-c", SERVER, str(GUARDIAN)], capture_output=True, text=True, timeout=30
    )
    assert server.returncode == -signal.SIGKILL, server.stderr
    adoptee = int(server.stdout.strip())
    try:
        deadline = time.monotonic() + 10
        while _alive(adoptee) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(adoptee), "the adopted session outlived its server"
    finally:
        if _alive(adoptee):
            os.kill(adoptee, signal.SIGKILL)
