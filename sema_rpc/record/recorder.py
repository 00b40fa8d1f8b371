"""Recording: every message of a run to its transcript (`--record DIR`), and each session
created with `recordDir` to its own transcript.

Per session (`session/create {"recordDir": DIR}`): the session's messages — those
carrying its sessionId, the answers to requests that carried it, `$/cancelRequest`s of
those requests, and the `initialize` exchange — go to `DIR/<timestamp>-<pid>-<sessionId>/
wire.jsonl`, next to its cassette; the folder replays like a `--record` run folder.

Outgoing messages arrive tagged with the session they belong to (`record_out(body,
session)`), as the server produces them: a notification of a session that is not
recorded costs one dict lookup and is never parsed. Untagged messages (answers, which
name no session, and server→client requests, which go out untagged) are
parsed only while a session recording is open or being opened.

Loaded when the server starts: it imports nothing heavy (the snapshot imports the
engine's history modules only when a recorded session is created).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from sema_rpc.core.secrets import redact
from sema_rpc.plain_record import Record
from sema_rpc.record.snapshot import project_snapshot
from sema_rpc.record.transcript import WIRE_FILE, open_private

log = logging.getLogger(__name__)


_session_dirs: dict[tuple[str, str], Path] = {}
_session_dirs_lock = threading.Lock()


def session_record_dir(record_dir: str | Path, session_id: str) -> Path:
    """The recording folder of a session created with `recordDir`:
    `<recordDir>/<timestamp>-<pid>-<sessionId>/` (0700), created on the first call and the
    same folder on every later call in this process (the engine's cassette and the wire
    transcript meet there). Raises ValueError for a relative path, OSError when it cannot
    be created."""
    root = Path(record_dir).expanduser()
    if not root.is_absolute():
        raise ValueError(f"recordDir must be an absolute path: {record_dir}")
    key = (str(root), session_id)
    with _session_dirs_lock:
        path = _session_dirs.get(key)
        if path is None:
            safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = root / f"{stamp}-{os.getpid()}-{safe}"
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.mkdir(exist_ok=True, mode=0o700)
            _session_dirs[key] = path
        return path


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    params = msg.get("params")
    return params if isinstance(params, dict) else {}


class _Pending(Record):
    """A `session/create` with `recordDir` waiting for its answer (the session id)."""

    # A plain class (every server loads this module; a dataclass costs its creation).
    _fields = ("record_dir", "lines", "buffered")

    record_dir: str
    lines: list[str]
    buffered: list[tuple[dict[str, Any], str]]

    def __init__(
        self,
        record_dir: str,
        lines: list[str],
        buffered: list[tuple[dict[str, Any], str]] | None = None,
    ) -> None:
        self.record_dir = record_dir
        self.lines = lines
        self.buffered = [] if buffered is None else buffered


class _SessionTranscripts:
    """Routes wire lines to the transcripts of sessions created with `recordDir`."""

    def __init__(self) -> None:
        self._init: list[str] | None = None
        self._init_id: Any = None
        self._init_answered = False
        self._pending: dict[Any, _Pending] = {}
        self._files: dict[str, Any] = {}
        self._client_requests: dict[Any, str] = {}
        """Client→server request id → the session it carried (its answer goes there too)."""
        self._server_requests: dict[Any, str] = {}
        self._disposing: dict[Any, str] = {}
        """session/dispose request id → its session: the answer closes the transcript."""

    @property
    def active(self) -> bool:
        return bool(self._pending or self._files)

    def wants_in(self, body: bytes) -> bool:
        """May this client message matter to a session transcript? (Client messages are
        few: a byte test decides whether to parse one.)"""
        return self.active or b'"initialize"' in body or b'"recordDir"' in body

    def wants_out(self, session: str | None) -> bool:
        """May this server message matter to a session transcript? `session`: the session
        the server tagged it with (None: untagged — an answer or a server request). Per
        outgoing chunk of every session: no parse, no byte search."""
        if self._pending or (self._init is not None and not self._init_answered):
            return True
        if not self._files:
            return False
        if session is not None:
            return session in self._files
        # an answer names no session: it matters when it answers a recorded session's request
        return True

    def records_create(self, msg: dict[str, Any]) -> bool:
        params = msg.get("params")
        return isinstance(params, dict) and (
            isinstance(params.get("recordDir"), str) or params.get("sessionId") in self._files
        )

    def _write(self, session_id: str, line: str) -> None:
        self._files[session_id].write(line + "\n")

    def route(
        self, direction: str, msg: Any, line: str, meta_line: str | None, session: str | None
    ) -> None:
        """`session`: the session an outgoing message was tagged with, if any."""
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        has_id = "id" in msg
        msg_id = msg.get("id")
        params = _params(msg)
        sid = session if session is not None else params.get("sessionId")
        if direction == "in":
            if method == "initialize" and self._init is None:
                self._init, self._init_id = [line], msg_id
            elif method is None:  # the answer to a server→client request
                owner = self._server_requests.pop(msg_id, None) if has_id else None
                if owner is not None:
                    self._write(owner, line)
            elif method == "$/cancelRequest":
                owner = self._client_requests.get(params.get("id"))
                if owner is not None:
                    self._write(owner, line)
            elif (
                method == "session/create"
                and isinstance(params.get("recordDir"), str)
                and sid not in self._files
            ):
                if has_id:
                    lines = [meta_line, line] if meta_line else [line]
                    self._pending[msg_id] = _Pending(params["recordDir"], lines)
            elif isinstance(sid, str) and sid in self._files:
                if meta_line and method == "session/create":
                    self._write(sid, meta_line)
                self._write(sid, line)
                if has_id:
                    self._client_requests[msg_id] = sid
                    if method == "session/dispose":
                        self._disposing[msg_id] = sid
            return
        if method is None:  # an answer
            if self._init is not None and not self._init_answered and msg_id == self._init_id:
                self._init.append(line)
                self._init_answered = True
                return
            pending = self._pending.pop(msg_id, None) if has_id else None
            if pending is not None:
                self._open(pending, msg, line)
                return
            owner = self._client_requests.pop(msg_id, None) if has_id else None
            if owner is not None:
                self._write(owner, line)
                if self._disposing.pop(msg_id, None) == owner:  # the session is gone
                    self._files.pop(owner).close()
            return
        for pending in self._pending.values():
            pending.buffered.append((msg, line))
        if method == "$/cancelRequest":
            sid = self._server_requests.get(params.get("id"))
        if isinstance(sid, str) and sid in self._files:
            self._write(sid, line)
            if has_id:
                self._server_requests[msg_id] = sid

    def _open(self, pending: _Pending, answer: dict[str, Any], line: str) -> None:
        result = answer.get("result")
        sid = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(sid, str):  # the create failed: nothing to record
            return
        try:
            run_dir = session_record_dir(pending.record_dir, sid)
            self._files[sid] = open_private(run_dir / WIRE_FILE)
        except (OSError, ValueError) as exc:
            log.warning("cannot record session %s to %s: %s", sid, pending.record_dir, exc)
            return
        for earlier in [*(self._init or []), *pending.lines]:
            self._write(sid, earlier)
        for msg, buffered in pending.buffered:
            if _params(msg).get("sessionId") == sid:
                self._write(sid, buffered)
                if "id" in msg:
                    self._server_requests[msg["id"]] = sid
        self._write(sid, line)

    def close(self) -> None:
        files, self._files = self._files, {}
        for f in files.values():
            f.close()


class TranscriptRecorder:
    """Records wire messages as they cross the wire: all of them to `<run_dir>/wire.jsonl`
    with `--record` (`root` given), and each session created with `recordDir` to its own
    folder. Never raises: recording must not break the server."""

    def __init__(self, root: Path | None = None):
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self.run_dir: Path | None = None
        self._file: Any = None
        if root is not None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.run_dir = Path(root) / f"{stamp}-{os.getpid()}"
            self.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._file = open_private(self.run_dir / WIRE_FILE)
        self._sessions = _SessionTranscripts()

    def record_in(self, body: bytes) -> None:
        """A client message, as read (before it is parsed)."""
        try:
            with self._lock:
                sessions = self._sessions.wants_in(body)
                if self._file is not None or sessions:
                    self._record("in", body, None, sessions)
        except Exception:
            log.warning("could not record an incoming message", exc_info=True)

    def record_out(self, body: bytes, session: str | None = None) -> None:
        """A server message, as written. `session`: the session it belongs to, tagged where
        it was produced (every notification is); None for answers and server requests."""
        try:
            with self._lock:
                sessions = self._sessions.wants_out(session)
                if self._file is not None or sessions:
                    self._record("out", body, session, sessions)
        except Exception:
            log.warning("could not record an outgoing message", exc_info=True)

    def _record(self, direction: str, body: bytes, session: str | None, sessions: bool) -> None:
        """`sessions`: the message may matter to a session transcript."""
        t = round(time.monotonic() - self._t0, 6)
        entry: dict[str, Any] = {"t": t, "dir": direction}
        msg: Any = None
        try:
            msg = entry["msg"] = json.loads(body)
        except (ValueError, RecursionError):  # kept as sent (RecursionError: absurd nesting)
            entry["raw"] = body.decode("utf-8", "replace")
        line = redact(json.dumps(entry, ensure_ascii=False))
        meta_line = None
        if (
            direction == "in"
            and isinstance(msg, dict)
            and msg.get("method") == "session/create"
            and (self._file is not None or self._sessions.records_create(msg))
        ):
            meta = project_snapshot(msg.get("params"))
            if meta is not None:
                meta_line = redact(
                    json.dumps({"t": t, "dir": "meta", "meta": meta}, ensure_ascii=False)
                )
        if self._file is not None:
            if meta_line:
                self._file.write(meta_line + "\n")
            self._file.write(line + "\n")
        if sessions:
            self._sessions.route(direction, msg, line, meta_line, session)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._sessions.close()
