"""The session's `ToolServices.changes`: the checkpoint store around each tool call that
changes files."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sema_rpc.engine.store.checkpoints import BashWatch, CheckpointStore
from sema_rpc.tools.base import FileEffect, ToolContext

log = logging.getLogger(__name__)


class Checkpoints:
    """The session's `ToolServices.changes`: keeps what each call that changes files
    found and left (in worker threads). A failure here is logged, never the tool's."""

    def __init__(self, store: CheckpointStore, read_files: dict[str, Any]):
        self.store = store
        self.read_files = read_files
        self._warned = False

    async def before(self, tool: str, effect: FileEffect, ctx: ToolContext) -> Any:
        try:
            if effect.workspace:
                read = list(self.read_files)
                watch: Any = await asyncio.to_thread(
                    self.store.before_command, effect.mentions, read
                )
            else:
                watch = await asyncio.to_thread(self.store.before_write, effect.paths)
        except OSError as exc:  # e.g. SEMA_ROOT cannot be written: the call runs unwatched
            self._failed(f"cannot keep the files {tool} may change: {exc}")
            return None
        except Exception:
            log.exception("checkpoints: cannot keep the files %s may change", tool)
            return None
        return (tool, watch)

    def _failed(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("checkpoints: %s (turn:diff and rewind miss this change)", message)
        else:
            log.debug("checkpoints: %s", message)

    async def after(self, token: Any) -> None:
        if token is None:
            return
        tool, watch = token
        try:
            if isinstance(watch, BashWatch):
                await asyncio.to_thread(self.store.after_command, watch)
            else:
                await asyncio.to_thread(self.store.after_write, watch, tool)
        except OSError as exc:
            self._failed(f"cannot record what {tool} changed: {exc}")
        except Exception:
            log.exception("checkpoints: cannot record what %s changed", tool)
