"""McpManager: a session's MCP servers, each a child process spoken to over stdio, or a
remote server over streamable HTTP or SSE (`McpServerConfig.transport`).

Usage (one manager per session)::

    manager = McpManager(on_server_error=lambda name, msg: ...)
    await manager.start(load_mcp_config(working_dir, params.mcp_servers), timeout_s=10)
    manager.status()   # for session:ready
    manager.tools()    # McpTool instances of the connected servers
    ...
    await manager.aclose()

Each server lives in one long-lived asyncio task that enters the SDK's context managers
(`stdio_client`, `ClientSession`) and exits them itself — anyio requires both in the
same task. The task waits on an event; `aclose()` sets it (or, while the server is still
starting, cancels the task's scope), and the SDK's shielded shutdown closes the
server's stdin, then SIGTERMs / SIGKILLs its process group.

Death: the server's stdout is forwarded through a pipe task we own, so its end of file
(the process exited or closed stdout) is seen at once. A connected server that dies, or
a call that finds the connection broken, marks the server `failed` and calls
`on_server_error(name, message)` once per server. Its tools leave `tools()`.

A server's stderr goes to our log (debug) and its last lines are kept for error
messages ("exited during startup: <traceback tail>").

`mcp` is imported inside functions only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from sema_rpc.core.processes import supervisor

from .config import McpConfig, McpServerConfig

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp_types import CallToolResult

    from .tool import McpTool

__all__ = ["McpManager", "ServerErrorCallback", "ServerState"]

_start_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _sdk_start_lock() -> asyncio.Lock:
    """The running loop's lock around the SDK starting a stdio server (every manager of
    the process shares it: each session has its own manager)."""
    loop = asyncio.get_running_loop()
    lock = _start_locks.get(loop)
    if lock is None:
        lock = _start_locks[loop] = asyncio.Lock()
    return lock


log = logging.getLogger(__name__)

ServerState = Literal["starting", "connected", "failed", "stopped", "untrusted"]
ServerErrorCallback = Callable[[str, str], None]
"""`(server_name, message)`; called synchronously from the event loop, must not block."""

DEFAULT_START_TIMEOUT_S = 10.0
_START_GRACE_S = 5.0
"""start() gives up on a server this long after its own timeout (should never happen)."""
_MAX_TOOL_PAGES = 100
_STDERR_LINES = 40
_STDERR_LINE_CHARS = 400
_STDERR_TAIL_LINES = 10
_STDERR_TAIL_CHARS = 1500
_STDERR_SETTLE_S = 0.5
"""How long a dead server's report waits for its last stderr lines (something it started
may still hold the pipe)."""
PASSTHROUGH_ENV = (
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
"""Inherited on top of the SDK's minimal set (HOME, PATH, SHELL, TERM, USER, LOGNAME).

Locale, temp dir, proxies and CA bundles only: no secrets. Anything else a server needs
is configured in its `env` (files may say `"TOKEN": "${TOKEN}"`)."""
MCP_MISSING = (
    "the `mcp` package is not installed: it comes with every sema-rpc install; "
    "reinstall sema-rpc (e.g. `uv tool install --reinstall sema-rpc`)"
)


class _StderrTail:
    """A pipe for a server's stderr: lines go to the log, the last few are kept."""

    def __init__(self, server: str):
        self.server = server
        self.lines: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._write_fd: int | None = None
        self._thread: threading.Thread | None = None

    def open(self) -> int:
        read_fd, write_fd = os.pipe()
        self._write_fd = write_fd
        self._thread = threading.Thread(
            target=self._drain, args=(read_fd,), name=f"mcp-stderr-{self.server}", daemon=True
        )
        self._thread.start()
        return write_fd

    def close_writer(self) -> None:
        """Our copy of the write end; the child keeps its own until it exits."""
        if self._write_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._write_fd)
            self._write_fd = None

    def _drain(self, read_fd: int) -> None:
        with open(read_fd, "rb", closefd=True) as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip()
                if not line:
                    continue
                log.debug("mcp[%s] stderr: %s", self.server, line)
                self.lines.append(line[:_STDERR_LINE_CHARS])

    async def settle(self) -> None:
        """Returns once what the server wrote to stderr is read to its end (it exited, so
        its write end closed) or after `_STDERR_SETTLE_S`: a death's report then carries
        the server's last words, which another thread reads."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            await anyio.to_thread.run_sync(thread.join, _STDERR_SETTLE_S)

    def tail(self) -> str:
        text = "\n".join(list(self.lines)[-_STDERR_TAIL_LINES:])
        return text[-_STDERR_TAIL_CHARS:]


class _ServerHandle:
    """One server: its task, connection, tools and state."""

    def __init__(self, manager: McpManager, config: McpServerConfig):
        self.manager = manager
        self.config = config
        self.name = config.name
        self.state: ServerState = "starting"
        self.error: str | None = None
        self.tools: list[McpTool] = []
        self.instructions: str | None = None
        self.session: ClientSession | None = None
        self.ready = anyio.Event()
        self.done = anyio.Event()
        self.stderr = _StderrTail(config.name)
        self.task: asyncio.Task[None] | None = None
        self._wake = anyio.Event()
        self._stopping = False
        self._reported = False
        self._scope = anyio.CancelScope()

    # ------------------------------------------------------------------ lifecycle

    def request_stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self.state == "starting":
            self._scope.cancel()

    def _fail(self, message: str) -> None:
        if self.state in ("starting", "connected"):
            self.state = "failed"
            self.error = message
        self.ready.set()

    def _with_stderr(self, message: str) -> str:
        tail = self.stderr.tail()
        return f"{message}; stderr:\n{tail}" if tail else message

    def mark_dead(self, message: str) -> None:
        """A connected server is gone: failed state, and tell the engine once."""
        if self._stopping or self.state != "connected":
            return
        self.state = "failed"
        self.error = message
        self.session = None
        if self._reported:
            return
        self._reported = True
        self.manager._report(self.name, message)

    async def run(self, timeout_s: float) -> None:
        try:
            with self._scope:
                await self._run(timeout_s)
        except Exception as exc:  # teardown noise, or a bug: never escapes the task
            log.warning("MCP server %r: %s: %s", self.name, type(exc).__name__, exc)
            if self.config.transport != "stdio":  # a remote transport's task group failed
                self._fail(self._start_error(exc, timeout_s))
            else:
                self._fail(f"{type(exc).__name__}: {exc}")
        finally:
            self.stderr.close_writer()
            self.session = None
            if self.state in ("starting", "connected"):
                self.state = "stopped"
            self.ready.set()
            self.done.set()

    async def _run(self, timeout_s: float) -> None:
        try:
            from mcp import ClientSession, StdioServerParameters, stdio_client
            from mcp_types import Implementation
        except ImportError:
            self._fail(MCP_MISSING)
            return

        from sema_rpc import __version__

        cfg = self.config
        env = {k: v for k in PASSTHROUGH_ENV if (v := os.environ.get(k)) is not None}
        params = StdioServerParameters(
            command=cfg.command, args=cfg.args, env=env | cfg.env, cwd=cfg.cwd
        )
        async with AsyncExitStack() as stack:
            try:
                if cfg.transport != "stdio":
                    read, write = await self._connect_remote(stack, timeout_s)
                else:
                    errlog = self.stderr.open()
                    stack.callback(supervisor().release_gone)  # after the SDK stopped it
                    # One SDK start at a time in this process: while the lock is held, a
                    # session leader of ours that nobody holds yet is this server.
                    async with _sdk_start_lock():
                        try:
                            read, write = await stack.enter_async_context(
                                stdio_client(params, errlog=cast(Any, errlog))
                            )
                        except BaseException:
                            # Cancelled (an aclose while starting) or failed after the SDK
                            # started the process: its context never entered, so the SDK
                            # will not stop it. End it here.
                            for pid in supervisor().adopt_child_sessions():
                                supervisor().kill_group(pid)
                            raise
                        finally:
                            self.stderr.close_writer()
                        # The SDK started the server in a session of its own: hand it to
                        # the process supervisor, so it ends with us however we end.
                        supervisor().adopt_child_sessions()
                # Forward the server's messages through a stream we own: its end is
                # the server's stdout closing, i.e. the process is gone.
                fwd_send, fwd_recv = anyio.create_memory_object_stream[Any](0)
                pipes = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(pipes.cancel_scope.cancel)
                pipes.start_soon(self._forward, read, fwd_send)
                session = await stack.enter_async_context(
                    ClientSession(
                        fwd_recv,
                        write,
                        client_info=Implementation(name="sema-rpc", version=__version__),
                    )
                )
                with anyio.fail_after(timeout_s):
                    init = await session.initialize()
                    tools = await self._list_tools(session) if init.capabilities.tools else []
            except Exception as exc:
                from mcp import MCPError
                from mcp_types import CONNECTION_CLOSED

                if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
                    await self.stderr.settle()  # it exited: its last words, for the report
                self._fail(self._start_error(exc, timeout_s))
                return
            self.instructions = init.instructions or None
            self.tools = self.manager._make_tools(self, tools)
            self.session = session
            self.state = "connected"
            self.ready.set()
            log.info("MCP server %r connected: %d tools", self.name, len(self.tools))
            await self._wake.wait()
            if not self._stopping:
                await self.stderr.settle()
                self.mark_dead(self._death_message())

    async def _connect_remote(self, stack: AsyncExitStack, timeout_s: float) -> tuple[Any, Any]:
        """The streams of a remote server: streamable HTTP (`http`) or SSE (`sse`)."""
        cfg = self.config
        assert cfg.url is not None
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            return await stack.enter_async_context(
                sse_client(cfg.url, headers=cfg.headers or None, timeout=timeout_s)
            )
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = await stack.enter_async_context(
            create_mcp_http_client(headers=cfg.headers or None)
        )
        return await stack.enter_async_context(streamable_http_client(cfg.url, http_client=client))

    async def _forward(self, read: Any, send: Any) -> None:
        try:
            async with send:
                async for item in read:
                    await send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            self._wake.set()

    async def _list_tools(self, session: ClientSession) -> list[Any]:
        from mcp_types import PaginatedRequestParams

        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _start_error(self, exc: BaseException, timeout_s: float) -> str:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        cfg = self.config
        if isinstance(exc, TimeoutError):  # before OSError: TimeoutError is one
            return self._with_stderr(f"no answer to initialize within {timeout_s:g}s")
        if cfg.transport != "stdio":
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
                exc = exc.exceptions[0]  # the transport's task group: its first failure
            return f"cannot connect to {cfg.url}: {type(exc).__name__}: {exc}"
        if isinstance(exc, OSError) and cfg.cwd and not os.path.isdir(cfg.cwd):
            return f"cannot start {cfg.command!r}: working directory {cfg.cwd} does not exist"
        if isinstance(exc, FileNotFoundError):
            return f"cannot start {cfg.command!r}: command not found"
        if isinstance(exc, PermissionError):
            return f"cannot start {cfg.command!r}: permission denied"
        if isinstance(exc, OSError):
            return f"cannot start {cfg.command!r}: {exc.strerror or exc}"
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            return self._with_stderr("the server exited during startup")
        if isinstance(exc, MCPError):
            return f"the server refused to start: {exc.message}"
        return self._with_stderr(f"startup failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> CallToolResult:
        """The server's result; McpCallError (naming the server) when there is none."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        from .tool import McpCallError  # loaded with the tools, once a server connected

        session = self.session
        if self.state != "connected" or session is None:
            prefix = f"MCP server {self.name!r}"
            if self.error and self.error.startswith(prefix):
                raise McpCallError(self.error)
            why = f": {self.error}" if self.error else ""
            raise McpCallError(f"{prefix} is not running{why}")
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(
                    f"MCP server {self.name!r}: {tool} timed out after {timeout_s:g}s"
                ) from None
            if exc.code == CONNECTION_CLOSED:
                raise McpCallError(await self._connection_lost()) from None
            raise McpCallError(f"MCP server {self.name!r}: {tool} failed: {exc.message}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            raise McpCallError(await self._connection_lost()) from None

    def _death_message(self) -> str:
        return self._with_stderr(f"MCP server {self.name!r} exited (connection lost)")

    async def _connection_lost(self) -> str:
        if not self._stopping:
            await self.stderr.settle()
        if self._stopping:
            return f"MCP server {self.name!r} was stopped"
        if self.state == "failed" and self.error:
            return self.error
        message = self._death_message()
        self.mark_dead(message)
        self._wake.set()
        return message

    def status(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": self.name,
            "state": "failed" if self.state == "starting" else self.state,
            "tools": [t.name for t in self.tools] if self.state == "connected" else [],
            "source": self.config.source,
        }
        if self.state == "starting":
            entry["error"] = "still starting"
        elif self.error:
            entry["error"] = self.error
        return entry


class McpManager:
    """The MCP servers of one session."""

    def __init__(self, on_server_error: ServerErrorCallback | None = None):
        self.on_server_error = on_server_error
        self._servers: dict[str, _ServerHandle] = {}
        self._extra_status: list[dict[str, Any]] = []
        self._tool_names: set[str] = set()
        self._closed = False

    async def start(
        self,
        servers: McpConfig | Iterable[McpServerConfig],
        timeout_s: float = DEFAULT_START_TIMEOUT_S,
    ) -> list[dict[str, Any]]:
        """Start every server concurrently; return when each is connected or failed.

        Never raises for a server's sake: failures are in `status()`. With an
        `McpConfig`, its config errors are listed in `status()` as failed entries
        (named after the server, or after the file for a broken file). Disabled servers
        are listed as `stopped`. Names already started are skipped.
        """
        if self._closed:
            raise RuntimeError("McpManager is closed")
        if isinstance(servers, McpConfig):
            for error in servers.errors:
                if any(
                    e["source"] == error.source and e["name"] in (error.server, error.source)
                    for e in self._extra_status
                ):
                    continue
                self._extra_status.append(
                    {
                        "name": error.server or error.source,
                        "state": "failed",
                        "tools": [],
                        "source": error.source,
                        "error": error.message if error.server else error.describe(),
                    }
                )
            configs: Iterable[McpServerConfig] = servers.servers
        else:
            configs = servers
        started: list[_ServerHandle] = []
        for cfg in configs:
            held = self._servers.get(cfg.name)
            if held is not None and held.state == "untrusted" and held.config is cfg:
                del self._servers[cfg.name]  # trusted since: it starts now
            if cfg.name in self._servers:
                log.warning("MCP server %r is already started; ignoring another", cfg.name)
                continue
            handle = _ServerHandle(self, cfg)
            self._servers[cfg.name] = handle
            if cfg.disabled:
                handle.state = "stopped"
                handle.error = "disabled"
                handle.ready.set()
                handle.done.set()
                continue
            handle.task = asyncio.create_task(handle.run(timeout_s), name=f"mcp:{cfg.name}")
            started.append(handle)
        with anyio.move_on_after(timeout_s + _START_GRACE_S):
            for handle in started:
                await handle.ready.wait()
        for handle in started:
            if not handle.ready.is_set():
                handle._fail(f"no answer to initialize within {timeout_s:g}s")
                handle._scope.cancel()
        return self.status()

    def hold(self, configs: Iterable[McpServerConfig], reason: str) -> None:
        """List servers the user has not trusted (yet) as `untrusted`, with `reason`,
        without starting them; `start()` with the same configs starts them later."""
        for cfg in configs:
            if cfg.name in self._servers:
                continue
            handle = _ServerHandle(self, cfg)
            handle.state = "untrusted"
            handle.error = reason
            handle.ready.set()
            handle.done.set()
            self._servers[cfg.name] = handle

    def set_reason(self, names: Iterable[str], reason: str) -> None:
        """A new `error` for servers still `untrusted` (refused, not answered)."""
        for name in names:
            handle = self._servers.get(name)
            if handle is not None and handle.state == "untrusted":
                handle.error = reason

    def status(self) -> list[dict[str, Any]]:
        """`[{name, state: connected|failed|stopped|untrusted, error?, tools, source}]`."""
        return [h.status() for h in self._servers.values()] + [dict(e) for e in self._extra_status]

    def tools(self) -> list[McpTool]:
        """The tools of every connected server, in server order."""
        return [t for h in self._servers.values() if h.state == "connected" for t in h.tools]

    def instructions(self) -> dict[str, str]:
        """Server name → the instructions it sent at initialize (for the system prompt)."""
        return {
            h.name: h.instructions
            for h in self._servers.values()
            if h.state == "connected" and h.instructions
        }

    async def aclose(self) -> None:
        """Stop every server and wait for its process to be gone. Idempotent."""
        self._closed = True
        handles = list(self._servers.values())
        for handle in handles:
            handle.request_stop()
        tasks = [h.task for h in handles if h.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for handle in handles:
            if handle.state == "connected":
                handle.state = "stopped"

    async def __aenter__(self) -> McpManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ internals

    def _make_tools(self, handle: _ServerHandle, listed: list[Any]) -> list[McpTool]:
        # Here, not at the top: a project whose servers are held untrusted never loads
        # the tools' input models (pydantic).
        from .tool import MAX_TOOL_NAME, McpTool, mcp_tool_name

        tools: list[McpTool] = []
        for item in listed:
            name = mcp_tool_name(handle.name, item.name)
            if name in self._tool_names:
                # Two names that sanitise alike: keep both, the later one with a suffix.
                for i in range(2, 1000):
                    suffix = f"_{i}"
                    candidate = name[: MAX_TOOL_NAME - len(suffix)] + suffix
                    if candidate not in self._tool_names:
                        name = candidate
                        break
            self._tool_names.add(name)
            schema = item.input_schema if isinstance(item.input_schema, dict) else {}
            tools.append(McpTool(handle, item.name, item.description, schema, name=name))
        return tools

    def _report(self, name: str, message: str) -> None:
        log.warning("%s", message)
        if self.on_server_error is None:
            return
        try:
            self.on_server_error(name, message)
        except Exception:
            log.exception("on_server_error callback failed")
