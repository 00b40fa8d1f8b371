"""A session's sandbox settings (the server's side; the child never imports this)."""

from __future__ import annotations

import os


class SandboxSettings:
    """A session's sandbox: its mode, whether TCP is allowed, its private temp dir."""

    # A plain class: every session loads this module, and a dataclass costs its creation.
    __slots__ = ("_temp", "mode", "network", "reason")

    def __init__(self, mode: str = "off", network: bool = False, reason: str | None = None) -> None:
        self.mode = mode
        self.network = network
        self.reason = reason
        """Why the sandbox is unavailable here (then `mode` is `off`)."""
        self._temp: str | None = None

    @property
    def active(self) -> bool:
        return self.mode != "off"

    def temp_dir(self) -> str:
        """The session's private temp dir (0700, created on first use): `TMPDIR` of its
        commands and the one place outside the workspace they may write."""
        if self._temp is None or not os.path.isdir(self._temp):
            import tempfile  # here: only a sandboxed command needs it

            self._temp = tempfile.mkdtemp(prefix="sema-sandbox-")
        return self._temp

    def close(self) -> None:
        if self._temp is not None:
            import shutil

            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None
