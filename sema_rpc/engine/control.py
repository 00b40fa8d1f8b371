"""Interrupting a running turn.

`interrupt()` is synchronous and idempotent: it marks the turn and cancels whatever is
awaiting right now (the model stream, a running tool, a pending permission request).
The loop then stops at the next checkpoint (seed 000):
1 after the model response, before tools; 2 after all tools, before the next model
call; 3 before each tool; 4 during a tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

INTERRUPT_MESSAGE = "[Request interrupted by user]"
CANCEL_MESSAGE = "[Request interrupted by user for tool use]"


class TurnControl:
    def __init__(self) -> None:
        self.interrupted = False
        self.reason: str | None = None
        """`user` (session/interrupt) or `refuse` (a permission was rejected)."""
        self.checkpoint: int | None = None
        """The first checkpoint that observed the interrupt."""
        self._scopes: set[anyio.CancelScope] = set()

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
    def cancellable(self) -> Iterator[anyio.CancelScope]:
        """A scope that `interrupt()` cancels. Check `scope.cancel_called` afterwards."""
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            if self.interrupted:
                scope.cancel()
            try:
                yield scope
            finally:
                self._scopes.discard(scope)
