"""What a line typed at the terminal answers: consent, a question, a plan; the earlier
conversation as short lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


HISTORY_MESSAGES = 12
"""How many of the earlier messages are drawn on attach."""
HISTORY_LINES = 4
"""How many lines of each earlier message are drawn."""


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
