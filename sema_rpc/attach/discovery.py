"""Live servers (`$SEMA_ROOT/run/*.json`), their live sessions, and the connection to one."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sema_client import SemaClient

USAGE_ERROR = 2
NOT_FOUND = 1

CONNECT_TIMEOUT_S = 10.0


class AttachError(Exception):
    """Something the user has to fix (no server, no such session, a refused token)."""


@dataclass
class Server:
    """One live server, as its `$SEMA_ROOT/run/<pid>.json` describes it."""

    pid: int
    endpoint: str
    token_file: str | None = None
    cwd: str | None = None
    started_at: str | None = None
    framing: str = "content-length"


@dataclass
class LiveSession:
    server: Server
    session_id: str
    title: str | None = None
    working_dir: str | None = None
    state: str | None = None
    updated_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_dir() -> Path:
    from sema_rpc.core.root import sema_root

    return sema_root() / "run"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discover_servers(folder: Path | None = None) -> list[Server]:
    """The live servers described in `folder` (default `$SEMA_ROOT/run`), newest first.
    Files of dead processes and files that do not parse are skipped."""
    folder = folder if folder is not None else run_dir()
    servers: list[Server] = []
    try:
        entries = sorted(folder.glob("*.json"))
    except OSError:
        return []
    for path in entries:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        pid, endpoint = data.get("pid"), data.get("endpoint")
        if not isinstance(pid, int) or not isinstance(endpoint, str):
            continue
        if not pid_alive(pid):
            continue
        token_file = data.get("tokenFile")
        servers.append(
            Server(
                pid=pid,
                endpoint=endpoint,
                token_file=token_file if isinstance(token_file, str) else None,
                cwd=data.get("cwd") if isinstance(data.get("cwd"), str) else None,
                started_at=data.get("startedAt")
                if isinstance(data.get("startedAt"), str)
                else None,
                framing="jsonl" if data.get("framing") == "jsonl" else "content-length",
            )
        )
    servers.sort(key=lambda s: s.started_at or "", reverse=True)
    return servers


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """`unix:/abs/path` → ("unix", path, 0); `tcp:HOST:PORT` → ("tcp", host, port)."""
    kind, sep, rest = endpoint.partition(":")
    if not sep or not rest:
        raise AttachError(f"not an endpoint: {endpoint!r} (unix:PATH or tcp:127.0.0.1:PORT)")
    if kind == "unix":
        return "unix", os.path.abspath(os.path.expanduser(rest)), 0
    if kind == "tcp":
        host, sep, port = rest.rpartition(":")
        if not sep or not port.isdigit():
            raise AttachError(f"not an endpoint: {endpoint!r} (tcp:127.0.0.1:PORT)")
        return "tcp", host.strip("[]") or "127.0.0.1", int(port)
    raise AttachError(f"not an endpoint: {endpoint!r} (unix:PATH or tcp:127.0.0.1:PORT)")


def check_socket_path(path: str) -> None:
    """Refuse a path that is not a socket owned by this user (never follow a symlink)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise AttachError(f"no server listens on {path}: {exc.strerror}") from exc
    if not stat.S_ISSOCK(info.st_mode):
        raise AttachError(f"{path} is not a socket: not connecting")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise AttachError(f"{path} belongs to another user: not connecting")


def read_token(token_file: str) -> str:
    try:
        return Path(token_file).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AttachError(f"cannot read the token file {token_file}: {exc.strerror}") from exc


async def connect(
    endpoint: str, *, token_file: str | None = None, client_name: str = "sema-rpc attach"
) -> SemaClient:
    """A `SemaClient` on the server at `endpoint`, initialized (the token presented first
    on TCP). The caller registers its request handlers on the result before anything that
    may ask (`session/attach`): `initialize` declares them, so set `handlers` here."""
    client, token = await open_client(endpoint, token_file=token_file)
    await initialize(client, token=token, client_name=client_name)
    return client


async def open_client(
    endpoint: str, *, token_file: str | None = None
) -> tuple[SemaClient, str | None]:
    """An open, started, not yet initialized client on `endpoint`, and the token to present."""
    from sema_client import SemaClient
    from sema_client.framing import STREAM_LIMIT

    kind, where, port = parse_endpoint(endpoint)
    token: str | None = None
    try:
        if kind == "unix":
            check_socket_path(where)
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(where, limit=STREAM_LIMIT), CONNECT_TIMEOUT_S
            )
        else:
            if token_file is None:
                raise AttachError(f"{endpoint} needs a token: pass --token-file")
            token = read_token(token_file)
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(where, port, limit=STREAM_LIMIT), CONNECT_TIMEOUT_S
            )
    except (OSError, TimeoutError) as exc:
        raise AttachError(f"cannot connect to {endpoint}: {exc}") from exc
    client = SemaClient(reader, writer, jsonl=False)
    client.start()
    return client, token


async def initialize(client: SemaClient, *, token: str | None, client_name: str) -> None:
    """`initialize`, declaring the requests this client has handlers for, and `token`."""
    from sema_client import SemaRpcError

    try:
        await asyncio.wait_for(
            client.initialize(client_info=client_name, token=token), CONNECT_TIMEOUT_S
        )
    except SemaRpcError as exc:
        await client.close()
        raise AttachError(f"the server refused the connection: {exc.message}") from exc
    except TimeoutError as exc:
        await client.close()
        raise AttachError("the server did not answer initialize") from exc


async def live_sessions(server: Server, *, token_file: str | None = None) -> list[LiveSession]:
    """The sessions open in `server` (its `session/list` entries marked `live`)."""
    client = await connect(server.endpoint, token_file=token_file or server.token_file)
    try:
        listed = await client.request("session/list", {})
    finally:
        await client.close()
    found: list[LiveSession] = []
    for item in (listed or {}).get("sessions") or []:
        if not isinstance(item, dict) or not item.get("live"):
            continue
        found.append(
            LiveSession(
                server=server,
                session_id=str(item.get("sessionId")),
                title=item.get("title"),
                working_dir=item.get("workingDir"),
                state=item.get("state"),
                updated_at=item.get("updatedAt"),
                extra=item,
            )
        )
    return found


async def all_live_sessions(
    servers: list[Server], *, token_file: str | None = None
) -> tuple[list[LiveSession], list[str]]:
    """Every live session of every server, and one line per server that could not be asked."""
    sessions: list[LiveSession] = []
    problems: list[str] = []
    for server in servers:
        try:
            sessions += await live_sessions(server, token_file=token_file)
        except (AttachError, OSError) as exc:
            problems.append(f"{server.endpoint} (pid {server.pid}): {exc}")
        except Exception as exc:  # a server that answers oddly must not hide the others
            problems.append(f"{server.endpoint} (pid {server.pid}): {type(exc).__name__}: {exc}")
    return sessions, problems


def describe(session: LiveSession) -> str:
    """One line naming a live session for a list."""
    state = session.state or "live"
    title = (session.title or "(no prompt yet)").replace("\n", " ")
    if len(title) > 60:
        title = title[:59] + "…"
    where = session.working_dir or session.server.cwd or ""
    return f"{session.session_id}  [{state}]  {title}  {where}  (pid {session.server.pid})"


def pick(sessions: list[LiveSession], wanted: str | None) -> LiveSession | None:
    """The session named by `wanted` (its id or a unique prefix); without it, the only one."""
    if wanted is None:
        return sessions[0] if len(sessions) == 1 else None
    exact = [s for s in sessions if s.session_id == wanted]
    if exact:
        return exact[0]
    prefixed = [s for s in sessions if s.session_id.startswith(wanted)]
    return prefixed[0] if len(prefixed) == 1 else None
