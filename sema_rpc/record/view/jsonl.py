"""A JSON-lines file read line by line: each line's number and its object (None when it
does not parse). The lines are read by the store's line reader
(`engine.store.history_format`), so a line the view shows is one the server reads alike."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sema_rpc.engine.store.history_format import iter_entries, read_entries
from sema_rpc.record.view.model import ViewError


def parse_lines(raw_lines: Iterable[bytes]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    for entry in iter_entries(raw_lines):
        yield entry.number, entry.obj


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """The file's lines; a file that cannot be read is a ViewError."""
    try:
        yield from read_entries(path)
    except OSError as exc:
        raise ViewError(f"{path}: cannot read: {exc.strerror or exc}") from None
