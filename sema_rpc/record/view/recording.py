"""A wire transcript (`--record`'s `wire.jsonl`) read into the view's sessions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sema_rpc.engine.store.history_format import split_lines
from sema_rpc.record.view.history import read_history
from sema_rpc.record.view.jsonl import parse_lines, read_lines
from sema_rpc.record.view.model import (
    Answer,
    Item,
    Note,
    Permission,
    Prompt,
    Session,
    ToolCall,
    View,
    ViewError,
)
from sema_rpc.record.view.values import dict_of, fmt_int, list_of, number, pretty

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


class RecordingReader:
    """Reads a wire transcript into the view's sessions."""

    def __init__(self, view: View):
        self.view = view
        self.answers: dict[tuple[str, str], Answer] = {}
        self.tools: dict[tuple[str, str], ToolCall] = {}
        self.client_requests: dict[Any, tuple[str, str | None, Item | None]] = {}
        self.server_requests: dict[Any, tuple[str, Any]] = {}

    def read(self, path: Path) -> None:
        for _number, entry in read_lines(path):
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
        saved = dict_of(meta, "sessionHistory")
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
            read_history(earlier, sid, parse_lines(split_lines(text.encode())))
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
                sid, t, "main", f"{method}", "(client request)", details=pretty(_payload(params))
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
            cost = dict_of(result, "turn").get("costUsd")
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
            item.details = pretty(result)
        elif method == "session/fork":
            item.text += f" → new session {result.get('sessionId')}"
        elif method not in ("session/interrupt", "session/dispose", "permissionMode/update"):
            item.details = (item.details or "") + "\n→ " + pretty(result)

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
                target.details = (target.details or "") + "\n\nAnswer:\n" + pretty(answer)

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
            sid, t, agent, str(method), "", details=pretty(_payload(params)), css="note unknown"
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
        options = list_of(p, "options")
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
            questions = list_of(p, "questions")
            text = "; ".join(str(q.get("question")) for q in questions if isinstance(q, dict))
            note = self._note(s.id, t, agent, "Question", text, details=pretty(questions))
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
        usage = dict_of(p, "usage")
        totals = p.get("session") if isinstance(p.get("session"), dict) else None
        if totals is not None:
            s.totals = totals
        tokens = number(usage.get("useTokens"))
        cost = totals.get("costUsd") if totals else None
        if tokens is not None:
            s.usage.append(
                (
                    t,
                    tokens,
                    number(usage.get("maxTokens")),
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
            f"{fmt_int(p.get('tokenBefore'))} → {fmt_int(p.get('tokenCompact'))} tokens"
        )
        if p.get("errMsg"):
            text += f" ({p['errMsg']})"
        self._note(s.id, t, agent, "Compaction", text, css="note compact")

    def _on_diff(self, s: Session, t: float, agent: str, p: dict[str, Any], _: Any) -> None:
        files = list_of(p, "files")
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
            error = dict_of(p, "error")
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
            todos = list_of(p, "todos")
            lines = [
                f"[{'x' if d.get('status') == 'completed' else '~' if d.get('status') == 'in_progress' else ' '}] {d.get('content')}"
                for d in todos
                if isinstance(d, dict)
            ]
            self._note(s.id, t, agent, "Todos", f"{len(lines)} item(s)", details="\n".join(lines))
        elif method == "file:reference":
            refs = list_of(p, "references")
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


_OutHandler = Callable[[RecordingReader, Session, float, str, dict[str, Any], dict[str, Any]], None]
_OUT: dict[str, _OutHandler] = {
    "session:ready": RecordingReader._on_ready,
    "state:update": lambda *_: None,
    "message:thinking:chunk": RecordingReader._on_thinking,
    "message:text:chunk": RecordingReader._on_text,
    "message:complete": RecordingReader._on_complete,
    "tool:execution:start": RecordingReader._on_tool_start,
    "tool:execution:update": RecordingReader._on_tool_update,
    "tool:execution:complete": RecordingReader._on_tool_end,
    "tool:execution:error": RecordingReader._on_tool_end,
    "tool:permission:request": RecordingReader._on_permission,
    "ask:question:request": RecordingReader._on_request,
    "plan:exit:request": RecordingReader._on_request,
    "conversation:usage": RecordingReader._on_usage,
    "mode:update": RecordingReader._on_mode,
    "model:update": RecordingReader._on_model,
    "compact:exec": RecordingReader._on_compact,
    "turn:diff": RecordingReader._on_diff,
    "session:interrupted": RecordingReader._on_simple,
    "session:error": RecordingReader._on_simple,
    "session:cleared": RecordingReader._on_simple,
    "todos:update": RecordingReader._on_simple,
    "file:reference": RecordingReader._on_simple,
    "task:agent:start": RecordingReader._on_simple,
    "task:agent:end": RecordingReader._on_simple,
    "config:no_models": RecordingReader._on_simple,
}
