"""What the user typed in one project, newest first, shared by every session of it:

    $SEMA_ROOT/projects/<project-key>/input-history.json     mode 0600

A JSON list of strings (newest first, at most `INPUT_HISTORY_CAP`, no duplicates),
written whole (`core.files.write_private`). Inputs longer than `INPUT_HISTORY_MAX_CHARS`
characters are not recorded; a file that does not parse reads as empty.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from sema_rpc.core.files import write_private
from sema_rpc.core.root import sema_root

log = logging.getLogger(__name__)

INPUT_HISTORY_CAP = 100
INPUT_HISTORY_MAX_CHARS = 10_000


def input_history_path(working_dir: Path, root: Path | None = None) -> Path:
    """The project's file, under `root` (default: the sema root)."""
    from sema_rpc.core.policy.permissions import project_key

    return (root or sema_root()) / "projects" / project_key(working_dir) / "input-history.json"


def read_items(path: Path) -> list[str]:
    """The inputs in the file; [] when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("ignoring unreadable input history %s: %s", path, exc)
        return []
    if not isinstance(data, list):
        return []
    return [s for s in data if isinstance(s, str)][:INPUT_HISTORY_CAP]


def write_items(path: Path, items: list[str]) -> None:
    """Replace the file with `items` (capped). Raises OSError; blocking."""
    write_private(path, json.dumps(items[:INPUT_HISTORY_CAP], indent=0).encode("ascii"))


class InputHistory:
    """One project's input history. Read from disk each time: other sessions and
    processes add to it too."""

    def __init__(self, working_dir: Path):
        self.path = input_history_path(working_dir)

    def items(self) -> list[str]:
        return read_items(self.path)

    def add(self, text: str) -> None:
        if not text.strip() or len(text) > INPUT_HISTORY_MAX_CHARS:
            return
        items = [text, *(s for s in read_items(self.path) if s != text)]
        try:
            write_items(self.path, items)
        except OSError as exc:
            log.error("cannot write input history %s: %s", self.path, exc)
