"""The session history's reader: `history/<sessionId>.jsonl` (the format:
`history_format`) back into a session, for the engine (`load_history`: the curated
history the model sees, todos, mode, model, usage), for ACP's `session/load` replay
(`conversation`: every message as the conversation stands) and for the HTML view
(`history_format.read_entries`: the lines as they are).

One reading for all: a line that does not parse (garbage, a torn last line, JSON that
is not an object, nesting too deep) is skipped and counted, with a warning; an entry
that does not validate (a message of an unknown shape) is skipped and counted the same
way; an entry of a kind this version does not know (written by a newer one) is ignored;
messages written before ids were stored get a stable id (`stable_id`), so the engine and
the replay name them alike. A session with only the older JSON format is read from it
(`seed_json`).
"""

from __future__ import annotations

import logging
from typing import Any

from sema_rpc.core.messages import Message
from sema_rpc.engine.store.curated import append_curated, cut_before, stable_id
from sema_rpc.engine.store.history_format import (
    HistoryError,
    LoadedHistory,
    Redo,
    history_path,
    parse_entries,
    seed_json_path,
)
from sema_rpc.engine.store.history_writer import flush_all
from sema_rpc.engine.store.seed_json import load_seed_json

log = logging.getLogger(__name__)


def load_history(session_id: str, *, whole: bool = False) -> LoadedHistory | None:
    """The session's history, or None when it has none on disk. Blocking; use a thread.
    `whole`: also every message as the conversation stands (`LoadedHistory.conversation`).

    Unparsable lines are skipped with a warning. Raises HistoryError only when the file
    exists but cannot be read (permissions, I/O error)."""
    flush_all()  # what this process queued for the file is in it
    path = history_path(session_id)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # no file (or no history folder)
        seed = load_seed_json(session_id)
        if seed is not None and whole:
            seed.conversation = list(seed.messages)
        return seed
    except OSError as exc:
        raise HistoryError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_history(data, str(path), session_id, whole=whole)


def conversation(session_id: str) -> list[Message]:
    """Every message on disk, in order, as the conversation stands (see
    `LoadedHistory.conversation`); [] when the session has no history. Blocking."""
    loaded = load_history(session_id, whole=True)
    return (loaded.conversation or []) if loaded is not None else []


def has_history(session_id: str) -> bool:
    """Whether the session has anything on disk (a history, or a seed). Blocking."""
    flush_all()
    return history_path(session_id).is_file() or seed_json_path(session_id).is_file()


def parse_history(
    data: bytes, where: str = "history", session_id: str = "", *, whole: bool = False
) -> LoadedHistory:
    """The history in a JSONL file's bytes. Messages written before ids were stored get
    a stable id derived from `session_id` and their place in the file (`stable_id`)."""
    out = LoadedHistory()
    curated: list[Message] = []
    mark: tuple[int, Message, int] | None = None
    everything: list[Message] = []
    undone: list[Message] | None = None
    """What the last rewind dropped from `everything`, while a redo can put it back."""
    for number, obj, torn in parse_entries(data):
        if obj is None:
            out.skipped += 1
            if torn:
                log.warning(
                    "%s: skipping a torn last line (the process was killed mid-write)", where
                )
            else:
                log.warning("%s: skipping unreadable line %d", where, number)
            continue
        kind = obj.get("t")
        try:
            if kind == "message":
                message = Message.model_validate(obj)
                out.message_count += 1
                out.redo = None
                undone = None
                if message.id is None:
                    message.id = stable_id(session_id, f"n{obj.get('n', out.message_count)}")
                append_curated(curated, message)
                everything.append(message)
                u = obj.get("u")
                if isinstance(u, dict) and u.get("c") == len(curated) and curated[-1] is message:
                    mark = (len(curated), message, int(u.get("k", 0)))
            elif kind == "rewind":
                curated, out.redo = _rewound(curated, obj, where)
                undone = None
                if out.redo is not None and out.redo.history is not None:
                    at = _index_of(everything, str(obj.get("messageId")))
                    undone = [] if at is None else everything[at:]
                    everything = everything if at is None else everything[:at]
            elif kind == "redo":
                if out.redo is not None and out.redo.history is not None:
                    curated = out.redo.history
                    everything += undone or []
                out.redo = None
                undone = None
            elif kind == "compact":
                curated = [Message.model_validate(m) for m in obj.get("messages") or []]
                for i, m in enumerate(curated):
                    if m.id is None:
                        m.id = stable_id(session_id, f"c{obj.get('n')}.{i}")
                mark = None
                out.redo = None
                undone = None
            elif kind == "clear":
                curated = []
                out.redo = None
                undone = None
                out.todos = []
                mark = None
            elif kind == "todos":
                todos = obj.get("todos")
                if isinstance(todos, list):
                    out.todos = [t for t in todos if isinstance(t, dict)]
            elif kind == "mode":
                if obj.get("mode") in ("Agent", "Plan"):
                    out.mode = obj["mode"]
            elif kind == "model":
                if isinstance(obj.get("model"), str) and obj["model"]:
                    out.model = obj["model"]
                    thinking = obj.get("thinking")
                    out.thinking = thinking if isinstance(thinking, bool) else None
            elif kind == "usage":
                out.usage = obj
            elif kind == "meta":
                if isinstance(obj.get("workingDir"), str):
                    out.working_dir = out.working_dir or obj["workingDir"]
            # unknown kinds: written by a newer version; ignored
        except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            out.skipped += 1
            log.warning("%s: skipping invalid %s entry on line %d: %s", where, kind, number, exc)
    out.messages = curated
    if whole:
        out.conversation = everything
    if mark is not None and mark[0] <= len(curated) and curated[mark[0] - 1] is mark[1]:
        out.mark = (mark[0], mark[2])
    return out


def _index_of(messages: list[Message], message_id: str) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].id == message_id:
            return i
    return None


def _rewound(
    curated: list[Message], entry: dict[str, Any], where: str
) -> tuple[list[Message], Redo | None]:
    """A `rewind` entry applied to the curated history, and what a redo would put back."""
    restore = entry.get("restore")
    files = [f for f in entry.get("files") or [] if isinstance(f, dict) and "path" in f]
    if restore not in ("code", "conversation", "both"):
        raise ValueError(f"unknown restore {restore!r}")
    if restore == "code":
        return curated, Redo(restore, None, files)
    try:
        cut = cut_before(curated, str(entry.get("messageId")))
    except KeyError:
        log.warning(
            "%s: a rewind to %s, which is not in the conversation", where, entry.get("messageId")
        )
        return curated, None
    return cut, Redo(restore, list(curated), files)
