"""`sema-rpc attach [SESSION]`: follow a session another sema-rpc process hosts, live.

A server started with `--listen` (or `sema-rpc serve`, or `sema-rpc run --listen`) writes
`$SEMA_ROOT/run/<pid>.json`: its endpoint (`unix:/abs/path` or `tcp:127.0.0.1:PORT`), the
token file of a TCP listener, its working directory. `attach` reads those files, skips the
ones whose process is gone, asks each live server for its live sessions (`session/list`
entries marked `live`), and attaches to one (`session/attach`) with the Python client
(`sema_client.SemaClient`) over the socket, Content-Length framing.

What it prints: the earlier conversation, briefly (`session/messages`: the last messages,
each cut to a few lines), then the live stream as `sema-rpc run --format text` prints it
(the answer text on stdout, one line per tool call on stderr). Consent requests, questions
and plan approvals are asked at the terminal; the first client to answer wins, and when
another one did, the question is withdrawn and the line says who answered. A line typed
while the session is idle is sent as a prompt; while it works, as a steer
(`session/prompt` with `delivery: "steer"`). Ctrl-C interrupts the running turn; Ctrl-D
(end of input) detaches: the session goes on in its server.

A unix socket is connected to only when the path is a socket owned by this user: a path
left by someone else is never followed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sema_client import SemaClient

USAGE_ERROR = 2
NOT_FOUND = 1

HISTORY_MESSAGES = 12
"""How many of the earlier messages are drawn on attach."""
HISTORY_LINES = 4
"""How many lines of each earlier message are drawn."""
CONNECT_TIMEOUT_S = 10.0


class AttachError(Exception):
    """Something the user has to fix (no server, no such session, a refused token)."""


# --------------------------------------------------------------------------- discovery


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


# --------------------------------------------------------------------------- answers typed at the terminal


def permission_answer(line: str, options: list[str]) -> dict[str, Any] | None:
    """A typed line → the `tool:permission:request` result; None when it says nothing
    usable (the question is asked again). `y` allows once, `a` always (when offered), `n`
    refuses; any other text refuses with that text as feedback for the model."""
    text = line.strip()
    low = text.lower()
    if low in ("y", "yes", "allow", "once"):
        return {"decision": "allow_once"}
    if low in ("a", "always") and "allow_always" in options:
        return {"decision": "allow_always"}
    if low in ("n", "no", "reject", "deny"):
        return {"decision": "reject"}
    if not text or low in ("a", "always"):
        return None
    return {"decision": "reject", "feedback": text}


def question_answer(line: str, question: dict[str, Any]) -> str | None:
    """A typed line → the answer to one AskUserQuestion question: option numbers
    (`2`, or `1,3` when several may be chosen) pick labels; other text is the answer."""
    text = line.strip()
    if not text:
        return None
    options = [o.get("label", "") for o in question.get("options") or [] if isinstance(o, dict)]
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if parts and all(p.isdigit() and 1 <= int(p) <= len(options) for p in parts):
        if len(parts) > 1 and not question.get("multiSelect"):
            return None
        return ", ".join(options[int(p) - 1] for p in parts)
    return text


PLAN_KEYS = {
    "s": "startEditing",
    "start": "startEditing",
    "y": "startEditing",
    "c": "clearContextAndStart",
    "clear": "clearContextAndStart",
    "k": "keepPlanning",
    "keep": "keepPlanning",
    "n": "keepPlanning",
}


def plan_answer(line: str, options: list[str]) -> dict[str, Any] | None:
    """A typed line → the `plan:exit:request` result: `s` start editing, `c` clear the
    context and start, `k` keep planning; other text keeps planning with it as feedback."""
    text = line.strip()
    decision = PLAN_KEYS.get(text.lower())
    if decision is not None:
        return {"decision": decision} if decision in options else None
    if not text:
        return None
    return {"decision": "keepPlanning", "feedback": text}


def history_lines(
    messages: list[dict[str, Any]],
    *,
    last: int = HISTORY_MESSAGES,
    lines_each: int = HISTORY_LINES,
) -> list[str]:
    """The earlier conversation, briefly: the last `last` messages (`session/messages`
    entries), each cut to `lines_each` lines, tool calls one line each."""
    out: list[str] = []
    if len(messages) > last:
        out.append(f"… {len(messages) - last} earlier messages")
    for message in messages[-last:]:
        role = message.get("role")
        text = "\n".join(
            c.get("text")
            or (f"[image {c.get('path') or ''}]".strip() if c.get("type") == "image" else "")
            for c in message.get("content") or []
            if isinstance(c, dict)
        ).strip()
        label = "you" if role == "user" else "sema"
        if role == "user" and message.get("kind") == "summary":
            label = "summary"
        elif role == "user" and message.get("kind") == "notice":
            label = "note"
        if text:
            rows = text.splitlines()
            shown = rows[:lines_each]
            out.append(f"{label}: {shown[0]}")
            out += [f"  {row}" for row in shown[1:]]
            if len(rows) > lines_each:
                out.append(f"  … ({len(rows) - lines_each} more lines)")
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            mark = {"completed": "✓", "error": "✗", "interrupted": "■", "running": "…"}.get(
                call.get("status", ""), "·"
            )
            out.append(f"  {mark} {call.get('title') or call.get('name')}")
    return out


# --------------------------------------------------------------------------- the live session


class Terminal:
    """The lines typed at the terminal, as an asyncio queue (None at end of input).

    A daemon thread reads stdin: it works for a terminal and a pipe alike, and leaves the
    terminal's blocking mode alone."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()

    def start(self, stream: Any = None) -> None:
        stream = stream if stream is not None else sys.stdin
        threading.Thread(
            target=self._read, args=(stream,), daemon=True, name="attach-stdin"
        ).start()

    def _read(self, stream: Any) -> None:
        while True:
            try:
                line = stream.readline()
            except (OSError, ValueError):
                line = ""
            with contextlib.suppress(RuntimeError):  # the loop is closed: we are leaving
                self._loop.call_soon_threadsafe(self.lines.put_nowait, line or None)
            if not line:
                return


class Attached:
    """One attached session: the stream printed, asks answered, typed lines sent."""

    def __init__(self, client: SemaClient, session_id: str, terminal: Terminal, out: Any):
        self.client = client
        self.session_id = session_id
        self.terminal = terminal
        self.out = out
        self.state = "idle"
        self.last_seq = 0
        self.asks: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[Any]]] = asyncio.Queue()
        self.asking: asyncio.Future[Any] | None = None
        self.line_waiter: asyncio.Future[str | None] | None = None
        self.detached = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()

    # ---- printing ---------------------------------------------------------------------
    def note(self, line: str) -> None:
        self.out.end_line()
        self.out.note(line)

    def on_message(self, message: dict[str, Any], raw: bytes) -> None:
        """Notifications the typed events do not cover (and the seq guard)."""
        method = message.get("method")
        params = message.get("params")
        if "id" in message or not isinstance(method, str) or not isinstance(params, dict):
            return
        if params.get("sessionId") not in (None, self.session_id):
            return
        if method == "request:resolved":
            who = params.get("answeredBy") or "another client"
            outcome = params.get("outcome")
            self.note(f"✓ answered by {who}" + (f": {outcome}" if isinstance(outcome, str) else ""))

    def on_event(self, event: Any) -> None:
        if event.session_id != self.session_id:
            return
        seq = getattr(event, "seq", 0) or 0
        if seq:
            if seq <= self.last_seq:
                return  # already shown (a replay overlapping the live stream)
            self.last_seq = seq
        name = event.event
        if name == "state:update":
            self.state = event.state
            if event.state == "idle":
                self.out.end_line()
        elif name == "mode:update":
            self.note(f"mode: {event.mode}")
        else:
            self.out.on_event(event)

    # ---- asks -------------------------------------------------------------------------
    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """A server→client request, answered from the terminal (one at a time)."""
        if params.get("sessionId") not in (None, "", self.session_id):
            from sema_client import SemaRpcError

            from sema_rpc.protocol import ErrorCode

            raise SemaRpcError(ErrorCode.INVALID_REQUEST, "not the attached session")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.asks.put((method, params, future))
        try:
            return await future
        except asyncio.CancelledError:
            # The server withdrew it: another client answered, or the turn ended.
            if not future.done():
                future.cancel()
            raise

    async def run_asks(self) -> None:
        while True:
            method, params, future = await self.asks.get()
            if future.done():
                continue
            self.asking = future
            try:
                answer = await self._answer(method, params, future)
            except asyncio.CancelledError:
                if future.cancelled():
                    self.note("(withdrawn: answered elsewhere or the turn ended)")
                    continue
                raise
            finally:
                self.asking = None
            if not future.done():
                future.set_result(answer)

    async def _line(self, future: asyncio.Future[Any]) -> str | None:
        """The next typed line for an ask; cancelled when the ask is withdrawn."""
        self.line_waiter = asyncio.get_running_loop().create_future()
        waiter = self.line_waiter
        done, _ = await asyncio.wait({waiter, future}, return_when=asyncio.FIRST_COMPLETED)
        self.line_waiter = None
        if waiter in done:
            return waiter.result()
        waiter.cancel()
        raise asyncio.CancelledError

    async def _answer(
        self, method: str, params: dict[str, Any], future: asyncio.Future[Any]
    ) -> Any:
        if method == "tool:permission:request":
            options = list(params.get("options") or ["allow_once", "reject"])
            self.note(f"? {params.get('title') or params.get('toolName')}")
            content = str(params.get("content") or "").rstrip()
            if content:
                rows = content.splitlines()
                for row in rows[:20]:
                    self.out.note(f"  {row}")
                if len(rows) > 20:
                    self.out.note(f"  … ({len(rows) - 20} more lines)")
            always = " [a]lways" + (
                f" ({params['alwaysRule']})" if params.get("alwaysRule") else ""
            )
            hint = "allow? [y]es once" + (always if "allow_always" in options else "") + " [n]o"
            self.out.note(f"  {hint} (or type why not)")
            while True:
                line = await self._line(future)
                if line is None:
                    return {"decision": "reject"}
                answer = permission_answer(line, options)
                if answer is not None:
                    return answer
                self.out.note(f"  {hint}")
        if method == "ask:question:request":
            answers: dict[str, str] = {}
            for question in params.get("questions") or []:
                self.note(f"? {question.get('question')}")
                for i, option in enumerate(question.get("options") or [], 1):
                    desc = f" — {option.get('description')}" if option.get("description") else ""
                    self.out.note(f"  {i}. {option.get('label')}{desc}")
                several = " (several: 1,3)" if question.get("multiSelect") else ""
                self.out.note(f"  a number{several}, or your own answer")
                while True:
                    line = await self._line(future)
                    if line is None:
                        return {"answers": answers}
                    choice = question_answer(line, question)
                    if choice is not None:
                        answers[str(question.get("question"))] = choice
                        break
            return {"answers": answers}
        if method == "plan:exit:request":
            options = list(params.get("options") or ["startEditing", "keepPlanning"])
            self.note(f"? the plan ({params.get('planFilePath')}):")
            for row in str(params.get("planContent") or "").rstrip().splitlines()[:40]:
                self.out.note(f"  {row}")
            keys = {
                "startEditing": "[s]tart editing",
                "clearContextAndStart": "[c]lear the context and start",
                "keepPlanning": "[k]eep planning",
            }
            hint = " / ".join(keys[o] for o in options if o in keys) + " (or type what to change)"
            self.out.note(f"  {hint}")
            while True:
                line = await self._line(future)
                if line is None:
                    return {"decision": "keepPlanning"}
                answer = plan_answer(line, options)
                if answer is not None:
                    return answer
                self.out.note(f"  {hint}")
        raise ValueError(f"cannot answer {method} here")

    # ---- input --------------------------------------------------------------------------
    async def read_input(self) -> None:
        """Typed lines: to the open ask, else a prompt (idle) or a steer (working)."""
        while True:
            line = await self.terminal.lines.get()
            if self.line_waiter is not None and not self.line_waiter.done():
                self.line_waiter.set_result(line)
                continue
            if line is None:
                self.detached.set()
                return
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            delivery = "steer" if self.state == "processing" else "followUp"
            if delivery == "steer":
                self.note("↪ steering the running turn")
            self.state = "processing"
            self._spawn(self._prompt(text, delivery))

    async def _prompt(self, text: str, delivery: str) -> None:
        from sema_client import SemaClientError

        try:
            result = await self.client.request(
                "session/prompt",
                {"sessionId": self.session_id, "input": text, "delivery": delivery},
            )
        except SemaClientError as exc:
            self.note(f"error: {exc}")
            return
        stop = (result or {}).get("stopReason")
        if stop not in (None, "end_turn", "command", "interrupted"):  # interrupted: said already
            self.note(f"({stop})")

    def interrupt(self) -> None:
        """Ctrl-C: interrupt the running turn (nothing runs: say how to leave)."""
        if self.state != "processing":
            self.note("(nothing runs; Ctrl-D detaches)")
            return
        self.note("^C interrupting…")
        self._spawn(self._interrupt())

    async def _interrupt(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.request("session/interrupt", {"sessionId": self.session_id})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def attach_session(
    endpoint: str,
    session_id: str,
    *,
    token_file: str | None,
    terminal: Terminal,
    out: Any,
) -> int:
    """Attach to `session_id` at `endpoint` and follow it until end of input or until
    the server goes away. Returns the exit code."""
    from sema_client import SemaClientError

    client, token = await open_client(endpoint, token_file=token_file)
    attached = Attached(client, session_id, terminal, out)
    for method in ("tool:permission:request", "ask:question:request", "plan:exit:request"):
        client.on_request(method, functools.partial(attached.ask, method))
    client.on_message(attached.on_message)
    client.on_notification(attached.on_event)
    try:
        await initialize(client, token=token, client_name="sema-rpc attach")
        try:
            earlier = await client.all_messages(session_id)
        except SemaClientError:
            earlier = []
        for row in history_lines([m.wire() for m in earlier]):
            out.note(row)
        try:
            result = await client.request("session/attach", {"sessionId": session_id})
        except SemaClientError as exc:
            raise AttachError(f"cannot attach to {session_id}: {exc}") from exc
        result = result or {}
        attached.state = result.get("state") or "idle"
        attached.last_seq = max(attached.last_seq, int(result.get("lastSeq") or 0))
        pending = len(result.get("pendingRequests") or [])
        queued = int(result.get("queuedPrompts") or 0)
        status = f"attached to {session_id} ({attached.state}"
        status += f", {queued} queued" if queued else ""
        status += f", {pending} waiting for an answer" if pending else ""
        out.note(status + "); type to prompt or steer, Ctrl-C interrupts, Ctrl-D detaches")
        remove = _on_sigint(attached.interrupt)
        asks = asyncio.ensure_future(attached.run_asks())
        reading = asyncio.ensure_future(attached.read_input())
        gone = asyncio.ensure_future(client.wait_closed())
        detached = asyncio.ensure_future(attached.detached.wait())
        try:
            await asyncio.wait({gone, detached}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            remove()
            for task in (asks, reading, gone, detached, *attached.tasks):
                task.cancel()
        if gone.done() and not attached.detached.is_set():
            out.note("the server went away")
            return 1
        with contextlib.suppress(SemaClientError, TimeoutError):
            await asyncio.wait_for(client.request("session/detach", {"sessionId": session_id}), 5)
        out.note(f"detached; {session_id} goes on (sema-rpc attach {session_id})")
        return 0
    finally:
        out.flush()
        await client.close()


def _on_sigint(callback: Any) -> Any:
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):
        return lambda: None
    return lambda: loop.remove_signal_handler(signal.SIGINT)


async def _choose(sessions: list[LiveSession], terminal: Terminal, out: Any) -> LiveSession | None:
    out.note("live sessions:")
    for i, session in enumerate(sessions, 1):
        out.note(f"  {i}. {describe(session)}")
    out.note("which one? (a number; Ctrl-D cancels)")
    while True:
        line = await terminal.lines.get()
        if line is None:
            return None
        text = line.strip()
        if text.isdigit() and 1 <= int(text) <= len(sessions):
            return sessions[int(text) - 1]
        chosen = pick(sessions, text) if text else None
        if chosen is not None:
            return chosen
        out.note(f"  1-{len(sessions)}, or a session id")


async def attach_main_async(args: argparse.Namespace, out: Any) -> int:
    terminal = Terminal()
    terminal.start()
    if args.endpoint:
        servers = [Server(pid=0, endpoint=args.endpoint, token_file=args.token_file)]
    else:
        servers = discover_servers()
        if not servers:
            out.note(
                f"sema-rpc attach: no live server in {run_dir()} (start one with "
                "`sema-rpc serve`, `sema-rpc --listen unix`, or `sema-rpc run --listen unix …`)"
            )
            return NOT_FOUND
    if args.endpoint and args.session:
        # One endpoint and a session id: attach directly (the server answers if it is not there).
        return await attach_session(
            args.endpoint, args.session, token_file=args.token_file, terminal=terminal, out=out
        )
    sessions, problems = await all_live_sessions(servers, token_file=args.token_file)
    for problem in problems:
        out.note(f"sema-rpc attach: {problem}")
    chosen = pick(sessions, args.session)
    if chosen is None:
        if args.session is not None:
            out.note(f"sema-rpc attach: no live session {args.session!r}")
            for session in sessions:
                out.note(f"  {describe(session)}")
            return NOT_FOUND
        if not sessions:
            out.note("sema-rpc attach: no live session")
            return NOT_FOUND
        if not sys.stdin.isatty() and not args.choose:
            out.note("live sessions (name one: sema-rpc attach SESSION):")
            for session in sessions:
                out.note(f"  {describe(session)}")
            return USAGE_ERROR
        chosen = await _choose(sessions, terminal, out)
        if chosen is None:
            return 0
    return await attach_session(
        chosen.server.endpoint,
        chosen.session_id,
        token_file=args.token_file or chosen.server.token_file,
        terminal=terminal,
        out=out,
    )


def attach_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc attach",
        description="Follow a session another sema-rpc process hosts (`serve`, `--listen`, "
        "`run --listen`): the earlier conversation, then the live stream; consent asked "
        "here; typed lines sent as a prompt (idle) or a steer (working). Ctrl-C interrupts "
        "the turn; Ctrl-D detaches and the session goes on.",
    )
    parser.add_argument(
        "session", nargs="?", default=None, help="the session id (or a unique prefix)"
    )
    parser.add_argument(
        "--endpoint",
        default=None,
        help="unix:PATH or tcp:127.0.0.1:PORT (default: every live server in $SEMA_ROOT/run)",
    )
    parser.add_argument(
        "--token-file", default=None, help="the token a TCP listener wrote (its <pid>.token)"
    )
    parser.add_argument(
        "--choose",
        action="store_true",
        help="ask which session on stdin even when it is not a terminal",
    )
    parser.add_argument("--log-level", default=None)
    args = parser.parse_args(argv)
    from sema_rpc.log import setup_logging
    from sema_rpc.runner import _Output

    setup_logging(args.log_level)
    out = _Output("text")
    try:
        return asyncio.run(attach_main_async(args, out))
    except AttachError as exc:
        out.flush()
        print(f"sema-rpc attach: {exc}", file=sys.stderr, flush=True)
        return NOT_FOUND
    except KeyboardInterrupt:
        return 130
