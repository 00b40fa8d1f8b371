"""Wire transcripts: record every message of a server run, replay it, diff the result.

Recording (`sema-rpc --record DIR`) writes `DIR/<run>/wire.jsonl`, one line per message
in either direction, in the order they crossed the wire:

    {"t": 0.0123, "dir": "in" | "out", "msg": {...}}       # t: seconds since start (monotonic)

A line that was not JSON is kept as `"raw": "<text>"` instead of `msg`. Each session's
model exchanges go to `DIR/<run>/cassette-<sessionId>.jsonl` (the replay provider's
cassette format). Secrets are redacted from every line; files are created 0600.

Before each `session/create` a meta line records the saved state the session starts
from, so that a replay against an empty SEMA_ROOT starts from the same state:

    {"t": …, "dir": "meta", "meta": {"kind": "project", "workingDir": "<as sent>",
        "permissions": {"allow": [...]},       # the project's stored rules, if it has any file
        "inputHistory": [...],                 # the project's input history, if it has a file
        "sessionId": "…",                      # when session/create named one
        "sessionHistory": {"sessionId", "file", "text"}}}   # that session's saved history

Nothing else of SEMA_ROOT is copied (never models.json, mcp.json or anything with keys).

Per session (`session/create {"recordDir": DIR}`): the session's messages — those
carrying its sessionId, the answers to requests that carried it, `$/cancelRequest`s of
those requests, and the `initialize` exchange — go to `DIR/<timestamp>-<pid>-<sessionId>/
wire.jsonl`, next to its cassette; the folder replays like a `--record` run folder.

Replay (`sema-rpc replay DIR/<run> [--cwd NEWDIR]`) starts a fresh server on an empty
SEMA_ROOT (seeded from the meta lines), sends the recorded client messages in order —
each only after the server has produced as many messages as it had when the client
originally sent it — answers recorded server→client requests with the recorded answers,
plays each session's model from its cassette, and compares what the server sends with
the recording after normalising what legitimately differs between runs (event `seq`,
the order of events inside one concurrent tool batch, timing figures, working dirs).
Tools run for real: `--cwd` maps the recorded working dir to another folder (a fresh
copy of the workspace as it was), in the client messages, the saved state and the
cassettes.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.core.secrets import redact

WIRE_FILE = "wire.jsonl"

log = logging.getLogger(__name__)


def _open_private(path: Path) -> Any:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


# ---------------------------------------------------------------------------- recording

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


def project_snapshot(params: Any) -> dict[str, Any] | None:
    """The saved state a `session/create` starts from (see the module doc); None when the
    params name no usable working dir."""
    if not isinstance(params, dict) or not isinstance(params.get("workingDir"), str):
        return None
    working_dir = Path(params["workingDir"]).expanduser()
    if not working_dir.is_absolute() or not working_dir.is_dir():
        return None
    from sema_rpc.core.policy.permissions import RuleStore
    from sema_rpc.engine.history import (
        InputHistory,
        history_path,
        seed_json_path,
        valid_session_id,
    )

    meta: dict[str, Any] = {"kind": "project", "workingDir": params["workingDir"]}
    rules = RuleStore(working_dir)
    if rules.path.is_file():
        meta["permissions"] = {"allow": list(rules.rules())}
    inputs = InputHistory(working_dir)
    if inputs.path.is_file():
        meta["inputHistory"] = inputs.items()
    session_id = params.get("sessionId")
    if isinstance(session_id, str) and valid_session_id(session_id):
        meta["sessionId"] = session_id
        for path in (history_path(session_id), seed_json_path(session_id)):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            meta["sessionHistory"] = {"sessionId": session_id, "file": path.name, "text": text}
            break
    return meta


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    params = msg.get("params")
    return params if isinstance(params, dict) else {}


@dataclass
class _Pending:
    """A `session/create` with `recordDir` waiting for its answer (the session id)."""

    record_dir: str
    lines: list[str]
    buffered: list[tuple[dict[str, Any], str]] = field(default_factory=list)


_NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":'
"""How the server writes a notification (rpc/server.py `_dumps`, compact, keys in order)."""


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
        self._keys: dict[str, bytes] = {}
        """Recorded session → `"sessionId":"<id>"` as it appears in the server's output."""

    @property
    def active(self) -> bool:
        return bool(self._pending or self._files)

    def wants(self, direction: str, body: bytes) -> bool:
        """Cheap test: may this message matter to a session transcript? Per outgoing
        chunk of every session, so a byte search, not a parse."""
        if direction == "in":
            return self.active or b'"initialize"' in body or b'"recordDir"' in body
        if self._pending or (self._init is not None and not self._init_answered):
            return True
        if not self._files:
            return False
        if any(key in body for key in self._keys.values()):
            return True
        # the answer to a recorded session's request carries no sessionId
        return bool(self._client_requests) and not body.startswith(_NOTIFICATION_PREFIX)

    def records_create(self, msg: dict[str, Any]) -> bool:
        params = msg.get("params")
        return isinstance(params, dict) and (
            isinstance(params.get("recordDir"), str) or params.get("sessionId") in self._files
        )

    def _write(self, session_id: str, line: str) -> None:
        self._files[session_id].write(line + "\n")

    def route(self, direction: str, msg: Any, line: str, meta_line: str | None) -> None:
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        has_id = "id" in msg
        msg_id = msg.get("id")
        params = _params(msg)
        sid = params.get("sessionId")
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
                    self._keys.pop(owner, None)
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
            self._files[sid] = _open_private(run_dir / WIRE_FILE)
            self._keys[sid] = b'"sessionId":' + json.dumps(sid).encode()
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
        self._keys.clear()
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
            self._file = _open_private(self.run_dir / WIRE_FILE)
        self._sessions = _SessionTranscripts()

    def record(self, direction: str, body: bytes) -> None:
        try:
            with self._lock:
                self._record(direction, body)
        except Exception:
            log.warning("could not record a %s message", direction, exc_info=True)

    def _record(self, direction: str, body: bytes) -> None:
        sessions = self._sessions.wants(direction, body)
        if self._file is None and not sessions:
            return
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
            self._sessions.route(direction, msg, line, meta_line)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._sessions.close()


# ---------------------------------------------------------------------------- loading


@dataclass
class Entry:
    t: float
    direction: str
    """in, out, or meta (saved state, see the module doc)."""
    msg: dict[str, Any] | None
    raw: str | None = None
    meta: dict[str, Any] | None = None

    def body(self) -> bytes:
        if self.msg is not None:
            return json.dumps(self.msg).encode()
        return (self.raw or "").encode()


def load_transcript(path: Path) -> tuple[Path, list[Entry]]:
    """Returns the run folder and the entries of `path` (a run folder or its wire.jsonl)."""
    path = Path(path)
    wire = path / WIRE_FILE if path.is_dir() else path
    entries = []
    for line in wire.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        entries.append(
            Entry(
                data.get("t", 0.0), data["dir"], data.get("msg"), data.get("raw"), data.get("meta")
            )
        )
    return wire.parent, entries


# ---------------------------------------------------------------------------- normalising

_VOLATILE_KEYS = {"seq", "t"}


def _scrub(value: Any, replacements: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v, replacements) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [_scrub(v, replacements) for v in value]
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        return value
    return value


def normalise(messages: list[dict[str, Any]], replacements: list[tuple[str, str]]) -> list[str]:
    """One canonical line per server message, comparable across runs.

    Events of one tool batch may interleave differently when calls run concurrently,
    so each run of consecutive tool:execution:* events is sorted by call id.
    """
    lines: list[str] = []
    block: list[tuple[str, str]] = []

    def flush() -> None:
        lines.extend(line for _key, line in sorted(block, key=lambda item: item[0]))
        block.clear()

    for message in messages:
        clean = _scrub(message, replacements)
        line = json.dumps(clean, sort_keys=True, ensure_ascii=False)
        method = message.get("method", "")
        if method.startswith("tool:execution:"):
            call_id = (message.get("params") or {}).get("toolCallId", "")
            phase = {"start": "0", "update": "1", "complete": "2", "error": "2"}[
                method.rsplit(":", 1)[1]
            ]
            block.append((f"{call_id}:{phase}:{len(block):06d}", line))
            continue
        flush()
        lines.append(line)
    flush()
    return lines


def diff(expected: list[str], actual: list[str]) -> str:
    return "".join(
        difflib.unified_diff(
            [line + "\n" for line in expected],
            [line + "\n" for line in actual],
            fromfile="recorded",
            tofile="replayed",
            n=2,
        )
    )


# ---------------------------------------------------------------------------- replaying


@dataclass
class ReplayResult:
    diff: str
    recorded: list[str] = field(default_factory=list)
    replayed: list[str] = field(default_factory=list)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.diff


def _working_dirs(entries: list[Entry]) -> list[str]:
    dirs = []
    for e in entries:
        if e.direction == "in" and e.msg and e.msg.get("method") == "session/create":
            wd = (e.msg.get("params") or {}).get("workingDir")
            if isinstance(wd, str):
                dirs.append(wd)
    return dirs


def _session_ids(entries: list[Entry]) -> dict[Any, tuple[str, str | None]]:
    """Request id of each session/create → (the session id, the model) the server answered."""
    creates = {
        e.msg["id"]: e
        for e in entries
        if e.direction == "in"
        and e.msg
        and e.msg.get("method") == "session/create"
        and "id" in e.msg
    }
    answered = {}
    for e in entries:
        if e.direction == "out" and e.msg and e.msg.get("id") in creates and "result" in e.msg:
            answered[e.msg["id"]] = (e.msg["result"]["sessionId"], e.msg["result"].get("model"))
    return answered


def _path_forms(path: str) -> set[str]:
    """The ways a path appears in recorded text: as given, resolved, JSON-escaped."""
    forms = {path, str(Path(path).expanduser().resolve())}
    return forms | {json.dumps(f)[1:-1] for f in forms}


class PathMap:
    """Rewrites recorded working dirs to the folders a replay runs in (`--cwd`): every
    occurrence of a recorded dir that is a whole path prefix (`/a/ws` in `/a/ws/x`, not in
    `/a/ws2`), as given, resolved or JSON-escaped."""

    def __init__(self, pairs: Mapping[str, str]):
        self.pairs = dict(pairs)
        forms: dict[str, str] = {}
        for old, new in pairs.items():
            resolve = lambda p: str(Path(p).expanduser().resolve())  # noqa: E731
            for o, n in ((old, new), (resolve(old), resolve(new))):
                forms.setdefault(o, n)
                for ascii_only in (True, False):
                    forms.setdefault(
                        json.dumps(o, ensure_ascii=ascii_only)[1:-1],
                        json.dumps(n, ensure_ascii=ascii_only)[1:-1],
                    )
        self._to = forms
        alternatives = sorted(forms, key=len, reverse=True)
        self._pattern = (
            re.compile("|".join(re.escape(f) + r"(?![A-Za-z0-9._-])" for f in alternatives))
            if alternatives
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def apply(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._to[m.group(0)], text)

    def apply_json(self, value: Any) -> Any:
        """`value` with every string rewritten."""
        if isinstance(value, str):
            return self.apply(value)
        if isinstance(value, list):
            return [self.apply_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.apply_json(v) for k, v in value.items()}
        return value


def _rewrite_strings(value: Any, paths: PathMap) -> bool:
    """Rewrite every string inside `value` (a dict or list) in place; True when any changed."""
    changed = False
    items: Any = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in list(items):
        if isinstance(item, str):
            new = paths.apply(item)
            if new != item:
                value[key] = new
                changed = True
        elif isinstance(item, dict | list):
            changed = _rewrite_strings(item, paths) or changed
    return changed


def _argument_fragments(obj: Any) -> list[tuple[Any, dict[str, Any], str]]:
    """The tool-argument fragments one stream event carries: (call key, holder, field)."""
    if not isinstance(obj, dict):
        return []
    kind = obj.get("type")
    delta = obj.get("delta")
    if (
        kind == "content_block_delta"  # Anthropic
        and isinstance(delta, dict)
        and delta.get("type") == "input_json_delta"
        and isinstance(delta.get("partial_json"), str)
    ):
        return [(("anthropic", obj.get("index")), delta, "partial_json")]
    if kind == "response.function_call_arguments.delta" and isinstance(delta, str):  # Responses
        return [(("responses", obj.get("item_id"), obj.get("output_index")), obj, "delta")]
    out: list[tuple[Any, dict[str, Any], str]] = []
    for choice in obj.get("choices") or []:  # Chat Completions
        d = choice.get("delta") if isinstance(choice, dict) else None
        for call in (d.get("tool_calls") or []) if isinstance(d, dict) else []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                out.append((("chat", choice.get("index"), call.get("index")), fn, "arguments"))
    return out


def rewrite_stream_paths(body: str, paths: PathMap) -> str:
    """An SSE response body with the recorded working dirs rewritten (`PathMap`).

    Tool arguments stream in fragments that may cut a path in two, so each call's
    fragments are joined, rewritten, and sent whole in its last fragment (the others
    empty): the parsed call is the same, only the streaming granularity differs. Text
    deltas are rewritten one by one. A body that is not `\n\n`-separated SSE is rewritten
    as plain text."""
    if "\r" in body or "data:" not in body:
        return paths.apply(body)
    events = body.split("\n\n")
    parsed: list[tuple[list[str], int, Any] | None] = []
    calls: dict[Any, list[tuple[int, dict[str, Any], str]]] = {}
    for n, event in enumerate(events):
        lines = event.split("\n")
        data = [i for i, line in enumerate(lines) if line.startswith("data:")]
        obj: Any = None
        if len(data) == 1:
            try:
                obj = json.loads(lines[data[0]][5:])
            except ValueError:
                obj = None
        if obj is None:
            parsed.append(None)
            continue
        parsed.append((lines, data[0], obj))
        for key, holder, name in _argument_fragments(obj):
            calls.setdefault(key, []).append((n, holder, name))
    whole: dict[int, list[tuple[dict[str, Any], str, str]]] = {}
    for fragments in calls.values():
        joined = "".join(holder[name] for _n, holder, name in fragments)
        rewritten = paths.apply(joined)
        for i, (n, holder, name) in enumerate(fragments):
            if rewritten == joined:  # kept as recorded (not rewritten piece by piece)
                value = holder[name]
            else:
                value = rewritten if i == len(fragments) - 1 else ""
            whole.setdefault(n, []).append((holder, name, value))
    out = []
    for n, (event, item) in enumerate(zip(events, parsed, strict=True)):
        if item is None:
            out.append(paths.apply(event))
            continue
        lines, at, obj = item
        changed = _rewrite_strings(obj, paths)
        for holder, name, value in whole.get(n, []):
            if holder[name] != value:  # set after the rewrite above: never rewritten twice
                holder[name] = value
                changed = True
        if changed:
            lines = [*lines]
            lines[at] = "data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            out.append("\n".join(lines))
        else:
            out.append(event)
    return "\n\n".join(out)


def rewrite_cassette_paths(text: str, paths: PathMap) -> str:
    """A JSONL cassette with the recorded working dirs rewritten in every exchange."""
    out = []
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        try:
            exchange = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if not isinstance(exchange, dict) or not isinstance(exchange.get("body"), str):
            out.append(line)
            continue
        exchange["body"] = rewrite_stream_paths(exchange["body"], paths)
        if "request" in exchange:
            exchange["request"] = paths.apply_json(exchange["request"])
        out.append(json.dumps(exchange, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(out)


def _path_map(entries: list[Entry], cwd: str | Path | Mapping[str, str | Path] | None) -> PathMap:
    if cwd is None:
        return PathMap({})
    recorded = list(dict.fromkeys(_working_dirs(entries)))
    if isinstance(cwd, Mapping):
        pairs = {str(old): str(new) for old, new in cwd.items()}
        unknown = [old for old in pairs if old not in recorded]
        if unknown:
            raise ValueError(
                f"not a recorded working dir: {', '.join(unknown)}"
                f" (recorded: {', '.join(recorded) or 'none'})"
            )
    else:
        if len(recorded) != 1:
            raise ValueError(
                "--cwd DIR needs exactly one recorded working dir; this transcript has "
                f"{len(recorded)} ({', '.join(recorded) or 'none'}): use --cwd RECORDED=DIR"
            )
        pairs = {recorded[0]: str(cwd)}
    for new in pairs.values():
        if not Path(new).is_dir():
            raise ValueError(f"--cwd: not a directory: {new}")
    return PathMap({old: os.path.abspath(new) for old, new in pairs.items()})


class _Seeder:
    """Writes the saved state of the meta lines into the replay's empty SEMA_ROOT: each
    project's and each resumed session's state once, from its first meta line (later
    ones describe what the replayed run itself wrote)."""

    def __init__(self, root: Path, paths: PathMap):
        self.root = root
        self.paths = paths
        self._projects: set[str] = set()
        self._sessions: set[str] = set()

    def seed(self, meta: dict[str, Any]) -> None:
        from sema_rpc.core.policy.permissions import project_key

        if meta.get("kind") != "project" or not isinstance(meta.get("workingDir"), str):
            return
        meta = self.paths.apply_json(meta)
        key = project_key(Path(meta["workingDir"]).expanduser())
        if key not in self._projects:
            self._projects.add(key)
            folder = self.root / "projects" / key
            permissions = meta.get("permissions")
            if isinstance(permissions, dict):
                rules = [r for r in permissions.get("allow") or [] if isinstance(r, str)]
                settings = {"permissions": {"allow": rules}}
                _write_private(folder / "settings.json", json.dumps(settings, indent=2))
            inputs = meta.get("inputHistory")
            if isinstance(inputs, list):
                _write_private(folder / "input-history.json", json.dumps(inputs, indent=0))
        sid = meta.get("sessionId")
        if not isinstance(sid, str) or sid in self._sessions:
            return
        self._sessions.add(sid)  # later lines: the history the replayed run wrote itself
        history = meta.get("sessionHistory")
        if isinstance(history, dict) and isinstance(history.get("text"), str):
            name = history.get("file")
            if name in (f"{sid}.jsonl", f"{sid}.json"):
                _write_private(self.root / "history" / str(name), history["text"])


def _secrets_redacted(line: str, env: Mapping[str, str]) -> str:
    """What the recorder would have written: the recording was redacted the same way."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        value = env.get(name)
        if value and len(value) >= 6:
            line = line.replace(value, "[REDACTED]")
    return redact(line)


async def replay(
    transcript: Path,
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 30.0,
    cwd: str | Path | Mapping[str, str | Path] | None = None,
) -> ReplayResult:
    """Replay a recorded transcript against a fresh server; the difference is in `.diff`.

    `cwd`: run the tools in another folder than the recorded working dir — a folder (the
    transcript must have one working dir) or {recorded dir: folder}. Raises ValueError
    for an unusable `cwd`.
    """
    from sema_rpc.providers.recording import cassette_path

    run_dir, entries = load_transcript(transcript)
    session_ids = _session_ids(entries)
    recorded_out = [e.msg for e in entries if e.direction == "out" and e.msg is not None]
    paths = _path_map(entries, cwd)
    recorded_dirs = set(_working_dirs(entries))
    replacements = [
        (form, "<workingDir>")
        for form in sorted(
            {f for wd in recorded_dirs for f in _path_forms(wd)}, key=len, reverse=True
        )
    ]
    # The replay's own dirs, and the recorded ones: the model's text still names them where
    # a path was cut across two text deltas (not rewritten).
    replayed_dirs = {paths.apply(wd) for wd in recorded_dirs} | recorded_dirs
    replayed_replacements = [
        (form, "<workingDir>")
        for form in sorted(
            {f for wd in replayed_dirs for f in _path_forms(wd)}, key=len, reverse=True
        )
    ]

    with tempfile.TemporaryDirectory(prefix="sema-replay-") as root:
        child_env = {**os.environ, **(env or {}), "SEMA_ROOT": root}
        seeder = _Seeder(Path(root), paths)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sema_rpc",
            "--jsonl",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env,
            limit=1 << 30,
        )
        assert proc.stdin and proc.stdout and proc.stderr
        received: list[dict[str, Any]] = []
        arrived = asyncio.Event()
        stderr = bytearray()

        async def read_out() -> None:
            assert proc.stdout
            while line := await proc.stdout.readline():
                try:
                    received.append(json.loads(line))
                except ValueError:
                    received.append({"raw": line.decode("utf-8", "replace")})
                arrived.set()

        async def read_err() -> None:
            assert proc.stderr
            while chunk := await proc.stderr.read(65536):
                stderr.extend(chunk)

        readers = [asyncio.create_task(read_out()), asyncio.create_task(read_err())]

        async def wait_for_count(count: int) -> None:
            deadline = asyncio.get_running_loop().time() + timeout_s
            while len(received) < count:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0 or proc.returncode is not None:
                    return
                arrived.clear()
                try:
                    await asyncio.wait_for(arrived.wait(), remaining)
                except TimeoutError:
                    return

        out_seen = 0
        model_replacements: list[tuple[str, str]] = []
        for entry in entries:
            if entry.direction == "out":
                out_seen += 1
                continue
            if entry.direction == "meta":
                if entry.meta is not None:
                    seeder.seed(entry.meta)
                continue
            await wait_for_count(out_seen)
            msg = entry.msg
            if (
                msg is not None
                and msg.get("method") == "session/create"
                and msg.get("id") in session_ids
            ):
                sid, recorded_model = session_ids[msg["id"]]
                params = dict(msg.get("params") or {})
                params["sessionId"] = sid
                cassette = cassette_path(run_dir, sid)
                if cassette.exists():
                    if paths:  # the model's paths point into the recorded workspace too
                        copy = Path(root) / "replay-cassettes" / cassette.name
                        text = cassette.read_text(encoding="utf-8")
                        _write_private(copy, rewrite_cassette_paths(text, paths))
                        cassette = copy
                    params["model"] = f"replay/{cassette}"
                    # The server reports the replay model; the recording named the real one.
                    model_replacements.append((f'"replay/{cassette}"', json.dumps(recorded_model)))
                params.pop("recordDir", None)
                msg = {**msg, "params": params}
            if msg is not None and paths:
                msg = paths.apply_json(msg)
            body = json.dumps(msg).encode() if msg is not None else entry.body()
            proc.stdin.write(body + b"\n")
            await proc.stdin.drain()
        await wait_for_count(len(recorded_out))
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        for task in readers:
            task.cancel()

    # The replayed session ids equal the recorded ones (sent as sessionId), so only the
    # working dirs and volatile fields need normalising.
    expected = normalise(recorded_out, replacements)
    actual = normalise(received, replayed_replacements)
    for old, new in model_replacements:
        actual = [line.replace(old, new) for line in actual]
    actual = [_secrets_redacted(line, child_env) for line in actual]
    return ReplayResult(
        diff=diff(expected, actual),
        recorded=expected,
        replayed=actual,
        stderr=stderr.decode("utf-8", "replace"),
    )


def _parse_cwd(values: list[str] | None) -> str | dict[str, str] | None:
    """`--cwd DIR` → DIR; `--cwd RECORDED=DIR` (repeatable) → {RECORDED: DIR}."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    pairs = {}
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"--cwd: expected RECORDED=DIR with several --cwd, got {value!r}")
        pairs[old] = new
    return pairs


def replay_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc replay",
        description="Replay a recorded wire transcript against a fresh server and diff the "
        "result. Tools run for real, in the recorded working dir unless --cwd says otherwise.",
    )
    parser.add_argument("transcript", help="a run folder written by --record, or its wire.jsonl")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each step")
    parser.add_argument(
        "--cwd",
        action="append",
        metavar="DIR",
        help="run the session in DIR instead of the recorded working dir (a fresh copy of the "
        "workspace as it was when recording started); RECORDED=DIR when the transcript has "
        "several working dirs (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        result = asyncio.run(
            replay(Path(args.transcript), timeout_s=args.timeout, cwd=_parse_cwd(args.cwd))
        )
    except (ValueError, OSError) as exc:  # a bad --cwd; no transcript there
        print(f"sema-rpc replay: {exc}", file=sys.stderr)
        return 2
    if result.ok:
        print(f"replay matches the recording ({len(result.recorded)} server messages)")
        return 0
    sys.stdout.write(result.diff)
    if result.stderr.strip():
        print("\n--- server stderr ---\n" + result.stderr[-4000:], file=sys.stderr)
    return 1
