"""The sessions on disk: `session/list` (a summary of each history, read from its
head and tail however long it grew) and removing all a session keeps.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sema_rpc.core.messages import Message
from sema_rpc.engine.store.checkpoint_index import checkpoints_dir
from sema_rpc.engine.store.curated import message_title
from sema_rpc.engine.store.history_format import (
    HistoryError,
    history_dir,
    history_path,
    parse_line,
    seed_json_path,
    valid_session_id,
)
from sema_rpc.engine.store.history_writer import flush_all
from sema_rpc.engine.store.seed_json import load_seed_json
from sema_rpc.engine.store.titles import TITLE_CHARS, delete_title, read_title

log = logging.getLogger(__name__)

_HEAD_BYTES = 256 * 1024
_TAIL_BYTES = 64 * 1024


@dataclass
class SessionSummary:
    session_id: str
    working_dir: str | None
    title: str | None
    updated_at: float
    message_count: int

    @property
    def updated_iso(self) -> str:
        return (
            datetime.datetime.fromtimestamp(self.updated_at, datetime.UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )


def list_sessions(working_dir: Path | None = None) -> list[SessionSummary]:
    """Every session on disk (newest first), or only those created in `working_dir`.
    Unreadable files are skipped with a warning. Blocking; use a thread."""
    flush_all()
    root = history_dir()
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot list %s: %s", root, exc)
        return []
    wanted = str(working_dir) if working_dir is not None else None
    jsonl_ids = {e.name[:-6] for e in entries if e.name.endswith(".jsonl")}
    renamed = {e.name[:-6]: e.path for e in entries if e.name.endswith(".title")}
    out: list[SessionSummary] = []
    for entry in entries:
        name = entry.name
        try:
            if name.endswith(".jsonl") and valid_session_id(name[:-6]):
                summary = _summarise_jsonl(Path(entry.path), name[:-6])
            elif (
                name.endswith(".json")
                and valid_session_id(name[:-5])
                and name[:-5] not in jsonl_ids
            ):
                summary = _summarise_seed_json(Path(entry.path), name[:-5])
            else:
                continue
        except (OSError, ValueError, HistoryError) as exc:
            log.warning("session/list: skipping %s: %s", entry.path, exc)
            continue
        if summary is None:
            continue
        if wanted is not None and summary.working_dir != wanted:
            continue
        if summary.session_id in renamed:
            title = read_title(renamed[summary.session_id])
            if title:
                summary = dataclasses.replace(summary, title=title)
        out.append(summary)
    out.sort(key=lambda s: s.updated_at, reverse=True)
    return out


def _summarise_jsonl(path: Path, session_id: str) -> SessionSummary | None:
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        head = f.read(_HEAD_BYTES)
        if stat.st_size > len(head):
            f.seek(max(len(head), stat.st_size - _TAIL_BYTES))
            tail_start = f.tell()
            tail = f.read()
        else:
            tail_start, tail = 0, head
    working_dir = title = None
    head_lines = head.split(b"\n")
    if len(head) < stat.st_size:
        head_lines = head_lines[:-1]  # the last one may be cut by the read
    for raw in head_lines:
        obj = parse_line(raw)
        if obj is None:
            continue
        if obj.get("t") == "meta" and working_dir is None:
            working_dir = obj.get("workingDir")
        elif obj.get("t") == "title" and isinstance(obj.get("title"), str):
            title = " ".join(obj["title"].split())[:TITLE_CHARS] or None
            if title:
                break
        elif obj.get("t") == "message" and obj.get("role") == "user":
            title = _title_of(obj)
            if title:
                break
    count = None
    tail_lines = tail.split(b"\n")
    if tail_start > 0:
        tail_lines = tail_lines[1:]  # the first one may start mid-line
    for raw in reversed(tail_lines):
        obj = parse_line(raw)
        if obj is not None and isinstance(obj.get("n"), int):
            count = obj["n"]
            break
    if count is None:  # one huge last line: count the message lines
        data = path.read_bytes()
        count = data.count(b'\n{"t":"message"') + data.startswith(b'{"t":"message"')
    if working_dir is None and count == 0:
        return None  # not a history file of ours
    if count == 0 and title is None:
        return None  # no input yet (a file created ahead, `HistoryStore.open_ahead`)
    return SessionSummary(
        session_id=session_id,
        working_dir=working_dir if isinstance(working_dir, str) else None,
        title=title,
        updated_at=stat.st_mtime,
        message_count=count,
    )


def _summarise_seed_json(path: Path, session_id: str) -> SessionSummary | None:
    loaded = load_seed_json(session_id)
    if loaded is None:
        return None
    title = None
    for message in loaded.messages:
        if message.role == "user":
            title = message_title(message)
            if title:
                break
    return SessionSummary(
        session_id=session_id,
        working_dir=None,
        title=title,
        updated_at=path.stat().st_mtime,
        message_count=loaded.message_count,
    )


def _title_of(entry: dict[str, Any]) -> str | None:
    try:
        return message_title(Message.model_validate(entry))
    except ValueError:  # pydantic's ValidationError: a message of an unknown shape
        return None


def delete_history(session_id: str) -> bool:
    """Remove everything kept on disk for a session: its history, its seed (the older
    JSON format), the title the user gave it and its checkpoints
    (`<sema root>/checkpoints/<id>/`). True when there was something to remove. Blocking;
    use a thread. The session must not be live (its writer would create the file again)."""
    flush_all()  # nothing this process queued for the file lands after it is gone
    removed = False
    for path in (history_path(session_id), seed_json_path(session_id)):
        try:
            path.unlink()
            removed = True
        except FileNotFoundError:
            pass
    delete_title(session_id)
    checkpoints = checkpoints_dir(session_id)
    if checkpoints.is_dir() and not checkpoints.is_symlink():
        shutil.rmtree(checkpoints)
        removed = True
    return removed
