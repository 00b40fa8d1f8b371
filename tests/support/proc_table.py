"""The process table as a test oracle: which processes carry a marker.

A test gives the server (or an MCP server) `SEMA_TEST_MARK=<uuid>` in its environment;
every process it starts inherits it, whatever it does to its session or process group.
A process that cleared its environment (`env -i`) would not be found: none of ours does.
"""

from __future__ import annotations

import os
import time
import uuid

MARK_VAR = "SEMA_TEST_MARK"


def new_mark() -> str:
    return f"lifeline-{uuid.uuid4().hex}"


def marked(mark: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live (not zombie) process whose environment has
    `SEMA_TEST_MARK=<mark>`."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
            if needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rfind(b")") + 2 :].split()[0] == b"Z":
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found.append((int(name), cmdline))
    return found


def wait_marked(mark: str, predicate, timeout_s: float, poll_s: float = 0.02):
    """Poll `marked(mark)` until `predicate(list)` holds; (list, seconds waited), or the
    last list and the timeout when it never held."""
    start = time.monotonic()
    while True:
        procs = marked(mark)
        if predicate(procs):
            return procs, time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            return procs, time.monotonic() - start
        time.sleep(poll_s)


def kill_marked(mark: str) -> None:
    """Clean-up after a failed test: nothing it started may outlive it."""
    import signal

    for pid, _ in marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
