"""The session history's writer: appends entries to `history/<sessionId>.jsonl` (the
format: `history_format`).

Writes never happen on the event loop: an entry is serialised where it is appended and
handed to one writer thread for the whole process, which writes and syncs the files in
the order the entries were appended (entries queued for one file meanwhile share one
write and one fsync). A session that needs its entries on disk awaits `synced()`
(without blocking the loop for other sessions); `load_history` and `list_sessions` first
wait for what is queued; the server's shutdown waits for everything (`synced_all`).

The file is created (its `meta` line written and its folder synced) ahead of the first
entry, in the background after `session/create` (`open_ahead`), and removed again if no
entry comes before the session is disposed or the server ends in order; `list_sessions`
does not list a history without input.

When the file does not end with a newline the next append starts with one, so a torn
line never swallows a good one. A failed write (disk full, read-only root) is
logged and kept in memory; it is retried, in order, with the next append.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

from sema_rpc.core.files import ensure_private_dir
from sema_rpc.core.messages import Message
from sema_rpc.engine.store.history_format import FORMAT_VERSION, dumps, history_path, now

log = logging.getLogger(__name__)


_Job = list[bytes] | Literal["open", "discard"] | None


class _Writer:
    """The process's one history writer thread, started on first use.

    Jobs (a store and its lines, None to close the store's file, or `"open"` /
    `"discard"`, see `HistoryStore.open_ahead`) run in the order they were submitted,
    so each file gets its entries in order. Each job has a ticket (1, 2, ...); `done`
    is the last ticket whose job finished (written and synced, or failed and kept by
    its store for a retry)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._jobs: list[tuple[HistoryStore, _Job]] = []
        self._submitted = 0
        self._done = 0
        self._waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread: threading.Thread | None = None

    def submit(self, store: HistoryStore, lines: _Job) -> int:
        with self._lock:
            self._jobs.append((store, lines))
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sema-history", daemon=True)
                self._thread.start()
                atexit.register(self.wait, None, 10.0)
            self._changed.notify_all()
            return self._submitted

    def wait(self, ticket: int | None = None, timeout: float | None = None) -> bool:
        """Block until job `ticket` (default: every job submitted so far) is done."""
        with self._lock:
            target = self._submitted if ticket is None else ticket
            return self._changed.wait_for(lambda: self._done >= target, timeout)

    async def wait_async(self, ticket: int | None = None) -> None:
        """Wait for job `ticket` (default: all so far) without blocking the event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            target = self._submitted if ticket is None else ticket
            if self._done >= target:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((target, loop, future))
        await asyncio.shield(future)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._changed.wait_for(lambda: bool(self._jobs))
                jobs, self._jobs = self._jobs, []
                last = self._submitted
            by_store: dict[int, tuple[HistoryStore, list[_Job]]] = {}
            for store, lines in jobs:  # dicts keep insertion order
                by_store.setdefault(id(store), (store, []))[1].append(lines)
            for store, items in by_store.values():
                try:
                    store._drain(items)
                except Exception:  # a bug must not stop every session's history
                    log.exception("history writer: %s", store.path)
            with self._lock:
                self._done = last
                self._changed.notify_all()
                ready = [w for w in self._waiters if w[0] <= last]
                self._waiters = [w for w in self._waiters if w[0] > last]
            for _, loop, future in ready:
                with contextlib.suppress(RuntimeError):  # that loop is closed
                    loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_writer = _Writer()


def flush_all(timeout: float | None = None) -> bool:
    """Block until every history entry appended so far is written (or failed)."""
    return _writer.wait(None, timeout)


async def synced_all() -> None:
    """Wait, without blocking the loop, for every history entry appended so far."""
    await _writer.wait_async(None)


class HistoryStore:
    """Appends one session's entries to its JSONL file. Never raises on I/O errors.

    The append methods serialise the entry and queue it for the writer thread; the file
    itself is only touched there (`_drain`)."""

    def __init__(self, session_id: str, working_dir: Path, message_count: int = 0):
        self.session_id = session_id
        self.working_dir = working_dir
        self.path = history_path(session_id)
        self.message_count = message_count
        self._fd: int | None = None
        self._pending: list[bytes] = []
        self._failing = False
        self._closed = False
        self._ahead = False
        """The file was created by `open_ahead` and holds no entry yet (writer thread)."""
        self._held: list[bytes] = []
        """`hold_event` lines, written with the next entry."""
        self._ticket = 0
        """The writer's ticket for this store's last job."""
        self.write_seconds = 0.0
        """Total time spent writing and syncing, on the writer thread (for the benchmark)."""

    # ---- entries

    def append_message(self, message: Message, usage: tuple[int, int] | None = None) -> None:
        self.message_count += 1
        entry: dict[str, Any] = {"t": "message", "n": self.message_count, "at": now()}
        entry.update(message.model_dump(mode="json", exclude_none=True))
        if usage is not None:
            entry["u"] = {"c": usage[0], "k": usage[1]}
        self._write([dumps(entry)])

    def append_event(self, kind: str, **fields: Any) -> None:
        self._write([dumps({"t": kind, "n": self.message_count, "at": now(), **fields})])

    def hold_event(self, kind: str, **fields: Any) -> None:
        """`append_event`, written with the next entry (one write and one sync for both,
        where two queued apart cost two syncs), or by `synced()`, `flush()`, `close()`,
        `discard_if_unused()` if none comes."""
        self._held.append(dumps({"t": kind, "n": self.message_count, "at": now(), **fields}))

    def _release(self) -> None:
        if self._held:
            self._write([])

    def append_compaction(self, messages: list[Message], **fields: Any) -> None:
        self.append_event(
            "compact",
            **fields,
            messages=[m.model_dump(mode="json", exclude_none=True) for m in messages],
        )

    def import_messages(self, messages: list[Message], todos: list[dict] | None) -> None:
        """Write an imported history (the older JSON format) in one append."""
        lines = []
        for message in messages:
            self.message_count += 1
            entry: dict[str, Any] = {"t": "message", "n": self.message_count, "at": now()}
            entry.update(message.model_dump(mode="json", exclude_none=True))
            lines.append(dumps(entry))
        if todos:
            lines.append(
                dumps({"t": "todos", "n": self.message_count, "at": now(), "todos": todos})
            )
        self._write(lines)

    # ---- file

    def flush(self, timeout: float | None = None) -> bool:
        """Block until this store's queued entries are written (or failed). Not on the loop."""
        self._release()
        return _writer.wait(self._ticket, timeout)

    async def synced(self) -> None:
        """Wait, without blocking the loop, until this store's queued entries are written."""
        self._release()
        await _writer.wait_async(self._ticket)

    def open_ahead(self) -> None:
        """Create the file now, in the background (the writer thread), so that the first
        entry does not wait for it: creating a file and syncing its folder costs a few ms
        on a journaled file system, more than an append. The file then holds only its
        `meta` line, which `list_sessions` does not list; `close()` and
        `discard_if_unused()` remove it if no entry came. Failures are left to the first
        append (which logs them)."""
        if not self._closed:
            self._ticket = _writer.submit(self, "open")

    def discard_if_unused(self) -> None:
        """Remove the file `open_ahead` created if no entry was appended (the server's
        orderly end); the store stays usable (an append creates the file again)."""
        if not self._closed:
            self._release()
            self._ticket = _writer.submit(self, "discard")

    def close(self) -> None:
        """Close the file once the queued entries are written; later appends are dropped.
        Returns at once: `synced()` / `flush()` wait for it. A file `open_ahead` created
        that got no entry is removed."""
        if not self._closed:
            self._release()
            self._closed = True
            self._ticket = _writer.submit(self, None)

    def _write(self, lines: list[bytes]) -> None:
        if self._closed:
            log.warning("history of %s is closed; entry dropped", self.session_id)
            return
        if self._held:
            lines, self._held = [*self._held, *lines], []
        self._ticket = _writer.submit(self, lines)

    def _drain(self, items: list[_Job]) -> None:
        """On the writer thread: this store's jobs, in order (None closes the file)."""
        for lines in items:
            if lines is None or lines == "discard":
                if self._pending:
                    self._flush()
                if self._ahead and not self._pending:
                    self._close_fd()
                    with contextlib.suppress(OSError):
                        os.unlink(self.path)
                    self._ahead = False
                if lines is None:
                    self._close_fd()
            elif lines == "open":
                if self._pending:
                    self._flush()
                self._open_ahead()
            else:
                self._pending.extend(lines)
        if self._pending and isinstance(items[-1], list):
            self._flush()

    def _open_ahead(self) -> None:
        if self._fd is not None or self._failing:
            return
        try:
            exists = self.path.exists()
            fd = self._open()
            os.fsync(fd)
        except OSError:
            log.debug("history %s: not created ahead", self.path, exc_info=True)
            self._close_fd()
            return
        self._ahead = not exists

    def _flush(self) -> None:
        started = time.perf_counter()
        try:
            fd = self._open()
            data = b"".join(self._pending)
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # never leave half a line behind
                    os.ftruncate(fd, size)
                raise
        except OSError as exc:
            if not self._failing:
                log.error(
                    "cannot write session history %s: %s (the session continues in memory;"
                    " the write is retried with the next message)",
                    self.path,
                    exc,
                )
            self._failing = True
            self._close_fd()
            return
        finally:
            self.write_seconds += time.perf_counter() - started
        if self._failing:
            log.warning("session history %s is writable again", self.path)
        self._failing = False
        self._ahead = False
        self._pending.clear()

    def _open(self) -> int:
        if self._fd is not None:
            return self._fd
        ensure_private_dir(self.path.parent)
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        created = False
        try:
            fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            created = True
        except FileExistsError:
            fd = os.open(self.path, flags)
        try:
            os.fchmod(fd, 0o600)
            if created:
                meta = {
                    "t": "meta",
                    "v": FORMAT_VERSION,
                    "n": 0,
                    "at": now(),
                    "sessionId": self.session_id,
                    "workingDir": str(self.working_dir),
                }
                os.write(fd, dumps(meta))
                _fsync_dir(self.path.parent)
            elif not _ends_with_newline(self.path):
                os.write(fd, b"\n")  # a torn last line stays a line of its own
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return True
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
    except OSError:
        return True
