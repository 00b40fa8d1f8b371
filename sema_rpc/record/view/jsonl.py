"""A JSON-lines file read line by line: each line's number and its object (None when it does not parse)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sema_rpc.record.view.model import ViewError


def parse_lines(raw_lines: Iterable[bytes]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            yield number, None
            continue
        yield number, obj if isinstance(obj, dict) else None


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    try:
        f = open(path, "rb")  # closed below (with f:); errors become ViewError
    except OSError as exc:
        raise ViewError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with f:
        try:
            yield from parse_lines(f)
        except OSError as exc:
            raise ViewError(f"{path}: cannot read: {exc.strerror or exc}") from None
