"""sema-rpc: a coding-agent backend spoken to over stdio with JSON-RPC 2.0.

`__version__` is the installed distribution's version, read from its metadata
(`sema_rpc-<version>.dist-info/METADATA` in the first site directory on `sys.path` that
has it, as `importlib.metadata` finds it) on first use; `0+unknown` when sema-rpc runs from a checkout that was never
installed. The file is read directly because importing `importlib.metadata` (the email
parser and its dependencies) would cost `initialize` more than the rest of its imports;
tests/test_version.py checks the two agree.
"""

from __future__ import annotations

import os
import sys

PROTOCOL_VERSION = 1
DIST_NAME = "sema-rpc"
UNKNOWN_VERSION = "0+unknown"

_version: str | None = None


def _metadata_version() -> str:
    # Where installers put the metadata: the site directories, and the one holding this
    # package (a --target or vendored install). The current directory and the standard
    # library's are never it, and listing them (a big cwd) would cost more than the rest.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prefix = DIST_NAME.replace("-", "_") + "-"
    for entry in sys.path:
        if entry != package_parent and os.path.basename(entry) not in _SITE_DIRS:
            continue
        try:
            names = sorted(
                n for n in os.listdir(entry) if n.startswith(prefix) and n.endswith(".dist-info")
            )
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(entry, name, "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if not line.strip():
                            break  # end of the headers
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
            except OSError:
                continue
    return UNKNOWN_VERSION


_SITE_DIRS = ("site-packages", "dist-packages")


def __getattr__(name: str) -> str:
    if name == "__version__":
        global _version
        if _version is None:
            _version = _metadata_version()
        return _version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
