"""A listening server's sockets: each accepted connection is one more client of the
process's sessions (shared.py), on the native dialect: a `Connection` with its
`SemaServer` front, attached to the process's host.

- `unix[:PATH]`: a Unix socket, by default `$SEMA_ROOT/run/<pid>.sock`, in a folder only
  its owner can enter (0700, checked: a directory of ours, not a link). The socket is
  0600 and a peer of another user is refused (SO_PEERCRED), so no token is needed.
  Something already at PATH: a socket of ours that nobody answers on (left by a dead
  server) is replaced; a symbolic link is removed, never followed; a socket a live
  server answers on, one of another user, or any other file, is left alone and the
  listener refused.
- `tcp:127.0.0.1:PORT` (loopback only; PORT 0: any free port): a random token is written
  to `$SEMA_ROOT/run/<pid>.token` (0600). The client's first message must be
  `initialize` with `params.token` equal to it; anything else is answered -32001 and the
  connection closed. The token is taken out of the message before it goes further.
- Framing is the client's choice, read from its first byte: `{` is one JSON message per
  line, anything else Content-Length headers.
- Beside the endpoint, `$SEMA_ROOT/run/<pid>.json` (0600) says how to reach it:
  `{pid, endpoint, tokenFile?, cwd, startedAt, framing}`; removed when the listener
  closes (a client skips the files of dead pids).
- A client that does not read what it is sent is dropped once `MAX_UNREAD_BYTES` wait
  for it (it can attach again with `afterSeq`): a stalled reader never makes the process
  hold an unbounded stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hmac
import json
import logging
import os
import secrets
import socket
import stat
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.core.root import sema_root
from sema_rpc.protocol_core import ErrorCode
from sema_rpc.rpc.connection import dumps as _dumps
from sema_rpc.rpc.connection import error_message as _error_message
from sema_rpc.rpc.framing import ContentLengthDecoder, FrameWriter, JsonlDecoder, max_message_bytes
from sema_rpc.rpc.server import SemaServer

log = logging.getLogger(__name__)

MAX_UNREAD_BYTES = 64 * 1024 * 1024
"""A connection with this much written and not read yet is dropped."""

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ListenError(Exception):
    """The listener cannot be opened; the message says why."""


def run_dir() -> Path:
    """`$SEMA_ROOT/run`, created 0700; refused unless it is a directory of ours (a link
    there is never followed)."""
    folder = sema_root() / "run"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ListenError(f"{folder} is not a directory of this user's: not listening there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)
    return folder


class SocketWriter(FrameWriter):
    """FrameWriter on an accepted socket's transport."""

    def __init__(self, transport: asyncio.WriteTransport, jsonl: bool):
        super().__init__(None, jsonl)  # type: ignore[arg-type]
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def flush(self) -> None:
        super().flush()
        transport = self._transport
        if (
            transport is not None
            and not self.closed
            and transport.get_write_buffer_size() > MAX_UNREAD_BYTES
        ):
            log.warning("a client read nothing of %d bytes: dropped", MAX_UNREAD_BYTES)
            self.closed = True
            transport.abort()


class _Connection(asyncio.Protocol):
    """One accepted socket: the framing sniffed from the first byte, the token checked
    on a TCP listener, then every message to a `SemaServer` of the host."""

    def __init__(self, host: Any, token: str | None, unix: bool):
        self.host = host
        self.token = token
        self.unix = unix
        self.transport: asyncio.Transport | None = None
        self.server: SemaServer | None = None
        self.decoder: JsonlDecoder | ContentLengthDecoder | None = None
        self._head = b""
        self._refused = False
        self._closing: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.unix and not _same_user(transport):
            log.warning("a connection from another user: refused")
            self._refused = True
            transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self.decoder is None:
            self._head += data
            first = self._head.lstrip()
            if not first:
                return
            data, self._head = self._head, b""
            self._start(jsonl=first[:1] == b"{")
        assert self.decoder is not None
        self.decoder.feed(data)

    def _start(self, *, jsonl: bool) -> None:
        assert self.transport is not None
        server = SemaServer(SocketWriter(self.transport, jsonl), host=self.host)  # type: ignore[arg-type]
        server.close_connection = self._close
        self.server = server  # attached to the host (SemaServer does it)
        decoder_cls = JsonlDecoder if jsonl else ContentLengthDecoder
        self.decoder = decoder_cls(self._on_body, server.on_frame_error, max_message_bytes())

    def _on_body(self, body: bytes) -> None:
        if self._refused:
            return
        assert self.server is not None
        if self.token is not None and not self._authorize(body):
            return
        self.server.on_body(body)

    def _authorize(self, body: bytes) -> bool:
        """The first message on a TCP listener: `initialize` with the token (taken out
        of it), or the connection is refused."""
        assert self.server is not None and self.token is not None
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            message = None
        params = message.get("params") if isinstance(message, dict) else None
        if (
            isinstance(params, dict)
            and message.get("method") == "initialize"  # type: ignore[union-attr]
            and _same_token(params.pop("token", None), self.token)
        ):
            self.token = None
            self.server.on_body(_dumps(message))
            return False
        msg_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(msg_id, str | int) or isinstance(msg_id, bool):
            msg_id = None
        self.server.conn.send(
            _error_message(
                msg_id,
                ErrorCode.UNAUTHORIZED,
                "unauthorized: the first message must be `initialize` with the token of "
                "the server's token file",
            )
        )
        self._refused = True
        self._close()
        return False

    def _close(self) -> None:
        if self.server is not None:
            self.server.writer.flush()
        if self.transport is not None:
            self.transport.close()  # after what is buffered is written

    def eof_received(self) -> bool:
        """The client is done sending (a half-close, as `nc -N` does): it follows nothing
        any more, and the connection closes once its requests are answered."""
        server = self.server
        if server is None or self._refused:
            return False
        assert self.decoder is not None
        self.decoder.eof()
        self.host.detach(server)
        self._closing = asyncio.ensure_future(self._close_when_answered(server))
        return True

    async def _close_when_answered(self, server: SemaServer) -> None:
        waiting = server.conn.in_flight()
        if waiting:
            await asyncio.wait(waiting)
        self._close()

    def connection_lost(self, exc: Exception | None) -> None:
        server = self.server
        if server is None:
            return
        if self.decoder is not None:
            self.decoder.eof()
        server.writer.closed = True
        self.host.detach(server)


def _same_user(transport: asyncio.BaseTransport) -> bool:
    sock = transport.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (AttributeError, OSError):
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _same_token(presented: Any, token: str) -> bool:
    return isinstance(presented, str) and hmac.compare_digest(
        presented.encode("utf-8", "surrogatepass"), token.encode("ascii")
    )


@dataclass
class Listener:
    """An open listener and the files that describe it."""

    endpoint: str
    server: asyncio.AbstractServer
    connections: list[_Connection] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    socket_path: Path | None = None
    socket_inode: int | None = None
    token_file: Path | None = None

    def close(self) -> None:
        self.server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                if os.lstat(self.socket_path).st_ino == self.socket_inode:
                    os.unlink(self.socket_path)
        for path in self.files:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _claim(path: Path) -> None:
    """Make room at `path` for our socket, or refuse (ListenError)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        log.warning("%s is a symbolic link: removed (never followed)", path)
        os.unlink(path)
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ListenError(f"{path} exists and is not a socket: not replaced")
    if info.st_uid != os.getuid():
        raise ListenError(f"{path} is another user's socket: not replaced")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError, TimeoutError):
        os.unlink(path)  # left by a server that is gone
        return
    finally:
        probe.close()
    raise ListenError(f"{path}: a running server listens there")


def _write_private(path: Path, text: str) -> None:
    """Write `path` 0600, never through a link, replacing what was there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def _socket_path(text: str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(text)))


async def open_listener(spec: str, host: Any) -> Listener:
    """Open the listener `spec` names for `host`'s sessions (ListenError: why not)."""
    kind, _, rest = spec.partition(":")
    loop = asyncio.get_running_loop()
    folder = run_dir()
    pid = os.getpid()
    holder: list[_Connection] = []

    def factory(token: str | None, unix: bool) -> Any:
        def make() -> _Connection:
            conn = _Connection(host, token, unix)
            holder.append(conn)
            return conn

        return make

    info: dict[str, Any] = {"pid": pid}
    if kind == "unix":
        path = _socket_path(rest) if rest else folder / f"{pid}.sock"
        if len(os.fsencode(path)) >= 108:
            raise ListenError(f"{path}: too long for a Unix socket path")
        _claim(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from exc
        finally:
            os.umask(old_mask)
        server = await loop.create_unix_server(factory(None, True), sock=sock)
        endpoint = f"unix:{path}"
        listener = Listener(endpoint, server, holder, socket_path=path)
        listener.socket_inode = os.lstat(path).st_ino
    elif kind == "tcp":
        address, _, port_text = rest.rpartition(":")
        address = address.strip("[]")
        if address not in _LOOPBACK:
            raise ListenError(f"tcp:{rest}: only a loopback address (127.0.0.1) may listen")
        if not port_text.isdigit() or int(port_text) > 65535:
            raise ListenError(f"tcp:{rest}: the port must be a number (0: any free port)")
        token = secrets.token_urlsafe(32)
        token_file = folder / f"{pid}.token"
        _write_private(token_file, token + "\n")
        try:
            server = await loop.create_server(
                factory(token, False), address, int(port_text), reuse_address=True
            )
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(token_file)
            raise ListenError(f"cannot listen on tcp:{rest}: {exc.strerror or exc}") from exc
        bound = server.sockets[0].getsockname()
        host_text = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        endpoint = f"tcp:{host_text}:{bound[1]}"
        listener = Listener(endpoint, server, holder, files=[token_file], token_file=token_file)
        info["tokenFile"] = str(token_file)
    else:
        raise ListenError(f"--listen {spec}: expected unix[:PATH] or tcp:127.0.0.1:PORT")
    info.update(
        endpoint=endpoint,
        cwd=os.getcwd(),
        startedAt=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        framing="content-length",
    )
    if listener.token_file is not None:
        info["tokenFile"] = str(listener.token_file)
    info_file = folder / f"{pid}.json"
    _write_private(info_file, json.dumps(info) + "\n")
    listener.files.append(info_file)
    return listener
