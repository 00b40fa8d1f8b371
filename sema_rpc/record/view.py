"""`sema-rpc view`: a session as one self-contained HTML page.

Input: a recording (`--record`'s `wire.jsonl`, or its run folder), a session history
(`<sema root>/history/<id>.jsonl`), or a session id looked up in the history folder. The
kind is told from the content, not the name.

The page needs nothing outside itself: CSS, the few lines of script and the SVG chart
are inline, and its Content-Security-Policy forbids every load (only the page's own
script, by hash, may run). Everything that came from the session is HTML-escaped, and
passes through the same redaction the logs use (`core.secrets.redact`) first.

Linear in the input: the file is read line by line into a list of timeline items (text
chunks collected in lists and joined once), then the page is written item by item.

Loaded only by `sema-rpc view`; nothing on the server's path imports it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import hashlib
import html
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from sema_rpc.core.secrets import redact

FOLD_CHARS = 1_500
"""Text longer than this (or than FOLD_LINES lines) is folded (<details>)."""
FOLD_LINES = 20
BLOCK_CAP = 200_000
"""At most this many characters of one block go into the page (the rest is counted)."""
CHART_POINTS = 1_500

_ENVELOPE = ("sessionId", "agentId", "seq")
_QUIET_REQUESTS = {
    "initialize",
    "shutdown",
    "exit",
    "session/list",
    "command/list",
    "tool/list",
    "session/messages",
    "model/list",
    "session/compact",  # compact:exec says what happened
    "session/setModel",  # model:update
    "session/create",  # session:ready says what happened
    "session/prompt",  # its own item
    "mode/update",  # mode:update
}


class ViewError(Exception):
    """The input cannot be read or is not a recording nor a history (exit code 2)."""


# --------------------------------------------------------------------------- model


@dataclass
class Item:
    t: float
    kind: str
    agent: str = "main"


@dataclass
class Prompt(Item):
    text: str = ""
    delivery: str | None = None
    id: Any = None
    end: float | None = None
    stop: str | None = None
    error: str | None = None
    message_id: str | None = None
    cost: float | None = None
    """The turn's cost in USD, when the server reported it."""
    context: list[str] = field(default_factory=list)
    """What the engine added to the input for the model (system reminders), folded."""


@dataclass
class Answer(Item):
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    end: float | None = None
    stop: str | None = None
    message_id: str | None = None
    redacted_thinking: int = 0


@dataclass
class Permission:
    t: float
    title: str
    content: str
    options: list[str]
    rule: str | None
    decision: str | None = None
    by: str | None = None
    feedback: str | None = None
    decided: float | None = None


@dataclass
class ToolCall(Item):
    call_id: str = ""
    name: str = ""
    title: str = ""
    input: Any = None
    output: list[str] = field(default_factory=list)
    result: str | None = None
    summary: str | None = None
    error: bool = False
    end: float | None = None
    approx: bool = False
    """The duration comes from history timestamps (a batch's results are written together)."""
    permission: Permission | None = None


@dataclass
class Note(Item):
    """Everything else: a label, one line of text, optional folded details."""

    label: str = ""
    text: str = ""
    details: str | None = None
    css: str = "note"


@dataclass
class Session:
    id: str
    working_dir: str | None = None
    models: list[str] = field(default_factory=list)
    mode: str | None = None
    permission_mode: str | None = None
    items: list[Item] = field(default_factory=list)
    usage: list[tuple[float, int, int | None, float | None]] = field(default_factory=list)
    """(t, context tokens, window, session cost in USD)."""
    totals: dict[str, Any] | None = None
    earlier: View | None = None
    """A resumed session's conversation before the recording (its saved history)."""
    first: float | None = None
    last: float | None = None

    def seen(self, t: float) -> None:
        if self.first is None or t < self.first:
            self.first = t
        if self.last is None or t > self.last:
            self.last = t

    def add_model(self, model: Any) -> None:
        if isinstance(model, str) and model and (not self.models or self.models[-1] != model):
            self.models.append(model)


@dataclass
class View:
    source: str
    kind: str
    """`recording` or `history`."""
    epoch: float | None = None
    """The Unix time of t=0 (approximate for a recording), when known."""
    sessions: dict[str, Session] = field(default_factory=dict)
    skipped: int = 0

    def session(self, sid: str) -> Session:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = Session(sid)
        return s


# --------------------------------------------------------------------------- input


def resolve_input(arg: str) -> Path:
    """The file to read for `arg`: a file, a run folder (its wire.jsonl), or a session id."""
    path = Path(arg).expanduser()
    if path.is_dir():
        wire = path / "wire.jsonl"
        if wire.is_file():
            return wire
        raise ViewError(f"{arg}: a folder without wire.jsonl (not a recording run folder)")
    if path.exists():
        return path
    from sema_rpc.engine.history import history_path, valid_session_id

    if valid_session_id(arg):
        candidate = history_path(arg)
        if candidate.is_file():
            return candidate
        raise ViewError(f"{arg}: no such file, and no session with that id in {candidate.parent}")
    raise ViewError(f"{arg}: no such file or session")


def _parse(raw_lines: Iterable[bytes]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            yield number, None
            continue
        yield number, obj if isinstance(obj, dict) else None


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    try:
        f = open(path, "rb")  # closed below (with f:); errors become ViewError
    except OSError as exc:
        raise ViewError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with f:
        try:
            yield from _parse(f)
        except OSError as exc:
            raise ViewError(f"{path}: cannot read: {exc.strerror or exc}") from None


def detect(path: Path) -> str:
    """`recording` or `history`, from the first line that parses."""
    for _, obj in _lines(path):
        if obj is None:
            continue
        if isinstance(obj.get("dir"), str) and ("msg" in obj or "raw" in obj or "meta" in obj):
            return "recording"
        if isinstance(obj.get("t"), str):
            return "history"
        break
    raise ViewError(f"{path}: neither a recording (wire.jsonl) nor a session history")


def load(path: Path) -> View:
    kind = detect(path)
    view = View(source=str(path), kind=kind)
    if kind == "recording":
        _Recording(view).read(path)
        with contextlib.suppress(OSError):
            last = max((s.last or 0.0) for s in view.sessions.values()) if view.sessions else 0
            view.epoch = path.stat().st_mtime - last
    else:
        _read_history(view, str(path), _lines(path))
    return view


# --------------------------------------------------------------------------- recordings


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    params = msg.get("params")
    return params if isinstance(params, dict) else {}


def _payload(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in _ENVELOPE}


def _text_of_input(value: Any) -> str:
    """A prompt's input as text: a string, or content blocks (images as a stand-in)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "image":
                where = block.get("path") or block.get("mediaType") or "inline"
                parts.append(f"[image: {where}]")
            elif kind == "resource":
                parts.append(f"[resource: {block.get('uri', '')}]")
            else:
                parts.append(f"[{kind} block]")
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _list(obj: dict[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    return value if isinstance(value, list) else []


def _dict(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Recording:
    """Reads a wire transcript into the view's sessions."""

    def __init__(self, view: View):
        self.view = view
        self.answers: dict[tuple[str, str], Answer] = {}
        self.tools: dict[tuple[str, str], ToolCall] = {}
        self.client_requests: dict[Any, tuple[str, str | None, Item | None]] = {}
        self.server_requests: dict[Any, tuple[str, Any]] = {}

    def read(self, path: Path) -> None:
        for _number, entry in _lines(path):
            if entry is None:
                self.view.skipped += 1
                continue
            t = entry.get("t")
            t = float(t) if isinstance(t, int | float) else 0.0
            msg = entry.get("msg")
            if entry.get("dir") == "meta" and isinstance(entry.get("meta"), dict):
                self._meta(entry["meta"])
            if not isinstance(msg, dict):
                continue  # meta lines and unparsable wire lines
            if entry.get("dir") == "in":
                self._incoming(t, msg)
            elif entry.get("dir") == "out":
                self._outgoing(t, msg)
        for answer in self.answers.values():  # cut off before their message:complete
            answer.stop = answer.stop or "(unfinished)"

    def _meta(self, meta: dict[str, Any]) -> None:
        """A resumed session's saved history, as it was when the recording resumed it."""
        saved = _dict(meta, "sessionHistory")
        sid, text = saved.get("sessionId"), saved.get("text")
        if not isinstance(sid, str) or not isinstance(text, str):
            return
        if not str(saved.get("file", "")).endswith(".jsonl"):
            return
        session = self.view.session(sid)
        if session.earlier is not None:
            return
        earlier = View(source=f"saved history of {sid}", kind="history")
        with contextlib.suppress(ViewError):
            _read_history(earlier, sid, _parse(text.encode().splitlines()))
            session.earlier = earlier

    def _note(self, sid: str, t: float, agent: str, label: str, text: str, **kw: Any) -> Note:
        note = Note(t, "note", agent, label=label, text=text, **kw)
        session = self.view.session(sid)
        session.items.append(note)
        session.seen(t)
        return note

    # ---- client -> server

    def _incoming(self, t: float, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        params = _params(msg)
        sid = params.get("sessionId")
        if method is None:  # the answer to a server request
            self._server_answer(t, msg)
            return
        if method == "$/cancelRequest":
            pending = self.client_requests.get(params.get("id"))
            if pending and pending[1] and isinstance(pending[2], Prompt):
                self._note(pending[1], t, "main", "Cancel", "the client cancelled the prompt")
            return
        if method == "session/create" and "id" in msg:
            self.client_requests[msg["id"]] = (method, sid if isinstance(sid, str) else None, None)
            return
        if not isinstance(sid, str):
            return
        session = self.view.session(sid)
        session.seen(t)
        item: Item | None = None
        if method == "session/prompt":
            item = Prompt(
                t,
                "prompt",
                text=_text_of_input(params.get("input")),
                delivery=params.get("delivery")
                if isinstance(params.get("delivery"), str)
                else None,
                id=msg.get("id"),
            )
            session.items.append(item)
        elif method == "session/interrupt":
            item = self._note(sid, t, "main", "Interrupt", "requested by the client")
        elif method == "permissionMode/update":
            session.permission_mode = str(params.get("permissionMode"))
            item = self._note(
                sid,
                t,
                "main",
                "Permission mode",
                f"→ {params.get('permissionMode')} (by the client)",
            )
        elif method == "session/rewind":
            if params.get("redo"):
                text = "redo the last rewind"
            else:
                text = f"to before message {params.get('messageId')} (restore: {params.get('restore', 'both')})"
            item = self._note(sid, t, "main", "Rewind", text, css="note rewind")
        elif method == "session/fork":
            where = params.get("messageId")
            text = f"before message {where}" if where else "the whole conversation"
            item = self._note(sid, t, "main", "Fork", text, css="note rewind")
        elif method == "session/dispose":
            item = self._note(sid, t, "main", "Dispose", "the client closed the session")
        elif method not in _QUIET_REQUESTS:
            item = self._note(
                sid, t, "main", f"{method}", "(client request)", details=_pretty(_payload(params))
            )
        if "id" in msg:
            self.client_requests[msg["id"]] = (str(method), sid, item)

    def _client_answer(self, t: float, msg: dict[str, Any]) -> None:
        pending = self.client_requests.pop(msg.get("id"), None)
        if pending is None:
            return
        method, sid, item = pending
        result = msg.get("result")
        result = result if isinstance(result, dict) else {}
        error = msg.get("error")
        if method == "session/create":
            new = result.get("sessionId")
            if isinstance(new, str):
                self._ready(new, t, result)
            return
        if sid is None:
            return
        session = self.view.session(sid)
        session.seen(t)
        if isinstance(item, Prompt):
            item.end = t
            item.stop = result.get("stopReason") if result else "error"
            item.message_id = result.get("messageId")
            if isinstance(error, dict):
                item.error = str(error.get("message"))
            elif isinstance(result.get("error"), dict):
                item.error = str(result["error"].get("message"))
            if isinstance(result.get("session"), dict):
                session.totals = result["session"]
            cost = _dict(result, "turn").get("costUsd")
            if isinstance(cost, int | float):
                item.cost = float(cost)
            return
        if not isinstance(item, Note):
            return
        if isinstance(error, dict):
            item.text += f" — refused: {error.get('message')}"
            return
        if method == "session/rewind":
            bits = ["rewound" if result.get("rewound") else "not rewound"]
            if result.get("restoredFiles"):
                bits.append(f"{len(result['restoredFiles'])} file(s) restored")
            if result.get("conflicts"):
                bits.append(f"{len(result['conflicts'])} conflict(s)")
            item.text += " — " + ", ".join(bits)
            item.details = _pretty(result)
        elif method == "session/fork":
            item.text += f" → new session {result.get('sessionId')}"
        elif method not in ("session/interrupt", "session/dispose", "permissionMode/update"):
            item.details = (item.details or "") + "\n→ " + _pretty(result)

    def _ready(self, sid: str, t: float, payload: dict[str, Any]) -> None:
        session = self.view.session(sid)
        session.seen(t)
        if isinstance(payload.get("workingDir"), str):
            session.working_dir = payload["workingDir"]
        session.add_model(payload.get("model"))
        if isinstance(payload.get("mode"), str):
            session.mode = session.mode or payload["mode"]
        if isinstance(payload.get("permissionMode"), str):
            session.permission_mode = session.permission_mode or payload["permissionMode"]

    def _server_answer(self, t: float, msg: dict[str, Any]) -> None:
        pending = self.server_requests.pop(msg.get("id"), None)
        if pending is None:
            return
        kind, target = pending
        result = msg.get("result")
        result = result if isinstance(result, dict) else {}
        error = msg.get("error")
        if kind == "permission":
            perm: Permission = target
            perm.decided = t
            if isinstance(error, dict):
                perm.decision, perm.by = "refused", f"client error: {error.get('message')}"
            else:
                perm.decision, perm.by = str(result.get("decision")), "the user (client)"
                if isinstance(result.get("feedback"), str):
                    perm.feedback = result["feedback"]
        elif isinstance(target, Note):
            if isinstance(error, dict):
                target.text += f" — no answer (client error: {error.get('message')})"
            else:
                answer = result.get("answers", result.get("decision", result))
                target.text += " — answered"
                target.details = (target.details or "") + "\n\nAnswer:\n" + _pretty(answer)

    # ---- server -> client

    def _outgoing(self, t: float, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is None:
            self._client_answer(t, msg)
            return
        params = _params(msg)
        if method == "$/cancelRequest":
            pending = self.server_requests.pop(params.get("id"), None)
            if pending and pending[0] == "permission":
                perm: Permission = pending[1]
                perm.decision, perm.by, perm.decided = "withdrawn", "the server (interrupted)", t
            elif pending and isinstance(pending[1], Note):
                pending[1].text += " — withdrawn by the server"
            return
        sid = params.get("sessionId")
        if not isinstance(sid, str):
            return
        agent = params.get("agentId")
        agent = agent if isinstance(agent, str) else "main"
        session = self.view.session(sid)
        session.seen(t)
        handler = _OUT.get(str(method))
        if handler is not None:
            handler(self, session, t, agent, params, msg)
            return
        self._note(
            sid, t, agent, str(method), "", details=_pretty(_payload(params)), css="note unknown"
        )

    def _answer(self, session: Session, t: float, agent: str) -> Answer:
        key = (session.id, agent)
        answer = self.answers.get(key)
        if answer is None:
            answer = self.answers[key] = Answer(t, "answer", agent)
            session.items.append(answer)
        return answer

    def _on_ready(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        self._ready(s.id, t, p)
        if p.get("historyLoaded"):
            self._note(s.id, t, agent, "Resumed", "the session's history was loaded from disk")

    def _on_thinking(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        answer = self._answer(s, t, agent)
        answer.thinking.append(str(p.get("delta", "")))
        answer.message_id = answer.message_id or p.get("messageId")

    def _on_text(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        answer = self._answer(s, t, agent)
        answer.text.append(str(p.get("delta", "")))
        answer.message_id = answer.message_id or p.get("messageId")

    def _on_complete(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        key = (s.id, agent)
        content, reasoning = p.get("content"), p.get("reasoning")
        if key not in self.answers and not content and not reasoning:
            return  # only tool calls: they show themselves
        answer = self._answer(s, t, agent)
        del self.answers[key]
        if not answer.text and isinstance(content, str):
            answer.text.append(p["content"])
        if not answer.thinking and isinstance(reasoning, str) and reasoning:
            answer.thinking.append(reasoning)
        answer.end = t
        answer.stop = p.get("stopReason") if isinstance(p.get("stopReason"), str) else None
        answer.message_id = answer.message_id or p.get("messageId")

    def _tool(self, s: Session, t: float, agent: str, p: dict[str, Any]) -> ToolCall:
        key = (s.id, str(p.get("toolCallId")))
        call = self.tools.get(key)
        if call is None:
            call = self.tools[key] = ToolCall(
                t, "tool", agent, call_id=key[1], name=str(p.get("toolName", "?"))
            )
            s.items.append(call)
        if isinstance(p.get("title"), str):
            call.title = p["title"]
        return call

    def _on_tool_start(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        call = self._tool(s, t, agent, p)
        call.input = p.get("input")

    def _on_tool_update(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        self._tool(s, t, agent, p).output.append(str(p.get("delta", "")))

    def _on_tool_end(self, s: Session, t: float, agent: str, p: dict[str, Any], msg: Any) -> None:
        call = self._tool(s, t, agent, p)
        self.tools.pop((s.id, call.call_id), None)
        call.end = t
        call.error = msg.get("method") == "tool:execution:error"
        call.result = str(p.get("content", ""))
        if isinstance(p.get("summary"), str):
            call.summary = p["summary"]

    def _on_permission(self, s: Session, t: float, agent: str, p: dict[str, Any], msg: Any) -> None:
        call = self._tool(s, t, agent, p)
        options = _list(p, "options")
        call.permission = Permission(
            t,
            str(p.get("title", "")),
            str(p.get("content", "")),
            [str(o) for o in options],
            p.get("alwaysRule") if isinstance(p.get("alwaysRule"), str) else None,
        )
        if "id" in msg:
            self.server_requests[msg["id"]] = ("permission", call.permission)

    def _on_request(self, s: Session, t: float, agent: str, p: dict[str, Any], msg: Any) -> None:
        method = msg.get("method")
        if method == "ask:question:request":
            questions = _list(p, "questions")
            text = "; ".join(str(q.get("question")) for q in questions if isinstance(q, dict))
            note = self._note(s.id, t, agent, "Question", text, details=_pretty(questions))
        else:
            note = self._note(
                s.id,
                t,
                agent,
                "Plan",
                str(p.get("planFilePath", "")),
                details=str(p.get("planContent", "")),
            )
        if "id" in msg:
            self.server_requests[msg["id"]] = ("request", note)

    def _on_usage(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        usage = _dict(p, "usage")
        totals = p.get("session") if isinstance(p.get("session"), dict) else None
        if totals is not None:
            s.totals = totals
        tokens = _num(usage.get("useTokens"))
        cost = totals.get("costUsd") if totals else None
        if tokens is not None:
            s.usage.append(
                (
                    t,
                    tokens,
                    _num(usage.get("maxTokens")),
                    cost if isinstance(cost, int | float) else None,
                )
            )

    def _on_mode(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        s.mode = s.mode or str(p.get("mode"))
        self._note(s.id, t, agent, "Mode", f"→ {p.get('mode')}", css="note mode")

    def _on_model(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        model = p.get("model", p.get("name"))
        s.add_model(model)
        extra = f" (thinking {'on' if p['thinking'] else 'off'})" if "thinking" in p else ""
        self._note(s.id, t, agent, "Model switch", f"→ {model}{extra}", css="note model")

    def _on_compact(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        text = (
            f"{p.get('trigger', '?')}: {p.get('strategy', '?')}, "
            f"{_fmt_int(p.get('tokenBefore'))} → {_fmt_int(p.get('tokenCompact'))} tokens"
        )
        if p.get("errMsg"):
            text += f" ({p['errMsg']})"
        self._note(s.id, t, agent, "Compaction", text, css="note compact")

    def _on_diff(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        files = _list(p, "files")
        files = [f for f in files if isinstance(f, dict)]
        text = ", ".join(
            f"{f.get('path')} ({f.get('status')}, +{f.get('additions', 0)} −{f.get('deletions', 0)})"
            for f in files
        )
        diff = "\n".join(str(f["diff"]) for f in files if isinstance(f.get("diff"), str))
        if not diff and isinstance(p.get("diff"), str):
            diff = p["diff"]
        if p.get("truncated"):
            text += " (diff truncated)"
        self._note(s.id, t, agent, "Files changed", text or "(none)", details=diff, css="note diff")

    def _on_simple(self, s: Session, t: float, agent: str, p: dict[str, Any], msg: Any) -> None:
        method = msg.get("method")
        if method == "session:interrupted":
            self._note(
                s.id,
                t,
                agent,
                "Interrupted",
                f"{p.get('content')} (checkpoint {p.get('checkpoint')})",
                css="note warn",
            )
        elif method == "session:error":
            error = _dict(p, "error")
            self._note(
                s.id,
                t,
                agent,
                "Error",
                f"{p.get('type')}: {error.get('code')}: {error.get('message')}",
                css="note error",
            )
        elif method == "session:cleared":
            self._note(
                s.id, t, agent, "Cleared", "the model's view of the conversation was emptied"
            )
        elif method == "todos:update":
            todos = _list(p, "todos")
            lines = [
                f"[{'x' if d.get('status') == 'completed' else '~' if d.get('status') == 'in_progress' else ' '}] {d.get('content')}"
                for d in todos
                if isinstance(d, dict)
            ]
            self._note(s.id, t, agent, "Todos", f"{len(lines)} item(s)", details="\n".join(lines))
        elif method == "file:reference":
            refs = _list(p, "references")
            names = ", ".join(str(r.get("name")) for r in refs if isinstance(r, dict))
            self._note(s.id, t, agent, "References", names)
        elif method == "task:agent:start":
            self._note(
                s.id,
                t,
                agent,
                "Subagent",
                f"{p.get('taskId')} ({p.get('subagentType')}): {p.get('description')}",
                details=str(p.get("prompt", "")),
                css="note task",
            )
        elif method == "task:agent:end":
            self._note(
                s.id,
                t,
                agent,
                "Subagent end",
                f"{p.get('taskId')}: {p.get('status')}",
                details=str(p.get("content", "")),
                css="note task",
            )
        elif method == "config:no_models":
            self._note(
                s.id,
                t,
                agent,
                "No models",
                f"{p.get('message')} {p.get('suggestion', '')}",
                css="note error",
            )


_OutHandler = Callable[[_Recording, Session, float, str, dict[str, Any], dict[str, Any]], None]
_OUT: dict[str, _OutHandler] = {
    "session:ready": _Recording._on_ready,
    "state:update": lambda *_: None,
    "message:thinking:chunk": _Recording._on_thinking,
    "message:text:chunk": _Recording._on_text,
    "message:complete": _Recording._on_complete,
    "tool:execution:start": _Recording._on_tool_start,
    "tool:execution:update": _Recording._on_tool_update,
    "tool:execution:complete": _Recording._on_tool_end,
    "tool:execution:error": _Recording._on_tool_end,
    "tool:permission:request": _Recording._on_permission,
    "ask:question:request": _Recording._on_request,
    "plan:exit:request": _Recording._on_request,
    "conversation:usage": _Recording._on_usage,
    "mode:update": _Recording._on_mode,
    "model:update": _Recording._on_model,
    "compact:exec": _Recording._on_compact,
    "turn:diff": _Recording._on_diff,
    "session:interrupted": _Recording._on_simple,
    "session:error": _Recording._on_simple,
    "session:cleared": _Recording._on_simple,
    "todos:update": _Recording._on_simple,
    "file:reference": _Recording._on_simple,
    "task:agent:start": _Recording._on_simple,
    "task:agent:end": _Recording._on_simple,
    "config:no_models": _Recording._on_simple,
}


# --------------------------------------------------------------------------- histories


def _read_history(
    view: View, where: str, entries: Iterable[tuple[int, dict[str, Any] | None]]
) -> None:
    sid = Path(where).stem
    session: Session | None = None
    calls: dict[str, ToolCall] = {}
    for _, entry in entries:
        if entry is None:
            view.skipped += 1
            continue
        kind = entry.get("t")
        at = entry.get("at")
        t = (
            float(at)
            if isinstance(at, int | float)
            else (session.last if session and session.last else 0.0)
        )
        if session is None:
            if kind == "meta" and isinstance(entry.get("sessionId"), str):
                sid = entry["sessionId"]
            session = view.session(sid)
        session.seen(t)
        if kind == "meta":
            if isinstance(entry.get("workingDir"), str):
                session.working_dir = session.working_dir or entry["workingDir"]
            session.add_model(entry.get("model"))
        elif kind == "message":
            _history_message(session, t, entry, calls)
        elif kind == "mode":
            session.items.append(
                Note(t, "note", label="Mode", text=f"→ {entry.get('mode')}", css="note mode")
            )
        elif kind == "clear":
            session.items.append(
                Note(
                    t,
                    "note",
                    label="Cleared",
                    text="/clear: the model's view of the conversation was emptied",
                )
            )
        elif kind == "compact":
            messages = _list(entry, "messages")
            summary = "\n\n".join(
                _blocks_text(m.get("content")) for m in messages if isinstance(m, dict)
            )
            text = (
                f"{entry.get('trigger', '?')}: {entry.get('strategy', '?')}, "
                f"{_fmt_int(entry.get('tokenBefore'))} → {_fmt_int(entry.get('tokenCompact'))} tokens, "
                f"{len(messages)} message(s) kept"
            )
            session.items.append(
                Note(t, "note", label="Compaction", text=text, details=summary, css="note compact")
            )
        elif kind == "todos":
            todos = _list(entry, "todos")
            lines = [
                f"[{d.get('status')}] {d.get('content')}" for d in todos if isinstance(d, dict)
            ]
            session.items.append(
                Note(
                    t, "note", label="Todos", text=f"{len(lines)} item(s)", details="\n".join(lines)
                )
            )
        elif kind == "title":
            continue
        elif kind == "rewind":
            fields = {k: v for k, v in entry.items() if k not in ("t", "n", "at")}
            text = f"to before message {fields.get('messageId')} (restore: {fields.get('restore', 'both')})"
            files = _list(entry, "files")
            if files:
                text += f", {len(files)} file(s) written"
            session.items.append(
                Note(
                    t, "note", label="Rewind", text=text, details=_pretty(fields), css="note rewind"
                )
            )
        elif kind == "redo":
            session.items.append(
                Note(t, "note", label="Redo", text="the last rewind undone", css="note rewind")
            )
        elif kind == "usage":
            session.totals = {k: v for k, v in entry.items() if k not in ("t", "n", "at")}
            cost = entry.get("costUsd")
            tokens = session.usage[-1][1] if session.usage else 0
            if isinstance(cost, int | float):
                session.usage.append((t, tokens, None, float(cost)))
        elif kind == "model":
            model = entry.get("model", entry.get("name"))
            if not session.models and not entry.get("n"):
                # Before the first message: the model the session was created on.
                session.add_model(model)
                continue
            if not session.models:
                session.models.append("?")  # an older history: its first model is unknown
            session.add_model(model)
            thinking = entry.get("thinking")
            extra = (
                f" (thinking {'on' if thinking else 'off'})" if isinstance(thinking, bool) else ""
            )
            session.items.append(
                Note(t, "note", label="Model switch", text=f"→ {model}{extra}", css="note model")
            )
        else:
            fields = {k: v for k, v in entry.items() if k not in ("t", "n", "at")}
            session.items.append(
                Note(
                    t, "note", label=str(kind), text="", details=_pretty(fields), css="note unknown"
                )
            )
    if session is None:
        raise ViewError(f"{where}: an empty history")


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def _history_message(
    session: Session, t: float, entry: dict[str, Any], calls: dict[str, ToolCall]
) -> None:
    content = entry.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    message_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    if entry.get("role") == "assistant":
        answer = Answer(t, "answer", end=t, message_id=message_id)
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                answer.text.append(str(block.get("text", "")))
            elif kind == "thinking":
                answer.thinking.append(str(block.get("thinking", "")))
            elif kind == "redacted_thinking":
                answer.redacted_thinking += 1
        if answer.text or answer.thinking or answer.redacted_thinking:
            session.items.append(answer)
        for block in blocks:
            if block.get("type") == "tool_use":
                call = ToolCall(
                    t,
                    "tool",
                    call_id=str(block.get("id")),
                    name=str(block.get("name", "?")),
                    title=str(block.get("name", "?")),
                    input=block.get("input"),
                    approx=True,
                )
                calls[call.call_id] = call
                session.items.append(call)
        u = entry.get("u")
        if isinstance(u, dict) and _num(u.get("k")) is not None:
            session.usage.append((t, u["k"], None, None))
        return
    texts: list[str] = []
    context: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_result":
            done = calls.pop(str(block.get("tool_use_id")), None)
            if done is not None:
                done.end = t
                done.result = _blocks_text(block.get("content"))
                done.error = bool(block.get("is_error"))
        elif kind == "text":
            text = str(block.get("text", ""))
            (context if text.lstrip().startswith("<system-reminder>") else texts).append(text)
        elif kind == "image":
            texts.append("[image]")
        elif kind is not None:
            texts.append(f"[{kind} block]")
    kind = entry.get("kind")
    if kind in ("notice", "summary") and texts:
        label = "Notice" if kind == "notice" else "Summary"
        note = Note(t, "note", label=label, text="added by the engine", css="note compact")
        note.details = "\n".join(texts)
        session.items.append(note)
    elif texts or context:
        session.items.append(
            Prompt(t, "prompt", text="\n".join(texts), message_id=message_id, context=context)
        )


# --------------------------------------------------------------------------- page

_CSS = """
:root{--fg:#1f2328;--muted:#656d76;--bg:#fff;--card:#f6f8fa;--line:#d0d7de;--accent:#0969da;
--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--think:#8250df}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#8d96a0;--bg:#0d1117;--card:#161b22;
--line:#30363d;--accent:#4493f8;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--think:#a371f7}}
*{box-sizing:border-box}
body{margin:0;padding:16px 24px;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:18px;margin:0 0 8px}h2{font-size:16px;margin:24px 0 8px}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.tools{margin:8px 0}.tools button{font:inherit;padding:2px 8px;margin-right:6px}
.timeline{list-style:none;margin:0;padding:0}
.item{display:grid;grid-template-columns:90px 1fr;gap:8px;padding:6px 0;border-top:1px solid var(--line)}
.item .when{color:var(--muted);font:12px ui-monospace,monospace;padding-top:2px;white-space:nowrap}
.item.sub .body{margin-left:24px;border-left:3px solid var(--line);padding-left:8px}
.label{display:inline-block;font-size:12px;font-weight:600;padding:0 6px;border-radius:4px;
background:var(--card);border:1px solid var(--line);margin-right:6px}
.prompt .label{color:var(--accent)}.answer .label{color:var(--ok)}.tool .label{color:var(--warn)}
.error .label,.bad{color:var(--bad)}.good{color:var(--ok)}
.mode .label,.model .label,.rewind .label,.compact .label{color:var(--think)}
.meta{color:var(--muted);font-size:12px;margin-left:6px}
pre{margin:4px 0;padding:6px 8px;background:var(--card);border:1px solid var(--line);border-radius:4px;
white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.4 ui-monospace,monospace;max-height:480px;overflow:auto}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
details>summary{cursor:pointer;color:var(--muted)}
details.thinking>summary{color:var(--think)}
.perm{margin:4px 0;padding:4px 8px;border-left:3px solid var(--warn);background:var(--card)}
.chart svg{width:100%;max-width:760px;height:auto;border:1px solid var(--line);border-radius:4px}
.chart .ctx{stroke:var(--accent)}.chart .cost{stroke:var(--ok)}
.chart text{fill:var(--muted);font:11px system-ui,sans-serif}
.legend span{margin-right:12px}.sw{display:inline-block;width:10px;height:3px;vertical-align:middle;margin-right:4px}
footer{margin-top:24px;color:var(--muted);font-size:12px}
"""

_JS = """
for (const b of document.querySelectorAll('button[data-open]')) {
  b.addEventListener('click', () => {
    const open = b.dataset.open === '1';
    for (const d of document.querySelectorAll('main details')) d.open = open;
  });
}
"""


def _e(value: Any) -> str:
    """Escaped and redacted: every string from the session goes through here."""
    return html.escape(redact(str(value)), quote=True)


def _fmt_int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int | float) else "?"


def _fmt_offset(seconds: float) -> str:
    seconds = max(0.0, seconds)
    minutes, sec = divmod(seconds, 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"+{int(hours)}:{int(minutes):02d}:{sec:04.1f}"
    return f"+{int(minutes)}:{sec:04.1f}"


def _fmt_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.1f} min"


def _fmt_time(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _block(
    text: str, summary: str | None = None, css: str = "", pre: bool = True, fold: bool = True
) -> str:
    """A text block, folded when long (or always, when `summary` names it; never without
    `fold`: the conversation itself stays open)."""
    shown = text[:BLOCK_CAP]
    more = len(text) - len(shown)
    body = f"<pre>{_e(shown)}</pre>" if pre else f'<div class="text">{_e(shown)}</div>'
    if more:
        body += f'<div class="meta">… {more:,} more characters not shown</div>'
    lines = text.count("\n") + (not text.endswith("\n"))
    if not fold or (summary is None and len(text) <= FOLD_CHARS and lines <= FOLD_LINES):
        return body
    if summary is None:
        first = text.strip().split("\n", 1)[0][:120]
        summary = f"{first} … ({lines:,} lines, {len(text):,} chars)"
    cls = f' class="{css}"' if css else ""
    return f"<details{cls}><summary>{_e(summary)}</summary>{body}</details>"


class _Page:
    def __init__(self, out: TextIO, view: View):
        self.out = out
        self.view = view

    def w(self, *parts: str) -> None:
        self.out.write("".join(parts))

    def when(self, session: Session, t: float) -> str:
        base = session.first or 0.0
        title = _fmt_time(self.view.epoch + t) if self.view.epoch is not None else ""
        if self.view.kind == "history":
            title = _fmt_time(t)
        return f'<div class="when" title="{_e(title)}">{_fmt_offset(t - base)}</div>'

    def item(self, session: Session, item: Item) -> None:
        sub = " sub" if item.agent != "main" else ""
        css = item.css if isinstance(item, Note) else item.kind
        self.w(
            f'<li class="item {_e(css)}{sub}" data-kind="{_e(item.kind)}">',
            self.when(session, item.t),
        )
        self.w('<div class="body">')
        if item.agent != "main":
            self.w(f'<span class="meta">agent {_e(item.agent)}</span> ')
        if isinstance(item, Prompt):
            self.prompt(item)
        elif isinstance(item, Answer):
            self.answer(item)
        elif isinstance(item, ToolCall):
            self.tool(item)
        elif isinstance(item, Note):
            self.note(item)
        self.w("</div></li>\n")

    def prompt(self, p: Prompt) -> None:
        label = "User" if p.delivery in (None, "followUp") else f"User ({p.delivery})"
        meta = []
        if p.end is not None:
            meta.append(f"turn {_fmt_duration(p.end - p.t)}")
        if p.stop:
            meta.append(f"stop: {p.stop}")
        if p.cost is not None:
            meta.append(f"cost ${p.cost:.4f}")
        if p.message_id:
            meta.append(f"id {p.message_id}")
        self.w(
            f'<span class="label">{_e(label)}</span><span class="meta">{_e(" · ".join(meta))}</span>'
        )
        if p.text:
            self.w(_block(p.text, pre=False, fold=False))
        for extra in p.context:
            self.w(_block(extra, "added for the model (system reminder)"))
        if p.error:
            self.w(f'<div class="bad">{_e(p.error)}</div>')

    def answer(self, a: Answer) -> None:
        meta = []
        if a.end is not None and a.end > a.t:
            meta.append(f"streamed {_fmt_duration(a.end - a.t)}")
        if a.stop:
            meta.append(f"stop: {a.stop}")
        if a.message_id:
            meta.append(f"id {a.message_id}")
        self.w(
            f'<span class="label">Assistant</span><span class="meta">{_e(" · ".join(meta))}</span>'
        )
        if a.thinking:
            thinking = "".join(a.thinking)
            self.w(_block(thinking, f"Thinking ({len(thinking):,} chars)", "thinking"))
        if a.redacted_thinking:
            self.w(f'<div class="meta">{a.redacted_thinking} redacted thinking block(s)</div>')
        if a.text:
            self.w(_block("".join(a.text), pre=False, fold=False))

    def tool(self, c: ToolCall) -> None:
        meta = []
        if c.end is not None:
            approx = "≈ " if c.approx else ""
            meta.append(
                f'<span class="duration">{approx}{_fmt_duration(max(0.0, c.end - c.t))}</span>'
            )
        else:
            meta.append("no result")
        if c.error:
            meta.append('<span class="bad">error</span>')
        if c.summary:
            meta.append(_e(c.summary))
        self.w(
            f'<span class="label">Tool {_e(c.name)}</span><strong class="tool-title">{_e(c.title or c.name)}</strong>'
            f'<span class="meta">{" · ".join(meta)}</span>'
        )
        if c.input not in (None, {}):
            self.w(_block(_pretty(c.input), "input"))
        if c.permission is not None:
            self.permission(c.permission)
        output = "".join(c.output)
        if output and output.strip() != (c.result or "").strip():
            self.w(_block(output, f"streamed output ({len(output):,} chars)"))
        if c.result is not None:
            self.w(_block(c.result))

    def permission(self, p: Permission) -> None:
        decision = p.decision or "no answer"
        good = decision in ("allow_once", "allow_always")
        cls = "good" if good else "bad"
        after = f" after {_fmt_duration(p.decided - p.t)}" if p.decided is not None else ""
        by = f" by {p.by}" if p.by else ""
        self.w(
            f'<div class="perm">Permission asked: <strong>{_e(p.title)}</strong> — '
            f'<span class="{cls} decision">{_e(decision)}</span>{_e(by)}{_e(after)}'
        )
        if p.rule:
            self.w(f' <span class="meta">rule offered: {_e(p.rule)}</span>')
        if p.feedback:
            self.w(f"<div>feedback: {_e(p.feedback)}</div>")
        if p.content:
            self.w(_block(p.content, "what was shown"))
        self.w("</div>")

    def note(self, n: Note) -> None:
        self.w(f'<span class="label">{_e(n.label)}</span>{_e(n.text)}')
        if n.details:
            self.w(_block(n.details, "details"))

    def chart(self, session: Session) -> None:
        points = session.usage
        if not points:
            self.w('<p class="meta">No usage reported.</p>')
            return
        step = max(1, len(points) // CHART_POINTS)
        points = points[::step] if step > 1 else points
        width, height, pad_l, pad_r, pad_y = 760, 170, 64, 64, 18
        t0 = session.first if session.first is not None else points[0][0]
        t1 = max(session.last or t0, points[-1][0])
        span = (t1 - t0) or 1.0
        top = max(p[1] for p in points) or 1
        costs = [p[3] for p in points if p[3] is not None]
        top_cost = max(costs) if costs else 0.0

        def x(t: float) -> float:
            return pad_l + (t - t0) / span * (width - pad_l - pad_r)

        def y(v: float, m: float) -> float:
            return height - pad_y - (v / m) * (height - 2 * pad_y) if m else height - pad_y

        ctx = " ".join(f"{x(t):.1f},{y(v, top):.1f}" for t, v, _, _ in points)
        self.w(
            f'<div class="chart"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="usage over time">'
            f'<line x1="{pad_l}" y1="{height - pad_y}" x2="{width - pad_r}" y2="{height - pad_y}" stroke="currentColor" stroke-opacity=".3"/>'
            f'<text x="{pad_l - 6}" y="{pad_y + 4}" text-anchor="end">{top:,}</text>'
            f'<text x="{pad_l - 6}" y="{height - pad_y}" text-anchor="end">0</text>'
            f'<text x="{pad_l}" y="{height - 4}">{_fmt_offset(0)}</text>'
            f'<text x="{width - pad_r}" y="{height - 4}" text-anchor="end">{_fmt_offset(span)}</text>'
            f'<polyline class="ctx" fill="none" stroke-width="2" points="{ctx}"/>'
        )
        if len(points) <= 300:
            for t, v, m, _ in points:
                window = f" of {m:,}" if m else ""
                self.w(
                    f'<circle class="ctx" cx="{x(t):.1f}" cy="{y(v, top):.1f}" r="2.5" fill="currentColor">'
                    f"<title>{_fmt_offset(t - t0)}: {v:,}{window} tokens in context</title></circle>"
                )
        if costs:
            line = " ".join(
                f"{x(t):.1f},{y(c, top_cost):.1f}" for t, _, _, c in points if c is not None
            )
            self.w(
                f'<polyline class="cost" fill="none" stroke-width="2" stroke-dasharray="5 3" points="{line}"/>'
                f'<text x="{width - pad_r + 6}" y="{pad_y + 4}">${top_cost:.4f}</text>'
            )
        self.w("</svg>")
        self.w(
            '<div class="legend meta"><span><i class="sw" style="background:var(--accent)"></i>context tokens</span>'
        )
        if costs:
            self.w('<span><i class="sw" style="background:var(--ok)"></i>session cost (USD)</span>')
        self.w("</div></div>")

    def header(self, session: Session) -> None:
        items = session.items
        prompts = sum(isinstance(i, Prompt) for i in items)
        answers = sum(isinstance(i, Answer) for i in items)
        calls = [i for i in items if isinstance(i, ToolCall)]
        errors = sum(c.error for c in calls)
        asked = [c.permission for c in calls if c.permission is not None]
        allowed = sum(p.decision in ("allow_once", "allow_always") for p in asked)
        compactions = sum(isinstance(i, Note) and i.label == "Compaction" for i in items)
        rows: list[tuple[str, str]] = [("session", session.id)]
        rows.append(
            (
                "model" if len(session.models) < 2 else "models",
                " → ".join(session.models) or "(not recorded)",
            )
        )
        rows.append(("working dir", session.working_dir or "?"))
        if session.first is not None:
            start = (
                session.first
                if self.view.kind == "history"
                else (self.view.epoch + session.first if self.view.epoch is not None else None)
            )
            approx = "≈ " if self.view.kind == "recording" else ""
            started = f"{approx}{_fmt_time(start)}" if start is not None else "?"
            rows.append(("started", started))
            rows.append(
                ("duration", _fmt_duration((session.last or session.first) - session.first))
            )
        if session.mode or session.permission_mode:
            bits = [session.mode or "?"]
            if session.permission_mode:
                bits.append(f"permissions {session.permission_mode}")
            rows.append(("mode at start", " · ".join(bits)))
        rows.append(
            (
                "totals",
                f"{prompts} prompt(s), {answers} model response(s), {len(calls)} tool call(s)"
                f" ({errors} failed), "
                + (
                    f"{len(asked)} permission request(s) ({allowed} allowed), "
                    if self.view.kind == "recording"
                    else "permission decisions not in a history, "
                )
                + f"{compactions} compaction(s)",
            )
        )
        if session.usage:
            _, tokens, window, _ = session.usage[-1]
            rows.append(("context", f"{tokens:,} tokens" + (f" of {window:,}" if window else "")))
        if session.totals:
            tot = session.totals
            tokens_text = ", ".join(
                f"{_fmt_int(tot.get(k))} {label}"
                for k, label in (
                    ("inputTokens", "input"),
                    ("outputTokens", "output"),
                    ("cacheReadTokens", "cache read"),
                    ("cacheWriteTokens", "cache write"),
                )
                if k in tot
            )
            cost = tot.get("costUsd")
            cost_text = f"${cost:.4f}" if isinstance(cost, int | float) else "unknown"
            rows.append(("usage", f"{tokens_text}; cost {cost_text}"))
        self.w("<header><dl>")
        for name, value in rows:
            self.w(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>")
        self.w("</dl></header>")

    def earlier(self, view: View) -> None:
        page = _Page(self.out, view)
        for saved in view.sessions.values():
            self.w(
                f'<details class="earlier"><summary>Resumed: the conversation before this'
                f" recording ({len(saved.items)} item(s), from the saved history)</summary>"
                '<ol class="timeline">\n'
            )
            for item in saved.items:
                page.item(saved, item)
            self.w("</ol></details>")

    def render(self) -> None:
        script_hash = base64.b64encode(hashlib.sha256(_JS.encode()).digest()).decode()
        policy = (
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            f"script-src 'sha256-{script_hash}'; form-action 'none'; base-uri 'none'"
        )
        sessions = list(self.view.sessions.values())
        title = sessions[0].id if len(sessions) == 1 else f"{len(sessions)} sessions"
        self.w(
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>sema session {_e(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>sema session {_e(title)}</h1>"
            f'<div class="meta">{_e(self.view.kind)}: {_e(self.view.source)}'
            + (f" · {self.view.skipped} unreadable line(s) skipped" if self.view.skipped else "")
            + "</div>"
            '<div class="tools"><button type="button" data-open="1">expand all</button>'
            '<button type="button" data-open="0">collapse all</button></div><main>\n'
        )
        for session in sessions:
            self.w(f'<section class="session" id="s-{_e(session.id)}">')
            if len(sessions) > 1:
                self.w(f"<h2>Session {_e(session.id)}</h2>")
            self.header(session)
            self.w("<h2>Usage over time</h2>")
            self.chart(session)
            self.w("<h2>Timeline</h2>")
            if session.earlier is not None:
                self.earlier(session.earlier)
            self.w('<ol class="timeline">\n')
            for item in session.items:
                self.item(session, item)
            self.w("</ol></section>\n")
        if not sessions:
            self.w("<p>No session in this file.</p>")
        consent = (
            " A tool call without a permission line needed no consent (read-only), or a stored"
            " rule or the permission mode allowed it."
            if self.view.kind == "recording"
            else " A history does not record permission decisions; tool durations are"
            " approximate (a batch's results are saved together)."
        )
        self.w(
            "</main><footer>Rendered by sema-rpc view. Times are offsets from the session's start;"
            f" hover one for the clock time.{consent}</footer>"
            f"<script>{_JS}</script></body></html>\n"
        )


def render(view: View, out: TextIO) -> None:
    _Page(out, view).render()


def _register_profile_keys() -> None:
    """The keys of models.json's profiles are secrets too (as in the server's logs)."""
    from sema_rpc.core.config import load_models

    with contextlib.suppress(Exception):  # a broken models.json must not stop the page
        load_models()


def view_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc view",
        description="Render a recording (--record) or a session history as one self-contained HTML page.",
    )
    parser.add_argument(
        "source", help="a recording (run folder or wire.jsonl), a history file, or a session id"
    )
    parser.add_argument(
        "-o", "--output", default=None, help="the HTML file to write (default: <session>.html here)"
    )
    args = parser.parse_args(argv)
    try:
        path = resolve_input(args.source)
        view = load(path)
    except ViewError as exc:
        print(f"sema-rpc view: {exc}", file=sys.stderr)
        return 2
    _register_profile_keys()
    output = args.output
    if output is None:
        name = next(iter(view.sessions), None) or path.stem
        output = re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".html"
    target = Path(output)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        # 0600 like the history it shows: the page holds the whole conversation
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8", buffering=1 << 20) as out:
            render(view, out)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        print(f"sema-rpc view: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {target}", file=sys.stderr)
    return 0
