"""Which file a `sema-rpc view` argument names, what kind it is, and the view read from it."""

from __future__ import annotations

import contextlib
from pathlib import Path

from sema_rpc.record.view.history import read_history
from sema_rpc.record.view.jsonl import read_lines
from sema_rpc.record.view.model import View, ViewError
from sema_rpc.record.view.recording import RecordingReader


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
    from sema_rpc.engine.store.history_format import history_path, valid_session_id

    if valid_session_id(arg):
        candidate = history_path(arg)
        if candidate.is_file():
            return candidate
        raise ViewError(f"{arg}: no such file, and no session with that id in {candidate.parent}")
    raise ViewError(f"{arg}: no such file or session")


def detect(path: Path) -> str:
    """`recording` or `history`, from the first line that parses."""
    for _, obj in read_lines(path):
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
        RecordingReader(view).read(path)
        with contextlib.suppress(OSError):
            last = max((s.last or 0.0) for s in view.sessions.values()) if view.sessions else 0
            view.epoch = path.stat().st_mtime - last
    else:
        read_history(view, str(path), read_lines(path))
    return view
