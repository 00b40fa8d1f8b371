"""Private files under `SEMA_ROOT`: folders 0700, files 0600, written whole.

One writer for every small file the server keeps for the user (titles, input history,
permission rules, checkpoint blobs, exported pages): a temporary file beside the target,
created 0600, then renamed over it. A reader sees the old content or the new, never a
part of either; when the write fails, the old file stays and the temporary one is gone.
Append-only files (histories, checkpoint indexes, transcripts) have their own writers.
The file tools replace a workspace file the same way (`replacing`, keeping its mode).
"""

from __future__ import annotations

import contextlib
import os
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
def replacing(
    path: Path, *, mode: int = PRIVATE_FILE_MODE, durable: bool = False
) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into, streamed: on a clean exit it
    replaces `path` atomically, with permission bits `mode`; on an error `path` is
    untouched and the temporary file removed. `durable`: synced to the disk before it
    replaces `path` (survives a power loss, not only a crash). The folder must exist.
    Raises OSError; blocking (use a thread on the loop).

    The temporary file has a name nobody can guess and is created exclusively (never
    through a link someone placed there: the folder may be a workspace, written by a
    stranger), 0600 until it is complete."""
    # os.urandom is what `secrets.token_hex` reads; `secrets` (hmac, hashlib, random)
    # would cost the path to `initialize` (ACP's reads the credentials, which import this).
    tmp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
            if mode != PRIVATE_FILE_MODE:
                f.flush()
                os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def replacing_private(
    path: Path, *, make_dir: bool = True, durable: bool = False
) -> Iterator[BinaryIO]:
    """`replacing` a private file: 0600, its folder made 0700 when `make_dir` creates it."""
    if make_dir:
        ensure_private_dir(path.parent)
    with replacing(path, durable=durable) as f:
        yield f


def write_private(
    path: Path, data: bytes | str, *, make_dir: bool = True, durable: bool = False
) -> None:
    """Replace `path` with `data` atomically, the file 0600 (and its folder 0700 when this
    creates it). Raises OSError; blocking (use a thread on the event loop)."""
    with replacing_private(path, make_dir=make_dir, durable=durable) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
