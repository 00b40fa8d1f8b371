"""Cancel scopes, deadlines, shields and threads on plain asyncio.

What the engine, the tools and the providers need of structured cancellation, in a page
of stdlib: a server's session then never imports a task-group library on its way to the
first answer (that import cost more CPU than the rest of a session's start). The MCP
client keeps its SDK's own (it is built on it); the two mix, since both are asyncio tasks.

Semantics (what callers rely on):

- `CancelScope.cancel()` cancels the task that entered the scope at the await it is
  suspended at inside the scope, never outside it: a scope cancelled by its own task (or
  before the body awaits anything) delivers at the body's next await, and not at all if
  the body ends first.
- Level-triggered: while the task stays in a cancelled scope, every await it suspends at
  is cancelled again, so a construct that swallows one `CancelledError` (`asyncio.wait_for`
  whose future completes as it is cancelled) cannot keep a stopped turn running.
- The scope swallows the cancellation it caused (`cancelled_caught`) and lets through any
  other (an outer scope's, the task's own), counting requests as `asyncio.timeout` does,
  so scopes nest.
- `shielded(aw)` runs `aw` to its end: no scope cancels the task meanwhile (their
  cancellation lands at the next await after it), and a cancellation of the task itself is
  raised once `aw` is done. For what must happen once begun: a write, recording a change,
  killing a process group.
- `run_sync_in_thread(fn)` is shielded: the thread's result stands (a scope cancelled
  meanwhile cancels the next await); `abandon=True` returns at once instead, for a read the
  caller can tell to stop.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_REDELIVER_S = 0.005
"""How often a cancelled scope cancels its task again while the task is still in it."""


class _TaskScopes:
    """The scopes a task is inside (innermost last) and how many shields it is under."""

    __slots__ = ("active", "shields")

    def __init__(self) -> None:
        self.active: list[CancelScope] = []
        self.shields = 0


_tasks: weakref.WeakKeyDictionary[asyncio.Task[Any], _TaskScopes] = weakref.WeakKeyDictionary()


def _scopes_of(task: asyncio.Task[Any]) -> _TaskScopes:
    state = _tasks.get(task)
    if state is None:
        state = _tasks[task] = _TaskScopes()
    return state


class CancelScope:
    """`with CancelScope() as scope:` around awaits of the current task; `scope.cancel()`
    from anywhere on the loop. After the block, `cancel_called` and `cancelled_caught`."""

    def __init__(self) -> None:
        self.cancel_called = False
        self.cancelled_caught = False
        self._task: asyncio.Task[Any] | None = None
        self._state: _TaskScopes | None = None
        self._delivered = 0
        """Cancellation requests this scope made of its task (taken back on exit)."""
        self._base = 0
        self._timer: asyncio.TimerHandle | None = None
        self._retry: asyncio.Handle | None = None

    def __enter__(self) -> CancelScope:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a CancelScope is entered by an asyncio task")
        self._task = task
        self._state = _scopes_of(task)
        self._state.active.append(self)
        self._base = task.cancelling()
        if self.cancel_called:
            self._schedule()
        return self

    @property
    def _active(self) -> bool:
        return self._state is not None and self in self._state.active

    def cancel(self) -> None:
        """Idempotent. Safe from any callback or task of the loop the scope runs on."""
        if self.cancel_called:
            return
        self.cancel_called = True
        if self._active:
            self._schedule()

    def _schedule(self) -> None:
        # From a callback, never from the task itself: by then the task is suspended.
        if self._retry is None and self._task is not None:
            self._retry = self._task.get_loop().call_soon(self._deliver)

    def _deliver(self) -> None:
        self._retry = None
        task, state = self._task, self._state
        if task is None or state is None or task.done() or not self._active or state.shields:
            return  # ended, or shielded: `shielded` calls `_schedule` again at its end
        if _in_anyio_shield(task):  # e.g. the MCP SDK telling a server a call was cancelled
            self._retry = task.get_loop().call_later(_REDELIVER_S, self._deliver)
            return
        waiter = getattr(task, "_fut_waiter", None)
        # Suspended in the scope (it is active and the task is not running): cancel what
        # the task waits for, unless that is cancelled already.
        if waiter is None or not waiter.done():
            self._delivered += 1
            task.cancel()
        # Again shortly, for as long as the task stays in the scope (level-triggered).
        self._retry = task.get_loop().call_later(_REDELIVER_S, self._deliver)

    def deadline_after(self, seconds: float) -> None:
        """Cancel the scope `seconds` from now (unless it has ended)."""
        assert self._task is not None
        self._timer = self._task.get_loop().call_later(seconds, self.cancel)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        assert self._task is not None and self._state is not None
        active = self._state.active
        active.remove(self)
        for handle in (self._timer, self._retry):
            if handle is not None:
                handle.cancel()
        self._retry = None
        remaining = self._task.cancelling()
        for _request in range(self._delivered):
            remaining = self._task.uncancel()
        self._delivered = 0
        # Ours to swallow when this scope was cancelled, no other request is outstanding
        # (the task's own), and no scope around it was cancelled too (the outermost
        # cancelled scope catches, so nothing inside a cancelled scope runs on).
        self.cancelled_caught = (
            self.cancel_called
            and exc_type is not None
            and issubclass(exc_type, asyncio.CancelledError)
            and remaining <= self._base
            and not any(scope.cancel_called for scope in active)
        )
        return self.cancelled_caught


def move_on_after(seconds: float) -> _Deadline:
    """`with move_on_after(s) as scope:`: the body is cancelled after `s` seconds and the
    code after the block goes on (`scope.cancelled_caught` tells whether it was)."""
    return _Deadline(seconds)


class _Deadline(CancelScope):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self._seconds = seconds

    def __enter__(self) -> _Deadline:
        super().__enter__()
        self.deadline_after(self._seconds)
        return self


def _in_anyio_shield(task: asyncio.Task[Any]) -> bool:
    """Whether `task` is inside a shielded anyio cancel scope (only code built on anyio, the
    MCP SDK's, has them). Read from anyio's asyncio backend, and only once that is loaded."""
    backend = sys.modules.get("anyio._backends._asyncio")
    if backend is None:
        return False
    state = getattr(backend, "_task_states", {}).get(task)
    scope = getattr(state, "cancel_scope", None)
    while scope is not None:
        if getattr(scope, "_shield", False):
            return True
        scope = getattr(scope, "_parent_scope", None)
    return False


async def shielded(aw: Awaitable[T]) -> T:
    """`aw` to its end: scopes do not cancel the caller meanwhile (a cancelled one does at
    the next await after), and a cancellation of the caller itself is raised after `aw`
    (its result or error then dropped)."""
    inner = asyncio.ensure_future(aw)
    task = asyncio.current_task()
    state = _scopes_of(task) if task is not None else None
    cancelled: asyncio.CancelledError | None = None
    if state is not None:
        state.shields += 1
    try:
        while not inner.done():
            try:
                await asyncio.wait({inner})
            except asyncio.CancelledError as exc:
                cancelled = exc
    finally:
        if state is not None:
            state.shields -= 1
            if not state.shields:
                for scope in state.active:
                    if scope.cancel_called:
                        scope._schedule()
    if cancelled is not None:
        if not inner.cancelled():
            inner.exception()  # retrieved: the cancellation is what the caller sees
        raise cancelled
    return inner.result()


_workers: ThreadPoolExecutor | None = None
WORKER_THREADS = 40
"""Blocking work of tools and sessions has its own pool: the loop's default one (a few
threads on a small machine) also resolves every new model connection's host name."""


async def run_sync_in_thread(fn: Callable[..., T], *args: Any, abandon: bool = False) -> T:
    """`fn(*args)` in a worker thread, with the caller's context variables. Shielded (its
    result stands), or with `abandon` left running when cancelled."""
    global _workers
    if _workers is None:
        _workers = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="sema-worker")
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    future = loop.run_in_executor(_workers, call)
    if abandon:
        return await future
    return await shielded(future)
