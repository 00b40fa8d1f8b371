"""Servers for tests, forked from an interpreter that has already imported the server.

Starting `python -m sema_rpc` costs about 0.15 s of CPU on a small machine before the
server reads its first message: the interpreter, asyncio and the server's own modules.
The suite starts several hundred servers, so each pytest worker keeps one *preloader*:
a process that imported those modules once and forks a server per request. Each forked
server is a real process of its own: its own pid, its stdin/stdout/stderr are pipes to
the test, its environment and working directory are the ones the test asked for, and it
runs `python -m sema_rpc`'s `__main__` with the test's arguments. What it skips is the
interpreter's start and the imports; a test about those (what start-up imports, what the
environment's `PYTHON*` variables change, how a server dies with its parent) gets an
exec'd server: `spawn_server(..., fresh_interpreter=True)`, or automatically whenever the
test's environment sets a `PYTHON*` variable that acts while an interpreter starts (for
the stdio and bytecode settings, `_PRELOADABLE`, the worker keeps a preloader each).
`SEMA_TEST_SERVERS=exec` makes every server an exec'd one (CONTRIBUTING.md). What the
kernel recorded at the exec, `/proc/<pid>/cmdline` and `/proc/<pid>/environ`, is the
preloader's: a test that reads those of the server itself needs an exec'd one (the
server's own children are exec'd with its environment, as always).

The preloader and the pytest worker talk over a socket pair: a request is one JSON
datagram (arguments, environment, working directory, whether to start a new session)
carrying the three pipe ends as `SCM_RIGHTS`; the preloader answers with the pid, and
with the exit status once it has reaped the server (a test cannot `waitpid` a process
it did not fork). The preloader exits when the worker closes its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

PRELOAD = (
    "asyncio",
    "argparse",
    "ctypes",
    "dataclasses",
    "datetime",
    "difflib",
    "runpy",
    "shutil",
    "sema_client",
    "sema_rpc.cli",
    "sema_rpc.log",
    "sema_rpc.rpc.server",
    "sema_rpc.rpc.host",
    "sema_rpc.acp.server",
    "sema_rpc.acp.front",
    "sema_rpc.engine.engine",
    "sema_rpc.engine.session.sessions",
    "sema_rpc.engine.loop.run_tools",
    "sema_rpc.core.trust",
    "sema_rpc.core.project.custom_commands",
    "sema_rpc.mcp.config",
    "sema_rpc.protocol_plain.settings",
    "sema_rpc.protocol_plain.tools",
    "sema_rpc.providers.anthropic",
    "sema_rpc.providers.http11",
    "sema_rpc.providers.tls",
    "sema_rpc.sandbox.linux",
    "sema_rpc.tools.registry",
    "sema_rpc.tools.input_plain",
    "sema_rpc.tools.read",
    "sema_rpc.tools.write",
    "sema_rpc.record.recorder",
)
"""What the suite's servers import: about everything a native or ACP session with the
built-in tools loads, and `sema-rpc run`. None of these reads the environment, starts a
thread or opens a file when imported, and the server never asks whether one of them is
loaded (`sys.modules.get(...)`: it does for the process table, the provider registry,
`tempfile`, the SDKs, pydantic and anyio, which therefore stay out; a test checks). A
forked server has these before it starts, so a test that asserts what a server has *not*
imported runs an exec'd one."""

_MAIN = str(REPO / "sema_rpc" / "__main__.py")
_MAX_DATAGRAM = 1 << 20


# ---------------------------------------------------------------------- the preloader


def _preloader_main(fd: int) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    assert threading.active_count() == 1, "a preloaded module started a thread"
    control = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    control.send(b'{"ready": true}')
    while True:
        with contextlib.suppress(InterruptedError):
            ready, _, _ = select.select([control, wake_r], [], [])
            if wake_r in ready:
                os.read(wake_r, 4096)
                _reap(control)
            if control in ready:
                message, fds, _, _ = socket.recv_fds(control, _MAX_DATAGRAM, 3)
                if not message:
                    return  # the worker is gone
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    _run_server(request, fds)  # never returns
                for received in fds:
                    os.close(received)
                control.send(json.dumps({"id": request["id"], "pid": pid}).encode())
                _reap(control)


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        control.send(json.dumps({"exited": pid, "code": code}).encode())


def _run_server(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become `python -m sema_rpc <args>` and leave like it."""
    import atexit
    import runpy
    import traceback

    code: int = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if request["new_session"]:
            os.setsid()
        for target, received in enumerate(fds):
            os.dup2(received, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # what `python -m` puts first
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [_MAIN, *request["args"]]
        try:
            runpy.run_module("sema_rpc", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as leaving:
            code = _exit_code(leaving.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:
            traceback.print_exc()
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter does at exit
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if code == -signal.SIGINT:  # the interpreter leaves a KeyboardInterrupt by SIGINT
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# ---------------------------------------------------------------------- the worker's side


class ForkedProcess:
    """What a test holds of a forked server: the shape of `asyncio.subprocess.Process`
    that the clients use (pid, the three streams, returncode, wait, kill, terminate)."""

    def __init__(
        self,
        pid: int,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader | None,
        exited: asyncio.Future[int],
    ):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._exited = exited

    def _set_exit(self, code: int) -> None:
        self.returncode = code
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """A pipe's write side for `asyncio.StreamWriter` (drain and wait_closed)."""

    def __init__(self) -> None:
        super().__init__()
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._closed.done():
            self._closed.set_result(None)

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future[None]:
        return self._closed


class Preloader:
    """This worker's preloader process and the thread that reads its answers."""

    def __init__(self, env: Mapping[str, str]):
        self.env = dict(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"from tests.support.server_forks import _preloader_main; _preloader_main({theirs.fileno()})",
            ],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=REPO,
        )
        theirs.close()
        self._control = ours
        ready = ours.recv(_MAX_DATAGRAM)
        if not ready:
            raise RuntimeError("the server preloader exited while importing the server")
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[int]]] = {}
        self._processes: dict[int, tuple[asyncio.AbstractEventLoop, ForkedProcess]] = {}
        self._early_exits: dict[int, int] = {}
        self.closed = False
        threading.Thread(target=self._read_answers, name="server-preloader", daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _read_answers(self) -> None:
        while True:
            try:
                message = self._control.recv(_MAX_DATAGRAM)
            except OSError:
                message = b""
            if not message:
                self._gone()
                return
            answer = json.loads(message)
            with self._lock:
                if "pid" in answer:
                    loop, future = self._pending.pop(answer["id"])
                    _call_in(loop, _resolve, future, answer["pid"])
                else:
                    entry = self._processes.pop(answer["exited"], None)
                    if entry is None:  # reaped before the spawner registered it
                        self._early_exits[answer["exited"]] = answer["code"]
                    else:
                        loop, process = entry
                        process.returncode = answer["code"]
                        _call_in(loop, process._set_exit, answer["code"])

    def _gone(self) -> None:
        """The preloader ended (closed, or it crashed): what waits on it fails at once
        instead of hanging the test."""
        lost = RuntimeError("the server preloader is gone: its servers' exit codes are lost")
        with self._lock:
            self.closed = True
            for loop, future in self._pending.values():
                _call_in(loop, _fail, future, lost)
            for loop, process in self._processes.values():
                _call_in(loop, _fail, process._exited, lost)
            self._pending.clear()
            self._processes.clear()

    async def spawn(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str],
        new_session: bool,
        limit: int,
        pipe_stderr: bool,
    ) -> ForkedProcess:
        loop = asyncio.get_running_loop()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe() if pipe_stderr else (-1, os.dup(2))
        forked: asyncio.Future[int] = loop.create_future()
        with self._lock:
            if self.closed:
                raise RuntimeError("the server preloader is gone")
            self._next_id += 1
            request_id = self._next_id
            self._pending[request_id] = (loop, forked)
        request = {
            "id": request_id,
            "args": list(args),
            "env": dict(env),
            "cwd": str(cwd),
            "new_session": new_session,
        }
        try:
            socket.send_fds(
                self._control, [json.dumps(request).encode()], [stdin_r, stdout_w, stderr_w]
            )
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
        pid = await forked
        stdout = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stdout), open(stdout_r, "rb", 0)
        )
        stderr = None
        if pipe_stderr:
            stderr = asyncio.StreamReader(limit=limit)
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stderr), open(stderr_r, "rb", 0)
            )
        transport, protocol = await loop.connect_write_pipe(_WriteProtocol, open(stdin_w, "wb", 0))
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        process = ForkedProcess(pid, stdin, stdout, stderr, loop.create_future())
        with self._lock:
            early = self._early_exits.pop(pid, None)
            if early is None:
                self._processes[pid] = (loop, process)
        if early is not None:
            process._set_exit(early)
        return process


def _resolve(future: asyncio.Future[int], value: int) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[int], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)


def _call_in(loop: asyncio.AbstractEventLoop, callback: Any, *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # that test's loop is closed: nobody waits
        loop.call_soon_threadsafe(callback, *args)


_PRELOADABLE = frozenset({"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE"})
"""Interpreter settings a preloader can be started with on behalf of its servers (they
shape the interpreter the server runs in, the same before and after the fork). Any other
`PYTHON*` variable (a path, import timing, a start-up hook) acts while the interpreter
starts and imports: a server whose environment sets one differently is exec'd."""

_preloaders: dict[tuple[tuple[str, str], ...], Preloader] = {}
_preloaders_lock = threading.Lock()


def _preloader_for(env: Mapping[str, str]) -> Preloader | None:
    """The worker's preloader for `env`'s interpreter settings (started on first use),
    or None when `env` needs an interpreter of its own."""
    own = {name: value for name, value in os.environ.items() if name.startswith("PYTHON")}
    wanted = {name: value for name, value in env.items() if name.startswith("PYTHON")}
    if any(
        own.get(name) != wanted.get(name) for name in (own.keys() | wanted.keys()) - _PRELOADABLE
    ):
        return None
    settings = tuple(
        sorted((name, value) for name, value in wanted.items() if name in _PRELOADABLE)
    )
    with _preloaders_lock:
        found = _preloaders.get(settings)
        if found is None or found.closed:
            base = {name: value for name, value in os.environ.items() if name not in _PRELOADABLE}
            found = _preloaders[settings] = Preloader({**base, **dict(settings)})
        return found


def close_preloaders() -> None:
    """End this worker's preloaders (and so account for their servers' CPU)."""
    with _preloaders_lock:
        for found in _preloaders.values():
            found.close()
        _preloaders.clear()


async def spawn_server(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] = REPO,
    new_session: bool = False,
    limit: int,
    pipe_stderr: bool = True,
    fresh_interpreter: bool = False,
) -> ForkedProcess | asyncio.subprocess.Process:
    """`python -m sema_rpc <args>` with stdin, stdout and stderr (unless not
    `pipe_stderr`: then this process's) piped to this process, and exactly `env` as its environment: forked from this worker's preloader, or exec'd
    when `fresh_interpreter` is set, `SEMA_TEST_SERVERS=exec`, or `env` sets a `PYTHON*`
    variable that acts while an interpreter starts (`_PRELOADABLE`)."""
    preloaded = None
    if not fresh_interpreter and os.environ.get("SEMA_TEST_SERVERS") != "exec":
        preloaded = _preloader_for(env)
    if preloaded is not None:
        return await preloaded.spawn(
            args, env=env, cwd=cwd, new_session=new_session, limit=limit, pipe_stderr=pipe_stderr
        )
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if pipe_stderr else None,
        env=dict(env),
        cwd=cwd,
        limit=limit,
        start_new_session=new_session,
    )


def run_server(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] = REPO,
    input: str | None = None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([python, -m, sema_rpc, *args], input=input, capture_output=True,
    text=True, encoding="utf-8", env=env, cwd=cwd, timeout=timeout)` for a server from
    `spawn_server`: the same answer, the same `TimeoutExpired` (after killing it)."""

    async def run() -> subprocess.CompletedProcess[str]:
        process = await spawn_server(args, env=env, cwd=cwd, limit=1 << 26)
        assert process.stdin is not None and process.stdout and process.stderr

        async def feed() -> None:
            assert process.stdin is not None
            with contextlib.suppress(ConnectionError):
                if input:
                    process.stdin.write(input.encode())
                    await process.stdin.drain()
                process.stdin.close()

        async def communicate() -> tuple[bytes, bytes, int]:
            assert process.stdout is not None and process.stderr is not None
            _, out, err = await asyncio.gather(feed(), process.stdout.read(), process.stderr.read())
            return out, err, await process.wait()

        try:
            out, err, code = await asyncio.wait_for(communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise subprocess.TimeoutExpired(["sema-rpc", *args], timeout) from None
        return subprocess.CompletedProcess(["sema-rpc", *args], code, _text(out), _text(err))

    return asyncio.run(run())


def _text(data: bytes) -> str:
    """Decoded as `subprocess.run(text=True, encoding="utf-8")` does (universal newlines)."""
    import io

    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).read()
