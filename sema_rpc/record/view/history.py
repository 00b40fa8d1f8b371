"""A session history file (`<sema root>/history/<id>.jsonl`) read into one view session."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sema_rpc.record.view.model import Answer, Note, Prompt, Session, ToolCall, View, ViewError
from sema_rpc.record.view.values import fmt_int, list_of, number, pretty


def read_history(
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
            messages = list_of(entry, "messages")
            summary = "\n\n".join(
                _blocks_text(m.get("content")) for m in messages if isinstance(m, dict)
            )
            text = (
                f"{entry.get('trigger', '?')}: {entry.get('strategy', '?')}, "
                f"{fmt_int(entry.get('tokenBefore'))} → {fmt_int(entry.get('tokenCompact'))} tokens, "
                f"{len(messages)} message(s) kept"
            )
            session.items.append(
                Note(t, "note", label="Compaction", text=text, details=summary, css="note compact")
            )
        elif kind == "todos":
            todos = list_of(entry, "todos")
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
            files = list_of(entry, "files")
            if files:
                text += f", {len(files)} file(s) written"
            session.items.append(
                Note(
                    t, "note", label="Rewind", text=text, details=pretty(fields), css="note rewind"
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
                    t, "note", label=str(kind), text="", details=pretty(fields), css="note unknown"
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
        if isinstance(u, dict) and number(u.get("k")) is not None:
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
