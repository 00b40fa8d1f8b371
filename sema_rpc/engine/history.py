"""Session history on disk: one append-only JSONL file per session.

    $SEMA_ROOT/history/<sessionId>.jsonl        mode 0600, folder 0700

The file is the *comprehensive* history: every completed message, todo list, mode
change, `/clear` and compaction, one JSON object per line, appended and fsync'd as each
completes. The *curated* history (what the model sees) is rebuilt from it on load: the
messages after the last `clear`, starting from the last `compact` marker's messages.

Writes never happen on the event loop: an entry is serialised where it is appended and
handed to one writer thread for the whole process, which writes and syncs the files in
the order the entries were appended (entries queued for one file meanwhile share one
write and one fsync). A session that needs its entries on disk awaits `synced()`
(without blocking the loop for other sessions); `load_history` and `list_sessions` first
wait for what is queued; the server's shutdown waits for everything (`synced_all`).

Entries (`t` is the kind, `n` the number of messages written so far, `at` a Unix time):

    {"t":"meta","v":1,"n":0,"at":…,"sessionId":…,"workingDir":…}        first line
    {"t":"message","n":7,"at":…,"role":"assistant","content":[…],"u":{"c":7,"k":1234}}
    {"t":"todos","n":7,"at":…,"todos":[…]}
    {"t":"mode","n":7,"at":…,"mode":"Plan"}
    {"t":"model","n":7,"at":…,"model":"gpt","thinking":null}    session/setModel
    {"t":"usage","n":7,"at":…,"inputTokens":…,"outputTokens":…,"cacheReadTokens":…,
     "cacheWriteTokens":…,"costUsd":0.0123}       the session's running totals, after each
                                                  model response (the last one counts)
    {"t":"clear","n":7,"at":…}
    {"t":"compact","n":7,"at":…,"strategy":"summary","trigger":"auto","tokenBefore":…,
     "tokenCompact":…,"messages":[…the curated history after compaction…]}
    {"t":"rewind","n":7,"at":…,"messageId":"m_…","restore":"both",
     "files":[{"path":…,"found":sha|null|"?","wrote":sha|null}]}      session/rewind
    {"t":"redo","n":7,"at":…}                                         the last rewind undone

A `rewind` with `restore` conversation or both cuts the curated history just before
`messageId` (`cut_before`); a `redo` right after it (no message in between) puts it back.
`files` are what the rewind found and wrote in each file (contents in the session's
checkpoint store, `"?"` unknown), so a resumed session can still redo it.

`u` on an assistant message is the provider's usage for the prompt it answered plus its
output: `k` tokens for the first `c` curated messages. A resumed session starts from that
figure instead of tokenizing its whole history.

The file is created (its `meta` line written and its folder synced) ahead of the first
entry, in the background after `session/create` (`open_ahead`), and removed again if no
entry comes before the session is disposed or the server ends in order; `list_sessions`
does not list a history without input.

A line that does not parse (a torn last line after a kill, or garbage) is skipped with a
warning; when the file does not end with a newline the next append starts with one, so
a torn line never swallows a good one. A failed write (disk full, read-only root) is
logged and kept in memory; it is retried, in order, with the next append.

Also here: the older `{messages, todos}` JSON format (`history/<sessionId>.json`), which is
imported into the JSONL file on first load, `session/list`, and the per-project input
history.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import datetime
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from sema_rpc.core.config import sema_root
from sema_rpc.core.files import ensure_private_dir, write_private
from sema_rpc.core.messages import (
    ContentBlock,
    Message,
    MessagePart,
    TextBlock,
    ToolResultBlock,
    new_message_id,
)
from sema_rpc.core.secrets import known_secrets, redact_known
from sema_rpc.core.text import SURROGATE_ESCAPE, without_surrogates

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TITLE_CHARS = 100
INPUT_HISTORY_CAP = 100
INPUT_HISTORY_MAX_CHARS = 10_000
_HEAD_BYTES = 256 * 1024
_TAIL_BYTES = 64 * 1024

ORPHANED_TOOL_RESULT = (
    "[The session ended before this tool call finished; it may or may not have run.]"
)


def history_dir() -> Path:
    return sema_root() / "history"


def valid_session_id(session_id: str) -> bool:
    """Session ids name files: letters, digits, `.`, `_`, `-`; 1-128 chars; no leading dot."""
    return bool(_SESSION_ID.fullmatch(session_id))


def history_path(session_id: str) -> Path:
    return history_dir() / f"{session_id}.jsonl"


def seed_json_path(session_id: str) -> Path:
    return history_dir() / f"{session_id}.json"


def _dumps(entry: dict[str, Any]) -> bytes:
    # ASCII: lone surrogates from odd tool output stay valid JSON; never a raw newline.
    # A key the server knows never reaches the file, whatever brought it into the
    # conversation (an @reference, the user's own input): redacted in the values, so
    # the line's own structure can never be touched.
    if secrets := known_secrets():
        entry = _redacted(entry, secrets)
    return json.dumps(entry, separators=(",", ":")).encode("ascii") + b"\n"


def _redacted(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact_known(value, secrets)
    if isinstance(value, dict):
        return {k: _redacted(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, secrets) for v in value]
    return value


def append_curated(history: list[Message], message: Message) -> None:
    """Append to a curated history, merging consecutive user messages (providers require
    alternating roles). The loop and the loader share this, so both build the same list.

    The merged message keeps the first one's id and kind; the later one (and the parts it
    had) are listed in `parts` with the index of their first block, so each stays
    addressable (`cut_before`, the transcript)."""
    if message.role == "user" and history and history[-1].role == "user":
        last = history[-1]
        offset = len(last.content)
        parts = list(last.parts or ())
        if message.id is not None:
            parts.append(MessagePart(id=message.id, at=offset, kind=message.kind))
        parts += [MessagePart(id=p.id, at=p.at + offset, kind=p.kind) for p in message.parts or ()]
        history[-1] = Message(
            role="user",
            content=[*last.content, *message.content],
            id=last.id,
            kind=last.kind,
            parts=parts or None,
        )
    else:
        history.append(message)


def split_parts(message: Message) -> list[tuple[str | None, str | None, list[ContentBlock]]]:
    """A (possibly merged) message as the messages it was made of: (id, kind, blocks)."""
    if not message.parts:
        return [(message.id, message.kind, list(message.content))]
    out: list[tuple[str | None, str | None, list[ContentBlock]]] = []
    starts = [(message.id, message.kind, 0)] + [(p.id, p.kind, p.at) for p in message.parts]
    for i, (mid, kind, at) in enumerate(starts):
        end = starts[i + 1][2] if i + 1 < len(starts) else len(message.content)
        out.append((mid, kind, list(message.content[at:end])))
    return out


def find_message(history: list[Message], message_id: str) -> tuple[int, int] | None:
    """(index in `history`, index of its first block) of the message with that id, also
    one merged into another; None when the history holds none."""
    for i in range(len(history) - 1, -1, -1):  # recent ones are asked for most
        message = history[i]
        if message.id == message_id:
            return i, 0
        for part in message.parts or ():
            if part.id == message_id:
                return i, part.at
    return None


@dataclass
class Located:
    """One message of a curated history, also one merged into another."""

    index: int
    """Its place in the history (the merged message's, for a part)."""
    role: str
    kind: str | None
    """`prompt`, `summary`, `notice` (inferred for messages written before kinds were
    stored); None for tool results and assistant messages."""
    blocks: list[ContentBlock]
    """Its own blocks."""


def locate(history: list[Message], message_id: str) -> Located | None:
    found = find_message(history, message_id)
    if found is None:
        return None
    message = history[found[0]]
    for mid, kind, blocks in split_parts(message):
        if mid == message_id:
            if message.role != "user":
                return Located(found[0], message.role, None, blocks)
            return Located(found[0], message.role, kind or infer_kind(blocks), blocks)
    return None  # pragma: no cover - find_message found it


def message_kind(history: list[Message], message_id: str) -> str | None:
    """The kind of the message with that id (see `Located.kind`). Raises KeyError when
    there is none."""
    found = locate(history, message_id)
    if found is None:
        raise KeyError(message_id)
    return found.kind


def infer_kind(blocks: list[ContentBlock]) -> str | None:
    """The kind of a user message written before kinds were stored."""
    from sema_rpc.engine.compaction import SUMMARY_HEADER, TRUNCATION_NOTICE
    from sema_rpc.engine.control import INTERRUPT_MESSAGE

    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    if not texts:
        return None
    if texts[0].startswith(SUMMARY_HEADER) or texts[0] == TRUNCATION_NOTICE:
        return "summary"
    if all(t == INTERRUPT_MESSAGE for t in texts):
        return "notice"
    return "prompt"


def cut_before(history: list[Message], message_id: str) -> list[Message]:
    """The curated history just before the message with that id was added: a new list
    (the messages in it are shared, not copied). Raises KeyError when there is none."""
    found = find_message(history, message_id)
    if found is None:
        raise KeyError(message_id)
    i, at = found
    out = history[:i]
    if at > 0:  # merged into history[i]: keep what came before it
        merged = history[i]
        parts = [p for p in merged.parts or () if p.at < at]
        out.append(
            Message(
                role=merged.role,
                content=list(merged.content[:at]),
                id=merged.id,
                kind=merged.kind,
                parts=parts or None,
            )
        )
    return out


def stable_id(session_id: str, where: str) -> str:
    """The id of a message written before ids were stored: derived from the session and
    the message's place in the file, so it is the same at every load."""
    digest = hashlib.sha256(f"{session_id}/{where}".encode()).hexdigest()
    return "m_" + digest[:12]


def dangling_tool_results(history: list[Message]) -> Message | None:
    """A tool-result message for tool calls the history leaves unanswered at its end
    (the process died while they ran), or None."""
    if not history or history[-1].role != "assistant":
        return None
    uses = history[-1].tool_uses()
    if not uses:
        return None
    return Message(
        role="user",
        content=[
            ToolResultBlock(tool_use_id=u.id, content=ORPHANED_TOOL_RESULT, is_error=True)
            for u in uses
        ],
        id=new_message_id(),
    )


def message_title(message: Message) -> str | None:
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.strip():
            line = " ".join(block.text.split())
            return line[:TITLE_CHARS]
    return None


# --------------------------------------------------------------------------- writing


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
        entry: dict[str, Any] = {"t": "message", "n": self.message_count, "at": _now()}
        entry.update(message.model_dump(mode="json", exclude_none=True))
        if usage is not None:
            entry["u"] = {"c": usage[0], "k": usage[1]}
        self._write([_dumps(entry)])

    def append_event(self, kind: str, **fields: Any) -> None:
        self._write([_dumps({"t": kind, "n": self.message_count, "at": _now(), **fields})])

    def hold_event(self, kind: str, **fields: Any) -> None:
        """`append_event`, written with the next entry (one write and one sync for both,
        where two queued apart cost two syncs), or by `synced()`, `flush()`, `close()`,
        `discard_if_unused()` if none comes."""
        self._held.append(_dumps({"t": kind, "n": self.message_count, "at": _now(), **fields}))

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
            entry: dict[str, Any] = {"t": "message", "n": self.message_count, "at": _now()}
            entry.update(message.model_dump(mode="json", exclude_none=True))
            lines.append(_dumps(entry))
        if todos:
            lines.append(
                _dumps({"t": "todos", "n": self.message_count, "at": _now(), "todos": todos})
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
                    "at": _now(),
                    "sessionId": self.session_id,
                    "workingDir": str(self.working_dir),
                }
                os.write(fd, _dumps(meta))
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


def _now() -> float:
    return round(time.time(), 3)


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


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedHistory:
    messages: list[Message] = field(default_factory=list)
    """The curated history."""
    message_count: int = 0
    """Messages in the comprehensive history (every completed message ever written)."""
    todos: list[dict[str, Any]] | None = None
    mode: str | None = None
    model: str | None = None
    """The model `session/setModel` chose last (a profile name or model spec)."""
    thinking: bool | None = None
    """Its thinking override (None: the profile's setting)."""
    usage: dict[str, Any] | None = None
    """The session's running token and cost totals, as last stored."""
    mark: tuple[int, int] | None = None
    """(curated length, tokens): the provider's last figure, when still valid."""
    working_dir: str | None = None
    skipped: int = 0
    source: str = "jsonl"
    """`jsonl`, or `json` for the older JSON format (not yet imported)."""
    redo: Redo | None = None
    """The last rewind, when nothing happened since (what a redo puts back)."""


@dataclass
class Redo:
    """What `session/rewind {redo: true}` puts back: the last rewind, undone."""

    restore: str
    history: list[Message] | None
    """The curated history before the rewind (None: it left the conversation alone)."""
    files: list[dict[str, Any]]
    """`{path, found, wrote}` per file the rewind wrote, as its history entry has them."""


class HistoryError(Exception):
    """The history file exists but cannot be read at all."""


def load_history(session_id: str) -> LoadedHistory | None:
    """The session's history, or None when it has none on disk. Blocking; use a thread.

    Unparsable lines are skipped with a warning. Raises HistoryError only when the file
    exists but cannot be read (permissions, I/O error)."""
    flush_all()  # what this process queued for the file is in it
    path = history_path(session_id)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # no file (or no history folder)
        return _load_seed_json(session_id)
    except OSError as exc:
        raise HistoryError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_history(data, str(path), session_id)


def parse_history(data: bytes, where: str = "history", session_id: str = "") -> LoadedHistory:
    """The history in a JSONL file's bytes. Messages written before ids were stored get
    a stable id derived from `session_id` and their place in the file (`stable_id`)."""
    out = LoadedHistory()
    curated: list[Message] = []
    mark: tuple[int, Message, int] | None = None
    lines = data.split(b"\n")
    torn_tail = not data.endswith(b"\n")
    last = len(lines) - 1
    for number, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            if SURROGATE_ESCAPE.search(raw) is not None:  # written before the rule held
                obj = without_surrogates(obj)
        except (ValueError, RecursionError):  # RecursionError: absurdly nested garbage
            out.skipped += 1
            if number == last and torn_tail:
                log.warning(
                    "%s: skipping a torn last line (the process was killed mid-write)", where
                )
            else:
                log.warning("%s: skipping unreadable line %d", where, number + 1)
            continue
        kind = obj.get("t")
        try:
            if kind == "message":
                message = Message.model_validate(obj)
                out.message_count += 1
                out.redo = None
                if message.id is None:
                    message.id = stable_id(session_id, f"n{obj.get('n', out.message_count)}")
                append_curated(curated, message)
                u = obj.get("u")
                if isinstance(u, dict) and u.get("c") == len(curated) and curated[-1] is message:
                    mark = (len(curated), message, int(u.get("k", 0)))
            elif kind == "rewind":
                curated, out.redo = _rewound(curated, obj, where)
            elif kind == "redo":
                if out.redo is not None and out.redo.history is not None:
                    curated = out.redo.history
                out.redo = None
            elif kind == "compact":
                curated = [Message.model_validate(m) for m in obj.get("messages") or []]
                for i, m in enumerate(curated):
                    if m.id is None:
                        m.id = stable_id(session_id, f"c{obj.get('n')}.{i}")
                mark = None
                out.redo = None
            elif kind == "clear":
                curated = []
                out.redo = None
                out.todos = []
                mark = None
            elif kind == "todos":
                todos = obj.get("todos")
                if isinstance(todos, list):
                    out.todos = [t for t in todos if isinstance(t, dict)]
            elif kind == "mode":
                if obj.get("mode") in ("Agent", "Plan"):
                    out.mode = obj["mode"]
            elif kind == "model":
                if isinstance(obj.get("model"), str) and obj["model"]:
                    out.model = obj["model"]
                    thinking = obj.get("thinking")
                    out.thinking = thinking if isinstance(thinking, bool) else None
            elif kind == "usage":
                out.usage = obj
            elif kind == "meta":
                if isinstance(obj.get("workingDir"), str):
                    out.working_dir = out.working_dir or obj["workingDir"]
            # unknown kinds: written by a newer version; ignored
        except (ValidationError, TypeError, ValueError) as exc:
            out.skipped += 1
            log.warning(
                "%s: skipping invalid %s entry on line %d: %s", where, kind, number + 1, exc
            )
    out.messages = curated
    if mark is not None and mark[0] <= len(curated) and curated[mark[0] - 1] is mark[1]:
        out.mark = (mark[0], mark[2])
    return out


def _rewound(
    curated: list[Message], entry: dict[str, Any], where: str
) -> tuple[list[Message], Redo | None]:
    """A `rewind` entry applied to the curated history, and what a redo would put back."""
    restore = entry.get("restore")
    files = [f for f in entry.get("files") or [] if isinstance(f, dict) and "path" in f]
    if restore not in ("code", "conversation", "both"):
        raise ValueError(f"unknown restore {restore!r}")
    if restore == "code":
        return curated, Redo(restore, None, files)
    try:
        cut = cut_before(curated, str(entry.get("messageId")))
    except KeyError:
        log.warning(
            "%s: a rewind to %s, which is not in the conversation", where, entry.get("messageId")
        )
        return curated, None
    return cut, Redo(restore, list(curated), files)


def _load_seed_json(session_id: str) -> LoadedHistory | None:
    path = seed_json_path(session_id)
    try:
        raw = json.loads(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise HistoryError(f"cannot read {path}: {exc}") from exc
    messages = raw.get("messages") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(messages or [], list):
        raise HistoryError(f"{path}: expected an object with `messages` (a list) and `todos`")
    out = LoadedHistory(source="json")
    curated: list[Message] = []
    for item in messages or []:
        message = import_message(item)
        if message is None:
            out.skipped += 1
            continue
        out.message_count += 1
        message.id = stable_id(session_id, f"j{out.message_count}")
        append_curated(curated, message)
    out.messages = curated
    todos = raw.get("todos")
    if isinstance(todos, list):
        out.todos = [t for t in todos if isinstance(t, dict)]
    return out


_KNOWN_BLOCKS = {"text", "image", "thinking", "redacted_thinking", "tool_use", "tool_result"}


def import_message(item: Any) -> Message | None:
    """A message in Anthropic's shape (`{role, content}`, content a string or blocks),
    possibly wrapped as `{type, message: {role, content}}`; unknown blocks are dropped."""
    if isinstance(item, dict) and isinstance(item.get("message"), dict):
        item = item["message"]
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") not in _KNOWN_BLOCKS:
                continue
            if block["type"] == "image" and not _base64_image(block):
                continue  # an image by URL or file id cannot be sent again as it is
            if block["type"] == "tool_result" and not isinstance(block.get("content"), str):
                parts = block.get("content")
                parts = parts if isinstance(parts, list) else []
                text = "".join(
                    p["text"]
                    for p in parts
                    if isinstance(p, dict)
                    and p.get("type") == "text"
                    and isinstance(p.get("text"), str)
                )
                block = {**block, "content": text}
            blocks.append(block)
    else:
        return None
    if not blocks:
        return None
    try:
        return Message.model_validate({"role": item["role"], "content": blocks})
    except ValidationError:
        return None


def has_history(session_id: str) -> bool:
    """Whether the session has anything on disk (a history, or a seed). Blocking."""
    flush_all()
    return history_path(session_id).is_file() or seed_json_path(session_id).is_file()


def delete_history(session_id: str) -> bool:
    """Remove everything kept on disk for a session: its history, its seed (the older
    JSON format), the title the user gave it and its checkpoints (`<sema root>/checkpoints/<id>/`). True when there
    was something to remove. Blocking; use a thread. The session must not be live (its
    writer would create the file again)."""
    flush_all()  # nothing this process queued for the file lands after it is gone
    removed = False
    for path in (history_path(session_id), seed_json_path(session_id)):
        try:
            path.unlink()
            removed = True
        except FileNotFoundError:
            pass
    with contextlib.suppress(FileNotFoundError):
        title_path(session_id).unlink()
    checkpoints = sema_root() / "checkpoints" / session_id
    if checkpoints.is_dir() and not checkpoints.is_symlink():
        shutil.rmtree(checkpoints)
        removed = True
    return removed


def title_path(session_id: str) -> Path:
    """A title the user gave the session (`session/rename`): beside its history, so
    `session/list` finds it without reading the history, however long it grew."""
    return history_dir() / f"{session_id}.title"


def write_title(session_id: str, title: str | None) -> None:
    """Keep (None or empty: forget) the session's own title. Written whole (a temporary
    file renamed over), 0600. Blocking; use a thread."""
    path = title_path(session_id)
    if not title:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    write_private(path, title)


def _read_title(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            text = f.read(4 * TITLE_CHARS).decode("utf-8", errors="replace")
    except OSError:
        return None
    return " ".join(text.split())[:TITLE_CHARS] or None


def _base64_image(block: dict[str, Any]) -> bool:
    source = block.get("source")
    return (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and isinstance(source.get("media_type"), str)
        and isinstance(source.get("data"), str)
    )


# --------------------------------------------------------------------------- listing


@dataclass
class SessionSummary:
    session_id: str
    working_dir: str | None
    title: str | None
    updated_at: float
    message_count: int

    @property
    def updated_iso(self) -> str:
        return (
            datetime.datetime.fromtimestamp(self.updated_at, datetime.UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )


def list_sessions(working_dir: Path | None = None) -> list[SessionSummary]:
    """Every session on disk (newest first), or only those created in `working_dir`.
    Unreadable files are skipped with a warning. Blocking; use a thread."""
    flush_all()
    root = history_dir()
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot list %s: %s", root, exc)
        return []
    wanted = str(working_dir) if working_dir is not None else None
    jsonl_ids = {e.name[:-6] for e in entries if e.name.endswith(".jsonl")}
    renamed = {e.name[:-6]: e.path for e in entries if e.name.endswith(".title")}
    out: list[SessionSummary] = []
    for entry in entries:
        name = entry.name
        try:
            if name.endswith(".jsonl") and valid_session_id(name[:-6]):
                summary = _summarise_jsonl(Path(entry.path), name[:-6])
            elif (
                name.endswith(".json")
                and valid_session_id(name[:-5])
                and name[:-5] not in jsonl_ids
            ):
                summary = _summarise_seed_json(Path(entry.path), name[:-5])
            else:
                continue
        except (OSError, ValueError, HistoryError) as exc:
            log.warning("session/list: skipping %s: %s", entry.path, exc)
            continue
        if summary is None:
            continue
        if wanted is not None and summary.working_dir != wanted:
            continue
        if summary.session_id in renamed:
            title = _read_title(renamed[summary.session_id])
            if title:
                summary = dataclasses.replace(summary, title=title)
        out.append(summary)
    out.sort(key=lambda s: s.updated_at, reverse=True)
    return out


def _summarise_jsonl(path: Path, session_id: str) -> SessionSummary | None:
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        head = f.read(_HEAD_BYTES)
        if stat.st_size > len(head):
            f.seek(max(len(head), stat.st_size - _TAIL_BYTES))
            tail_start = f.tell()
            tail = f.read()
        else:
            tail_start, tail = 0, head
    working_dir = title = None
    head_lines = head.split(b"\n")
    if len(head) < stat.st_size:
        head_lines = head_lines[:-1]  # the last one may be cut by the read
    for raw in head_lines:
        obj = _loads(raw)
        if obj is None:
            continue
        if obj.get("t") == "meta" and working_dir is None:
            working_dir = obj.get("workingDir")
        elif obj.get("t") == "title" and isinstance(obj.get("title"), str):
            title = " ".join(obj["title"].split())[:TITLE_CHARS] or None
            if title:
                break
        elif obj.get("t") == "message" and obj.get("role") == "user":
            title = _title_of(obj)
            if title:
                break
    count = None
    tail_lines = tail.split(b"\n")
    if tail_start > 0:
        tail_lines = tail_lines[1:]  # the first one may start mid-line
    for raw in reversed(tail_lines):
        obj = _loads(raw)
        if obj is not None and isinstance(obj.get("n"), int):
            count = obj["n"]
            break
    if count is None:  # one huge last line: count the message lines
        data = path.read_bytes()
        count = data.count(b'\n{"t":"message"') + data.startswith(b'{"t":"message"')
    if working_dir is None and count == 0:
        return None  # not a history file of ours
    if count == 0 and title is None:
        return None  # no input yet (a file created ahead, `HistoryStore.open_ahead`)
    return SessionSummary(
        session_id=session_id,
        working_dir=working_dir if isinstance(working_dir, str) else None,
        title=title,
        updated_at=stat.st_mtime,
        message_count=count,
    )


def _summarise_seed_json(path: Path, session_id: str) -> SessionSummary | None:
    loaded = _load_seed_json(session_id)
    if loaded is None:
        return None
    title = None
    for message in loaded.messages:
        if message.role == "user":
            title = message_title(message)
            if title:
                break
    return SessionSummary(
        session_id=session_id,
        working_dir=None,
        title=title,
        updated_at=path.stat().st_mtime,
        message_count=loaded.message_count,
    )


def _loads(raw: bytes) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _title_of(entry: dict[str, Any]) -> str | None:
    try:
        return message_title(Message.model_validate(entry))
    except ValidationError:
        return None


# --------------------------------------------------------------------------- input history


class InputHistory:
    """What the user typed in one project, newest first; capped and de-duplicated.

    `$SEMA_ROOT/projects/<project-key>/input-history.json` (0600), shared by every
    session of the project. Inputs longer than 10,000 characters are not recorded.
    """

    def __init__(self, working_dir: Path):
        from sema_rpc.core.policy.permissions import project_key

        self.path = sema_root() / "projects" / project_key(working_dir) / "input-history.json"

    def items(self) -> list[str]:
        """Read from disk each time: other sessions and processes add to it too."""
        return self._load()

    def _load(self) -> list[str]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable input history %s: %s", self.path, exc)
            return []
        if not isinstance(data, list):
            return []
        return [s for s in data if isinstance(s, str)][:INPUT_HISTORY_CAP]

    def add(self, text: str) -> None:
        if not text.strip() or len(text) > INPUT_HISTORY_MAX_CHARS:
            return
        items = [text, *(s for s in self._load() if s != text)][:INPUT_HISTORY_CAP]
        try:
            write_private(self.path, json.dumps(items, indent=0).encode("ascii"))
        except OSError as exc:
            log.error("cannot write input history %s: %s", self.path, exc)
