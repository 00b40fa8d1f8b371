"""What a Bash command may have changed: the workspace's file stamps (mtime_ns, size,
inode), scanned before and after it (`checkpoints` compares them).
"""

from __future__ import annotations

import os
import stat as statmod
from pathlib import Path

from sema_rpc.core.policy.paths import SKIP_DIRS

SCAN_LIMIT = 50_000
"""Files a Bash stamp scan looks at, at most (env SEMA_CHECKPOINT_SCAN_LIMIT)."""

Stamp = tuple[int, int, int]
"""(mtime_ns, size, inode)"""


def scan_limit() -> int:
    try:
        value = int(os.environ.get("SEMA_CHECKPOINT_SCAN_LIMIT", ""))
    except ValueError:
        return SCAN_LIMIT
    return value if value > 0 else SCAN_LIMIT


def scan_stamps(root: Path, limit: int | None = None) -> tuple[dict[str, Stamp], bool]:
    """Every regular file below `root` (symlinks not followed, `SKIP_DIRS` skipped) with
    its stamp; and whether the scan stopped at `limit` files."""
    limit = scan_limit() if limit is None else limit
    out: dict[str, Stamp] = {}
    stack = [str(root)]
    while stack:
        top = stack.pop()
        try:
            entries = os.scandir(top)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        out[entry.path] = (st.st_mtime_ns, st.st_size, st.st_ino)
                        if len(out) >= limit:
                            return out, True
                except OSError:
                    continue
    return out, False


def file_stamp(path: str) -> Stamp | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not statmod.S_ISREG(st.st_mode):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
