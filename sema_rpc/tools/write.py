"""Write: create or overwrite a file. Also the file-change helpers Edit shares."""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sema_rpc.core.files import replacing
from sema_rpc.core.policy.paths import display_path, is_inside, resolve_path
from sema_rpc.core.policy.permissions import EDIT_RULE
from sema_rpc.core.scopes import run_sync_in_thread

from .base import FileEffect, FileSnapshot, PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import WriteInput

BOM = "\ufeff"


@dataclass
class FileChange:
    """A planned write: computed once per call (validate → permission → call)."""

    path: Path
    shown: str
    old_text: str | None
    """The current content (newlines normalised to \\n), None for a new file."""
    new_text: str
    diff: str
    before: FileSnapshot | None
    newline: str = "\n"
    bom: bool = False
    replacements: int = 0
    first_change_offset: int = 0

    @property
    def is_new(self) -> bool:
        return self.old_text is None

    def encoded(self) -> bytes:
        text = self.new_text
        if self.newline != "\n":
            text = text.replace("\r\n", "\n").replace("\n", self.newline)
        return ((BOM if self.bom else "") + text).encode("utf-8")


class FileChangeError(Exception):
    pass


@dataclass
class CurrentFile:
    text: str
    newline: str
    bom: bool
    snapshot: FileSnapshot


def snapshot_of(path: Path) -> FileSnapshot | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size, inode=st.st_ino)


def check_fresh(path: Path, shown: str, ctx: ToolContext) -> FileSnapshot:
    """The current snapshot of existing `path`, if Read returned it and it has not changed."""
    current = snapshot_of(path)
    if current is None:
        raise FileChangeError(f"File does not exist: {shown}")
    seen = ctx.read_files.get(str(path))
    if seen is None:
        raise FileChangeError(
            f"{shown} has not been read yet in this session. Read it first, then edit it."
        )
    if seen != current:
        raise FileChangeError(
            f"{shown} has changed since it was last read (by the user, a formatter or a command). "
            "Read it again before changing it."
        )
    return current


def read_current(
    path: Path, shown: str, snapshot: FileSnapshot, *, strict: bool, buffer: str | None = None
) -> CurrentFile:
    """The text of an existing file with newlines normalised (CRLF and BOM remembered).
    `buffer`: the editor's text of it (unsaved edits included), used instead of the disk."""
    data = path.read_bytes() if buffer is None else buffer.encode("utf-8", "surrogatepass")
    if b"\x00" in data[:8192]:
        raise FileChangeError(f"{shown} is a binary file; it cannot be edited as text.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if strict:
            raise FileChangeError(
                f"{shown} is not valid UTF-8 text; it cannot be edited."
            ) from None
        text = data.decode("utf-8", errors="replace")
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    return CurrentFile(text=text, newline=newline, bom=bom, snapshot=snapshot)


def target_of(raw: str, ctx: ToolContext) -> tuple[Path, str]:
    path = resolve_path(raw, ctx.working_dir)
    if path.is_dir():
        raise FileChangeError(f"{display_path(path, ctx.working_dir)} is a directory, not a file.")
    return path, display_path(path, ctx.working_dir)


def unified_diff(old: str | None, new: str, shown: str) -> str:
    """A git-style unified diff; a new file is a diff from /dev/null."""
    label = shown if Path(shown).is_absolute() else None
    from_file = "/dev/null" if old is None else (label or f"a/{shown}")
    to_file = label or f"b/{shown}"
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=from_file,
        tofile=to_file,
        n=3,
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a file without a final newline
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _current_umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace `path` with `data` via a temp file in the same directory (mode kept);
    with `sync`, the data is on disk before the rename."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
        path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path, mode=mode, durable=sync) as f:
        f.write(data)


PROTECTED_DIRS = frozenset({".git"})
"""Folders whose files change what later commands do (git hooks, `core.fsmonitor`,
`diff.external`): a write there is asked every time, even under acceptEdits or a rule."""


def is_protected(path: Path, working_dir: Path) -> bool:
    # casefold: `.GIT/config` is `.git/config` on a case-insensitive filesystem (macOS)
    return any(p.casefold() in PROTECTED_DIRS for p in path.relative_to(working_dir).parts)


def ask_for(tool: str, change: FileChange, ctx: ToolContext) -> PermissionAsk:
    outside = not is_inside(change.path, ctx.working_dir)
    protected = not outside and is_protected(change.path, ctx.working_dir)
    where = " (outside the workspace)" if outside else " (protected)" if protected else ""
    verb = "Create" if change.is_new and tool == "Write" else tool
    return PermissionAsk(
        title=f"{verb} {change.shown}{where}",
        content=change.diff or "(no changes)",
        content_kind="diff",
        rule=EDIT_RULE,
        ask_every_time=outside or protected,
        file_edit=True,
    )


def write_change(change: FileChange) -> FileSnapshot | None:
    """Write `change` if the file is still as planned; returns the new snapshot.

    Blocking (stat, write, fsync, rename): `commit_change` runs it in a worker thread, the
    re-check and the write together."""
    if snapshot_of(change.path) != change.before:
        raise FileChangeError(
            f"{change.shown} changed while waiting for approval. Read it again and retry."
        )
    atomic_write(change.path, change.encoded())
    return snapshot_of(change.path)


async def editor_buffer(path: Path, ctx: ToolContext) -> str | None:
    """The editor's text of an existing workspace file, when the editor lends its buffers
    (so Write and Edit change what the user sees, unsaved edits included); else None."""
    editor = ctx.services.editor_files
    if editor is None or not editor.can_read or not is_inside(path, ctx.working_dir):
        return None
    if await run_sync_in_thread(snapshot_of, path) is None:
        return None
    try:
        return await editor.read_text(path)
    except OSError:
        return None  # the disk, then


async def commit_change(change: FileChange, ctx: ToolContext) -> None:
    """Write `change` off the event loop if the file is still as planned; remember the
    new snapshot (on the loop). A cancelled call still waits for the write to finish.
    With an editor that writes buffers, the editor writes it (after the same check)."""
    written: list[FileSnapshot | None] = []
    editor = ctx.services.editor_files
    if editor is not None and editor.can_write and is_inside(change.path, ctx.working_dir):
        if await run_sync_in_thread(snapshot_of, change.path) != change.before:
            raise FileChangeError(
                f"{change.shown} changed while waiting for approval. Read it again and retry."
            )
        try:
            await editor.write_text(change.path, change.encoded().decode("utf-8"))
        except OSError as exc:
            raise FileChangeError(f"The editor could not write {change.shown}: {exc}") from exc
        after = await run_sync_in_thread(snapshot_of, change.path)
        if after is not None:
            ctx.read_files[str(change.path)] = after
        return

    def work() -> None:
        written.append(write_change(change))

    try:
        await run_sync_in_thread(work)
    finally:
        if written and written[0] is not None:
            ctx.read_files[str(change.path)] = written[0]


def diff_stats(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class WriteTool(Tool):
    name = "Write"
    description = (
        "Writes a file, replacing it entirely if it exists; missing parent directories are "
        "created.\n"
        "- To overwrite an existing file you must Read it first in this session (and it must "
        "not have changed since); new files need no Read.\n"
        "- Prefer Edit for changing part of an existing file; use Write for new files or "
        "complete rewrites.\n"
        "- The user sees the diff and may refuse the change."
    )
    Input = WriteInput

    def title(self, args: WriteInput) -> str:
        return f"Write {args.file_path}"

    def target_path(self, args: WriteInput, ctx: ToolContext) -> Path:
        return resolve_path(args.file_path, ctx.working_dir)

    def changes_files(self, args: WriteInput, ctx: ToolContext) -> FileEffect:
        return FileEffect(paths=(self.target_path(args, ctx),))

    def plan(self, args: WriteInput, ctx: ToolContext) -> FileChange:
        if args._change is None:
            path, shown = target_of(args.file_path, ctx)
            before = snapshot_of(path)
            old_text: str | None = None
            newline, bom = "\n", False
            if before is not None:
                check_fresh(path, shown, ctx)
                current = read_current(path, shown, before, strict=False, buffer=args._buffer)
                old_text = current.text
                bom = current.bom
                # Keep a CRLF file CRLF unless the model wrote CRLF itself.
                if current.newline == "\r\n" and "\r\n" not in args.content:
                    newline = "\r\n"
            args._change = FileChange(
                path=path,
                shown=shown,
                old_text=old_text,
                new_text=args.content,
                diff=unified_diff(old_text, args.content.replace("\r\n", "\n"), shown),
                before=before,
                newline=newline,
                bom=bom,
            )
        return args._change

    async def validate_input(self, args: WriteInput, ctx: ToolContext) -> str | None:
        try:
            args._buffer = await editor_buffer(self.target_path(args, ctx), ctx)
            self.plan(args, ctx)
        except FileChangeError as exc:
            return str(exc)
        return None

    def permission(self, args: WriteInput, ctx: ToolContext) -> PermissionAsk | None:
        try:
            return ask_for("Write", self.plan(args, ctx), ctx)
        except FileChangeError as exc:
            return PermissionAsk(
                title=f"Write {args.file_path}", content=str(exc), rule=EDIT_RULE, file_edit=True
            )

    async def call(self, args: WriteInput, ctx: ToolContext) -> ToolOutput:
        try:
            change = self.plan(args, ctx)
            await commit_change(change, ctx)
        except FileChangeError as exc:
            return ToolOutput(content=str(exc), summary=str(exc), is_error=True)
        added, removed = diff_stats(change.diff)
        lines = change.new_text.count("\n") + (0 if change.new_text.endswith("\n") else 1)
        lines = lines if change.new_text else 0
        if change.is_new:
            content = f"File created successfully at: {change.shown} ({lines} lines)"
            summary = f"Created {change.shown} ({lines} lines)"
        else:
            content = f"The file {change.shown} has been overwritten ({lines} lines)."
            summary = f"Wrote {change.shown} (+{added} -{removed})"
        return ToolOutput(content=content, summary=summary, display=change.diff)
