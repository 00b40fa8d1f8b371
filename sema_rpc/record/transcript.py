"""The wire transcript file.

Recording (`sema-rpc --record DIR`) writes `DIR/<run>/wire.jsonl`, one line per message
in either direction, in the order they crossed the wire:

    {"t": 0.0123, "dir": "in" | "out", "msg": {...}}       # t: seconds since start (monotonic)

A line that was not JSON is kept as `"raw": "<text>"` instead of `msg`. Each session's
model exchanges go to `DIR/<run>/cassette-<sessionId>.jsonl` (the replay provider's
cassette format). Secrets are redacted from every line; files are created 0600.

Before each `session/create` a meta line records the saved state the session starts
from (see `snapshot`):

    {"t": …, "dir": "meta", "meta": {"kind": "project", …}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sema_rpc.plain_record import Record

WIRE_FILE = "wire.jsonl"


def open_private(path: Path) -> Any:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


class Entry(Record):
    # A plain class (every server that records loads this module; a dataclass costs its
    # creation there).
    _fields = ("t", "direction", "msg", "raw", "meta")

    t: float
    direction: str
    """in, out, or meta (saved state, see the module doc)."""
    msg: dict[str, Any] | None
    raw: str | None
    meta: dict[str, Any] | None

    def __init__(
        self,
        t: float,
        direction: str,
        msg: dict[str, Any] | None,
        raw: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.t = t
        self.direction = direction
        self.msg = msg
        self.raw = raw
        self.meta = meta

    def body(self) -> bytes:
        if self.msg is not None:
            return json.dumps(self.msg).encode()
        return (self.raw or "").encode()


def load_transcript(path: Path) -> tuple[Path, list[Entry]]:
    """Returns the run folder and the entries of `path` (a run folder or its wire.jsonl)."""
    path = Path(path)
    wire = path / WIRE_FILE if path.is_dir() else path
    entries = []
    for line in wire.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        entries.append(
            Entry(
                data.get("t", 0.0), data["dir"], data.get("msg"), data.get("raw"), data.get("meta")
            )
        )
    return wire.parent, entries
