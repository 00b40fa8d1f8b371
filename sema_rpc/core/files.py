"""Private files under `SEMA_ROOT`: folders 0700, files 0600, written whole.

One writer for every small file the server keeps for the user (titles, input history,
permission rules, checkpoint blobs, exported pages): a temporary file beside the target,
created 0600, then renamed over it. A reader sees the old content or the new, never a
part of either; when the write fails, the old file stays and the temporary one is gone.
Append-only files (histories, checkpoint indexes, transcripts) have their own writers.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> None:
    """`path` and its missing parents exist; `path` itself is 0700 (best effort)."""
    if not path.is_dir():
        path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path, PRIVATE_DIR_MODE)


@contextlib.contextmanager
def replacing_private(
    path: Path, *, make_dir: bool = True, durable: bool = False
) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into, streamed: on a clean exit it
    replaces `path` atomically (0600); on an error `path` is untouched and the temporary
    file removed. `durable`: synced to the disk before it replaces `path` (survives a
    power loss, not only a crash). Raises OSError; blocking (use a thread on the loop)."""
    if make_dir:
        ensure_private_dir(path.parent)
    # pid and thread: two writers of one file (threads, processes) never share a temp file
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_private(
    path: Path, data: bytes | str, *, make_dir: bool = True, durable: bool = False
) -> None:
    """Replace `path` with `data` atomically, the file 0600 (and its folder 0700 when this
    creates it). Raises OSError; blocking (use a thread on the event loop)."""
    with replacing_private(path, make_dir=make_dir, durable=durable) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
