"""Markdown definition files (commands, skills, agents): frontmatter and a cached scan.

Frontmatter is the simple YAML subset these files use, parsed without a YAML dependency::

    ---
    description: Run the tests          # key: value (quotes optional)
    argument-hint: "[path]"
    allowed-tools: [Read, Grep]         # a flow list, kept as the text "Read, Grep"
    tools:                              # a block list, kept as "Read, Grep"
      - Read
      - Grep
    when-to-use: >                      # a folded / literal block, joined with spaces / newlines
      When the user asks for a release.
    ---
    body…

`scan()` lists the markdown files under a root and caches the parsed result. The cache
is validated by stat-ing every directory and file it saw (no directory listing): a
directory's mtime changes when an entry is added, removed or renamed, a file's when it
is edited. Fifty commands cost ~50 `stat` calls on a warm cache. A scan that saw an
mtime from the last `RACY_NS` is redone next time (a change in the same clock tick would
leave the mtime unchanged).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

MAX_DEFINITION_BYTES = 256 * 1024
"""Larger definition files are skipped (with a warning)."""
MAX_FILES_PER_ROOT = 1000
MAX_DEPTH = 8

_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*)|\s*)$")


class MarkdownFile:
    # A plain class, as _Entry below, AgentDef and Skill: the project's definitions are
    # read on every start, and a dataclass costs its creation there.
    __slots__ = ("body", "meta", "path", "rel")

    def __init__(self, path: Path, rel: str, meta: dict[str, str], body: str) -> None:
        self.path = path
        self.rel = rel
        """Path below the scanned root, `/`-separated (`frontend/test.md`)."""
        self.meta = meta
        self.body = body


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace('\\"', '"') if value[0] == '"' else inner.replace("''", "'")
    if " #" in value:  # a trailing comment (only outside quotes)
        value = value.split(" #", 1)[0].rstrip()
    return value


def _flow_list(value: str) -> str:
    return ", ".join(_unquote(v) for v in value[1:-1].split(",") if v.strip())


def parse_frontmatter(text: str) -> tuple[dict[str, str], str]:
    """(meta, body). Without a leading `---` line the whole text is the body.

    Keys are kept as written (`argument-hint`); values are strings. Lists become a
    comma-separated string. An unterminated frontmatter block is treated as body.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return {}, text
    lines = text.splitlines(keepends=True)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        return {}, text
    body = "".join(lines[end + 1 :])
    meta: dict[str, str] = {}
    key: str | None = None
    block: list[str] = []
    style = ""  # "list" | ">" | "|"

    def flush() -> None:
        nonlocal key, block, style
        if key is not None and block:
            joiner = {"list": ", ", "|": "\n"}.get(style, " ")
            meta[key] = joiner.join(block).strip()
        key, block, style = None, [], ""

    for raw in lines[1:end]:
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            if style == "|" and key is not None:
                block.append("")
            continue
        if key is not None and (line[:1].isspace() or line.startswith("- ")):
            item = line.strip()
            if item.startswith("- ") and style in ("", "list"):
                style = "list"
                block.append(_unquote(item[2:]))
            else:
                block.append(item)
            continue
        flush()
        match = _KEY.match(line)
        if match is None:
            continue
        name, value = match.group(1), (match.group(2) or "").strip()
        if value in ("", ">", ">-", "|", "|-"):
            key, style = name, value[:1]
            meta[name] = ""
        elif value.startswith("[") and value.endswith("]"):
            meta[name] = _flow_list(value)
        else:
            meta[name] = _unquote(value)
    flush()
    return meta, body


# --------------------------------------------------------------------------- cached scan


RACY_NS = 200_000_000
"""An mtime this close to the scan may hide a later change in the same clock tick (as
in git's "racy" index entries): such a scan is not trusted and the next call rescans."""


class _Entry:
    __slots__ = ("files", "racy", "root_exists", "signature")

    def __init__(
        self,
        signature: dict[str, int],
        root_exists: bool,
        files: list[MarkdownFile],
        racy: bool = False,
    ) -> None:
        self.signature = signature
        """mtime_ns of every directory and file seen by the last scan (absent root: {})."""
        self.root_exists = root_exists
        self.files = files
        self.racy = racy


_cache: dict[tuple[str, str, int], _Entry] = {}
_lock = threading.Lock()


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _valid(entry: _Entry, root: str) -> bool:
    if entry.racy:
        return False
    if not entry.root_exists:
        return not os.path.isdir(root)
    return all(_mtime(p) == m for p, m in entry.signature.items())


def _walk(root: str, filename: str | None, max_depth: int) -> tuple[dict[str, int], list[str]]:
    """Every directory (to max_depth) and matching file below root, with their mtimes."""
    signature: dict[str, int] = {}
    found: list[str] = []
    stack: list[tuple[str, int]] = [(root, 0)]
    seen_dirs: set[tuple[int, int]] = set()
    while stack:
        directory, depth = stack.pop()
        try:
            st = os.stat(directory)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:  # a symlink loop
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        signature[directory] = st.st_mtime_ns
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for item in sorted(entries, key=lambda e: e.name):
            if item.name.startswith("."):
                continue
            try:
                is_dir = item.is_dir()
                is_file = not is_dir and item.is_file()
            except OSError:
                continue
            if is_dir and depth < max_depth:
                stack.append((item.path, depth + 1))
            elif is_file and (
                item.name == filename
                if filename is not None
                else item.name.endswith(".md") and depth <= max_depth
            ):
                if len(found) >= MAX_FILES_PER_ROOT:
                    continue
                mtime = _mtime(item.path)
                if mtime is not None:
                    signature[item.path] = mtime
                    found.append(item.path)
    return signature, sorted(found)


def _load(path: str, root: str) -> MarkdownFile | None:
    try:
        if os.path.getsize(path) > MAX_DEFINITION_BYTES:
            log.warning("skipping %s: larger than %d KB", path, MAX_DEFINITION_BYTES // 1024)
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        log.warning("skipping unreadable %s: %s", path, exc)
        return None
    meta, body = parse_frontmatter(text)
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    return MarkdownFile(path=Path(path), rel=rel, meta=meta, body=body)


def scan(
    root: Path, *, filename: str | None = None, max_depth: int = MAX_DEPTH
) -> list[MarkdownFile]:
    """The markdown files below `root`, parsed, in path order; cached until something changes.

    `filename` (e.g. `SKILL.md`) matches that exact name, else every `*.md`; `max_depth`
    is how many directory levels below root are entered (0: root only). Hidden files and
    directories are skipped. A missing root is an empty list.
    """
    key = (str(root), filename or "", max_depth)
    with _lock:
        entry = _cache.get(key)
    if entry is not None and _valid(entry, key[0]):
        return entry.files
    if not os.path.isdir(key[0]):
        with _lock:
            _cache[key] = _Entry({}, False, [])
        return []
    started = time.time_ns()
    signature, paths = _walk(key[0], filename, max_depth)
    files = [f for f in (_load(p, key[0]) for p in paths) if f is not None]
    racy = any(m >= started - RACY_NS for m in signature.values())
    with _lock:
        _cache[key] = _Entry(signature, True, files, racy)
    return files


def clear_cache() -> None:
    with _lock:
        _cache.clear()
