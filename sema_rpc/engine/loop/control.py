"""Interrupting a running turn.

`interrupt()` is synchronous and idempotent: it marks the turn and cancels whatever is
awaiting right now (the model stream, a running tool, a pending permission request).
The loop then stops at the next checkpoint:
1 after the model response, before tools; 2 after all tools, before the next model
call; 3 before each tool; 4 during a tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sema_rpc.core.scopes import CancelScope

INTERRUPT_MESSAGE = "[Request interrupted by user]"
CANCEL_MESSAGE = "[Request interrupted by user for tool use]"


class TurnControl:
    def __init__(self) -> None:
        self.interrupted = False
        self.reason: str | None = None
        """`user` (session/interrupt) or `refuse` (a permission was rejected)."""
        self.checkpoint: int | None = None
        """The first checkpoint that observed the interrupt."""
        self._scopes: set[CancelScope] = set()

    def interrupt(self, reason: str = "user") -> bool:
        """Returns False when the turn was already interrupted."""
        if self.interrupted:
            return False
        self.interrupted = True
        self.reason = reason
        for scope in list(self._scopes):
            scope.cancel()
        return True

    def observe(self, checkpoint: int) -> bool:
        """True when interrupted; records the checkpoint that noticed it first."""
        if self.interrupted and self.checkpoint is None:
            self.checkpoint = checkpoint
        return self.interrupted

    @contextmanager
    def cancellable(self) -> Iterator[CancelScope]:
        """A scope that `interrupt()` cancels. Check `scope.cancel_called` afterwards."""
        with CancelScope() as scope:
            self._scopes.add(scope)
            if self.interrupted:
                scope.cancel()
            try:
                yield scope
            finally:
                self._scopes.discard(scope)


class PromptCancel:
    """Cancelling one prompt, whatever stage it is at when the cancel comes.

    `cancel()` may come at any time, even before the engine has seen the prompt (a
    client sends the request and its cancel back to back). The engine installs, with
    `on_cancel`, what cancelling means at the stage the prompt is in: leave the queue
    (a waiting follow-up or steer) or interrupt the turn it runs in. A prompt cancelled
    before it started never runs. Either way it is answered once, `interrupted`.
    """

    def __init__(self) -> None:
        self.cancelled = False
        self.started = False
        """Its turn has started (it holds the session's turn): a stop interrupts the turn."""
        self.open_in: list[PromptCancel] | None = None
        """The session's open prompts it is listed in until answered (lifecycle.py)."""
        self._hook: Callable[[], object] | None = None

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        if self._hook is not None:
            self._hook()

    def on_cancel(self, hook: Callable[[], object] | None) -> None:
        """What `cancel()` does from now on (None: nothing more than the flag)."""
        self._hook = hook

    async def acquire(self, lock: asyncio.Lock) -> bool:
        """Wait for `lock` in arrival order. False (not holding it) when the prompt is
        cancelled first: it leaves the queue at once."""
        if self.cancelled:
            return False
        if not lock.locked():
            # Free: taken now, without yielding, so prompts keep their arrival order.
            await lock.acquire()
            if self.cancelled:  # only if it had to wait after all (a hand-over under way)
                lock.release()
                return False
            return True
        acquire = asyncio.ensure_future(lock.acquire())
        self.on_cancel(acquire.cancel)
        try:
            await asyncio.wait({acquire})
        except BaseException:
            if not acquire.cancel() and not acquire.cancelled():
                lock.release()  # it was granted the lock as this task was cancelled
            raise
        finally:
            self.on_cancel(None)
        if acquire.cancelled():
            return False
        if self.cancelled:  # cancelled as the lock was granted
            lock.release()
            return False
        return True
