"""Grep: regex search over file contents (ripgrep when available, else pure Python)."""

from __future__ import annotations

import asyncio
import base64
import bisect
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from sema_rpc.core.policy.paths import (
    SKIP_DIRS,
    compile_glob,
    display_path,
    is_inside,
    resolve_path,
)
from sema_rpc.core.scopes import run_sync_in_thread, shielded

from .base import PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import GrepInput

MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 500
BINARY_SNIFF_BYTES = 8192
BACKEND_ENV = "SEMA_GREP_BACKEND"
"""`python` forces the pure-Python search even when `rg` is on PATH."""

# ripgrep's common file types (`rg --type-list`), for the pure-Python search.
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": (".py", ".pyi"),
    "python": (".py", ".pyi"),
    "js": (".js", ".jsx", ".mjs", ".cjs", ".vue"),
    "ts": (".ts", ".tsx", ".mts", ".cts"),
    "typescript": (".ts", ".tsx", ".mts", ".cts"),
    "rust": (".rs",),
    "go": (".go",),
    "java": (".java", ".jsp"),
    "kotlin": (".kt", ".kts"),
    "c": (".c", ".h", ".H"),
    "cpp": (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h", ".inl"),
    "cs": (".cs",),
    "ruby": (".rb", ".gemspec", ".rake"),
    "php": (".php",),
    "swift": (".swift",),
    "scala": (".scala", ".sbt"),
    "sh": (".sh", ".bash", ".zsh", ".ksh"),
    "html": (".html", ".htm", ".xhtml"),
    "css": (".css", ".scss", ".sass", ".less"),
    "json": (".json", ".jsonl"),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "md": (".md", ".markdown", ".mdx"),
    "markdown": (".md", ".markdown", ".mdx"),
    "sql": (".sql",),
    "lua": (".lua",),
    "xml": (".xml", ".xsd", ".xsl"),
    "txt": (".txt",),
}


@dataclass
class FileHits:
    path: Path
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    """(1-based line number, text, is_match), ascending."""
    match_count: int = 0
    mtime_ns: int = 0


class GrepError(Exception):
    pass


class GrepTool(Tool):
    name = "Grep"
    description = (
        "Searches file contents with a regular expression (ripgrep when installed, otherwise a "
        "built-in search using Python `re` syntax; the common subset works in both).\n"
        '- output_mode "files_with_matches" (default) lists matching files, most recently '
        'modified first; "content" shows matching lines as `path:line:text` (context lines as '
        '`path-line-text`, with -A/-B/-C); "count" shows matching line counts per file.\n'
        '- Filter files with `glob` (e.g. "*.py", "**/*.{ts,tsx}") or `type` (e.g. "py", "js").\n'
        "- `-i` ignores case; `multiline` lets a match span lines; `head_limit` keeps the first "
        "N entries.\n"
        "- Symbolic links met while searching a folder are not followed; name a link as "
        "`path` to search its target.\n"
        f"- Skips binary files and {', '.join(sorted(SKIP_DIRS))}. Output is capped at "
        f"{MAX_OUTPUT_CHARS // 1000}k characters.\n"
        "- Escape regex metacharacters to search literally (e.g. `interface\\{\\}`)."
    )
    Input = GrepInput
    read_only = True

    def title(self, args: GrepInput) -> str:
        return f'Grep "{args.pattern}"' + (f" in {args.path}" if args.path else "")

    def target_path(self, args: GrepInput, ctx: ToolContext) -> Path:
        return resolve_path(args.path, ctx.working_dir) if args.path else ctx.working_dir.resolve()

    def permission(self, args: GrepInput, ctx: ToolContext) -> PermissionAsk | None:
        root = self.target_path(args, ctx)
        if is_inside(root, ctx.working_dir):
            return None
        return PermissionAsk(
            title=f'Grep "{args.pattern}" in {root} (outside the workspace)',
            content=f"Search files outside the working directory:\n{root}",
            ask_every_time=True,
        )

    async def validate_input(self, args: GrepInput, ctx: ToolContext) -> str | None:
        if not args.pattern:
            return "pattern must not be empty."
        if _use_ripgrep() is None:
            try:
                re.compile(args.pattern)
            except re.error as exc:
                return f"Invalid regular expression {args.pattern!r}: {exc}"
        return None

    async def call(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        root = self.target_path(args, ctx)
        if not root.exists():
            return _error(f"Path does not exist: {args.path}")
        rg = _use_ripgrep()
        try:
            if rg:
                hits = await _search_ripgrep(rg, root, args)
            else:
                stop = threading.Event()
                try:
                    hits = await run_sync_in_thread(_search_python, root, args, stop, abandon=True)
                finally:
                    stop.set()
        except GrepError as exc:
            return _error(str(exc))
        return _format(hits, args, ctx.working_dir)


def _error(message: str) -> ToolOutput:
    return ToolOutput(content=message, summary=message.split("\n", 1)[0], is_error=True)


def _use_ripgrep() -> str | None:
    if os.environ.get(BACKEND_ENV, "").lower() == "python":
        return None
    return shutil.which("rg")


def _contexts(args: GrepInput) -> tuple[int, int]:
    if args.output_mode != "content":
        return 0, 0
    both = args.context or 0
    before = args.context_before if args.context_before is not None else both
    after = args.context_after if args.context_after is not None else both
    return before, after


# ---------------------------------------------------------------- formatting


def _format(hits: list[FileHits], args: GrepInput, working_dir: Path) -> ToolOutput:
    hits = [h for h in hits if h.match_count]
    if not hits:
        return ToolOutput(content="No matches found", summary="No matches")
    limit = args.head_limit or None
    total_matches = sum(h.match_count for h in hits)
    note = ""
    if args.output_mode == "files_with_matches":
        hits.sort(key=lambda h: (-h.mtime_ns, str(h.path)))
        entries = [display_path(h.path, working_dir) for h in hits]
        if limit and len(entries) > limit:
            note = f"(showing the first {limit} of {len(entries)} files)"
            entries = entries[:limit]
        body = [f"Found {len(hits)} file{'s' if len(hits) != 1 else ''}", *entries]
        summary = f"Found {len(hits)} files"
    elif args.output_mode == "count":
        hits.sort(key=lambda h: str(h.path))
        entries = [f"{display_path(h.path, working_dir)}:{h.match_count}" for h in hits]
        if limit and len(entries) > limit:
            note = f"(showing the first {limit} of {len(entries)} files)"
            entries = entries[:limit]
        body = entries
        note = "\n".join(
            x
            for x in (note, f"Found {total_matches} matching lines across {len(hits)} files.")
            if x
        )
        summary = f"{total_matches} matches in {len(hits)} files"
    else:
        hits.sort(key=lambda h: str(h.path))
        before, after = _contexts(args)
        numbered = args.line_numbers is not False
        body = []
        for h in hits:
            shown = display_path(h.path, working_dir)
            previous = None
            for number, text, is_match in h.lines:
                if (before or after) and body and (previous is None or number > previous + 1):
                    body.append("--")
                sep = ":" if is_match else "-"
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + " [...]"
                body.append(
                    f"{shown}{sep}{number}{sep}{text}" if numbered else f"{shown}{sep}{text}"
                )
                previous = number
        if limit and len(body) > limit:
            note = f"(showing the first {limit} of {len(body)} lines)"
            body = body[:limit]
        summary = f"{total_matches} matches in {len(hits)} files"
    content = "\n".join(body)
    if len(content) > MAX_OUTPUT_CHARS:
        cut = content.rfind("\n", 0, MAX_OUTPUT_CHARS)
        content = content[: cut if cut > 0 else MAX_OUTPUT_CHARS]
        note = (
            f"(output truncated at {MAX_OUTPUT_CHARS} characters; narrow the search with path, "
            "glob, type or head_limit)"
        )
    if note:
        content += "\n" + note
    return ToolOutput(content=content, summary=summary)


# ---------------------------------------------------------------- pure Python


def _split_globs(raw: str | None) -> tuple[list[str], list[str]]:
    include: list[str] = []
    exclude: list[str] = []
    for pattern in (raw or "").split():
        (exclude if pattern.startswith("!") else include).append(pattern.lstrip("!"))
    return include, exclude


def _glob_hit(pattern: str, rel: str, name: str) -> bool:
    pattern = pattern.lstrip("/")
    if "/" in pattern:
        return bool(compile_glob(pattern).match(rel))
    return bool(compile_glob(pattern).match(name))


def _candidate_files(root: Path, args: GrepInput, stop: threading.Event) -> list[Path]:
    if root.is_file():
        return [root]
    include, exclude = _split_globs(args.glob)
    extensions: tuple[str, ...] | None = None
    if args.type:
        extensions = FILE_TYPES.get(args.type.lower(), ("." + args.type.lstrip("."),))
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if stop.is_set():
            break
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS and not any(_glob_hit(p, prefix + d, d) for p in exclude)
        )
        for name in sorted(filenames):
            rel = prefix + name
            if extensions is not None and not name.endswith(extensions):
                continue
            if include and not any(_glob_hit(p, rel, name) for p in include):
                continue
            if any(_glob_hit(p, rel, name) for p in exclude):
                continue
            path = Path(dirpath, name)
            if path.is_symlink():
                continue  # as ripgrep: a link met while walking is not followed
            files.append(path)
    return files


def _search_python(root: Path, args: GrepInput, stop: threading.Event) -> list[FileHits]:
    flags = re.IGNORECASE if args.case_insensitive else 0
    if args.multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        regex = re.compile(args.pattern, flags)
    except re.error as exc:
        raise GrepError(f"Invalid regular expression {args.pattern!r}: {exc}") from exc
    before, after = _contexts(args)
    first_only = args.output_mode == "files_with_matches"
    results: list[FileHits] = []
    for path in _candidate_files(root, args, stop):
        if stop.is_set():
            break
        try:
            data = path.read_bytes()
            mtime_ns = path.stat().st_mtime_ns
        except OSError:
            continue
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            continue
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = [line.removesuffix("\r") for line in lines]
        matched = _matching_lines(regex, lines, args.multiline, first_only)
        if not matched:
            continue
        hits = FileHits(path=path, match_count=len(matched), mtime_ns=mtime_ns)
        if args.output_mode == "content":
            shown: set[int] = set()
            for index in matched:
                shown.update(range(max(index - before, 0), min(index + after, len(lines) - 1) + 1))
            hits.lines = [(i + 1, lines[i], i in matched) for i in sorted(shown)]
        results.append(hits)
    return results


def _matching_lines(
    regex: re.Pattern[str], lines: list[str], multiline: bool, first_only: bool
) -> set[int]:
    if not multiline:
        found: set[int] = set()
        for index, line in enumerate(lines):
            if regex.search(line):
                found.add(index)
                if first_only:
                    break
        return found
    text = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found = set()
    for match in regex.finditer(text):
        first = bisect.bisect_right(starts, match.start()) - 1
        last = bisect.bisect_right(starts, max(match.end() - 1, match.start())) - 1
        found.update(range(first, min(last, len(lines) - 1) + 1))
        if first_only:
            break
    return found


# ---------------------------------------------------------------- ripgrep


async def _search_ripgrep(rg: str, root: Path, args: GrepInput) -> list[FileHits]:
    # --no-follow: a symlink met while walking may lead out of the workspace
    command = [rg, "--json", "--hidden", "--no-config", "--no-messages", "--no-follow"]
    if args.case_insensitive:
        command.append("--ignore-case")
    if args.multiline:
        command += ["--multiline", "--multiline-dotall"]
    before, after = _contexts(args)
    if before:
        command += ["--before-context", str(before)]
    if after:
        command += ["--after-context", str(after)]
    if args.output_mode == "files_with_matches":
        command += ["--max-count", "1"]
    include, exclude = _split_globs(args.glob)
    for pattern in include:
        command += ["--glob", pattern]
    for pattern in exclude:
        command += ["--glob", "!" + pattern]
    for name in sorted(SKIP_DIRS):
        command += ["--glob", f"!{name}"]
    if args.type:
        command += ["--type", args.type]
    command += ["--regexp", args.pattern, "--", str(root)]

    search = await asyncio.create_subprocess_exec(
        *command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = await search.communicate()
    except BaseException:  # cancelled: the search stops with the call
        if search.returncode is None:
            search.kill()
        # Read to the end and reap: a wait alone never ends while a full pipe is unread.
        await shielded(search.communicate())
        raise
    if search.returncode not in (0, 1) and not stdout:
        message = stderr.decode("utf-8", errors="replace").strip()
        raise GrepError(f"ripgrep failed: {message or f'exit code {search.returncode}'}")

    results = parse_rg_json(stdout)
    for hits in results:
        try:
            hits.mtime_ns = hits.path.stat().st_mtime_ns
        except OSError:
            pass
    return results


def parse_rg_json(stdout: bytes) -> list[FileHits]:
    """The match and context lines of `rg --json` output, per file."""
    by_path: dict[str, FileHits] = {}
    for raw in stdout.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("type")
        if kind not in ("match", "context"):
            continue
        data = event["data"]
        file_name = _rg_text(data.get("path", {}))
        number = data.get("line_number")
        if file_name is None or number is None:
            continue
        hits = by_path.get(file_name)
        if hits is None:
            hits = by_path[file_name] = FileHits(path=Path(file_name))
        text = _rg_text(data.get("lines", {})) or ""
        parts = text.split("\n")
        if len(parts) > 1 and parts[-1] == "":
            parts.pop()
        for offset, line in enumerate(parts):
            entry = (number + offset, line.removesuffix("\r"), kind == "match")
            if hits.lines and hits.lines[-1][0] == entry[0]:
                # A multiline match already covered this line.
                if entry[2] and not hits.lines[-1][2]:
                    hits.lines[-1] = entry
                    hits.match_count += 1
                continue
            hits.lines.append(entry)
            if entry[2]:
                hits.match_count += 1
    return list(by_path.values())


def _rg_text(value: dict[str, str]) -> str | None:
    if "text" in value:
        return value["text"]
    if "bytes" in value:
        return base64.b64decode(value["bytes"]).decode("utf-8", errors="replace")
    return None
