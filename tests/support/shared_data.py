"""Where the shared, read-only test data lives: `../shared` next to the repository.

`SEMA_SHARED_DIR` overrides it (a checkout elsewhere, CI).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    env = os.environ.get("SEMA_SHARED_DIR")
    return Path(env) if env else REPO.parent / "shared"


def tiktoken_dir() -> Path:
    """tiktoken's cache files (cl100k_base, o200k_base), named by the sha1 of their URL:
    point TIKTOKEN_CACHE_DIR here."""
    return shared_dir() / "tiktoken"
