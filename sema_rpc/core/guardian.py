"""The guardian: one small process per server that starts the server's commands and ends
every process they leave behind when the server goes, however it goes (SIGKILL included).

Run as a script, never imported by the server: `python -I -S guardian.py SERVER_PID PATHS`
(standard library only, no site-packages: it starts in a few milliseconds and nothing
from the environment or the workspace is imported). Its stdin is its end of a unix
SOCK_SEQPACKET socket pair with the server: the lifeline and the control channel in one.

Contract (the server side is `sema_rpc.core.processes`):
- server → guardian, one JSON message each:
  `{"op": "spawn", "id", "argv", "cwd", "env", "policy"}` with three file descriptors
  attached (stdin, stdout, stderr of the command): the child starts a new session (its
  own process group, pgid = pid), takes the descriptors, applies the sandbox policy if
  one is given (`sema_rpc.sandbox.apply_in_child`, imported on the first policy), and
  execs. Answer `{"id", "pid"}` once the exec succeeded, or
  `{"id", "error"}` (nothing runs).
  `{"op": "adopt", "pid"}`: a session the server started itself (an MCP server); it is
  killed with the rest. `{"op": "release", "pid"}`: that session is gone, forget it.
- guardian → server: `{"op": "exit", "pid", "status"}` when a command the guardian forked
  exits (status as `subprocess`: the exit code, or -N for signal N).
- End of file on the socket (the server closed it, exited or was killed) or the
  parent-death signal: every descendant is killed (SIGKILL), every adopted session too,
  and the guardian exits.

Why this catches what a process group does not: the guardian is a child subreaper
(PR_SET_CHILD_SUBREAPER), so a process orphaned anywhere below it — `cmd &` after its
shell exited, `nohup`, `setsid`, a daemon that double-forks into a new session — is
reparented to the guardian, not to init, and stays findable as a descendant.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20
KILL_PASSES_S = 1.5
"""How long the final sweep keeps killing (a tree that forks while it is killed)."""

_apply_in_child: Any = None
"""The sandbox's `apply_in_child`, imported on the first spawn that carries a policy."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> list[tuple[int, int, int, bytes]]:
    """(pid, ppid, session id, state) of every process, from /proc/*/stat. The server's
    supervisor reads the same table (processes.py imports this)."""
    out: list[tuple[int, int, int, bytes]] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after it.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3:
            out.append((int(name), int(fields[1]), int(fields[3]), fields[0]))
    return out


def _children_map() -> dict[int, list[int]]:
    """ppid → pids."""
    tree: dict[int, list[int]] = {}
    for pid, ppid, _sid, _state in process_table():
        tree.setdefault(ppid, []).append(pid)
    return tree


def _sessions(sids: set[int]) -> list[int]:
    """Every process whose session id is in `sids` (an adopted server's own children)."""
    return [pid for pid, _ppid, sid, _state in process_table() if sid in sids]


def descendants(root: int) -> list[int]:
    tree = _children_map()
    out: list[int] = []
    stack = list(tree.get(root, ()))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(tree.get(pid, ()))
    return out


def _reap() -> list[tuple[int, int]]:
    done = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        code = os.waitstatus_to_exitcode(status)
        proc = _popens.pop(pid, None)
        if proc is not None:
            proc.returncode = code
        done.append((pid, code))
    return done


def kill_everything(adopted: set[int]) -> None:
    """SIGKILL every descendant and every adopted session until none is left."""
    me = os.getpid()
    deadline = time.monotonic() + KILL_PASSES_S
    while True:
        victims = set(descendants(me)) | set(_sessions(adopted))
        victims.discard(me)
        for sid in adopted:
            try:
                os.killpg(sid, signal.SIGKILL)
            except OSError:
                pass
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        if not victims or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _which(program: str, env: dict[str, str]) -> str:
    if "/" in program:
        return program
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(errno.ENOENT, "command not found", program)


def _spawn(request: dict[str, Any], fds: list[int], paths: list[str]) -> int:
    """Start one command in a new session; the pid, or OSError/RuntimeError with the
    reason (nothing runs)."""
    global _apply_in_child
    argv = [str(a) for a in request["argv"]]
    env = {str(k): str(v) for k, v in request["env"].items()}
    policy = request.get("policy")
    if policy is not None and _apply_in_child is None:
        sys.path.extend(p for p in paths if p not in sys.path)
        try:
            from sema_rpc.sandbox import (  # type: ignore[import-not-found]
                apply_in_child,
                prepare,
            )

            prepare()  # loaded here once: every forked child inherits it
        except Exception as exc:
            raise RuntimeError(
                f"a sandbox policy was given but the sandbox cannot be loaded: {exc}"
            ) from None
        _apply_in_child = apply_in_child
    preexec = None
    why_r = why_w = -1
    if policy is not None:
        apply = _apply_in_child
        why_r, why_w = os.pipe()

        def preexec() -> None:
            # Contract: the sandbox is applied in the child, right before exec; an
            # exception here fails the command closed (Popen raises, nothing runs).
            try:
                apply(policy)
            except BaseException as exc:
                os.write(why_w, f"{type(exc).__name__}: {exc}".encode()[:4000])
                raise

    # A plain Popen from this small process: vfork + exec, as cheap as it gets.
    try:
        proc = subprocess.Popen(
            argv,
            executable=_which(argv[0], env),
            cwd=request.get("cwd") or None,
            env=env,
            stdin=fds[0],
            stdout=fds[1],
            stderr=fds[2],
            start_new_session=True,
            preexec_fn=preexec,
            close_fds=True,
        )
    except subprocess.SubprocessError:
        why = ""
        if why_r >= 0:
            os.close(why_w)
            why_w = -1
            why = os.read(why_r, 4096).decode("utf-8", "replace")
        reason = why or "unknown reason"
        raise RuntimeError(f"the sandbox could not be applied: {reason}") from None
    finally:
        for fd in (why_r, why_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    _popens[proc.pid] = proc
    return proc.pid


_popens: dict[int, subprocess.Popen[bytes]] = {}
"""Kept until reaped by `_reap` (which sets their returncode, so Popen never reaps)."""


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    try:
        sock.send(json.dumps(message).encode("utf-8"))
    except OSError:
        pass  # the server is gone: the main loop sees the end of the socket next


def main(argv: list[str]) -> int:
    server_pid = int(argv[1])
    paths = json.loads(argv[2]) if len(argv) > 2 else []
    sock = socket.socket(fileno=os.dup(0))  # its own descriptor (not inherited)
    sock.setblocking(True)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGUSR1, lambda *_: None)  # the parent-death signal
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        # A terminal's Ctrl-C or hang-up, or a SIGTERM to the server's whole group, is
        # the server's to act on: it ends us through the lifeline once its commands are
        # handled. A handler, not SIG_IGN: an ignored signal would stay ignored in the
        # commands (exec keeps SIG_IGN, and resets handlers).
        signal.signal(sig, lambda *_: None)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGUSR1)
    commands: set[int] = set()
    adopted: set[int] = set()
    try:
        while os.getppid() == server_pid:
            try:
                ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
            except InterruptedError:
                continue
            if wake_r in ready:
                os.read(wake_r, 4096)
                for pid, status in _reap():
                    if pid in commands:
                        commands.discard(pid)
                        _send(sock, {"op": "exit", "pid": pid, "status": status})
            if sock.fileno() not in ready:
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 3)
            except OSError:
                break
            if not data:
                break  # the lifeline: the server closed it or died
            try:
                request = json.loads(data)
                if _track(request, adopted):
                    continue
                try:
                    pid = _spawn(request, fds, paths)
                except (
                    OSError,
                    RuntimeError,
                    ValueError,
                    TypeError,
                    KeyError,
                    subprocess.SubprocessError,
                ) as exc:
                    message = str(exc) if isinstance(exc, RuntimeError) else repr(exc)
                    if isinstance(exc, OSError):
                        message = f"{exc.strerror or exc}: {exc.filename or request.get('argv')}"
                    _send(sock, {"id": request.get("id"), "error": message})
                else:
                    commands.add(pid)
                    _send(sock, {"id": request["id"], "pid": pid})
            finally:
                for fd in fds:
                    os.close(fd)
    finally:
        _drain(sock, adopted)
        kill_everything(adopted)
    return 0


def _drain(sock: socket.socket, adopted: set[int]) -> None:
    """Take the messages still queued on the lifeline when the server is gone: an MCP
    server adopted just before the server died (or before this guardian even got to its
    loop, on a loaded machine) must be killed with the rest. Nothing new is started."""
    sock.setblocking(False)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except OSError:  # nothing more queued (BlockingIOError), or the socket is gone
            return
        for fd in fds:
            os.close(fd)
        if not data:
            return
        try:
            _track(json.loads(data), adopted)
        except (ValueError, TypeError, KeyError, AttributeError):
            continue


def _track(request: dict[str, Any], adopted: set[int]) -> bool:
    """Apply an `adopt` or `release` to the adopted sessions; False for any other op."""
    op = request.get("op")
    if op == "adopt":
        adopted.add(int(request["pid"]))
    elif op == "release":
        adopted.discard(int(request["pid"]))
    else:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv))
