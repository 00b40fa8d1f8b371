"""The checkpoint index's format, its reader and its writer.

    $SEMA_ROOT/checkpoints/<sessionId>/            folder 0700
        blobs/<sha256>                             file contents, 0600, content-addressed
        index.jsonl                                0600, append-only

Index entries (`t` is the kind; paths are absolute; a content is a sha256, or null for
"the file did not exist"):

    {"t":"turn","turn":M}                          a turn started (M: its user message id)
    {"t":"change","turn":M,"path":P,"before":S,"after":S,"tool":"Edit"}
    {"t":"restore","path":P,"before":S,"after":S}  a rewind or redo wrote P

A change whose previous content is unknown carries `"lost":true` (a command changed a
file it did not name: see `checkpoints`); a content too large to keep carries `"afterLost":true`.

A line that does not parse or lacks a field is skipped with a warning. Strings are read
back as written (a path that is not UTF-8 keeps its escapes: it names the same file).
The store that keeps the blobs and decides what to record is `checkpoints`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from sema_rpc.core.files import ensure_private_dir
from sema_rpc.core.root import sema_root
from sema_rpc.plain_record import FrozenRecord, Record

log = logging.getLogger(__name__)


def checkpoints_dir(session_id: str) -> Path:
    return sema_root() / "checkpoints" / session_id


# Plain classes (every session loads this module; a dataclass costs its creation).


class Content(FrozenRecord):
    """What a file held: `sha` (None: it did not exist), or `lost` when unknown."""

    __slots__ = ("lost", "sha")
    _fields = ("sha", "lost")

    sha: str | None
    lost: bool

    def __init__(self, sha: str | None, lost: bool = False) -> None:
        object.__setattr__(self, "sha", sha)
        object.__setattr__(self, "lost", lost)

    def wire(self, key: str) -> dict[str, Any]:
        if self.lost:
            return {key: None, ("lost" if key == "before" else f"{key}Lost"): True}
        return {key: self.sha}


ABSENT = Content(None)
LOST = Content(None, lost=True)


class Change(Record):
    __slots__ = ("after", "before", "kind", "path", "tool", "turn")
    _fields = ("kind", "path", "before", "after", "turn", "tool")

    kind: Literal["change", "restore"]
    path: str
    before: Content
    after: Content
    turn: str | None
    tool: str

    def __init__(
        self,
        kind: Literal["change", "restore"],
        path: str,
        before: Content,
        after: Content,
        turn: str | None = None,
        tool: str = "",
    ) -> None:
        self.kind = kind
        self.path = path
        self.before = before
        self.after = after
        self.turn = turn
        self.tool = tool


def turn_entry(turn_id: str) -> dict[str, Any]:
    """The line that starts a turn's changes."""
    return {"t": "turn", "turn": turn_id}


def change_entry(change: Change) -> dict[str, Any]:
    """The line of one change (or restore)."""
    entry: dict[str, Any] = {"t": change.kind}
    if change.kind == "change":
        entry["turn"] = change.turn
    entry["path"] = change.path
    entry.update(change.before.wire("before"))
    entry.update(change.after.wire("after"))
    if change.tool:
        entry["tool"] = change.tool
    return entry


def read_index(path: Path) -> tuple[list[Change], dict[str, int]]:
    """The changes in an index, in order, and turn id → the number of changes before the
    turn started. Nothing when there is no index (or it cannot be read). Blocking."""
    events: list[Change] = []
    turn_pos: dict[str, int] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return events, turn_pos
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            kind = obj["t"]
            if kind == "turn":
                turn_pos.setdefault(str(obj["turn"]), len(events))
            elif kind in ("change", "restore"):
                events.append(
                    Change(
                        kind=kind,
                        path=str(obj["path"]),
                        before=LOST if obj.get("lost") else Content(obj.get("before")),
                        after=LOST if obj.get("afterLost") else Content(obj.get("after")),
                        turn=obj.get("turn"),
                        tool=str(obj.get("tool", "")),
                    )
                )
        except (ValueError, KeyError, TypeError, RecursionError):
            log.warning("%s: skipping an unreadable checkpoint entry", path)
    return events, turn_pos


def append_index(path: Path, entries: list[dict[str, Any]]) -> None:
    """Append entries to the index (its folder made 0700, the file 0600). Raises OSError;
    blocking."""
    ensure_private_dir(path.parent)
    data = b"".join(json.dumps(e, separators=(",", ":")).encode("utf-8") + b"\n" for e in entries)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
