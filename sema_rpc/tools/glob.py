"""Glob: find files by name pattern, newest first."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sema_rpc.core.policy.paths import (
    SKIP_DIRS,
    compile_glob,
    display_path,
    is_inside,
    resolve_path,
    split_glob,
)
from sema_rpc.core.scopes import run_sync_in_thread

from .base import PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import GlobInput

MAX_RESULTS = 100


class GlobTool(Tool):
    name = "Glob"
    description = (
        "Finds files by glob pattern, fast in any codebase size.\n"
        "- Patterns: `*` and `?` match within one path segment, `**` spans directories, "
        '`{a,b}` alternatives and `[abc]` classes work. "*.py" matches only the top level; '
        'use "**/*.py" to search recursively.\n'
        f"- Returns at most {MAX_RESULTS} matching file paths, most recently modified first; "
        "paths are relative to the working directory.\n"
        f"- Never descends into {', '.join(sorted(SKIP_DIRS))}.\n"
        "- Use Grep to search file contents."
    )
    Input = GlobInput
    read_only = True

    def title(self, args: GlobInput) -> str:
        return f"Glob {args.pattern}" + (f" in {args.path}" if args.path else "")

    def target_path(self, args: GlobInput, ctx: ToolContext) -> Path:
        """The directory the search starts from (the pattern's literal prefix included)."""
        base = resolve_path(args.path, ctx.working_dir) if args.path else ctx.working_dir.resolve()
        literal, _ = split_glob(args.pattern)
        return resolve_path(literal, base) if literal else base

    def permission(self, args: GlobInput, ctx: ToolContext) -> PermissionAsk | None:
        root = self.target_path(args, ctx)
        if is_inside(root, ctx.working_dir):
            return None
        return PermissionAsk(
            title=f"Glob {args.pattern} in {root} (outside the workspace)",
            content=f"List files outside the working directory:\n{root}",
            ask_every_time=True,
        )

    async def call(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        if args.path:
            base = resolve_path(args.path, ctx.working_dir)
            if not base.exists():
                return _error(f"Directory does not exist: {args.path}")
            if not base.is_dir():
                return _error(f"Not a directory: {args.path}")
        root = self.target_path(args, ctx)
        _, rest = split_glob(args.pattern)
        stop = threading.Event()
        try:
            matches = await run_sync_in_thread(_find, root, rest, stop, abandon=True)
        finally:
            stop.set()
        if not matches:
            return ToolOutput(content="No files found", summary="No files found")
        matches.sort(key=lambda m: (-m[0], str(m[1])))
        shown = [display_path(p, ctx.working_dir) for _, p in matches[:MAX_RESULTS]]
        content = "\n".join(shown)
        if len(matches) > MAX_RESULTS:
            content += (
                f"\n(Results are truncated: showing the {MAX_RESULTS} most recently modified of "
                f"{len(matches)} matches. Use a more specific path or pattern.)"
            )
        return ToolOutput(content=content, summary=f"Found {len(matches)} files")


def _error(message: str) -> ToolOutput:
    return ToolOutput(content=message, summary=message, is_error=True)


def _find(root: Path, rest: str, stop: threading.Event) -> list[tuple[int, Path]]:
    """(mtime_ns, path) of every file below `root` whose relative path matches `rest`."""
    if not rest:  # no magic at all: the pattern names one file
        try:
            return [(root.stat().st_mtime_ns, root)] if root.is_file() else []
        except OSError:
            return []
    if not root.is_dir():
        return []
    regex = compile_glob(rest)
    found: list[tuple[int, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if stop.is_set():
            break
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        for name in filenames:
            if regex.match(prefix + name):
                full = Path(dirpath, name)
                try:
                    found.append((full.stat().st_mtime_ns, full))
                except OSError:
                    continue  # vanished, or a dangling symlink
    return found
