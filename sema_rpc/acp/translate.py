"""From our events and tools to ACP shapes: pure functions, no I/O.

What each engine event becomes on the ACP side is decided in events.py (the mapping,
listed in protocol/acp.md); the functions here build the shapes it, the permission
requests (asks.py) and a loaded session's replay (replay.py) put on the wire, and read
a prompt's blocks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from sema_rpc.protocol import RpcError, TodoItem
from sema_rpc.rpc.errors import INVALID_PARAMS

TOOL_KINDS: dict[str, str] = {
    "Read": "read",
    "Write": "edit",
    "Edit": "edit",
    "Glob": "search",
    "Grep": "search",
    "Bash": "execute",
    "TodoWrite": "think",
    "Task": "think",
    "ExitPlanMode": "switch_mode",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
}
"""Tool name → ACP `ToolKind` (icons and how an editor follows along); others: `other`."""

OUTPUT_TAIL_CHARS = 32 * 1024
"""A streamed Bash update carries at most this much of the output's end: ACP replaces a
tool call's content on each update, and a cap keeps each update's cost constant."""

RESULT_CHARS = 64 * 1024
"""A completed tool call's text content (and rawOutput) is cut to this many characters."""

MODES: list[tuple[str, str, str]] = [
    ("default", "Ask", "Ask before edits and commands"),
    ("acceptEdits", "Accept edits", "File edits in the workspace run without asking"),
    ("bypass", "Bypass permissions", "Everything in the workspace runs without asking"),
    ("plan", "Plan", "Read-only: research and write a plan, then ask to leave"),
]
"""ACP session modes: our permission modes, plus Plan (the engine's mode)."""


def tool_kind(name: str) -> str:
    return TOOL_KINDS.get(name, "other")


def _path_of(name: str, args: dict[str, Any], cwd: Path) -> str | None:
    raw = args.get("file_path") if name in ("Read", "Write", "Edit") else args.get("path")
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(os.path.expanduser(raw))
    return str(path if path.is_absolute() else cwd / path)


def _line_of(path: str, needle: str, cwd: Path) -> int | None:
    """The 1-based line where `needle` starts in the workspace file `path` (None when it
    is outside the workspace, unreadable, large, or does not contain it)."""
    try:
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(cwd) or resolved.stat().st_size > 4 * 1024 * 1024:
            return None
        text = resolved.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    at = text.find(needle) if needle else -1
    return None if at < 0 else text.count("\n", 0, at) + 1


def locations(name: str, args: dict[str, Any], cwd: Path) -> list[dict[str, Any]]:
    """Where the editor can follow the call: a path, with a 1-based line when known."""
    path = _path_of(name, args, cwd)
    if path is None:
        return []
    location: dict[str, Any] = {"path": path}
    if name == "Read":
        offset = args.get("offset")
        location["line"] = offset if isinstance(offset, int) and offset > 0 else 1
    elif name == "Write":
        location["line"] = 1
    elif name == "Edit":
        old = args.get("old_string")
        line = _line_of(path, old, cwd) if isinstance(old, str) else None
        if line is not None:
            location["line"] = line
    return [location]


def diff_content(
    name: str, args: dict[str, Any], cwd: Path, *, before: bool = True
) -> list[dict[str, Any]]:
    """Write and Edit as ACP `diff` content: the change's old and new text (for Edit the
    replaced snippet, for Write the whole new file; a new file has no old text). `before`:
    the file on disk is still the old one (not so when replaying a finished call)."""
    path = _path_of(name, args, cwd)
    if path is None:
        return []
    if name == "Write" and isinstance(args.get("content"), str):
        old: str | None = None
        try:
            if not before:
                raise ValueError("the file on disk is the new one")
            resolved = Path(path).resolve()
            if resolved.is_relative_to(cwd) and resolved.stat().st_size <= 4 * 1024 * 1024:
                old = resolved.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            old = None
        diff: dict[str, Any] = {"type": "diff", "path": path, "newText": args["content"]}
        if old is not None:
            diff["oldText"] = old
        return [diff]
    if name == "Edit" and isinstance(args.get("new_string"), str):
        return [
            {
                "type": "diff",
                "path": path,
                "oldText": str(args.get("old_string", "")),
                "newText": args["new_string"],
            }
        ]
    return []


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def clipped(text: str, limit: int = RESULT_CHARS) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit} more characters]"
    )


def tool_call(
    tool_call_id: str,
    name: str,
    title: str,
    args: dict[str, Any],
    cwd: Path,
    status: str,
    *,
    before: bool = True,
) -> dict[str, Any]:
    """A `tool_call` update: the call as soon as it is known."""
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": tool_call_id,
        "title": title,
        "kind": tool_kind(name),
        "status": status,
        "rawInput": args,
        "locations": locations(name, args, cwd),
    }
    content = diff_content(name, args, cwd, before=before)
    if content:
        update["content"] = content
    return update


def plan_entries(todos: list[TodoItem]) -> list[dict[str, Any]]:
    return [{"content": t.content, "priority": "medium", "status": t.status} for t in todos]


def _file_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def prompt_input(blocks: list[dict[str, Any]], cwd: Path) -> str | list[dict[str, Any]]:
    """An ACP prompt as our engine's input: plain text when it is only text (so a slash
    command stays a command), else content blocks. A `resource_link` to a workspace file
    becomes an `@path` reference (the engine reads it, confined, with line numbers, and
    counts it as read); an embedded text `resource` (an editor buffer, unsaved edits
    included) is passed with its text; an `image` (or an image blob resource) as an
    image. Audio and other blobs are refused (-32602)."""
    out: list[dict[str, Any]] = []

    def add_text(value: str) -> None:
        if out and out[-1]["type"] == "text":
            out[-1]["text"] += " " + value
        else:
            out.append({"type": "text", "text": value})

    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            add_text(str(block.get("text", "")))
        elif kind == "resource_link":
            uri = str(block.get("uri", ""))
            path = _file_path(uri)
            if path is not None and path.is_relative_to(cwd) and " " not in str(path):
                add_text("@" + str(path.relative_to(cwd)))
            else:
                add_text(uri)
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = str(resource.get("uri", ""))
            mime = resource.get("mimeType")
            if isinstance(resource.get("text"), str):
                item: dict[str, Any] = {"type": "resource", "uri": uri, "text": resource["text"]}
                if mime:
                    item["mimeType"] = mime
                out.append(item)
            elif isinstance(resource.get("blob"), str) and str(mime).startswith("image/"):
                out.append({"type": "image", "data": resource["blob"], "mediaType": mime})
            else:
                raise RpcError(
                    INVALID_PARAMS, f"embedded resource {uri}: only text or an image is supported"
                )
        elif kind == "image":
            out.append(
                {"type": "image", "data": block.get("data"), "mediaType": block.get("mimeType")}
            )
        elif kind == "audio":
            raise RpcError(INVALID_PARAMS, "audio prompt blocks are not supported")
        else:
            raise RpcError(INVALID_PARAMS, f"unknown prompt block type: {kind!r}")
    if all(b["type"] == "text" for b in out):
        text = " ".join(b["text"] for b in out)
        if not text.strip():
            raise RpcError(INVALID_PARAMS, "the prompt is empty")
        return text
    return out
