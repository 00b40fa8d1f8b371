"""Every process the server starts, under one supervisor, and the server's stop signals.

`spawn()` is the one way to run a program for the model (the Bash tool): the command is
forked by the guardian (`guardian.py`, one small stdlib-only process per server, started
on the first spawn — never on the `initialize` path), in a session and process group of
its own. MCP stdio servers are started by the MCP SDK in their own session; `adopt()`
hands that session to the guardian too.

The lifeline: the guardian's end of a unix socket pair is its stdin; the server holds the
other end (close-on-exec, so no command inherits it). When the server ends — exit, crash,
SIGKILL — the kernel closes its end, the guardian reads end of file and SIGKILLs every
descendant (it is a child subreaper, so orphans of backgrounded, `nohup`ed, `setsid`ed
and double-forked commands are its descendants) and every adopted session. The
guardian's parent-death signal is a second trigger. An orderly end (`close()`) closes
the socket itself and waits for the sweep.

Stop signals: `on_stop_signals()` turns SIGTERM, SIGINT and SIGHUP into one callback on
the event loop (`sema-rpc run`; the servers wire the same signals in `cli`, without
importing this module before a signal comes, and treat them as end of input);
`hard_stop_after()` bounds the orderly end: past its deadline every group is killed and
the process leaves.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

GUARDIAN = Path(__file__).with_name("guardian.py")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_DEADLINE_S = 2.0
"""A stop signal → everything the server started is gone, and the server too, within this."""
_MAX_MESSAGE = 1 << 20


def _import_paths() -> list[str]:
    """Where the guardian finds `sema_rpc` (for the sandbox): the folder holding this
    package first — an editable install resolves it through an import hook that a
    `python -I -S` guardian does not load — then this process's own path."""
    package_root = str(Path(__file__).resolve().parents[2])
    return [package_root, *(p for p in sys.path if p and p != package_root)]


_Started = tuple[int, "concurrent.futures.Future[int]"]
"""A started command: its pid, and the future of its exit status."""


class SpawnError(OSError):
    """The command could not be started (nothing runs); the message says why."""


class GuardedProcess:
    """A command the guardian started: its own session and process group (pgid = pid)."""

    def __init__(
        self, pid: int, exit_future: concurrent.futures.Future[int], stdout_fd: int | None
    ):
        self.pid = pid
        self.returncode: int | None = None
        self._exit = exit_future
        self._stdout_fd = stdout_fd
        self._transport: asyncio.ReadTransport | None = None

    @property
    def stdout(self) -> AsyncIterator[bytes]:
        """The command's output (stdout and, by default, stderr), until end of file."""
        return self._read()

    async def _read(self) -> AsyncIterator[bytes]:
        if self._stdout_fd is None:
            return
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 16, loop=loop)
        pipe = os.fdopen(self._stdout_fd, "rb", buffering=0)
        self._stdout_fd = None
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        while chunk := await reader.read(1 << 16):
            yield chunk

    async def wait(self) -> int:
        # Shielded: a cancelled wait must not cancel the exit everyone else waits for.
        code = await asyncio.shield(asyncio.wrap_future(self._exit))
        self.returncode = code
        return code

    async def aclose(self) -> None:
        """Close our end of the output pipe and wait for the command to be reaped."""
        if self._transport is not None:
            self._transport.close()
        if self._stdout_fd is not None:
            os.close(self._stdout_fd)
            self._stdout_fd = None
        if self.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.wait(), 5)


class Supervisor:
    """The guardian of this process and the groups it holds. One per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._guardian: subprocess.Popen[bytes] | None = None
        self._ids = 0
        self._pending: dict[int, concurrent.futures.Future[_Started]] = {}
        self._exits: dict[int, concurrent.futures.Future[int]] = {}
        self.groups: set[int] = set()
        """Live process groups: commands not yet reaped, and adopted sessions."""
        self._adopted: set[int] = set()

    # ------------------------------------------------------------------ guardian

    def _ensure_guardian(self) -> socket.socket:
        with self._lock:
            if self._sock is not None:
                return self._sock
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._guardian = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",
                        str(GUARDIAN),
                        str(os.getpid()),
                        json.dumps(_import_paths()),
                    ],
                    stdin=theirs.fileno(),
                    stdout=subprocess.DEVNULL,
                    close_fds=True,
                )
            finally:
                theirs.close()
            self._sock = ours
            threading.Thread(
                target=self._read_guardian, args=(ours,), name="sema-guardian", daemon=True
            ).start()
            return ours

    def _read_guardian(self, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(_MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            try:
                message = json.loads(data)
            except ValueError:
                continue
            with self._lock:
                if message.get("op") == "exit":
                    pid, status = int(message["pid"]), int(message["status"])
                    self.groups.discard(pid)
                    future = self._exits.pop(pid, None)
                    if future is not None:
                        _settle(future, status)
                    continue
                request = self._pending.pop(message.get("id"), None)
                if request is None or request.done():  # its spawn() was cancelled
                    if "pid" in message:
                        _kill_group(int(message["pid"]))
                    continue
                if "pid" in message:
                    pid = int(message["pid"])
                    exit_future = self._exits[pid] = concurrent.futures.Future()
                    self.groups.add(pid)
                    if not _settle(request, (pid, exit_future)):
                        _kill_group(pid)
                else:
                    _settle(request, SpawnError(str(message.get("error"))))
        # The guardian is gone (it swept everything it held): nobody reports exits now,
        # and the next spawn starts a new one.
        with self._lock:
            if self._sock is sock:
                self._sock = None
                sock.close()
                if self._guardian is not None:
                    self._guardian.poll()  # reaped if it is gone already
                self._guardian = None
            for request in self._pending.values():
                _settle(request, SpawnError("the process guardian exited"))
            for exit_future in self._exits.values():
                _settle(exit_future, -signal.SIGKILL)  # its sweep killed what was left
            self._pending.clear()
            self._exits.clear()

    # ------------------------------------------------------------------ spawning

    async def spawn(
        self,
        argv: list[str],
        *,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str],
        sandbox_policy: Mapping[str, Any] | None = None,
    ) -> GuardedProcess:
        """Start `argv` in a new session: stdin empty, stdout and stderr one pipe
        (`GuardedProcess.stdout`). SpawnError (an OSError) when it cannot start.

        Contract: `sandbox_policy`, when given, is JSON-serialisable and is passed to
        `sema_rpc.sandbox.apply_in_child(policy)` in the child right before exec; that
        module is imported only when a policy is given, and if the import or the call
        fails the command fails closed (SpawnError, nothing runs)."""
        sock = self._ensure_guardian()
        read_fd, write_fd = os.pipe()
        null_fd = os.open(os.devnull, os.O_RDONLY)
        future: concurrent.futures.Future[_Started] = concurrent.futures.Future()
        with self._lock:
            self._ids += 1
            request_id = self._ids
            self._pending[request_id] = future
        message = {
            "op": "spawn",
            "id": request_id,
            "argv": list(argv),
            "cwd": os.fspath(cwd) if cwd is not None else None,
            "env": dict(env),
            "policy": dict(sandbox_policy) if sandbox_policy is not None else None,
        }
        try:
            socket.send_fds(sock, [json.dumps(message).encode()], [null_fd, write_fd, write_fd])
        except OSError as exc:
            with self._lock:
                self._pending.pop(request_id, None)
            os.close(read_fd)
            raise SpawnError(f"the process guardian is gone: {exc}") from None
        finally:
            os.close(null_fd)
            os.close(write_fd)
        try:
            pid, exit_future = await asyncio.wrap_future(future)
        except BaseException:
            # Cancelled while starting: the command is killed, now or when its pid comes.
            os.close(read_fd)
            if future.done() and not future.cancelled() and future.exception() is None:
                _kill_group(future.result()[0])
            raise
        return GuardedProcess(pid, exit_future, read_fd)

    def adopt(self, pid: int) -> None:
        """A session this process started itself (pid = its sid): ended with the rest,
        by the stop path and by the lifeline."""
        self.groups.add(pid)
        self._adopted.add(pid)
        self._tell({"op": "adopt", "pid": pid})

    def adopt_child_sessions(self) -> list[int]:
        """Adopt every direct child of this process that leads its own session and is
        not yet held (an MCP server the SDK just started); returns their pids."""
        me = os.getpid()
        guardian = self._guardian.pid if self._guardian is not None else None
        found = []
        for pid, ppid, sid, state in _processes():
            if ppid == me and sid == pid and state != b"Z" and pid != guardian:
                if pid not in self.groups:
                    self.adopt(pid)
                    found.append(pid)
        return found

    def release_gone(self) -> None:
        """For each adopted session whose leader is gone (an MCP server that stopped):
        kill what is left in it, and forget it (so a reused pid is never hit)."""
        if not self._adopted:
            return
        table = _processes()
        alive = {pid for pid, _ppid, _sid, state in table if state != b"Z"}
        for sid in list(self._adopted):
            if sid in alive:
                continue
            for pid, _ppid, member_sid, _state in table:
                if member_sid == sid:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            self._adopted.discard(sid)
            self.groups.discard(sid)
            self._tell({"op": "release", "pid": sid})

    def _tell(self, message: dict[str, Any]) -> None:
        sock = self._ensure_guardian()
        with contextlib.suppress(OSError):
            sock.send(json.dumps(message).encode())

    # ------------------------------------------------------------------ ending

    def kill_group(self, pgid: int, sig: int = signal.SIGKILL) -> None:
        _kill_group(pgid, sig)

    def kill_all(self) -> None:
        """SIGKILL every group held now (synchronous; safe in a signal's last moment)."""
        for pgid in list(self.groups):
            self.kill_group(pgid)

    def close(self, timeout_s: float = 1.5) -> None:
        """Kill every group, close the lifeline and wait (bounded) for the guardian's
        sweep: when this returns, nothing the server started is left."""
        self.kill_all()
        with self._lock:
            sock, self._sock = self._sock, None
            guardian, self._guardian = self._guardian, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if guardian is not None:
            try:
                guardian.wait(timeout_s)
            except subprocess.TimeoutExpired:
                guardian.kill()
                guardian.wait()


def _settle(future: concurrent.futures.Future[Any], value: object) -> bool:
    """Resolve `future` unless it was cancelled meanwhile; whether it was resolved."""
    try:
        if isinstance(value, BaseException):
            future.set_exception(value)
        else:
            future.set_result(value)
    except concurrent.futures.InvalidStateError:
        return False
    return True


def _kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _processes() -> list[tuple[int, int, int, bytes]]:
    """(pid, ppid, sid, state) of every process, read as the guardian reads it."""
    from sema_rpc.core.guardian import process_table

    return process_table()


_SUPERVISOR: Supervisor | None = None


def supervisor() -> Supervisor:
    """This process's supervisor (created on first use; the guardian on first spawn)."""
    global _SUPERVISOR
    if _SUPERVISOR is None:
        _SUPERVISOR = Supervisor()
    return _SUPERVISOR


async def spawn(
    argv: list[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    sandbox_policy: Mapping[str, Any] | None = None,
) -> GuardedProcess:
    """`Supervisor.spawn` on this process's supervisor: the one way a program is run
    for the model."""
    return await supervisor().spawn(argv, cwd=cwd, env=env, sandbox_policy=sandbox_policy)


def close_all() -> None:
    """End everything this process started (a no-op when it started nothing)."""
    if _SUPERVISOR is not None:
        _SUPERVISOR.close()


# ---------------------------------------------------------------------- signals


def on_stop_signals(
    callback: Callable[[int], None], signals: tuple[int, ...] = STOP_SIGNALS
) -> Callable[[], None]:
    """Call `callback(signum)` on the running loop for each of `signals`; returns the
    function that puts the previous handling back."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, callback, sig)
            installed.append(sig)

    def remove() -> None:
        for sig in installed:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)

    return remove


def hard_stop_after(delay_s: float, code: int) -> asyncio.TimerHandle:
    """Past `delay_s`, kill every group held and leave the process with `code` (the
    orderly end did not finish in time)."""
    return asyncio.get_running_loop().call_later(delay_s, hard_stop, code)


def hard_stop(code: int) -> None:
    """Kill everything started, flush the std streams, leave now."""
    with contextlib.suppress(Exception):
        close_all()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
