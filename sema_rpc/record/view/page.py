"""The HTML page: everything from the session escaped and redacted, written item by item."""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
from typing import Any, TextIO

from sema_rpc.core.secrets import redact
from sema_rpc.record.view.assets import CSS, JS
from sema_rpc.record.view.model import (
    BLOCK_CAP,
    CHART_POINTS,
    FOLD_CHARS,
    FOLD_LINES,
    Answer,
    Item,
    Note,
    Permission,
    Prompt,
    Session,
    ToolCall,
    View,
)
from sema_rpc.record.view.values import fmt_int, pretty


def _e(value: Any) -> str:
    """Escaped and redacted: every string from the session goes through here."""
    return html.escape(redact(str(value)), quote=True)


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
            self.w(_block(pretty(c.input), "input"))
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
                f"{fmt_int(tot.get(k))} {label}"
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
        script_hash = base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()
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
            f"<title>sema session {_e(title)}</title><style>{CSS}</style></head><body>\n"
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
            f"<script>{JS}</script></body></html>\n"
        )


def render(view: View, out: TextIO) -> None:
    _Page(out, view).render()
