"""Checkpoints: what the agent's tools did to files, so a turn's changes can be shown
(`turn:diff`) and undone (`session/rewind`). The files (blobs and an append-only index
under `$SEMA_ROOT/checkpoints/<sessionId>/`) are described, read and written in
`checkpoint_index`; the workspace scan is `checkpoint_scan`.

How a tool's changes are seen (`Tool.changes_files`):
- Write and Edit name their file: its content is kept just before the call and after it.
- Bash (a command that is not read-only) may change anything in the workspace: the
  workspace's file stamps (mtime_ns, size, inode) are scanned before and after it
  (skipping `SKIP_DIRS`, at most `SCAN_LIMIT` files; a log line says when the scan was
  cut). Contents cannot be recovered after the fact, so *before* the command the store
  keeps the files the command names (literal words and globs, e.g. `sed -i s/a/b/ src/*.py`)
  and the files the session has read or written; a stamp cache makes keeping an
  unchanged file cost one `stat`. A file the command created can always be rewound (it is
  deleted); one it changed or deleted without naming it is listed as a conflict with
  reason `notCaptured`.

Blocking work (hashing, scanning, writing) runs in worker threads; the store's state is
guarded by one lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from sema_rpc.core.files import write_private
from sema_rpc.core.policy.paths import (
    display_path,
    has_glob_magic,
    is_inside,
    split_glob,
)
from sema_rpc.engine.store.checkpoint_index import (
    ABSENT,
    LOST,
    Change,
    Content,
    append_index,
    change_entry,
    checkpoints_dir,
    read_index,
    turn_entry,
)
from sema_rpc.engine.store.checkpoint_scan import Stamp, file_stamp, scan_stamps

log = logging.getLogger(__name__)

KEEP_MAX_BYTES = 16 * 1024 * 1024
"""A file larger than this is not kept (its change is recorded as not captured)."""
NAMED_MAX_FILES = 500
"""Files kept before one command, at most (named by it, or read/written by the session)."""
NAMED_MAX_BYTES = 64 * 1024 * 1024
DIFF_FILE_MAX_CHARS = 64 * 1024
DIFF_TOTAL_MAX_CHARS = 256 * 1024
"""`turn:diff` caps: a file's diff, and the whole notification's diffs."""


# Plain classes rather than dataclasses: a session that changes no file still loads this
# module, and a dataclass costs its creation on every start.


class Conflict:
    __slots__ = ("path", "reason")

    def __init__(self, path: str, reason: Literal["modified", "notCaptured"]) -> None:
        self.path = path
        self.reason = reason


class RestorePlan:
    """What a rewind (or redo) would write: path → the content to put back."""

    __slots__ = ("conflicts", "current", "targets")

    def __init__(self) -> None:
        self.targets: dict[str, Content] = {}
        self.conflicts: list[Conflict] = []
        self.current: dict[str, Content] = {}
        """What each target path holds now."""


class FileDiff:
    __slots__ = ("additions", "deletions", "diff", "path", "status")

    def __init__(
        self,
        path: str,
        status: Literal["added", "modified", "deleted"],
        additions: int,
        deletions: int,
        diff: str,
    ) -> None:
        self.path = path
        self.status = status
        self.additions = additions
        self.deletions = deletions
        self.diff = diff


class BashWatch:
    __slots__ = ("before", "capped", "kept")

    def __init__(
        self, before: dict[str, Stamp], kept: dict[str, Content], capped: bool = False
    ) -> None:
        self.before = before
        self.kept = kept
        self.capped = capped
        """The scan before the command stopped at the limit: a file it did not list may
        have existed (its earlier content is then unknown, never "absent")."""


class CheckpointStore:
    """One session's checkpoints. Created lazily: nothing touches the disk until a tool
    changes a file (or a rewind needs the index)."""

    def __init__(self, session_id: str, working_dir: Path):
        self.session_id = session_id
        self.working_dir = working_dir
        self.root = checkpoints_dir(session_id)
        self.blobs = self.root / "blobs"
        self.index = self.root / "index.jsonl"
        self.events: list[Change] = []
        self.turn_pos: dict[str, int] = {}
        """Turn id → the number of events recorded before it started."""
        self.turn: str | None = None
        self._turn_written = False
        self._loaded = False
        self.ready = False
        """The index is read (`load()` done): a turn need not hop to a thread for it."""
        self._warned_cap = False
        self._lock = threading.RLock()
        self._last: dict[str, Content] = {}
        """path → what the last event left in it."""
        self._cache: dict[str, tuple[Stamp, str]] = {}
        """path → (stamp, sha) of the last content kept: an unchanged file is not re-read."""

    # ------------------------------------------------------------------ persistence

    def load(self) -> None:
        """Read the index once (a resumed session). Blocking."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            try:
                self._read_index()
            finally:
                self.ready = True

    def _read_index(self) -> None:
        events, turn_pos = read_index(self.index)
        for turn_id, at in turn_pos.items():
            self.turn_pos.setdefault(turn_id, len(self.events) + at)
        for event in events:
            self.events.append(event)
            self._last[event.path] = event.after

    def _append(self, entries: list[dict[str, Any]]) -> None:
        append_index(self.index, entries)

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.blobs / sha
        if not path.exists():
            write_private(path, data)
        return sha

    def get(self, sha: str) -> bytes:
        return (self.blobs / sha).read_bytes()

    def keep(self, path: str, max_bytes: int = KEEP_MAX_BYTES) -> Content:
        """The file's current content, kept in the store (ABSENT when there is none)."""
        stamp = file_stamp(path)
        if stamp is None:  # nothing there, or not a regular file (not kept)
            return LOST if os.path.lexists(path) else ABSENT
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return Content(cached[1])
        if stamp[1] > max_bytes:
            return LOST
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            return ABSENT
        except OSError:
            return LOST
        sha = self.put(data)
        self._cache[path] = (stamp, sha)
        return Content(sha)

    def current(self, path: str) -> Content:
        """What `path` holds now (hashed, not kept)."""
        stamp = file_stamp(path)
        if stamp is None:
            return LOST if os.path.lexists(path) else ABSENT
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return Content(cached[1])
        try:
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
        except FileNotFoundError:
            return ABSENT
        except OSError:
            return LOST
        return Content(digest.hexdigest())

    # ------------------------------------------------------------------ turns

    def begin_turn(self, turn_id: str | None) -> None:
        """A turn starts: its changes belong to `turn_id` (its user message id)."""
        with self._lock:
            self.turn = turn_id
            self._turn_written = False
            if turn_id is not None:
                self.turn_pos.setdefault(turn_id, len(self.events))

    def record(self, changes: list[Change]) -> None:
        """Add a tool's (or a rewind's) changes to the index. Blocking."""
        if not changes:
            return
        with self._lock:
            self.load()
            entries: list[dict[str, Any]] = []
            for change in changes:
                if change.kind == "change" and self.turn is not None:
                    change.turn = self.turn
                    if not self._turn_written:
                        self._turn_written = True
                        self.turn_pos.setdefault(self.turn, len(self.events))
                        entries.append(turn_entry(self.turn))
                entries.append(change_entry(change))
                self.events.append(change)
                self._last[change.path] = change.after
            self._append(entries)

    def turn_changes(self, turn_id: str | None) -> dict[str, tuple[Content, Content]]:
        """path → (content before the turn's first change, after its last one)."""
        out: dict[str, tuple[Content, Content]] = {}
        with self._lock:
            start = self.turn_pos.get(turn_id, len(self.events)) if turn_id else len(self.events)
            for event in self.events[start:]:
                if event.kind != "change" or event.turn != turn_id:
                    continue
                first = out.get(event.path)
                out[event.path] = (first[0] if first else event.before, event.after)
        return {p: ba for p, ba in out.items() if ba[0] != ba[1]}

    # ------------------------------------------------------------------ tool calls

    def before_write(self, paths: Iterable[Path]) -> dict[str, Content]:
        with self._lock:
            return {str(p): self.keep(str(p)) for p in paths}

    def after_write(self, kept: dict[str, Content], tool: str) -> None:
        with self._lock:
            changes = []
            for path, before in kept.items():
                after = self.keep(path)
                if after != before:
                    changes.append(Change("change", path, before, after, tool=tool))
            self.record(changes)

    def before_command(self, command: str, read: Iterable[str]) -> BashWatch:
        with self._lock:
            return self._before_command(command, read)

    def _before_command(self, command: str, read: Iterable[str]) -> BashWatch:
        stamps, capped = scan_stamps(self.working_dir)
        if capped and not self._warned_cap:
            self._warned_cap = True
            log.warning(
                "checkpoints: the workspace has more than %d files; the scan stops there, so "
                "a command's changes beyond them are not seen (SEMA_CHECKPOINT_SCAN_LIMIT)",
                len(stamps),
            )
        kept: dict[str, Content] = {}
        total = 0
        for path in self._named(command, read):
            stamp = stamps.get(path)
            if stamp is None and capped:  # beyond the scan's limit, but named: seen
                stamp = file_stamp(path)
                if stamp is not None:
                    stamps[path] = stamp
            if stamp is None or len(kept) >= NAMED_MAX_FILES:
                continue
            if total + stamp[1] > NAMED_MAX_BYTES:
                continue
            kept[path] = self.keep(path)
            total += stamp[1]
        return BashWatch(before=stamps, kept=kept, capped=capped)

    def after_command(self, watch: BashWatch) -> None:
        with self._lock:
            self._after_command(watch)

    def _after_command(self, watch: BashWatch) -> None:
        after, capped = scan_stamps(self.working_dir)
        changes = []
        for path in set(watch.before) | set(after):
            old = watch.before.get(path)
            new = after[path] if path in after or not capped else file_stamp(path)
            if old == new:
                continue
            if old is None:
                before = LOST if watch.capped else ABSENT
            else:
                before = watch.kept.get(path, LOST)
            now = ABSENT if new is None else self.keep(path)
            if before != now or before.lost:
                changes.append(Change("change", path, before, now, tool="Bash"))
        changes.sort(key=lambda c: c.path)
        self.record(changes)

    def _named(self, command: str, read: Iterable[str]) -> list[str]:
        """Files a command may change that can be kept before it runs: the words of the
        command that name workspace files (globs expanded; relative to the workspace, or
        to the folder a `cd` in the command went to), and the files the session has read
        or written."""
        root = str(self.working_dir)
        try:
            import shlex

            words = shlex.split(command, comments=True)
        except ValueError:
            words = command.split()
        out: dict[str, None] = {}
        base = root
        after_cd = False
        for word in words:
            word = word.lstrip("<>&|;(")
            if "=" in word and not word.startswith(("/", ".")):
                word = word.split("=", 1)[1]  # --in-place=x, VAR=path
            if not word or word.startswith("-"):
                continue
            if after_cd:
                after_cd = False
                target = os.path.realpath(os.path.join(base, os.path.expanduser(word)))
                if os.path.isdir(target) and is_inside(Path(target), self.working_dir):
                    base = target
                continue
            if word in ("cd", "pushd"):
                after_cd = True
                continue
            for folder in {root, base}:
                for found in self._files_named(word, folder):
                    out[found] = None
        for path in read:
            if is_inside(Path(path), self.working_dir):
                out[path] = None
        return list(out)

    def _files_named(self, word: str, folder: str) -> Iterable[str]:
        """The workspace files `word` names, taken from `folder` (a glob: its matches)."""
        pattern = word if os.path.isabs(word) else os.path.join(folder, word)
        candidates: Iterable[str] = [pattern]
        if has_glob_magic(word):
            literal, _rest = split_glob(pattern)
            if not is_inside(Path(os.path.realpath(literal or "/")), self.working_dir):
                return  # never walk outside the workspace
            import glob as globmod

            candidates = itertools.islice(globmod.iglob(pattern, recursive=True), NAMED_MAX_FILES)
        for c in candidates:
            resolved = os.path.realpath(c)
            if is_inside(Path(resolved), self.working_dir) and os.path.isfile(resolved):
                yield resolved

    # ------------------------------------------------------------------ rewind

    def known(self, path: str) -> Content | None:
        """What the last recorded event left in `path` (None: never recorded)."""
        return self._last.get(path)

    def plan_rewind(self, start: int) -> RestorePlan:
        """Put back every file the events from `start` on changed, as it was before the
        first of them; a file changed since the store last wrote it (by the user) or whose
        old content is unknown is a conflict. Blocking (hashes the files)."""
        plan = RestorePlan()
        with self._lock:
            self.load()
            firsts: dict[str, Content] = {}
            for event in self.events[start:]:
                if event.kind == "change" and event.path not in firsts:
                    firsts[event.path] = event.before
            for path, target in sorted(firsts.items()):
                self._plan_one(plan, path, target, self.known(path))
        return plan

    def plan_redo(self, files: list[tuple[str, Content, Content]]) -> RestorePlan:
        """Undo a rewind: each file back to what it held before (`files`: path, what the
        rewind found, what it wrote)."""
        plan = RestorePlan()
        with self._lock:
            self.load()
            for path, found, wrote in files:
                self._plan_one(plan, path, found, wrote)
        return plan

    def _plan_one(
        self, plan: RestorePlan, path: str, target: Content, expected: Content | None
    ) -> None:
        now = self.current(path)
        if now == target and not target.lost:
            return  # already as wanted
        plan.current[path] = now
        if target.lost:
            plan.conflicts.append(Conflict(path, "notCaptured"))
            return
        if expected is None or expected.lost or now != expected:
            plan.conflicts.append(Conflict(path, "modified"))
        plan.targets[path] = target

    def apply(self, plan: RestorePlan) -> list[tuple[str, Content, Content]]:
        """Write the plan's targets (conflicting ones included: the caller decided);
        returns (path, what it held, what it holds now) for each file written. Blocking."""
        from sema_rpc.tools.write import atomic_write

        done: list[tuple[str, Content, Content]] = []
        changes: list[Change] = []
        for path, target in plan.targets.items():
            before = plan.current.get(path, ABSENT)
            if before.sha is not None or before.lost:
                kept = self.keep(path)  # what the rewind overwrites can be redone
                before = kept if not kept.lost else before
            try:
                if target.sha is None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                else:
                    atomic_write(Path(path), self.get(target.sha), sync=False)
            except OSError as exc:
                log.error("rewind: cannot restore %s: %s", path, exc)
                continue
            self._cache.pop(path, None)
            done.append((path, before, target))
            changes.append(Change("restore", path, before, target))
        self.record(changes)
        return done

    # ------------------------------------------------------------------ diffs

    def diffs(self, turn_id: str | None) -> tuple[list[FileDiff], bool]:
        """The turn's changes as unified diffs (capped; the flag says some were cut)."""
        changes = self.turn_changes(turn_id)
        if not changes:  # a turn that changed nothing loads no diffing
            return [], False
        from sema_rpc.tools.write import diff_stats

        out: list[FileDiff] = []
        truncated = False
        total = 0
        for path, (before, after) in sorted(changes.items()):
            shown = display_path(Path(path), self.working_dir)
            status: Literal["added", "modified", "deleted"] = (
                "added"
                if before.sha is None and not before.lost
                else "deleted"
                if after.sha is None and not after.lost
                else "modified"
            )
            text = self._diff_text(shown, before, after)
            additions, deletions = diff_stats(text)
            if len(text) > DIFF_FILE_MAX_CHARS or total + len(text) > DIFF_TOTAL_MAX_CHARS:
                room = max(0, min(DIFF_FILE_MAX_CHARS, DIFF_TOTAL_MAX_CHARS - total))
                text = text[:room].rsplit("\n", 1)[0] + "\n" if room else ""
                truncated = True
            total += len(text)
            out.append(FileDiff(shown, status, additions, deletions, text))
        return out, truncated

    def _diff_text(self, shown: str, before: Content, after: Content) -> str:
        old = self._text(before)
        new = self._text(after)
        if old is None or new is None:
            what = "previous" if old is None else "new"
            return f"--- a/{shown}\n+++ b/{shown}\n@@ ({what} content not captured) @@\n"
        if isinstance(old, bytes) or isinstance(new, bytes):
            return f"Binary files a/{shown} and b/{shown} differ\n"
        from_file = "/dev/null" if before.sha is None else f"a/{shown}"
        to_file = "/dev/null" if after.sha is None else f"b/{shown}"
        import difflib

        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=from_file,
            tofile=to_file,
            n=3,
        )
        parts = []
        for line in lines:
            parts.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(parts)

    def _text(self, content: Content) -> str | bytes | None:
        if content.lost:
            return None
        if content.sha is None:
            return ""
        try:
            data = self.get(content.sha)
        except OSError:
            return None
        if b"\x00" in data[:8192]:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data
