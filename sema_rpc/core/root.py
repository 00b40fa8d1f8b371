"""Where sema-rpc keeps its files: `$SEMA_ROOT`, else `~/.sema`.

Its own module so that what start-up reads from there (the stored keys, for redaction)
needs neither `core.config` nor anything else."""

from __future__ import annotations

import os
from pathlib import Path


def sema_root() -> Path:
    """`$SEMA_ROOT`, else `~/.sema`."""
    env = os.environ.get("SEMA_ROOT")
    return Path(env).expanduser() if env else Path.home() / ".sema"
