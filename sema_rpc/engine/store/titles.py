"""A title the user gave a session (`session/rename`), beside its history:

    $SEMA_ROOT/history/<sessionId>.title        mode 0600, the title as UTF-8 text

so `session/list` finds it without reading the history, however long it grew. Written
whole (`core.files.write_private`); read capped (a title is one line of at most
`TITLE_CHARS` characters, whatever the file holds).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from sema_rpc.core.files import write_private
from sema_rpc.engine.store.history_format import history_dir

TITLE_CHARS = 100


def title_path(session_id: str) -> Path:
    return history_dir() / f"{session_id}.title"


def write_title(session_id: str, title: str | None) -> None:
    """Keep (None or empty: forget) the session's own title. Written whole (a temporary
    file renamed over), 0600. Blocking; use a thread."""
    if not title:
        delete_title(session_id)
        return
    write_private(title_path(session_id), title)


def read_title(path: Path | str) -> str | None:
    """The title in a title file (whitespace folded, capped); None when there is none or
    it cannot be read."""
    try:
        with open(path, "rb") as f:
            text = f.read(4 * TITLE_CHARS).decode("utf-8", errors="replace")
    except OSError:
        return None
    return " ".join(text.split())[:TITLE_CHARS] or None


def delete_title(session_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        title_path(session_id).unlink()
